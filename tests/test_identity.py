"""Document identity beyond SEC forms (issue 23): kinds with a confidence, titles a person can tell apart, the
fiscal calendar of quarterly reports, routing that decides on one document or the latest period, one-period
synthesis, and rankings that do not depend on the order documents arrived in.

The shared non-filing documents (`shared/library-kinds`) are read as a new library would be: by content, under
neutral names; their kind groups come from the labels file beside them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jsonl_engine.identity import titles
from jsonl_engine.identity.card import derive
from jsonl_engine.identity.route import parse_periods, period_fit
from jsonl_engine.ingest.pdf import _headline, _info, _pages, choose_title, open_pdf
from jsonl_engine.ingest.sync import ingest_paths, ingest_text
from jsonl_engine.retrieval import retrieve
from jsonl_engine.store import Card, DocumentInfo, open_store

SHARED = Path(__file__).resolve().parents[2] / "shared"
KINDS = SHARED / "library-kinds"
KIND_OF_GROUP = {"protocol": "clinical protocol", "accident": "accident report", "agency": "government report"}


def _labels() -> list[dict]:
    if not (KINDS / "labels.jsonl").exists():
        pytest.skip("shared/library-kinds is not beside the repository")
    return [json.loads(line) for line in (KINDS / "labels.jsonl").read_text().splitlines() if line.strip()]


def _card_of(path: Path) -> Card:
    """The card ingest would derive for `path` under a neutral name (first pages only: fast)."""
    doc = open_pdf(str(path))
    try:
        info = _info(doc, str(path))
        pages = _pages(doc, str(path), 0, min(8, info.page_count))
    finally:
        doc.close()
    neutral = "/lib/3f9a0c1d2b7e4a55.pdf"
    return derive([p.text for p in pages], choose_title(neutral, info, pages), "3f9a0c1d2b7e4a55", _headline(pages))


@pytest.fixture(scope="module")
def kinds_cards() -> list[tuple[dict, Card]]:
    return [(label, _card_of(KINDS / "pdfs" / label["file"])) for label in _labels()]


def test_documents_that_are_not_filings_get_a_kind_that_says_what_they_are(kinds_cards) -> None:
    right = [c.kind == KIND_OF_GROUP[lab["kind_group"]] for lab, c in kinds_cards]
    assert sum(right) >= 0.9 * len(right), [(lab["file"], c.kind) for lab, c in kinds_cards]
    for _lab, card in kinds_cards:
        assert card.kind and card.kind_confidence is not None and 0 < card.kind_confidence <= 1
        if card.kind == "document":  # the generic kind is said with a low confidence
            assert card.kind_confidence <= 0.3


def test_titles_name_the_document_and_are_distinct_across_the_library(kinds_cards) -> None:
    infos = [DocumentInfo(document_id=f"d{i:02d}", title=c.title, path=None, media_type="application/pdf", pages=1,
                          sections=1, status="approved", ingested_at="", sha256=f"{i:064x}", card=c)
             for i, (_lab, c) in enumerate(kinds_cards)]
    groups: dict[str, list[DocumentInfo]] = {}
    for info in infos:
        groups.setdefault(titles.base_name(info), []).append(info)
    final = {}
    for group in groups.values():
        final.update(titles.distinguish(group))
    assert len(set(final.values())) == len(final)
    for (lab, card), info in zip(kinds_cards, infos, strict=True):
        title = final[info.document_id]
        assert "pages]" not in title and not title.lower().startswith(("table of contents", "page "))
        # only a document whose pages say nothing (a scan without text) falls back on its (neutral) file name
        assert "3f9a0c1d2b7e4a55" not in title or card.kind == "document"
        if lab["kind_group"] == "accident":  # siblings of one publisher: the report number tells them apart
            assert any(i.split(":")[-1].strip() in title for i in lab["identifiers"]), title
        if lab["kind_group"] == "agency" and lab["year"] and "Performance" in lab["official_title"]:
            assert str(lab["official_title"][-4:]) in title, title


def _ten_q(end: str, span_lines: list[str], extra: str = "") -> list[str]:
    cover = ("UNITED STATES\nSECURITIES AND EXCHANGE COMMISSION\nWashington, D.C. 20549\nFORM 10-Q\n"
             "QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934\n"
             f"For the quarterly period ended {end}\nCommission File Number 1-1234\nACME WIDGETS HOLDINGS, INC.\n"
             "(Exact name of registrant as specified in its charter)\n")
    return [cover, "CONDENSED CONSOLIDATED STATEMENTS OF INCOME\n" + "\n".join(span_lines) + "\n" + extra]


@pytest.mark.parametrize(("end", "spans", "extra", "quarter", "year"), [
    # a fiscal year from July to June: the September quarter is the first of the year ending next June
    ("September 30, 2023", ["Three Months Ended September 30,"], "", 1, 2024),
    # a 52/53-week year ending late January: the July quarter is the second of the year ending next January
    ("July 29, 2023", ["Three Months Ended Six Months Ended"], "", 2, 2024),
    # a year ending late September: the December quarter is the first of the next fiscal year
    ("December 30, 2022", ["Three Months Ended December 30, 2022"], "", 1, 2023),
    # a calendar year
    ("June 30, 2023", ["Three Months Ended Six Months Ended June 30,"], "", 2, 2023),
    # the filing's own words win over the computed year (a year named by the one it began in)
    ("October 29, 2022", ["Thirteen weeks ended Thirty-nine weeks ended"],
     "Sales in the third quarter of fiscal 2022 declined.", 3, 2022),
    # months since the fiscal year it names as last closed, with that year's own name
    ("April 30, 2023", ["Three Months Ended April 30,"],
     'Annual Report on Form 10-K for the fiscal year ended January 31, 2023 ("fiscal 2023").', 1, 2024),
])
def test_quarterly_report_fiscal_quarter_and_year(end, spans, extra, quarter, year) -> None:
    card = derive(_ten_q(end, spans, extra))
    assert card.kind == "10-Q"
    assert (card.fiscal_quarter, card.fiscal_year) == (quarter, year), card


def test_a_named_quarter_matches_fiscal_labels_and_calendar_periods() -> None:
    periods = parse_periods("What was revenue in Q3 2023?")
    fiscal = Card(kind="10-Q", fiscal_quarter=3, fiscal_year=2023, period_end="2023-03-31")
    calendar = Card(kind="10-Q", fiscal_quarter=1, fiscal_year=2024, period_end="2023-09-30")
    other = Card(kind="10-Q", fiscal_quarter=2, fiscal_year=2024, period_end="2023-12-31")
    assert period_fit(fiscal, periods, None)[0] == 1.0
    assert 0.5 < period_fit(calendar, periods, None)[0] < 1.0
    assert period_fit(other, periods, None)[0] < 0.5


def _ten_q_text(end: str, quarter_words: str, revenue: str) -> str:
    return "\n".join(_ten_q(end, [f"{quarter_words} Ended {end}"])) + (
        f"\nNet revenue for the quarter was {revenue} million, driven by widget sales.\n")


def test_latest_quarter_and_a_named_quarter_route_to_one_report(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kb")
    ids = {}
    for end, words, revenue in (("March 31, 2023", "Three Months", "$410"), ("June 30, 2023", "Six Months", "$420"),
                                ("September 30, 2023", "Nine Months", "$430"),
                                ("March 31, 2022", "Three Months", "$390")):
        out = ingest_text(store, _ten_q_text(end, words, revenue), f"q {end}")
        ids[end] = out.document_id
    ingest_text(store, "Gardening notes. Tomatoes like sun and widgets like revenue.", "Notes")

    latest = retrieve(store, "What was Acme Widgets net revenue in the most recent quarter?", limit=5)
    assert latest.routed[0]["document_id"] == ids["September 30, 2023"], latest.routed
    assert "most recent" in latest.routed[0]["why"]

    named = retrieve(store, "What was Acme Widgets net revenue in Q2 2023?", limit=5)
    assert named.routed[0]["document_id"] == ids["June 30, 2023"] and named.routed[0]["decided"]
    assert {p.document_id for p in named.passages} == {ids["June 30, 2023"]}

    compared = retrieve(store, "How did Acme Widgets net revenue change between Q1 2022 and Q1 2023?", limit=5)
    assert not any(r["decided"] for r in compared.routed)


def test_titles_of_siblings_gain_and_lose_their_distinguishing_part(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kb")
    (tmp_path / "n1.txt").write_text("Weekly notes\n\nThe widget line ran two shifts.\n")
    (tmp_path / "n2.txt").write_text("Weekly notes\n\nThe widget line ran three shifts.\n")
    [a] = ingest_paths(store, [str(tmp_path / "n1.txt")])
    assert store.document(a.document_id).title == "Weekly notes"
    [b] = ingest_paths(store, [str(tmp_path / "n2.txt")])
    ta, tb = store.document(a.document_id).title, store.document(b.document_id).title
    assert (ta, tb) == ("Weekly notes (n1.txt)", "Weekly notes (n2.txt)")  # a sibling arrived: nothing else differs
    from jsonl_engine.identity.titles import base_name, retitle

    removed = store.remove(b.document_id)
    retitle(store, {base_name(removed)})  # as kb.remove does
    assert store.document(a.document_id).title == "Weekly notes"


def _rankings(store, questions: list[str]) -> list[list[tuple]]:
    out = []
    for q in questions:
        found = retrieve(store, q, limit=10)
        out.append([(p.document_id, p.page_start, p.page_end, round(p.score, 9)) for p in found.passages])
    return out


def test_the_same_files_in_any_order_give_identical_titles_and_rankings(tmp_path: Path) -> None:
    files = [KINDS / "pdfs" / name for name in ("20080108X00029.pdf", "20080108X00031.pdf", "20080111X00040.pdf",
                                                "NCT06159946_Prot_000.pdf")]
    files += [SHARED / "financebench-dev" / "pdfs" / name for name in ("AMCOR_2022_8K_dated-2022-07-01.pdf",
                                                                       "PEPSICO_2023_8K_dated-2023-05-05.pdf")]
    if not all(f.exists() for f in files):
        pytest.skip("shared documents are not beside the repository")
    neutral = tmp_path / "files"
    neutral.mkdir()
    paths = []
    for i, f in enumerate(files):
        target = neutral / f"{(i * 7919) % 1000:03d}.pdf"
        shutil.copyfile(f, target)
        paths.append(str(target))
    questions = ["What was the probable cause of the accident in Panama?", "Where did the Cessna 210 accident happen?",
                 "What is the grant number of the smart faucet study?", "What did Amcor announce in July 2022?",
                 "What did PepsiCo report in May 2023?"]
    one = open_store(tmp_path / "kb1")
    ingest_paths(one, paths)
    two = open_store(tmp_path / "kb2")
    for path in reversed(paths):  # another order, one document per batch
        ingest_paths(two, [path])
    titles_one = sorted((d.document_id, d.title) for d in one.documents())
    titles_two = sorted((d.document_id, d.title) for d in two.documents())
    assert titles_one == titles_two
    assert len({t for _d, t in titles_one}) == len(titles_one)
    assert _rankings(one, questions) == _rankings(two, questions)


def test_synthesis_keeps_to_the_named_period_and_says_when_it_cannot(tmp_path: Path) -> None:
    from jsonl_engine.answer.synthesize import synthesize

    store = open_store(tmp_path / "kb")
    ids = {}
    for end, words, revenue in (("March 31, 2023", "Three Months", "$410"), ("June 30, 2023", "Six Months", "$420")):
        ids[end] = ingest_text(store, _ten_q_text(end, words, revenue), f"q {end}").document_id
    one = synthesize(store, "What was Acme Widgets net revenue in Q2 2023?")
    assert one.claims and {c.document_id for c in one.claims} == {ids["June 30, 2023"]} and not one.warnings
    assert "$420" in one.answer and "$410" not in one.answer
    missing = synthesize(store, "What was Acme Widgets net revenue in Q4 2023?")
    assert missing.warnings and missing.warnings[0].startswith("other_period: no document covers")
    both = synthesize(store, "How did Acme Widgets net revenue change between Q1 2023 and Q2 2023?")
    assert not both.warnings  # a comparison reads every period it names


def test_a_search_within_documents_never_returns_a_document_between_them(tmp_path: Path) -> None:
    """Rowid windows of the named documents once merged across the rows of a document ingested between them, whose
    pages then came back from a search "within" the others (rankings changed with the ingest order)."""
    from jsonl_engine.retrieval.query import parse

    store = open_store(tmp_path / "kb")
    first = ingest_text(store, "Widget margins rose in the first year of the plan.", "One").document_id
    between = ingest_text(store, "Widget margins widget margins widget margins, everywhere.", "Two").document_id
    last = ingest_text(store, "Widget margins fell in the second year of the plan.", "Three").document_id
    with store.snapshot():
        scope = store.scope(None, ("approved",))
        hits = store.search_pages(parse("widget margins").phrases, scope, 10, within=[first, last])
    assert {h.document_id for h in hits} == {first, last} and between not in {h.document_id for h in hits}
