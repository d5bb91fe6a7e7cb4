"""kb.synthesize's pure parts: segmentation with offsets, claims, composition, gaps and confidence grades."""

from __future__ import annotations

import re

import pytest

from jsonl_engine.answer.citations import claim_id, make_claim, page_at
from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.synthesize import Synthesis, _keys_of_lines, compose, keys, stem
from jsonl_engine.retrieval import Passage, answer_terms
from tests.support.answer_lines import check_lines

CITED = re.compile(r" \[(c[0-9a-f]{12})\]")

FILING = """Liquidity and Capital Resources
Cash provided by operating activities was $7.8 billion in 2022, compared with $7.5 billion in 2021.
Capital expenditures were $1,749 million in 2022, compared with $1,603 million in 2021. The increase
reflects investments in U.S. manufacturing capacity by Acme Corp. and its subsidiaries.
(Millions) 2022 2021 2020
Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)
Proceeds from sale of PP&E 75 90 128
Our priorities for cash are:
• funding capital expenditures and research;
• paying dividends, which rose 3% in 2022, and
repurchasing shares.
41
Other matters are described in Note 5."""


def passage(text: str = FILING, *, sid: str = "d1:0.3", doc: str = "d1", title: str = "ACME_2022_10K",
            status: str = "approved", page_map: list[tuple[int, int]] | None = None,
            section: str = "Liquidity") -> Passage:
    return Passage(section_id=sid, document_id=doc, document_title=title, title=section, path=["Item 7"],
                   page_start=40, page_end=41, score=1.0, text=text, snippet="", status=status,
                   page_map=page_map if page_map is not None else [(0, 40), (text.index("(Millions)"), 41)])


def run(query: str, passages: list[Passage], max_chars: int = 4000) -> Synthesis:
    return compose(query, answer_terms(query), passages, max_chars=max_chars)


def check_citations(out: Synthesis, passages: list[Passage]) -> None:
    """Every line is verbatim claim text (or its table line) followed by its [id]; every claim sits at its offsets
    and page; every table part at its offsets in the section text."""
    by_section = {p.section_id: p for p in passages}
    check_lines(out, lambda sid: by_section[sid].text, lambda doc, page: pytest.fail("read on a page"))
    for claim in out.claims:
        p = by_section[claim.section_id]
        assert claim.page == page_at(p.page_map, claim.quote_start, p.page_start)
        assert claim.document_id == p.document_id and claim.document_title == p.document_title


def test_segments_are_exact_spans_of_sentences_rows_and_bullets():
    segs = segment(FILING)
    for s in segs:
        body = FILING[s.start:s.end]
        assert body == body.strip() and body
    by_kind = {(s.kind, FILING[s.start:s.end]) for s in segs}
    assert ("row", "Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)") in by_kind
    assert ("header", "(Millions) 2022 2021 2020") in by_kind
    assert ("heading", "Liquidity and Capital Resources") in by_kind
    assert ("bullet", "• funding capital expenditures and research;") in by_kind
    assert ("bullet", "• paying dividends, which rose 3% in 2022, and\nrepurchasing shares.") in by_kind
    # a wrapped sentence stays whole; "U.S." and "Corp." do not end sentences
    assert ("sentence", "The increase\nreflects investments in U.S. manufacturing capacity by Acme Corp. and its "
            "subsidiaries.") in by_kind
    assert ("sentence", "Capital expenditures were $1,749 million in 2022, compared with $1,603 million in 2021.") \
        in by_kind
    row = next(s for s in segs if s.kind == "row")
    assert row.header is not None and FILING[row.header[0]:row.header[1]] == "(Millions) 2022 2021 2020"
    assert ("heading", "41") in by_kind  # a page number is not glued to a sentence


def test_markdown_table_rows_and_rules():
    text = "## Results\n\n| Item | 2031 | 2030 |\n|---|---:|---|\n| Passenger revenue | 48.2 | 43.0 |\n\nRevenue rose."
    segs = [(s.kind, text[s.start:s.end], s.header and text[s.header[0]:s.header[1]]) for s in segment(text)]
    assert segs == [("heading", "## Results", None), ("header", "| Item | 2031 | 2030 |", None),
                    ("heading", "|---|---:|---|", None),
                    ("row", "| Passenger revenue | 48.2 | 43.0 |", "| Item | 2031 | 2030 |"),
                    ("sentence", "Revenue rose.", None)]


