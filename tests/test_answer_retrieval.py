"""The passage that answers is among what kb.synthesize reads, on whole real filings: a question naming a quarter
reads an annual report's quarterly table, a question about a company's main customers reads the share of revenues
they make, and a statement's rows naming the asked item are not crowded out of the claim pool by other rows."""

from __future__ import annotations

import pytest

from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.tables import cells_of
from jsonl_engine.retrieval import retrieve
from jsonl_engine.retrieval.query import parse
from jsonl_engine.store import Store
from tests.test_answer_pool import answer
from tests.test_answer_rules import MORE, filing_kb, needs_more

QUARTERS = "JOHNSON_JOHNSON_2018_10K"  # "19. Selected Quarterly Financial Data (unaudited)", p. 86
CUSTOMERS = "JOHNSON_JOHNSON_2016_10K"  # "two wholesalers ... represented approximately 13.5% and 10.7% of ..."
DEBT = "GENERALMILLS_2017_10K"  # a balance sheet and a capital resources table printing "... debt" rows
SALES = "JOHNSON_JOHNSON_2019_10K"  # an income statement whose revenue line is "Sales to customers"
WRAPPED = "COCACOLA_2016_10K"  # "Net income attributable to shareowners of" over "The Coca-Cola Company 1,483 ..."
COUNTS = "NIKE_2016_10K"  # "U.S. Retail Stores Number" over "NIKE Brand factory stores 196", ...
CASH = "FOOTLOCKER_2023Q3_10Q"  # a balance sheet split in two sections, "ASSETS" and "LIABILITIES AND ..."


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    store = filing_kb(tmp_path_factory.mktemp("retrieval_answers"), QUARTERS, CUSTOMERS, DEBT, SALES, CASH, WRAPPED,
                      COUNTS)
    yield store
    store.close()


def passages(store: Store, doc: str, query: str, limit: int = 5):
    return retrieve(store, query, document_ids=[store.doc_ids[doc]], limit=limit).passages  # type: ignore[attr-defined]


def test_a_quarter_adds_the_quarterly_table_phrases_and_a_year_does_not():
    for query in ("What were the sales in Q3 2018?", "What was the net loss in the fourth quarter of 2017?"):
        assert ("quarterly", "financial", "data") in parse(query).phrases, query
    assert ("quarterly", "financial", "data") not in parse("What were the sales in FY2018?").phrases
    # "quarterly results" is no table's title but a 10-Q's prose ("As we report quarterly results ...")
    assert ("quarterly", "results") not in parse("What were the sales in Q3 2018?").phrases


@needs_more
def test_a_quarter_of_an_annual_report_is_read_in_its_quarterly_table(kb: Store):
    # the MD&A discusses the segment's sales for the year on many pages; the quarter's figure is in the quarterly
    # table only ("Pharmaceutical 9,844 10,354 10,346 10,190 ..." under "Third Quarter"): it was passage 21
    query = "What were Johnson & Johnson's Pharmaceutical segment sales in Q3 2018?"
    found = passages(kb, QUARTERS, query)
    assert any("Selected Quarterly Financial Data" in p.title for p in found), [p.title for p in found]
    out = answer(kb, QUARTERS, query)
    assert any(c.text.startswith("Pharmaceutical 9,844 10,354 10,346") for c in out.claims), out.answer
    # its rows are read with the line titling them, right under the column titles; the total closes them
    page = kb.page(kb.doc_ids[QUARTERS], 86).text  # type: ignore[attr-defined]
    group = {label.text: s.group and page[s.group[0]:s.group[1]] for s in segment(page) if s.kind == "row"
             and (label := cells_of(page, s.start, s.end)[0]) is not None}
    assert group["Pharmaceutical"] == group["Total sales"] == "Segment sales to customers", group
    assert group["Gross profit"] is None
    # "which quarter": the quarterly table holds the loss ("Net earnings (loss) ... (10,713)"), it was passage 32
    out = answer(kb, QUARTERS, "In which quarter of 2017 did Johnson & Johnson post a net loss, and how large was it?")
    assert "(10,713)" in out.answer and out.claims[0].page == 86, out.answer


@needs_more
def test_primary_customers_are_read_as_a_share_of_revenues(kb: Store):
    # the filing never says "customers" there: "two wholesalers ... represented approximately 13.5% and 10.7% of the
    # total consolidated revenues" (it was in no passage of the first 40)
    query = "Who are the primary customers of Johnson & Johnson as of FY2016?"
    assert any("wholesalers" in p.text for p in passages(kb, CUSTOMERS, query))
    out = answer(kb, CUSTOMERS, query)
    assert "13.5%" in out.claims[0].text and "wholesaler" in out.claims[0].text, out.answer
    # the concentration phrases are for the company's main customers, not for any question about customers
    assert ("of", "total", "revenues") not in parse("How many customers did the company add in 2016?").phrases


