"""Table rows read as tables on real filings' pages: column headers, units, negative parenthesised figures,
multi-line headers, two tables on one page; and the answer line and claim table they give kb.synthesize."""

from __future__ import annotations

from decimal import Decimal

import pytest

from jsonl_engine.answer.order import asked_cells
from jsonl_engine.answer.synthesize import synthesize
from jsonl_engine.answer.tables import cells_of, number, read_row, table_line
from jsonl_engine.ingest import parse_file
from jsonl_engine.store import Store
from tests.support.answer_lines import table_parts
from tests.support.shared import MORE, filing_row, needs_more


def page(store: Store, doc: str, number_: int) -> str:
    return store.page(store.doc_ids[doc], number_).text


def row_at(text: str, starts: str):
    i = text.index(starts)
    return read_row(text, i, text.index("\n", i))


def verbatim(text: str, row) -> None:
    for part in table_parts(row):
        assert text[part.start:part.end] == part.text


def test_cash_flow_row_gets_its_years_unit_and_negative_cells(dev_kb: Store):
    text = page(dev_kb, "3M_2022_10K", 52)
    row = row_at(text, "Purchases of property, plant and equipment (PP&E)")
    verbatim(text, row)
    assert row.label.text == "Purchases of property, plant and equipment (PP&E)"
    assert [(c.column_text, c.text) for c in row.cells] == [("2022", "(1,749)"), ("2021", "(1,603)"),
                                                             ("2020", "(1,501)")]
    assert row.unit.text == "(Millions)"
    assert [number(c.text) for c in row.cells] == [Decimal(-1749), Decimal(-1603), Decimal(-1501)]
    # a "$" printed apart belongs to its cell; a dash is an empty cell that keeps its column
    net = row_at(text, "Net income including noncontrolling interest")
    assert [c.text for c in net.cells] == ["$ 5,791", "$ 5,929", "$ 5,453"]
    gain = row_at(text, "Gain on business divestitures")
    assert [(c.column_text, c.text, c.empty) for c in gain.cells] == [("2022", "(2,724)", False),
                                                                      ("2021", "—", True), ("2020", "(389)", False)]
    assert table_line(row, (0,)) == "Purchases of property, plant and equipment (PP&E), 2022: (1,749) (Millions)"


def test_two_tables_on_one_page_keep_their_own_headers(dev_kb: Store):
    text = page(dev_kb, "3M_2022_10K", 25)
    first = row_at(text, "Consumer 5,298")
    second = row_at(text, "Consumer (0.9)")
    verbatim(text, first)
    verbatim(text, second)
    assert "2022 2021 % change" in [h.text for h in first.headers]
    assert first.unit.text == "(Dollars in millions)"
    # the second table's headers are its own: the first table's column line is not read as the second's
    assert [h.text for h in second.headers][0] == "Year ended December 31, 2022"
    assert "2022 2021 % change" not in [h.text for h in second.headers]
    assert any("Organic sales" in h.text for h in second.headers)
    assert [c.text for c in second.cells] == ["(0.9)", "—", "(0.4)", "(2.6)", "(3.9)"]
    # headers that do not map onto the cells give no column (never a guessed one)
    assert not first.mapped and not second.mapped and table_line(second, ()) is None


def test_percent_columns_with_a_trailing_title(dev_kb: Store):
    text = page(dev_kb, "3M_2022_10K", 27)
    row = row_at(text, "Operating income margin")
    verbatim(text, row)
    assert [(c.column_text, c.text) for c in row.cells] == [("2022", "19.1 %"), ("2021", "20.8 %"),
                                                             ("Change", "(1.7)%")]
    assert row.unit.text == "(Percent of net sales)"


@pytest.fixture(scope="module")
def quarterly(dev_pdfs) -> list[str]:
    return parse_file(str(dev_pdfs / "AMCOR_2023Q2_10Q.pdf")).pages


def test_multi_line_headers_group_the_columns(quarterly):
    text = next(p for p in quarterly if "Condensed Consolidated Statements of Income" in p and "Net sales $" in p)
    row = row_at(text, "Net sales $")
    verbatim(text, row)
    assert [c.text for c in row.cells] == ["$ 3,642", "$ 3,507", "$ 7,354", "$ 6,927"]
    assert [c.column_text for c in row.cells] == [
        "Three Months Ended December 31 2022", "Three Months Ended December 31 2021",
        "Six Months Ended December 31 2022", "Six Months Ended December 31 2021"]
    assert row.unit.text == "($ in millions, except per share data)"
    # the asked period's cells: a year names both groups' columns; a quarter asked, only the quarter's
    assert asked_cells(row, ("2022",)) == (0, 2) and asked_cells(row, ("2022",), quarter=True) == (0,)
    cost = row_at(text, "Cost of sales")
    assert number(cost.cells[2].text) == Decimal(-6024) and cost.cells[2].column_text.startswith("Six Months")


def test_a_column_line_printed_one_date_piece_a_line(dev_pdfs):
    """"June 30," / "2023" / "December 31," / "2022" on lines of their own are one column line."""
    pages = parse_file(str(dev_pdfs / "MGMRESORTS_2023Q2_10Q.pdf")).pages
    text = next(p for p in pages if "CONSOLIDATED BALANCE SHEETS" in p and "Cash and cash equivalents $" in p)
    row = row_at(text, "Cash and cash equivalents $")
    verbatim(text, row)
    assert [c.column_text for c in row.cells] == ["June 30, 2023", "December 31, 2022"]
    assert row.unit.text == "(In thousands, except share data)"
    assert asked_cells(row, ("2023",)) == (0,)


def test_a_statements_sub_heading_does_not_end_its_table(dev_kb: Store):
    """"Adjustments to reconcile net income to net cash provided by operating activities:" is a sub-heading of the
    cash flow statement, not a sentence leading into another table: the rows below it keep the statement's years."""
    text = page(dev_kb, "AMCOR_2023_10K", 53)
    row = row_at(text, "Dividends paid")
    verbatim(text, row)
    assert [(c.text, c.column_text) for c in row.cells] == [("(723)", "June 30, 2023"), ("(732)", "2022"),
                                                            ("(742)", "2021")]


