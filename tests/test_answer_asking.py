"""How analysts ask for a figure and how filings print it (issue 24), on real filings (shared/financebench-more),
each rule checked to fail without it: a span of years the question names is a row of a schedule of payments; a
whole year asked in so many words is no quarter's column; a footnote sending the reader elsewhere is no answer;
words saying an item is held ("sitting on") name no item when the question names its own; "products" after a
category a table prints without it."""

from __future__ import annotations

import pytest

from tests.support.answer_lines import answered
from tests.support.shared import MORE, needs_more

FILINGS = ["KRAFTHEINZ_2020_10K", "PEPSICO_2023Q2_EARNINGS", "PEPSICO_2019_10K", "WALMART_2024Q1_10Q"]


@pytest.fixture(scope="module")
def filings(tmp_path_factory):
    from jsonl_engine.store import open_store
    from tests.support.kb import ingest_named

    assert MORE is not None
    store = ingest_named(open_store(tmp_path_factory.mktemp("asking_kb")), MORE, FILINGS)
    yield store
    store.close()


def test_the_spans_of_years_a_question_names():
    from jsonl_engine.answer.order import asked_ranges, asks_full_year

    assert asked_ranges("How much will Acme pay out in benefits over 2026-2030?") == (("2026", "2030"),)
    assert asked_ranges("... in 2029 through 2033 ...") == (("2029", "2033"),)
    assert asked_ranges("... for 2026–30?") == (("2026", "2030"),)
    assert asked_ranges("What did Acme earn in 2023?") == ()
    assert asks_full_year("What full-year 2023 EPS did Acme's guidance point to in Q2?")
    assert asks_full_year("What was revenue for the full year?")
    assert not asks_full_year("What was revenue in the first quarter of fiscal year 2024?")


@needs_more
def test_a_span_of_years_asked_is_the_row_a_schedule_of_payments_prints_for_it(filings):
    """"over 2026-2030": the expected benefit payments' row labelled "2026-2030" leads, not the "Benefits paid" rows
    of the funded status table whose label holds more of the question's words."""
    out = answered(filings, "KRAFTHEINZ_2020_10K", "How much does Kraft Heinz expect its non-U.S. pension plans to "
                   "pay out in benefits over 2026-2030?")
    assert out.claims[0].text.split() == ["2026-2030", "1,176", "454"]
    assert "a row for the asked period 2026-2030" in out.first_claim["why"]


@needs_more
def test_a_whole_year_asked_is_no_quarters_column(filings):
    """"full-year 2023 core EPS ... when it reported the second quarter": the release's second-quarter columns are
    not the asked period (the quarter names the report): the guidance's sentence is read before that row."""
    out = answered(filings, "PEPSICO_2023Q2_EARNINGS", "What full-year 2023 core EPS did PepsiCo's raised guidance "
                   "point to when it reported the second quarter?")
    at = next(i for i, c in enumerate(out.claims) if "$7.47" in c.text)
    row = next(i for i, c in enumerate(out.claims) if c.text.startswith("Core EPS $2.09"))
    assert at < row


@needs_more
def test_a_footnote_sending_the_reader_elsewhere_does_not_lead(filings):
    """The release's footnote "1 Please refer to the Glossary for the definitions of non-GAAP financial measures ...
    PepsiCo's full-year 2023 financial guidance" names the asked year and guidance, but states no figure of it: the
    guidance's own sentence leads."""
    from jsonl_engine.answer.order import points_elsewhere

    assert points_elsewhere("1 Please refer to the Glossary for the definitions of non-GAAP measures.")
    assert points_elsewhere("See Note 7 for the Notes' terms.") and points_elsewhere("(a) Refer to Item 7.")
    assert not points_elsewhere("Seeking to grow, Acme sold 12 stores.")
    out = answered(filings, "PEPSICO_2023Q2_EARNINGS", "What full-year 2023 core EPS did PepsiCo's raised guidance "
                   "point to when it reported the second quarter?")
    assert "$7.47" in out.claims[0].text


@needs_more
def test_sitting_on_names_no_item_when_the_question_names_its_own(filings):
    """"How much inventory was Acme sitting on": the balance sheet's inventories row leads, not its cash row (what
    "sitting on" alone asks for)."""
    out = answered(filings, "PEPSICO_2019_10K", "How much inventory was PepsiCo sitting on at the close of its 2019 "
                   "fiscal year?")
    assert out.claims[0].text.split() == ["Inventories", "3,338", "3,128"]


@needs_more
def test_products_after_a_category_names_the_row_printed_without_it(filings):
    """"sell in health and wellness products": the merchandise category row "Health and wellness" under the
    segment's net sales by category leads, not the segment's total net sales row."""
    out = answered(filings, "WALMART_2024Q1_10Q", "How much did Walmart's Sam's Club sell in health and wellness "
                   "products in the first quarter of fiscal 2024?")
    assert out.claims[0].text.split() == ["Health", "and", "wellness", "1,156", "1,010"]
    assert "its label names the asked line item" in out.first_claim["why"]
