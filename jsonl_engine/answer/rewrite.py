"""kb.synthesize llm=true: the model rewrites the deterministic, verbatim claims into fluent prose.

Every output sentence must cite ids of claims that were offered: ids not offered are stripped (and
reported), and a sentence left without a valid citation is dropped (and reported). The model sees only the
claims, never the wider sources, so each kept sentence rests on quoted, located text.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jsonl_engine.ingest.normalize import collapse_ws
from jsonl_engine.llm.gateway import UNFINISHED_CODES
from jsonl_engine.llm.jsonparse import JSONParseError, parse_json_object
from jsonl_engine.llm.usage import Usage, estimate_tokens, truncate_to_tokens

if TYPE_CHECKING:
    from jsonl_engine.answer.citations import Claim
    from jsonl_engine.llm.gateway import Gateway

log = logging.getLogger(__name__)

REWRITE_SYSTEM = (
    "You turn claims quoted from documents into a short, fluent answer to a question. Each claim has an id in "
    "square brackets. Rules:\n"
    "- Use only facts stated in the claims; keep figures, units and periods exactly as written.\n"
    "- Every sentence must cite the claim(s) it relies on by their ids.\n"
    "- Cite only ids from the list; never invent one. Leave out claims that do not help answer.\n"
    'Reply with a JSON object only: {"sentences": [{"text": "<one sentence, no ids in it>", '
    '"claims": ["<claim id>", ...]}]}.'
)
REPLY_TOKENS = 1024
CLAIM_TOKENS = 300  # one claim's text shown, at most
_BRACKET = re.compile(r"\s*\[([^\[\]]{1,80})\]")
_ID_TOKEN = re.compile(r"^[A-Za-z0-9_:.\-]+$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(]?[A-Z0-9$])")
_TRAILING_CITES = re.compile(r"([.!?])\s*((?:\[[^\[\]]{1,80}\]\s*)+)")


def rewrite_messages(query: str, claims: Sequence[Claim], budget: int) -> list[dict[str, str]]:
    head = f"Question: {query}\n\nClaims:\n"
    per_claim = max(40, min(CLAIM_TOKENS, (budget - estimate_tokens(REWRITE_SYSTEM + head)) // max(1, len(claims))))
    lines = [f"[{c.id}] ({c.document_title}, page {c.page}) "
             f"{truncate_to_tokens(collapse_ws(c.text), per_claim)}" for c in claims]
    return [{"role": "system", "content": REWRITE_SYSTEM},
            {"role": "user", "content": head + "\n".join(lines) + "\n\nWrite the answer, citing claim ids."}]


async def rewrite_claims(gateway: Gateway, query: str, claims: Sequence[Claim], usage: Usage,
                         warnings: list[str] | None = None) -> tuple[str, list[str], list[str]]:
    """(answer text with "[id]" after each sentence, dropped sentences, stripped ids). No claims: no call.
    An empty reply, or one that did not end normally (cut off, content-filtered), adds its coded warnings to
    `warnings`."""
    if not claims:
        return "", [], []
    budget = gateway.settings.context_tokens - REPLY_TOKENS
    completion = await gateway.chat(rewrite_messages(query, claims, budget), usage=usage, json_mode=True,
                                    max_tokens=REPLY_TOKENS)
    if warnings is not None:
        warnings.extend(w for w in completion.warnings() if w not in warnings)
    return check_sentences(sentences_of(completion.text), {c.id for c in claims})


@dataclass
class Rewrite:
    """What kb.synthesize llm=true returns: the model's prose, or the deterministic answer it fell back to."""

    answer: str
    dropped: list[str] = field(default_factory=list)
    stripped: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    fallback: bool = False


async def rewrite_or_keep(gateway: Gateway, query: str, claims: Sequence[Claim], usage: Usage,
                          deterministic: str) -> Rewrite:
    """The rewrite, unless the reply is unusable (not the expected sentences, nothing citing a claim, cut
    off, content-filtered or otherwise unfinished, empty): then the deterministic answer, with an
    `llm_fallback` warning."""
    warnings: list[str] = []
    answer, dropped, stripped = await rewrite_claims(gateway, query, claims, usage, warnings)
    warnings.extend(n for n in usage.notes if n not in warnings)
    cut = any(w.startswith(UNFINISHED_CODES) for w in warnings)
    if claims and (cut or not answer):
        why = "the reply did not finish" if cut else "the reply had no sentence citing an offered claim"
        warnings.append(f"llm_fallback: {why}; the answer is the deterministic one (verbatim cited claims)")
        return Rewrite(deterministic, dropped, stripped, warnings, fallback=True)
    return Rewrite(answer, dropped, stripped, warnings)


def sentences_of(reply: str) -> list[tuple[str, list[str]]]:
    """(sentence text, cited ids) from a JSON reply, or from prose with [id] markers when it is not JSON."""
    try:
        obj: Any = parse_json_object(reply)
    except JSONParseError:
        obj = None
    items = obj.get("sentences") if isinstance(obj, dict) else None
    if isinstance(items, list):
        out = []
        for item in items:
            if isinstance(item, str):
                out.extend(_prose(item))
            elif isinstance(item, dict):
                text = item.get("text") or item.get("sentence") or ""
                cited = item.get("claims", item.get("claim_ids", item.get("citations", [])))
                ids = [cited] if isinstance(cited, str) else [str(x) for x in cited or [] if x is not None]
                text, inline = _strip_brackets(str(text))
                out.append((text, [i.strip() for i in ids] + inline))
        return out
    if isinstance(obj, dict) and isinstance(obj.get("answer"), str):
        return _prose(obj["answer"])
    if obj is not None or reply.lstrip().startswith(("{", "[", "```")):
        return []  # a JSON object of another shape, or JSON cut short: no sentences, never the raw reply
    return _prose(reply)


def _prose(text: str) -> list[tuple[str, list[str]]]:
    # a citation written after the full stop ("... 2023. [c1] Next") belongs to the sentence before it
    text = _TRAILING_CITES.sub(lambda m: f" {m.group(2).strip()}{m.group(1)} ", collapse_ws(text))
    out = []
    for piece in _SENTENCE_END.split(text.strip()):
        if piece.strip():
            out.append(_strip_brackets(piece))
    return out


def _strip_brackets(text: str) -> tuple[str, list[str]]:
    ids: list[str] = []

    def take(m: re.Match[str]) -> str:
        tokens = [t.strip() for t in re.split(r"[,;]|\]\s*\[", m.group(1))]
        if tokens and all(_ID_TOKEN.match(t) for t in tokens if t):
            ids.extend(t for t in tokens if t)
            return ""
        return m.group(0)

    cleaned = _BRACKET.sub(take, text)
    return collapse_ws(cleaned), ids


def check_sentences(sentences: Sequence[tuple[str, list[str]]], offered: set[str]
                    ) -> tuple[str, list[str], list[str]]:
    kept: list[str] = []
    dropped: list[str] = []
    stripped: list[str] = []
    for text, ids in sentences:
        if not text:
            continue
        valid = list(dict.fromkeys(i for i in ids if i in offered))
        stripped.extend(i for i in ids if i not in offered)
        if not valid:
            dropped.append(text)
            continue
        kept.append(text + " " + "".join(f"[{i}]" for i in valid))
    if dropped:
        log.info("rewrite: dropped %d sentence(s) without a valid citation", len(dropped))
    return " ".join(kept), dropped, list(dict.fromkeys(stripped))
