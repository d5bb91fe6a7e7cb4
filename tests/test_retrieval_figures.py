"""Scoped retrieval for figure questions, on whole real filings: a question about product categories reads the table of
each segment's share of revenue, a question about the main customers reads the business description naming the
"principal customers"."""

from __future__ import annotations

import pytest

from jsonl_engine.retrieval import retrieve
from jsonl_engine.retrieval.query import parse
from jsonl_engine.store import Store
from tests.test_answer_rules import MORE, filing_kb, needs_more

SEGMENTS = "PEPSICO_2017_10K"  # "Net Revenue % of Total Net Revenue" per division, p. 4 (Item 1)
PRINCIPAL = "LOCKHEEDMARTIN_2016_10K"  # "... with our principal customers being agencies of the U.S. Government", p. 3


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    store = filing_kb(tmp_path_factory.mktemp("retrieval_figures"), SEGMENTS, PRINCIPAL)
    yield store
    store.close()


def passages(store: Store, doc: str, query: str, limit: int = 5):
    return retrieve(store, query, document_ids=[store.doc_ids[doc]], limit=limit).passages  # type: ignore[attr-defined]


def test_categories_add_the_phrases_of_revenue_shares_and_customers_the_principal_ones():
    phrases = parse("Are there any product categories that represent more than 20% of revenue?").phrases
    assert ("of", "total", "net", "revenue") in phrases and ("revenue", "category") in phrases
    assert ("of", "total", "net", "revenue") not in parse("What was the total net revenue in 2017?").phrases
    assert ("principal", "customers") in parse("Who are the company's primary customers?").phrases


@needs_more
def test_product_categories_are_read_in_the_table_of_shares_of_revenue(kb: Store):
    # "Our segment net revenue ... and contributions to consolidated net revenue": each division's net revenue and its
    # "% of Total Net Revenue" (p. 4) was not among the first five passages, below the divisions' MD&A pages
    query = ("Are there any product categories / service categories that represent more than 20% of PepsiCo's revenue "
             "for FY2017?")
    found = passages(kb, SEGMENTS, query)
    assert any(p.page_start <= 4 <= p.page_end for p in found), [(p.page_start, p.title) for p in found]


@needs_more
def test_main_customers_are_read_where_the_filing_names_its_principal_customers(kb: Store):
    # "... with our principal customers being agencies of the U.S. Government. In 2016, 71% of our $47.2 billion in
    # net sales were from the U.S. Government" (p. 3) was not among the first five passages (the segment note was)
    found = passages(kb, PRINCIPAL, "Who are the primary customers of Lockheed Martin as of FY2016?")
    assert any(p.page_start <= 3 <= p.page_end and "principal customers" in p.text for p in found), \
        [(p.page_start, p.title) for p in found]
