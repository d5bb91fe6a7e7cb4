"""The section tree the navigating strategies show a model: documents in scope, their nodes, and the short
labels (aliases) a prompt uses for section ids.

A label is the section key ("3.0.2") when one document is in scope, else "<n>:<key>" with n the document's
1-based position in the scope. `resolve` accepts a label or a full section id and nothing else, so an id
the model invents resolves to None and is dropped.

A section split into "Title (part k)" chunks at ingest is shown as one node (`parts`): its summary and text
are those of its parts, and a pick of it stands for all of them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from jsonl_engine.errors import Internal

if TYPE_CHECKING:
    from jsonl_engine.store import Store

HEAD_CHARS = 1500  # text read to make an extractive summary on the fly when the stored one is empty
_PART = re.compile(r"^(?P<title>.*) \(part \d+\)$")
_LABEL = re.compile(r"^\s*[\[(<\"'`]*\s*(?:id\s*[:=]\s*)?(?P<label>[^\s\])>\"'`]+)")


@dataclass(slots=True)
class Node:
    id: str
    document_id: str
    key: str
    parent_id: str | None
    depth: int
    title: str
    page_start: int
    page_end: int
    is_leaf: bool
    has_text: bool
    summary: str
    text_len: int = 0
    children: list[Node] = field(default_factory=list)
    parts: bool = False  # an ingest-split section shown as one node

    @property
    def shown_leaf(self) -> bool:
        return self.is_leaf or self.parts


@dataclass(slots=True)
class Doc:
    document_id: str
    title: str
    status: str
    pages: int
    index: int  # 1-based position in the scope


@dataclass(slots=True)
class Tree:
    docs: list[Doc]
    roots: dict[str, list[Node]]
    nodes: dict[str, Node]
    labels: dict[str, str] = field(default_factory=dict)  # label -> section id

    @property
    def empty(self) -> bool:
        return not self.nodes

    @property
    def single(self) -> bool:
        return len(self.docs) == 1

    def doc(self, document_id: str) -> Doc:
        return next(d for d in self.docs if d.document_id == document_id)

    def label(self, node: Node) -> str:
        return node.key if self.single else f"{self.doc(node.document_id).index}:{node.key}"

    def resolve(self, raw: object) -> Node | None:
        """The node a model's id refers to (a label or a full id), None when it names no node in scope."""
        if isinstance(raw, int | float) and not isinstance(raw, bool):
            raw = str(raw)
        if not isinstance(raw, str):
            return None
        text = raw.strip()
        node = self.nodes.get(text)
        if node is None:
            section_id = self.labels.get(text)
            if section_id is None:
                m = _LABEL.match(text)
                label = m.group("label").rstrip(".,;:") if m else ""
                section_id = self.labels.get(label) or (label if label in self.nodes else None)
            node = self.nodes.get(section_id) if section_id else None
        return node

    def path(self, node: Node) -> list[str]:
        """Titles of the enclosing sections, outermost first."""
        out: list[str] = []
        parent = self.nodes.get(node.parent_id) if node.parent_id else None
        while parent is not None:
            out.append(parent.title)
            parent = self.nodes.get(parent.parent_id) if parent.parent_id else None
        out.reverse()
        return out

    def shown_children(self, node: Node) -> list[Node]:
        return [] if node.parts else node.children


def load_tree(store: Store, document_ids: Sequence[str] | None, statuses: Sequence[str]) -> Tree:
    """Every section of the documents in scope (unknown ids raise NotFound, like lexical retrieval)."""
    from jsonl_engine.ingest.summarize import extractive_summary
    from jsonl_engine.retrieval.lexical import resolve_scope

    try:
        with store.snapshot() as conn:
            scope = resolve_scope(conn, document_ids, tuple(statuses))
            ids = sorted(scope.documents)
            if not ids:
                return Tree([], {}, {})
            marks = ",".join("?" * len(ids))
            pages = dict(conn.execute(f"SELECT id, pages FROM documents WHERE id IN ({marks}) "
                                      "ORDER BY ingested_at, id", ids).fetchall())
            rows = conn.execute(
                "SELECT id, document_id, parent_id, depth, title, page_start, page_end, is_leaf, summary,"
                f" length(text) AS text_len, CASE WHEN summary = '' THEN substr(text, 1, {HEAD_CHARS}) END AS head"
                f" FROM sections WHERE document_id IN ({marks}) ORDER BY document_id, position", ids).fetchall()
    except sqlite3.Error as exc:
        raise Internal(f"cannot load the section tree: {exc}") from exc
    docs = [Doc(d, scope.documents[d][0], scope.documents[d][1], int(n or 0), 0) for d, n in pages.items()]
    for i, doc in enumerate(docs, start=1):
        doc.index = i
    tree = Tree(docs, {d.document_id: [] for d in docs}, {})
    for r in rows:
        section_id, document_id = r[0], r[1]
        summary = r[8] or (_fallback_summary(section_id, r[4], r[10], extractive_summary) if r[10] else "")
        key = section_id[len(document_id) + 1:] if section_id.startswith(document_id + ":") else section_id
        node = Node(section_id, document_id, key, r[2], int(r[3]), r[4], int(r[5]), int(r[6]), bool(r[7]),
                    bool(r[9]), summary, int(r[9]))
        tree.nodes[section_id] = node
        parent = tree.nodes.get(r[2]) if r[2] else None
        (parent.children if parent is not None else tree.roots[document_id]).append(node)
    for node in tree.nodes.values():
        if node.children and not node.has_text and all(_is_part(node, c) for c in node.children):
            node.parts = True
            if not node.summary:
                node.summary = node.children[0].summary
        tree.labels[tree.label(node)] = node.id
    return tree


_FALLBACK: dict[str, str] = {}
FALLBACK_CACHE = 100_000  # entries; a section id names immutable text (the document id is a content hash)


def _fallback_summary(section_id: str, title: str, head: str, make: Callable[[str, str], str]) -> str:
    """The extractive summary of a section stored without one, made once per process."""
    summary = _FALLBACK.get(section_id)
    if summary is None:
        if len(_FALLBACK) >= FALLBACK_CACHE:
            _FALLBACK.clear()
        summary = _FALLBACK[section_id] = make(title, head)
    return summary


def _is_part(parent: Node, child: Node) -> bool:
    m = _PART.match(child.title)
    return child.is_leaf and m is not None and m.group("title") == parent.title


def section_texts(store: Store, section_ids: Sequence[str]) -> dict[str, tuple[str, list[tuple[int, int]]]]:
    """id -> (text, page_map) for these sections."""
    out: dict[str, tuple[str, list[tuple[int, int]]]] = {}
    ids = list(dict.fromkeys(section_ids))
    conn = store.reader()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        for sid, text, page_map in conn.execute(
                f"SELECT id, text, page_map FROM sections WHERE id IN ({','.join('?' * len(chunk))})", chunk):
            out[sid] = (text, [(int(a), int(b)) for a, b in orjson.loads(page_map or "[]")])
    return out


def page_texts(store: Store, document_id: str, start: int, end: int) -> dict[int, str]:
    conn = store.reader()
    return dict(conn.execute("SELECT number, text FROM pages WHERE document_id = ? AND number BETWEEN ? AND ? "
                             "ORDER BY number", (document_id, start, end)).fetchall())


def node_text(store: Store, node: Node) -> str:
    """The text a `read` shows: a leaf's text, or its parts' texts joined."""
    ids = [c.id for c in node.children] if node.parts else [node.id]
    texts = section_texts(store, ids)
    return "\n".join(texts[i][0] for i in ids if i in texts)
