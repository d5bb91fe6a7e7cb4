"""Table rows whose label is read with the line titling them, and change columns printing "NM", on whole real
filings: the row that holds the asked figure enters kb.synthesize's answer."""

from __future__ import annotations

import pytest

from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.tables import cells_of
from jsonl_engine.store import Store
from tests.test_answer_pool import answer
from tests.test_answer_rules import MORE, filing_kb, needs_more

CLAIMS = "CVSHEALTH_2019_10K"  # "Pharmacy claims processed: (5)" over "Total 2,014.2 1,889.8 ...", p. 68
BANK = "JPMORGAN_2022Q1_10Q"  # "Provision for credit losses 1,463 (4,156) NM", p. 5


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    store = filing_kb(tmp_path_factory.mktemp("groups"), CLAIMS, BANK)
    yield store
    store.close()


def rows(text: str) -> dict[str, object]:
    """Each unit's text (whitespace collapsed) -> its segment."""
    return {" ".join(text[s.start:s.end].split()): s for s in segment(text)}


def test_rows_under_a_line_titling_them_carry_it():
    text = ("Year Ended December 31, 2024 2023\n"
            "In millions 2024 2023\n"
            "Revenues:\n"
            "Products $ 1,200 $ 1,100\n"
            "Services 300 250\n"
            "Total revenues 1,500 1,350\n"
            "Cost of products sold 900 850\n"
            "Units shipped: (2)\n"
            "Total 2,014.2 1,889.8\n"
            "Retail (3) 1,704.0 1,601.4\n"
            "Total units 3,718.2 3,491.2\n"
            "Net income attributable to holders of\n"
            "Acme Corp 120 110\n")
    found = rows(text)
    group = {k: text[s.group[0]:s.group[1]] if s.group else None for k, s in found.items()}
    assert group["Products $ 1,200 $ 1,100"] == group["Total revenues 1,500 1,350"] == "Revenues:"
    assert group["Cost of products sold 900 850"] is None  # the total closed the group
    # a "Total" first row does not close its group; a later one does
    assert group["Total 2,014.2 1,889.8"] == group["Retail (3) 1,704.0 1,601.4"] == "Units shipped: (2)"
    assert group["Total units 3,718.2 3,491.2"] == "Units shipped: (2)"
    assert found["Units shipped: (2)"].kind == "heading"  # its footnote mark is no cell
    # a label wrapped over two lines is one row, not a group line over it
    assert group["Net income attributable to holders of Acme Corp 120 110"] is None
    # a title over a row printing only figures is that row's label, not a group's title; a sentence-case one over a
    # labelled row titles the rows under it
    assert all(s.group is None for s in segment("In millions 2024 2023\nRestructuring charges\n(f) $ (229) $ (66)\n")
               if s.kind == "row")
    assert all(s.group == (22, 40) for s in segment("In millions 2024 2023\nSales to customers\nRetail 5 6\n"
                                                     "Wholesale 7 8\n") if s.kind == "row")
    # a prose sentence ends the group
    assert all(s.group is None for s in segment("Revenues:\nProducts 1 2\nWe sold more.\nServices 3 4\n")
               if s.kind == "row" and s.start > 30)


def test_a_change_not_meaningful_is_an_empty_cell():
    text = "Pre-provision profit 11,526 13,541 (15)\nProvision for credit losses 1,463 (4,156) NM\n"
    found = rows(text)
    row = found["Provision for credit losses 1,463 (4,156) NM"]
    assert row.kind == "row"
    label, cells = cells_of(text, row.start, row.end)
    assert label is not None and label.text == "Provision for credit losses"
    assert [c.text for c in cells] == ["1,463", "(4,156)", "NM"] and [c.empty for c in cells] == [False, False, True]


@needs_more
def test_a_total_row_under_the_line_naming_the_item_answers(kb: Store):
    doc = kb.doc_ids[CLAIMS]  # type: ignore[attr-defined]
    page = kb.page(doc, 68).text
    found = rows(page)
    total = found["Total 2,014.2 1,889.8 1,781.9 124.4 6.6% 107.9 6.1%"]
    assert page[total.group[0]:total.group[1]] == "Pharmacy claims processed: (5)"
    # the row "Total" names nothing the question asks; the line over it does (it was in no answer)
    out = answer(kb, CLAIMS, "How many pharmacy claims did CVS Health's Pharmacy Services segment process in FY2019?")
    assert any(c.text.startswith("Total 2,014.2 1,889.8") for c in out.claims), out.answer
    assert not any(c.text.startswith("Pharmacy claims processed") for c in out.claims), out.answer


@needs_more
def test_a_row_ending_in_nm_is_read_as_a_row(kb: Store):
    # "Provision for credit losses 1,463 (4,156) NM" was a sentence: its last token is no number
    doc = kb.doc_ids[BANK]  # type: ignore[attr-defined]
    assert rows(kb.page(doc, 5).text)["Provision for credit losses 1,463 (4,156) NM"].kind == "row"
    out = answer(kb, BANK, "What was JPMorgan's provision for credit losses in Q1 2022, and how does it compare with "
                           "Q1 2021?")
    assert any("1,463" in c.text and "(4,156)" in c.text for c in out.claims), out.answer
