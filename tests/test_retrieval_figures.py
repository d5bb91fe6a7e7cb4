"""Scoped retrieval for figure questions, on whole real filings: a statement page does not fill the first passages
with its weakly matching sections (the other pages restating its figures get a place), a question about product
categories reads the table of each segment's share of revenue, a question about the main customers reads the business
description naming the "principal customers"."""

from __future__ import annotations

import pytest

from jsonl_engine.retrieval import rank, retrieve
from jsonl_engine.retrieval.query import parse
from jsonl_engine.retrieval.weights import SPREAD_SECTION, W_SAME_PAGE
from jsonl_engine.store import Store
from tests.test_answer_rules import MORE, filing_kb, needs_more

SELECTED = "LOCKHEEDMARTIN_2018_10K"  # "ITEM 6. Selected Financial Data" p. 23; the income statement p. 58 in sections
SEGMENTS = "PEPSICO_2017_10K"  # "Net Revenue % of Total Net Revenue" per division, p. 4 (Item 1)
PRINCIPAL = "LOCKHEEDMARTIN_2016_10K"  # "... with our principal customers being agencies of the U.S. Government", p. 3


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory):
    if MORE is None:
        pytest.skip("the FinanceBench filings (shared/financebench-more) are absent")
    store = filing_kb(tmp_path_factory.mktemp("retrieval_figures"), SELECTED, SEGMENTS, PRINCIPAL)
    yield store
    store.close()


def passages(store: Store, doc: str, query: str, limit: int = 5):
    return retrieve(store, query, document_ids=[store.doc_ids[doc]], limit=limit).passages  # type: ignore[attr-defined]


def _candidate(name: str, pages: tuple[int, int], section: float, score: float) -> rank.Candidate:
    return rank.Candidate(id=name, document_id="d", title=name, path=[], page_start=pages[0], page_end=pages[1],
                          section=section, score=score, best=pages[0])


def _ranked() -> list[rank.Candidate]:
    weak = SPREAD_SECTION / 2
    out = [_candidate("statement rows", (5, 5), 0.9, 0.90), _candidate("statement title", (5, 5), weak, 0.85),
           _candidate("segment table", (5, 5), 0.8, 0.84), _candidate("summary page", (7, 7), 0.9, 0.70),
           _candidate("chapter", (9, 20), 0.9, 0.95), _candidate("page under the chapter", (12, 12), weak, 0.60),
           _candidate("other page's rows", (14, 14), 0.9, 0.58), _candidate("other page's title", (14, 14), weak, 0.57),
           _candidate("title block", (2, 2), 0.9, 0.56), _candidate("block over two pages", (2, 3), weak, 0.55)]
    return sorted(out, key=lambda c: -c.score)


def test_a_pages_weakly_matching_sections_step_aside_for_other_pages():
    out = rank.spread(_ranked())
    # a weak section on a page a better one shows already steps down, on any page; a section matching on its own keeps
    # its place, and so does a weak one reaching a page not shown yet (p. 3); a chapter spanning many pages covers none
    assert [c.id for c in out] == ["chapter", "statement rows", "segment table", "summary page",
                                   "page under the chapter", "other page's rows", "title block",
                                   "block over two pages", "statement title", "other page's title"]
    assert out[-2].score == round(0.85 - W_SAME_PAGE, 6) and out[-1].score == round(0.57 - W_SAME_PAGE, 6)
    assert [c.score for c in out] == sorted((c.score for c in out), reverse=True)


def _among_the_first(kb: Store, document: str, query: str, page: int) -> None:
    found = passages(kb, document, query)
    assert any(p.page_start <= page <= p.page_end for p in found), [(p.page_start, p.title) for p in found]


@needs_more
def test_a_statement_page_does_not_fill_the_first_passages(kb: Store):
    # the question's words lift the income statement (p. 58) and the note restating it (p. 72), split into sections
    # ("Cost of sales", the statement's title, "Earnings per common share") that rank by their page: three of the
    # first five passages were on p. 58; the selected financial data the question names (p. 23) was not among them
    query = ("What was Lockheed Martin's FY2018 operating margin (operating profit / net sales)? Answer in percent, "
             "rounded to one decimal place, from the selected financial data.")
    _among_the_first(kb, SELECTED, query, 23)


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
    _among_the_first(kb, SEGMENTS, query, 4)


@needs_more
def test_main_customers_are_read_where_the_filing_names_its_principal_customers(kb: Store):
    # "... with our principal customers being agencies of the U.S. Government. In 2016, 71% of our $47.2 billion in
    # net sales were from the U.S. Government" (p. 3) was not among the first five passages (the segment note was)
    found = passages(kb, PRINCIPAL, "Who are the primary customers of Lockheed Martin as of FY2016?")
    assert any(p.page_start <= 3 <= p.page_end and "principal customers" in p.text for p in found), \
        [(p.page_start, p.title) for p in found]
