"""The quote locator (pure) and span extraction against the scripted HTTP server."""

import asyncio
import json
from dataclasses import dataclass

import pytest

from jsonl_engine.answer.spans import Span, extract_spans, locate_quote
from jsonl_engine.errors import LLMError
from jsonl_engine.llm.gateway import Gateway
from jsonl_engine.llm.usage import Usage, estimate_tokens
from tests.support.gateway import InFlight, chat_reply, error, json_reply

SECTION = ("Net sales were $5.2 billion in fiscal 2022,\ncompared with $4.9 billion in fiscal 2021. The\n"
           "increase reflects higher volumes in the Americas and  favourable pricing. Operat-\ning margin "
           "improved to 18.1%, driven by “cost discipline” and the well-known Project Eﬃciency.")


def located(text, quote):
    span = locate_quote(text, quote)
    return None if span is None else text[span[0]:span[1]]


# -- locate_quote -------------------------------------------------------------------------------------

def test_exact_substring_is_pass_one():
    assert locate_quote(SECTION, "$4.9 billion") == (SECTION.index("$4.9 billion"), SECTION.index("$4.9 billion") + 12)
    assert located(SECTION, "  $4.9 billion ") == "$4.9 billion"


@pytest.mark.parametrize("quote, expected", [
    ("fiscal 2022, compared with $4.9 billion", "fiscal 2022,\ncompared with $4.9 billion"),
    ("The increase reflects", "The\nincrease reflects"),
    ("in the Americas and favourable pricing", "in the Americas and  favourable pricing"),
    ("in the Americas\r\nand favourable", "in the Americas and  favourable"),
    ('driven by "cost discipline"', "driven by “cost discipline”"),
    ("Project Efficiency", "Project Eﬃciency"),
])
def test_whitespace_and_typography_normalised_match_maps_back_to_original_offsets(quote, expected):
    assert located(SECTION, quote) == expected


@pytest.mark.parametrize("quote, expected", [
    ("Operating margin improved to 18.1%", "Operat-\ning margin improved to 18.1%"),
    ("NET SALES WERE $5.2 BILLION", "Net sales were $5.2 billion"),
    ("the wellknown Project", "the well-known Project"),
    ('"Net sales were $5.2 billion..."', "Net sales were $5.2 billion"),
    ("Net sales were $5.2 billion ... in fiscal 2021.", SECTION[:SECTION.index("2021.") + 5]),
    ("…higher volumes in the Americas", "higher volumes in the Americas"),
])
def test_loose_passes_case_hyphenation_quote_marks_and_ellipsis(quote, expected):
    assert located(SECTION, quote) == expected


@pytest.mark.parametrize("quote", [
    "Revenue grew to 5.2 billion dollars in 2022",  # paraphrase
    "Net sales were $5.3 billion",  # a wrong figure
    "", "   ", "Net sales ... the moon",
])
def test_what_is_not_in_the_text_is_not_located(quote):
    assert locate_quote(SECTION, quote) is None


def test_first_occurrence_and_empty_text():
    assert locate_quote("a cat and a cat", "a cat") == (0, 5)
    assert locate_quote("", "x") is None


def test_located_slice_always_round_trips():
    for quote in ("sales were", "FISCAL 2021. The increase", "18.1% , driven", "Efficiency."):
        span = locate_quote(SECTION, quote)
        assert span is not None and 0 <= span[0] < span[1] <= len(SECTION)
        assert SECTION[span[0]:span[1]].strip() == SECTION[span[0]:span[1]]


# -- extract_spans ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Sec:
    section_id: str
    text: str
    title: str = ""


def extract(server, sections, query="What were net sales in 2022?", usage=None, progress=None, **settings):
    """extract_spans through a Gateway on the scripted server; `settings` configure the reader
    (max_concurrency, context_tokens, max_retries, ...)."""
    async def main():
        gw = Gateway(server.reader(**settings))
        try:
            return await extract_spans(gw, query, sections, usage=usage if usage is not None else Usage(),
                                       progress=progress)
        finally:
            await gw.aclose()

    return asyncio.run(main())