def test_row_context_from_column_titles_and_lead_in():
    text = ("The benefit payments to retirees are expected to be paid as follows:\n(dollars in millions)\n"
            "Year Pension Benefits Health Care and Life\n2023 1,648 883\n2024 1,097 862\n")
    ps = [passage(text, page_map=[(0, 94)])]
    out = run("How much did Acme expect to pay its retirees in 2024?", ps)
    check_citations(out, ps)
    texts = [c.text for c in out.claims]
    assert "2024 1,097 862" in texts and "2023 1,648 883" not in texts
    assert texts[0] == "2024 1,097 862"  # the row of the asked year answers: it leads
    row = out.tables[out.claims[0].id].row  # its column titles and unit come with it (no header claim)
    assert [h.text for h in row.headers] == ["Year Pension Benefits Health Care and Life"]
    assert row.unit.text == "(dollars in millions)" and row.label.text == "2024"
    assert [c.text for c in row.cells] == ["1,097", "862"]
    assert "a row for the asked period 2024" in out.first_claim["why"]


@pytest.mark.parametrize("text", ["", "\n\n", "one", "a.\r\nb.\r\n", "x" * 3000, "1. 2. 3.", "$ 1 $ 2"])
def test_segmenter_takes_any_text(text):
    for s in segment(text):
        assert 0 <= s.start < s.end <= len(text)
        assert text[s.start:s.end].strip() == text[s.start:s.end]


def test_crlf_lines_and_offsets():
    text = "Revenue grew 5% in 2022.\r\nMargins fell.\r\n\r\nNet sales 100 200\r\n"
    spans = [text[s.start:s.end] for s in segment(text)]
    assert spans == ["Revenue grew 5% in 2022.", "Margins fell.", "Net sales 100 200"]


def test_claim_ids_and_pages():
    assert claim_id("d:1", 3, 9, "abcdef") == "c7fe81c27741a"  # stable across processes and releases
    assert claim_id("d:1", 3, 9, "abcdef") != claim_id("d:1", 4, 10, "abcdef")
    pm = [(0, 3), (100, 4), (250, 5)]
    assert [page_at(pm, o, 1) for o in (0, 99, 100, 249, 250, 10_000)] == [3, 3, 4, 4, 5, 5]
    assert page_at([], 50, 7) == 7
    text = "Net sales were\n$ 34,229 million."
    claim = make_claim(section_id="d:1", document_id="d", document_title="T", section_text=text,
                       page_map=[(0, 2), (15, 3)], page_start=2, start=15, end=len(text))
    assert claim.text == "$ 34,229 million." and claim.page == 3


def test_keys_and_stems_match_across_forms():
    assert stem("increases") == stem("increased") == stem("increasing") == stem("increase")
    assert stem("operations") == stem("operating")
    assert stem("revenues") == stem("revenue")
    assert keys("FY2022 fy22 $1,749.5 3M's R & D") == ["2022", "2022", "1749.5", "3m", "and"]


@pytest.mark.parametrize("parts", [
    ["Net sales $ 5.2", "Item 7", "ACME 2022 10K"],
    ["", "R & D", ""],
    ["Research &", "& Development", "&", "AT&T 3.", "5 fy22"],  # a lone "&" at a line edge reads the break
    ["Sales &", "Costs"], ["Sales", "& Costs"], ["one part only &"],
])
def test_keys_of_lines_equals_keys_of_the_joined_text(parts):
    assert _keys_of_lines(parts, [keys(p) for p in parts]) == keys("\n".join(parts))


def test_answer_cites_every_sentence_and_prefers_the_figure():
    ps = [passage()]
    out = run("What were Acme's capital expenditures in FY2022?", ps)
    check_citations(out, ps)
    first = out.claims[0]
    assert "1,749" in first.text
    assert out.gaps == []
    assert out.confidence == "high"
    # the table row leads, read as a table: the asked year's column and the unit, from the header above it
    assert first.text == "Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)"
    assert out.answer.split("\n")[0] == ("Purchases of property, plant and equipment (PP&E), 2022: (1,749) (Millions) "
                                         f"[{first.id}]")
    assert first.page == 41
    assert out.first_claim["id"] == first.id and "column 2022 is the asked period" in out.first_claim["why"]
    assert "(Millions) 2022 2021 2020" not in [c.text for c in out.claims]  # the header is in the row's table


