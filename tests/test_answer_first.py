"""kb.synthesize answers first: computed answers with cited inputs, what the KB does not hold said first, labelled
statements as claims, short answers with `more`, and the wire (claim.table with boxes, _meta)."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from jsonl_engine.answer.absent import NOTICE
from jsonl_engine.answer.compute import formula
from jsonl_engine.answer.direct import answer_first as synthesize
from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.store import Store, open_store
from tests.support.answer_lines import check_lines
from tests.support.client import engine
from tests.support.shared import MORE


def lines_ok(store: Store, out) -> list[str]:
    return check_lines(out, lambda sid: store.section(sid).text, lambda doc, page: store.page(doc, page).text)


def test_computed_answer_cites_its_inputs_and_writes_the_arithmetic(dev_kb: Store):
    doc = dev_kb.doc_ids["3M_2022_10K"]
    out = synthesize(dev_kb, "What is 3M's FY2022 net working capital? Define net working capital as total current "
                             "assets less total current liabilities.", document_ids=[doc])
    lines_ok(dev_kb, out)
    head, first, second = out.answer.split("\n")[:3]
    assert head == (f"Computed (net working capital, 2022): 14,688 − 9,523 = 5,165 "
                    f"[{out.claims[0].id}][{out.claims[1].id}]")
    assert first.startswith("Total current assets, 2022: 14,688 ") and second.startswith("Total current liabilities, 2022: 9,523 ")
    assert out.computed["value"] == 5165 and out.computed["inputs"] == [out.claims[0].id, out.claims[1].id]


def test_a_payment_printed_in_parentheses_counts_by_its_size(dev_kb: Store):
    """Capital spending is printed "(5,207)" on the cash flow statement, an outflow: "EBITDA less capex" takes 5,207;
    D&A is read where the note after it says ("[from cash flow statement]")."""
    doc = dev_kb.doc_ids["PEPSICO_2022_10K"]
    out = synthesize(dev_kb, "What is the FY2022 unadjusted EBITDA less capex for PepsiCo? Define unadjusted EBITDA "
                             "as unadjusted operating income + depreciation and amortization [from cash flow "
                             "statement]. Answer in USD millions.", document_ids=[doc])
    lines_ok(dev_kb, out)
    assert out.answer.startswith("Computed (unadjusted EBITDA less capex, 2022): 11,512 + 2,763 − 5,207 = 9,068 ")
    assert out.computed["value"] == 9068 and len(out.computed["inputs"]) == 3
    assert out.answer.split("\n")[3].startswith("Capital spending, 2022: (5,207)")


def test_computed_answer_absent_with_a_gap_rather_than_a_guessed_sign(dev_kb: Store):
    """A negative figure that is no payment the operand names (cash used for investing) is not given a sign."""
    doc = dev_kb.doc_ids["PEPSICO_2022_10K"]
    out = synthesize(dev_kb, "What is the FY2022 operating profit + net cash used for investing activities for "
                             "PepsiCo?", document_ids=[doc])
    lines_ok(dev_kb, out)
    assert out.computed["value"] is None and not out.answer.startswith("Computed")
    assert any(g.startswith("computed: net cash used for investing activities (2022) is negative") for g in out.gaps)


def test_a_metric_named_without_its_definition(dev_kb: Store):
    """EBITDA margin, never defined in the question, is computed by the formula analysts agree on, from the rows of
    the statements the question names."""
    doc = dev_kb.doc_ids["PEPSICO_2022_10K"]
    out = synthesize(dev_kb, "What is the FY2022 unadjusted EBITDA % margin for PepsiCo? Calculate unadjusted EBITDA "
                             "using unadjusted operating income and D&A (from cash flow statement). Give a response "
                             "by relying on the details shown in the statement of cash flows and the P&L statement.",
                     document_ids=[doc])
    lines_ok(dev_kb, out)
    assert out.answer.startswith("Computed (unadjusted EBITDA % margin, 2022): (11,512 + 2,763) / 86,392 = ")
    assert out.answer.split(" [")[0].endswith("≈ 16.52%")
    # a metric whose definitions differ is not guessed
    assert formula("What is the FY2022 quick ratio for Acme?", "2022") is None
    assert formula("What is the FY2022 capital intensity for Acme?", "2022") is None


def test_an_average_over_a_span_of_years_is_the_mean_of_each_years_value(dev_kb: Store):
    doc = dev_kb.doc_ids["3M_2022_10K"]
    out = synthesize(dev_kb, "What is the FY2020 - FY2022 3 year average of capex as a % of revenue for 3M? Answer in "
                             "units of percents and round to one decimal place.", document_ids=[doc])
    lines_ok(dev_kb, out)
    head = out.answer.split("\n")[0]
    assert head.startswith("Computed (FY2020 - FY2022 3 year average of capex as a % of revenue")
    assert "((1,501 / 32,184) + (1,603 / 35,355) + (1,749 / 34,229)) / 3 = " in head and "≈ 4.8% [" in head
    assert abs(out.computed["value"] - 4.7692) < 0.001


def test_formulas_read_from_the_question():
    _, tree = formula("What is the FY2019 ratio? Ratio is defined as: FY2019 revenue / (average PP&E between FY2018 "
                      "and FY2019).", "2019")
    assert tree[0] == "/" and tree[1][0] == "value" and tree[2][0] == "average"
    assert (tree[1][1].year, tree[2][1].year, tree[2][2].year) == ("2019", "2018", "2019")
    _, tree = formula("What is the FY2022 EBITDA less capex? Define EBITDA as operating income + depreciation.", "2022")
    assert tree[0] == "-" and tree[1][0] == "+"  # the definition substituted into what is asked
    _, tree = formula("What is DPO? DPO is defined as: 365 * (average payables between FY2017 and FY2018) / "
                      "(FY2018 COGS + change in inventory between FY2017 and FY2018).", "2018")
    assert tree[0] == "/" and tree[1][0] == "*" and tree[1][1] == ("const", Decimal(365), "365")
    assert tree[2][2][0] == "change"
    assert formula("What was the FY2022 capital expenditure?", "2022") is None
    # the asked name may be a gloss: "return on assets (ROA)" with "ROA is defined as ..."
    name, tree = formula("What is the FY2017 return on assets (ROA) for Acme? ROA is defined as: FY2017 net income / "
                         "(average total assets between FY2016 and FY2017).", "2017")
    assert name == "ROA" and tree[0] == "/"
    # a formula in parentheses after the name, an appositive definition, a span of years' mean, "as a % of"
    name, tree = formula("What is Acme's FY2021 interest coverage ratio (operating income / interest expense)?", "2021")
    assert name == "interest coverage ratio" and tree[0] == "/" and tree[2][1].phrase == "interest expense"
    name, tree = formula("What was Acme's FY2015 free cash flow, defined as net cash provided by operating activities "
                         "less purchases of property, plant and equipment?", "2015")
    assert name == "free cash flow" and tree[0] == "-"
    name, tree = formula("What is the FY2017 - FY2019 3 year average of capex as a % of revenue for Acme?", "2019")
    assert tree[0] == "mean" and [t[1][1].year for t in tree[1]] == ["2017", "2018", "2019"]
    assert all(t[0] == "/" for t in tree[1])
    _, tree = formula("What is Acme's FY2022 capital expenditure (purchases of property and equipment) as a % of total "
                      "revenues?", "2022")
    assert tree[0] == "/" and tree[1][1].phrase == "capital expenditure"


def test_a_name_the_kb_does_not_hold_is_said_first(dev_kb: Store):
    doc = dev_kb.doc_ids["3M_2022_10K"]
    for query, name in (("What was Tesla's revenue in 2022?", "Tesla"), ("What were 3M's net sales in 2077?", "2077")):
        out = synthesize(dev_kb, query, document_ids=[doc])
        assert out.answer.split("\n")[0] == f"{NOTICE}{name}."
        assert out.not_in_kb == [name] and out.confidence == "low"
        lines_ok(dev_kb, out)
    held = synthesize(dev_kb, "What were 3M's net sales in 2022?", document_ids=[doc])
    assert held.not_in_kb == [] and not held.answer.startswith(NOTICE)


REPORT = """Aviation Accident Final Report

