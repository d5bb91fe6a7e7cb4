"""Claim order: the claim that answers the question comes first, by how directly each unit answers it.

Each chosen unit keeps its synthesis score (coverage, proximity, figures, rank) and gains or loses for what makes
an answer direct, judged from how the text is written, never from what it is about:
  +0.30 the question asks for an amount and the unit holds a figure      (-0.30 when it holds none)
  +0.30 a table row whose column for the asked period (a year the question names; with a quarter named, a
        quarter's column: "Three Months Ended ...") holds a value, or a row
        whose label is the asked year ("2024 1,097 862")
        (-0.15 when the row's columns are known and none is the asked period); a question asking how something
        changed also takes the change column the table prints and the periods it compares ("2022 2021 Change")
  +0.15 a sentence that names the asked period and holds a figure
  +0.40 x the share of the question's content terms found in a row's label (the row is about the asked item;
        a term found through a phrase it stands for, "capex" as "purchases of property ...", counts half;
        terms of the document's title, its issuer's name, the words naming the statement to read ("balance
        sheet") and the period's words ("year end") do not count; a row labelled by its period, "2024 1,097
        862", is judged by its table's lead-in, "The benefit payments to retirees are expected to be ...")
  +0.20 a unit on a page of the statement the question names ("... shown in the cash flow statement"), or
  +0.10 on a page of the statement that holds the asked item when none is named (capex: the cash flow
        statement; identity/statements.py judged the pages, retrieval/cues.py says which statement)
  +0.15 a row whose label names the asked line item: it starts (after "Total") with the question's words for it
        ("Total current liabilities") or with a label statements print for it ("Net earnings" for net income,
        "Purchases of property, plant and equipment" for capex: retrieval/query.py LINE_ITEMS), or a sentence
        holding a figure that opens with the asked item (its subject: "Total workforce level at ... was ...")
  +0.25 of rows labelled alike naming the asked item, the largest in magnitude (its asked cell, else its
        largest cell): the whole (the consolidated statement's total), not a part (a subsidiary's, a segment's,
        a per-share figure)
  -0.03 per word of a row's label that the question does not have (at most 5): the closest label first
  +0.30 a labelled statement ("Probable cause: ...", "Primary endpoint: ...") whose label holds a query term
  +0.15 a sentence with a figure within 3 words of a question's term ("$13.2 billion in cash proceeds")
  -0.10 a sentence of more than 45 words (the answer is in it, with much else)
  -0.15 a unit of a passage below the depth shown (synthesize.POOL): it leads only when clearly more direct
A superlative question ("which ... the largest ...") then leads with the row of the extreme value, or the
sibling bullet stating the extreme change (answer/extreme.py). Units of the documents covering the named period stay ahead of the others (as in compose).
Ties break by the
retrieval rank, then the position in the passage: the order is deterministic, and the reasons of the first unit
are reported (`_meta.first_claim`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

from jsonl_engine.answer.tables import TableRow, year_of

T = TypeVar("T")
W_FIGURE, W_PERIOD_CELL, W_NO_PERIOD_CELL, W_PERIOD_SENTENCE, W_LABEL, W_LABELLED = 0.30, 0.30, 0.15, 0.15, 0.40, 0.30
W_NEAR, W_LONG, LONG_WORDS, NEAR_TOKENS = 0.15, 0.10, 45, 3
W_NAMED_STATEMENT, W_STATEMENT, W_ITEM, W_WHOLE = 0.20, 0.10, 0.15, 0.25
W_DEEP = 0.15  # a unit of a passage below the depth shown (synthesize.POOL): it leads only when clearly more direct
W_EXTRA, MAX_EXTRA = 0.03, 5  # per word of a row's label the question does not have (the closest label first)
_LABELLED = re.compile(r"^([A-Z][^:.;!?\n]{1,60}?):\s+[A-Z0-9$\"“(]")  # the value starts like one: "Probable cause: The ..."
MAX_LABEL_WORDS = 6
_STATEMENT_NAME = {"income": "income statement", "balance": "balance sheet", "cash_flow": "cash flow statement"}


@dataclass(frozen=True, slots=True)
class Ask:
    """What the question asks for, as far as ordering needs it."""
    figure: bool
    years: tuple[str, ...]
    quarter: bool = False  # the question names a quarter: a year's column is not its period
    statements: frozenset[str] = frozenset()  # the statements holding the asked item (identity/statements.py)
    named: bool = False  # the question names that statement as its source
    change: bool = False  # the question asks how something changed: a table's change column is part of the answer


@dataclass(frozen=True, slots=True)
class Judged:
    directness: float
    reasons: tuple[str, ...]
    asked_cells: tuple[int, ...] = ()  # indexes of the row's cells in the asked period's column(s)
    names_item: bool = False  # a row whose label names the asked line item


def label_of(body: str) -> str | None:
    """The label of a labelled statement ("Probable cause: The pilot's ..." -> "Probable cause"), if any."""
    m = _LABELLED.match(body)
    if m is None or len(m.group(1).split()) > MAX_LABEL_WORDS or body.rstrip().endswith(":"):
        return None  # "Pilot: Last Flight Review:": a form's labels, no value
    return m.group(1)


_QUARTER_COLUMN = re.compile(r"\b(?:three|3)\s+months\b|\bquarter|\bq[1-4]\b|\b(?:13|thirteen)\s+weeks\b",
                             re.IGNORECASE)


_CHANGE_ASKED = re.compile(r"\b(?:chang|increas|decreas|grow|drop|declin|differ|improv|deteriorat|rise|rose|fell|fall)"
                           r"\w*", re.IGNORECASE)
_CHANGE_COLUMN = re.compile(r"^(?:%\s*|percent(?:age)?\s+)?(?:change|increase|decrease|variance|inc\.?|dec\.?)\b"
                            r"|\bchange\b|\bincrease\s*/?\s*\(?decrease\)?", re.IGNORECASE)


def asks_change(query: str) -> bool:
    """The question asks how something changed ("How much did X change ...", "Was there any drop in ...")."""
    return bool(_CHANGE_ASKED.search(query))


def asked_cells(table: TableRow, years: Sequence[str], quarter: bool = False, change: bool = False,
                ) -> tuple[int, ...]:
    """Cells of `table` whose column names one of `years` (and a quarter, when one is asked) and hold a value;
    with `change`, and the cells of a change column the table prints ("Change", "% Increase (Decrease)") with
    the periods it compares (the columns before it, after the previous change column)."""
    if not years:
        return ()
    cells = tuple(i for i, c in enumerate(table.cells)
                  if not c.empty and c.column and any(year_of(p.text) in years for p in c.column if year_of(p.text))
                  and (not quarter or _QUARTER_COLUMN.search(c.column_text)))
    if not cells or not change:
        return cells
    changes = [i for i, c in enumerate(table.cells)
               if not c.empty and c.column and not year_of(c.column_text) and _CHANGE_COLUMN.search(c.column_text)]
    compared = {j for n, i in enumerate(changes) if any((changes[n - 1] if n else -1) < k < i for k in cells)
                for j in range((changes[n - 1] if n else -1) + 1, i + 1) if not table.cells[j].empty}
    return tuple(sorted(set(cells) | compared))


def judge(ask: Ask, body: str, *, score: float, has_figure: bool, table: TableRow | None,
          label_share: float, labelled_hit: bool, figure_near: bool = False, words: int = 0,
          label_extra: int = 0, statement: str | None = None, names_item: bool = False,
          whole: int = 0, label_from_lead: bool = False, deep: bool = False) -> Judged:
    """Directness of one unit and the reasons, per the module docstring."""
    value, why = score, [f"score {score:.3f}"]
    cells: tuple[int, ...] = ()
    if ask.figure:
        if has_figure:
            value += W_FIGURE
            why.append("holds a figure")
        else:
            value -= W_FIGURE
            why.append("holds no figure")
    if table is not None:
        value, cells = _judge_row(ask, table, value, why, label_share, label_extra, label_from_lead)
    if names_item:
        value += W_ITEM
        why.append("its label names the asked line item" if table is not None else "it opens with the asked item")
    if table is not None:
        if whole and names_item:
            value += W_WHOLE
            why.append(f"the largest of {whole} rows labelled alike")
    elif ask.years and has_figure and any(y in body for y in ask.years):
        value += W_PERIOD_SENTENCE
        why.append("names the asked period")
    if table is None:
        value = _judge_sentence(ask, value, why, figure_near, words)
    if statement is not None and statement in ask.statements:
        value += W_NAMED_STATEMENT if ask.named else W_STATEMENT
        why.append(f"on the {_STATEMENT_NAME.get(statement, statement)}" + (" the question names" if ask.named else ""))
    if labelled_hit:
        value += W_LABELLED
        why.append("a labelled statement whose label names the question's terms")
    if deep:
        value -= W_DEEP
        why.append("from a passage below the depth shown")
    return Judged(round(value, 9), tuple(why), cells, names_item)


def _judge_row(ask: Ask, table: TableRow, value: float, why: list[str], label_share: float,
               label_extra: int, label_from_lead: bool = False) -> tuple[float, tuple[int, ...]]:
    """`value` with a table row's terms added in turn (its label, then its period), `why` extended; and the
    asked period's cells. Added one by one, as the sum's rounding depends on the order."""
    if label_share:
        value += W_LABEL * label_share
        why.append(f"{'its table' + chr(39) + 's lead-in' if label_from_lead else 'row label'} holds {label_share:.0%} of "
                   "the question's terms")
    if label_extra:
        value -= W_EXTRA * min(label_extra, MAX_EXTRA)
        why.append(f"{label_extra} other word(s) in its label")
    cells = asked_cells(table, ask.years, ask.quarter, ask.change)
    if cells:
        value += W_PERIOD_CELL
        why.append("column " + ", ".join(table.cells[i].column_text for i in cells) + " is the asked period"
                   + (" (with the change the table prints)" if any(not year_of(table.cells[i].column_text)
                                                                   for i in cells) else ""))
    elif table.label is not None and year_of(table.label.text) in ask.years and \
            year_of(table.label.text) == table.label.text.strip():
        value += W_PERIOD_CELL
        why.append(f"a row for the asked period {table.label.text.strip()}")
    elif ask.years and table.mapped:
        value -= W_NO_PERIOD_CELL
        why.append("no column for the asked period")
    return value, cells


def _judge_sentence(ask: Ask, value: float, why: list[str], figure_near: bool, words: int) -> float:
    """`value` with a sentence's terms added in turn (a figure near the terms, its length), `why` extended."""
    if ask.figure and figure_near:
        value += W_NEAR
        why.append("a figure next to the question's terms")
    if words > LONG_WORDS:
        value -= W_LONG
        why.append(f"long ({words} words)")
    return value


def rank(units: Sequence[T], judged: Callable[[T], Judged], key: Callable[[T], tuple], *,
            first: Collection[str] = (), document_of: Callable[[T], str]) -> list[T]:
    """`units` most direct first: the `first` documents' units ahead, then directness, then `key` (rank, start)."""
    return sorted(units, key=lambda u: (document_of(u) not in first, -judged(u).directness, *key(u)))