def test_synthesize_leads_with_the_row_read_as_a_table(dev_kb: Store):
    doc = dev_kb.doc_ids["3M_2022_10K"]
    out = synthesize(dev_kb, "What was the FY2022 capital expenditure of 3M?", document_ids=[doc])
    first = out.claims[0]
    assert out.answer.split("\n")[0] == ("Purchases of property, plant and equipment (PP&E), 2022: (1,749) (Millions) "
                                         f"[{first.id}]")
    reading = out.tables[first.id]
    assert reading.page == first.page == 52 and reading.asked == (0,)
    verbatim(page(dev_kb, "3M_2022_10K", 52), reading.row)
    assert "column 2022 is the asked period" in out.first_claim["why"]
    assert len(out.claims) <= 5


@pytest.fixture(scope="module")
def bestbuy_q2(dev_pdfs) -> list[str]:
    """A retailer's 10-Q for the second quarter of fiscal 2024 (the quarter ended July 29, 2023)."""
    return parse_file(str(dev_pdfs / "BESTBUY_2024Q2_10Q.pdf")).pages


def test_a_line_of_titles_over_alike_groups_is_a_second_header_level(bestbuy_q2):
    """"Revenue Mix Comparable Sales" over "Three Months Ended Three Months Ended" over four dates: each cell's
    column is the pair (title, period), the titles cut in as many as the groups."""
    text = next(p for p in bestbuy_q2 if "Revenue Mix Comparable Sales" in p)
    row = row_at(text, "Entertainment ")
    verbatim(text, row)
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("6 %", "Revenue Mix, Three Months Ended July 29, 2023"), ("5 %", "Revenue Mix, Three Months Ended July 30, 2022"),
        ("9.0 %", "Comparable Sales, Three Months Ended July 29, 2023"),
        ("(9.2)%", "Comparable Sales, Three Months Ended July 30, 2022")]
    assert [p.text for p in row.cells[2].column] == ["Comparable Sales", "Three Months Ended", "July 29, 2023"]
    assert "Revenue Mix Comparable Sales" in [h.text for h in row.headers]
    # the quarter's end in that quarter's report names its columns, whatever calendar year the fiscal year is
    assert asked_cells(row, ("2024",), quarter=True, ends=("2023-07-29",)) == (0, 2)
    assert asked_cells(row, ("2024",), quarter=True) == ()
    # distinct groups ("Three Months Ended Six Months Ended") need no title: a heading above them is none
    segment = row_at(text, "Revenue $")
    assert [c.column_text for c in segment.cells][::2] == ["Three Months Ended July 29, 2023",
                                                          "Six Months Ended July 29, 2023"]


def test_a_footnote_mark_is_no_cell_and_a_date_comma_no_day_cell(bestbuy_q2):
    """"Gross profit as a % of revenue" / "(1) 23.2 % 22.1 % 22.9 % 22.1 %" under four columns: "(1)" is the
    label's footnote mark (five "cells" for four columns), the label is the line above; "July 30," is a date."""
    text = next(p for p in bestbuy_q2 if "Gross profit as a % of revenue\n(1)" in p)
    row = row_at(text, "(1) 23.2 %")
    verbatim(text, row)
    assert row.label.text == "Gross profit as a % of revenue"
    assert [(c.text, c.column_text) for c in row.cells][:2] == [("23.2 %", "Three Months Ended July 29, 2023"),
                                                                ("22.1 %", "Three Months Ended July 30, 2022")]
    assert len(row.cells) == 4 and row.mapped
    assert table_line(row, (0,)) == ("Gross profit as a % of revenue, Three Months Ended July 29, 2023: 23.2 % "
                                     "($ in millions, except per share amounts)")
    # a real negative first cell keeps its sign when the columns count it ("Restructuring charges $ (7) ...")
    charges = row_at(text, "Restructuring charges $ (7)")
    assert number(charges.cells[0].text) == Decimal(-7) and len(charges.cells) == 4
    # the column line's "July 30," is a day, not a cell
    dates = row_at(text, "July 29, 2023 July 30, 2022 July 29, 2023 July 30, 2022")
    assert [c.text for c in dates.cells] == []  # nor its year a cell (test_a_date_ending_a_rows_label_is_no_cell)


def test_the_day_of_a_date_is_no_amount():
    from jsonl_engine.answer.synthesize import figures_of

    found = figures_of("On July 13, 2023, the Company will post its results of $1,577 million.")
    assert "13" not in found and "1577" in found
    assert figures_of("Sales rose 13, 14 and 15 percent") >= {"13"}  # a list of figures keeps its comma


def test_the_asked_quarter_is_its_reports_three_months_column(dev_pdfs, dev_kb: Store, tmp_path):
    """"Q2 of FY2024" in the 10-Q of the second quarter of fiscal 2024 is the column "Three Months Ended July 29,
    2023" (the card's period end), not a 2024 column; a fiscal year asked of an annual report is its year's end."""
    from jsonl_engine.answer.synthesize import period_ends
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(tmp_path / "kb")
    q2 = ingest_paths(store, [str(dev_pdfs / "BESTBUY_2024Q2_10Q.pdf")])[0].document_id
    assert period_ends("What was revenue in Q2 of FY2024?", store.cards([q2])) == {"2023-07-29"}
    assert period_ends("What was revenue in the second quarter of fiscal 2024?", store.cards([q2])) == {"2023-07-29"}
    assert period_ends("What was revenue in FY2024?", store.cards([q2])) == frozenset()
    assert period_ends("What was revenue in Q2 of FY2023?", store.cards([q2])) == frozenset()
    annual = dev_kb.doc_ids["3M_2022_10K"]
    assert period_ends("What was capital expenditure in FY2022?", dev_kb.cards([annual])) == {"2022-12-31"}
    assert period_ends("What was capital expenditure in Q2 of FY2022?", dev_kb.cards([annual])) == frozenset()
    out = synthesize(store, "What was Best Buy's revenue in Q2 of FY2024?", document_ids=[q2])
    store.close()
    reading = out.tables[out.claims[0].id]
    assert [reading.row.cells[i].column_text for i in reading.asked] == ["Three Months Ended July 29, 2023"]
    assert "column Three Months Ended July 29, 2023 is the asked period" in out.first_claim["why"]


@pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (shared/financebench-more) are absent")
def test_a_half_year_asked_takes_the_columns_its_table_header_spans():
    """"For the Six Months Ended June 30," over "2023 2022": the columns are a half year's, for "the first half of
    2023" (not "Q2 2023"); a table saying nothing of its span is taken at its word, except in an annual report."""
    pages = parse_file(str(MORE / "AMERICANWATERWORKS_2023Q2_10Q.pdf")).pages
    text = next(p for p in pages if "Consolidated Statements of Cash Flows" in p and "Capital expenditures (" in p)
    row = row_at(text, "Net cash provided by operating activities")
    verbatim(text, row)
    assert [(c.text, c.column_text) for c in row.cells] == [("714", "2023"), ("196", "2022")]
    assert asked_cells(row, ("2023",), half=True) == (0,)
    assert asked_cells(row, ("2023",), quarter=True) == ()
    assert asked_cells(row, ("2023",), quarter=True, half=True) == (0,)  # "Q2 and the first six months"
    bare = read_row("(In millions) 2023 2022\nNet income 450 376", 24, 42)  # no span said: taken at its word
    assert asked_cells(bare, ("2023",), quarter=True) == (0,)
    assert asked_cells(bare, ("2023",), quarter=True, annual=True) == ()


def test_a_row_without_the_asked_period_does_not_lead_over_a_sentence_stating_it(dev_kb: Store):
    """A quarter asked of an annual report: the dividends row of annual columns has no column for it, and the
    sentence naming the year and its quarters ("... per share for each quarter in 2022") leads, however the
    row scores (order.rank); a sentence naming the year alone does not state a quarter."""
    from jsonl_engine.answer import order

    cash_flow = page(dev_kb, "3M_2022_10K", 52)
    row = row_at(cash_flow, "Dividends paid to shareholders")
    assert [c.column_text for c in row.cells] == ["2022", "2021", "2020"]
    notes = page(dev_kb, "3M_2022_10K", 69)
    i = notes.index("Cash dividends declared and paid totaled $1.49")
    quarterly = notes[i:notes.index(".", notes.index("respectively", i)) + 1]
    yearly = "Dividend to noncontrolling interest in 2022 of $29 million related to dividend paid by 3M India Limited"
    assert yearly in notes
    ask = order.Ask(True, ("2022",), quarter=True, annual=True)
    judged = {
        "row": order.judge(ask, cash_flow[row.label.start:row.cells[-1].end], score=0.9, has_figure=True, table=row, label_share=0.5,
                           labelled_hit=False, names_item=True),
        "quarterly": order.judge(ask, quarterly, score=0.4, has_figure=True, table=None, label_share=0,
                                 labelled_hit=False),
        "yearly": order.judge(ask, yearly, score=0.6, has_figure=True, table=None, label_share=0,
                              labelled_hit=False)}
    assert "no column for the asked period" in judged["row"].reasons and judged["row"].period == -1
    assert "names the asked period" in judged["quarterly"].reasons
    assert "names the asked period" not in judged["yearly"].reasons
    assert judged["row"].directness > judged["quarterly"].directness
    ranked = order.rank(list(judged), judged.__getitem__, lambda u: (0, 0), document_of=lambda u: "d")
    assert ranked[0] == "quarterly" and ranked[1] == "row"
    # with no unit stating the period, the row keeps its place
    del judged["quarterly"]
    assert order.rank(list(judged), judged.__getitem__, lambda u: (0, 0), document_of=lambda u: "d")[0] == "row"
    out = synthesize(dev_kb, "Did 3M pay dividends in Q2 of FY2022?", document_ids=[dev_kb.doc_ids["3M_2022_10K"]])
    assert "$1.49" in out.claims[0].text and "names the asked period" in out.first_claim["why"]


@pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (shared/financebench-more) are absent")
def test_groups_above_a_title_line_are_still_read():
    """"Quarters Ended Six Months Ended" over "Aircraft Deliveries" over dates printed a piece a line: the title
    line between them hides no group (distinct groups need no title), and an unevenly worded title line is not cut
    ("Pension Other Postretirement Benefits" is no "Pension Other" | "Postretirement Benefits")."""
    from jsonl_engine.answer.tables import Part, _split_titles

    pages = parse_file(str(MORE / "LOCKHEEDMARTIN_2023Q2_10Q.pdf")).pages
    text = next(p for p in pages if "Aircraft Deliveries" in p and "\nF-35 " in p)
    row = row_at(text, "F-35 ")
    verbatim(text, row)
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("45", "Quarters Ended June 25, 2023"), ("35", "Quarters Ended June 26, 2022"),
        ("50", "Six Months Ended June 25, 2023"), ("61", "Six Months Ended June 26, 2022")]
    assert _split_titles(Part("Pension Other Postretirement Benefits", 0, 37), 2) is None
    assert [p.text for p in _split_titles(Part("Revenue Mix Comparable Sales", 0, 28), 2)] == ["Revenue Mix",
                                                                                             "Comparable Sales"]


@pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (shared/financebench-more) are absent")
def test_a_bare_footnote_mark_before_a_dollar_cell():
    """"Basic Net Income Per Share" / "1 $ 2.09 $ 1.51 $ 0.29" under three years: the "1" is a footnote mark (a row
    printing "$" prints it on its first figure), the label the line above."""
    pages = parse_file(str(MORE / "COCACOLA_2019_10K.pdf")).pages
    text = next(p for p in pages if "Basic Net Income Per Share\n1 $ 2.09" in p)
    row = row_at(text, "1 $ 2.09")
    verbatim(text, row)
    assert row.label.text == "Basic Net Income Per Share"
    assert [(c.text, c.column_text) for c in row.cells] == [("$ 2.09", "December 31, 2019"), ("$ 1.51", "2018"),
                                                            ("$ 0.29", "2017")]