Analysis
The pilot reported that during the landing the touchdown was hard and the airplane bounced. The accident
airplane came to rest on the runway. Weather at the time of the accident was clear.

Probable Cause and Findings
Probable cause: The pilot's improper flare during landing.
Contributing factor: Gusting crosswind.

Trial Design
Primary endpoint: Change in HbA1c from baseline to week 26
Secondary endpoint: Body weight change from baseline to week 26
"""


def test_labelled_statements_answer_first(tmp_path):
    store = open_store(tmp_path / "kb")
    try:
        ingest_text(store, REPORT, "Report", media_type="text/markdown", status="approved")
        out = synthesize(store, "What was the probable cause of the accident?")
        lines_ok(store, out)
        assert out.claims[0].text == "Probable cause: The pilot's improper flare during landing."
        assert "labelled statement" in out.first_claim["why"]
        out = synthesize(store, "What is the primary endpoint?")
        assert out.claims[0].text == "Primary endpoint: Change in HbA1c from baseline to week 26"
    finally:
        store.close()


def test_wire_table_cells_boxes_meta_and_max_claims(dev_kb: Store, tmp_path):
    from tests.support.client import daemon_env  # noqa: F401 - the daemon below is a real subprocess

    kb_dir = tmp_path / "kb"
    with engine(kb_dir, timeout=120) as d:
        d.call("kb.ingest", {"paths": [str(p) for p in [_path(dev_kb, "3M_2022_10K")]]})
        doc = d.call("kb.documents", {})["documents"][0]["document_id"]
        out = d.call("kb.synthesize", {"query": "What was the FY2022 capital expenditure of 3M?",
                                       "document_ids": [doc]})
        first = out["claims"][0]
        table = first["table"]
        assert out["answer"].startswith("Purchases of property, plant and equipment (PP&E), 2022: (1,749) (Millions) [")
        asked = [c for c in table["cells"] if c["asked"]]
        assert [(c["text"], c["column"]) for c in asked] == [("(1,749)", "2022")]
        page = d.call("kb.read", {"document_id": doc, "page": asked[0]["page"]})["text"]
        for part in [table["label"], table["unit"], *table["headers"], *table["cells"]]:
            assert page[part["start"]:part["end"]] == part["text"]
            assert part["boxes"] and all(len(b) == 4 for b in part["boxes"])
        assert table["unit"]["text"] == "(Millions)"
        meta = out["_meta"]
        assert meta["first_claim"]["id"] == first["id"] and "asked period" in meta["first_claim"]["why"]
        assert len(out["claims"]) <= 5
        more = d.call("kb.synthesize", {"query": "What was the FY2022 capital expenditure of 3M?",
                                        "document_ids": [doc], "max_claims": 50, "max_chars": 100_000})
        assert len(more["claims"]) == len(out["claims"]) + meta["more"]
        short = d.call("kb.synthesize", {"query": "What was the FY2022 capital expenditure of 3M?",
                                         "document_ids": [doc], "max_chars": 40})
        assert short["answer"] and short["answer"].endswith(f"… [{first['id']}]") and short["_meta"]["truncated"]
        assert re.sub(r" \[c[0-9a-f]{12}\]$", "", short["answer"]).rstrip("…") in out["answer"]


def _path(store: Store, name: str) -> str:
    return next(d.path for d in store.documents() if d.document_id == store.doc_ids[name])


def test_kb_answer_citation_points_at_the_table_cell(dev_kb: Store):
    from jsonl_engine.answer.cells import place_cells
    from jsonl_engine.answer.pages import place_citations
    from jsonl_engine.models.answer import Citation

    doc = dev_kb.doc_ids["3M_2022_10K"]
    row = "Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)"
    section = next(s for s in dev_kb.document_sections(doc) if s.text and row in s.text)
    start = section.text.index(row)
    base = {"section_id": section.section_id, "document_id": doc, "document_title": section.document_title,
            "title": section.title, "page_start": 52, "page_end": 52, "quote": row, "quote_start": start,
            "quote_end": start + len(row), "verified": True}
    citations = [dict(base), {**base, "verified": False, "quote_start": -1, "quote_end": -1}]
    place_citations(dev_kb, citations)
    place_cells(dev_kb, citations, f"3M's capital expenditure was $1,749 million in 2022 [{section.section_id}].")
    cell = citations[0]["cell"]
    assert (cell["text"], cell["column"], cell["page"], cell["unit"]) == ("(1,749)", "2022", 52, "(Millions)")
    assert cell["label"] == "Purchases of property, plant and equipment (PP&E)"
    assert dev_kb.page(doc, 52).text[cell["start"]:cell["end"]] == "(1,749)" and cell["boxes"]
    assert citations[1]["cell"] is None
    Citation.model_validate(citations[0])
    other = [dict(base)]
    place_cells(dev_kb, other, "It rose in 2022.")  # no figure stated: no cell
    assert other[0]["cell"] is None


def test_kb_answer_cell_of_a_cited_page(dev_kb: Store):
    """Strategies citing whole pages name them "<document>:p<N>": the cell is read on that page."""
    from jsonl_engine.answer.cells import place_cells

    doc = dev_kb.doc_ids["3M_2022_10K"]
    text = dev_kb.page(doc, 52).text
    row = "Purchases of property, plant and equipment (PP&E) (1,749) (1,603) (1,501)"
    start = text.index(row)
    citations = [{"section_id": f"{doc}:p52", "document_id": doc, "quote_start": start,
                  "quote_end": start + len(row), "verified": True}]
    place_cells(dev_kb, citations, "Capital expenditure was 1,603 million dollars in 2021.")
    cell = citations[0]["cell"]
    assert (cell["text"], cell["column"], cell["page"]) == ("(1,603)", "2021", 52)
    assert text[cell["start"]:cell["end"]] == "(1,603)"


def library_kind(tmp_path, name: str, query: str):
    """kb.synthesize's answer to `query` on one document of shared/library-kinds (skipped when absent)."""
    import pytest

    from jsonl_engine.ingest.sync import ingest_paths
    from tests.conftest import DEV_DIR

    path = next((p for p in (DEV_DIR.parent / "library-kinds" / "pdfs" / name,
                             Path("/work/shared/library-kinds/pdfs") / name) if p.exists()), None)
    if path is None:
        pytest.skip("library-kinds not present")
    store = open_store(tmp_path / "kb")
    try:
        [outcome] = ingest_paths(store, [str(path)])
        out = synthesize(store, query, document_ids=[outcome.document_id])
        lines_ok(store, out)
        return out
    finally:
        store.close()


