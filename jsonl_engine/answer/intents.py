"""Domain questions: the fixed ways analysts ask about one company's filing ("Does Acme have an improving gross
margin profile as of FY2022?", "Is Acme a capital-intensive business based on FY2022 data?", "Has Acme increased its
debt on balance sheet between FY2021 and FY2022?") lead with what an analyst reads to answer them.

A template is recognised by its wording (how analysts ask, whatever the company; `TEMPLATES`) and is answered by:
- statement rows (`Intent.items`, in the order an answer states them; " | " between items that stand for one
  another, the first found read; "^item": a label starting with the item's words, `_starting`): each found as a computation's input is (answer/compute.py `find_input`: in a
  document with financial statements, a statement's line item whose label names the item; a percentage, a margin,
  in the table that prints it), in the column of the asked year and, for a profile or a change, of the year before
  (with the change column a table prints). Of rows labelled alike that disagree, the largest, the consolidated whole
  over a parent company's or a guarantor's; after the first row, a row on its page first (one statement read). The
  first item is the one that answers: unless it is found, the others (revenue, assets) do not lead. An item not
  surely found is left out, and with none found the answer keeps its own order. Nothing is computed here: the
  figures are the rows' own.
- the extreme of rows compared (`Intent.compare`: "Among operations, investing, and financing activities, which
  brought in the most ..."): the candidates' rows of one table, its line saying so (answer/extreme.py).
- a sentence (`Intent.shares`, `_share_lead`): a category's or a customer's share of revenue, an acquisition with
  its price, a legal matter's largest amount; the answer's own, else one a search of the document finds.
A question asking whether dividends were paid in a quarter is answered by the quarter's figure: a row of a table of
the year's quarters, else a sentence stating a per-share dividend of the asked year (`_dividend_lead`).
Templates are about a year: a question naming a quarter (but that dividend one) is left to the answer's order.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from jsonl_engine.answer import extreme
from jsonl_engine.answer.citations import make_claim
from jsonl_engine.answer.compute import (
    Input,
    Operand,
    candidate_rows,
    find_input,
    input_claims,
    lead_with,
    named_statements,
    seed_document,
)
from jsonl_engine.answer.order import YEAR_NAMED
from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.tables import number, table_line
from jsonl_engine.identity.route import parse_periods
from jsonl_engine.ingest.normalize import collapse_ws

if TYPE_CHECKING:
    from jsonl_engine.answer.sentences import Segment
    from jsonl_engine.answer.synthesize import Synthesis
    from jsonl_engine.retrieval import Passage
    from jsonl_engine.store import Store


@dataclass(frozen=True, slots=True)
class Intent:
    name: str  # what the template asks, for `first_claim.why`
    items: tuple[str, ...]  # the line items read, in the order an answer states them ("a | b": the first found)
    prior: bool = True  # the year before the asked one is read too (a profile, a change between two years)
    compare: bool = False  # the items are the candidates of a superlative: the extreme one leads (answer/extreme.py)
    shares: str = ""  # answered by a sentence (`_share_lead`): "largest", the one stating the largest share of revenue
    # over the question's threshold; "first", unless one leads, the first stating a customer's share of revenue;
    # "acquisition", the first stating an acquisition with its price or stake; "legal", the largest amount a
    # legal matter's sentence states
    label_word: str = ""  # a word every row's label holds ("cash": "Net cash used in investing activities", not
    # "Other investing activities")


MAX_ROWS = 3  # rows an intent leads with: the answer keeps room for the sentences that explain them
TEMPLATES: tuple[tuple[re.Pattern[str], Intent], ...] = (
    # "Does Acme have a reasonably healthy liquidity profile based on its quick ratio ...?", "Has Acme's quick ratio
    # improved or declined ...?": every definition divides by current liabilities and counts cash
    (re.compile(r"\bquick\s+ratio\b", re.IGNORECASE),
     Intent("the quick ratio's inputs", ("^total current liabilities", "^cash and cash equivalents",
                                         "accounts receivable"))),
    # "Is Acme a capital-intensive business based on FY2022 data?": capital expenditure against revenue and assets
    (re.compile(r"\bcapital[- ]intensive\b|\bcapital\s+intensity\b", re.IGNORECASE),
     Intent("capital intensity's figures", ("capex | property plant and equipment additions", "revenue",
                                            "^total assets"), prior=False)),
    # "Does Acme have an improving gross margin profile as of FY2022?", "What drove gross margin change ...?"
    (re.compile(r"\bgross\s+margin\s+(?:profile|change)\b", re.IGNORECASE),
     Intent("the gross margin's figures", ("gross margin % | gross profit | cost of sales", "revenue"))),
    (re.compile(r"\boperating\s+margin\s+(?:profile|change)\b", re.IGNORECASE),
     Intent("the operating margin's figures", ("operating margin % | operating income", "revenue"))),
    # "Does Acme have positive working capital based on FY2022 data?"
    (re.compile(r"\bworking\s+capital\b", re.IGNORECASE),
     Intent("working capital's figures", ("^total current assets", "^total current liabilities"), prior=False)),
    # "Has Acme increased its debt on balance sheet between FY2021 and FY2022?"
    (re.compile(r"\b(?:increased|decreased|reduced|raised|changed)\s+(?:its\s+)?(?:total\s+)?debt\b|"
                r"\bdebt\s+on\s+(?:its\s+|the\s+)?balance\s+sheet\b", re.IGNORECASE),
     Intent("the debt on the balance sheet", ("^total debt | ^long-term debt",
                                              "^current portion of long-term debt | ^short-term borrowings | "
                                              "^short-term debt"))),
    # "Are there any product categories / service categories that represent more than 20% of Acme's revenue for
    # FY2022?": the sentence stating a category's share of revenue, the largest first
    (re.compile(r"\bmore\s+than\s+\d+(?:\.\d+)?\s?%\s+of\b[^?]*\b(?:revenues?|sales)\b", re.IGNORECASE),
     Intent("the categories' shares of revenue", (), prior=False, shares="largest")),
    # "What are major acquisitions that Acme has done in FY2023, FY2022 and FY2021?": a sentence stating one
    (re.compile(r"\bacquisitions?\b[^?]*\b(?:done|made|completed|closed)\b", re.IGNORECASE),
     Intent("the acquisitions", (), prior=False, shares="acquisition")),
    # "Has Acme reported any materially important ongoing legal battles from FY2022?": the largest amount stated
    (re.compile(r"\blegal\s+(?:battles?|proceedings|disputes?|matters)\b", re.IGNORECASE),
     Intent("the legal matters", (), prior=False, shares="legal")),
    # "Who are the primary customers of Acme as of FY2022?": the sentence stating their share of revenue
    (re.compile(r"\b(?:primary|main|major|largest)\s+customers?\b", re.IGNORECASE),
     Intent("the customers' share of revenue", (), prior=False, shares="first")),
    # "Among operations, investing, and financing activities, which brought in the most (or lost the least) cash
    # flow ...?": the three totals of the cash flow statement, one table, the extreme one first
    (re.compile(r"\boperat\w*,\s+investing,?\s+(?:and|or)\s+financing\b", re.IGNORECASE),
     Intent("the cash flow statement's three totals", ("operating activities | operations", "investing activities",
                                                     "financing activities"), prior=False, compare=True,
            label_word="cash")),
    # "How much has the effective tax rate of Acme changed between FY2021 and FY2022?": the rate's row (a sentence
    # stating it leads otherwise, as the answer's order has it)
    (re.compile(r"\beffective\s+(?:income\s+)?tax\s+rates?\b", re.IGNORECASE),
     Intent("the effective tax rate", ("^effective tax rate % | ^effective income tax rate %",))),
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
        return _dividend_lead(store, query, out, document_ids, statuses, max_chars, max_claims)
    intent, periods = intent_of(query), parse_periods(query)
    target = periods.target
    if intent is None or target is None or periods.quarter or len(document_ids) != 1:
        return out
    if intent.shares:
        asked = {str(y) for y in periods.years}
        return _share_lead(store, query, out, intent, asked, document_ids, statuses, max_chars, max_claims)
    if intent.compare:
        return _compared(store, query, out, intent, str(target), document_ids, statuses, max_chars, max_claims)
    years = (str(target), str(target - 1)) if intent.prior else (str(target),)
    named, memo = named_statements(query), {}
    seed_document(store, document_ids[0], memo)  # a line item is read on the statements, without a search
    found: list[Input] = []
    for n, item in enumerate(intent.items):
        for alternative in item.split(" | "):
            phrase = alternative.strip().lstrip("^")
            got = find_input(store, Operand(phrase, str(target)), document_ids, statuses, named, memo,
                             whole=True, near=found[0].page if found else None,
                             fit_of=_starting(phrase) if alternative.strip().startswith("^") else None)
            if isinstance(got, Input):
                found.append(got)
                break
        if not found and n == 0:
            return out  # the item that answers is not surely found: the others alone do not (revenue, assets)
        if len(found) >= MAX_ROWS:
            break
    claims, lines, tables = input_claims(found, dict.fromkeys(range(len(found)), years), change=intent.prior)
    lead_with(out, claims, lines, tables, head=None, max_chars=max_chars, max_claims=max_claims)
    label = " ".join(found[0].row.label.text.split()) if found[0].row.label else found[0].operand.phrase
    out.first_claim = {"id": claims[0].id, "why": f"{intent.name}: the row {label!r} (for {found[0].operand.phrase}) "
                       f"in the {' and '.join(years)} columns, as an analyst reads the question"}
    return out


def _starting(item: str) -> Callable[[str], int | None]:
    """A label fit for a row whose label starts with `item`'s words ("Long-term debt, net" for "long-term debt",
    not "Current portion of long-term debt" nor "Repayment of long-term debt"): the words after them, fewer
    closer."""
    want = re.findall(r"[a-z]+", item.lower())

    def fit(label: str) -> int | None:
        words = re.findall(r"[a-z]+", label.lower())
        words = words[1:] if words[:1] == ["total"] and want[:1] != ["total"] else words
        return len(words) - len(want) if words[:len(want)] == want else None
    return fit


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
            for fit, i in candidate_rows(store, Operand(alternative.strip(), year), document_ids, statuses, memo,
                                         search=f"net cash {' '.join(intent.items).replace('|', '')} {year}"):
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
_PER_SHARE_DIVIDEND = re.compile(r"\bdividends?\b(?:[^.;]|\.\d)*?\$\s?\d[\d,]*(?:\.\d+)?\s+(?:per|a)\s+(?:common\s+)?"
                                 r"share\b|\$\s?\d[\d,]*(?:\.\d+)?\s+(?:per|a)\s+(?:common\s+)?share\b(?:[^.;]|\.\d)*?"
                                 r"\bdividends?\b", re.IGNORECASE)  # within a sentence ("by 2.1% to $0.6150 ...")


def _dividend_lead(store: Store, query: str, out: Synthesis, document_ids: Sequence[str], statuses: Sequence[str],
                   max_chars: int, max_claims: int) -> Synthesis:
    """A question whether dividends were paid in a quarter, answered by the quarter's dividend per share: unless a
    dividend row read in the asked quarter's column, or a sentence stating a per-share dividend, leads already, the
    row of dividends per share of a table of the year's quarters ("Cash dividends declared per common share, 2nd
    Quarter"), else a sentence of the answer, else of a search of the document, stating a per-share dividend in a
    year asked ("In March, June, September and December 2021, we paid dividends of $0.01 per share")."""
    periods = parse_periods(query)
    if not out.claims or periods.target is None or len(document_ids) != 1:
        return out
    first = out.claims[0]
    reading = out.tables.get(first.id)
    label = reading.row.label.text if reading is not None and reading.row.label is not None else ""
    if (reading is None and _PER_SHARE_DIVIDEND.search(first.text)) or (reading is not None and reading.asked
                                                                       and _DIVIDEND.search(label)):
        return out
    year, memo = str(periods.target), {}
    search = f"dividends per share quarter {year}"
    rows = candidate_rows(store, Operand("dividends per share", year, quarter=periods.quarter), document_ids,
                          statuses, memo, search=search, fit_of=_dividend_fit)
    rows = [(fit, i) for fit, i in rows if _per_share_cells(i)]
    if rows:
        row = min(rows, key=lambda r: r[0])[1]
        claims, lines, tables = input_claims([row])
        lead_with(out, claims, lines, tables, head=None, max_chars=max_chars, max_claims=max_claims)
        out.first_claim = {"id": claims[0].id, "why": "the dividends per share of the asked quarter, in a table of "
                           "the year's quarters"}
        return out
    years = {str(y) for y in periods.years}

    def stated(text: str) -> bool:
        return bool(_PER_SHARE_DIVIDEND.search(text)) and any(y in text for y in years)

    why = "a sentence stating the dividend per share paid in the asked year, for a quarter's dividend"
    for i, claim in enumerate(out.claims):
        if claim.id not in out.tables and stated(claim.text):
            return _moved_first(out, i, why)
    for p in memo.get(("search", search)) or []:
        for seg in segment(p.text):
            if seg.kind in ("sentence", "bullet") and stated(p.text[seg.start:seg.end]):
                claim = make_claim(section_id=p.section_id, document_id=p.document_id,
                                   document_title=p.document_title, section_text=p.text, page_map=p.page_map,
                                   page_start=p.page_start, start=seg.start, end=seg.end)
                lead_with(out, [claim], [f"{' '.join(claim.text.split())} [{claim.id}]"], {}, head=None,
                          max_chars=max_chars, max_claims=max_claims)
                out.first_claim = {"id": claim.id, "why": why}
                return out
    return out


_DIVIDEND = re.compile(r"\bdividends?\b", re.IGNORECASE)
_PER_SHARE_LABEL = re.compile(r"\bper\s+(?:common\s+)?share\b", re.IGNORECASE)


def _dividend_fit(label: str) -> int | None:
    """How closely a row's label names dividends per share ("Cash dividends declared per common share", or
    "Dividends paid" in a table of the year's quarters, whose cells `_per_share_cells` then checks: its words, fewer
    closer), None for another row (earnings per share, a stock price)."""
    return len(label.split()) if _DIVIDEND.search(label) else None


def _per_share_cells(row: Input) -> bool:
    """The row's values are amounts per share: its label says so, or every value has cents and is under 100 ("0.91",
    not the total paid, "(4,630)")."""
    if row.row.label is not None and _PER_SHARE_LABEL.search(row.row.label.text):
        return True
    values = [c.text.replace("$", "").strip() for c in row.row.cells if not c.empty]
    return bool(values) and all(re.fullmatch(r"\d{1,2}\.\d+", v) for v in values)


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


# a share of revenue stated in a sentence: "represented 39% of our total consolidated net sales", "71% of our $47.2
# billion in net sales", "approximately 13.5% and 10.7% of the total consolidated revenues"
_SHARE_OF_REVENUE = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?(?:%|percent)\s+of\s+(?:(?:our|the|its|total|consolidated|"
                               r"company['’]s)\s+|\$\s?[\d.,]+\s+(?:billion|million)\s+(?:in\s+)?)*(?:net\s+|operating\s+)?"
                               r"(?:sales|revenues?)\b", re.IGNORECASE)
_CATEGORY = re.compile(r"\b(?:segments?|business(?:es)?|products?|services?|categor(?:y|ies)|divisions?|brands?|"
                       r"franchises?|lines?)\b", re.IGNORECASE)  # what a category's share is written about
_CUSTOMER = re.compile(r"\b(?:customers?|clients?|government|wholesalers?|distributors?)\b", re.IGNORECASE)
_ACQUIRED = re.compile(r"\b(?:completed|closed|consummated)\s+(?:the\s+|its\s+|our\s+)?(?:[\w.’'&-]+\s+){0,3}?"
                       r"acquisitions?\b|\bacquired\s+(?:all|a|an|the\s+remaining|substantially|approximately|\d)",
                       re.IGNORECASE)  # an acquisition made ("we acquired 85% of ..."), not "acquired intangible assets"
_MONEY = re.compile(r"\$\s?\d|\b\d[\d,.]*\s+(?:million|billion)\b", re.IGNORECASE)  # a price
_STAKE = re.compile(r"\d\s?%")  # the stake bought: "85% of the shares"
# a legal matter: a lawsuit, a court, a prosecution ("settlement" alone also names a pension's or a contract's, and
# "penalties" a tax position's: they count only beside the words of a legal matter)
_LEGAL = re.compile(r"\b(?:litigation|lawsuits?|plaintiffs?|courts?|jury|verdicts?|judgments?|class\s+actions?|"
                    r"prosecution|legal\s+(?:proceedings|matters|actions?)|damages|settlement\s+agreements?|"
                    r"under\s+the\s+settlement)\b|\battorneys?(?:['’]|\s+general\b)", re.IGNORECASE)
_LEGAL_HEADING = re.compile(r"\blegal\b|\blitigation|\bcontingenc|\bproceedings\b|\blawsuits?\b", re.IGNORECASE)
_NOT_LEGAL = re.compile(r"\b(?:tax|taxes|pension|annuit\w*|derivatives?|hedg\w*|swaps?|treasury\s+locks?)\b",
                        re.IGNORECASE)
_AMOUNT = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)(?:\s+(million|billion))?", re.IGNORECASE)
DOLLARS = 100_000  # a plain amount this large is in dollars; a smaller one, in a note's millions ("$307")
_THRESHOLD = re.compile(r"\bmore\s+than\s+(\d+(?:\.\d+)?)\s?%", re.IGNORECASE)
ACQUIRED_AT = 2  # `_stated_share` of an acquisition stated with its price
MAJOR_CUSTOMER = 10  # the share of revenue from which filings name a customer (10% or more: Regulation S-K)
SHARE_PASSAGES = 12  # passages searched for sentences stating a share of revenue


def _stated_share(mode: str, text: str, years: set[str]) -> Decimal | None:
    """What `text` states for `mode`, in an asked year (or naming no year): "largest", the largest share of revenue
    of a category (a segment, a product line named before the share: "our Aeronautics business segment ...
    represented 39% of ..."), never a customer's; "first", a customer's share of 10% or more (less, "less than 0.5%
    of sales to customers", is no customer named); "acquisition", an acquisition completed or made with its price
    (2) or, less telling, only the stake bought (1); "legal", the largest amount (in millions) a sentence about a
    legal matter states (a settlement, a penalty, damages)."""
    named = set(YEAR_NAMED.findall(text))  # "2022," too, not "2,022"
    if named and not named & years:
        return None
    if mode == "legal":
        legal = _LEGAL.search(text) and not _NOT_LEGAL.search(text)
        amounts = [_millions(m) for m in _AMOUNT.finditer(text)] if legal else []
        return max(amounts) if amounts else None
    if mode == "acquisition":
        return None if not _ACQUIRED.search(text) else Decimal(2) if _MONEY.search(text) else \
            Decimal(1) if _STAKE.search(text) else None
    first = _SHARE_OF_REVENUE.search(text)
    if first is None:
        return None
    if mode == "largest" and (_CUSTOMER.search(text) or not _CATEGORY.search(text, 0, first.start())):
        return None  # a customer's share ("69% of our net sales from the government"), or none's
    if mode == "first" and not _CUSTOMER.search(text):
        return None  # a kind of contract's share, not a customer's
    share = max(Decimal(m.group(1)) for m in _SHARE_OF_REVENUE.finditer(text))
    return share if mode != "first" or share >= MAJOR_CUSTOMER else None


def _millions(m: re.Match[str]) -> Decimal:
    """An amount in millions: "$4.3 billion" 4,300, "$625 million" 625, "$1,500,000" 1.5, "$307" (a note's millions)
    307."""
    value = Decimal(m.group(1).replace(",", ""))
    scale = (m.group(2) or "").lower()
    return value * 1000 if scale == "billion" else value if scale or value < DOLLARS else value / 1_000_000


def _share_lead(store: Store, query: str, out: Synthesis, intent: Intent, years: set[str], document_ids: Sequence[str],
                statuses: Sequence[str], max_chars: int, max_claims: int) -> Synthesis:
    """`out` led by a sentence of the kind its template asks (`_stated_share`) of an asked year (or naming no year):
    of the answer's own claims, then of the document's passages a search for such sentences finds, in that order.
    "largest": the one stating the largest share over the question's threshold ("more than 20% of revenue");
    "first": the first; "acquisition": the first stating a price, else the first stating a stake."""
    mode = intent.shares
    threshold = Decimal(m.group(1)) if (m := _THRESHOLD.search(query)) and mode == "largest" else Decimal(0)
    own = [(value, n) for n, c in enumerate(out.claims) if mode != "legal"  # its headings: the search's passages
           and (value := _stated_share(mode, c.text, years)) is not None and value > threshold]
    best = max((v for v, _ in own), default=None)
    if own and mode != "largest" and (mode == "first" or best == ACQUIRED_AT):
        n = next(n for v, n in own if v == best)
        return out if n == 0 else _moved_first(out, n, f"{intent.name}: the first claim stating one")
    found = [(v, p, seg) for v, p, seg in _share_sentences(store, mode, years, document_ids, statuses) if v > threshold]
    if own and (not found or max(v for v, _, _ in found) <= best):
        n = next(n for v, n in own if v == best)  # the answer's own is as telling as any found
        return out if n == 0 else _moved_first(out, n, f"{intent.name}: the claim stating the most")
    if not found:
        return out
    share, p, seg = max(found, key=lambda f: f[0])  # the first of the largest (search order)
    claim = make_claim(section_id=p.section_id, document_id=p.document_id, document_title=p.document_title,
                       section_text=p.text, page_map=p.page_map, page_start=p.page_start, start=seg.start, end=seg.end)
    why = f"{intent.name}: a sentence stating one" if mode == "acquisition" else \
        f"{intent.name}: the sentence stating the largest amount ({share:,.1f} million)" if mode == "legal" else \
        f"{intent.name}: a sentence stating {share}% of revenue" + \
        (f", the largest over {threshold}%" if mode == "largest" else "")
    at = next((n for n, c in enumerate(out.claims) if c.id == claim.id), None)
    if at is not None:
        return _moved_first(out, at, why)
    lead_with(out, [claim], [f"{' '.join(claim.text.split())} [{claim.id}]"], {}, head=None, max_chars=max_chars,
              max_claims=max_claims)
    out.first_claim = {"id": claim.id, "why": why}
    return out


def _share_sentences(store: Store, mode: str, years: set[str], document_ids: Sequence[str], statuses: Sequence[str]
                     ) -> list[tuple[Decimal, Passage, Segment]]:
    """The sentences stating a share of revenue (`_stated_share`) in the passages a search for them finds, in
    retrieval order, then position."""
    from jsonl_engine.retrieval import retrieve

    search = {"largest": "segment represented percent of total consolidated net sales revenues",
              "first": "principal customers percent of net sales revenues",
              "acquisition": "completed the acquisition of consideration",
              "legal": "litigation lawsuits settlement agreed to pay penalty"}[mode] + " " + " ".join(sorted(years))
    out = []
    for p in retrieve(store, search, document_ids=list(document_ids), statuses=tuple(statuses),
                      limit=SHARE_PASSAGES).passages:
        if mode == "legal" and not _LEGAL_HEADING.search(" ".join([*p.path, p.title])):
            continue  # a legal matter is told under a heading saying so ("Legal Proceedings", "Contingencies")
        for seg in segment(p.text):
            if seg.kind in ("sentence", "bullet") and (share := _stated_share(mode, p.text[seg.start:seg.end],
                                                                            years)) is not None:
                out.append((share, p, seg))
    return out


def _moved_first(out: Synthesis, n: int, why: str) -> Synthesis:
    """`out` with its `n`-th claim (and answer line) first."""
    lines = out.answer.split("\n")
    if len(lines) == len(out.claims):
        lines.insert(0, lines.pop(n))
        out.answer = "\n".join(lines)
    out.claims.insert(0, out.claims.pop(n))
    out.first_claim = {"id": out.claims[0].id, "why": why}
    return out