def test_deterministic_and_ids_stable():
    ps = [passage(), passage(FILING.replace("Acme", "Bolt"), sid="d2:0.1", doc="d2", title="BOLT_2022_10K")]
    a = run("capital expenditures 2022", ps)
    b = run("capital expenditures 2022", list(ps))
    assert a == b
    assert {c.id for c in a.claims} & {c.id for c in run("capex purchases of property", ps).claims}


def test_claims_most_direct_first_and_short_by_default():
    other = "Dividends\nWe paid dividends of $3.4 billion in 2022. Dividends per share rose 3%."
    ps = [passage(other, sid="d1:0.9", section="Dividends", page_map=[(0, 50)]), passage()]
    out = run("What were the capital expenditures in 2022?", ps)
    check_citations(out, ps)
    # the passage ranked first is about dividends: the row answering the question still leads
    assert out.claims[0].text.startswith("Purchases of property, plant and equipment")
    many = compose("capital expenditures and dividends paid in 2022", answer_terms("capital expenditures and "
                   "dividends paid in 2022"), ps, max_chars=4000, max_claims=50)
    few = compose("capital expenditures and dividends paid in 2022", answer_terms("capital expenditures and "
                  "dividends paid in 2022"), ps, max_chars=4000, max_claims=2)
    assert len(many.claims) > 2 and many.more == 0
    assert few.claims == many.claims[:2] and few.more == len(many.claims) - 2


def test_max_chars_drops_trailing_lines_and_cuts_only_a_first_line_that_does_not_fit():
    ps = [passage()]
    full = run("capital expenditures dividends 2022", ps)
    assert len(full.claims) >= 3
    first_line = full.answer.split("\n")[0]
    for limit in range(1, len(full.answer) + 5, 7):
        out = run("capital expenditures dividends 2022", ps, max_chars=limit)
        assert len(out.answer) <= limit
        check_citations(out, ps)
        assert out.gaps == full.gaps  # gaps are computed over every passage considered
        if limit < len(first_line):  # the first claim whole, its line cut at a word and marked: never "no answer"
            if out.claims:
                assert out.claims == full.claims[:1] and out.truncated and out.answer.endswith(f"… [{out.claims[0].id}]")
            else:
                assert limit < len(f"… [{full.claims[0].id}]") + 2
            continue
        assert full.answer.startswith(out.answer)
        assert out.claims == full.claims[:len(out.claims)]
        assert out.truncated == (len(out.claims) < len(full.claims))


def test_gaps_name_uncovered_terms():
    out = run("capital expenditures for the zeppelin fleet", [passage()])
    assert out.gaps == ["zeppelin", "fleet"]
    assert out.claims


def test_question_framing_is_no_gap():
    framing = ("What drove capital expenditures in 2022? If capital expenditures is not a useful metric, "
               "explicitly state that. Round your answer to two decimal places; answer in USD millions, "
               "relying on the details shown, according to the data provided")
    out = run(framing, [passage()])
    assert out.gaps == [] and out.confidence == "high" and out.claims
    assert out.salient_terms == ["capital", "expenditures", "2022"]
    out = run(framing + " of the zeppelin fleet", [passage()])
    assert out.gaps == ["zeppelin", "fleet"] and out.confidence == "medium"


def test_nothing_found():
    out = run("zeppelin fleet", [passage()])
    assert (out.answer, out.claims, out.gaps, out.confidence) == ("", [], ["zeppelin", "fleet"], "none")
    out = run("capital expenditures", [])
    assert (out.answer, out.claims, out.gaps, out.confidence) == ("", [], ["capital", "expenditures"], "none")


def test_grade_high_and_medium_for_gap():
    assert run("capital expenditures 2022", [passage()]).confidence == "high"
    assert run("capital expenditures of the zeppelin", [passage()]).confidence == "medium"


