"""Shared fixtures: the dev filings and a KB built from a few of them once per session; the KB backends.

`kb_location` (a new empty KB: a directory, or a database on the session's own PostgreSQL server) and
`any_dev_kb` run a test once per backend. The PostgreSQL server (tests/support/pg.py) is started on first use
and stopped at the end of the session; without its binaries or the psycopg driver those runs skip.

Re-exports the scripted LLM server fixture `gateway` (tests/support/gateway.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import pg
from tests.support.gateway import gateway  # noqa: F401

BACKENDS = ("sqlite", "postgresql")

DEV_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "financebench-dev"
DEV_KB_DOCS = ("3M_2022_10K", "AMCOR_2023_10K", "PEPSICO_2022_10K", "AMCOR_2022_8K_dated-2022-07-01")


def _dev_dir() -> Path:
    for candidate in (DEV_DIR, Path("/work/shared/financebench-dev")):
        if (candidate / "pdfs").is_dir():
            return candidate
    pytest.skip("the FinanceBench dev filings (../shared/financebench-dev) are not available")


@pytest.fixture(scope="session")
def dev_pdfs() -> Path:
    """The folder of dev filing PDFs (skips the test when absent)."""
    return _dev_dir() / "pdfs"


@pytest.fixture(scope="session")
def dev_questions() -> list[dict]:
    """The dev questions (note: `evidence_page_num` is zero-indexed; the engine's pages are 1-based)."""
    path = _dev_dir() / "questions.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _need_pg(*programs: str) -> None:
    if not pg.driver_available():
        pytest.skip("the psycopg driver is not installed (pip install -e '.[test]')")
    if pg.server_bin() is None or not all((pg.server_bin() / p).exists() for p in programs):
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql)")


@pytest.fixture(scope="session")
def pg_server():
    """The session's PostgreSQL server (started on first use, stopped at the end)."""
    _need_pg()
    with pg.PgServer(in_memory=True) as server:
        yield server


@pytest.fixture(scope="module")
def pg_replica():
    """A PostgreSQL primary of the module's own and a streaming replica of it (`pg.PgReplica`): (primary,
    replica); a database made on the primary appears on the replica."""
    _need_pg("pg_basebackup")
    with pg.PgServer(in_memory=True) as primary, pg.PgReplica(primary) as replica:
        yield primary, replica


