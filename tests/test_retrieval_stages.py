"""Retrieval as named stages: the pipeline is its five stages in order, each returning a frozen record; the
stages run one by one give what `retrieve` gives; every ranking constant lives in retrieval/weights.py and says
what it trades and how it was chosen."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from jsonl_engine.ingest.sync import ingest_text
from jsonl_engine.retrieval import pipeline, retrieve
from jsonl_engine.retrieval.stages.assemble import assemble
from jsonl_engine.retrieval.stages.candidates import Found, gather
from jsonl_engine.retrieval.stages.parse import Ask, parse
from jsonl_engine.retrieval.stages.route import Routing, route
from jsonl_engine.retrieval.stages.score import Scored, score
from jsonl_engine.store import open_store

RETRIEVAL = Path(pipeline.__file__).parent
WEIGHTS = RETRIEVAL / "weights.py"
STAGES = ("parse", "route", "gather", "score", "assemble")


def _numeric(node: ast.AST) -> bool:
    """Whether an expression is or holds a number literal (3, 0.25, -1, (4, 8), SectionWeights(title=4.0, ...))."""
    return any(isinstance(n, ast.Constant) and isinstance(n.value, int | float) and not isinstance(n.value, bool)
               for n in ast.walk(node))


def _constants(tree: ast.Module) -> list[tuple[str, ast.AST, int]]:
    """(NAME, value, line) of the module-level assignments to upper-case names."""
    out = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            names = [e for e in target.elts] if isinstance(target, ast.Tuple) else [target]
            out += [(n.id, node.value, node.lineno) for n in names
                    if isinstance(n, ast.Name) and n.id.lstrip("_").isupper()]
    return out


def stray_constants(root: Path) -> list[str]:
    """Numeric module-level constants of the lexical pipeline's modules outside weights.py (navigate/, the LLM
    strategies, keeps its own defaults)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "weights.py" or "navigate" in path.relative_to(root).parts:
            continue
        out += [f"{path.relative_to(root)}:{line} {name}"
                for name, value, line in _constants(ast.parse(path.read_text(encoding="utf-8"))) if _numeric(value)]
    return out


def test_ranking_constants_live_in_weights_only() -> None:
    assert stray_constants(RETRIEVAL) == []


def test_a_constant_planted_in_a_stage_is_found(tmp_path: Path) -> None:
    """The check above fails when a weight is written in a stage module (as rank.py's W_PAGE was)."""
    copy = tmp_path / "retrieval"
    (copy / "stages").mkdir(parents=True)
    (copy / "rank.py").write_text('W_PAGE = 0.55  # the best page\nKIND = "page"\n', encoding="utf-8")
    (copy / "stages" / "score.py").write_text("from x import SectionWeights\n\nW: tuple = (4, 8)\n"
                                              "FIELDS = SectionWeights(title=4.0)\n", encoding="utf-8")
    (copy / "weights.py").write_text("W_DOC = 0.7\n", encoding="utf-8")
    assert stray_constants(copy) == ["rank.py:1 W_PAGE", "stages/score.py:3 W", "stages/score.py:4 FIELDS"]


def test_each_weight_says_what_it_trades_and_how_it_was_chosen() -> None:
    source = WEIGHTS.read_text(encoding="utf-8")
    lines = source.splitlines()
    names = _constants(ast.parse(source))
    assert len(names) >= 35  # the statement-page thresholds live in identity/statements.py
    for name, _, line in names:
        note = []
        for text in lines[line:]:  # the comment lines under the constant
            if not text.startswith("# ") or text.startswith("# ----"):
                break
            note.append(text[2:])
        note_text = " ".join(note)
        assert "Trades" in note_text, name
        assert re.search(r"Chosen: (not measured|.*\d)", note_text), name