def test_a_footnote_mark_after_a_label_and_a_row_above_the_column_line(dev_kb: Store):
    """"Add: Impact of hyperinflation (3) 24 16 19" under "($ in millions) 2023 2022 2021": "(3)" is the label's
    footnote mark; the row "Add: 2018/2019 Restructuring programs (1) — 37 88" above is no column line (its "37 88"
    are no days of dates)."""
    text = page(dev_kb, "AMCOR_2023_10K", 35)
    row = row_at(text, "Add: Impact of hyperinflation (3)")
    verbatim(text, row)
    assert row.label.text == "Add: Impact of hyperinflation"
    assert [(c.text, c.column_text) for c in row.cells] == [("24", "2023"), ("16", "2022"), ("19", "2021")]
    assert row.unit.text == "($ in millions)"
    other = row_at(text, "Add/(Less): Other (8)")
    assert [(c.text, c.column_text) for c in other.cells] == [("(3)", "2023"), ("4", "2022"), ("7", "2021")]


def test_a_negative_first_cell_under_a_titled_extra_column_is_kept(dev_pdfs):
    """"2019 2018" over "Increase" / "(Decrease)": a row's three cells "(22) (230) 208" are three figures (the
    third column's title is under the column line), never a footnote mark and two."""
    pages = parse_file(str(dev_pdfs / "ACTIVISIONBLIZZARD_2019_10K.pdf")).pages
    text = next(p for p in pages if "Net cash used in investing activities (22) (230) 208" in p)
    row = row_at(text, "Net cash used in investing activities (22)")
    assert [c.text for c in row.cells] == ["(22)", "(230)", "208"] and number(row.cells[0].text) == Decimal(-22)
    assert not any(c.column for c in row.cells)  # the headers do not map: no column guessed


@pytest.mark.skipif(MORE is None, reason="the FinanceBench filings (shared/financebench-more) are absent")
def test_month_and_day_over_the_years_make_dated_columns():
    """"April 30, January 31, April 30," over "(Amounts in millions) 2023 2023 2022": each year takes the month
    and day above it (two verbatim parts), and a date the question names picks its column alone."""
    pages = parse_file(str(MORE / "WALMART_2024Q1_10Q.pdf")).pages
    text = next(p for p in pages if "Condensed Consolidated Balance Sheets" in p and "\nInventories " in p)
    row = row_at(text, "Inventories ")
    verbatim(text, row)
    assert [(c.text, c.column_text) for c in row.cells] == [("56,932", "April 30, 2023"), ("56,576", "January 31, 2023"),
                                                            ("61,229", "April 30, 2022")]
    assert [p.text for p in row.cells[0].column] == ["April 30,", "2023"]
    assert asked_cells(row, ("2024",), ends=("2023-04-30",), dated=("2023",)) == (0,)
    assert asked_cells(row, (), dated=("2023",)) == (0, 1)  # the year alone: both columns of 2023


def test_a_sentence_naming_a_later_year_does_not_state_the_asked_one(dev_kb: Store):
    """For 2022 asked, "... increase in the quarterly cash dividend to $0.605 per share effective in 2023" may give
    2023's figure (no "names the asked period"); a sentence giving each year's figure, "respectively", does."""
    from jsonl_engine.answer import order

    ask = order.Ask(True, ("2022",))
    later = ("In December 2022, the Board authorized a 10% increase in the quarterly cash dividend to $0.605 per "
             "share effective in 2023.")
    each = next(s for s in page(dev_kb, "AMCOR_2023_10K", 40).split("\n") if s.startswith("In fiscal years 2023, 2022"))
    judged = [order.judge(ask, body, score=0.5, has_figure=True, table=None, label_share=0, labelled_hit=False)
              for body in (later, each)]
    assert "names the asked period" not in judged[0].reasons
    assert "names the asked period" in judged[1].reasons and judged[1].period == 1


def test_a_column_line_joined_to_the_first_row_is_both(dev_pdfs):
    """Text extraction may print a statement's column line and its first row as one line ("For the Years Ended
    December 31, 2021 2020 2019 Operating revenues $ 3,930 $ 3,777 $ 3,610"): the periods head the table's columns
    and the rest is the first row's label."""
    pages = parse_file(str(dev_pdfs / "AMERICANWATERWORKS_2021_10K.pdf")).pages
    text = next(p for p in pages if "Consolidated Statements of Operations" in p and "Operating income 1,196" in p)
    row = row_at(text, "Operating income 1,196")
    verbatim(text, row)
    assert [(c.column_text, c.text) for c in row.cells] == [("December 31, 2021", "1,196"), ("2020", "1,248"),
                                                             ("2019", "1,214")]
    assert row.unit.text == "(In millions, except per share data)"
    first = row_at(text, "For the Years Ended December 31, 2021 2020 2019 Operating revenues")
    verbatim(text, first)
    assert first.label.text == "Operating revenues"
    assert [(c.column_text, c.text) for c in first.cells][0] == ("December 31, 2021", "$ 3,930")
    assert table_line(first, (0,)) == "Operating revenues, December 31, 2021: $ 3,930 (In millions, except per share data)"


