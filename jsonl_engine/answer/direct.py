"""kb.synthesize as the method serves it: the extractive answer (answer/synthesize.py), then a computed line when the
question asks for one (answer/compute.py), else the rows a domain question's template reads first (answer/intents.py),
then what the KB does not hold said first (answer/absent.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from jsonl_engine.answer.absent import say_absent
from jsonl_engine.answer.compute import compute, with_computed
from jsonl_engine.answer.intents import lead
from jsonl_engine.answer.synthesize import MAX_CLAIMS, Synthesis, synthesize

if TYPE_CHECKING:
    from jsonl_engine.store import Store


def answer_first(store: Store, query: str, *, depth: int = 5, max_chars: int = 4000,
                 document_ids: list[str] | None = None, statuses: Sequence[str] = ("approved",),
                 max_claims: int = MAX_CLAIMS) -> Synthesis:
    out = synthesize(store, query, depth=depth, max_chars=max_chars, document_ids=document_ids, statuses=statuses,
                     max_claims=max_claims)
    # a computation's inputs come from one document: the one in scope, else the one the answer leads with
    within = document_ids or [c.document_id for c in out.claims[:1]]
    computation = compute(store, query, document_ids=within, statuses=statuses) if within else None
    if computation is not None:
        out = with_computed(out, computation, query, max_chars=max_chars, max_claims=max_claims)
    if within and (computation is None or computation.value is None):  # a domain question: the rows it reads
        out = lead(store, query, out, document_ids=within, statuses=statuses, max_chars=max_chars,
                   max_claims=max_claims)
    return say_absent(store, query, out, document_ids=document_ids, statuses=statuses)
