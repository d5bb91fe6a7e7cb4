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
from collections.abc import Sequence
from dataclasses import dataclass, field

from jsonl_engine.ingest.summarize import extractive_summary
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
    with store.snapshot():
        scope = store.scope(document_ids, tuple(statuses))
        ids = sorted(scope.documents)
        if not ids:
            return Tree([], {}, {})
        infos = store.documents(document_ids=ids)
        rows = store.tree(ids, HEAD_CHARS)
    docs = [Doc(d.document_id, scope.documents[d.document_id][0], scope.documents[d.document_id][1],
                int(d.pages or 0), 0) for d in infos]
    for i, doc in enumerate(docs, start=1):
        doc.index = i
    tree = Tree(docs, {d.document_id: [] for d in docs}, {})
    for r in rows:
        summary = r.summary or (_fallback_summary(store, r.section_id, r.title, r.head) if r.head else "")
        key = r.section_id[len(r.document_id) + 1:] if r.section_id.startswith(r.document_id + ":") else r.section_id
        node = Node(r.section_id, r.document_id, key, r.parent_id, r.depth, r.title, r.page_start, r.page_end,
                    r.is_leaf, bool(r.text_len), summary, r.text_len)
        tree.nodes[r.section_id] = node
        parent = tree.nodes.get(r.parent_id) if r.parent_id else None
        (parent.children if parent is not None else tree.roots[r.document_id]).append(node)
    for node in tree.nodes.values():
        if node.children and not node.has_text and all(_is_part(node, c) for c in node.children):
            node.parts = True
            if not node.summary:
                node.summary = node.children[0].summary
        tree.labels[tree.label(node)] = node.id
    return tree


def _fallback_summary(store: Store, section_id: str, title: str, head: str) -> str:
    """The extractive summary of a section stored without one, made once per store (a section id names
    immutable text: the document id is a content hash)."""
    return store.memo("fallback-summary", section_id, lambda: extractive_summary(title, head))


def _is_part(parent: Node, child: Node) -> bool:
    m = _PART.match(child.title)
    return child.is_leaf and m is not None and m.group("title") == parent.title


def node_text(store: Store, node: Node) -> str:
    """The text a `read` shows: a leaf's text, or its parts' texts joined."""
    ids = [c.id for c in node.children] if node.parts else [node.id]
    texts = store.section_texts(ids)
    return "\n".join(texts[i][0] for i in ids if i in texts)