def test_the_pipeline_runs_the_stages_in_order() -> None:
    """pipeline.retrieve reads as parse -> route -> candidates -> score -> assemble."""
    tree = ast.parse(Path(pipeline.__file__).read_text(encoding="utf-8"))
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "retrieve")
    called = [n.func.id for n in ast.walk(function) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert [c for c in called if c in STAGES] == list(STAGES)
    assert function.end_lineno - function.lineno < 25  # one short function


@pytest.mark.parametrize("record", [Ask, Routing, Found, Scored])
def test_stage_records_are_frozen(record: type) -> None:
    assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen


def _doc(i: int, topic: str) -> str:
    return (f"# Company {i} annual report\n\n## Revenue\n\nCompany {i} sold {topic} worth ${i * 17} million; "
            f"cost of sales rose with the price of steel.\n\n## Risk factors\n\nDemand for {topic} may fall, "
            f"and operating income from {topic} depends on steel.\n\n## Capital expenditures\n\nPurchases of "
            f"property and equipment were ${i * 3} million.\n")


@pytest.mark.parametrize("unit", ["section", "page"])
def test_the_stages_one_by_one_give_what_retrieve_gives(tmp_path: Path, unit: str) -> None:
    store = open_store(tmp_path / "kb")
    try:
        for i, topic in enumerate(("widgets", "gadgets", "sprockets", "gears")):
            ingest_text(store, _doc(i, topic), f"company {i}", "text/markdown")
        for text in ("steel cost of sales", "operating income from gadgets", "Company 3 capital expenditures"):
            whole = retrieve(store, text, limit=3, unit=unit)
            with store.snapshot():
                ask = parse(text, store.scope(None, ("approved",)), limit=3, unit=unit)
                routing = route(store, ask)
                found = gather(store, ask, routing)
                assert not found.empty and len(found.focus) <= 2  # sections are searched in the prior's first two
                scored = score(store, ask, found)
                assert (scored.pages if unit == "page" else scored.sections)
                assert not (scored.sections if unit == "page" else scored.pages)
                staged = routing.outcome(assemble(store, ask, scored))
            assert staged == whole and whole.passages, text
    finally:
        store.close()


def test_nothing_found_is_reported_by_the_routing(tmp_path: Path) -> None:
    store = open_store(tmp_path / "kb")
    try:
        ingest_text(store, _doc(1, "widgets"), "company 1", "text/markdown")
        with store.snapshot():
            ask = parse("zebra quokka", store.scope(None, ("approved",)), limit=3, unit="section")
            found = gather(store, ask, route(store, ask))
        assert found.empty and found.prior is None
        assert retrieve(store, "zebra quokka").reason == "no passage matches the query terms"
    finally:
        store.close()


def test_section_texts_are_loaded_as_collapsing_needs_them(dev_kb, monkeypatch: pytest.MonkeyPatch) -> None:
    """assemble reads the section texts of the pool in batches of limit + PAGE_BATCH_EXTRA, from the first one
    collapsing has not seen: the passages of all the pool's texts loaded at once, fewer texts read."""
    from jsonl_engine.retrieval import dedupe
    from jsonl_engine.retrieval.stages import assemble as stage
    from jsonl_engine.retrieval.weights import PAGE_BATCH_EXTRA, POOL_EXTRA, POOL_FACTOR

    limit, asked = 6, []
    ask = parse("capital expenditures purchases of property plant and equipment 2022", dev_kb.scope(None, ("approved",)),
                limit=limit, unit="section")
    scored = score(dev_kb, ask, gather(dev_kb, ask, route(dev_kb, ask)))
    pool = scored.sections[: limit * POOL_FACTOR + POOL_EXTRA]
    assert len(pool) > limit + PAGE_BATCH_EXTRA
    every = dev_kb.section_texts([c.id for c in pool])
    eager = dedupe.collapse(pool, lambda c: every[c.id][0], limit)
    real = dev_kb.section_texts
    monkeypatch.setattr(dev_kb, "section_texts", lambda ids: asked.append(list(ids)) or real(ids), raising=False)
    passages = stage.assemble(dev_kb, ask, scored)
    assert [p.section_id for p in passages] == [c.id for c in eager]
    assert [p.text for p in passages] == [every[c.id][0] for c in eager]
    assert asked and all(len(ids) <= limit + PAGE_BATCH_EXTRA for ids in asked)
    assert sum(map(len, asked)) < len(pool)


def test_a_side_read_not_needed_is_over_before_its_request_returns():
    """A side read the request does not use is cancelled, or waited for if already reading: none outlives its
    request (a KB closed after the request would close the connection the side thread reads on)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from jsonl_engine.retrieval.stages.candidates import _drop

    started, release = threading.Event(), threading.Event()

    def read() -> int:
        started.set()
        release.wait(5)
        return 1

    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(read)
        queued = pool.submit(read)
        started.wait(5)
        threading.Timer(0.2, release.set).start()
        _drop(running)  # already reading: waited for
        assert running.done() and running.result() == 1
        _drop(queued)  # not started: cancelled (or, had it started meanwhile, waited for)
        assert queued.done()
        _drop(None)
