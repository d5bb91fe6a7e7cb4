"""`jsonl-engine mcp`: the KB's methods as MCP tools over stdio, on the official `mcp` SDK (the `[mcp]` extra).

One daemon (the JSON-lines engine, spawned with `jsonl_engine.client.AsyncClient`) serves every tool call; a tool
call is one request. Input schemas are the methods' params schemas (the same pydantic models as `schemas/`); a
result is the method's result object, as JSON text and as structured content; an error event is an MCP tool
error (`isError`) whose text is `code: message` and whose structured content is the wire's error object.
Only this module imports `mcp`: the daemon's start-up never pays for it.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from jsonl_engine import __version__
from jsonl_engine.client import AsyncClient, RequestError
from jsonl_engine.registry import load_methods

# tool name -> the method it calls
TOOLS = {
    "context": "kb.context",
    "synthesize": "kb.synthesize",
    "answer": "kb.answer",
    "documents": "kb.documents",
    "outline": "kb.outline",
    "read": "kb.read",
    "ingest": "kb.ingest",
}
INSTRUCTIONS = (
    "A document knowledge base (PDF, Markdown, text) that answers with checkable citations. Use `context` for "
    "ranked passages, `synthesize` for an answer made only of verbatim quotes with citations (no LLM), `answer` "
    "when an LLM reader is configured, `documents`/`outline`/`read` to browse, `ingest` to add files or folders "
    "(absolute paths).")


def tool_list() -> list[types.Tool]:
    handlers = load_methods()
    tools = []
    for name, method in TOOLS.items():
        m = handlers[method]
        tools.append(types.Tool(name=name, title=method, description=f"{m.summary} (the engine's `{method}`)",
                                input_schema=m.params.model_json_schema(by_alias=True)))
    return tools


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def build_server(client: AsyncClient) -> Server[Any]:
    tools = tool_list()

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        method = TOOLS.get(params.name)
        if method is None:
            return _error("method_not_found", f"unknown tool {params.name!r}; tools: {', '.join(TOOLS)}", None)
        arguments = dict(params.arguments or {})
        if method == "kb.ingest" and isinstance(arguments.get("paths"), list):
            arguments["paths"] = [os.path.abspath(p) if isinstance(p, str) and p else p for p in arguments["paths"]]
        if method == "kb.answer":
            arguments.setdefault("stream", False)  # no deltas to forward: one tool result
        try:
            results = await client.results(method, arguments)
        except RequestError as exc:
            return _error(exc.code, exc.message, exc.data)
        data: Any = {"results": results} if method == "kb.ingest" else results[0]
        return types.CallToolResult(content=[types.TextContent(text=_json(data))], structured_content=data)

    return Server("jsonl-engine", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


def _error(code: str, message: str, data: Any) -> types.CallToolResult:
    error = {"code": code, "message": message, "data": data}
    return types.CallToolResult(content=[types.TextContent(text=f"{code}: {message}")],
                                structured_content={"error": error}, is_error=True)


async def serve(kb: str | None = None, config: str | None = None) -> None:
    async with AsyncClient(kb, config=config) as client, stdio_server() as (read, write):
        server = build_server(client)
        await server.run(read, write, server.create_initialization_options())


def main(kb: str | None = None, config: str | None = None) -> int:
    asyncio.run(serve(kb, config))
    return 0
