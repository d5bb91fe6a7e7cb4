"""retrieve() on real SQLite KBs: hostile queries, scope and status filters, determinism, near-duplicates,
heading weights, and ranking cases built from real filings (the session `dev_kb`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jsonl_engine.errors import NotFound
from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.retrieval import retrieve
from jsonl_engine.store import Store, open_store
from tests.conftest import BACKENDS

from .test_retrieval import HOSTILE

BOILER = ("Forward-looking statements in this report involve risks and uncertainties that could cause actual "
          "results to differ materially from those expressed or implied, including changes in demand, pricing "
          "pressure from competitors, the cost of raw materials and energy, currency movements, interest rates, "
          "labour disputes, cyber incidents, new regulation and the outcome of pending litigation. ")

ACME = f"""# Acme Widgets Annual Report 2018

## Business

Acme makes industrial widgets and sells them to manufacturers in Europe and Asia.

## Safe Harbor Statement

{BOILER}Dated March 2019.

## Consolidated Statement of Cash Flows

### Investing activities

Purchases of property, plant and equipment were $1,577 million in FY2018 and $1,373 million in FY2017.

## Risk Factors

Supplier concentration is a risk.

## Cautionary Note

{BOILER}See also page 4.

## Legal Proceedings

Acme is defending a patent lawsuit filed in 2018 by a competitor.

## Marketing

Our marketing team reviews cash flow forecasts for every campaign, and investing in brands matters.
"""

GLOBEX = f"""# Globex Holdings 2022 Review

## Revenue

Net sales reached $9,120 million in 2022, up from $8,400 million in 2021.

## Outlook

Globex expects stable demand.

## Safe Harbor

{BOILER}Dated February 2023.
"""

DRAFT = """# Initech Draft Memo

## Revenue