def test_an_accident_reports_probable_cause_comes_first(tmp_path):
    """A short titled section ("Probable Cause and Findings" and its one finding) is a passage, and the sentence
    stating the cause leads the answer (a real NTSB report, not a filing)."""
    out = library_kind(tmp_path, "20080109X00035.pdf", "What was the probable cause of the accident?")
    assert out.claims[0].text.endswith("The pilot's failure to maintain directional control during landing.")


def test_label_of_a_statement():
    from jsonl_engine.answer.order import label_of

    assert label_of("Probable cause: The pilot's improper flare during landing.") == "Probable cause"
    assert label_of("Primary endpoint: Change in HbA1c from baseline to week 26") == "Primary endpoint"
    assert label_of("Occupational Pilot: Last Flight Review or Equivalent:") is None  # labels of a form, no value
    assert label_of("The board met twice: in May and in June.") is None  # a sentence, not a label


def test_a_protocols_primary_endpoint_comes_first_not_its_contents_line(tmp_path):
    """A trial protocol (real, not a filing): the label line "Primary Endpoint:" over its value is one claim, and
    the table of contents' "3.2.1 Primary Endpoint 13" is no claim."""
    out = library_kind(tmp_path, "NCT06152900_Prot_SAP_000.pdf", "What is the primary endpoint?")
    assert out.claims[0].text.startswith("Primary Endpoint:\nPhotographic evaluation by an independent")
    assert not any(re.fullmatch(r"[\d.]+ .* \d{1,4}", c.text) for c in out.claims)


