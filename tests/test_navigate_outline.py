"""The section tree and outline text the navigating strategies show a model: labels, resolving, split
sections shown as one node, depth-limited fitting, and slicing into sibling subtrees under a budget."""

from __future__ import annotations

import re

import pytest

from jsonl_engine.errors import NotFound
from jsonl_engine.llm.usage import estimate_tokens
from jsonl_engine.retrieval.navigate import outline
from jsonl_engine.retrieval.navigate.tree import load_tree
from tests.support import navkb

nav_kb = navkb.nav_kb  # the module's small KB (fixture)

LINE_ID = re.compile(r"^\s*(\S+) ")


def test_tree_labels_resolve_and_reject_invented_ids(nav_kb) -> None:
    tree = load_tree(nav_kb.store, [nav_kb.md_id], ("approved",))
    assert tree.single and [d.document_id for d in tree.docs] == [nav_kb.md_id]
    income = next(n for n in tree.nodes.values() if n.title == "Income Statement")
    assert tree.label(income) == income.key == "0.1.0"
    assert tree.resolve("0.1.0") is income
    assert tree.resolve(income.id) is income
    assert tree.resolve(" [0.1.0] ") is income
    assert tree.resolve("0.1.0.") is income
    for invented in ("9.9", "0.1.7", "", None, {"id": "0.1.0"}, True, "abcdef0123456789:0.1.0"):
        assert tree.resolve(invented) is None
    assert tree.path(income) == ["Acme Annual Report 2023", "Financial Statements"]


def test_multi_document_labels_carry_the_document_number(nav_kb) -> None:
    tree = load_tree(nav_kb.store, None, ("approved",))
    assert len(tree.docs) == 2 and not tree.single
    for node in tree.nodes.values():
        label = tree.label(node)
        assert label == f"{tree.doc(node.document_id).index}:{node.key}"
        assert tree.resolve(label) is node
    assert tree.resolve("0.1.0") is None  # ambiguous without its document number


def test_unknown_document_raises_not_found_and_status_filters(nav_kb) -> None:
    with pytest.raises(NotFound):
        load_tree(nav_kb.store, ["0000000000000000"], ("approved",))
    assert load_tree(nav_kb.store, [nav_kb.md_id], ("draft",)).docs == []


def test_split_sections_show_as_one_node_with_a_summary(nav_kb) -> None:
    tree = load_tree(nav_kb.store, [nav_kb.pdf_id], ("approved",))
    debt = next(n for n in tree.nodes.values() if n.title == "Note 5 - Debt")
    assert debt.parts and debt.children and all("(part " in c.title for c in debt.children)
    assert tree.shown_children(debt) == [] and debt.summary
    text = outline.render(tree)
    assert "Note 5 - Debt (part" not in text
    assert f"{debt.key} Note 5 - Debt [p{debt.page_start}-{debt.page_end}]: " in text


def test_every_line_of_the_rendered_outline_names_a_node(nav_kb) -> None:
    tree = load_tree(nav_kb.store, [nav_kb.md_id], ("approved",))
    text = outline.render(tree)
    lines = text.splitlines()
    assert lines[0].startswith("Document 1: Acme Annual Report (1 pages)")
    ids = [LINE_ID.match(line).group(1) for line in lines[1:]]
    assert all(tree.resolve(i) is not None for i in ids)
    assert len(ids) == len(tree.nodes)
    assert "  0.1.0 Income Statement [p1]: Net sales were $1,234 million in 2023" in text


def test_fit_drops_summaries_then_depth_then_cuts(nav_kb) -> None:
    tree = load_tree(nav_kb.store, [nav_kb.md_id], ("approved",))
    full = outline.render(tree)
    assert outline.fit(tree, estimate_tokens(full)) == (full, None)
    bare = outline.render(tree, summaries=False)
    text, note = outline.fit(tree, estimate_tokens(bare))
    assert text == bare and "without summaries" in note
    shallow = outline.render(tree, max_depth=2)
    text, note = outline.fit(tree, estimate_tokens(shallow))
    assert text == shallow and "depth 2" in note and "(+3)" in text
    depth_one = outline.render(tree, max_depth=1)
    budget = estimate_tokens(depth_one) - 2
    text, note = outline.fit(tree, budget)
    assert estimate_tokens(text) <= budget and "cut" in note


def test_slices_fit_the_budget_carry_breadcrumbs_and_cover_the_tree(dev_kb) -> None:
    doc = dev_kb.doc_ids["3M_2022_10K"]
    tree = load_tree(dev_kb, [doc], ("approved",))
    budget = 3000
    assert estimate_tokens(outline.render(tree)) > 5 * budget
    slices = outline.slice_outline(tree, budget)
    assert len(slices) > 5
    shown: list[str] = []
    for piece in slices:
        assert piece.tokens <= budget
        for block in piece.text.split("\n\n"):
            head, *body = block.splitlines()
            assert head.startswith("Document 1: ")
            if body and body[0].startswith("Path: "):
                crumbs = re.findall(r"(?:^Path: | > )(\S+) ", body[0])
                assert all(tree.resolve(c) is not None for c in crumbs)
                deepest = tree.resolve(crumbs[-1])
                first = tree.resolve(LINE_ID.match(body[1]).group(1))
                assert first.parent_id == deepest.id  # a slice is a run of siblings under its breadcrumb
                body = body[1:]
            shown += [LINE_ID.match(line).group(1) for line in body]
    assert len(shown) == len(set(shown))  # no line in two slices
    expected = {tree.label(n) for n in tree.nodes.values()
                if not (n.parent_id and tree.nodes[n.parent_id].parts)}
    breadcrumb_only = expected - set(shown)
    assert all(tree.shown_children(tree.resolve(label)) for label in breadcrumb_only)


def test_slicing_gives_up_when_not_even_one_line_fits(nav_kb) -> None:
    tree = load_tree(nav_kb.store, [nav_kb.md_id], ("approved",))
    assert outline.slice_outline(tree, 30) == []
    assert len(outline.slice_outline(tree, 10_000)) == 1
