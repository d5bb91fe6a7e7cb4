"""`jsonl-engine mcp`: the KB as a few MCP tools for agents, over stdio, on the official `mcp` SDK (the `[mcp]` extra).

One daemon (the JSON-lines engine, spawned with `jsonl_engine.client.AsyncClient`) serves every tool call; a tool
call is one request. The tools are made for a model that pays for every token of their descriptions and results:
each takes only the params an agent should choose (a subset of its method's params schema, same bounds and
descriptions), and answers compact text, citations as `[n] title, p. N: "quote"`; `format: "json"` gives the
method's full result object instead (as JSON text and as structured content). `answer` (an LLM reader's answer) is
listed only when the daemon has a reader configured. An error event is an MCP tool error (`isError`) whose text
is `code: message` and whose structured content is the wire's error object.
Only this module imports `mcp`: the daemon's start-up never pays for it.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import orjson
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from jsonl_engine import __version__
from jsonl_engine.app import load_methods
from jsonl_engine.client import AsyncClient, RequestError, UnsendableValue, result_model
from jsonl_engine.models.answer import AnswerResult
from jsonl_engine.models.context import ContextResult
from jsonl_engine.models.documents import (
    DocumentsResult,
    IngestResult,
    OutlineResult,
    OutlineSection,
    ReadResult,
)
from jsonl_engine.models.synthesize import SynthesizeResult

CONTEXT_MAX_CHARS = 6000  # the context tool's default budget: about 1,500 tokens of passages per call
FORMAT = {"type": "string", "enum": ["text", "json"], "default": "text",
          "description": "text: compact lines; json: the full result object (offsets, page boxes)"}


@dataclass(frozen=True)
class Tool:
    """One MCP tool: the method it calls, the params it exposes, how its result reads as text."""

    name: str
    method: str
    result: str  # the result model's class name (jsonl_engine.models)
    description: str
    params: tuple[str, ...]
    text: Callable[[Any], str]
    required: tuple[str, ...] = ()
    defaults: dict[str, Any] = field(default_factory=dict)  # this tool's defaults where they differ from the method's
    described: dict[str, str] = field(default_factory=dict)  # param descriptions where the method's do not fit
    needs_llm: bool = False


# ---- compact text ------------------------------------------------------------------------------------------


def _pages(start: int, end: int) -> str:
    return f"p. {start}" if start == end else f"pp. {start}-{end}"


def _where(*titles: str) -> str:
    """Document > section path > section, without a title repeated (a top section named like its document)."""
    return " > ".join(t for i, t in enumerate(titles) if t and (i == 0 or t != titles[i - 1]))


def _quote(text: str) -> str:
    return '"' + " ".join(text.split()) + '"'


def _context_text(out: ContextResult) -> str:
    if not out.items:
        return f"No passages: {out.reason or 'nothing matched'}."
    lines = []
    for n, item in enumerate(out.items, 1):
        where = _where(item.document_title, *item.path, item.title)
        lines += [f"[{n}] {where}, {_pages(item.page_start, item.page_end)} (section {item.section_id})",
                  (item.text if item.text is not None else item.snippet).strip(), ""]
    if out.budget.truncated:
        lines.append(f"({out.reason or 'cut to fit max_chars'}; raise max_chars for more.)")
    return "\n".join(lines).strip()


def _synthesize_text(out: SynthesizeResult) -> str:
    claims = {claim.id: claim for claim in out.claims}
    order = [cid for cid in dict.fromkeys(re.findall(r"\[(\w+)\]", out.answer)) if cid in claims]
    order += [cid for cid in claims if cid not in order]
    lines = []
    for n, cid in enumerate(order, 1):
        claim = claims[cid]
        pages = [p.page for p in claim.pages] or [claim.page]
        lines.append(f"[{n}] {claim.document_title}, {_pages(min(pages), max(pages))}: {_quote(claim.text)} "
                     f"(section {claim.section_id})")
    if not lines:
        lines.append("No sentence of the knowledge base answers this.")
    elif out.meta.truncated:
        lines.append("More sentences matched than fit max_chars.")
    lines.append(f"Confidence: {out.meta.synthesis_confidence}.")
    if out.gaps:
        lines.append(f"Not covered by any passage: {', '.join(out.gaps)}.")
    return "\n".join(lines)


def _answer_text(out: AnswerResult) -> str:
    numbers = {c.section_id: n for n, c in enumerate(out.citations, 1)}
    answer = re.sub(r"\[([^\[\]\s]+)\]", lambda m: f"[{numbers[m[1]]}]" if m[1] in numbers else m[0], out.answer)
    lines = [answer.strip(), ""]
    for n, c in enumerate(out.citations, 1):
        quote = _quote(c.quote) if c.verified else f"(quote not found in the source) {_quote(c.quote)}"
        lines.append(f"[{n}] {c.document_title}, {_pages(c.page_start, c.page_end)}: {quote} (section {c.section_id})")
    if out.truncated:
        lines.append("The answer was cut off.")
    if out.invented_ids:
        lines.append(f"Cited ids that were not among the sources (ignore them): {', '.join(out.invented_ids)}.")
    lines += [f"Warning: {w}" for w in out.warnings]
    if out.error is not None:
        lines.append(f"Error after retrieval (the answer may be partial): {out.error.code}: {out.error.message}")
    return "\n".join(lines).strip()


def _documents_text(out: DocumentsResult) -> str:
    if not out.documents:
        return "No documents (add some with the ingest tool)."
    lines = [f"{len(out.documents)} document(s):"]
    for doc in out.documents:
        card = doc.card
        facts = [card.kind if card else None, f"FY{card.fiscal_year}" if card and card.fiscal_year else None,
                 f"{doc.pages} pages", doc.status if doc.status != "approved" else None, doc.path]
        lines.append(f"{doc.document_id}  {doc.title} ({', '.join(f for f in facts if f)})")
    return "\n".join(lines)


def _outline_text(out: OutlineResult) -> str:
    lines = [f"{out.title} ({out.document_id})"]

    def walk(sections: list[OutlineSection], depth: int) -> None:
        for s in sections:
            lines.append(f"{'  ' * depth}- {s.title}, {_pages(s.page_start, s.page_end)} (section {s.section_id})")
            walk(s.children, depth + 1)

    walk(out.sections, 0)
    return "\n".join(lines)


def _read_text(out: ReadResult) -> str:
    where = _where(out.document_title, *out.path, out.title)
    head = f"{where}, {_pages(out.page_start, out.page_end)}"
    lines = [head + (f" (section {out.section_id})" if out.section_id else f" ({out.document_id})"),
             out.text.strip()]
    if out.children:
        lines.append(f"Subsections: {', '.join(out.children)}")
    return "\n".join(lines)


def _ingest_text(results: list[IngestResult]) -> str:
    lines = []
    for r in results:
        if r.error is not None:
            reason = f" ({r.error.reason})" if r.error.reason else ""
            lines.append(f"failed {r.path or r.title}: {r.error.code}{reason}: {r.error.message}")
        elif r.skipped:
            lines.append(f"skipped {r.title} ({r.document_id}): {r.reason}")
        else:
            lines.append(f"added {r.title} ({r.document_id}, {r.pages} pages) {r.path or ''}".rstrip())
    return "\n".join(lines) or "No files found."


# ---- the tools ---------------------------------------------------------------------------------------------

TOOLS = (
    Tool("context", "kb.context", "ContextResult", (
        "Search the knowledge base for the passages that best answer a query and return them ranked, each with "
        "its document title, section path, pages, section_id and text, clipped to max_chars characters in all. "
        "Use it to gather evidence to read and reason over yourself, cite what you use by document and page, and "
        "follow up with read for a whole section."),
         ("query", "document_ids", "limit", "max_chars", "unit"), _context_text, required=("query",),
         defaults={"max_chars": CONTEXT_MAX_CHARS},
         described={"max_chars": f"most characters of passage text in all (default {CONTEXT_MAX_CHARS}); the "
                                 "last passages are clipped or dropped to fit"}),
    Tool("synthesize", "kb.synthesize", "SynthesizeResult", (
        "Answer a question only with verbatim sentences of the documents, without any LLM: each sentence is "
        "numbered and cited by document title and page, so every statement can be checked, and the terms of the "
        "question that no passage covers are listed. Use it for a quick sourced answer or for quotes to cite; an "
        "empty result means nothing in the knowledge base matched."),
         ("query", "document_ids"), _synthesize_text, required=("query",)),
    Tool("answer", "kb.answer", "AnswerResult", (
        "Answer a question with the knowledge base's own LLM reader, which retrieves passages, writes an answer "
        "and cites them; each citation is numbered with its document title, page and a quote checked against the "
        "source text. It is slower and costs more than synthesize, and is listed only because an LLM reader is "
        "configured."),
         ("query", "document_ids"), _answer_text, required=("query",), needs_llm=True),
    Tool("documents", "kb.documents", "DocumentsResult", (
        "List the documents in the knowledge base with their document_id, title, kind, fiscal year, pages and file "
        "path, optionally only those of an entity, a kind or a fiscal year. Pass the ids to context or "
        "synthesize as document_ids to search only those documents, or to outline and read."),
         ("entity", "kind", "fiscal_year"), _documents_text),
    Tool("outline", "kb.outline", "OutlineResult", (
        "Show a document's table of contents as an indented tree of its sections, each with its title, pages and "
        "section_id; pass a section_id to read for that section's text."),
         ("document_id", "max_depth"), _outline_text, required=("document_id",),
         described={"document_id": "a document_id from documents, context or a citation"}),
    Tool("read", "kb.read", "ReadResult", (
        "Return the stored text of one section, given its section_id (from context, outline or a citation), or of "
        "one page, given document_id and page, with the document title and the pages it spans."),
         ("section_id", "document_id", "page"), _read_text),
    Tool("ingest", "kb.ingest", "IngestResult", (
        "Add files or folders to the knowledge base: PDF, Markdown and text files, folders searched recursively, "
        "relative paths resolved against the server's working directory. Content already in the knowledge base "
        "is skipped, and each document gets a line with its document_id or the reason it failed."),
         ("paths",), _ingest_text, required=("paths",)),
)
BY_NAME = {tool.name: tool for tool in TOOLS}
INSTRUCTIONS = (
    "A document knowledge base (PDF, Markdown, text) that answers with checkable citations: document, page and a "
    "verbatim quote. Use context for ranked passages to reason over, synthesize for an answer made only of cited "
    "quotes{answer}, documents, outline and read to browse, ingest to add files. Results are compact text; give "
    "format: \"json\" for the full result object.")


def _compact(schema: Any) -> Any:
    """A property's JSON schema without pydantic's titles, an optional value's `null` branch and default."""
    if isinstance(schema, list):
        return [_compact(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _compact(v) for k, v in schema.items() if k != "title"}
    branches = [b for b in out.get("anyOf", []) if b != {"type": "null"}]
    if "anyOf" in out and len(branches) == 1 and out.get("default", 0) is None:
        rest = {k: v for k, v in out.items() if k not in ("anyOf", "default")}
        out = {**branches[0], **rest}
    return out


def input_schema(tool: Tool, method_schema: dict[str, Any]) -> dict[str, Any]:
    """The tool's params: the method's schema for each exposed param, plus `format`."""
    properties = {}
    for name in tool.params:
        prop = _compact(method_schema["properties"][name])
        if name in tool.described:
            prop["description"] = tool.described[name]
        if name in tool.defaults:
            prop["default"] = tool.defaults[name]
        properties[name] = prop
    properties["format"] = FORMAT
    return {"type": "object", "properties": properties, "required": list(tool.required),
            "additionalProperties": False}


def tool_list(llm: bool) -> list[types.Tool]:
    """The tools, `answer` only when an LLM reader is configured (`llm`)."""
    handlers = load_methods()
    return [types.Tool(name=t.name, description=t.description,
                       input_schema=input_schema(t, handlers[t.method].params.model_json_schema(by_alias=True)))
            for t in TOOLS if llm or not t.needs_llm]


class InvalidArguments(Exception):
    """Arguments the tool does not take (answered `invalid_params`, as the daemon answers unknown params)."""

    def __init__(self, message: str, fields: list[str]) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields


def _arguments(tool: Tool, given: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The method's params from the tool's arguments, and the format; InvalidArguments for what the tool lacks."""
    arguments = dict(given)
    fmt = arguments.pop("format", "text")
    unknown = [k for k in arguments if k not in tool.params]
    if unknown:
        raise InvalidArguments(f"unknown param(s): {', '.join(unknown)}; {tool.name} takes "
                               f"{', '.join((*tool.params, 'format'))}", unknown)
    if fmt not in ("text", "json"):
        raise InvalidArguments('format is "text" or "json"', ["format"])
    params = {**tool.defaults, **arguments}
    if tool.method == "kb.ingest" and isinstance(params.get("paths"), list):
        params["paths"] = [os.path.abspath(p) if isinstance(p, str) and p else p for p in params["paths"]]
    if tool.method == "kb.answer":
        params["stream"] = False  # no deltas to forward: one tool result
    return params, fmt


def _result(tool: Tool, results: list[Any], fmt: str) -> types.CallToolResult:
    """format json: the result object (kb.ingest's under `results`), as text and structured content; text: the
    tool's compact text of the result model(s)."""
    if fmt == "json":
        data: Any = {"results": results} if tool.method == "kb.ingest" else results[0]
        return types.CallToolResult(content=[types.TextContent(text=orjson.dumps(data).decode())],
                                    structured_content=data)
    model = result_model(tool.result)
    typed = [model.model_validate(r) for r in results]
    text = tool.text(typed if tool.method == "kb.ingest" else typed[0])
    return types.CallToolResult(content=[types.TextContent(text=text)])


def build_server(client: AsyncClient, *, llm: bool) -> Server[Any]:
    tools = tool_list(llm)
    listed = {t.name for t in tools}

    async def list_tools(_ctx: Any, _params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(_ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = BY_NAME.get(params.name)
        if tool is None or tool.name not in listed:
            return _error("method_not_found", f"unknown tool {params.name!r}; tools: {', '.join(sorted(listed))}",
                          None)
        try:
            arguments, fmt = _arguments(tool, params.arguments or {})
            results = await client.results(tool.method, arguments)
        except InvalidArguments as exc:
            return _error("invalid_params", exc.message, {"field": exc.fields[0], "fields": exc.fields})
        except UnsendableValue as exc:
            return _error("invalid_params", str(exc), {"field": exc.field, "fields": [exc.field]})
        except RequestError as exc:
            return _error(exc.code, exc.message, exc.data)
        return _result(tool, results, fmt)

    answer = ", answer for the configured LLM reader's cited answer" if llm else ""
    return Server("jsonl-engine", version=__version__, instructions=INSTRUCTIONS.format(answer=answer),
                  on_list_tools=list_tools, on_call_tool=call_tool)


def _error(code: str, message: str, data: Any) -> types.CallToolResult:
    error = {"code": code, "message": message, "data": data}
    return types.CallToolResult(content=[types.TextContent(text=f"{code}: {message}")],
                                structured_content={"error": error}, is_error=True)


async def serve(kb: str | None = None, config: str | None = None) -> None:
    async with AsyncClient(kb, config=config) as client, stdio_server() as (read, write):
        llm = bool((await client.capabilities()).readers)
        server = build_server(client, llm=llm)
        await server.run(read, write, server.create_initialization_options())


def main(kb: str | None = None, config: str | None = None) -> int:
    asyncio.run(serve(kb, config))
    return 0
