"""`jsonl-engine mcp` driven by the official SDK's own stdio client: the tool list as a model reads it, each tool's
compact text and full JSON, errors (bad arguments answer invalid_params, never a traceback)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

mcp = pytest.importorskip("mcp", reason="the [mcp] extra (in [test]) is not installed")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from jsonl_engine.app import load_methods  # noqa: E402
from tests.support.client import daemon_env  # noqa: E402

REPORT = ("# Quillon Ferries 2030 Report\n\n## Fleet\n\nQuillon Ferries ran 9 ferries in 2030.\n\n"
          "## Fuel\n\nFuel costs at Quillon were $12.5 million in 2030.\n")
FUEL = "Fuel costs at Quillon were $12.5 million in 2030."
# what each tool lets an agent choose (besides `format`): no internal knobs
PARAMS = {"context": ["query", "document_ids", "limit", "max_chars", "unit"],
          "synthesize": ["query", "document_ids"], "answer": ["query", "document_ids"],
          "documents": ["entity", "kind", "fiscal_year"], "outline": ["document_id", "max_depth"],
          "read": ["section_id", "document_id", "page"], "ingest": ["paths"]}


@contextlib.asynccontextmanager
async def mcp_session(tmp_path: Path, env: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "quillon.md").write_text(REPORT, encoding="utf-8")
    server = StdioServerParameters(command=sys.executable,
                                   args=["-m", "jsonl_engine", "mcp", "--kb", str(tmp_path / "kb")],
                                   env=daemon_env(env), cwd=str(tmp_path))
    with (tmp_path / "stderr.txt").open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def text_of(session: ClientSession, name: str, arguments: dict) -> str:
    out = await session.call_tool(name, arguments)
    assert not out.is_error, out.content
    assert len(out.content) == 1 and out.structured_content is None  # the compact text only
    return out.content[0].text


async def json_of(session: ClientSession, name: str, arguments: dict) -> dict:
    out = await session.call_tool(name, {**arguments, "format": "json"})
    assert not out.is_error, out.content
    assert orjson.loads(out.content[0].text) == out.structured_content
    return out.structured_content


def check_tool_list(listed: list) -> None:
    """Read as a model would: each description one complete paragraph, each schema only the agent's params, with
    the method's own bounds."""
    handlers = load_methods()
    for tool in listed:
        text = tool.description
        assert "\n" not in text and text.endswith(".") and 100 < len(text) < 500, (tool.name, text)
        assert not re.search(r"\w\($|\(the engine's|…|\.\.\.$", text), text
        schema = tool.input_schema
        assert list(schema["properties"]) == [*PARAMS[tool.name], "format"] and not schema["additionalProperties"]
        method = handlers[f"kb.{tool.name}"].params.model_json_schema(by_alias=True)["properties"]
        for name, prop in schema["properties"].items():
            assert "title" not in prop and prop.get("description"), (tool.name, name)
            if name != "format":
                for bound in ("minimum", "maximum", "minLength", "maxLength", "enum"):
                    declared = method[name].get(bound, next((b.get(bound) for b in method[name].get("anyOf", [])
                                                             if b.get(bound) is not None), None))
                    assert prop.get(bound) == declared, (tool.name, name, bound)


def test_mcp_tools_over_stdio(tmp_path: Path) -> None:
    async def main() -> None:
        async with mcp_session(tmp_path) as session:
            listed = (await session.list_tools()).tools
            # no LLM reader configured: no answer tool, and the instructions do not offer one
            assert [t.name for t in listed] == ["context", "synthesize", "documents", "outline", "read", "ingest"]
            assert "format: \"json\"" in session.instructions and "LLM reader" not in session.instructions
            check_tool_list(listed)

            added = await text_of(session, "ingest", {"paths": [str(tmp_path / "docs")]})
            doc = re.fullmatch(rf"added Quillon Ferries 2030 Report \((\w{{16}}), 1 pages\) "
                               rf"{re.escape(str(tmp_path / 'docs' / 'quillon.md'))}", added)[1]
            assert (await text_of(session, "ingest", {"paths": [str(tmp_path / "docs")]})) == \
                f"skipped Quillon Ferries 2030 Report ({doc}): already ingested (same content)"
            docs = await text_of(session, "documents", {})
            assert docs.splitlines()[1].startswith(f"{doc}  Quillon Ferries 2030 Report (")
            outline = await text_of(session, "outline", {"document_id": doc})
            assert re.search(rf"\n  - Fuel, p\. 1 \(section ({doc}:[\w.]+)\)", outline)
            fuel_id = re.search(rf"- Fuel, p\. 1 \(section ({doc}:[\w.]+)\)", outline)[1]

            context = await text_of(session, "context", {"query": "fuel costs", "limit": 1})
            assert context == f"[1] Quillon Ferries 2030 Report > Fuel, p. 1 (section {fuel_id})\n## Fuel\n\n{FUEL}"
            synth = await text_of(session, "synthesize", {"query": "What were Quillon fuel costs in 2030?"})
            assert synth.splitlines()[0] == f'[1] Quillon Ferries 2030 Report, p. 1: "{FUEL}" (section {fuel_id})'
            section = await text_of(session, "read", {"section_id": fuel_id})
            assert section.splitlines()[0].endswith(f"Fuel, p. 1 (section {fuel_id})") and FUEL in section

            # format json: the method's whole result object
            full = await json_of(session, "synthesize", {"query": "What were Quillon fuel costs in 2030?"})
            claim = full["claims"][0]
            assert claim["text"] == FUEL and claim["section_id"] == fuel_id and "_meta" in full
            read = await json_of(session, "read", {"section_id": fuel_id})
            assert read["text"][claim["quote_start"]:claim["quote_end"]] == FUEL
            relative = (await json_of(session, "ingest", {"paths": ["docs"]}))["results"]  # from the server's cwd
            assert [(r["document_id"], r["skipped"]) for r in relative] == [(doc, True)]
            assert (await json_of(session, "documents", {}))["documents"][0]["document_id"] == doc

            # errors: the engine's error object as an MCP tool error
            no_llm = await session.call_tool("answer", {"query": "fuel costs"})
            assert no_llm.is_error and no_llm.content[0].text.startswith("method_not_found: unknown tool 'answer'")
            bad = await session.call_tool("context", {"query": "x", "limit": 0})
            assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_params"
            assert bad.structured_content["error"]["data"]["field"] == "limit"
            knob = await session.call_tool("context", {"query": "x", "concurrency": 4})
            assert knob.is_error and knob.structured_content["error"]["data"]["field"] == "concurrency"
            assert knob.content[0].text.startswith("invalid_params: unknown param(s): concurrency; context takes ")
            missing = await session.call_tool("read", {"document_id": "0123456789abcdef", "page": 1})
            assert missing.is_error and missing.structured_content["error"]["code"] == "not_found"
            unknown = await session.call_tool("remove", {"document_id": doc})
            assert unknown.is_error and "unknown tool" in unknown.content[0].text
            assert (await json_of(session, "documents", {}))["documents"] != []  # nothing removed

    asyncio.run(asyncio.wait_for(main(), 120))


