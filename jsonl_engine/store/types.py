"""The store's domain types: what goes in (a parsed document) and what comes out (documents, sections, pages,
search hits). Plain data, no backend: every store implementation takes and returns these.

A search names what it looks for with neutral phrases (token tuples, OR-ed; a phrase matches its tokens in
sequence) and, for sections, a weight per field; each backend renders them in its own query language.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import orjson

from jsonl_engine.errors import InvalidParams

STATUSES = ("approved", "draft", "contested", "archived")
# A document's first pages (cover, release heading: they name the issuer and the period) are searchable apart.
COVER_PAGES = 2
# The term statistics' count column per kind (SQLite migration 7, PostgreSQL migration 8: one row per term).
TERM_STATS_COLUMN = {"pages": "pages", "covers": "covers", "sections": "sections", "documents": "docs"}

Phrase = tuple[str, ...]  # lowercased index tokens, matched in sequence
PageKey = tuple[str, int]  # (document id, 1-based page number)


class SectionWeights(NamedTuple):
    """Relevance weight of each searchable field of a section."""

    title: float
    ancestors: float  # the titles of the enclosing sections
    text: float


# ---------------------------------------------------------------- what ingest hands the store

@dataclass(slots=True)
class ParsedSection:
    """One node of the section tree, in pre-order.

    `key` is the position in the tree ("0", "0.2", "0.2.1"); with the document id it makes the stable section id.
    `text` is the node's own text (leaves; an internal node may carry the preamble before its first child).
    `page_map` lists (offset into `text`, page number) at every point where a new page begins, ascending,
    starting at offset 0, so any quote offset maps back to its page.
    """

    key: str
    parent: int | None
    depth: int
    ordinal: int
    title: str
    page_start: int
    page_end: int
    text: str = ""
    page_map: list[tuple[int, int]] = field(default_factory=list)
    summary: str = ""


# The fields of a card a user may set (`meta` at ingest, kb.update); their values win over derived ones.
CARD_FIELDS = ("title", "kind", "entities", "period_end", "fiscal_year", "fiscal_quarter", "report_date", "filed")
# Derived only: how sure the kind is, the document's own identifiers, date and place, the typographic title of its
# first page and the title before a sibling made it longer (what the library-wide distinguishing starts from).
DERIVED_FIELDS = ("kind_confidence", "identifiers", "date", "place", "headline", "name")


@dataclass(slots=True)
class Card:
    """What a document is, derived from its text at ingest (or set by a user): a title a person recognises,
    who it is about (issuer, parties, authors), its kind (10-K, 10-Q, 8-K, earnings release, report, ...) and
    the period it covers. Dates are ISO "YYYY-MM-DD"; `source_title` is the extractor's title (PDF metadata or
    the most prominent cover line), kept so the card can be derived again from stored pages."""

    title: str = ""
    kind: str | None = None
    entities: list[str] = field(default_factory=list)
    period_end: str | None = None
    fiscal_year: int | None = None
    fiscal_quarter: int | None = None
    report_date: str | None = None
    filed: str | None = None
    source_title: str = ""
    kind_confidence: float | None = None
    identifiers: list[str] = field(default_factory=list)
    date: str | None = None  # the document's own date ("YYYY-MM-DD", or "YYYY-MM" when it names only the month)
    place: str | None = None
    headline: str = ""  # the largest text of the first page, kept so the card can be derived again
    name: str = ""  # the title alone, before any distinguishing part a sibling of the same name called for

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in (*CARD_FIELDS, "source_title", *DERIVED_FIELDS)}

    @classmethod
    def from_dict(cls, data: dict) -> Card:
        return cls(**{k: v for k, v in data.items() if k in (*CARD_FIELDS, "source_title", *DERIVED_FIELDS)})

    def merged(self, meta: dict) -> Card:
        """This card with the user's values (`meta`, CARD_FIELDS only) in place of the derived ones."""
        data = self.to_dict()
        data.update({k: v for k, v in meta.items() if k in CARD_FIELDS})
        return Card.from_dict(data)

    @property
    def issuer(self) -> str | None:
        return self.entities[0] if self.entities else None


@functools.lru_cache(maxsize=4096)
def _stored_card(card_json: str, meta_json: str | None) -> Card:
    return Card.from_dict(orjson.loads(card_json)).merged(orjson.loads(meta_json or "{}"))


def stored_card(card_json: str | None, meta_json: str | None) -> Card | None:
    """The card a backend stored (its JSON) with the user's values (the meta JSON) applied; decoded once per
    distinct pair, a fresh copy each call."""
    if card_json is None:
        return None
    card = _stored_card(card_json, meta_json)
    return replace(card, entities=list(card.entities), identifiers=list(card.identifiers))


