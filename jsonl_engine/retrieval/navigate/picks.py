"""What the navigating strategies share, around the model's picks: request settings, prompt budgets, JSON turns
with retries, confidence parsing, picks resolved against the tree (`Pick`), and picked nodes turned into
Passages (`picks_result`)."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object
from jsonl_engine.llm.usage import (
    Usage,
    truncate_to_tokens,
)
from jsonl_engine.retrieval.navigate import prompts
from jsonl_engine.retrieval.navigate.tree import Node, Tree

if TYPE_CHECKING:
    from jsonl_engine.llm.gateway import Gateway
    from jsonl_engine.retrieval.types import Passage, Progress, Retrieval, StrategyRequest
    from jsonl_engine.store import Store

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_MAX_HOPS = 6
OWN_TEXT_CHARS = 200  # an internal node's own text counts as a passage from this size (less: a heading line)
DEFAULT_CONFIDENCE = 0.5  # ranks a pick the model gave no confidence for
REPLY_ECHO_TOKENS = 200  # a reply echoed back to the model (history, or before a stricter instruction), at most
NO_SECTION = "the model found no section in the outline that answers the query"
ONLY_INVENTED = "the model picked only ids that are not in the outline"
_WORDS = {"very high": 0.95, "high": 0.85, "medium": 0.6, "moderate": 0.6, "low": 0.3, "very low": 0.1,
          "none": 0.0}


def setting(request: StrategyRequest, name: str, default: T) -> int | T:
    """A strategy setting (an `int | None` field of the request): the field when set, else the default."""
    value = getattr(request, name)
    return default if value is None else value


def report(progress: Progress | None, stage: str, done: int | None = None,
           total: int | None = None, message: str | None = None) -> None:
    if progress is not None:
        progress(stage, done, total, message)


def prompt_budget(request: StrategyRequest, gateway: Gateway, reply_tokens: int) -> int:
    """Tokens one call's prompt may use: `max_tokens_per_call` when given, within the reader's context
    window less the reply."""
    budget = gateway.settings.context_tokens - reply_tokens
    limit = setting(request, "max_tokens_per_call", None)
    if limit:
        budget = min(budget, int(limit))
    return budget


def parse_confidence(value: Any) -> float | None:
    """0..1 from a number, a numeric string ("0.8", "80%") or a word ("high"); None when absent or unusable."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _WORDS:
            return _WORDS[text]
        percent = text.endswith("%")
        try:
            number = float(text.rstrip("%").strip())
        except ValueError:
            return None
        value = number / 100 if percent else number
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


@dataclass(slots=True)
class Asked(Generic[T]):
    value: T | None  # what `validate` made of the reply; None when no attempt gave a usable reply
    turns: int


async def ask_json(gateway: Gateway, messages: list[dict[str, str]], *, usage: Usage, max_tokens: int,
                   validate: Callable[[dict[str, Any]], T | None], strict: str = prompts.STRICT_JSON,
                   retries: int = 2) -> Asked[T]:
    """One JSON turn; a reply that does not parse (or that `validate` rejects) is retried up to `retries`
    times, each time showing the bad reply and a stricter instruction. Upstream failures propagate."""
    attempt_messages = messages
    for attempt in range(retries + 1):
        completion = await gateway.chat(attempt_messages, usage=usage, json_mode=True, max_tokens=max_tokens)
        text = completion.text
        try:
            value = validate(parse_json_object(text))
        except JSONParseError:
            value = None
        if value is not None:
            return Asked(value, attempt + 1)
        log.info("navigate: unusable reply (attempt %d): %.120r", attempt + 1, text)
        attempt_messages = [*messages, {"role": "assistant", "content": truncate_to_tokens(text, REPLY_ECHO_TOKENS)},
                            {"role": "user", "content": strict}]
    return Asked(None, retries + 1)


# ---------------------------------------------------------------- picks