@needs_more
def test_a_table_of_a_years_quarters_names_each_quarters_column():
    """An annual report's quarterly data prints the quarters apart from the year, in three ways seen: "2019" over
    "First Quarter ... Fourth Quarter"; "2016 2015" over "4th 3rd 2nd 1st 4th 3rd 2nd 1st"; "First Second Third
    Fourth Year" over "2017 Quarter Quarter Quarter Quarter 2017" (a last column the year's)."""
    row = filing_row("AMERICANWATERWORKS_2019_10K", "Unaudited Quarterly Data", "Operating income 238")
    assert [(c.column_text, c.text) for c in row.cells] == [
        ("First Quarter, 2019", "238"), ("Second Quarter, 2019", "302"), ("Third Quarter, 2019", "406"),
        ("Fourth Quarter, 2019", "224")]
    # the third quarter asked is its column; a year asked is none of the quarters'
    assert asked_cells(row, ("2019",), quarter=True, which=3) == (2,) and asked_cells(row, ("2019",)) == ()
    assert table_line(row, (2,)) == "Operating income, Third Quarter, 2019: 406"
    row = filing_row("BOEING_2016_10K", "Quarterly Financial Data", "Total revenues $23,286")
    assert [c.column_text for c in row.cells][:5] == ["4th 2016", "3rd 2016", "2nd 2016", "1st 2016", "4th 2015"]
    assert asked_cells(row, ("2016",), quarter=True, which=3) == (1,)
    row = filing_row("3M_2017_10K", "Quarterly Data (Unaudited)", "Net income attributable to 3M 1,323")
    assert [(c.column_text, c.text) for c in row.cells][2:] == [("Third, 2017", "1,429"), ("Fourth, 2017", "523"),
                                                                 ("Year, 2017", "4,858")]
    assert asked_cells(row, ("2017",)) == (4,) and asked_cells(row, ("2017",), quarter=True, which=3) == (2,)


@needs_more
def test_rows_joined_on_one_line_are_read_apart():
    """Text extraction may join a statement's rows on one line, after its periods ("2022 2021 2020 Cash flows from
    operating activities: Net income $ 4,491,924 ... Adjustments ...: Additions to content assets (16,839,038) ..."):
    each label and its figures, as many as the others', is a row of its own, read under those periods."""
    from jsonl_engine.answer.sentences import segment

    assert MORE is not None
    pages = parse_file(str(MORE / "NETFLIX_2022_10K.pdf")).pages
    cash = next(p for p in pages if "CONSOLIDATED STATEMENTS OF CASH FLOWS" in p and "Purchases of property" in p)
    rows = {cash[s.start:s.end]: s for s in segment(cash) if s.kind == "row"}
    assert "Additions to content assets (16,839,038) (17,702,202) (11,779,284)" in " ".join(rows)
    net = next(s for text, s in rows.items() if text.endswith("Net income $ 4,491,924 $ 5,116,228 $ 2,761,395"))
    row = read_row(cash, net.start, net.end)
    verbatim(cash, row)
    assert [(c.column_text, c.text) for c in row.cells][0] == ("2022", "$ 4,491,924")
    # a row on a later line, under a line of joined rows ending with a sub-heading, finds the same periods
    seg = next(s for text, s in rows.items() if text.startswith("Purchases of property and equipment (407,729)"))
    capex = read_row(cash, seg.start, seg.end)
    assert [(c.column_text, c.text) for c in capex.cells] == [("2022", "(407,729)"), ("2021", "(524,585)"),
                                                               ("2020", "(497,923)")]
    assert capex.unit.text == "(in thousands)"
    # a label's "(Note 2)" is no cell; a line that opens with figures, or whose rows print unlike counts, is one row
    label, cells = cells_of("Total net revenues (Note 2) 7,500 7,017 6,608", 0, 46)
    assert label.text == "Total net revenues (Note 2)" and [c.text for c in cells] == ["7,500", "7,017", "6,608"]
    line = "Net sales (1) 100 200 Cost 50 60"
    from jsonl_engine.answer.sentences import joined_rows

    assert joined_rows(line, 0, len(line)) == [(0, len(line), "row")]


@needs_more
def test_a_share_asked_leads_with_the_percentage_row():
    """"What share of total assets did cash ... make up?": of the rows of a filing's liquidity table, the one stating
    a percentage ("Percentage of total assets 44 %") gains over the amounts ("Total assets $ 27,383")."""
    from jsonl_engine.answer import order

    query = ("What share of Acme's total assets did cash, cash equivalents and short-term investments make up at the "
             "end of FY2022?")
    assert order.asks_share(query) and not order.asks_share("What were total assets at the end of FY2022?")
    assert MORE is not None
    text = next(p for p in parse_file(str(MORE / "ACTIVISIONBLIZZARD_2022_10K.pdf")).pages
                if "Percentage of total assets 44 %" in p)
    ask = order.Ask(figure=True, years=("2022",), share=True)
    judged = {}
    for starts in ("Percentage of total assets 44 %", "Short-term investments"):
        row = row_at(text, starts)
        verbatim(text, row)
        judged[starts] = order.judge(ask, text[row.label.start:row.cells[-1].end], score=0.5, has_figure=True,
                                     table=row, label_share=0.25, labelled_hit=False)
    share, amount = judged["Percentage of total assets 44 %"], judged["Short-term investments"]
    assert "a percentage, as the question asks a share" in share.reasons
    assert share.directness - amount.directness >= order.W_SHARE


@needs_more
def test_a_quarters_header_a_word_a_line_and_a_lead_in_naming_two_years():
    """Two more ways a year's quarters are printed: the header a word a line ("First" / "Quarter" / "Second" / ...
    / "Fourth" / "Quarter Full Year", the unit, then "2016" over the rows), a last column the year's; and "2016
    Quarters" over "First Second Third Fourth" under a lead-in naming two years ("Our quarterly financial data for
    2016 and 2015 was:"), whose years are not the columns'. A question asking which quarter reads them all."""
    row = filing_row("COCACOLA_2016_10K", "Quarterly Data (Unaudited)", "Net operating revenues $ 10,282")
    assert [(c.column_text, c.text) for c in row.cells] == [
        ("First, 2016", "$ 10,282"), ("Second, 2016", "$ 11,539"), ("Third, 2016", "$ 10,633"),
        ("Fourth, 2016", "$ 9,409"), ("Full Year, 2016", "$ 41,863")]
    assert asked_cells(row, ("2016",)) == (4,) and asked_cells(row, ("2016",), quarter=True, which=2) == (1,)
    assert asked_cells(row, ("2016",), quarter=True, quarters=True) == (0, 1, 2, 3)
    row = filing_row("KRAFTHEINZ_2016_10K", "Quarterly Financial Data", "Net sales $ 6,570")
    assert [(c.column_text, c.text) for c in row.cells] == [
        ("First, 2016", "$ 6,570"), ("Second, 2016", "$ 6,793"), ("Third, 2016", "$ 6,267"), ("Fourth, 2016", "$ 6,857")]
    assert table_line(row, (3,)) == "Net sales, Fourth, 2016: $ 6,857 (in millions, except per share data)"


