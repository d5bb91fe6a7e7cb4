"""Document cards (issue 12): derived at ingest from generated and real filings, filled by the migration for a KB
written before cards existed, set by users (meta at ingest, kb.update) and winning over derived values; routing of
the periods, kinds and entities a query names."""

from __future__ import annotations

import sqlite3
from datetime import date
from pathlib import Path

import pytest

from jsonl_engine.identity.card import derive, fill_missing
from jsonl_engine.identity.route import card_matches, entity_scores, parse_periods, period_fit
from jsonl_engine.ingest.sync import ingest_paths, ingest_text
from jsonl_engine.store import Card, open_store
from tests.support.daemon import Daemon


def _cover_pdf(path: Path, lines: list[str], *, meta_title: str | None = None, pages: int = 2) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    if meta_title is not None:
        pdf.set_title(meta_title)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 11)
    for line in lines:
        pdf.cell(0, 7, line, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    for i in range(pages - 1):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Item {i + 1}. Business. The company makes widgets and sells them worldwide. " * 8)
    pdf.output(str(path))


SEC_COVER = ["UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "Washington, D.C. 20549", "FORM 10-K",
             "(Mark One)", "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934",
             "For the fiscal year ended January 31, 2019", "Commission File Number 1-1234",
             "ACME WIDGETS HOLDINGS, INC.", "(Exact name of registrant as specified in its charter)",
             "Delaware 12-3456789"]


def test_card_from_a_generated_cover_without_metadata(tmp_path: Path) -> None:
    path = tmp_path / "x1.pdf"
    _cover_pdf(path, SEC_COVER)
    store = open_store(tmp_path / "kb")
    [out] = ingest_paths(store, [str(path)])
    doc = store.document(out.document_id)
    card = doc.card
    assert card is not None and card.kind == "10-K" and card.entities == ["Acme Widgets Holdings, Inc."]
    assert card.period_end == "2019-01-31" and card.fiscal_year == 2019
    assert doc.title == "Acme Widgets Holdings, Inc., 10-K, fiscal year 2019 (period ended 2019-01-31)"
    assert "(Mark One)" not in doc.title and "Pursuant" not in doc.title


def test_boilerplate_first_lines_never_title_and_metadata_counts(tmp_path: Path) -> None:
    path = tmp_path / "x2.pdf"
    _cover_pdf(path, ["(Mark One)", "Table of Contents", "FORM 8-K", "CURRENT REPORT",
                      "Date of Report (Date of earliest event reported): March 3, 2021",
                      "(Exact name of registrant as specified in its charter)"],
               meta_title="Form 8-K for Northwind Traders Corp filed 03/05/2021")
    store = open_store(tmp_path / "kb")
    [out] = ingest_paths(store, [str(path)])
    card = store.document(out.document_id).card
    assert card.kind == "8-K" and card.report_date == "2021-03-03" and card.filed == "2021-03-05"
    assert card.entities == ["Northwind Traders Corp"]
    assert card.title == "Northwind Traders Corp, 8-K (dated 2021-03-03; filed 2021-03-05)"


COVER = ("UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-K\n"
         "ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
         "For the fiscal year ended January 29, 2022\nCommission File No. 1-10299\n")


def test_capitals_on_the_cover_become_the_name_as_the_text_writes_it() -> None:
    body = "Best Buy sells consumer electronics. Best Buy was founded in 1966."
    card = derive([COVER + "BEST BUY CO., INC.\n(Exact name of registrant as specified in its charter)\n", body])
    assert card.entities == ["Best Buy Co., Inc."]  # "BUY" is written "Buy" in the text: a word, not an acronym
    card = derive([COVER + "AMC NETWORKS INC.\n(Exact name of registrant as specified in its charter)\n",
                   "The company operates cable channels."])
    assert card.entities == ["AMC Networks Inc."]  # never written otherwise: an acronym


def test_a_52_53_week_year_closing_in_early_january_is_the_year_before() -> None:
    cover = COVER.replace("January 29, 2022", "January 3, 2016")
    card = derive([cover + "JOHNSON & JOHNSON\n(Exact name of registrant as specified in its charter)\n"])
    assert (card.fiscal_year, card.period_end) == (2015, "2016-01-03")
    assert card.title == "Johnson & Johnson, 10-K, fiscal year 2015 (period ended 2016-01-03)"
    assert derive([COVER]).fiscal_year == 2022  # a retailer's year closing at the end of January: its own year


def test_names_from_metadata_are_tidied() -> None:
    assert derive([COVER + "NIKE, Inc .\n(Exact name of registrant as specified in its charter)\n"]).entities == \
        ["NIKE, Inc."]
    assert derive([COVER], "Form 10-K for Foot Locker INC filed 03/27/2023").entities == ["Foot Locker Inc"]


def test_a_logo_cover_takes_the_name_from_the_next_pages_never_a_part_heading() -> None:
    pages = [COVER + "(Exact name of registrant as specified in its charter)\nNew York 13-3513936\n",
             "TABLE OF CONTENTS\nPART I\nItem 1. Business 1\nItem 1A. Risk Factors 4\n",
             "CAUTIONARY NOTE REGARDING FORWARD-LOOKING STATEMENTS\nThis report includes forward-looking statements.",
             "PART I\nItem 1. Business\nGeneral\nThe retailer Foot Locker, Inc., incorporated in 1989, leads its "
             "market; Foot Locker, Inc. and its subsidiaries operate stores in 28 countries."]
    card = derive(pages, "PART I")
    assert card.entities == ["Foot Locker, Inc."] and card.title.startswith("Foot Locker, Inc., 10-K, fiscal year 2022")
    assert derive(pages[:3], "PART I").title == "10-K, fiscal year 2022 (period ended 2022-01-29)"  # no name: no heading


def test_a_document_of_no_known_kind_keeps_its_heading_title() -> None:
    card = derive(["Quarterly Gardening Notes\nTomatoes like sun."], "Quarterly Gardening Notes")
    assert card.title == "Quarterly Gardening Notes"
    assert card.kind == "document" and card.kind_confidence is not None and card.kind_confidence <= 0.3  # generic, unsure


def test_release_and_quarter_cards() -> None:
    release = derive(["Exhibit 99.1\nContoso Reports Second Quarter Fiscal 2024 Results\n"
                      "REDMOND, Wash., Aug. 1, 2023 - Contoso Ltd. (NYSE: CTS) today reported results."])
    assert release.kind == "earnings release" and release.entities == ["Contoso Ltd."]
    assert (release.fiscal_quarter, release.fiscal_year) == (2, 2024)
    quarterly = derive(["FORM 10-Q\nQUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d)\n"
                        "For the quarterly period ended December 31, 2022\nFABRIKAM PLC\n"
                        "(Exact name of registrant as specified in its charter)",
                        "Balance sheet compared with the fiscal year ended June 30, 2022.\n"
                        "Three Months Ended December 31, 2022 Six Months Ended December 31, 2022"])
    assert quarterly.kind == "10-Q" and (quarterly.fiscal_quarter, quarterly.fiscal_year) == (2, 2023)


@pytest.mark.parametrize(("name", "kind", "year", "entity_word"), [
    ("3M_2022_10K", "10-K", 2022, "3m"),
    ("AMCOR_2023Q2_10Q", "10-Q", 2023, "amcor"),
    ("AMCOR_2022_8K_dated-2022-07-01", "8-K", 2022, "amcor"),
    ("PEPSICO_2022_10K", "10-K", 2022, "pepsico"),
])
def test_cards_of_dev_filings(dev_pdfs: Path, tmp_path: Path, name: str, kind: str, year: int,
                              entity_word: str) -> None:
    store = open_store(tmp_path / "kb")
    [out] = ingest_paths(store, [str(dev_pdfs / f"{name}.pdf")])
    card = store.document(out.document_id).card
    assert card.kind == kind and card.fiscal_year == year
    assert entity_word in card.title.lower() and kind in card.title and str(year) in card.title


def test_migration_fills_cards_of_a_kb_written_before_cards(tmp_path: Path) -> None:
    kb = tmp_path / "kb"
    store = open_store(kb)
    out = ingest_text(store, "\n".join(SEC_COVER) + "\n\nItem 1. Business\nWidgets.", "(Mark One)")
    store.close()
    conn = sqlite3.connect(kb / "kb.sqlite3")  # back to the version 2 schema, as the previous engine wrote it
    conn.executescript("UPDATE documents SET title = '(Mark One)'; ALTER TABLE documents DROP COLUMN card;"
                       "ALTER TABLE documents DROP COLUMN meta; DROP INDEX documents_title;"
                       "ALTER TABLE documents DROP COLUMN statements; DROP TABLE page_words;"
                       "ALTER TABLE documents DROP COLUMN ocr_pages; DROP TABLE term_stats;"
                       "DROP TABLE term_phrases; DROP TABLE section_refs;"
                       "DELETE FROM schema_migrations WHERE version >= 3;")
    conn.close()
    with Daemon(kb_dir=kb) as d:
        [doc] = d.result("kb.documents", {})["documents"]
        assert doc["document_id"] == out.document_id and doc["card"]["kind"] == "10-K"
        assert doc["title"].startswith("Acme Widgets Holdings, Inc., 10-K, fiscal year 2019")
    store = open_store(kb)
    assert fill_missing(store) == 0


def test_user_meta_wins_and_survives_rederivation(kb_location: Path | str) -> None:
    kb = kb_location
    with Daemon(kb_dir=kb) as d:
        [res] = [e["data"] for e in d.request("kb.ingest", {
            "text": "\n".join(SEC_COVER), "title": "cover", "meta": {"entities": ["Acme"], "fiscal_year": 2018}})
            if e["event"] == "result"]
        doc_id = res["document_id"]
        [doc] = d.result("kb.documents", {"entity": "acme", "fiscal_year": 2018})["documents"]
        assert doc["card"]["entities"] == ["Acme"] and doc["meta"] == {"entities": ["Acme"], "fiscal_year": 2018,
                                                                       "title": "cover"}
        assert doc["title"] == "cover"  # an inline text's title is the user's
        assert doc["card"]["kind"] == "10-K" and doc["meta"]["title"] == "cover"
        updated = d.result("kb.update", {"document_id": doc_id, "meta": {"title": "Acme annual 2018"}})
        assert updated["title"] == "Acme annual 2018" and updated["card"]["title"] == "Acme annual 2018"
        assert d.result("kb.documents", {"kind": "10-Q"})["documents"] == []
        cleared = d.result("kb.update", {"document_id": doc_id, "meta": {"title": None}})
        assert cleared["title"].startswith("Acme Widgets Holdings") and "title" not in cleared["meta"]
    store = open_store(kb)
    store.update_document(doc_id, card=derive(["FORM 10-Q\nFor the quarterly period ended March 31, 2020"], "x"))
    doc = store.document(doc_id)
    assert doc.card.entities == ["Acme"] and doc.card.fiscal_year == 2018 and doc.card.kind == "10-Q"


@pytest.mark.parametrize(("query", "years", "quarter", "dates", "latest", "kinds"), [
    ("3M's FY2018 capital expenditure", (2018,), None, (), False, ()),
    ("revenue in fiscal 2018", (2018,), None, (), False, ()),
    ("restructuring as of Q2 of FY2023", (2023,), 2, (), False, ()),
    ("debt in 2022", (2022,), None, (), False, ()),
    ("cash as of December 31, 2021", (), None, (date(2021, 12, 31),), False, ()),
    ("sales in the first quarter", (), 1, (), False, ()),
    ("the most recent 10-K", (), None, (), True, ("10-K",)),
    ("the 8k filing dated 1st July 2022", (), None, (date(2022, 7, 1),), False, ("8-K",)),
])
def test_periods_named_by_queries(query, years, quarter, dates, latest, kinds) -> None:
    p = parse_periods(query)
    assert (p.years, p.quarter, p.dates, p.latest, p.kinds) == (years, quarter, dates, latest, kinds)


def _card(kind: str, fy: int, fq: int | None = None, end: str | None = None) -> Card:
    return Card(title="t", kind=kind, entities=["Acme Corp"], fiscal_year=fy, fiscal_quarter=fq, period_end=end)


def test_fiscal_calendar_fit() -> None:
    fy18 = parse_periods("FY2018 capex")
    # the filing for the named year first; the next year's 10-K (its comparatives) after it; older ones last
    fits = {fy: period_fit(_card("10-K", fy), fy18, 2020)[0] for fy in (2017, 2018, 2019, 2020)}
    assert fits[2018] > fits[2019] > fits[2020] and fits[2018] > fits[2017]
    q2 = parse_periods("Q2 of FY2024")  # a fiscal year ending in January: Q2 of fiscal 2024 ends in July 2023
    assert period_fit(_card("10-Q", 2024, 2, "2023-07-29"), q2, 2024)[0] == 1.0
    assert period_fit(_card("10-Q", 2024, 1), q2, 2024)[0] < 0.5
    dated = parse_periods("as of December 31, 2021")
    assert period_fit(_card("10-K", 2021, None, "2021-12-31"), dated, 2022)[0] == 1.0
    recent = parse_periods("Acme's most recent filing")
    assert period_fit(_card("10-K", 2022), recent, 2022)[0] > period_fit(_card("10-K", 2019), recent, 2022)[0]


def test_entities_weighted_by_rarity() -> None:
    cards = {"a": Card(entities=["American Express Company"]), "b": Card(entities=["American Water Works, Inc."]),
             "c": Card(entities=["MGM Resorts International"]), "d": Card(entities=["JPMorgan Chase & Co."])}
    assert set(entity_scores("American Express' tax rate in 2022", cards)) == {"a"}
    assert set(entity_scores("MGM's interest coverage", cards)) == {"c"}
    assert set(entity_scores("the VaR of JPM in 2023", cards)) == {"d"}
    assert entity_scores("what is the american dream", cards) == {}
    assert card_matches(cards["b"].merged({}), entity="american water") and not card_matches(cards["a"], kind="10-K")


def test_a_comparison_of_years_targets_the_latest() -> None:
    compared = parse_periods("Has the debt increased between 2022 and the 2021 fiscal period?")
    assert compared.compares and compared.target == 2022  # the 2022 filing reports 2021 as comparatives
    assert parse_periods("Did margins improve from FY2021 to FY2022?").target == 2022
    assert parse_periods("FY2021 revenue as reported in 2022").target == 2021  # no comparison: the fiscal year


def test_joined_initials_name_a_company_with_an_ampersand() -> None:
    cards = {"a": Card(entities=["Johnson & Johnson"]), "b": Card(entities=["Procter & Gamble Company"]),
             "c": Card(entities=["Johnson Controls International plc"]), "d": Card(entities=["Advanced Micro Devices"])}
    for query in ("Which segment of JnJ will be discontinued?", "J&J cash proceeds in 2023", "JNJ revenue"):
        assert set(entity_scores(query, cards)) == {"a"}, query
    assert set(entity_scores("P&G net sales", cards)) == {"b"}
    assert entity_scores("What is the CNN ROA and EPS?", cards) == {}  # capitals, but no name's initials
    assert entity_scores("JJ revenue", cards) == {}  # no joiner: too short to say which name


def _annual_filing(path: Path, year: int, sentence: str) -> None:
    cover = [line.replace("January 31, 2019", f"December 31, {year}") for line in SEC_COVER]
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 11)
    for line in cover:
        pdf.cell(0, 7, line, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", "", 10)
    for item in ("1. Business", "1A. Risk Factors", "2. Properties", "3. Legal Proceedings"):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Item {item}. The company makes widgets and sells them worldwide. " * 6)
    pdf.add_page()
    pdf.multi_cell(0, 6, "Item 7. Results of Operations. " + sentence + " Widgets were shipped from two plants.")
    pdf.output(str(path))


def test_synthesize_takes_claims_from_the_filing_of_the_named_year_first(tmp_path: Path) -> None:
    """Two annual filings of one company with the same kind of sentence: a query naming a year gets its first
    claims from that year's filing (routing, as kb.context); a query naming no period ranks as before."""
    from jsonl_engine.answer.synthesize import compose, synthesize
    from jsonl_engine.retrieval import answer_terms, retrieve

    _annual_filing(tmp_path / "a.pdf", 2019, "Revenue for the year was $120 million.")
    _annual_filing(tmp_path / "b.pdf", 2020, "Total revenue was $150 million in fiscal 2020, compared with "
                                             "total revenue of $120 million in fiscal 2019.")
    store = open_store(tmp_path / "kb")
    by_year = {}
    for out in ingest_paths(store, [str(tmp_path / "a.pdf"), str(tmp_path / "b.pdf")]):
        by_year[store.document(out.document_id).card.fiscal_year] = out.document_id
    assert set(by_year) == {2019, 2020}

    for year in (2019, 2020):
        query = f"What was Acme Widgets total revenue in fiscal {year}?"
        found = retrieve(store, query, limit=5)
        assert found.period_documents == [by_year[year]]
        result = synthesize(store, query)
        assert result.claims and result.claims[0].document_id == by_year[year], (year, result.answer)
    # the query names one filing by issuer and year: routing decides, and every passage comes from it (the FY2020
    # filing's comparative sentence about fiscal 2019 is not offered)
    query = "What was Acme Widgets total revenue in fiscal 2019?"
    found = retrieve(store, query, limit=5)
    assert found.routed[0]["decided"] and found.routed[0]["document_id"] == by_year[2019]
    assert found.passages and {p.document_id for p in found.passages} == {by_year[2019]}

    query = "What was Acme Widgets total revenue?"  # no period: as before (no preference)
    found = retrieve(store, query, limit=5)
    assert found.period_documents == []
    before = compose(query, answer_terms(query), found.passages[:5], max_chars=4000)
    assert synthesize(store, query) == before
    store.close()


def test_pages_holding_finds_pages_without_ranking(kb_location: Path | str, tmp_path: Path) -> None:
    """The store's unranked filter (statement cues read only the pages it returns), on both backends."""
    from jsonl_engine.identity import statements as cues

    _annual_filing(tmp_path / "a.pdf", 2019, "Consolidated Statements of Cash Flows 2019 2018 120 110 45 40 7 8")
    _annual_filing(tmp_path / "b.pdf", 2020, "Revenue for the year was $150 million.")
    store = open_store(kb_location)
    a, b = (o.document_id for o in ingest_paths(store, [str(tmp_path / "a.pdf"), str(tmp_path / "b.pdf")]))
    assert store.pages_holding([("results", "of", "operations")], [b, a]) == sorted([(a, 6), (b, 6)])
    assert store.pages_holding([("cash", "flows"), ("no", "such", "words")], [a, b]) == [(a, 6)]
    assert store.pages_holding([("cash", "flows")], [b]) == []
    assert store.pages_holding([("cash", "flows")], []) == []
    # statement pages: judged at ingest, stored per document, read back (the same as judging again)
    assert store.statement_pages([a, b, "absent"]) == {a: {6: cues.CASH_FLOW}, b: {}}
    assert cues.judge(store, a) == {6: cues.CASH_FLOW} and cues.judge(store, b) == {}
    assert cues.statement_pages(store, [a, b]) == {a: {6: cues.CASH_FLOW}, b: {}}
    store.close()


def test_statement_pages_filled_for_documents_stored_before(kb_location: Path | str, tmp_path: Path) -> None:
    """A KB written before statement pages were kept (NULL) gets them on open (statements.fill_missing), both backends."""
    from jsonl_engine.errors import NotFound
    from jsonl_engine.identity import statements as cues

    _annual_filing(tmp_path / "a.pdf", 2019, "Consolidated Statements of Cash Flows 2019 2018 120 110 45 40 7 8")
    store = open_store(kb_location)
    (a,) = (o.document_id for o in ingest_paths(store, [str(tmp_path / "a.pdf")]))
    with store.transaction() as tx:  # as an older engine left it
        tx._conn.run("UPDATE documents SET statements = NULL")
    assert store.statement_pages([a]) == {a: None}
    assert cues.statement_pages(store, [a]) == {a: {6: cues.CASH_FLOW}}  # judged when not stored
    assert cues.fill_missing(store) == 1
    assert store.statement_pages([a]) == {a: {6: cues.CASH_FLOW}}
    assert cues.fill_missing(store) == 0
    with pytest.raises(NotFound):
        store.update_document("absent", statement_pages={})
    store.close()