def test_grade_medium_for_draft_source():
    out = run("capital expenditures 2022", [passage(status="draft")])
    assert out.claims and out.confidence == "medium"


def test_grade_medium_when_documents_disagree():
    a = "Capital expenditures were $1,749 million in 2022."
    b = "Capital expenditures were $2,010 million in 2022."
    same = [passage(a, page_map=[]),
            passage(a.replace("were", "totalled"), sid="d2:1", doc="d2", title="X", page_map=[])]
    differ = [passage(a, page_map=[]), passage(b, sid="d2:1", doc="d2", title="X", page_map=[])]
    assert run("capital expenditures 2022", same).confidence == "high"
    assert run("capital expenditures 2022", differ).confidence == "medium"


def test_grade_low_for_contested_or_weak():
    assert run("capital expenditures 2022", [passage(status="contested")]).confidence == "low"
    weak = run("capital expenditures of the zeppelin airship fleet hangar", [passage()])
    assert weak.claims and weak.confidence == "low"


def test_row_matched_through_a_synonym_phrase():
    text = "Cash flows\n(Millions) 2022 2021\nPurchases of property, plant and equipment (812) (790)\n"
    ps = [passage(text, page_map=[(0, 9)])]
    out = run("What was the capex in 2022?", ps)
    check_citations(out, ps)
    assert [c.text for c in out.claims] == ["Purchases of property, plant and equipment (812) (790)"]
    assert out.answer.startswith("Purchases of property, plant and equipment, 2022: (812) (Millions) [")
    assert out.gaps == []


def test_wire_model_names_meta_with_underscore():
    from jsonl_engine.models.synthesize import SynthesizeResult, SynthMeta

    schema = SynthesizeResult.model_json_schema(by_alias=True, mode="serialization")
    assert "_meta" in schema["properties"] and "_meta" in schema["required"] and "meta" not in schema["properties"]
    meta = SynthMeta(synthesis_confidence="none", passages=0, salient_terms=[], truncated=False)
    dumped = SynthesizeResult(answer="", claims=[], gaps=[], meta=meta).model_dump(mode="json", by_alias=True)
    assert list(dumped) == ["answer", "claims", "gaps", "_meta"]


def test_a_short_answer_takes_at_most_two_claims_of_one_section_while_others_have_some():
    many = ("Capital\nCapital expenditures were $1,749 million in 2022. Capital expenditures were $1,603 million in "
            "2021. Capital expenditures were $1,501 million in 2020. Capital expenditures rose in 2022.")
    other = "Outlook\nCapital expenditures are expected to be about $1,800 million in 2023."
    ps = [passage(many, sid="d1:0.1", page_map=[(0, 40)]), passage(other, sid="d1:0.2", page_map=[(0, 41)])]
    out = compose("capital expenditures", answer_terms("capital expenditures"), ps, max_chars=4000, max_claims=3)
    check_citations(out, ps)
    assert [c.section_id for c in out.claims].count("d1:0.1") == 2 and "d1:0.2" in [c.section_id for c in out.claims]
    alone = compose("capital expenditures", answer_terms("capital expenditures"), ps[:1], max_chars=4000,
                    max_claims=3)
    assert len(alone.claims) == 3  # no other section: the same one fills the answer


def test_a_label_line_over_its_value_is_one_statement_and_contents_lines_are_not_rows_to_quote():
    text = ("Contents\n3.2.1 Primary Endpoint 13\nPrimary outcome measure: ........ 17\n\nPrimary Endpoint:\n"
            "Change in HbA1c from baseline to week 26.\nSecondary endpoints are listed below.\n")
    kinds = [(s.kind, text[s.start:s.end]) for s in segment(text)]
    assert ("sentence", "Primary Endpoint:\nChange in HbA1c from baseline to week 26.") in kinds
    ps = [passage(text, page_map=[(0, 3)])]
    out = run("What is the primary endpoint?", ps)
    check_citations(out, ps)
    assert out.claims[0].text == "Primary Endpoint:\nChange in HbA1c from baseline to week 26."
    assert all("13" not in c.text and "17" not in c.text for c in out.claims)