class CardMap(dict[str, Card]):
    """Document id -> Card, as `Store.cards` returns the library's: the store hands out this same map until a
    document, card or value changes, so what a reader computes from all the cards (routing's index of names) is
    kept with it, in `derived`, and computed once per state of the library rather than per query."""

    __slots__ = ("derived",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.derived: dict[str, Any] = {}


def shared_card(card_json: str, meta_json: str | None) -> Card:
    """`stored_card` without the copy: one Card per distinct pair, shared by every caller (`Store.cards`: routing
    reads every card of the library per query), to be read, never changed."""
    return _stored_card(card_json, meta_json)


def card_title(card: Card | None, meta: dict, fallback: str) -> str:
    """A document's title: the user's, else its card's, else the extractor's."""
    return meta.get("title") or (card.title if card is not None else "") or fallback


def retitled(info: DocumentInfo, card_json: str | None, values: dict) -> tuple[dict, str]:
    """What `update_document(meta=...)` stores: the document's user values with `values` merged in (None removes one; an unknown
    field is InvalidParams), and the title that follows from them and its stored card (JSON)."""
    meta = updated_meta(info.meta, values)
    card = None if card_json is None else Card.from_dict(orjson.loads(card_json))
    fallback = card.source_title if card is not None and card.source_title else info.title
    return meta, card_title(card, meta, fallback)


def user_meta(meta: dict | None) -> dict:
    """The card values a user set at ingest (CARD_FIELDS only, no nulls)."""
    return {k: v for k, v in (meta or {}).items() if k in CARD_FIELDS and v is not None}


def updated_meta(meta: dict, values: dict) -> dict:
    """`meta` with the user's new `values` merged in (None removes a value); an unknown field is InvalidParams."""
    merged = dict(meta)
    for key, value in values.items():
        if key not in CARD_FIELDS:
            raise InvalidParams(f"unknown card field {key!r}", fields=[key])
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


@dataclass(slots=True)
class ParsedDocument:
    """A document as extraction produces it (plain data: it pickles across the process pool)."""

    title: str
    media_type: str
    pages: list[str]
    sections: list[ParsedSection]
    warnings: list[str] = field(default_factory=list)
    card: Card | None = None  # derived at ingest (identity/card.py); `title` is then the card's title
    headline: str = ""  # the first page's largest text (identity/typography.py), for the card
    # Pages read by OCR (a scan): page number -> its words, each (start, end, line, left, bottom, right, top):
    # offsets into the page's text, the OCR line's index, the word's box in PDF page points (ingest/ocr.py).
    page_words: dict[int, list[tuple]] = field(default_factory=dict)


# ---------------------------------------------------------------- what the store returns

@dataclass(slots=True)
class DocumentInfo:
    document_id: str
    title: str
    path: str | None
    media_type: str
    pages: int
    sections: int
    status: str
    ingested_at: str
    sha256: str = ""
    warnings: list[str] = field(default_factory=list)
    card: Card | None = None  # the card with the user's values applied (None: not derived yet)
    meta: dict = field(default_factory=dict)  # the values a user set (CARD_FIELDS), which win over derived ones
    ocr_pages: list[int] = field(default_factory=list)  # the pages whose text was read by OCR, ascending


@dataclass(slots=True)
class SectionRow:
    section_id: str
    document_id: str
    document_title: str
    parent_id: str | None
    position: int
    depth: int
    ordinal: int
    title: str
    ancestors: list[str]
    page_start: int
    page_end: int
    is_leaf: bool
    text: str
    page_map: list[tuple[int, int]]
    summary: str
    status: str


@dataclass(slots=True)
class PageRow:
    document_id: str
    document_title: str
    number: int
    text: str
    status: str


@dataclass(slots=True)
class OutlineNode:
    section_id: str
    title: str
    depth: int
    page_start: int
    page_end: int
    children: list[OutlineNode] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Scope:
    """The documents a search may touch: id -> (title, status)."""

    documents: dict[str, tuple[str, str]]
    complete: bool  # True when every document in the KB is in scope (no filter needed)


@dataclass(frozen=True, slots=True)
class SectionRef:
    """A section as ranking sees it: where it is, and how much text it has (not the text itself).

    `own_map` is None for a leaf; for an internal node it is the page map of its own text (a preamble), since
    its page range is that of its whole subtree.
    """

    section_id: str
    document_id: str
    title: str
    path: list[str]  # titles of the enclosing sections, outermost first
    page_start: int
    page_end: int
    text_len: int
    own_map: list[tuple[int, int]] | None


class PageHit(NamedTuple):
    document_id: str
    number: int
    score: float  # higher is better


class SectionHit(NamedTuple):
    section: SectionRef
    score: float  # higher is better


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One section of a document's tree, without its text: what navigation shows a model."""

    section_id: str
    document_id: str
    parent_id: str | None
    depth: int
    title: str
    page_start: int
    page_end: int
    is_leaf: bool
    summary: str
    text_len: int
    head: str | None  # the start of the text when the stored summary is empty (to summarise on the fly)