Initech net sales were $450 million in 2022 according to this unreviewed draft.
"""


@pytest.fixture(scope="module", params=BACKENDS)
def text_kb(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    store = open_store(tmp_path_factory.mktemp("retrieval_kb") if request.param == "sqlite"
                       else request.getfixturevalue("pg_server").new_database())
    ids = {}
    for name, text, status in (("acme", ACME, "approved"), ("globex", GLOBEX, "approved"),
                               ("initech", DRAFT, "draft")):
        outcome = ingest_text(store, text, f"{name} report", "text/markdown", status=status)
        assert outcome.error is None, outcome
        ids[name] = outcome.document_id
    store.ids = ids  # type: ignore[attr-defined]
    yield store
    store.close()


@pytest.mark.parametrize("query", HOSTILE + ["revenue " * 2000, "NEAR(revenue cash, 3)", '"net sales" *'])
def test_hostile_queries_never_raise(text_kb: Store, query: str) -> None:
    for unit in ("section", "page"):
        found = retrieve(text_kb, query, unit=unit)
        assert isinstance(found.passages, list)
        if not found.passages:
            assert found.reason


def test_operator_text_still_finds_its_words(text_kb: Store) -> None:
    found = retrieve(text_kb, 'NEAR("patent" lawsuit*, -2) AND ^competitor')
    assert found.passages and found.passages[0].title == "Legal Proceedings"


def test_no_match_is_a_reason_not_an_error(text_kb: Store) -> None:
    found = retrieve(text_kb, "zeppelin quasar")
    assert found.passages == [] and "no passage" in found.reason
    assert retrieve(text_kb, "!!! ???").reason == "the query has no searchable terms"


def test_scope_and_unknown_documents(text_kb: Store) -> None:
    ids = text_kb.ids  # type: ignore[attr-defined]
    found = retrieve(text_kb, "net sales revenue", document_ids=[ids["globex"]])
    assert found.passages and {p.document_id for p in found.passages} == {ids["globex"]}
    with pytest.raises(NotFound) as err:
        retrieve(text_kb, "net sales", document_ids=[ids["globex"], "0123456789abcdef"])
    assert "0123456789abcdef" in err.value.message
    assert retrieve(text_kb, "net sales", document_ids=[]).passages == []


def test_statuses_gate_what_is_searched(text_kb: Store) -> None:
    ids = text_kb.ids  # type: ignore[attr-defined]
    default = retrieve(text_kb, "Initech net sales")
    assert ids["initech"] not in {p.document_id for p in default.passages}
    drafts = retrieve(text_kb, "Initech net sales", statuses=("draft",))
    assert {p.document_id for p in drafts.passages} == {ids["initech"]}
    assert drafts.passages[0].status == "draft"
    both = retrieve(text_kb, "Initech net sales", statuses=("approved", "draft"))
    assert both.passages[0].document_id == ids["initech"]
    scoped_out = retrieve(text_kb, "net sales", document_ids=[ids["initech"]])  # exists, but not approved
    assert scoped_out.passages == [] and "status" in scoped_out.reason


def test_fiscal_forms_and_figures_match(text_kb: Store) -> None:
    top = retrieve(text_kb, "What was Acme's FY2018 capex?").passages[0]
    assert top.title == "Investing activities" and top.path[-1] == "Consolidated Statement of Cash Flows"
    assert retrieve(text_kb, "$1,577").passages[0].title == "Investing activities"


def test_ancestor_titles_lift_sections_under_a_heading(text_kb: Store) -> None:
    # "Marketing" says "cash flow" and "investing" in its text; the investing section only sits under the
    # cash flow statement heading, and that heading is what the query names.
    found = retrieve(text_kb, "cash flow statement investing")
    assert found.passages[0].title == "Investing activities"


def test_near_duplicate_boilerplate_collapses(text_kb: Store) -> None:
    # three sections (two documents) carry the same safe-harbor paragraph: one comes back, the best scored
    found = retrieve(text_kb, "forward-looking statements risks uncertainties litigation", limit=10)
    boiler = [p for p in found.passages if "Forward-looking statements" in p.text]
    assert len(boiler) == 1, [p.title for p in found.passages]
    assert len({p.section_id for p in found.passages}) == len(found.passages)


def test_deterministic_across_calls_and_connections(text_kb: Store, tmp_path: Path) -> None:
    def snapshot(store: Store) -> list[tuple]:
        return [(p.section_id, p.score, p.snippet, p.page_start) for p in
                retrieve(store, "net sales 2022 revenue cash flow", limit=20).passages]

    first = snapshot(text_kb)
    assert first == snapshot(text_kb)
    other = open_store(getattr(text_kb, "url", None) or text_kb.kb_dir)
    try:
        assert snapshot(other) == first
    finally:
        other.close()
    scores = [s for _, s, _, _ in first]
    assert scores == sorted(scores, reverse=True)
    assert all(round(s, 6) == s for s in scores)


def test_passage_fields(text_kb: Store) -> None:
    ids = text_kb.ids  # type: ignore[attr-defined]
    p = retrieve(text_kb, "patent lawsuit").passages[0]
    assert p.section_id.startswith(ids["acme"] + ":") and p.document_id == ids["acme"]
    assert p.document_title == "acme report"  # the title given at ingest, not the document's H1
    assert p.path == ["Acme Widgets Annual Report 2018"] and p.unit == "section"
    assert p.page_map and p.page_map[0][0] == 0 and "lawsuit" in p.snippet
    assert p.text == "## Legal Proceedings\n\nAcme is defending a patent lawsuit filed in 2018 by a competitor."


# ---------------------------------------------------------------- real filings (session dev_kb)

def _pages(found) -> list[tuple[str, int, int]]:
    return [(p.document_id, p.page_start, p.page_end) for p in found.passages]


def _rank_of(found, doc: str, page: int) -> int | None:
    for rank, (d, start, end) in enumerate(_pages(found), 1):
        if d == doc and start <= page <= end and end - start <= 1:
            return rank
    return None


def test_metric_question_finds_the_statement_page(any_dev_kb) -> None:
    doc = any_dev_kb.doc_ids["3M_2022_10K"]
    # the cash flow statement says "Purchases of property, plant and equipment", never "capex"
    found = retrieve(any_dev_kb, "What was 3M's FY2022 capex?", document_ids=[doc], limit=5)
    assert _rank_of(found, doc, 52) is not None, _pages(found)
    found = retrieve(any_dev_kb, "Has AMCOR's quick ratio improved or declined between FY2023 and FY2022?",
                     document_ids=[any_dev_kb.doc_ids["AMCOR_2023_10K"]], limit=3)
    assert _rank_of(found, any_dev_kb.doc_ids["AMCOR_2023_10K"], 52) is not None, _pages(found)


def test_prose_question_finds_the_section(any_dev_kb) -> None:
    doc = any_dev_kb.doc_ids["PEPSICO_2022_10K"]
    found = retrieve(any_dev_kb, "Has Pepsico reported any materially important ongoing legal battles?",
                     document_ids=[doc], limit=5)
    assert any("Legal Proceedings" in p.title for p in found.passages), [p.title for p in found.passages]


def test_corpus_wide_query_picks_the_named_issuer(any_dev_kb) -> None:
    found = retrieve(any_dev_kb, "What was the key agenda of the AMCOR's 8k filing dated 1st July 2022?", limit=5)
    assert any_dev_kb.doc_ids["AMCOR_2022_8K_dated-2022-07-01"] in {p.document_id for p in found.passages[:3]}
    found = retrieve(any_dev_kb, "What is 3M's FY2022 net sales?", limit=5)
    assert found.passages[0].document_id == any_dev_kb.doc_ids["3M_2022_10K"]


def test_page_unit_returns_whole_pages(any_dev_kb) -> None:
    doc = any_dev_kb.doc_ids["PEPSICO_2022_10K"]
    found = retrieve(any_dev_kb, "PepsiCo total current liabilities balance sheet 2022", document_ids=[doc],
                     unit="page", limit=5)
    top = found.passages[0]
    assert top.unit == "page" and top.page_start == top.page_end == 66
    assert top.section_id == f"{doc}:p66" and top.title == "Page 66" and top.page_map == [(0, 66)]
    stored = any_dev_kb.page(doc, 66).text
    assert top.text == stored
    assert len({p.page_start for p in found.passages}) == len(found.passages)


def test_dev_kb_results_are_deterministic(any_dev_kb) -> None:
    q = "What drove operating margin change as of FY2022 for 3M?"
    a, b = retrieve(any_dev_kb, q, limit=10), retrieve(any_dev_kb, q, limit=10)
    assert [(p.section_id, p.score, p.text) for p in a.passages] == [(p.section_id, p.score, p.text)
                                                                    for p in b.passages]


# Words snowball English (Porter2) and Porter stem apart (proceeds: "proceed" and "proce"; formerly: "former" and
# "formerli"; quarterly, international, common), and words snowball's Porter stems apart from FTS5's (two-letter
# words: "is", "us"; "-logy", "-bly"): PostgreSQL's stems are FTS5's (migration 11), or a query holding one ranks
# other rows on each backend.
STEMMED_APART = ("proceeds from the issuance of long-term debt", "formerly known as", "quarterly dividends declared",
                 "international operations", "common stock repurchases",
                 "what is the technology used by us", "possibly assembly")


def _agree(kbs, query: str, scope) -> None:
    for unit in ("section", "page"):
        got = [[(p.section_id, p.page_start, p.page_end, p.score, p.snippet) for p in
                retrieve(kb, query, document_ids=scope, limit=8, unit=unit).passages] for kb in kbs]
        assert got[0] == got[1], (query, unit)
        assert got[0], (query, unit)  # the words are in the filings: something is found


def test_the_backends_agree_on_the_dev_filings(dev_kb, pg_dev_kb) -> None:
    """Same documents (ids are content hashes), same BM25: the same passages, scores and snippets."""
    doc = dev_kb.doc_ids["PEPSICO_2022_10K"]
    for query, scope in (("What is 3M's FY2022 net sales?", None), ("FY2022 capital expenditure", None),
                         ("PepsiCo total current liabilities balance sheet 2022", [doc]),
                         *((q, None) for q in STEMMED_APART), *((q, [doc]) for q in STEMMED_APART)):
        _agree((dev_kb, pg_dev_kb), query, scope)


# Two filings whose rows have a third's between them (DEV_KB_DOCS is ingested in its order): on SQLite their rowid
# windows are apart, two statements; broad questions matching hundreds of their pages and sections.
APART = ("3M_2022_10K", "PEPSICO_2022_10K")
BROAD = ("net sales operating income cash flow total assets liabilities 2022",
         "What were revenue, costs, expenses and income taxes in 2022 and 2021?")


def _apart(kb) -> list[str]:
    docs = [kb.doc_ids[name] for name in APART]
    if getattr(kb, "backend", "sqlite") == "sqlite":  # the case: each document its own rowid window
        from jsonl_engine.store.sqlite import search

        with kb.snapshot():
            assert len(search.windows(kb._conn(), "pages", docs)) == len(search.windows(
                kb._conn(), "sections", docs)) == 2
    return docs


def test_a_search_of_several_documents_returns_its_best_limit(any_dev_kb) -> None:
    """`limit` rows over all the `within` documents, best first, not `limit` per document or per window: the
    best of a longer search, cut."""
    from jsonl_engine.retrieval.query import parse as parse_query
    from jsonl_engine.retrieval.weights import SECTION_WEIGHTS

    docs = _apart(any_dev_kb)
    scope = any_dev_kb.scope(None, ("approved",))
    for question in BROAD:
        phrases = parse_query(question).phrases
        for limit in (5, 40):
            pages = any_dev_kb.search_pages(phrases, scope, limit, within=docs)
            longer = any_dev_kb.search_pages(phrases, scope, 1000, within=docs)
            assert {h.document_id for h in longer[:2 * limit]} == set(docs)  # both documents match
            assert pages == longer[:limit], (question, limit)
            sections = any_dev_kb.search_sections(phrases, SECTION_WEIGHTS, scope, limit, docs)
            longer_sections = any_dev_kb.search_sections(phrases, SECTION_WEIGHTS, scope, 1000, docs)
            assert {h.section.document_id for h in longer_sections} == set(docs)
            assert sections == longer_sections[:limit], (question, limit)
            assert [h.score for h in sections] == sorted((h.score for h in sections), reverse=True)


def test_the_backends_find_the_same_candidates_in_documents_apart(dev_kb, pg_dev_kb) -> None:
    """A question scoped to two filings, and one naming an issuer across the library: the same pages and
    sections found (in order, with their scores) and the same passages on each backend."""
    from jsonl_engine.retrieval.stages.candidates import gather
    from jsonl_engine.retrieval.stages.parse import parse as parse_ask
    from jsonl_engine.retrieval.stages.route import route

    def found(kb, question: str, scope):
        with kb.snapshot():
            ask = parse_ask(question, kb.scope(scope, ("approved",)), limit=8, unit="section")
            got = gather(kb, ask, route(kb, ask))
        return got.pages, [(h.section.section_id, h.score) for h in got.sections], got.focus

    docs = _apart(dev_kb)
    assert docs == _apart(pg_dev_kb)
    for question, scope in (*((q, docs) for q in BROAD), ("What were PepsiCo's and 3M's net sales, operating "
                                                         "income, cash flow and total assets in 2022?", None)):
        sqlite_found, pg_found = found(dev_kb, question, scope), found(pg_dev_kb, question, scope)
        assert len(sqlite_found[1]) > 0 and len(sqlite_found[0]) > 0
        assert sqlite_found == pg_found, question
        _agree((dev_kb, pg_dev_kb), question, scope)


@pytest.fixture(scope="module")
def bullet_kbs(dev_pdfs: Path, pg_server, tmp_path_factory: pytest.TempPathFactory):
    """A filing whose bullets are a symbol font's private-use characters (U+F0B7), on each backend."""
    from tests.support.kb import ingest_named

    names = ["BESTBUY_2024Q2_10Q"]
    stores = [ingest_named(open_store(tmp_path_factory.mktemp("bullets")), dev_pdfs, names),
              ingest_named(open_store(pg_server.new_database("bullets")), dev_pdfs, names)]
    yield stores
    for store in stores:
        store.close()


