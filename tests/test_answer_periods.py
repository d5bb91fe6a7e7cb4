"""The asked period and the asked kind of figure in interim and annual filings (issue 24): column groups counted in
words, a lone group line's day dating the years under it, a year naming the document rather than the period, and
a count row when money is asked. Real filings (shared/financebench-more), each rule checked to fail without it."""

from __future__ import annotations

import pytest

from jsonl_engine.answer.order import asked_cells, asked_years, asks_kind
from jsonl_engine.answer.tables import read_row
from jsonl_engine.ingest import parse_file
from tests.support.shared import MORE, filing_row, needs_more


@pytest.fixture(scope="module")
def more_kb(tmp_path_factory):
    """A KB of a quarterly report, an annual report and an earnings release (SQLite, in-process ingest)."""
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    assert MORE is not None
    store = open_store(tmp_path_factory.mktemp("periods_kb"))
    docs = ["JPMORGAN_2022Q1_10Q", "KRAFTHEINZ_2020_10K", "BESTBUY_2023Q4_EARNINGS"]
    outcomes = ingest_paths(store, [str(MORE / f"{d}.pdf") for d in docs])
    store.ids = {d: o.document_id for d, o in zip(docs, outcomes, strict=True)}
    yield store
    store.close()


@needs_more
def test_column_groups_counted_in_words_split_the_quarter_from_the_year_to_date():
    """"Thirteen weeks ended Thirty-nine weeks ended" over two dates each: each column is its group's, so the third
    quarter asked is the thirteen weeks' column alone, not the thirty-nine weeks' of the same year."""
    row = filing_row("FOOTLOCKER_2023Q3_10Q", "Sales by Channel", "Direct-to-customers ")
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("355", "Thirteen weeks ended October 29, 2022"), ("433", "Thirteen weeks ended October 30, 2021"),
        ("1,103", "Thirty-nine weeks ended October 29, 2022"), ("1,424", "Thirty-nine weeks ended October 30, 2021")]
    assert asked_cells(row, ("2022",), quarter=True) == (0,)


@needs_more
def test_a_lone_group_lines_day_dates_the_years_under_it():
    """"Three Months Ended April 30," over "2023 2022": Q1 of fiscal 2024, which ends April 30, 2023 (the card's
    period end), is the 2023 column though the question names 2024."""
    row = filing_row("WALMART_2024Q1_10Q", "Walmart International Segment", "Unit counts at period end ")
    assert [c.column_text for c in row.cells] == ["2023", "2022"]
    assert asked_cells(row, ("2024",), quarter=True, ends=("2023-04-30",)) == (0,)
    assert asked_cells(row, ("2024",), quarter=True, ends=("2022-04-30",)) == (1,)
    assert asked_cells(row, ("2024",), quarter=True, ends=("2023-07-31",)) == ()


def test_a_year_naming_the_document_is_not_the_asked_year():
    ask = "How much does Acme expect to pay in 2022, per its 2020 annual report?"
    assert asked_years(ask, ["2020", "2022"]) == ("2022",)
    assert asked_years("What capex did Acme plan for 2020 in its 2019 10-K?", ["2019", "2020"]) == ("2020",)
    # the document's year is asked when the question names no other, or names it as the period too
    assert asked_years("What was revenue according to the 2019 annual report?", ["2019"]) == ("2019",)
    assert asked_years("What was revenue in 2020, per its 2020 annual report?", ["2020"]) == ("2020",)


@needs_more
def test_the_asked_year_of_a_forecast_leads_not_the_reports_year(more_kb):
    """"... in 2022, per its 2020 annual report": the row of the table of expected payments labelled 2022 leads,
    not a row of the report's own year's column."""
    from jsonl_engine.answer.synthesize import synthesize

    out = synthesize(more_kb, "What are Kraft Heinz's expected postretirement benefit payments for 2022, per its "
                     "2020 annual report?", document_ids=[more_kb.ids["KRAFTHEINZ_2020_10K"]])
    assert out.claims[0].text.split() == ["2022", "115"]
    assert "a row for the asked period 2022" in out.first_claim["why"]


def test_the_kind_of_figure_asked():
    assert asks_kind("How many branches did the bank run at the end of Q1 2022?") == "count"
    assert asks_kind("How much cash did Acme spend repurchasing its shares?") == "money"
    assert asks_kind("What did Acme pay to buy back its own stock?") == "money"
    assert asks_kind("What was Acme's effective tax rate?") is None


@needs_more
def test_money_asked_a_number_of_shares_row_does_not_lead(more_kb):
    """"How much cash ... repurchasing its common shares": the aggregate purchase price row leads, not the row of
    the total number of shares repurchased printed above it, whose label holds more of the question's words."""
    from jsonl_engine.answer.synthesize import synthesize

    out = synthesize(more_kb, "How much cash did the firm spend repurchasing its common shares in Q1 2022?",
                     document_ids=[more_kb.ids["JPMORGAN_2022Q1_10Q"]])
    assert "2,500" in out.claims[0].text
    shares = next(c for c in out.claims if "18.1" in c.text)
    assert out.claims.index(shares) > 0