@dataclass(slots=True)
class Pick:
    node: Node
    confidence: float | None
    rank: int = 0

    @property
    def weight(self) -> float:
        return DEFAULT_CONFIDENCE if self.confidence is None else self.confidence


PICK_KEYS = ("sections", "picks", "section_ids", "ids", "selected", "selection", "results")
ID_KEYS = ("id", "section_id", "section", "sectionId")
CONF_KEYS = ("confidence", "score", "relevance", "probability")


def raw_picks(obj: Mapping[str, Any], keys: Sequence[str] = PICK_KEYS) -> list[tuple[Any, float | None]] | None:
    """[(raw id, confidence)] from a reply; None when the reply carries no list of picks at all."""
    for key in keys:
        if key in obj:
            value = obj[key]
            break
    else:
        return None
    if value is None:
        return []
    if isinstance(value, str | int | dict):
        value = [value]
    if not isinstance(value, list):
        return None
    out: list[tuple[Any, float | None]] = []
    shared = parse_confidence(obj.get("confidence"))
    for item in value:
        if isinstance(item, dict):
            raw = next((item[k] for k in ID_KEYS if k in item), None)
            conf = next((parse_confidence(item[k]) for k in CONF_KEYS if k in item), None)
            out.append((raw, conf if conf is not None else shared))
        elif isinstance(item, list | tuple) and item:
            out.append((item[0], parse_confidence(item[1]) if len(item) > 1 else shared))
        else:
            out.append((item, shared))
    return out


def resolve_picks(tree: Tree, raw: Sequence[tuple[Any, float | None]]) -> tuple[list[Pick], list[str]]:
    """Picks of nodes that exist, deduplicated (first position, highest confidence); and the invented ids."""
    picks: dict[str, Pick] = {}
    invented: list[str] = []
    for raw_id, conf in raw:
        node = tree.resolve(raw_id)
        if node is None:
            if raw_id not in (None, ""):
                invented.append(str(raw_id)[:80])
            continue
        known = picks.get(node.id)
        if known is None:
            picks[node.id] = Pick(node, conf, len(picks))
        elif conf is not None and (known.confidence is None or conf > known.confidence):
            known.confidence = conf
    return list(picks.values()), list(dict.fromkeys(invented))


def by_relevance(picks: Sequence[Pick]) -> list[Pick]:
    return sorted(picks, key=lambda p: (-p.weight, p.rank))


# ---------------------------------------------------------------- passages

def materialize(store: Store, tree: Tree, picks: Sequence[Pick], *, query: str, unit: str,
                limit: int) -> list[Passage]:
    """Passages for the picks, in pick order. A split section stands for its parts, an internal node for its
    own text and the leaves under it; when picks expand to more than `limit`, each pick keeps its first
    passage before any pick gets a second. unit="page": the pages the picks span."""
    if unit == "page":
        groups = [[(p, (p.node.document_id, n)) for n in range(p.node.page_start, p.node.page_end + 1)]
                  for p in picks]
    else:
        groups = [[(p, n) for n in _units(p.node)] for p in picks]
    chosen: dict[Any, Pick] = {}
    for round_ in range(max((len(g) for g in groups), default=0)):
        for group in groups:
            if round_ < len(group) and len(chosen) < limit:
                pick, unit_key = group[round_]
                key = unit_key.id if isinstance(unit_key, Node) else unit_key
                chosen.setdefault(key, pick)
    order: dict[Any, int] = {}
    for group in groups:
        for _, unit_key in group:
            order.setdefault(unit_key.id if isinstance(unit_key, Node) else unit_key, len(order))
    keys = sorted(chosen, key=lambda k: order[k])
    if unit == "page":
        return page_passages(store, tree, [(k, chosen[k].confidence, chosen[k].rank) for k in keys], query)
    return _section_passages(store, tree, [(tree.nodes[k], chosen[k]) for k in keys], query)