def test_the_backends_agree_on_pages_with_private_use_bullets(bullet_kbs) -> None:
    """FTS5 counts a private-use character as a token: PostgreSQL's rows hold as many tokens (the mean lengths,
    so every score, agree), and the words stemmed apart rank alike there too."""
    import unicodedata

    sqlite_kb, pg_kb = bullet_kbs
    (doc,) = sqlite_kb.doc_ids.values()
    texts = [sqlite_kb.page(doc, n).text for n in range(1, sqlite_kb.document(doc).pages + 1)]
    assert any(unicodedata.category(c) == "Co" for t in texts for c in t)  # the filing holds such bullets
    for query in ("net revenue", "store closures and restructuring", "comparable sales decline", *STEMMED_APART):
        for scope in (None, [doc]):
            _agree(bullet_kbs, query, scope)


def test_caches_follow_the_kb_when_documents_come_and_go(kb_location) -> None:
    store = open_store(kb_location)
    try:
        first = ingest_text(store, "# Alpha\n\n## Widgets\n\nAlpha sells widgets.\n", "alpha", "text/markdown")
        assert retrieve(store, "gadgets").passages == []  # "gadgets" is now known to be absent
        store.remove(first.document_id)
        second = ingest_text(store, "# Beta\n\n## Gadgets\n\nBeta sells gadgets.\n", "beta", "text/markdown")
        found = retrieve(store, "gadgets")
        assert found.passages and found.passages[0].document_id == second.document_id
        assert retrieve(store, "widgets").passages == []
    finally:
        store.close()
