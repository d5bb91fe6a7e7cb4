"""Outline text for prompts: one line per section (label, title, pages, short summary), rendered whole,
depth-limited to fit a token budget, or sliced into sibling subtrees that each fit (chunked-tree).

A slice is a run of consecutive sibling subtrees under one parent; the parent chain is its breadcrumb,
printed (with ids, so a parent stays pickable) above the slice's lines. A subtree too large for one call
is not cut: its children become the siblings to pack, one level down. Consecutive small slices then share a
call, each under its own breadcrumb.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from jsonl_engine.llm.usage import estimate_tokens
from jsonl_engine.retrieval.navigate.tree import Doc, Node, Tree

SUMMARY_CHARS = 180
MIN_ROOM = 48  # tokens a slice needs beyond its header for at least one line


def pages(node: Node) -> str:
    return f"p{node.page_start}" if node.page_start == node.page_end else f"p{node.page_start}-{node.page_end}"


def line(tree: Tree, node: Node, *, base_depth: int = 1, summaries: bool = True, hidden: int = 0) -> str:
    indent = "  " * max(0, node.depth - base_depth)
    text = f"{indent}{tree.label(node)} {node.title} [{pages(node)}]"
    if hidden:
        text += f" (+{hidden})"
    if summaries and node.summary:
        summary = node.summary if len(node.summary) <= SUMMARY_CHARS else node.summary[:SUMMARY_CHARS - 1] + "\u2026"
        text += ": " + summary
    return text


def doc_header(doc: Doc) -> str:
    return f"Document {doc.index}: {doc.title} ({doc.pages} pages)"


def _walk(tree: Tree, nodes: list[Node], max_depth: int | None) -> Iterator[tuple[Node, int]]:
    """(node, number of hidden shown-children) in pre-order, down to max_depth."""
    for node in nodes:
        children = tree.shown_children(node)
        if max_depth is not None and node.depth >= max_depth:
            yield node, len(children)
            continue
        yield node, 0
        yield from _walk(tree, children, max_depth)


def render(tree: Tree, *, max_depth: int | None = None, summaries: bool = True) -> str:
    """The outline of every document in scope, each under its header line."""
    out: list[str] = []
    for doc in tree.docs:
        out.append(doc_header(doc))
        out.extend(line(tree, n, summaries=summaries, hidden=h) for n, h in _walk(tree, tree.roots[doc.document_id],
                                                                                 max_depth))
    return "\n".join(out)


def render_nodes(tree: Tree, nodes: list[Node], *, summaries: bool = True) -> str:
    """Lines for these nodes only (the children an `expand` shows), children counts as (+N)."""
    base = min((n.depth for n in nodes), default=1)
    return "\n".join(line(tree, n, base_depth=base, summaries=summaries, hidden=len(tree.shown_children(n)))
                     for n in nodes)


def render_subtree(tree: Tree, node: Node, *, summaries: bool = True) -> str:
    """A section and everything shown under it."""
    return "\n".join(line(tree, n, base_depth=node.depth, summaries=summaries, hidden=h)
                     for n, h in _walk(tree, [node], None))


def max_depth(tree: Tree) -> int:
    return max((n.depth for n in tree.nodes.values()), default=1)


def fit(tree: Tree, budget: int) -> tuple[str, str | None]:
    """The fullest outline within `budget` tokens: full, then without summaries, then shallower; as a last
    resort the top-level lines that fit. Returns (text, note) with note saying what was left out."""
    deepest = max_depth(tree)
    for depth in range(deepest, 0, -1):
        for summaries in (True, False):
            text = render(tree, max_depth=None if depth == deepest else depth, summaries=summaries)
            if estimate_tokens(text) <= budget:
                if depth == deepest:
                    return text, None if summaries else "outline shown without summaries to fit the budget"
                return text, (f"outline shown to depth {depth}" + ("" if summaries else " without summaries")
                              + " to fit the budget")
    lines = render(tree, max_depth=1, summaries=False).split("\n")
    kept, used = [], 0
    for i, text in enumerate(lines):
        cost = estimate_tokens(text) + 1
        if used + cost > budget - 16:
            kept.append(f"... ({len(lines) - i} more lines not shown)")
            break
        kept.append(text)
        used += cost
    return "\n".join(kept), "outline cut to its first top-level sections to fit the budget"


# ---------------------------------------------------------------- slices (chunked-tree)

@dataclass(slots=True)
class Slice:
    text: str  # the breadcrumb (document header, parent chain) and the lines of a run of sibling subtrees

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


def breadcrumb(tree: Tree, doc: Doc, crumbs: list[Node]) -> str:
    head = doc_header(doc)
    if crumbs:
        head += "\nPath: " + " > ".join(f"{tree.label(c)} {c.title} [{pages(c)}]" for c in crumbs)
    return head


def slice_outline(tree: Tree, budget: int, *, summaries: bool = True) -> list[Slice]:
    """Sibling subtrees packed into slices of at most `budget` tokens each (header included), in document
    order. Empty when even one line with its breadcrumb cannot fit."""
    slicer = _Slicer(tree, budget, summaries)
    for doc in tree.docs:
        if not slicer.pack(doc, tree.roots[doc.document_id], []):
            return []
    return _merge_small(slicer.slices, budget)


class _Slicer:
    """slice_outline's packing: runs of siblings that fit share a slice; a subtree too big for one is split one
    level down under a longer breadcrumb, else its own line is cut to fit."""

    def __init__(self, tree: Tree, budget: int, summaries: bool) -> None:
        self.tree, self.budget, self.summaries = tree, budget, summaries
        self.costs: dict[str, int] = {}
        self.slices: list[Slice] = []

    def cost(self, node: Node, base: int) -> int:
        if node.id not in self.costs:
            own = estimate_tokens(line(self.tree, node, base_depth=base, summaries=self.summaries)) + 1
            self.costs[node.id] = own + sum(self.cost(c, base) for c in self.tree.shown_children(node))
        return self.costs[node.id]

    def flush(self, group: list[Node], head: str) -> None:
        if group:
            base = group[0].depth
            body = [line(self.tree, n, base_depth=base, summaries=self.summaries, hidden=h)
                    for n, h in _walk(self.tree, group, None)]
            self.slices.append(Slice(head + "\n" + "\n".join(body)))

    def pack(self, doc: Doc, siblings: list[Node], crumbs: list[Node]) -> bool:
        head = breadcrumb(self.tree, doc, crumbs)
        room = self.budget - estimate_tokens(head) - 1
        if room < MIN_ROOM:
            return False
        self.costs.clear()  # indentation is relative to the slice's top level: costs depend on the base depth
        group: list[Node] = []
        used = 0
        for node in siblings:
            c = self.cost(node, node.depth)
            if c <= room:
                if used + c > room:
                    self.flush(group, head)
                    group, used = [], 0
                group.append(node)
                used += c
                continue
            self.flush(group, head)
            group, used = [], 0
            self.split(doc, node, crumbs, head, room)
        self.flush(group, head)
        return True

    def split(self, doc: Doc, node: Node, crumbs: list[Node], head: str, room: int) -> None:
        """A subtree too big for one slice: its children packed one level down, else its own line cut to fit."""
        children = self.tree.shown_children(node)
        if not children or not self.pack(doc, children, [*crumbs, node]):
            text = line(self.tree, node, base_depth=node.depth, summaries=False)[: room * 4]
            self.slices.append(Slice(head + "\n" + text))
        self.costs.clear()


def _merge_small(slices: list[Slice], budget: int) -> list[Slice]:
    """Consecutive slices that fit one call together share it (each keeps its own breadcrumb): a big
    subtree split one level down leaves small runs of siblings around it, each not worth a call."""
    out: list[Slice] = []
    for piece in slices:
        if out and out[-1].tokens + piece.tokens + 1 <= budget:
            out[-1] = Slice(out[-1].text + "\n\n" + piece.text)
        else:
            out.append(piece)
    return out