@needs_more
def test_dates_broken_across_header_lines_under_the_unit():
    """A column line whose dates are broken across lines, the unit opening the first ("In Millions May 28," /
    "2017 May 29," / "2016"): the pieces join into the columns' dates."""
    row = filing_row("GENERALMILLS_2017_10K", "Total capital consisted of the following", "Total debt 9,481.7")
    assert [(c.column_text, c.text) for c in row.cells] == [("May 28, 2017", "9,481.7"), ("May 29, 2016", "8,430.9")]
    assert row.unit.text == "In Millions"
    assert asked_cells(row, ("2017", "2016"), change=True) == (0, 1)


@needs_more
def test_a_label_wrapped_over_two_lines_reads_whole():
    """A label opening in lower case ends one wrapped over two lines ("Adjusted operating income as a % of" over
    "total revenues 3.6% 3.7% 3.5%"): the row is about the whole label, not "total revenues"."""
    row = filing_row("CVSHEALTH_2019_10K", "Adjusted operating income as a % of", "total revenues 3.6%")
    assert " ".join(row.label.text.split()) == "Adjusted operating income as a % of total revenues"
    assert [(c.column_text, c.text) for c in row.cells] == [("2019", "3.6%"), ("2018", "3.7%"), ("2017", "3.5%")]
    # a row whose line above is another row keeps its own label
    text = "Net sales 10 20\nnet of returns 5 6"
    assert read_row(text, 16, len(text)).label.text == "net of returns"


@needs_more
def test_amounts_beside_their_percentages_take_the_columns_in_order():
    """"(Dollars in millions) Fiscal 2017 Fiscal 2016 % Change Fiscal 2015 % Change" over "Gross profit $ 15,312
    $ 14,971 2% $ 14,067 6%": more cells than periods, but the amounts are as many as the periods; each amount its
    period, the percentages none. A column line broken over lines ("% Change" / "Excluding" / ... over "Greater
    China 4,237 3,785 12% 17% 3,067": two periods read, three amounts) and a bare dash (an amount's or a percentage's?) leave the row unread."""
    row = filing_row("NIKE_2017_10K", "Gross Margin", "Gross profit $ 15,312")
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("$ 15,312", "Fiscal 2017"), ("$ 14,971", "Fiscal 2016"), ("2%", ""), ("$ 14,067", "Fiscal 2015"), ("6%", "")]
    assert asked_cells(row, ("2017",)) == (0,) and not row.mapped
    assert table_line(row, (0,)) == "Gross profit, Fiscal 2017: $ 15,312 (Dollars in millions)"
    row = filing_row("NIKE_2017_10K", "Excluding", "Greater China 4,237")
    assert [c.column_text for c in row.cells] == [""] * 7
    row = filing_row("NETFLIX_2023Q2_10Q", "Q2'23 vs. Q2'22", "Streaming revenues $ 8,158,326")
    # (a column line printed a date piece a line, its last piece followed by the change's title: read whole,
    # test_two_periods_compared_title_one_change_column)
    assert [c.column_text for c in row.cells] == ["June 30, 2023", "June 30, 2022", "Q2'23 vs. Q2'22", ""]
    text = "(in millions) 2023 2022\nRevenues 9,100 9.4 % — 8.7 %\n"
    assert [c.column_text for c in row_at(text, "Revenues").cells] == [""] * 4


def test_a_title_after_each_period_is_a_column_of_its_own(dev_pdfs):
    """"2023 2022 Change 2023 2022 Change" under "Three months ended June 30, Six months ended June 30,": each
    "Change" is a column where it is printed, so "Net income 14,472 8,649 67 27,094 16,931 60" reads each period's
    amount; a unit between the periods ("2022 $ million 2023 $ million currency ∆%") is no column's title."""
    pages = parse_file(str(dev_pdfs / "JPMORGAN_2023Q2_10Q.pdf")).pages
    text = next(p for p in pages if "Net income 14,472 8,649 67" in p)
    row = row_at(text, "Net income 14,472")
    verbatim(text, row)
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("14,472", "Three months ended June 30 2023"), ("8,649", "Three months ended June 30 2022"),
        ("67", "Three months ended June 30 Change"), ("27,094", "Six months ended June 30 2023"),
        ("16,931", "Six months ended June 30 2022"), ("60", "Six months ended June 30 Change")]
    unit = "2022 $ million 2023 $ million currency ∆%\nNet sales 14,544 14,694 1 7\n"
    assert [c.column_text for c in row_at(unit, "Net sales").cells] == [""] * 4


@needs_more
def test_a_footnote_mark_on_a_column_header_is_no_figure():
    """A column header carrying a footnote mark ("2018 (1)", "2020(1)") still names its period: each cell of the
    rows below keeps its year, and the unit line ends before the years ("In millions, except per share amounts")."""
    row = filing_row("CVSHEALTH_2019_10K", "In millions, except per share amounts 2019 2018 (1)",
                        "Operating income 11,987")
    assert [(c.column_text, c.text) for c in row.cells] == [
        ("2019", "11,987"), ("2018", "4,021"), ("2017", "9,538"), ("2016", "10,386"), ("2015", "9,496")]
    assert row.unit is not None and row.unit.text == "In millions, except per share amounts"
    assert asked_cells(row, ("2018",)) == (1,)
    row = filing_row("BESTBUY_2020_10K", "Fiscal Year 2020(1) 2019 2018(2)", "Operating income 2,009")
    assert [c.column_text for c in row.cells] == ["Fiscal Year 2020", "2019", "2018", "2017", "2016"]