def test_verified_quote_paraphrase_and_line_breaks(gateway):
    sections = [Sec("d:1", SECTION, "Results"), Sec("d:2", SECTION), Sec("d:3", SECTION), Sec("d:4", "Other text.")]

    gateway.push(  # served in order: max_concurrency=1 keeps the calls in section order
        json_reply({"found": True, "quote": "Net sales were $5.2 billion in fiscal 2022"}),
        json_reply({"found": True, "quote": "Sales came to about 5.2 billion"}),  # paraphrase
        chat_reply('```json\n{"found": true, "quote": "fiscal 2022, compared with $4.9 billion"}\n```'),
        json_reply({"found": False, "quote": ""}),
    )
    usage = Usage()
    spans = extract(gateway, sections, usage=usage, max_concurrency=1)
    assert spans[0] == Span("d:1", "Net sales were $5.2 billion in fiscal 2022", 0, 42, verified=True, found=True)
    assert spans[1] == Span("d:2", "Sales came to about 5.2 billion", -1, -1, verified=False, found=True)
    start = SECTION.index("fiscal 2022,\n")
    expected = "fiscal 2022,\ncompared with $4.9 billion"
    assert spans[2] == Span("d:3", expected, start, start + len(expected), verified=True, found=True)
    assert SECTION[spans[2].quote_start:spans[2].quote_end] == spans[2].quote
    assert spans[3] == Span("d:4", "", -1, -1, verified=False, found=False)
    assert usage.calls == 4 and usage.prompt_tokens == 44 and usage.completion_tokens == 28

    request = gateway.requests[0]
    assert request.body["response_format"] == {"type": "json_object"}
    assert "What were net sales in 2022?" in request.prompt and SECTION in request.prompt
    assert "Results" in request.prompt and '"found"' in request.prompt


def test_no_call_for_an_empty_query_or_an_empty_section(gateway):
    sections = [Sec("d:1", SECTION), Sec("d:2", "  \n ")]
    assert extract(gateway, sections, query="  ") == [Span(s.section_id, "", -1, -1, False, False) for s in sections]
    gateway.push(json_reply({"found": True, "quote": "Net sales"}))
    spans = extract(gateway, sections)
    assert [s.found for s in spans] == [True, False]
    assert len(gateway.requests) == 1 and gateway.unexpected == 0


def test_section_text_sent_is_bounded_by_the_reader_context_window(gateway):
    long_text = ("word " * 5000) + "The answer is 42 at the very end."
    gateway.push(json_reply({"found": True, "quote": "The answer is 42"}))

    spans = extract(gateway, [Sec("d:1", long_text)], query="answer?", context_tokens=1024)
    request = gateway.requests[0]
    section_sent = request.messages[-1]["content"].split("<section>\n", 1)[1]
    assert section_sent.startswith("word word") and "The answer is 42" not in section_sent
    # the prompt and the longest reply fit the window, and most of what is left goes to the section
    assert 1024 - 100 <= estimate_tokens(request.prompt) + request.body["max_tokens"] <= 1024
    # offsets point into the full section text even though the model saw a prefix
    assert spans[0].verified and long_text[spans[0].quote_start:spans[0].quote_end] == "The answer is 42"


def test_calls_run_with_bounded_concurrency_and_usage_adds_up(gateway):
    inflight = InFlight()

    def responder(request):
        inflight.hold(0.1)
        section = request.prompt.split("<section>\n", 1)[1].split("\n</section>")[0]
        return json_reply({"found": True, "quote": section[:12]}, prompt_tokens=100, completion_tokens=10)

    gateway.responder = responder
    sections = [Sec(f"d:{i}", f"Section number {i} says something.") for i in range(7)]
    usage = Usage()
    ticks: list[tuple[int, int]] = []
    spans = extract(gateway, sections, usage=usage, progress=lambda d, t: ticks.append((d, t)), max_concurrency=6)
    assert ticks == [(i, 7) for i in range(1, 8)]
    assert [s.section_id for s in spans] == [s.section_id for s in sections]
    assert all(s.verified and s.quote_start == 0 for s in spans)
    assert inflight.peak == 6  # the reader's limit (above the old fixed 4) is reached and never exceeded
    assert usage.to_dict() == {"prompt_tokens": 700, "completion_tokens": 70, "total_tokens": 770, "calls": 7,
                               "estimated": False}


def test_unparseable_reply_counts_as_not_found_but_upstream_failure_propagates(gateway):
    gateway.push(chat_reply("The section mentions sales."), chat_reply("Really, no JSON."))
    assert extract(gateway, [Sec("d:1", SECTION)]) == [Span("d:1", "", -1, -1, False, False)]
    gateway.push(error(500), error(500), error(500))
    with pytest.raises(LLMError) as info:
        extract(gateway, [Sec("d:1", SECTION)], max_retries=2)
    assert info.value.status == 500 and info.value.retryable


def test_found_as_string_and_missing_found(gateway):
    gateway.push(chat_reply(json.dumps({"found": "true", "quote": "$5.2 billion"})),
                 chat_reply(json.dumps({"quote": "$4.9 billion"})),
                 chat_reply(json.dumps({"found": True, "quote": ""})))
    spans = extract(gateway, [Sec("a", SECTION), Sec("b", SECTION), Sec("c", SECTION)], max_concurrency=1)
    assert [(s.found, s.verified, s.quote) for s in spans] == [
        (True, True, "$5.2 billion"), (True, True, "$4.9 billion"), (False, False, "")]
