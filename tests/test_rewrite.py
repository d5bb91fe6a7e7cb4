"""kb.synthesize llm=true: the model's prose keeps only sentences citing offered claims; other ids are
stripped and reported, sentences left without a valid citation are dropped."""

from __future__ import annotations

import asyncio

from jsonl_engine.answer.citations import make_claim
from jsonl_engine.answer.rewrite import check_sentences, rewrite_claims, sentences_of
from jsonl_engine.llm.gateway import Gateway
from jsonl_engine.llm.usage import Usage
from tests.support.gateway import chat_reply, json_reply

TEXT = "Net sales were $1,234 million in 2023. Operating income was $210 million. Total debt was $1,900 million."


def claims():
    spans = [(0, 38), (39, 72), (73, len(TEXT))]
    return [make_claim(section_id="d:0.1", document_id="d", document_title="Acme", section_text=TEXT,
                       page_map=[(0, 4)], page_start=4, start=a, end=b) for a, b in spans]


def run(gateway, cs, reply=None):
    if reply is not None:
        gateway.push(reply)
    usage = Usage()

    async def go():
        gw = Gateway(gateway.reader())
        try:
            return await rewrite_claims(gw, "How did Acme do in 2023?", cs, usage)
        finally:
            await gw.aclose()

    return asyncio.run(go()), usage


def test_sentences_keep_valid_citations_only(gateway) -> None:
    c1, c2, c3 = claims()
    (answer, dropped, stripped), usage = run(gateway, [c1, c2, c3], json_reply({"sentences": [
        {"text": "Acme sold $1,234 million of goods in 2023.", "claims": [c1.id, "c000000000000"]},
        {"text": "It earned $210 million from operations [" + c2.id + "].", "claims": []},
        {"text": "Acme is the best widget maker.", "claims": ["c999"]},
        {"text": "Debt stood at $1,900 million.", "claims": c3.id},
        {"text": "Margins improved.", "claims": []}]}))
    assert answer == (f"Acme sold $1,234 million of goods in 2023. [{c1.id}] "
                      f"It earned $210 million from operations. [{c2.id}] Debt stood at $1,900 million. [{c3.id}]")
    assert dropped == ["Acme is the best widget maker.", "Margins improved."]
    assert stripped == ["c000000000000", "c999"]
    assert usage.calls == 1
    prompt = gateway.requests[0].messages[1]["content"]
    assert f"[{c1.id}] (Acme, page 4) Net sales were $1,234 million in 2023." in prompt
    assert gateway.requests[0].body["response_format"] == {"type": "json_object"}


def test_prose_replies_with_bracketed_ids(gateway) -> None:
    c1, c2, _ = claims()
    (answer, dropped, stripped), _ = run(gateway, [c1, c2], chat_reply(
        f"Sales reached $1,234 million [{c1.id}, cfake]. Operating income was $210 million. [{c2.id}] "
        "It was a [great] year."))
    assert answer == f"Sales reached $1,234 million. [{c1.id}] Operating income was $210 million. [{c2.id}]"
    assert stripped == ["cfake", "great"] and dropped == ["It was a year."]


def test_no_claims_makes_no_call(gateway) -> None:
    (answer, dropped, stripped), usage = run(gateway, [])
    assert (answer, dropped, stripped) == ("", [], []) and gateway.requests == [] and usage.calls == 0


def test_helpers() -> None:
    assert sentences_of('{"answer": "A [x]. B."}') == [("A.", ["x"]), ("B.", [])]
    assert sentences_of('{"sentences": ["One [a]."]}') == [("One.", ["a"])]
    assert check_sentences([("A.", ["a", "a", "b"]), ("", ["a"])], {"a"}) == ("A. [a]", [], ["b"])
