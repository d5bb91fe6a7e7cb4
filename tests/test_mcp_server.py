"""`jsonl-engine mcp` driven by the official SDK's own stdio client: list tools, call each, errors."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import orjson
import pytest

mcp = pytest.importorskip("mcp", reason="the [mcp] extra (in [test]) is not installed")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from jsonl_engine.registry import load_methods  # noqa: E402
from tests.support.client import daemon_env  # noqa: E402
from tests.support.daemon import ROOT  # noqa: E402

REPORT = ("# Quillon Ferries 2030 Report\n\n## Fleet\n\nQuillon Ferries ran 9 ferries in 2030.\n\n"
          "## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n")


def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "quillon.md").write_text(REPORT, encoding="utf-8")
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "jsonl_engine", "mcp", "--kb", str(tmp_path / "kb")],
                                   env=daemon_env(), cwd=str(ROOT))

    async def main() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            assert [t.name for t in listed] == ["context", "synthesize", "answer", "documents", "outline", "read",
                                                "ingest"]
            handlers = load_methods()
            for tool in listed:  # the same schemas as the wire contract
                assert tool.input_schema == handlers[f"kb.{tool.name}"].params.model_json_schema(by_alias=True)

            async def call(name: str, arguments: dict) -> dict:
                out = await session.call_tool(name, arguments)
                assert not out.is_error, out.content
                assert orjson.loads(out.content[0].text) == out.structured_content
                return out.structured_content

            ingested = (await call("ingest", {"paths": [str(tmp_path / "docs")]}))["results"]
            assert [r["title"] for r in ingested] == ["Quillon Ferries 2030 Report"] and not ingested[0]["error"]
            doc = ingested[0]["document_id"]
            docs = await call("documents", {})
            assert [d["document_id"] for d in docs["documents"]] == [doc]
            outline = await call("outline", {"document_id": doc})
            assert [s["title"] for s in outline["sections"][0]["children"]] == ["Fleet", "Fuel"]
            page = await call("read", {"document_id": doc, "page": 1})
            assert "Quillon Ferries ran 9 ferries in 2030." in page["text"]
            context = await call("context", {"query": "fuel costs", "limit": 1})
            assert context["items"][0]["title"] == "Fuel"
            synth = await call("synthesize", {"query": "What were Quillon fuel costs in 2030?"})
            claim = synth["claims"][0]
            assert claim["text"] == "Fuel costs at Quillon were $12.5 million in 2030."
            section = await call("read", {"section_id": claim["section_id"]})
            assert section["text"][claim["quote_start"]:claim["quote_end"]] == claim["text"]

            # errors: the engine's error object as an MCP tool error
            no_llm = await session.call_tool("answer", {"query": "fuel costs"})
            assert no_llm.is_error and no_llm.content[0].text.startswith("llm_unavailable: ")
            assert no_llm.structured_content["error"]["code"] == "llm_unavailable"
            bad = await session.call_tool("context", {"query": "x", "limit": 0})
            assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_params"
            assert bad.structured_content["error"]["data"]["field"] == "limit"
            missing = await session.call_tool("read", {"document_id": "0123456789abcdef", "page": 1})
            assert missing.is_error and missing.structured_content["error"]["code"] == "not_found"
            unknown = await session.call_tool("remove", {"document_id": doc})
            assert unknown.is_error and "unknown tool" in unknown.content[0].text
            assert (await call("documents", {}))["documents"] != []  # nothing removed

    asyncio.run(asyncio.wait_for(main(), 120))


def test_mcp_answer_tool_with_an_llm(tmp_path: Path, gateway) -> None:
    """The `answer` tool on the loopback LLM server: one tool result (kb.answer without deltas) whose answer
    cites the sections it was offered, each citation verified with the quote the span reader returned."""
    from tests.support.answer_script import AnswerScript, cite_all, first_words, offered_ids

    script = AnswerScript()
    gateway.responder = script
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "quillon.md").write_text(REPORT, encoding="utf-8")
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "jsonl_engine", "mcp", "--kb", str(tmp_path / "kb")],
                                   env=daemon_env(gateway.env()), cwd=str(ROOT))

    async def main() -> None:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert not (await session.call_tool("ingest", {"paths": [str(tmp_path / "docs")]})).is_error
            out = await session.call_tool("answer", {"query": "What were Quillon fuel costs in 2030?"})
            assert not out.is_error, out.content
            result = out.structured_content
            assert orjson.loads(out.content[0].text) == result
            (answer_request,) = script.seen["answer"]
            assert not answer_request.body.get("stream")  # the tool forwards no deltas
            ids = offered_ids(answer_request)
            assert ids and result["answer"] == cite_all(ids) and result["error"] is None
            cited = {c["section_id"]: c for c in result["citations"]}
            assert list(cited) == ids
            for sid in ids:
                section = (await session.call_tool("read", {"section_id": sid})).structured_content["text"]
                c = cited[sid]
                assert c["verified"] and c["quote"] == first_words(section)
                assert section[c["quote_start"]:c["quote_end"]] == c["quote"]

    asyncio.run(asyncio.wait_for(main(), 120))
