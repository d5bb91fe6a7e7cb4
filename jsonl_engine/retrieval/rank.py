"""Fuse the section and page BM25 rankings (and a document prior when searching many documents).

Each signal is normalised by its best value in the candidate set, so weights mean the same for any query
length. Ties break by section id, so the order is a pure function of the KB and the query.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

W_SECTION = 0.45
W_PAGE = 0.55
W_DOC = 0.35
DOC_TOP_PAGES = 3


@dataclass(slots=True)
class Candidate:
    rowid: int
    id: str
    document_id: str
    title: str
    path: list[str]
    page_start: int
    page_end: int
    section: float = 0.0
    page: float = 0.0
    doc: float = 0.0
    score: float = 0.0


def candidate(row: sqlite3.Row) -> Candidate:
    try:
        path = [str(t) for t in json.loads(row["ancestors"] or "[]")]
    except ValueError:
        path = []
    return Candidate(rowid=row["rowid"], id=row["id"], document_id=row["document_id"], title=row["title"],
                     path=path, page_start=row["page_start"], page_end=row["page_end"])


def document_prior(pages: list[tuple[str, int, float]]) -> dict[str, float]:
    """Sum of each document's best page scores, scaled to [0, 1]: the document the query is about."""
    per_doc: dict[str, list[float]] = {}
    for doc, _, score in pages:
        per_doc.setdefault(doc, []).append(score)
    sums = {doc: sum(sorted(s, reverse=True)[:DOC_TOP_PAGES]) for doc, s in per_doc.items()}
    best = max(sums.values(), default=0.0)
    return {doc: (v / best if best > 0 else 0.0) for doc, v in sums.items()}


def fuse(cands: dict[int, Candidate], sections: list[tuple[int, float]], pages: list[tuple[str, int, float]],
         use_doc_prior: bool) -> list[Candidate]:
    best_s = max((s for _, s in sections), default=0.0) or 1.0
    for rowid, s in sections:
        if rowid in cands:
            cands[rowid].section = s / best_s
    best_p = max((s for _, _, s in pages), default=0.0) or 1.0
    page_score = {(doc, num): s / best_p for doc, num, s in pages}
    prior = document_prior(pages) if use_doc_prior else {}
    for c in cands.values():
        c.page = max((page_score.get((c.document_id, n), 0.0) for n in range(c.page_start, c.page_end + 1)),
                     default=0.0)
        c.doc = prior.get(c.document_id, 0.0)
        c.score = round(W_SECTION * c.section + W_PAGE * c.page + (W_DOC * c.doc if use_doc_prior else 0.0), 6)
    return sorted(cands.values(), key=lambda c: (-c.score, c.id))