TABLE_REPORT = ("# Acme Report 2022\n\n## Cash flows\n\nCash flows from investing activities were as follows.\n\n"
                "(Millions) 2022 2021\nPurchases of property and equipment (812) (790)\nDividends paid (300) (280)\n")


def test_kb_answer_over_the_wire_cites_the_cell_of_the_stated_figure(tmp_path, gateway):
    """The daemon's kb.answer: the reader quotes a table row and states one of its figures; the citation
    carries that cell, its column and the unit (a text document: offsets, no boxes)."""
    from tests.support.answer_script import AnswerScript

    row = "Purchases of property and equipment (812) (790)"
    gateway.responder = AnswerScript(quote=lambda text: row if row in text else None,
                                     answer=lambda ids: f"Acme's capital expenditure was $812 million in 2022 [{ids[0]}].")
    with engine(tmp_path / "kb", env=gateway.env(), timeout=60) as d:
        doc = d.call("kb.ingest", {"text": TABLE_REPORT, "title": "Acme Report 2022",
                                   "media_type": "text/markdown"})["document_id"]
        out = d.call("kb.answer", {"query": "What was Acme's capital expenditure in 2022?", "stream": False,
                                   "max_sections": 1})
        cited = out["citations"][0]
        assert cited["verified"] and cited["quote"] == row
        cell = cited["cell"]
        assert (cell["text"], cell["column"], cell["unit"], cell["label"]) == \
            ("(812)", "2022", "(Millions)", "Purchases of property and equipment")
        page = d.call("kb.read", {"document_id": doc, "page": cell["page"]})["text"]
        assert page[cell["start"]:cell["end"]] == "(812)" and cell["boxes"] is None


def test_a_quarters_metric_is_computed_from_the_quarterly_table(tmp_path: Path):
    """"Operating margin in Q3 of FY2019" in an annual report: the quarterly data's third-quarter column, not the
    year's statements; gross margin from net sales and cost of sales when no gross profit row is printed."""
    import pytest

    from jsonl_engine.ingest.sync import ingest_paths

    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    store = open_store(tmp_path / "kb")
    (outcome,) = ingest_paths(store, [str(MORE / "AMERICANWATERWORKS_2019_10K.pdf")])
    out = synthesize(store, "What was American Water Works' operating margin in Q3 of FY2019? Use the unaudited "
                            "quarterly data, answer in percent rounded to one decimal place.",
                     document_ids=[outcome.document_id])
    lines_ok(store, out)
    head, first, second = out.answer.split("\n")[:3]
    assert head.startswith("Computed (operating margin, Q3, 2019): 406 / 1,013 = ") and "≈ 40.1% [" in head
    assert first == f"Operating income, Third Quarter, 2019: 406 [{out.claims[0].id}]"
    assert second.startswith("Operating revenues, Third Quarter, 2019: $ 1,013")
    # the formula read from the question, the quarter's words left out of the metric's name
    name, tree = formula("What was Acme's gross margin in the third quarter of 2017? Compute it from net sales and "
                         "cost of sales.", "2017")
    assert name == "gross margin" and tree[0] == "alts" and tree[1][1][1][0] == "-"
    store.close()