@needs_more
def test_a_sentence_naming_the_fiscal_year_short_names_the_asked_period(more_kb):
    """"In Q4 FY23, the company returned ... dividends of $194 million" names the asked quarter of fiscal 2023 in
    its short form, and leads over a headline holding a per-share figure."""
    from jsonl_engine.answer.synthesize import synthesize

    out = synthesize(more_kb, "How much did Best Buy pay in dividends in Q4 FY23?",
                     document_ids=[more_kb.ids["BESTBUY_2023Q4_EARNINGS"]])
    assert out.claims[0].text.startswith("In Q4 FY23,") and "$194" in out.claims[0].text
    assert "names the asked period" in out.first_claim["why"]


def test_each_groups_day_on_a_line_of_its_own_keeps_both_groups(dev_pdfs):
    """"Three months ended" / "June 30," / "Six months ended" / "June 30," over "(in millions) 2023 2022 2023 2022":
    the day lines are pieces of the header, so both groups are read and each column is its own span's."""
    text = next(p for p in parse_file(str(dev_pdfs / "JPMORGAN_2023Q2_10Q.pdf")).pages
                if "FDIC-related expense 338" in p)
    i = text.index("FDIC-related expense 338")
    row = read_row(text, i, text.index("\n", i))
    assert [c.column_text for c in row.cells] == ["Three months ended 2023", "Three months ended 2022",
                                                  "Six months ended 2023", "Six months ended 2022"]
    assert asked_cells(row, ("2023",), quarter=True) == (0,)
    assert asked_cells(row, ("2023",), half=True) == (2,)


@needs_more
def test_the_first_nine_months_asked_take_the_year_to_date_column():
    """"the first nine months of 2022" (or "39 weeks", "the first three quarters") is the thirty-nine weeks'
    column of a third quarter's report, not the thirteen weeks' of the same year; 12 and 24 weeks are a quarter
    and a half of a retailer's weeks."""
    from jsonl_engine.answer.order import asks_nine, asks_span

    assert asks_nine("What were sales in the first nine months of 2022?")
    assert asks_nine("What were sales for the 39 weeks ended October 29, 2022?")
    assert asks_nine("What were sales in the first three quarters of 2022?")
    assert not asks_nine("What were sales in Q3 2022?")
    assert asks_span("What did Acme spend on capital projects in the first 24 weeks of 2023?") == (False, True)
    assert asks_span("What was revenue for the 12 weeks ended June 17, 2023?") == (True, False)
    assert asks_span("What was revenue for the fifty-two weeks ended June 17, 2023?") == (False, False)
    row = filing_row("FOOTLOCKER_2023Q3_10Q", "Sales by Channel", "Direct-to-customers ")
    assert asked_cells(row, ("2022",), nine=True) == (2,)


@needs_more
def test_dates_printed_in_figures_are_a_column_line():
    """"12 Weeks Ended 24 Weeks Ended" over "6/17/2023 6/11/2022 6/17/2023 6/11/2022": dates in figures are periods,
    so the columns are read, and the asked period's end (June 17, 2023) picks the half year's for "the first 24
    weeks"."""
    row = filing_row("PEPSICO_2023Q2_EARNINGS", "Condensed Consolidated Statement of Income", "Net Revenue ")
    assert [c.column_text for c in row.cells] == ["12 Weeks Ended 6/17/2023", "12 Weeks Ended 6/11/2022",
                                                  "24 Weeks Ended 6/17/2023", "24 Weeks Ended 6/11/2022"]
    assert asked_cells(row, ("2023",), half=True, ends=("2023-06-17",)) == (2,)
    assert asked_cells(row, ("2023",), quarter=True, ends=("2023-06-17",)) == (0,)


@needs_more
def test_a_year_asked_of_a_fourth_quarters_release_takes_the_twelve_months_column():
    """A fourth quarter's earnings release prints the quarter beside the year ("Three Months Ended January 28, 2023"
    and "Twelve Months Ended January 28, 2023"): the whole fiscal year asked is the twelve months' column alone; a
    quarter asked, the three months'."""
    row = filing_row("BESTBUY_2023Q4_EARNINGS", "Diluted earnings per share", "Diluted earnings per share ")
    assert [c.column_text for c in row.cells][::2] == ["Three Months Ended January 28, 2023",
                                                       "Twelve Months Ended January 28, 2023"]
    assert asked_cells(row, ("2023",), ends=("2023-01-28",)) == (2,)
    assert asked_cells(row, ("2023",), quarter=True, ends=("2023-01-28",)) == (0,)
