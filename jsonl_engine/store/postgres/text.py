"""Text as the index sees it, the same way SQLite's FTS5 `unicode61 remove_diacritics 2` tokenizer does: runs
of letters and digits, lowercased, without diacritics. PostgreSQL's parser gets these tokens space-separated,
so it numbers the same positions FTS5 does (its own parser would also split "1.5" or "10-K" its own way), and
the `jsonl_english` configuration stems them (snowball English; FTS5 uses Porter: the two agree on most words).
"""

from __future__ import annotations

import re
import unicodedata

CONFIG = "jsonl_english"
_TOKEN = re.compile(r"[^\W_]+")


def tokens(text: str) -> list[str]:
    if not text.isascii():
        text = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return _TOKEN.findall(text.lower())


def words(text: str) -> str:
    """The text as the index tokenizes it, one space between tokens."""
    return " ".join(tokens(text))