def test_a_payout_ratio_reads_the_dividends_paid_not_a_per_share_row(dev_kb: Store):
    """"Dividends" of a ratio to net income is the amount paid (the cash flow statement's "Cash dividends paid",
    a payment counted by its size), never a per-share row ("Cash dividends declared per common share")."""
    doc = dev_kb.doc_ids["PEPSICO_2022_10K"]
    out = synthesize(dev_kb, "What is the FY2022 dividend payout ratio for PepsiCo? Use the cash flow statement and the "
                             "income statement.", document_ids=[doc])
    lines_ok(dev_kb, out)
    head, first, second = out.answer.split("\n")[:3]
    assert head.startswith("Computed (dividend payout ratio, 2022): 6,172 / 8,978 = 0.687458 ≈ 0.69 ")
    assert first.startswith("Cash dividends paid, 2022: (6,172)") and second.startswith("Net income, 2022: 8,978")


def test_among_the_candidates_a_question_names_the_extreme_leads(dev_kb: Store):
    """"Among operations, investing, and financing activities, which brought in the most ...": the rows naming those
    candidates, on the cash flow statement's page across its sections (or a table of the three), are compared; a row
    naming another thing ("Maturities of short-term investments") is none of them."""
    from jsonl_engine.answer.extreme import asked

    doc = dev_kb.doc_ids["3M_2022_10K"]
    query = ("Among operations, investing, and financing activities, which brought in the most (or lost the least) "
             "cash flow for 3M in FY2022?")
    out = synthesize(dev_kb, query, document_ids=[doc])
    lines_ok(dev_kb, out)
    # the row is the statement's, or the MD&A's table of the three categories ("$ 5,591" there), whichever ranks first
    assert re.match(r"Most of 3 \(2022\): Net cash provided by \(used in\) operating activities: (\$ )?5,591 \(Millions\) \[",
                    out.answer.split("\n")[0]), out.answer
    assert asked(query).among == ("operat", "investing", "financing")
    # a description is no list of candidates
    assert asked("Among all of the derivative instruments that Acme used to manage foreign currencies or interest "
                 "rates, which one had the highest notional value?").among == ()


@pytest.fixture(scope="module")
def filings(tmp_path_factory):
    """A KB of a few annual reports of the FinanceBench filings (shared/financebench-more): name -> document id."""
    from jsonl_engine.ingest.sync import ingest_paths

    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    names = ["NIKE_2017_10K", "GENERALMILLS_2017_10K", "CVSHEALTH_2019_10K", "KRAFTHEINZ_2016_10K",
             "COCACOLA_2016_10K", "LOCKHEEDMARTIN_2016_10K"]
    store = open_store(tmp_path_factory.mktemp("filings") / "kb")
    outcomes = ingest_paths(store, [str(MORE / f"{n}.pdf") for n in names])
    store.doc_ids = {n: o.document_id for n, o in zip(names, outcomes, strict=True)}  # type: ignore[attr-defined]
    yield store
    store.close()


def _first(store: Store, name: str, query: str) -> str:
    out = synthesize(store, query, document_ids=[store.doc_ids[name]])  # type: ignore[attr-defined]
    lines_ok(store, out)
    return out.answer.split("\n")[0]


def test_a_note_under_a_table_and_a_rows_colon_do_not_lead(filings: Store):
    """A note under a table's rows ("(1) Total revenues of the ... segment include approximately $11.5 billion
    ...") qualifies the table's figures: it weighs less than the rows. An item of a filing's list ("(b) On April 24,
    2023, ...") is no note. A row whose label ends in a colon ("Market price of common stock: High $ 72.64 ...")
    heads its cells; it is no labelled statement ("Probable cause: ...")."""
    from jsonl_engine.answer import order
    from jsonl_engine.answer.sentences import segment
    from jsonl_engine.answer.synthesize import _under_table, _Unit
    from jsonl_engine.ingest import parse_file
    from jsonl_engine.retrieval.types import Passage

    def unit_at(filing: str, starts: str) -> _Unit:
        assert MORE is not None
        text = next(p for p in parse_file(str(MORE / f"{filing}.pdf")).pages if starts in p)
        passage = Passage.for_page("d", 1, document_title=filing, status="approved", path=[], score=1.0, text=text,
                                   snippet="")
        seg = next(s for s in segment(text) if text[s.start:s.end].startswith(starts))
        return _Unit(passage, 0, seg, 0.5, frozenset())

    memo: dict = {}
    assert _under_table(unit_at("CVSHEALTH_2019_10K", "(1) Total revenues of the Pharmacy Services"), memo)
    assert not _under_table(unit_at("BESTBUY_2023_8K_dated-2023-04-24", "(b) On April 24, 2023"), memo)
    ask = order.Ask(figure=True, years=("2019",))
    kw = dict(score=0.5, has_figure=True, table=None, label_share=0.0, labelled_hit=False)
    note = order.judge(ask, "(1) Total revenues include ...", note=True, **kw)
    assert "a note on a table's figures" in note.reasons
    assert round(order.judge(ask, "(1) Total revenues include ...", **kw).directness - note.directness, 9) == order.W_NOTE
    assert order.is_note("(a) Includes ...") and not order.is_note("Total revenues (1) 1,234")
    first = _first(filings, "GENERALMILLS_2017_10K", "Has General Mills paid dividends to common shareholders in Q2 "
                                                     "of FY2017?")
    assert first.startswith("Dividends per share, Second Quarter, Fiscal Year 2017: $ 0.48 ")


