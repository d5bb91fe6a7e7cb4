"""The PostgreSQL backend makes a query's lexemes in the daemon (search.tsqueries: the words' stems, text.stems, read
as the server's parser and the `jsonl_english` configuration read them, text.lexemes), not with phraseto_tsquery on
the server. They must be what the server makes of the same stems, or a phrase would match nothing: checked against
the suite's own server for every distinct stem of real filings, phrases of their pages, generated tokens where
PostgreSQL's parser splits a run of letters and digits ("12e3x": the number "12e3", then "x") or skips a token
(2,047 bytes or more), and the index's own tsvectors of real pages."""

from __future__ import annotations

import itertools
import random

import pytest

from jsonl_engine.store.postgres import search, text
from jsonl_engine.store.postgres.text import MAX_LEXEME, PRIVATE, STEM_CHAR, lexemes, stems
from tests.support.sql import sql

MAX_POSITION = 16383  # a tsvector's last position (later tokens share it)
MAX_POSITIONS = 255  # the positions a tsvector keeps of one lexeme in a row


def _server(store, texts: list[str]) -> list[str]:
    """phraseto_tsquery of each text on the store's server, as text."""
    rows = sql(store, f"SELECT phraseto_tsquery('{text.CONFIG}', q)::text FROM unnest(%s::text[]) WITH ORDINALITY"
                      " AS t(q, i) ORDER BY i", (texts,))
    return [r[0] for r in rows]


def _as_server_text(q: search.Tsq) -> str:
    """A Tsq written as phraseto_tsquery's output: 'a' <-> 'b', a gap of n positions <n>."""
    out = []
    for i, (lex, at) in enumerate(zip(q.lexemes, q.offsets, strict=True)):
        if i:
            gap = at - q.offsets[i - 1]
            out.append("<->" if gap == 1 else f"<{gap}>")
        out.append("'" + lex.replace("'", "''") + "'")
    return " ".join(out)


def _tsq(written: list[str]) -> search.Tsq:
    found = tuple(lexemes(written))
    return search.Tsq(found, tuple(range(len(found))))


def _same_as_server(store, phrases: list[list[str]]) -> int:
    """Assert the daemon's Tsq of each list of written stems is the server's phraseto_tsquery of them joined; the
    number of phrases the server split a stem of (a check that the cases are there)."""
    server = _server(store, [" ".join(p) for p in phrases])
    split = 0
    for written, theirs in zip(phrases, server, strict=True):
        mine = _tsq(written)
        assert _as_server_text(mine) == theirs, written
        split += len(mine.lexemes) > len([w for w in written if len(w) < MAX_LEXEME])
    return split


@pytest.fixture(scope="module")
def dev_pages(pg_dev_kb) -> list[tuple[int, str]]:
    """Every page of the dev KB: (rowid, text)."""
    return [(r[0], r[1]) for r in sql(pg_dev_kb, "SELECT rowid, text FROM pages ORDER BY rowid")]


def test_every_stem_of_real_filings_is_the_servers_lexeme(pg_dev_kb, dev_pages) -> None:
    """Each distinct stem of the dev filings' pages, alone, and the pages' stems in phrases of 8 (every stem in
    the context of its page) give the server's lexemes and offsets."""
    written = stems([t for _, t in dev_pages])
    distinct = sorted({s for page in written for s in page})
    assert len(distinct) > 5000
    assert any(c.isdigit() for s in distinct for c in s)
    _same_as_server(pg_dev_kb, [[s] for s in distinct])
    windows = [page[i:i + 8] for page in written for i in range(0, len(page), 8)]
    _same_as_server(pg_dev_kb, windows)
    assert len(windows) > 10_000


def test_generated_tokens_the_parser_splits_or_skips_are_the_servers_lexemes(pg_dev_kb) -> None:
    """Every run of up to 6 of "0", "1", "e", "x" (numbers, a scientific number ended by a letter, twice), and
    longer mixes: leading zeros, long digit runs, tokens around the 2,047-byte limit, the index's placeholders of
    private-use and non-ASCII characters after a number, each alone and in phrases."""
    tokens = ["".join(t) for n in range(1, 7) for t in itertools.product("01ex", repeat=n)]
    rnd = random.Random(28)
    tokens += ["".join(rnd.choice("0123456789eeeabz") for _ in range(rnd.randint(3, 24))) for _ in range(3000)]
    tokens += ["007", "000e000x", "00e1", "0e0x", "12e3x", "1e10q", "1e2e3x", "9" * 40, "9" * 40 + "e" + "9" * 40 + "k",
               "1e5" + PRIVATE.format(0xE000), "12e3" + STEM_CHAR.format(0x2153), PRIVATE.format(0xF0B7),
               STEM_CHAR.format(0xDF), "x" + "1e5" * 5]
    for n in (MAX_LEXEME - 1, MAX_LEXEME, MAX_LEXEME + 1):
        tokens += ["7" * n, "a" * n, "1e5" + "b" * (n - 3), "1e5" + "b" * n]
    split = _same_as_server(pg_dev_kb, [[t] for t in tokens])
    assert split > 500
    rnd.shuffle(tokens)
    _same_as_server(pg_dev_kb, [tokens[i:i + 7] for i in range(0, len(tokens), 7)])
    # and from the phrase's words, through the stemmer: accents, a symbol font's bullet, a fraction, numbers
    phrases = [("12e3x", "of", "1e10q"), ("café", "\uf0b7", "½", "1e5"), ("running", "1990s", "0x1f"), ("%",), ()]
    made = search.tsqueries(phrases)
    server = _server(pg_dev_kb, [" ".join(stems([" ".join(p)])[0]) for p in phrases])
    assert [_as_server_text(made[p]) for p in phrases] == server
    assert made[("12e3x", "of", "1e10q")].lexemes == ("12e3", "x", "of", "1e10", "q") and made[("%",)].lexemes == ()


def test_the_index_tsvectors_of_real_pages_are_the_lexemes_at_their_positions(pg_dev_kb, dev_pages) -> None:
    """What the daemon makes of a page's stems (its lexemes, one position each, from 1) is the page's tsvector in
    the index (to_tsvector of the same stems at ingest): the same lexemes at the same positions (those PostgreSQL
    keeps: at most 255 a lexeme, none past 16,383)."""
    vectors: dict[int, dict[str, list[int]]] = {}
    for rowid, lexeme, positions in sql(pg_dev_kb, "SELECT p.rowid, u.lexeme, u.positions FROM pages p,"
                                                   " unnest(p.tsv) u"):
        vectors.setdefault(rowid, {})[lexeme] = list(positions)
    checked = 0
    for (rowid, _), written in zip(dev_pages, stems([t for _, t in dev_pages]), strict=True):
        made = lexemes(written)
        if len(made) >= MAX_POSITION:
            continue
        expected: dict[str, list[int]] = {}
        for at, lex in enumerate(made, 1):
            expected.setdefault(lex, []).append(at)
        assert vectors.get(rowid, {}) == {lex: at[:MAX_POSITIONS] for lex, at in expected.items()}, rowid
        checked += 1
    assert checked > 300