def test_mcp_integers_beyond_64_bits_are_invalid_params(tmp_path: Path) -> None:
    """Issue 25 item 11: an integer the wire cannot carry is invalid_params naming the field, nothing on stderr;
    the server keeps serving."""
    async def main() -> None:
        async with mcp_session(tmp_path) as session:
            for name, arguments, field in [("context", {"query": "x", "limit": 2**70}, "limit"),
                                           ("read", {"document_id": "0123456789abcdef", "page": -(10**30)}, "page"),
                                           ("documents", {"fiscal_year": 10**400}, "fiscal_year")]:
                out = await session.call_tool(name, arguments)
                assert out.is_error, out.content
                error = out.structured_content["error"]
                assert error["code"] == "invalid_params" and error["data"]["field"] == field, error
                assert out.content[0].text.startswith(f"invalid_params: {field}: an integer of ")
            assert (await text_of(session, "documents", {})).startswith("No documents")

    asyncio.run(asyncio.wait_for(main(), 120))
    assert "Traceback" not in (tmp_path / "stderr.txt").read_text()


def test_mcp_answer_tool_with_an_llm(tmp_path: Path, gateway) -> None:
    """With a reader configured the `answer` tool is listed; on the loopback LLM server it gives one tool result
    (kb.answer without deltas) whose citations are numbered with title, page and the verified quote."""
    from tests.support.answer_script import AnswerScript, cite_all, first_words, offered_ids

    script = AnswerScript()
    gateway.responder = script

    async def main() -> None:
        async with mcp_session(tmp_path, gateway.env()) as session:
            listed = (await session.list_tools()).tools
            assert [t.name for t in listed] == ["context", "synthesize", "answer", "documents", "outline", "read",
                                                "ingest"]
            assert "answer for the configured LLM reader's cited answer" in session.instructions
            check_tool_list(listed)
            assert not (await session.call_tool("ingest", {"paths": [str(tmp_path / "docs")]})).is_error
            result = await json_of(session, "answer", {"query": "What were Quillon fuel costs in 2030?"})
            (answer_request,) = script.seen["answer"]
            assert not answer_request.body.get("stream")  # the tool forwards no deltas
            ids = offered_ids(answer_request)
            assert ids and result["answer"] == cite_all(ids) and result["error"] is None
            cited = {c["section_id"]: c for c in result["citations"]}
            assert list(cited) == ids
            for sid in ids:
                section = (await json_of(session, "read", {"section_id": sid}))["text"]
                c = cited[sid]
                assert c["verified"] and c["quote"] == first_words(section)
                assert section[c["quote_start"]:c["quote_end"]] == c["quote"]

            text = await text_of(session, "answer", {"query": "What were Quillon fuel costs in 2030?"})
            lines = text.splitlines()
            assert lines[0] == cite_all([str(n) for n in range(1, len(ids) + 1)])  # [section_id] -> [n]
            for n, sid in enumerate(ids, 1):
                c = cited[sid]
                assert f'[{n}] Quillon Ferries 2030 Report, p. {c["page_start"]}: "{c["quote"]}" (section {sid})' \
                    in lines

    asyncio.run(asyncio.wait_for(main(), 120))


def test_readme_names_the_tools() -> None:
    from jsonl_engine.mcp_server import BY_NAME
    from tests.support.daemon import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("**MCP clients**", 1)[1].split("```json", 1)[0]
    assert {name for name in re.findall(r"`(\w+)`", section) if name in BY_NAME} == set(BY_NAME)