def test_which_quarter_reads_every_quarters_column(filings: Store):
    """"In which quarter of 2016 ..." asks among the year's quarters: the quarterly table's row leads, not the
    year's statements, its line naming the quarter of the extreme value a superlative asks; a quarter named ("the second quarter of 2016") reads its column of
    a quarterly table whose header is printed a word a line ("First" / "Quarter" / ... / "Quarter Full Year")."""
    from jsonl_engine.answer.order import asks_which_quarter

    first = _first(filings, "KRAFTHEINZ_2016_10K", "In which quarter of 2016 did Kraft Heinz record its highest net "
                                                   "sales?")
    assert first.startswith("Highest of 4 quarters: Net sales, Fourth, 2016: $ 6,857 (in millions, except per share "
                            "data) [")
    first = _first(filings, "COCACOLA_2016_10K", "What net income attributable to shareowners did Coca-Cola report "
                                                 "for the second quarter of 2016?")
    assert first.startswith("Net income attributable to shareowners of The Coca-Cola Company, Second, 2016: 3,448 ")
    assert asks_which_quarter("In which quarter of 2017 did Acme post a net loss?")
    assert not asks_which_quarter("What was Acme's revenue in the third quarter of 2017?")


def test_a_sentence_saying_the_asked_superlative_leads(filings: Store):
    """"What is Acme's largest program ...?": no table compares programs, and the sentence saying it in the
    question's words ("The ... program is our largest program, generating 23% of ...") leads over the net sales
    rows; a superlative of another measure ("largest customer") is not it."""
    from jsonl_engine.answer.extreme import asked, says

    query = "What is Lockheed Martin's largest program, and how much of its 2016 net sales did it generate?"
    first = _first(filings, "LOCKHEEDMARTIN_2016_10K", query)
    assert " is our largest program, generating 23% of our total consolidated net sales" in first
    ask = asked(query)
    assert says(ask, "Our largest single programs are ...") and not says(ask, "Our largest customer is the U.S.")


def test_a_year_ending_a_clause_is_no_figure():
    """"Our operating income rate increased in fiscal 2022, primarily driven by ...": the comma after the year ends
    the clause; the sentence states no figure (a figure question leads with one that does). A date's year stays
    ("On April 24, 2023, the Board ..." says when), and so do amounts."""
    from jsonl_engine.answer.synthesize import _has_figure, figures_of

    assert not _has_figure("Our operating income rate increased in fiscal 2022, primarily driven by lower charges.")
    assert figures_of("On April 24, 2023, in accordance with the policy") == {"2023"}
    assert figures_of("net sales of 2,022, up from") == {"2022"} and figures_of("$2022, up") == {"2022"}
    assert figures_of("rose to $1,577, or 5.9%, in 2022, compared") == {"1577", "5.9"}
    # a page's number glued to the sentence after it is no figure either
    assert not _has_figure("28\nThe restructuring charges in fiscal 2022 related to our decision to exit operations.")
    assert _has_figure("We opened 28 stores in fiscal 2022.")


def test_a_rate_asked_leads_with_a_percentage(tmp_path: Path):
    """"What was the wireless retail postpaid churn rate ...?": of the rows labelled "Wireless retail postpaid"
    (connections, accounts, churn), the row of percentages leads; a rate is asked like a share."""
    from jsonl_engine.answer.order import asks_share
    from jsonl_engine.ingest.sync import ingest_paths

    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    assert asks_share("What was Acme's effective tax rate in 2017?") and asks_share("What was the churn rate?")
    assert not asks_share("What was the euro exchange rate used?") and not asks_share("What was revenue in 2019?")
    store = open_store(tmp_path / "kb")
    (outcome,) = ingest_paths(store, [str(MORE / "VERIZON_2019_10K.pdf")])
    out = synthesize(store, "What was the wireless retail postpaid churn rate of Verizon's Consumer segment in 2019?",
                     document_ids=[outcome.document_id])
    lines_ok(store, out)
    assert out.claims[0].text.startswith("Wireless retail postpaid 1.05%")
    store.close()


@pytest.fixture(scope="module")
def novel(tmp_path_factory, dev_pdfs):
    """A KB of filings an analyst's one-figure questions are asked of (shared/financebench-more, one 10-Q of the dev
    split): name -> document id."""
    from jsonl_engine.ingest.sync import ingest_paths

    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    paths = [MORE / f"{n}.pdf" for n in ("JOHNSON_JOHNSON_2018_10K", "LOCKHEEDMARTIN_2018_10K", "BOEING_2020_10K",
                                         "PEPSICO_2018_10K", "BESTBUY_2022_10K")]
    paths.append(dev_pdfs / "JPMORGAN_2023Q2_10Q.pdf")
    store = open_store(tmp_path_factory.mktemp("novel") / "kb")
    outcomes = ingest_paths(store, [str(p) for p in paths])
    store.doc_ids = {p.stem: o.document_id for p, o in zip(paths, outcomes, strict=True)}  # type: ignore[attr-defined]
    yield store
    store.close()


