"""Domain questions: the fixed ways analysts ask about one company's filing ("Does Acme have an improving gross
margin profile as of FY2022?", "Is Acme a capital-intensive business based on FY2022 data?", "Has Acme increased its
debt on balance sheet between FY2021 and FY2022?") are answered from the statement rows an analyst reads for them.

A template is recognised by its wording (how analysts ask, whatever the company), and names the line items an
analyst states, in the order an answer states them (" | " between items that stand for one another: the first found
is read). Each item is a table row found as a computation's input is (answer/compute.py `find_input`: in a document
with financial statements, a statement's line item whose label names the item; a percentage, a margin or a rate, in
the table that prints it), in the column of the year asked (and of the year before, for a profile or a change, which
the row's line then shows too, with the change column a table prints; of rows labelled alike that disagree, the
largest, the consolidated whole over a parent company's or a segment's; after the first row, a row on its page
first: one statement read). The first item is the one that answers:
unless it is found, the others (revenue, assets) are not led with. The answer leads with the rows found; an item not surely found is left out (another
row labelled alike with another figure, no column for the year), and with none found the answer keeps its own order.
Nothing is computed here: the figures are the rows' own. A template asking which of its items is the largest
("Among operations, investing, and financing activities, which brought in the most ...") leads with the extreme of
their rows when all are found in one table, its line saying so (answer/extreme.py).

A question asking whether dividends were paid in a quarter is answered by the quarter's figure: a row of a
table of the year's quarters, else a sentence stating a per-share dividend of the asked year (`_dividend_lead`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from jsonl_engine.answer import extreme
from jsonl_engine.answer.compute import (
    Input,
    Operand,
    candidate_rows,
    find_input,
    input_claims,
    lead_with,
    named_statements,
)
from jsonl_engine.answer.tables import number, table_line
from jsonl_engine.identity.route import parse_periods
from jsonl_engine.ingest.normalize import collapse_ws

if TYPE_CHECKING:
    from jsonl_engine.answer.synthesize import Synthesis
    from jsonl_engine.store import Store


@dataclass(frozen=True, slots=True)
class Intent:
    name: str  # what the template asks, for `first_claim.why`
    items: tuple[str, ...]  # the line items read, in the order an answer states them ("a | b": the first found)
    prior: bool = True  # the year before the asked one is read too (a profile, a change between two years)
    compare: bool = False  # the items are the candidates of a superlative: the extreme one leads (answer/extreme.py)
    label_word: str = ""  # a word every row's label holds ("cash": "Net cash used in investing activities", not
    # "Other investing activities")


MAX_ROWS = 3  # rows an intent leads with: the answer keeps room for the sentences that explain them
TEMPLATES: tuple[tuple[re.Pattern[str], Intent], ...] = (
    # "Does Acme have a reasonably healthy liquidity profile based on its quick ratio ...?", "Has Acme's quick ratio
    # improved or declined ...?": every definition divides by current liabilities and counts cash
    (re.compile(r"\bquick\s+ratio\b", re.IGNORECASE),
     Intent("the quick ratio's inputs", ("total current liabilities", "cash and cash equivalents",
                                         "accounts receivable"))),
    # "Is Acme a capital-intensive business based on FY2022 data?": capital expenditure against revenue and assets
    (re.compile(r"\bcapital[- ]intensive\b|\bcapital\s+intensity\b", re.IGNORECASE),
     Intent("capital intensity's figures", ("capex", "revenue", "total assets"), prior=False)),
    # "Does Acme have an improving gross margin profile as of FY2022?", "What drove gross margin change ...?"
    (re.compile(r"\bgross\s+margin\s+(?:profile|change)\b", re.IGNORECASE),
     Intent("the gross margin's figures", ("gross margin % | gross profit | cost of sales", "revenue"))),
    (re.compile(r"\boperating\s+margin\s+(?:profile|change)\b", re.IGNORECASE),
     Intent("the operating margin's figures", ("operating margin % | operating income", "revenue"))),
    # "Does Acme have positive working capital based on FY2022 data?"
    (re.compile(r"\bworking\s+capital\b", re.IGNORECASE),
     Intent("working capital's figures", ("total current assets", "total current liabilities"), prior=False)),
    # "Has Acme increased its debt on balance sheet between FY2021 and FY2022?"
    (re.compile(r"\b(?:increased|decreased|reduced|raised|changed)\s+(?:its\s+)?(?:total\s+)?debt\b|"
                r"\bdebt\s+on\s+(?:its\s+|the\s+)?balance\s+sheet\b", re.IGNORECASE),
     Intent("the debt on the balance sheet", ("total debt | long-term debt",))),
    # "Among operations, investing, and financing activities, which brought in the most (or lost the least) cash
    # flow ...?": the three totals of the cash flow statement, one table, the extreme one first
    (re.compile(r"\boperat\w*,\s+investing,?\s+(?:and|or)\s+financing\b", re.IGNORECASE),
     Intent("the cash flow statement's three totals", ("operating activities | operations", "investing activities",
                                                     "financing activities"), prior=False, compare=True,
            label_word="cash")),
    # "What is the quantity of restructuring costs directly outlined in Acme's income statements for FY2022?"
    (re.compile(r"\brestructuring\s+(?:costs?|charges?|expenses?)\b", re.IGNORECASE),
     Intent("restructuring costs", ("restructuring",), prior=False)),
)


def intent_of(query: str) -> Intent | None:
    """The template `query` is asked in, if any."""
    return next((intent for pattern, intent in TEMPLATES if pattern.search(query)), None)


def lead(store: Store, query: str, out: Synthesis, *, document_ids: Sequence[str], statuses: Sequence[str],
         max_chars: int, max_claims: int) -> Synthesis:
    """`out` led by the rows its template reads (module docstring), when the question is asked in one and
    `document_ids` is one document; else unchanged (but a dividend question's quarter: `_dividend_lead`)."""
    if _DIVIDEND_QUARTER.search(query):
        return _dividend_lead(query, out)
    intent = intent_of(query)
    target = parse_periods(query).target
    if intent is None or target is None or len(document_ids) != 1:
        return out
    years = (str(target), str(target - 1)) if intent.prior else (str(target),)
    named, memo = named_statements(query), {}
    found: list[Input] = []
    if intent.compare:
        return _compared(store, query, out, intent, str(target), document_ids, statuses, max_chars, max_claims)
    for n, item in enumerate(intent.items):
        for alternative in item.split(" | "):
            got = find_input(store, Operand(alternative.strip(), str(target)), document_ids, statuses, named, memo,
                             whole=True, near=found[0].page if found else None)
            if isinstance(got, Input):
                found.append(got)
                break
        if not found and n == 0:
            return out  # the item that answers is not surely found: the others alone do not (revenue, assets)
        if len(found) >= MAX_ROWS:
            break
    claims, lines, tables = input_claims(found, dict.fromkeys(range(len(found)), years), change=intent.prior)
    lead_with(out, claims, lines, tables, head=None, max_chars=max_chars, max_claims=max_claims)
    out.first_claim = {"id": claims[0].id, "why": f"{intent.name}: the row of {found[0].operand.phrase} in the "
                       f"{' and '.join(years)} columns, as an analyst reads the question"}
    return out


def _compared(store: Store, query: str, out: Synthesis, intent: Intent, year: str, document_ids: Sequence[str],
              statuses: Sequence[str], max_chars: int, max_claims: int) -> Synthesis:
    """A superlative over the template's items: of the pages holding a row for every item (the one whose label
    names it most closely), the one whose rows are the largest in sum (the consolidated totals, not a parent
    company's or a guarantor's), its rows compared by answer/extreme.py `pick`; the winner leads with a line
    saying so. Unchanged when no page holds them all or none wins."""
    ask = extreme.asked(query)
    if ask is None:
        return out
    memo: dict = {}
    per_item: list[dict[int | None, list[tuple[int, Input]]]] = []
    for item in intent.items:
        pages: dict[int | None, list[tuple[int, Input]]] = {}
        for alternative in item.split(" | "):
            for fit, i in candidate_rows(store, Operand(alternative.strip(), year), document_ids, statuses, memo):
                if i.row.label is not None and intent.label_word in i.row.label.text.lower():
                    pages.setdefault(i.page, []).append((fit, i))
        per_item.append(pages)
    tables: list[list[Input]] = []
    for page in set.intersection(*(set(p) for p in per_item)):
        rows = []
        for pages in per_item:
            top = min(f for f, _ in pages[page])
            closest = {(i.start, i.passage.section_id): i for f, i in pages[page] if f == top}
            if len(closest) != 1:
                break  # two rows name the item alike on this page: not one table's
            rows.append(next(iter(closest.values())))
        if len(rows) == len(per_item) and len({r.start for r in rows}) == len(rows):
            tables.append(rows)
    if not tables:
        return out
    rows = max(tables, key=lambda t: (sum(abs(number(i.text) or 0) for i in t), -(t[0].page or 0)))
    winner = extreme.pick(ask, rows[0].row, rows[0].cell, [i.row for i in rows], collapse_ws)
    if winner is None:
        return out
    rows.insert(0, rows.pop(winner.index))
    _unjudged(out, ask)
    claims, lines, readings = input_claims(rows)
    lines[0] = f"{winner.line} [{claims[0].id}]"
    readings[claims[0].id] = dataclasses.replace(readings[claims[0].id], line=winner.line)
    lead_with(out, claims, lines, readings, head=None, max_chars=max_chars, max_claims=max_claims)
    out.first_claim = {"id": claims[0].id, "why": f"{intent.name}: {winner.why}"}
    return out


_DIVIDEND_QUARTER = re.compile(r"\bdividends?\b.*\b(?:q[1-4]|(?:first|second|third|fourth)\s+(?:fiscal\s+)?quarter)\b",
                               re.IGNORECASE)
_PER_SHARE_DIVIDEND = re.compile(r"\bdividends?\b[^.;]*?\$\s?\d[\d,]*(?:\.\d+)?\s+(?:per|a)\s+(?:common\s+)?share\b|"
                                 r"\$\s?\d[\d,]*(?:\.\d+)?\s+(?:per|a)\s+(?:common\s+)?share\b[^.;]*?\bdividends?\b",
                                 re.IGNORECASE)


def _dividend_lead(query: str, out: Synthesis) -> Synthesis:
    """A question whether dividends were paid in a quarter, answered first by a year's table row that has no
    quarter's column (the cash flow statement's "Dividends paid"): led instead by a sentence of the answer stating
    a per-share dividend in a year asked ("In March, June, September and December 2021, we paid dividends of $0.01
    per share"), which says what was paid each quarter."""
    if not out.claims:
        return out
    first = out.tables.get(out.claims[0].id)
    if first is None or first.asked:
        return out  # a sentence, or a row read in the asked quarter's column, leads already
    years = {str(y) for y in parse_periods(query).years}
    lines = out.answer.split("\n")
    for i, claim in enumerate(out.claims):
        if claim.id in out.tables or not _PER_SHARE_DIVIDEND.search(claim.text) \
                or not any(y in claim.text for y in years):
            continue
        if i < len(lines) and len(lines) == len(out.claims):
            lines.insert(0, lines.pop(i))
            out.answer = "\n".join(lines)
        out.claims.insert(0, out.claims.pop(i))
        out.first_claim = {"id": claim.id, "why": "a sentence stating the dividend per share paid in the asked year, "
                           "for a quarter's dividend, over a row of the year's total"}
        return out
    return out


def _unjudged(out: Synthesis, ask: extreme.Asked) -> None:
    """`out`'s rows that answer/synthesize.py judged the superlative's (in a table of its choosing) read as plain rows:
    one verdict per answer, the template's."""
    verdict = f"{ask.word.capitalize()} of "
    lines = out.answer.split("\n")
    if len(lines) != len(out.claims):
        return
    for n, claim in enumerate(out.claims):
        reading = out.tables.get(claim.id)
        if reading is None or not (reading.line or "").startswith(verdict):
            continue
        line = table_line(reading.row, reading.asked)
        out.tables[claim.id] = dataclasses.replace(reading, line=line)
        lines[n] = f"{line or ' '.join(claim.text.split())} [{claim.id}]"
    out.answer = "\n".join(lines)