def new_kb(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    if backend == "sqlite":
        return tmp_path / "kb"
    return request.getfixturevalue("pg_server").new_database()


@pytest.fixture(params=BACKENDS)
def kb_location(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A new, empty KB on each backend: a directory (SQLite) or a postgresql:// URL."""
    return new_kb(request.param, request, tmp_path)


def _ingest_dev(store, dev_pdfs: Path):
    from tests.support.kb import ingest_named

    return ingest_named(store, dev_pdfs, DEV_KB_DOCS)


@pytest.fixture(scope="session")
def dev_kb(dev_pdfs: Path, tmp_path_factory: pytest.TempPathFactory):
    """A SQLite Store holding DEV_KB_DOCS, ingested once per session with `ingest_paths` (no daemon).

    `dev_kb.doc_ids` maps each doc name (file stem) to its document id.
    """
    from jsonl_engine.store import open_store

    store = _ingest_dev(open_store(tmp_path_factory.mktemp("dev_kb")), dev_pdfs)
    yield store
    store.close()


@pytest.fixture(scope="session")
def pg_dev_kb(dev_pdfs: Path, pg_server):
    """`dev_kb` on the PostgreSQL backend."""
    from jsonl_engine.store import open_store

    store = _ingest_dev(open_store(pg_server.new_database("devkb")), dev_pdfs)
    yield store
    store.close()


@pytest.fixture(params=BACKENDS)
def any_dev_kb(request: pytest.FixtureRequest):
    """`dev_kb` on each backend."""
    return request.getfixturevalue("dev_kb" if request.param == "sqlite" else "pg_dev_kb")


def kb_integrity(store) -> dict[str, int]:
    """Check every invariant of the KB; returns row counts."""
    if getattr(store, "backend", "sqlite") == "postgresql":
        return _pg_integrity(store)
    # the FTS integrity-check is an INSERT: not on a query_only reader; the store's SQLite library (it has the file open)
    from tests.support.sql import sqlite_connect

    conn = sqlite_connect(store.path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    fts = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%fts5%'")]
    assert {"sections_fts", "pages_fts"} <= set(fts)
    for table in fts:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")  # raises when out of sync
    for doc in conn.execute("SELECT id, pages, sections FROM documents").fetchall():
        assert conn.execute("SELECT COUNT(*) FROM pages WHERE document_id = ?", (doc[0],)).fetchone()[0] == doc[1]
        assert conn.execute("SELECT COUNT(*) FROM sections WHERE document_id = ?", (doc[0],)).fetchone()[0] == doc[2]
    orphans = conn.execute("SELECT COUNT(*) FROM sections WHERE document_id NOT IN (SELECT id FROM documents)"
                           " OR (parent_id IS NOT NULL AND parent_id NOT IN (SELECT id FROM sections))").fetchone()[0]
    orphans += conn.execute("SELECT COUNT(*) FROM pages WHERE document_id NOT IN (SELECT id FROM documents)").fetchone()[0]
    assert orphans == 0
    counts = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("documents", "sections", "pages")}
    counts["sections_fts"] = conn.execute("SELECT COUNT(*) FROM sections_fts").fetchone()[0]
    assert counts["sections_fts"] == counts["sections"]
    _sqlite_term_stats(conn)
    _sqlite_section_refs(conn)
    from jsonl_engine.store.types import COVER_PAGES

    covers = conn.execute(f"SELECT COUNT(*) FROM pages WHERE number <= {COVER_PAGES}").fetchone()[0]
    conn.close()
    # count() reads the FTS tables' row counts (their averages records): the rows' counts
    assert (store.count("pages"), store.count("covers")) == (counts["pages"], covers)
    return counts


def _sqlite_section_refs(conn) -> None:
    """section_refs (migration 9) holds each section's REF_COLUMNS, and nothing else: a row per section row."""
    from jsonl_engine.store.repository import REF_COLUMNS
    from jsonl_engine.store.sqlite.store import REF_COLUMNS as STORED

    derived = [tuple(r) for r in conn.execute(f"SELECT {REF_COLUMNS} FROM sections ORDER BY rowid")]
    assert [tuple(r) for r in conn.execute(f"SELECT {STORED} FROM section_refs ORDER BY rowid")] == derived


def _sqlite_term_stats(conn) -> None:
    """The term statistics (store/sqlite/terms.py) are every stored document's counts summed, and no more: a key
    no stored row holds is gone (a removed document's words do not stay in the file)."""
    from collections import Counter

    from jsonl_engine.store.sqlite import terms

    expected: dict[str, Counter] = {}
    for (doc,) in conn.execute("SELECT id FROM documents").fetchall():
        for key, counts in terms.stored(conn, doc).items():
            expected.setdefault(key, Counter()).update(dict(enumerate(counts)))
    kept = {r[0]: tuple(r[1:]) for r in conn.execute("SELECT term, pages, docs, covers, sections FROM term_stats")}
    assert kept == {k: tuple(c[i] for i in range(4)) for k, c in expected.items()}


def _pg_integrity(store) -> dict[str, int]:
    from tests.support.sql import sql

    for doc, pages, sections in sql(store, "SELECT id, pages, sections FROM documents"):
        assert sql(store, "SELECT COUNT(*) FROM pages WHERE document_id = %s", (doc,))[0][0] == pages
        assert sql(store, "SELECT COUNT(*) FROM sections WHERE document_id = %s", (doc,))[0][0] == sections
    orphans = sql(store, "SELECT COUNT(*) FROM sections WHERE document_id NOT IN (SELECT id FROM documents)"
                         " OR (parent_id IS NOT NULL AND parent_id NOT IN (SELECT id FROM sections))")[0][0]
    orphans += sql(store, "SELECT COUNT(*) FROM pages WHERE document_id NOT IN (SELECT id FROM documents)")[0][0]
    assert orphans == 0
    kept = dict(sql(store, "SELECT kind, SUM(n) FROM postings GROUP BY kind"))  # every row's words have postings
    for kind, table, where in (("pages", "pages", "TRUE"), ("covers", "pages", "number <= 2"),
                               ("sections", "sections", "TRUE")):
        held = sql(store, f"SELECT SUM(length(tsv)) FROM {table} WHERE {where}")[0][0]
        assert kept.get(kind) == held, (kind, kept.get(kind), held)
    counts = {t: sql(store, f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("documents", "sections", "pages")}
    counts["sections_fts"] = sql(store, "SELECT COUNT(*) FROM sections WHERE tsv IS NOT NULL")[0][0]
    assert counts["sections_fts"] == counts["sections"]
    # the two-word phrases' statistics (migration 8) are every stored document's counts summed, no zero rows left
    listed = [r[0] for r in sql(store, "SELECT phrase FROM term_phrases ORDER BY phrase")]
    kept = set(sql(store, "SELECT term, pages, docs, covers, sections FROM term_stats WHERE term <> ALL(%s)",
                   (listed,)))
    assert kept == set(sql(store, "SELECT t.term, SUM(t.pages), SUM(t.docs), SUM(t.covers), SUM(t.sections) "
                                  "FROM documents d, term_pairs(d.id) t GROUP BY t.term"))
    _pg_long_phrases(store, listed)
    # the words' statistics (migration 10) are their postings' counts summed, no zero rows left
    kept = set(sql(store, "SELECT lexeme, pages, docs, covers, sections FROM word_stats"))
    assert kept == set(sql(store, "SELECT lexeme, COALESCE(SUM(n) FILTER (WHERE kind = 'pages'), 0), "
                                  "COUNT(*) FILTER (WHERE kind = 'pages'), COALESCE(SUM(n) FILTER (WHERE kind = "
                                  "'covers'), 0), COALESCE(SUM(n) FILTER (WHERE kind = 'sections'), 0) "
                                  "FROM postings GROUP BY lexeme"))
    _pg_recounts(store.url)
    return counts


def _pg_long_phrases(store, listed: list[str]) -> None:
    """The listed long phrases' statistics (migration 9) are the counts the read path makes matching each one on
    its lexemes' postings (search._phrase_count), in every kind; no row left for a phrase no row holds."""
    from jsonl_engine.store.postgres import search
    from tests.support.sql import sql

    kept = {r[0]: tuple(r[1:]) for r in sql(store, "SELECT term, pages, docs, covers, sections FROM term_stats "
                                                   "WHERE term = ANY(%s)", (listed,))}
    counted = {}
    with store.snapshot():
        src = search.Source(store._conn(), None, ())
        for key in listed:
            q = search.Tsq(tuple(key.split(" ")), tuple(range(len(key.split(" ")))))
            pages, covers, sections = (src.read(t, q.lexemes, q.lexemes, None) for t in ("pages", "covers", "sections"))
            n = (search._phrase_count(q, pages, False), search._phrase_count(q, pages, True),
                 search._phrase_count(q, covers, False), search._phrase_count(q, sections, False))
            if any(n):
                counted[key] = n
    assert kept == counted


def _pg_recounts(url: str) -> None:
    """What the store computes at ingest from the rows' tsvectors (store/postgres/indexing.py) equals what the SQL
    of the migrations that introduced it computes from the stored rows: each document's postings as
    write_postings(doc) writes them (rewritten in a transaction rolled back), and text_stats' sums per kind as the
    rows' count and token total."""
    import psycopg

    with psycopg.connect(url) as conn:
        stored = "SELECT kind, lexeme, n, data FROM postings WHERE document_id = %s ORDER BY kind, lexeme"
        for (doc,) in conn.execute("SELECT id FROM documents").fetchall():
            written = conn.execute(stored, (doc,)).fetchall()
            conn.execute("DELETE FROM postings WHERE document_id = %s", (doc,))
            conn.execute("SELECT write_postings(%s)", (doc,))
            assert conn.execute(stored, (doc,)).fetchall() == written, doc
            conn.rollback()
        kept = dict((k, (r, t)) for k, r, t in conn.execute(
            "SELECT kind, SUM(rows), SUM(tokens) FROM text_stats GROUP BY kind HAVING SUM(rows) <> 0").fetchall())
        counted = {k: (r, t) for k, r, t in conn.execute(
            "SELECT 'pages', COUNT(*), SUM(ntok) FROM pages UNION ALL "
            "SELECT 'covers', COUNT(*), SUM(ntok) FROM pages WHERE number <= 2 UNION ALL "
            "SELECT 'sections', COUNT(*), SUM(ntok) FROM sections").fetchall() if r}
        assert kept == counted


# ---------------------------------------------------------------- generated PDFs (fpdf2)

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
BODY = ("Sentence {i} of the {topic} section explains how the company makes and sells widgets, "
        "with figures kept for the record. ")


def _report_pdf(path: Path) -> dict:
    """A small filing-like report. Returns where its headings landed: {title: page}."""
    from fpdf import FPDF

    class Report(FPDF):
        def header(self) -> None:
            self.set_font(family, "", 8)
            self.cell(0, 5, "ACME Holdings plc - Annual Report 2023", align="C")
            self.ln(8)

        def footer(self) -> None:
            self.set_y(-12)
            self.set_font(family, "", 8)
            self.cell(0, 5, f"Page {self.page_no()}", align="C")

    unicode_font = (DEJAVU / "DejaVuSans.ttf").exists() and (DEJAVU / "DejaVuSans-Bold.ttf").exists()
    pdf = Report()
    if unicode_font:
        pdf.add_font("DejaVu", "", str(DEJAVU / "DejaVuSans.ttf"))
        pdf.add_font("DejaVu", "B", str(DEJAVU / "DejaVuSans-Bold.ttf"))
        family = "DejaVu"
        special = "Café Zürich, naïve façade — €1.5 million; Δ margin ≥ 3 %."
    else:
        family = "Helvetica"
        special = "Café Zürich, naïve façade - 1.5 million; margin 3 %."
    pdf.set_auto_page_break(True, margin=18)
    pdf.add_page()
    where: dict[str, int] = {}

    def heading(text: str, size: float, bold: bool = True) -> None:
        pdf.set_font(family, "B" if bold else "", size)
        pdf.ln(3)
        pdf.multi_cell(0, size * 0.55, text)
        pdf.ln(1)
        where[text] = pdf.page_no()

    def body(topic: str, sentences: int) -> None:
        pdf.set_font(family, "", 10)
        text = "".join(BODY.format(i=i, topic=topic) for i in range(1, sentences + 1))
        for k in range(0, sentences, 6):
            chunk = "".join(BODY.format(i=i, topic=topic) for i in range(k + 1, min(k + 7, sentences + 1)))
            pdf.multi_cell(0, 5, chunk)
            pdf.ln(2)
        assert text

    heading("ACME Holdings Annual Report", 22)
    heading("U N I T E D  K I N G D O M", 14)
    pdf.set_font(family, "", 10)
    pdf.multi_cell(0, 5, "This report covers the fiscal year 2023. " + special)
    heading("PART I", 12)
    heading("Item 1. Business", 10)
    body("business", 30)
    heading("Item 7. Management's Discussion and Analysis", 10)
    body("discussion", 90)
    heading("Liquidity and Capital Resources", 10)
    body("liquidity", 24)
    pdf.add_page()
    heading("Item 8. Financial Statements", 10)
    body("statements", 12)
    heading("Note 1 - Basis of Presentation", 10)
    body("basis", 10)
    heading("Note 2 - Revenue", 10)
    body("revenue", 10)
    pdf.output(str(path))
    where["_pages"] = pdf.page_no()
    where["_special"] = special  # type: ignore[assignment]
    return where


def _outline_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 11)
    for chapter in range(1, 4):
        pdf.add_page()
        pdf.start_section(f"Chapter {chapter}", level=0)
        pdf.multi_cell(0, 6, f"Chapter {chapter}\n" + f"Opening words of chapter {chapter}. " * 20, new_x="LMARGIN", new_y="NEXT")
        pdf.start_section(f"Chapter {chapter} details", level=1)
        pdf.multi_cell(0, 6, f"Chapter {chapter} details\n" + f"Detail text of chapter {chapter}. " * 20,
                       new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _plain_pdf(path: Path, *, blank_pages: int = 0, text_pages: int = 1, encrypt: bool = False) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 11)
    for _ in range(blank_pages):
        pdf.add_page()
        pdf.rect(20, 20, 100, 100)  # a drawing, no text: what a scanned page looks like to text extraction
    for i in range(text_pages):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Readable page {i + 1}. " * 30)
    if encrypt:
        pdf.set_encryption(owner_password="owner-secret", user_password="user-secret")
    pdf.output(str(path))


@pytest.fixture(scope="session")
def sample_pdfs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Generated PDFs: report (headings, bold, multi-page sections, non-ASCII), outline (bookmarks),
    encrypted, truncated, not_pdf (a .pdf that is text), scanned (blank pages + text), blank (no text at all).
    Returns {name: Path} plus "report_headings": {heading: page}."""
    root = tmp_path_factory.mktemp("sample_pdfs")
    files: dict = {name: root / f"{name}.pdf" for name in
                   ("report", "outline", "encrypted", "truncated", "not_pdf", "scanned", "blank")}
    files["report_headings"] = _report_pdf(files["report"])
    _outline_pdf(files["outline"])
    _plain_pdf(files["encrypted"], encrypt=True)
    data = files["report"].read_bytes()
    files["truncated"].write_bytes(data[: len(data) * 6 // 10])
    files["not_pdf"].write_text("This is plain text wearing a .pdf name.\n", encoding="utf-8")
    _plain_pdf(files["scanned"], blank_pages=2, text_pages=1)
    _plain_pdf(files["blank"], blank_pages=2, text_pages=0)
    return files
