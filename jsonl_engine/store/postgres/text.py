"""Text as the index sees it, the same way SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer does: runs
of letters, digits and private-use characters (its token categories `L* N* Co`), lowercased, without diacritics
(`tokens`). The index holds their stems as FTS5's own tokenizer makes them (`stems`, since migration 11), written
in ASCII letters and digits, space-separated: PostgreSQL's parser keeps each whole, so it numbers the same
positions FTS5 does (its own parser would split "1.5" or "10-K" its own way, and takes a private-use character,
a symbol font's bullet, for a blank), and the `jsonl_english` configuration keeps them as written.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

CONFIG = "jsonl_english"
# letters lowercased, digits kept, any other ASCII character a space; bytes of UTF-8 sequences (>= 0x80) kept
_ASCII = bytes(c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 or c >= 128 else 32
               for c in range(256))
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
PRIVATE = "zzco{:x}zz"  # a private-use character as the index holds it (a token or part of one)


def _private(c: str) -> bool:
    return unicodedata.category(c) == "Co"


def tokens(text: str) -> list[str]:
    """The runs of alphanumeric characters (`[^\\W_]+`) of the text decomposed (NFD), without combining marks,
    lowercased. Done with a byte table over the ASCII characters and one replace per other character (few kinds
    in a text) rather than a regular expression and a lookup per character: the same tokens, several times
    faster (ingest tokenizes every page and section)."""
    if not text.isascii():
        text = _replace(unicodedata.normalize("NFD", text), unicodedata.combining, "")
        # lowered after: it may add characters (a dotted capital I becomes i and a combining dot)
        text = _replace(text.lower(), lambda c: not c.isalnum() and not _private(c), " ")
        if not text.isascii():
            text = _replace(text, _private, lambda c: PRIVATE.format(ord(c)))
    return text.encode().translate(_ASCII).decode().split()


def _replace(text: str, chosen: Callable[[str], Any], by: str | Callable[[str], str]) -> str:
    """`text` with each non-ASCII character for which `chosen` is true replaced by `by` (or `by(c)`) (tried once
    per kind)."""
    at = 0
    m = _NON_ASCII.search(text)
    while m:
        c = m.group()
        if chosen(c):
            new = by if isinstance(by, str) else by(c)
            text = text.replace(c, new)
            at = m.start() + len(new)
        else:
            at = m.end()
        m = _NON_ASCII.search(text, at)
    return text


# A stem's character that is not ASCII, as the index holds it: PostgreSQL's parser keeps ASCII letters and digits
# in one token whatever the server's locale, and takes some others (a symbol font's bullet, "½") for blanks.
STEM_CHAR = "zzu{:x}zz"


def _written(stem: str) -> str:
    return stem if stem.isascii() else _NON_ASCII.sub(lambda m: STEM_CHAR.format(ord(m.group())), stem)


def stems(texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens stemmed as the SQLite index holds them, by FTS5's own tokenizer (`porter unicode61
    remove_diacritics 2`, store/sqlite/terms.tokenize: the SQLite library's Porter, which leaves words under three
    bytes as they are and stems "-logy" and "-bly" as Porter's C code does, where PostgreSQL's snowball dictionaries
    do not), each written in ASCII letters and digits (STEM_CHAR); the `jsonl_english` configuration keeps them as
    they are (`simple`, migration 11). One token each of `tokens`' (FTS5's count), at the same positions."""
    from jsonl_engine.store.sqlite import terms

    return [[_written(s) for s in found] for found in terms.tokenize(texts)]


# PostgreSQL's default parser, which to_tsvector reads the stems with, keeps a run of ASCII letters and digits whole
# but for one case: digits, "e", digits (a number in scientific notation, its `sfloat`) ended by a letter are two
# tokens, the number and the rest ("12e3x": "12e3", "x"), the rest whole (a run that starts with a letter is one
# `asciiword` or `numword`); and it skips a token of MAX_LEXEME bytes or more (parsetext's MAXSTRLEN) without a
# position. The `simple` dictionary keeps each token as it is (lowercase already).
_SCIENTIFIC = re.compile(r"[0-9]+e[0-9]+(?=[a-z])")
MAX_LEXEME = 2047


def lexemes(written: Sequence[str]) -> list[str]:
    """The lexemes, one position each, in order, that the `jsonl_english` configuration makes of these written
    stems (space-separated, as the index's tsvectors were made of them): what phraseto_tsquery gives for them,
    made here without the server (tests/test_store_pgtsq.py checks both agree)."""
    out: list[str] = []
    for stem in written:
        m = _SCIENTIFIC.match(stem)
        for part in (stem,) if m is None else (m.group(), stem[m.end():]):
            if len(part) < MAX_LEXEME:
                out.append(part)
    return out


# A token that no query phrase holds, after the title and ancestor fields: PostgreSQL numbers the positions of
# concatenated fields on, so without it a phrase could match across two fields (FTS5 matches within one).
FIELD_END = " zzjsonlfieldend"


def section_words(title: str, ancestors: str, text: str) -> tuple[int, str, str, str]:
    """A section's token count (BM25's length: its three fields') and its fields as to_tsvector reads them (title
    A, ancestors B, text C; the first two ended by FIELD_END)."""
    t_title, t_anc, t_text = stems([title, ancestors, text])
    return (len(t_title) + len(t_anc) + len(t_text), " ".join(t_title) + FIELD_END, " ".join(t_anc) + FIELD_END,
            " ".join(t_text))
