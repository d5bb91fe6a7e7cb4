"""kb.synthesize on statement line items, on real filings: the row whose label names the asked item (in the
question's words or a label statements print for it) leads; the statement the question names is where it is read
(its words are not the item); of rows labelled alike the consolidated total leads; a change question shows the
change column; a superlative question names the row with the extreme value; a column-title line is no claim."""

from __future__ import annotations

import re

from jsonl_engine.answer import extreme
from jsonl_engine.answer.direct import answer_first as synthesize
from jsonl_engine.answer.order import asks_change
from jsonl_engine.answer.synthesize import _column_header, _ending_items, keys
from jsonl_engine.answer.tables import read_row
from jsonl_engine.ingest.normalize import collapse_ws
from jsonl_engine.ingest.sync import ingest_paths, ingest_text
from jsonl_engine.retrieval.cues import named_statement
from jsonl_engine.retrieval.query import tokenize
from jsonl_engine.store import Store, open_store
from tests.support.answer_lines import check_lines


def first_line(store: Store, doc: str, query: str) -> tuple[str, object]:
    out = synthesize(store, query, document_ids=[store.doc_ids[doc]])  # type: ignore[attr-defined]
    check_lines(out, lambda sid: store.section(sid).text, lambda d, page: store.page(d, page).text)
    lines = [line for line in out.answer.split("\n") if not line.startswith("Not in the documents searched")]
    return lines[0], out


def test_a_row_labelled_as_statements_print_the_asked_item_leads(dev_kb: Store):
    line, out = first_line(dev_kb, "3M_2022_10K", "What is 3M's FY2022 total revenue (in USD millions)? Base your "
                           "judgments on the information provided primarily in the income statement.")
    assert line.startswith("Net sales, 2022: $ 34,229 ")  # revenue, as the income statement prints it
    assert "its label names the asked line item" in out.first_claim["why"]
    line, _ = first_line(dev_kb, "AMCOR_2023_10K", "What is Amcor's FY2023 capital expenditure (in USD millions)? "
                         "Use the cash flow statement.")
    assert line.startswith("Purchase of property, plant, and equipment, and other intangible assets")


def test_the_named_statement_is_where_to_read_not_the_item_asked(dev_kb: Store):
    # "balance sheet" once matched a "Total assets" row through retrieval's vocabulary
    line, out = first_line(dev_kb, "3M_2022_10K", "What is 3M's year end FY2022 total current assets (in USD "
                           "millions)? Base your judgments on the information provided primarily in the balance sheet.")
    assert line.startswith("Total current assets, 2022: 14,688 ")
    assert "on the balance sheet the question names" in out.first_claim["why"]
    line, _ = first_line(dev_kb, "PEPSICO_2022_10K", "What is PepsiCo's year end FY2022 inventories (in USD "
                         "millions)? Base your judgments on the information provided primarily in the balance sheet.")
    assert line.startswith("Inventories, 2022: 5,222 ")
    # the statement's title is one section, its rows others: they join the passage that reaches the page
    line, out = first_line(dev_kb, "3M_2022_10K", "What is 3M's FY2022 net PP&E (in USD millions)? Use the balance "
                           "sheet.")
    assert line.startswith("Property, plant and equipment — net, 2022: 9,178 ")
    assert out.not_in_kb == []  # "PP&E" is spelled out on the pages, not a name the KB lacks


def test_of_rows_labelled_alike_the_consolidated_total_leads(dev_kb: Store):
    line, out = first_line(dev_kb, "AMCOR_2023_10K", "What is the FY2023 total current liabilities (in USD millions) "
                           "for Amcor? Give a response to the question by relying on the details shown in the "
                           "balance sheet.")
    assert line.startswith("Total current liabilities, June 30, 2023: 4,476 ")  # not a guarantor group's 1,145
    # the guarantor groups' rows are its parts (how many are alike depends on which labels open with "Total")
    assert re.search(r"the largest of [2-9] rows labelled alike", out.first_claim["why"])


def test_a_change_question_shows_the_change_column_the_table_prints(dev_kb: Store):
    line, _ = first_line(dev_kb, "3M_2022_10K", "What drove operating margin change as of FY2022 for 3M? If "
                         "operating margin is not a useful metric for a company like this, then please state that "
                         "and explain why.")
    assert line.split(" [")[0] == \
        "Operating income margin, 2022: 19.1 %; 2021: 20.8 %; Change: (1.7)% (Percent of net sales)"  # the two compared
    assert asks_change("Was there any drop in cash?") and asks_change("How much did X change?")
    assert not asks_change("What is the FY2018 capital expenditure?")


def test_a_superlative_names_the_row_with_the_extreme_value(dev_kb: Store):
    # "the largest current liability": the lead is the total, the rows compared are those it sums
    line, out = first_line(dev_kb, "3M_2022_10K", "What was the largest current liability on 3M's balance sheet in "
                           "2022?")
    assert line.startswith("Largest of 6 (2022): Other current liabilities: 3,190 ")
    assert out.first_claim["why"] == "the largest of 6 rows of its table in column 2022"
    line, _ = first_line(dev_kb, "PEPSICO_2022_10K", "What was the largest current liability on PepsiCo's balance "
                         "sheet in 2022?")
    assert line.startswith("Largest of 2 (2022): Accounts payable and other current liabilities: 23,371 ")
    line, _ = first_line(dev_kb, "3M_2022_10K", "Which one had the largest operating income in 2022?")
    assert not line.startswith("Largest")  # the lead row is the line item asked, not a member of a comparison