@needs_more
def test_quarters_named_apart_from_the_year_printed_over_the_full_years_column():
    """"1st 2nd 3rd 4th 2018" under "Quarter 12-Month": the quarters' columns, then the year's own; a row's footnote
    mark ("Comparable sales % change (1)") is no cell."""
    row = filing_row("BESTBUY_2018_10K", "Quarterly Financial Information", "Comparable sales % change (1)")
    assert [(c.column_text, c.text) for c in row.cells] == [
        ("1st 2018", "1.6%"), ("2nd 2018", "5.4%"), ("3rd 2018", "4.4%"), ("4th 2018", "9.0%"), ("2018", "5.6%")]
    assert asked_cells(row, ("2018",), quarter=True, which=4) == (3,) and asked_cells(row, ("2018",)) == (4,)


@needs_more
def test_two_periods_compared_title_one_change_column():
    """"2022 2021 2020 2022 vs. 2021": the last two periods, joined by "vs.", title one column, the change between
    them, so four cells read as three years and the change (a row printing no change reads its years); the change
    column names no year (a year asked is never read from it) but is a change (a change asked reads it). A date
    printed a piece a line whose last piece carries the change's title ("June 30," / "2023" / "June 30," / "2022
    Q2'23 vs. Q2'22") is one column line too, and its "Q2'23" names no quarter's column."""
    row = filing_row("NETFLIX_2022_10K", "consolidated performance highlights", "Streaming revenues $ 31,469,852")
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("$ 31,469,852", "2022"), ("$ 29,515,496", "2021"), ("$ 24,756,675", "2020"), ("7 %", "2022 vs. 2021")]
    assert asked_cells(row, ("2022",)) == (0,) and asked_cells(row, ("2022",), change=True) == (0, 1, 2, 3)
    assert table_line(row, (0,)) == ("Streaming revenues, 2022: $ 31,469,852 "
                                     "(in thousands, except revenue per membership and percentages)")
    margin = filing_row("NETFLIX_2022_10K", "consolidated performance highlights", "Operating margin 18 %")
    assert [(c.text, c.column_text) for c in margin.cells] == [("18 %", "2022"), ("21 %", "2021"), ("18 %", "2020")]
    row = filing_row("NETFLIX_2023Q2_10Q", "Latin America (LATAM)", "Paid memberships at end of period 42,466")
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("42,466", "June 30, 2023"), ("39,624", "June 30, 2022"), ("2,842", "Q2'23 vs. Q2'22"), ("7 %", "")]
    assert asked_cells(row, ("2023",), quarter=True) == (0,)


@needs_more
def test_a_balance_sheets_dates_printed_a_piece_a_line_and_its_titles_unit():
    """"At December 31," / "2017" / "At December 31," / "2016", a piece a line, is one column line; the unit printed
    with the statement's title at the page's top ("(Amounts in millions, except share data)") is the table's
    though text extraction put the footer ("The accompanying notes ..." / "F-3") between them and the headers."""
    row = filing_row("ACTIVISIONBLIZZARD_2017_10K", "CONSOLIDATED BALANCE SHEETS", "Total current liabilities 3,663")
    assert [(c.text, c.column_text) for c in row.cells] == [("3,663", "December 31, 2017"),
                                                             ("2,656", "December 31, 2016")]
    assert row.unit is not None and row.unit.text == "(Amounts in millions, except share data)"
    assert asked_cells(row, ("2016",)) == (1,)
    # a unit above another table's rows is not this table's
    text = "(in millions)\nRevenue 10 20\nCosts 5 6\nProfit 5 14\nOther 1 2\n2023 2022\nStores 5 6\n"
    assert row_at(text, "Stores").unit is None and [c.column_text for c in row_at(text, "Stores").cells] == [
        "2023", "2022"]


@needs_more
def test_a_date_ending_a_rows_label_is_no_cell_and_dates_the_row():
    """A schedule of dated items ("(In millions) Effective Date Amount" over "Missouri May 28, 2023 $ 44"): the year
    closing a month and day is the date's, no cell, and the row's one figure is its amount; a lead-in sentence's
    last line ("... became effective during" / "2023:") is no column line. Such a row, its columns naming no
    period, is dated in the asked year by its label's last words (order.judge), a date inside the label is not."""
    from jsonl_engine.answer import order

    row = filing_row("AMERICANWATERWORKS_2023Q2_10Q", "General rate cases by state:", "Missouri May 28, 2023 $ 44")
    assert row.label.text == "Missouri May 28, 2023" and [c.text for c in row.cells] == ["$ 44"]
    assert not any(c.column for c in row.cells) and not any(h.text == "2023:" for h in row.headers)
    assert row.unit is not None and row.unit.text == "(In millions)"
    assert [c.text for c in row_at("Balance at December 31, 2022 1,234 5,678\n", "Balance").cells] == ["1,234", "5,678"]
    judged = order.judge(order.Ask(figure=True, years=("2023",)), "Missouri May 28, 2023 $ 44", score=0.4,
                         has_figure=True, table=row, label_share=0.0, labelled_hit=False)
    assert "a row dated in the asked period (May 28, 2023)" in judged.reasons
    assert not any("dated" in r for r in order.judge(order.Ask(figure=True, years=("2022",)), "", score=0.4,
                                                       has_figure=True, table=row, label_share=0.0,
                                                       labelled_hit=False).reasons)
    inside = read_row("Price (at the close on June 11, 2023) $ 11.18\n", 0, 46)
    assert [c.text for c in inside.cells] == ["$ 11.18"]
    assert not any("dated" in r for r in order.judge(order.Ask(figure=True, years=("2023",)), "", score=0.4,
                                                       has_figure=True, table=inside, label_share=0.0,
                                                       labelled_hit=False).reasons)