def test_a_run_in_heading_naming_another_item_does_not_lead(novel: Store):
    """"In-Process Research and Development (IPR&D): In 2018, the Company recorded an IPR&D charge of $1.1 billion."
    is a labelled statement whose label holds the question's words and another ("In-Process"): it weighs as a row's
    label would, and the statement's row leads "How much did ... spend on research and development in 2018?"."""
    first = _first(novel, "JOHNSON_JOHNSON_2018_10K", "How much did Johnson & Johnson spend on research and "
                                                      "development in 2018?")
    # a row of the asked item and year leads (the statement's, or the MD&A table's total read with its "2018" /
    # "Amount % of Sales" columns), not the IPR&D statement
    assert first.startswith(("Research and development expense, 2018: 10,775 ",
                             "Total research and development expense, 2018 Amount: $ 10,775;"))


def test_the_segment_a_question_names_leads_over_the_consolidated_row(novel: Store):
    """"What were ...'s Aeronautics net sales?": "Net sales" under the section "Aeronautics" names the segment through
    its heading (half a term), and the statement's "Total net sales", the largest of its rows alike, is no whole the
    question asks for: a row naming the asked item names an asked term it does not."""
    first = _first(novel, "LOCKHEEDMARTIN_2018_10K", "What were Lockheed Martin's Aeronautics net sales in FY2018?")
    assert first.startswith("Net sales, 2018: $ 21,242 ")


def test_a_groups_total_leads_over_its_members(novel: Store):
    """"Property, plant and equipment additions" under "Investing activities:" holds the question's words only through
    the line titling its group (half each); "Net cash used by investing activities" names them itself."""
    first = _first(novel, "BOEING_2020_10K", "How much cash did Boeing use in investing activities in FY2020?")
    assert first.startswith("Net cash used by investing activities, December 31, 2020: (18,366) ")


def test_an_item_joined_by_to_is_named_whole():
    """"additions to content assets" is one item: "Content assets, net" names only the words after "to", and names no
    item; "Additions to content assets" names it."""
    from jsonl_engine.answer.synthesize import _item_runs, _terms, keys, names_item
    from jsonl_engine.retrieval import answer_terms
    from jsonl_engine.retrieval.query import tokenize

    query = "How much did Acme spend on additions to content assets in FY2020?"
    tk = _terms(query, answer_terms(query))
    runs = _item_runs(tokenize(query), {k for t in tk for k in t.keys})
    assert " addition to content asset " in runs
    assert not names_item(keys("Content assets, net"), tk, runs)
    assert names_item(keys("Additions to content assets"), tk, runs)


def _row_units(store: Store, name: str, starts: list[str], year: str, quarter: bool = False):
    """The rows of `name` opening with each of `starts`, as chosen units with their readings (on their page)."""
    from jsonl_engine.answer.order import asked_cells
    from jsonl_engine.answer.sentences import segment
    from jsonl_engine.answer.synthesize import Reading, _Unit
    from jsonl_engine.answer.tables import read_row
    from jsonl_engine.retrieval.types import Passage

    doc = store.doc_ids[name]  # type: ignore[attr-defined]
    units, readings = [], {}
    for start in starts:
        number_ = next(n for n in range(1, 400) if start in store.page(doc, n).text)
        text = store.page(doc, number_).text
        passage = Passage.for_page("d", number_, document_title=name, status="approved", path=[], score=1.0,
                                   text=text, snippet="")
        seg = next(s for s in segment(text) if text[s.start:s.end].startswith(start))
        unit = _Unit(passage, 0, seg, 0.5, frozenset())
        row = read_row(text, seg.start, seg.end)
        units.append(unit)
        readings[id(unit)] = Reading(None, row, asked_cells(row, (year,), quarter=quarter), None)
    return units, readings


def test_per_share_rows_are_no_whole_and_percent_changes_no_rows_of_percentages(novel: Store):
    """Rows alike: the year's "Cash dividends declared per common share" is no whole of the quarters' (a per-share
    amount); "Net income $ 4,092 $ 3,717 10 % ..." (a segment's, its percent changes beside its amounts) and "Net
    income 14,472 8,649 67 ..." (the firm's) are compared by their amounts: the firm's is the whole."""
    from jsonl_engine.answer.synthesize import _largest_alike

    units, readings = _row_units(novel, "PEPSICO_2018_10K", ["Cash dividends declared per common share $ 3.5875",
                                                             "Cash dividends declared per common share $ 0.805"],
                                 "2018")
    assert _largest_alike(units, readings) == {}
    units, readings = _row_units(novel, "JPMORGAN_2023Q2_10Q", ["Net income $ 4,092", "Net income 14,472"], "2023",
                                 quarter=True)
    assert [readings[id(u)].row.cells[i].text for u in units for i in readings[id(u)].asked] == ["$ 4,092", "14,472"]
    assert _largest_alike(units, readings) == {id(units[1]): 2}