def test_superlative_rows_compared():
    page = ("(Millions) 2022 2021\nSafety and Industrial $ 2,197 $ 2,373\nTransportation 1,050 1,274\n"
            "Health Care 1,750 1,871\nTotal $ 4,997 $ 5,518\n")
    rows = []
    for line in page.split("\n")[1:-1]:
        start = page.index(line)
        rows.append(read_row(page, start, start + len(line)))
    high = extreme.pick(extreme.asked("Which segment had the highest operating income?"), rows[1], 0, rows,
                        collapse_ws)
    assert high is not None and high.line == "Highest of 3 (2022): Safety and Industrial: $ 2,197 (Millions)"
    low = extreme.pick(extreme.asked("Which segment had the lowest operating income in 2021?"), rows[0], 1, rows,
                       collapse_ws)
    assert low is not None and low.line.startswith("Lowest of 3 (2021): Transportation: 1,274")  # "Total" is no member
    assert extreme.asked("What was the highest price?") is not None and extreme.asked("What was revenue?") is None


def test_the_statement_a_question_names():
    kind, rest = named_statement(tokenize("What is the FY2018 capex? Rely on the details shown in the cash flow "
                                          "statement."))
    assert kind == "cash_flow" and "cash" not in rest and "capex" in rest
    assert named_statement(tokenize("Answer from the statement of financial position."))[0] == "balance"
    assert named_statement(tokenize("What was the net income in the P&L?"))[0] == "income"
    assert named_statement(tokenize("What was free cash flow?"))[0] is None


def test_a_line_of_column_titles_is_no_claim():
    assert _column_header("April 30, January 31, April 30,")
    assert _column_header("October 29, October 30, January 29, ($ in millions, except share amounts) 2022 2021 2022*")
    assert not _column_header("Inventories 56,932 56,576 61,229")
    assert not _column_header("As of April 30, 2023, we operated 10,500 stores.")


BENEFITS = """Employee Benefits

With approximately 118,000 employees and approximately 187,000 retirees eligible to participate in our benefit \
plans in 2024, the costs of pension and retiree benefits are significant.

The benefit payments to retirees are expected to be paid as follows:
(dollars in millions)
Year Pension Benefits Health Care and Life
2023 $ 1,905 $ 863
2024 1,097 862
2025 1,032 860
"""


def test_a_row_labelled_by_the_asked_period_is_judged_by_its_tables_lead_in(tmp_path):
    store = open_store(tmp_path / "kb")
    try:
        ingest_text(store, BENEFITS, "Benefits", media_type="text/markdown", status="approved")
        out = synthesize(store, "How much does the company expect to pay for its retirees in 2024?")
        check_lines(out, lambda sid: store.section(sid).text, lambda d, page: store.page(d, page).text)
        assert out.claims[0].text == "2024 1,097 862"  # not the sentence that merely names 2024 and retirees
        assert "its table's lead-in holds" in out.first_claim["why"]
    finally:
        store.close()


def test_the_line_items_a_question_names_as_a_whole():
    def named(query: str) -> set[tuple[str, ...]]:
        tokens = tokenize(query)
        return _ending_items(tokens, {k for t in tokens for k in keys(t)})

    assert named("What is the FY2022 cost of sales?") == {("cost", "of", "sales")}  # not "sales": revenue
    assert ("operating", "income") not in named("How did the operating income margin change?")
    assert named("What was Boeing's capital expenditure amount?") == {("capital", "expenditure")}



def test_a_superlative_compares_the_members_below_a_line_item_naming_the_measure(dev_pdfs, tmp_path):
    # a 10-K's derivatives note: the first table rows name the asked measure ("Notional value settled 13,077"),
    # they are no members; the table the sentence "the notional amounts of our outstanding derivative
    # instruments:" leads into is compared
    store = open_store(tmp_path / "kb")
    try:
        (outcome,) = ingest_paths(store, [str(dev_pdfs / "VERIZON_2021_10K.pdf")])
        out = synthesize(store, "Among all of the derivative instruments that Verizon used to manage the exposure to "
                                "fluctuations of foreign currencies exchange rates or interest rates, which one had "
                                "the highest notional value in FY 2021?", document_ids=[outcome.document_id])
        check_lines(out, lambda sid: store.section(sid).text, lambda d, page: store.page(d, page).text)
        assert out.answer.startswith("Highest of 4 (December 31, 2021): Cross currency swaps: 32,502 ")
        assert out.first_claim["why"] == "the highest of 4 rows of its table in column December 31, 2021"
    finally:
        store.close()


def test_a_capitalised_superlative_inside_a_question_is_a_name():
    assert extreme.asked("What was Best Buy's diluted EPS in FY2020?") is None
    assert extreme.asked("Best performing segment: which one?") is not None
    assert extreme.asked("Which Best Buy category performed the best?") .word == "best"
