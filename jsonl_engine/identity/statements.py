"""A document's financial-statement pages: which pages hold the income statement, balance sheet or cash flow
statement (table pages whose head names the statement and whose lines are mostly figures), judged once at
ingest (`save`) and stored; `retrieval/cues.py` says which statements a query needs.
"""

from __future__ import annotations

import re

from jsonl_engine.store import Store

INCOME, BALANCE, CASH_FLOW = "income", "balance", "cash_flow"

_HEADS = (
    (CASH_FLOW, re.compile(r"statements? of (?:consolidated )?cash flows?\b|\bcash flows? statements?\b")),
    (BALANCE, re.compile(r"\bbalance sheets?\b|statements? of (?:consolidated )?financial (?:position|condition)\b"
                         r"|statements? of condition\b")),
    (INCOME, re.compile(r"statements? of (?:consolidated )?(?:income|operations|earnings)\b"
                        r"|\bincome statements?\b|statements? of (?:profit|loss)\b")),
)
# Index phrases every head above holds (each alternative starts its phrase and ends on a word boundary, so the
# words are whole): the pages of a document that may be a statement are found in the index, and only those are
# read.
HEAD_PHRASES: tuple[tuple[str, ...], ...] = (
    ("cash", "flow"), ("cash", "flows"), ("balance", "sheet"), ("balance", "sheets"),
    ("financial", "position"), ("financial", "condition"), ("of", "condition"),
    ("of", "income"), ("of", "operations"), ("of", "earnings"),
    ("consolidated", "income"), ("consolidated", "operations"), ("consolidated", "earnings"),
    ("income", "statement"), ("income", "statements"), ("of", "profit"), ("of", "loss"),
)

# Changing these changes the statement pages of documents judged afterwards only; stored ones keep theirs.
HEAD_CHARS = 400
# A page's first characters in which a statement's head must be named. Trades: heads below a long letterhead
# against a contents page naming the statements. Chosen: not measured (f2244bd).
HEAD_TEXT = 3000
# Characters of a page read to count its figures. Trades: a statement's whole first screen against time per
# page judged. Chosen: not measured (54514cc).
MIN_NUMERIC = 0.25
# Share of a page's tokens that are figures on a statement page. Trades: statements with long labels against
# contents and note pages that name a statement. Chosen: not measured (f2244bd).

_TOKEN = re.compile(r"\(?\$?-?[\d][\d,.]*\)?|[^\W\d_]+")
_SPACE = re.compile(r"\s+")


_HEAD_WORDS = ("cash", "balance", "financial", "condition", "income", "operations", "earnings", "profit", "loss")


def _head_kind(head: str) -> str | None:
    """The statement a page's first HEAD_CHARS characters name, else None."""
    head = head[:HEAD_CHARS].lower()
    if not any(w in head for w in _HEAD_WORDS):  # every head names one of these words (a cheap first test)
        return None
    head = _SPACE.sub(" ", head)
    return next((kind for kind, pattern in _HEADS if pattern.search(head)), None)


def head_kind(title: str) -> str | None:
    """The statement a title names ("Consolidated Statements of Cash Flows (Unaudited)" -> cash flow), else None."""
    return _head_kind(title)


def _mostly_figures(text: str) -> bool:
    tokens = _TOKEN.findall(text[:HEAD_TEXT])
    numeric = sum(1 for t in tokens if t[0].isdigit() or t[0] in "($-")
    return bool(tokens) and numeric / len(tokens) >= MIN_NUMERIC


def statement_kind(text: str) -> str | None:
    """The primary statement a page holds, judged by its head and its share of figures, else None."""
    kind = _head_kind(text)
    return kind if kind is not None and _mostly_figures(text) else None


def judge(store: Store, document_id: str) -> dict[int, str]:
    """The statement pages of a document (page number -> kind): the pages carrying a head's words somewhere
    (found in the index) whose head names a statement and whose text is mostly figures; every other page holds
    none."""
    candidates = [p for p in store.pages_holding(HEAD_PHRASES, [document_id]) if p[0] == document_id]
    heads = store.page_texts(candidates, HEAD_CHARS) if candidates else {}
    named = {p: kind for p in candidates if p in heads and (kind := _head_kind(heads[p])) is not None}
    texts = store.page_texts(sorted(named), HEAD_TEXT) if named else {}
    return {p[1]: kind for p, kind in named.items() if p in texts and _mostly_figures(texts[p])}


def save(store: Store, document_id: str) -> None:
    """Judge a document's statement pages once and store them (at ingest)."""
    store.update_document(document_id, statement_pages=judge(store, document_id))


def fill_missing(store: Store) -> int:
    """Judge and store the statement pages of the documents stored before they were kept (schema < 4); returns
    how many were filled."""
    ids = [d.document_id for d in store.documents()]
    missing = [d for d, kinds in store.statement_pages(ids).items() if kinds is None]
    for document_id in missing:
        save(store, document_id)
    return len(missing)


def statement_pages(store: Store, document_ids: list[str]) -> dict[str, dict[int, str]]:
    """document id -> its statement pages (page number -> kind), stored once per document (judged here when a
    document has none stored yet), kept in the store's cache: every other page's statement kind is None."""

    def find(missing: list[str]) -> dict[str, dict[int, str]]:
        stored = store.statement_pages(missing)
        return {d: kinds if (kinds := stored.get(d)) is not None else judge(store, d) for d in missing}

    return store.memo_many("statement-pages", document_ids, find)