@needs_more
def test_a_footnote_mark_under_a_unit_line_and_groups_each_opened_by_its_own_words():
    """"(in thousands)" between the column line and the rows titles no column, so "Paid memberships at end of period
    (1) 42,466 39,624 42,466 39,624" under four columns reads "(1)" as the label's footnote mark; and "As of/ Three
    Months Ended As of/ Six Months Ended" is two groups, "As of/" opening the second, not closing the first."""
    row = filing_row("NETFLIX_2023Q2_10Q", "Latin America (LATAM)", "Paid memberships at end of period (1) 42,466")
    assert row.label.text == "Paid memberships at end of period"
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("42,466", "Three Months Ended June 30, 2023"), ("39,624", "Three Months Ended June 30, 2022"),
        ("42,466", "Six Months Ended June 30, 2023"), ("39,624", "Six Months Ended June 30, 2022")]
    assert row.unit is not None and row.unit.text == "(in thousands)"
    assert asked_cells(row, ("2023",), quarter=True) == (0,)


@needs_more
def test_column_titles_wrapped_over_lines_one_after_another_are_the_columns():
    """An underwriting schedule prints each column's title wrapped over two lines, one title after another
    ("Principal Amount of 2028 Notes to" / "be Purchased" / "Principal Amount of 2034 Notes to" / ...), then the
    label column's title ("Underwriter"): the alike titles are the columns, in order, and a year inside a title's
    words ("of 2055 Notes") makes no column line; the rows continued on the next page, after the schedule's page
    number ("S1-1"), take the same titles from the page before."""
    from jsonl_engine.answer.tables import headerless, read_continued

    assert MORE is not None
    pages = parse_file(str(MORE / "LOCKHEEDMARTIN_2023_8K_dated-2023-05-25.pdf")).pages
    i = next(n for n, p in enumerate(pages) if "Principal Amount of 2055 Notes to" in p and "Underwriter\n" in p)
    row = row_at(pages[i], "Citigroup Global Markets Inc. $90,000,000")
    verbatim(pages[i], row)
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("$90,000,000", "Principal Amount of 2028 Notes to be Purchased"),
        ("$153,000,000", "Principal Amount of 2034 Notes to be Purchased"),
        ("$117,000,000", "Principal Amount of 2055 Notes to be Purchased")]
    assert asked_cells(row, ("2055",)) == (2,)
    text = pages[i + 1]
    start = text.index("Academy Securities, Inc.")
    end = text.index("\n", start)
    alone = read_row(text, start, end)
    assert headerless(text, start, end, alone)
    continued = read_continued(pages[i], text, start, end)
    assert continued is not None and [c.column_text for c in continued.cells][2] == \
        "Principal Amount of 2055 Notes to be Purchased"
    assert all(h.pages_back == 1 and pages[i][h.start:h.end] == h.text for h in continued.headers)
    # titles that are not alike, or not as many as the cells, give no column
    assert not row_at("Revenue\nof the year\nStores\nopen\nWidgets 10 20\n", "Widgets").mapped


@needs_more
def test_titles_under_the_periods_repeated_once_per_period_split_its_columns():
    """"2023 2022" over "In Millions Dollars Percent of Total Dollars Percent of Total": the line between the column
    line and the rows repeats its titles once per period (a title: a capitalised word and the words joining it), so
    four cells are each period's "Dollars" and "Percent of Total", also in a row printing no "%"; quarters printed as
    rows ("Fourth quarter 30.62 25.25 24.41 18.19" under "2016 2015" / "High Low High Low") are the quarter asked."""
    row = filing_row("GENERALMILLS_2023_annualreport", "Segment Operating Profit", "Pet 445.5 11 470.6 13")
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("445.5", "2023 Dollars"), ("11", "2023 Percent of Total"), ("470.6", "2022 Dollars"),
        ("13", "2022 Percent of Total")]
    assert any(h.text.startswith("In Millions Dollars Percent of Total") for h in row.headers)
    assert row.unit is not None and row.unit.text == "In Millions"
    rnd = filing_row("JOHNSON_JOHNSON_2018_10K", "Research and development expense by segment",
                        "Total research and development expense $ 10,775")
    assert [c.column_text for c in rnd.cells][:2] == ["2018 Amount", "2018 % of Sales**"]
    price = filing_row("MGMRESORTS_2016_10K", "High Low High Low", "Fourth quarter 30.62")
    assert [c.column_text for c in price.cells] == ["2016 High", "2016 Low", "2015 High", "2015 Low"]
    assert asked_cells(price, ("2016",), quarter=True, which=4) == (0, 1)
    assert asked_cells(price, ("2016",), quarter=True, which=3) == () and asked_cells(price, ("2016",)) == ()
    # titles that do not repeat once per period split nothing, nor titles alike ("Value Value Value Value" under
    # "Carrying Fair Carrying Fair"), nor a repeated line under titles wrapped over lines ("Employee Related Employee
    # Related" over "Asset-Related and" / "Other Total": more columns than it names)
    text = "2023 2022\nDollars Percent Share\nPet 1 2 3 4\n"
    assert not row_at(text, "Pet").mapped
    assert not row_at("2023 2022\nValue Value Value Value\nDebt 1 2 3 4\n", "Debt").mapped
    wrapped = filing_row("3M_2021_10K", "Employee Related Employee Related", "Safety and Industrial 30")
    assert not wrapped.mapped


@needs_more
def test_titles_printed_under_the_column_line_and_a_lead_in_naming_the_period():
    """"Three Months Ended April 30," / "2023 2022 2023 2022" / "With Fuel Fuel Impact": the titles printed right
    under the column line, none above it, tell apart the periods' repeats as titles over them do; the sentence
    leading into the table ("... for the three months ended April 30, 2023 and 2022, were as follows:") is no
    header, though it names a group."""
    row = filing_row("WALMART_2024Q1_10Q", "With Fuel Fuel Impact", "Sam's Club 4.6 %")
    assert [(c.text, c.column_text) for c in row.cells] == [
        ("4.6 %", "With Fuel, 2023"), ("17.4 %", "With Fuel, 2022"), ("(3.0)%", "Fuel Impact, 2023"),
        ("6.9 %", "Fuel Impact, 2022")]
    assert not any("were as follows" in h.text for h in row.headers)
    assert asked_cells(row, ("2023",)) == (0, 2)