def _units(node: Node) -> list[Node]:
    if node.is_leaf:
        return [node]
    if node.parts:
        return list(node.children)
    out = [node] if node.text_len >= OWN_TEXT_CHARS else []
    for child in node.children:
        out.extend(_units(child))
    return out


def _score(confidence: float | None, rank: int) -> float:
    return round(confidence if confidence is not None else 1.0 / (1 + rank), 6)


def _section_passages(store: Store, tree: Tree, chosen: list[tuple[Node, Pick]], query: str) -> list[Passage]:
    from jsonl_engine.retrieval.query import salient_terms
    from jsonl_engine.retrieval.snippet import finder
    from jsonl_engine.retrieval.types import Passage

    texts = store.section_texts([n.id for n, _ in chosen])
    find = finder(salient_terms(query))
    out = []
    for node, pick in chosen:
        text, page_map = texts.get(node.id, ("", []))
        doc = tree.doc(node.document_id)
        out.append(Passage(section_id=node.id, document_id=node.document_id, document_title=doc.title,
                           title=node.title, path=tree.path(node), page_start=node.page_start,
                           page_end=node.page_end, score=_score(pick.confidence, pick.rank), text=text, snippet=find(text),
                           status=doc.status, page_map=page_map, confidence=pick.confidence))
    return out


def page_passages(store: Store, tree: Tree, items: Sequence[tuple[tuple[str, int], float | None, int]],
                  query: str) -> list[Passage]:
    """unit="page" passages for ((document_id, page), confidence, rank) items; missing pages are skipped."""
    from jsonl_engine.retrieval.query import salient_terms
    from jsonl_engine.retrieval.snippet import finder
    from jsonl_engine.retrieval.types import Passage

    texts = store.page_texts([key for key, _, _ in items])
    find = finder(salient_terms(query))
    out = []
    for (document_id, number), confidence, rank in items:
        text = texts.get((document_id, number))
        if text is None:
            continue
        doc = tree.doc(document_id)
        holder = deepest_at(tree, document_id, number)
        path = [*tree.path(holder), holder.title] if holder is not None else []
        out.append(Passage.for_page(document_id, number, document_title=doc.title, status=doc.status, path=path,
                                    score=_score(confidence, rank), text=text, snippet=find(text),
                                    confidence=confidence))
    return out


def deepest_at(tree: Tree, document_id: str, page: int) -> Node | None:
    """The deepest shown section covering `page` (the first such in document order)."""
    found = None
    level = tree.roots.get(document_id, [])
    while level:
        node = next((n for n in level if n.page_start <= page <= n.page_end), None)
        if node is None:
            break
        found = node
        level = tree.shown_children(node)
    return found


def result(passages: list[Passage], *, usage: Usage, hops: int, reason: str | None = None,
           confidence: float | None = None, details: dict[str, Any] | None = None) -> Retrieval:
    from jsonl_engine.retrieval.types import Retrieval

    return Retrieval(passages, reason=reason, usage=usage.to_dict(), hops_taken=hops, confidence=confidence,
                     details=details or {}, warnings=list(usage.notes))


async def picks_result(store: Store, tree: Tree, request: StrategyRequest, picks: Sequence[Pick], *, usage: Usage, hops: int,
                       reason: str | None = None, nothing: str | None = None,
                       details: dict[str, Any] | None = None) -> Retrieval:
    """The end of a strategy that picks sections: their passages (in the order of `picks`, at most
    `request.limit`), the highest confidence given, and `reason`, else `nothing` when no passage came of them."""
    passages = await asyncio.to_thread(materialize, store, tree, picks, query=request.query, unit=request.unit,
                                       limit=int(request.limit))
    if reason is None and not passages:
        reason = nothing
    confidence = max((p.confidence for p in picks if p.confidence is not None), default=None)
    return result(passages, usage=usage, hops=hops, reason=reason, confidence=confidence, details=details)