@needs_more
def test_rows_naming_the_asked_item_are_not_crowded_out_of_the_claim_pool(kb: Store):
    # the balance sheet's passage has more rows about debt than a passage may give (PER_PASSAGE): "Current portion of
    # long-term debt", "Notes payable", "Long-term debt"; and "Total assets" (an expansion of "debt"); rows whose
    # label names the item asked ("Total debt", "Long-term debt") are candidates beyond that count
    out = answer(kb, DEBT, "Has General Mills increased its debt on balance sheet between FY2016 and FY2017?")
    assert any(c.text.startswith(("Total debt 9,481.7", "Long-term debt 7,642.9")) for c in out.claims), out.answer
    # the quarterly table: a heading sentence, the sale of a subsidiary and "... to General Mills" rows share the
    # question's words; the gross margin row names the item asked and leads
    out = answer(kb, DEBT, "What was General Mills' gross margin percentage in the third quarter of fiscal 2017? Use "
                           "the quarterly data and round to one decimal place.")
    assert out.claims[0].text.startswith("Gross margin 1,416.9 1,554.6 1,519.5 1,540.6 1,307.7"), out.answer



@needs_more
def test_sales_to_customers_is_a_revenue_line(kb: Store):
    # the income statement prints "Sales to customers $ 82,059 81,581 76,450"; the question says "total revenue"
    out = answer(kb, SALES, "What is Johnson & Johnson's FY2019 total revenue (in USD millions)? Rely on the income "
                            "statement.")
    assert out.claims[0].text.startswith("Sales to customers $ 82,059"), out.answer


@needs_more
def test_cash_and_cash_equivalents_is_read_on_the_balance_sheet(kb: Store):
    # the balance sheet's "ASSETS" section was passage 27: the question's dates and words match MD&A prose better;
    # "cash and cash equivalents" is a balance sheet line (retrieval/cues.py), so the statement's page is lifted
    # and its other sections join the answer's passages
    out = answer(kb, CASH, "How much cash and cash equivalents did Foot Locker hold at the end of its third quarter "
                           "(October 29, 2022), compared with January 29, 2022?")
    assert out.claims[0].text == "Cash and cash equivalents $ 351 $ 1,339 $ 804", out.answer


@needs_more
def test_a_row_label_wrapped_over_two_lines_is_one_row(kb: Store):
    # the quarterly table wraps a label: its first line has no figure and ends with "of"; the row read alone was
    # "The Coca-Cola Company 1,483 3,448 ...", which names nothing the question asks
    doc = kb.doc_ids[WRAPPED]  # type: ignore[attr-defined]
    page = kb.page(doc, 146).text
    rows = [" ".join(page[s.start:s.end].split()) for s in segment(page) if s.kind == "row"]
    assert "Net income attributable to shareowners of The Coca-Cola Company 1,483 3,448 1,046 550 6,527" in rows
    assert not any(r.startswith("The Coca-Cola Company") for r in rows)
    assert "Gross profit 6,213 7,068 6,502 5,615 25,398" in rows  # a line ending in a figure starts no label
    out = answer(kb, WRAPPED, "What net income attributable to shareowners did Coca-Cola report for the second "
                              "quarter of 2016, and what one-off gain lifted it?")
    assert any(" ".join(c.text.split()).startswith("Net income attributable to shareowners of The Coca-Cola Company "
                                                   "1,483 3,448") for c in out.claims), out.answer



def test_the_rows_beyond_a_passages_share_name_the_item_not_a_verb():
    # "did the company earn": a lone verb is no item ("Earnings per share attributable to ..." rows once joined the
    # pool as rows naming "earn"); nor is the issuer's name ("General Mills" is the longest run of its question)
    from jsonl_engine.answer.synthesize import _terms, keys, main_item_runs
    from jsonl_engine.retrieval import answer_terms, cues
    from jsonl_engine.retrieval.query import tokenize

    def runs(query: str, title: str) -> list[str]:  # as compose() reads them: the statement's name left out
        rest = cues.named_statement(tokenize(query))[1]
        return main_item_runs(rest, _terms(query, answer_terms(query)), keys(title))

    assert runs("How much net income attributable to 3M did the company earn in the third quarter of 2017?",
                "3M Company, 10-K, fiscal year 2017") == [" net incom attributabl "]
    assert runs("Has General Mills increased its debt on balance sheet between FY2016 and FY2017?",
                "General Mills, Inc., 10-K, fiscal year 2017") == [" debt "]


@needs_more
def test_a_count_among_a_tables_rows_is_a_row_not_a_page_header(kb: Store):
    # "NIKE Brand factory stores 196" reads like a running header with its page number (a title, one number of up
    # to three digits); over another row it is the table's first row
    doc = kb.doc_ids[COUNTS]  # type: ignore[attr-defined]
    page = kb.page(doc, 4).text
    kinds = {" ".join(page[s.start:s.end].split()): s.kind for s in segment(page)}
    assert kinds["NIKE Brand factory stores 196"] == "row"
    assert kinds["NIKE Brand in-line stores, including employee-only stores 34"] == "row"
    assert kinds["U.S. Retail Stores Number"] == "heading"
    out = answer(kb, COUNTS, "How many retail stores did Nike's Direct to Consumer operations run in the United States "
                             "in fiscal 2016, and how many of them were NIKE Brand factory stores?")
    assert any(c.text == "NIKE Brand factory stores 196" for c in out.claims), out.answer
