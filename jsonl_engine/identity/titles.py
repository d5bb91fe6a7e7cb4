"""Titles a person can tell apart across a library. Each card carries its document's own title (`name`); when
documents share one, each gets the first of its distinguishing facts that differ across the group: identifier,
period, date, place, filing date, kind. A group's titles depend on the group's cards only, never on the order in
which the documents arrived, so a library ingested in any order reads the same; a title gains its distinguishing
part when a sibling arrives and loses it when the sibling is removed."""

from __future__ import annotations

import logging
from collections.abc import Callable

from jsonl_engine.errors import EngineError
from jsonl_engine.store import Card, DocumentInfo, Store

log = logging.getLogger(__name__)


def _period(card: Card) -> str | None:
    if card.fiscal_quarter and card.fiscal_year:
        return f"Q{card.fiscal_quarter} fiscal {card.fiscal_year}"
    return f"fiscal year {card.fiscal_year}" if card.fiscal_year else None


# What may tell two documents of one name apart, in the order a person would look for it.
FACTS: tuple[Callable[[Card], str | None], ...] = (
    lambda c: c.identifiers[0] if c.identifiers else None,
    _period,
    lambda c: f"period ended {c.period_end}" if c.period_end else None,
    lambda c: c.report_date or c.date,
    lambda c: c.place,
    lambda c: f"filed {c.filed}" if c.filed else None,
    lambda c: c.kind,
)


def base_name(info: DocumentInfo) -> str:
    """The title a document has before any sibling lengthens it (cards stored before `name` existed: the title)."""
    card = info.card
    return (card.name or card.title) if card is not None else info.title


def distinguish(docs: list[DocumentInfo]) -> dict[str, str]:
    """document id -> its title within `docs` (documents of one base name): the name plus the first fact whose
    values differ for all of them; facts already in the name are skipped; the file name, then a short content
    hash, when no fact tells them apart."""
    if len(docs) == 1:
        return {docs[0].document_id: base_name(docs[0])}
    name = base_name(docs[0])
    cards = {d.document_id: d.card or Card() for d in docs}
    for fact in FACTS:
        values = {d: fact(c) for d, c in cards.items()}
        if all(values.values()) and len(set(values.values())) == len(values) \
                and not any(v.lower() in name.lower() for v in values.values() if v):
            return {d: f"{name} ({v})" for d, v in values.items()}
    files = {d.document_id: (d.path or "").rsplit("/", 1)[-1] for d in docs}
    if all(files.values()) and len(set(files.values())) == len(files):
        return {d: f"{name} ({f})" for d, f in files.items()}
    return {d.document_id: f"{name} ({d.sha256[:8] or d.document_id[:8]})" for d in docs}


def retitle(store: Store, names: set[str]) -> None:
    """Give the documents whose base name is one of `names` their library titles (after an ingest or a removal).
    Documents whose card a user has set values of (meta) are left as the user made them."""
    if not names:
        return
    try:
        groups: dict[str, list[DocumentInfo]] = {}
        members = [d for d, card in store.cards().items() if (card.name or card.title) in names]
        for info in store.documents(document_ids=members) if members else []:
            if info.card is not None and base_name(info) in names:
                groups.setdefault(base_name(info), []).append(info)
        for group in groups.values():
            titles = distinguish(sorted(group, key=lambda d: d.document_id))
            for info in group:
                if info.card is not None and not info.meta and info.card.title != titles[info.document_id]:
                    card = info.card
                    card.title = titles[info.document_id]
                    card.name = base_name(info)
                    store.update_document(info.document_id, card=card)
    except EngineError as exc:  # the documents are in; their titles are refreshed by the next ingest or open
        log.warning("library titles not refreshed: %s", exc.message)