def test_a_plan_is_not_what_was_spent(novel: Store):
    """"We announced our plan to repurchase more than $2.5 billion of shares in fiscal 2022" states a plan: "How much
    did ... spend on share repurchases in fiscal 2022?" leads with what was spent."""
    from jsonl_engine.answer.order import asks_forward

    first = _first(novel, "BESTBUY_2022_10K", "How much did Best Buy spend on share repurchases in fiscal 2022?")
    assert first.startswith("During fiscal 2022, we repurchased and retired 32.2 million shares at a cost of $3.5 ")
    assert asks_forward("What production rate changes is Acme forecasting for FY2023?")
    assert not asks_forward("How much did Acme spend on share repurchases in fiscal 2022?")


def test_a_sentence_naming_only_another_period_does_not_lead():
    """"International comparable sales for the fourth quarter of fiscal 2017 was 0.9%." (a real filing's sentence)
    states fiscal 2017's figure: for fiscal 2018 asked it loses W_OTHER_PERIOD, with the reason said. A comparison
    naming the asked year, a lone year after a comparison's word (the sentence's own period unsaid), and a year
    closing in January or February (a retailer's fiscal year) are no other period; fiscal short forms are read."""
    from jsonl_engine.answer import order
    from jsonl_engine.answer.sentences import segment
    from jsonl_engine.ingest import parse_file

    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    text = next(p for p in parse_file(str(MORE / "BESTBUY_2018_10K.pdf")).pages
                if "International comparable sales for the fourth quarter of fiscal 2017" in p)
    body = next(text[s.start:s.end] for s in segment(text)
                if text[s.start:s.end].startswith("International comparable sales for the fourth quarter"))
    kw = dict(score=0.5, has_figure=True, table=None, label_share=0.0, labelled_hit=False)
    asked = order.Ask(figure=True, years=("2018",), quarter=True, which=4)
    other = order.judge(asked, body, **kw)
    assert "names only another period than the asked one" in other.reasons and other.period == 0
    unsaid = order.judge(asked, body.replace("of fiscal 2017", "of the year"), **kw)
    assert round(unsaid.directness - other.directness, 9) == order.W_OTHER_PERIOD
    assert "names the asked period" in order.judge(order.Ask(figure=True, years=("2017",), quarter=True, which=4),
                                                   body, **kw).reasons
    year = order.Ask(figure=True, years=("2018",), ends=("2018-12-31",))
    for sentence, another in [("In fiscal 2017, net sales were $5.0 billion.", True),
                              ("FY17 revenue was $3.1 billion.", True),
                              ("For the year ended December 31, 2017, revenue was $4.2 billion.", True),
                              ("In fiscal 2017, sales were $5.0 billion, up from $4.8 billion in fiscal 2016.", True),
                              ("Net sales rose 4% in 2018 compared with 2017 to $5.2 billion.", False),
                              ("Net sales were $5.2 billion, up 4% from $5.0 billion in fiscal 2017.", False),
                              ("For the year ended February 2, 2019, sales were $4.2 billion.", False),
                              ("We sold 2,017 units for $3.1 million.", False)]:
        assert order._other_period(year, sentence) is another, sentence
    third = order.Ask(figure=True, years=("2018",), quarter=True, which=3)
    judged = order.judge(third, "Net sales in the second quarter of 2018 were $5.1 billion.", **kw)
    assert judged.period == 0 and "names only another period than the asked one" in judged.reasons
    assert order.judge(third, "Net sales in the third quarter of 2018 were $5.1 billion, up from the second quarter.",
                       **kw).period == 1


def test_a_plan_does_not_lead_a_question_asking_how_something_changed(tmp_path: Path, dev_pdfs: Path):
    """"Was there any change in the number of ... stores between Q2 of FY2024 and FY2023?" asks what was, not what
    is planned: "We currently expect to close a total of 20 to 30 ... stores ... in fiscal 2024." does not lead (a
    plan earns no credit for naming the asked period either)."""
    from jsonl_engine.ingest.sync import ingest_paths

    store = open_store(tmp_path / "kb")
    (outcome,) = ingest_paths(store, [str(dev_pdfs / "BESTBUY_2024Q2_10Q.pdf")])
    out = synthesize(store, "Was there any change in the number of Best Buy stores between Q2 of FY2024 and FY2023?",
                     document_ids=[outcome.document_id])
    lines_ok(store, out)
    assert not out.claims[0].text.startswith("We currently expect to close")
    assert out.claims[0].text.startswith("Best Buy 908 ")  # the store count's row: stores at each date
    store.close()
