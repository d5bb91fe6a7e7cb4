"""Computed answers: a question that asks for a ratio, a change, a margin or a sum of figures printed in tables
gets a computed line, marked as computed, with each input cited (a table row of the answer) and the arithmetic
written out: "Computed (net working capital, 2021): 19,815 − 13,997 = 5,818 [c1][c2]".

The formula comes from the question: a definition it gives ("X is defined as: A / B", "Define X as A less B",
"X, defined as A less B") substituted into what it asks ("What is the FY2022 X less C?"), an expression it asks
for directly ("A + B", "A as a % of B"), or, for a metric it names without defining, the one formula analysts agree
on (STANDARD: EBITDA, its margin, gross/operating/net margins, retention and payout ratios, working capital, the
current ratio, free cash flow; a metric defined in several ways, the quick ratio or capital intensity, is never
guessed). Operands are phrases with an optional year ("FY2019 revenue"; else the year the question names; a quarter
it names, "the third quarter of 2019", is the column of a quarterly table), "average A between Y1 and Y2"
((A@Y1 + A@Y2) / 2), "change in A between Y1 and Y2" (A@Y2 − A@Y1) and "Y1 - Y2 N year average of E" (the mean of
E in each year). Numbers are constants ("365 * ..."); a note after an operand ("D&A [from cash flow statement]")
says where it is read; a parenthesised gloss after it ("capex (purchases of ...)") is left out. A margin is shown as
a percentage, as is a ratio the question asks in percent.

An operand's value is a table cell: a row whose label holds the operand's words in their order (or a label
statements print for it, retrieval/query.py LINE_ITEMS: "COGS" -> "Cost of sales"; "total X" also "X"), read with
its headers (answer/tables.py), in the column of the operand's year; in a document with primary financial
statements (as retrieval judged its pages at ingest), only rows on their pages (the sections of those pages are
read whatever the search ranked), or a row elsewhere whose figure a statement prints: a line item of a statement
is the figure itself, a note's table may be a part of it (a percentage operand, "gross margin %", is read in the table
that prints it: statements print amounts); of those, the rows of the statements the question names
("... in the balance sheet and the P&L") when they hold one. A payment the cash flow statement prints in
parentheses ("Capital spending (5,207)") counts by its size for an operand naming a payment (capex, dividends).
Never a wrong number: nothing is computed (the gap names the input) when an input is not found, when two rows fit
it equally well with different values, when another value is negative (its sign in the formula would be a guess),
or when the inputs' units differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from jsonl_engine.answer.sentences import segment
from jsonl_engine.answer.tables import TableRow, cells_of, number, quarter_of, read_row, year_of

if TYPE_CHECKING:
    from jsonl_engine.answer.synthesize import Synthesis
    from jsonl_engine.retrieval import Passage
    from jsonl_engine.store import Store

_DEFINE = re.compile(r"\b(?:define|defining)\s+(?P<name>[^.?]{2,80}?)\s+as:?\s+(?P<expr>[^?]+?)(?:\.(?:\s|$)|\?|$)"
                     r"|(?P<name2>[A-Za-z][^.?:]{2,80}?)\s+(?:is|are)\s+(?:defined|calculated)\s+as:?\s+"
                     r"(?P<expr2>[^?]+?)(?:\.(?:\s|$)|\?|$)", re.IGNORECASE)
_ASKED = re.compile(r"\bwhat\s+(?:is|was|were|are)\s+(?P<clause>[^?]+?)(?:\?|$)", re.IGNORECASE)
_TOKEN = re.compile(r"\(|\)|\[[^\]]*\]|\+|−|–|-(?=\s)|/|\*|×|\bdivided\s+by\b|\bplus\b|\bminus\b|\bless\b|\btimes\b|"
                    r"[^\s()+/*×\[\]]+", re.IGNORECASE)
_OPS = {"+": "+", "plus": "+", "-": "-", "−": "-", "–": "-", "minus": "-", "less": "-", "/": "/",
        "divided by": "/", "*": "*", "×": "*", "times": "*"}
_YEAR = re.compile(r"^(?:fy\s*'?)?((?:19|20)\d\d)$|^fy'?(\d\d)$", re.IGNORECASE)
_BETWEEN = re.compile(r"^(average|change\s+in)\s+(.+?)\s+between\s+(\S+)\s+and\s+(\S+)$", re.IGNORECASE)
_NOISE = re.compile(r"\b(?:the|of|a|an|unadjusted|reported|in|usd|millions?)\b",
                    re.IGNORECASE)
_ROUND = re.compile(r"\bround\w*\s+(?:your\s+|the\s+)?(?:answer\s+)?to\s+(one|two|three|\d)\s+decimal", re.IGNORECASE)
_PERCENT = re.compile(r"%|\bpercent", re.IGNORECASE)
_PER_SHARE = re.compile(r"\bper\s+(?:common\s+|diluted\s+|basic\s+)?share\b|\bEPS\b", re.IGNORECASE)
_MARGIN = re.compile(r"\bmargins?\b", re.IGNORECASE)
_APPOSITIVE = re.compile(r"^(?P<name>.+?),?\s+(?:defined|calculated|computed|measured)\s+as:?\s+(?P<expr>.+)$",
                         re.IGNORECASE)  # "free cash flow, defined as A less B"
_GLOSS = re.compile(r"(?<=[A-Za-z0-9&])\s*\((?![^()]*[+/*×])[^()]*\)")  # "capex (purchases of PP&E) / revenue"
_STATEMENT_WORDS = (r"(?:(?:consolidated\s+)?(?:cash\s+flows?|income|p\s*&\s*l|profit\s+and\s+loss)\s+statements?"
                    r"|statements?\s+of\s+(?:cash\s+flows|income|operations|earnings|financial\s+position)"
                    r"|balance\s+sheets?)")
_FROM_NOTE = re.compile(rf"[\[(]?\s*\bfrom\s+(?:the\s+)?(?P<st>{_STATEMENT_WORDS})\s*[\])]?", re.IGNORECASE)
_SHARE = re.compile(r"\bas\s+an?\s+(?:%|percent(?:age)?|share|proportion)\s+of\b", re.IGNORECASE)
# a payment the cash flow statement prints as an outflow, in parentheses: its amount is the figure's size
_OUTFLOW = re.compile(r"\b(?:purchases?|payments?|paid|capital\s+(?:spending|expenditures?)|additions?\s+to|"
                      r"repurchases?|dividends|acquisitions?\s+of)\b", re.IGNORECASE)
_OUTFLOW_ASKED = re.compile(r"\b(?:capex|capital\s+(?:spending|expenditures?)|dividends?|purchases?|payments?|"
                            r"repurchases?|buybacks?)\b", re.IGNORECASE)
_DIGITS = {"one": 1, "two": 2, "three": 3}
_FILLER = frozenset({"the", "of", "a", "an", "in"})
INPUT_PASSAGES = 12  # passages searched for each input's row
_ASKED_PERIOD = re.compile(r"\s+(?:in|for|during|of)\s+(?:the\s+)?(?:(?:first|second|third|fourth)\s+(?:fiscal\s+)?"
                           r"quarter|q[1-4]|fiscal\s+(?:year\s+)?(?:19|20)\d\d|fy\s*'?\d{2,4}|(?:19|20)\d\d)\b.*$",
                           re.IGNORECASE)
_RANGE = re.compile(r"^(?:the\s+)?(?:FY\s*'?)?(?P<y1>(?:19|20)\d\d)\s*(?:-|–|—|to|through)\s*(?:FY\s*'?)?"
                    r"(?P<y2>(?:19|20)\d\d)\s+(?:\w+[- ])?years?\s+average\s+(?:of\s+)?(?P<expr>.+)$", re.IGNORECASE)
# Metrics a question may name without defining them, each with the one formula analysts agree on (most specific
# first; " | " between the ways to reach it from what statements print, tried in turn); a metric whose definitions differ (quick ratio, capital intensity, turnover on ending or average
# balances) is not here: a question must define it.
STANDARD = (
    ("ebitda margin", "( operating income + depreciation and amortization ) / revenue"),
    ("ebitda", "operating income + depreciation and amortization"),
    ("gross margin", "gross profit / revenue | ( revenue - cogs ) / revenue"),
    ("operating margin", "operating income / revenue"),
    ("operating income margin", "operating income / revenue"),
    ("operating profit margin", "operating income / revenue"),
    ("gross profit margin", "gross profit / revenue | ( revenue - cogs ) / revenue"),
    ("net profit margin", "net income / revenue"),
    ("retention ratio", "( net income - dividends ) / net income"),
    ("dividend payout ratio", "dividends / net income"),
    ("net working capital", "total current assets - total current liabilities"),
    ("working capital", "total current assets - total current liabilities"),
    ("current ratio", "total current assets / total current liabilities"),
    ("free cash flow", "cash from operations - capex"),
)
_KIND_WORDS = frozenset({"ratio", "percent", "percentag", "margin", "rate", "total", "annual", "figur", "valu"})  # keys


@dataclass(frozen=True, slots=True)
class Operand:
    phrase: str
    year: str
    statement: str | None = None  # the statement a note after it names ("D&A [from cash flow statement]")
    quarter: int | None = None  # the quarter of `year` asked ("the third quarter of 2019"): a quarterly table's column


@dataclass(slots=True)
class Input:
    operand: Operand
    passage: Passage
    start: int  # the row's span in the passage's section text
    end: int
    page: int | None
    row: TableRow
    cell: int  # index of the cell used
    outflow: bool = False  # a payment the cash flow statement prints negative ("(5,207)"): the amount is its size

    @property
    def text(self) -> str:
        return self.row.cells[self.cell].text

    @property
    def value(self) -> Decimal:
        v = number(self.text) or Decimal(0)
        return abs(v) if self.outflow else v


@dataclass(slots=True)
class Computation:
    name: str
    value: Decimal | None = None
    arithmetic: str = ""
    inputs: list[Input] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


class _Unparsable(Exception):
    pass


def _tokens(expr: str) -> list[str]:
    # "X [from cash flow statement]", "X (from the cash flow statement)": where X is read, a mark on X
    expr = _FROM_NOTE.sub(lambda m: f" @{_statement_of(m.group('st')) or ''} ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)  # any other "[...]": a note, not an operand
    expr = _GLOSS.sub(" ", expr)  # "capital expenditure (purchases of ...)": a gloss of the words before it
    expr = _SHARE.sub(" / ", expr)  # "capex as a % of revenue"
    return [t.lower() if t.lower() in _OPS else t for t in _TOKEN.findall(expr)]


def _statement_of(words: str) -> str | None:
    """The financial statement a note names ("cash flow statement" -> "cash_flow"), if any."""
    from jsonl_engine.retrieval.cues import named_statement
    from jsonl_engine.retrieval.query import tokenize

    return named_statement(tokenize(words))[0]


def named_statements(query: str) -> frozenset[str]:
    """Every financial statement the question names as a source ("... in the balance sheet and the P&L")."""
    from jsonl_engine.retrieval.cues import named_statement
    from jsonl_engine.retrieval.query import tokenize

    tokens = tokenize(query)
    return frozenset(k for i in range(len(tokens)) if (k := named_statement(tokens[i:i + 5])[0]) is not None)


def _parse(tokens: list[str], year: str) -> object:
    """expr := term (("+"|"-") term)*; term := factor (("*"|"/") factor)*; factor := "(" expr ")" | words."""
    pos = 0

    def chain(ops: tuple[str, str], operand: Callable[[], object]) -> object:
        """operand (op operand)*, left-associative, for the operators `ops`."""
        nonlocal pos
        node = operand()
        while pos < len(tokens) and _OPS.get(tokens[pos]) in ops:
            op = _OPS[tokens[pos]]
            pos += 1
            node = (op, node, operand())
        return node

    def expr() -> object:
        return chain(("+", "-"), term)

    def term() -> object:
        return chain(("*", "/"), factor)

    def factor() -> object:
        nonlocal pos
        if pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            node = expr()
            if pos >= len(tokens) or tokens[pos] != ")":
                raise _Unparsable("unbalanced parentheses")
            pos += 1
            return node
        words = []
        while pos < len(tokens) and tokens[pos] not in _OPS and tokens[pos] not in "()":
            words.append(tokens[pos])
            pos += 1
        if not words:
            raise _Unparsable("an operator without an operand")
        return _operand(" ".join(words), year)

    node = expr()
    if pos != len(tokens):
        raise _Unparsable("text after the formula")
    return node


def _operand(words: str, year: str) -> object:
    marks = [w[1:] for w in words.split() if w.startswith("@")]
    statement = next((m for m in marks if m), None)
    words = " ".join(w for w in words.split() if not w.startswith("@")).strip(" ,;:")
    try:
        return ("const", Decimal(words.replace(",", "")), words)
    except InvalidOperation:
        pass
    m = _BETWEEN.match(words)
    if m:
        y1, y2 = _year(m.group(3)), _year(m.group(4))
        if not (y1 and y2):
            raise _Unparsable(f"years of {words!r}")
        kind = "average" if m.group(1).lower() == "average" else "change"
        return (kind, Operand(_clean(m.group(2)), y1, statement), Operand(_clean(m.group(2)), y2, statement))
    own = [y for w in words.split() if (y := _year(w))]
    phrase = _clean(" ".join(w for w in words.split() if not _year(w)))
    if not phrase:
        raise _Unparsable(f"no operand in {words!r}")
    return ("value", Operand(phrase, own[0] if own else year, statement))


def _year(word: str) -> str | None:
    m = _YEAR.match(word.strip(",.;"))
    if not m:
        return None
    return m.group(1) or "20" + m.group(2)


def _clean(phrase: str) -> str:
    return " ".join(_NOISE.sub(" ", phrase).split())


def formula(query: str, default_year: str | None) -> tuple[str, object] | None:
    """(what is asked, its formula tree) when the question asks for an arithmetic result, else None.
    Raises _Unparsable when it does but the formula cannot be read."""
    from jsonl_engine.answer.synthesize import keys

    definitions = {}
    for m in _DEFINE.finditer(query):
        name, expr = (m.group("name"), m.group("expr")) if m.group("name") else (m.group("name2"), m.group("expr2"))
        name = re.sub(r"^.*\?\s*", "", name).strip()
        definitions[tuple(keys(_clean(name)))] = (name.strip(), expr.strip())
    clause, gloss = _asked_clause(query)
    span = _RANGE.match(clause.strip())
    if span:  # "FY2017 - FY2019 3 year average of capex as a % of revenue": the mean of each year's value
        return _range_mean(query, clause, span)
    clause = re.sub(r"^(?:(?:the|FY\s*'?\d{2,4}|fiscal(?:\s+year)?\s+\d{4}|(?:19|20)\d\d)\s+)+", "", clause.strip(),
                    flags=re.IGNORECASE)
    year = default_year or ""
    if gloss and any(t in _OPS for t in _tokens(gloss.group(1))):  # "interest coverage ratio (A / B)": its formula
        definitions[tuple(keys(_clean(clause)))] = (clause.strip(), gloss.group(1).strip())
        gloss = None
    apposed = _APPOSITIVE.match(clause.strip())
    if apposed:  # "free cash flow, defined as A less B": a definition of what is asked
        definitions[tuple(keys(_clean(apposed.group("name"))))] = (apposed.group("name").strip(" ,"),
                                                                   apposed.group("expr").strip())
        clause = apposed.group("name").strip(" ,")
    tokens = _tokens(clause)
    if any(t in _OPS for t in tokens):
        name, expr = clause, clause
    else:
        named = " ".join(w for w in clause.split() if not _year(w)) + (f" {gloss.group(1)}" if gloss else "")
        want = tuple(keys(_clean(named)))
        found = [(n, e) for k, (n, e) in definitions.items() if k and (k == want or set(k) <= set(want))]
        if not found:
            standard = _standard(clause)
            if standard is None:
                return None
            found = [standard]
        name, expr = found[0]
    for _k, (n, e) in definitions.items():  # "X less capex" with X defined: substitute the definition
        if n != name and n.lower() in expr.lower():
            expr = re.sub(re.escape(n), f"( {e} )", expr, flags=re.IGNORECASE)
    trees = [_parse(_tokens(alt), year) for alt in expr.split(" | ")]
    if trees[0][0] == "value":
        return None  # a single figure: not a computation
    return " ".join(name.split()), trees[0] if len(trees) == 1 else ("alts", trees)


def _asked_clause(query: str) -> tuple[str, re.Match | None]:
    """What the question asks for ("what is the FY2022 X for Acme?" -> "the FY2022 X"), its issuer, the period's
    words and the unit left out, and a parenthesised name at its end ("A + B (unadjusted EBITDA)"), if any."""
    asked = _ASKED.search(query)
    clause = asked.group("clause") if asked else ""
    clause = re.sub(r"\s+for\s+(?!(?:FY\s*'?)?(?:19|20)\d\d\b)[A-Z0-9][\w&.' -]*$", "", clause.strip())  # "... for Acme Corp"
    clause = re.sub(r"^(?:[A-Z0-9][\w&.-]*\s+)*[A-Z0-9][\w&.-]*(?:['’]s|s['’])\s+", "", clause)  # "Acme's ...", "Acme Works' ..."
    clause = _ASKED_PERIOD.sub("", clause)  # "... in the third quarter of fiscal 2017": the period, said apart
    clause = re.sub(r"\((?:in\s+)?usd[^)]*\)|\bin\s+usd\s+millions\b", " ", clause, flags=re.IGNORECASE)
    gloss = re.search(r"\s*\(([^()]*)\)\s*$", clause.strip())  # "A + B (unadjusted EBITDA)": its name
    clause = clause.strip()[:gloss.start()] if gloss else clause
    return clause, gloss


def _range_mean(query: str, clause: str, span: re.Match) -> tuple[str, object] | None:
    """The mean over a span of years of what the clause asks ("FY2017 - FY2019 3 year average of X")."""
    y1, y2 = int(span.group("y1")), int(span.group("y2"))
    if not 0 < y2 - y1 < 10:
        return None
    found = formula(f"What is the {span.group('expr')}? " + " ".join(m.group(0) for m in _DEFINE.finditer(query)),
                    str(y2))
    expr = found[1] if found else None
    if expr is not None and expr[0] == "alts":
        expr = expr[1][0]  # a mean of each year's value: the way the metric is first reached
    inner = span.group("expr")
    trees = []
    for y in range(y1, y2 + 1):
        trees.append(_with_year(expr, str(y)) if expr is not None else _parse(_tokens(inner), str(y)))
    return " ".join(re.sub(r"^the\s+", "", clause.strip(), flags=re.IGNORECASE).split()), ("mean", trees)


def _standard(clause: str) -> tuple[str, str] | None:
    """(name, formula) of a metric the question names without defining it, when its words are the metric's and
    at most a word saying what kind of figure it is ("EBITDA % margin", "retention ratio"): STANDARD."""
    from jsonl_engine.answer.synthesize import keys

    named = " ".join(w for w in clause.split() if not _year(w))
    want = set(keys(_clean(named)))
    for metric, expr in STANDARD:
        need = set(keys(metric))
        if need <= want and want - need <= _KIND_WORDS:
            return " ".join(named.split()), expr
    return None


def _in_quarter(tree: object, quarter: int) -> object:
    """`tree` with every operand read in the asked quarter's column."""
    kind = tree[0]
    if kind == "alts":
        return ("alts", [_in_quarter(t, quarter) for t in tree[1]])
    if kind == "value":
        return ("value", Operand(tree[1].phrase, tree[1].year, tree[1].statement, quarter))
    if kind in ("average", "change"):
        return (kind, *(Operand(o.phrase, o.year, o.statement, quarter) for o in tree[1:]))
    if kind == "const":
        return tree
    if kind == "mean":
        return ("mean", [_in_quarter(t, quarter) for t in tree[1]])
    return (kind, _in_quarter(tree[1], quarter), _in_quarter(tree[2], quarter))


def _with_year(tree: object, year: str) -> object:
    """`tree` with its operands' years set to `year` (each year's value of a mean)."""
    kind = tree[0]
    if kind == "value":
        return ("value", Operand(tree[1].phrase, year, tree[1].statement))
    if kind in ("const", "average", "change"):
        return tree
    if kind == "mean":
        return ("mean", [_with_year(t, year) for t in tree[1]])
    return (kind, _with_year(tree[1], year), _with_year(tree[2], year))


def _operands(tree: object) -> list[Operand]:
    kind = tree[0]
    if kind == "value":
        return [tree[1]]
    if kind in ("average", "change"):
        return [tree[1], tree[2]]
    if kind == "const":
        return []
    if kind == "mean":
        return [o for t in tree[1] for o in _operands(t)]
    return _operands(tree[1]) + _operands(tree[2])


def _label_fit(operand: Operand, label: str) -> int | None:
    """How many words the label has beyond the operand's (lower is closer), None when it does not name it: the
    label holds the operand's words, or a label statements print for the line item the operand names
    ("Purchases of property, plant and equipment" for capex: retrieval/query.py LINE_ITEMS)."""
    from jsonl_engine.answer.synthesize import keys
    from jsonl_engine.retrieval.query import LINE_ITEMS, tokenize

    seq = [k for k in keys(label) if k not in _FILLER]  # the words _clean drops from an operand: "purchases of ..."
    have, joined = set(seq), " " + " ".join(seq) + " "
    options = [tuple(k for k in keys(operand.phrase) if k not in _FILLER)]
    words = tuple(tokenize(operand.phrase))
    # "total revenues": a statement may print its total without the word ("Revenues")
    for item in ([words, words[1:]] if len(words) > 1 and words[0] == "total" else [words]):
        options.append(tuple(k for k in keys(" ".join(item)) if k not in _FILLER))
        options.extend(tuple(k for k in keys(p) if k not in _FILLER) for p in LINE_ITEMS.get(item, ()))
    # the words in their order, together: "Equity income (loss) - net" holds the words of "net income (loss)"
    fits = [len(have - set(o)) for o in options if o and f" {' '.join(o)} " in joined]
    return min(fits) if fits else None


def find_input(store: Store, operand: Operand, document_ids: Sequence[str] | None,
               statuses: Sequence[str], named: frozenset[str] = frozenset(), memo: dict | None = None,
               whole: bool = False, near: int | None = None,
               fit_of: Callable[[str], int | None] | None = None) -> Input | str:
    """The table cell of `operand`, or why there is none. In a document with financial statements, only their
    rows; of those, the rows of the statement a note after the operand names, else of the statements the question
    names (`named`), when they hold one: "accounts payable" is a balance on the balance sheet, a change on the
    cash flow statement. A payment the cash flow statement prints in parentheses counts by its size when the
    operand names a payment ("capex", "dividends"). Rows labelled alike that disagree give no input, unless `whole`
    (a row to quote, not to compute with): then the largest in magnitude, the consolidated whole over a part (a
    parent company's own statement, a segment's; not for a percentage), and, given the page `near` where other rows
    were read, a row on it first. `fit_of(label)` judges a row's label in place of `_label_fit`."""
    from jsonl_engine.retrieval import retrieve

    memo = {} if memo is None else memo  # what one computation's operands read alike: pages' sections, rows
    best = _on_statements(store, operand, memo, fit_of) if len(document_ids or ()) == 1 else []
    if not best:  # none of the statements' rows (read for an earlier operand) names it: search
        quarterly = " quarterly quarter" if operand.quarter else ""  # a quarter's figure: the quarterly table
        found = retrieve(store, f"{operand.phrase} {operand.year}{quarterly}",
                         document_ids=list(document_ids or []) or None, statuses=tuple(statuses), limit=INPUT_PASSAGES)
        memo.setdefault("like", found.passages[0] if found.passages else None)
        best = _rows_naming(store, operand, _with_statement_pages(store, found.passages, memo), memo, fit_of)
    statements: dict[int, str] = {}
    if best:
        doc = best[0][1].passage.document_id
        statements = store.statement_pages([doc]).get(doc) or {}
        if statements and operand.quarter is None and not _PERCENT.search(operand.phrase):
            # a document with financial statements: their line items are the figures themselves (a quarter's
            # figure in an annual report is its quarterly table's; a percentage, its discussion's table)
            # (or a row elsewhere whose figure a statement prints: a total the statement prints without a label)
            on_statements = [(f, i) for f, i in best if i.page in statements]
            best = on_statements or _printed_on(store, doc, statements, best)
            if not best:
                return f"{operand.phrase} ({operand.year}): not a line of the financial statements"
            wanted = {operand.statement} if operand.statement else named
            on_wanted = [(f, i) for f, i in best if statements.get(i.page) in wanted]
            best = on_wanted or best
    if not best:
        return f"{operand.phrase} ({operand.year}): no table row with that year's column"
    whole = whole and not _PERCENT.search(operand.phrase)  # shares of a part may be larger than the whole's
    if whole and near is not None:
        best = [(f, i) for f, i in best if i.page == near] or best  # the statement the other rows were read on
    top = min(f for f, _ in best)
    closest = [i for f, i in best if f == top]
    if len({number(i.text) for i in closest}) > 1 and not whole:
        return f"{operand.phrase} ({operand.year}): rows disagree"
    found = max(closest, key=lambda i: abs(number(i.text) or 0)) if whole else closest[0]
    if (number(found.text) or 0) < 0 and statements.get(found.page) == "cash_flow" \
            and _OUTFLOW.search(found.row.label.text if found.row.label else "") and _OUTFLOW_ASKED.search(operand.phrase):
        found.outflow = True
    return found


def candidate_rows(store: Store, operand: Operand, document_ids: Sequence[str], statuses: Sequence[str],
                   memo: dict, search: str | None = None, fit_of: Callable[[str], int | None] | None = None
                   ) -> list[tuple[int, Input]]:
    """Every row naming `operand` with a value in its year's column (and how closely its label names it, or
    `fit_of(label)`), in the passages a search for it (or for `search`, once per memo) finds and on the pages of the
    financial statements, wherever they stand."""
    from jsonl_engine.retrieval import retrieve

    query = search or f"{operand.phrase} {operand.year}"
    if ("search", query) not in memo:
        memo[("search", query)] = retrieve(store, query, document_ids=list(document_ids), statuses=tuple(statuses),
                                           limit=INPUT_PASSAGES).passages
    passages = memo[("search", query)]
    memo.setdefault("like", passages[0] if passages else None)
    return _rows_naming(store, operand, _with_statement_pages(store, passages, memo), memo, fit_of)


def seed_document(store: Store, document_id: str, memo: dict) -> None:
    """`memo` set so that `find_input` reads the operands it is given for `document_id` on its financial statements'
    pages first, without a search (as it does for a computation's operands after the first)."""
    from jsonl_engine.retrieval.types import Passage

    if "like" in memo or not store.statement_pages([document_id]).get(document_id):
        return
    doc = store.document(document_id)
    memo["like"] = Passage(section_id="", document_id=document_id, document_title=doc.title, title="", path=[],
                           page_start=0, page_end=0, score=0.0, text="", snippet="", status=doc.status, page_map=[])


def _on_statements(store: Store, operand: Operand, memo: dict,
                   fit_of: Callable[[str], int | None] | None = None) -> list[tuple[int, Input]]:
    """The rows of the financial statements' pages naming `operand` (not a quarter's: those are read in quarterly
    tables), once an earlier operand of the computation found the document (`memo["like"]`): what the search would
    be filtered down to, read without searching."""
    like = memo.get("like")
    if like is None or operand.quarter is not None:
        return []
    statements = store.statement_pages([like.document_id]).get(like.document_id) or {}
    return [(f, i) for f, i in _rows_naming(store, operand, _with_statement_pages(store, [like], memo), memo, fit_of)
            if i.page in statements]


def _rows_naming(store: Store, operand: Operand, passages: Sequence[Passage], memo: dict,
                fit_of: Callable[[str], int | None] | None = None) -> list[tuple[int, Input]]:
    """The rows of `passages` whose label names `operand` (with how closely: `_label_fit`, or `fit_of(label)` when
    given) and whose column of the operand's year holds a value; not a share ("%") when the operand asks for none."""
    from jsonl_engine.answer.pages import PageTexts, table_row_on_page

    if "texts" not in memo:
        memo["texts"] = PageTexts(store)  # the computation's pages, each read once
    best: list[tuple[int, Input]] = []
    for p in passages:
        if ("segments", p.section_id) not in memo:
            memo[("segments", p.section_id)] = [seg for seg in segment(p.text) if seg.kind == "row"]
        for seg in memo[("segments", p.section_id)]:
            if seg.kind != "row":
                continue
            label, _cells = cells_of(p.text, seg.start, seg.end)
            fit = None if label is None else fit_of(label.text) if fit_of else _label_fit(operand, label.text)
            if fit is None or (_PER_SHARE.search(label.text) and not _PER_SHARE.search(operand.phrase)):
                continue  # read on its page (headers above it) only a row that names the operand (not per share)
            key = ("row", p.section_id, seg.start)
            if key not in memo:
                on_page = table_row_on_page(store, p, seg.start, seg.end, memo["texts"])
                memo[key] = on_page if on_page else (None, read_row(p.text, seg.start, seg.end))
            page, row = memo[key]
            share = any("%" in c.text for c in row.cells) or _scale(row.unit.text if row.unit else "") in ("percent", "%")
            if share != bool(_PERCENT.search(operand.phrase)):
                continue  # a share of something, not the amount the operand names (or an amount for a share asked)
            cells = [i for i, c in enumerate(row.cells)
                     if not c.empty and any(year_of(h.text) == operand.year for h in c.column)
                     and next((n for h in c.column if (n := quarter_of(h.text))), None) == operand.quarter]
            if len(cells) == 1 and share and "%" not in row.cells[cells[0]].text \
                    and _scale(row.unit.text if row.unit else "") not in ("percent", "%") \
                    and not any(_PERCENT.search(h.text) for h in row.cells[cells[0]].column):
                continue  # the year's figure is an amount, the "%" another column's (a change beside it)
            if len(cells) == 1:
                best.append((fit, Input(operand, p, seg.start, seg.end, page, row, cells[0])))
    return best


def _with_statement_pages(store: Store, passages: Sequence[Passage], memo: dict) -> list[Passage]:
    """`passages`, then the sections on the pages of the financial statements of the document they lead with (a
    line item is read on its statement even when the search ranked its page low)."""
    from jsonl_engine.answer.synthesize import _page_sections

    out = list(passages)
    if not out:
        return out
    like = out[0]
    key = ("statement sections", like.document_id)
    if key not in memo:
        statements = store.statement_pages([like.document_id]).get(like.document_id) or {}
        memo[key] = [q for n in sorted(statements) for q in _page_sections(store, like, n, set())]
    have = {p.section_id for p in out}
    out.extend(q for q in memo[key] if q.section_id not in have and not have.add(q.section_id))
    return out


def _printed_on(store: Store, document_id: str, statements: dict[int, str],
                rows: list[tuple[int, Input]]) -> list[tuple[int, Input]]:
    """The `rows` whose used figure, of four digits or more, a page of the financial statements prints as it is
    ("5,162,082" under "Revenues" with no label of its own); each row is then cited where it stands."""
    texts = store.page_texts([(document_id, n) for n in sorted(statements)])
    out = []
    for fit, i in rows:
        figure = i.text.replace("$", "").strip(" ()")
        if sum(ch.isdigit() for ch in figure) < 4:
            continue
        pattern = re.compile(rf"(?<![\d,.]){re.escape(figure)}(?![\d,]|\.\d)")
        if any(pattern.search(t) for t in texts.values()):
            out.append((fit, i))
    return out


def compute(store: Store, query: str, *, document_ids: Sequence[str] | None, statuses: Sequence[str]
            ) -> Computation | None:
    """The computed answer of `query` (see the module docstring), or None when it asks for no computation."""
    from jsonl_engine.identity.route import parse_periods

    periods = parse_periods(query)
    target = periods.target
    try:
        found = formula(query, str(target) if target else None)
    except _Unparsable as exc:
        return Computation(name="", missing=[f"the formula: {exc}"])
    if found is None:
        return None
    name, tree = found
    named = named_statements(query)
    from jsonl_engine.answer.order import asks_span

    quarter, half = asks_span(query)
    if quarter and not half and periods.quarter:
        tree = _in_quarter(tree, periods.quarter)
        name = f"{name}, Q{periods.quarter}" if target else name
    name = f"{name}, {target}" if target and str(target) not in name else name
    memo: dict = {}
    tried: list[Computation] = []
    for t in tree[1] if tree[0] == "alts" else [tree]:  # the ways to reach the metric, in turn
        tried.append(_computed(store, name, t, document_ids, statuses, named, memo))
        if not tried[-1].missing:
            return tried[-1]
    return tried[0]


def _computed(store: Store, name: str, tree: object, document_ids: Sequence[str] | None, statuses: Sequence[str],
              named: frozenset[str], memo: dict) -> Computation:
    """The computation of one formula: its inputs found, checked and the arithmetic done, or what is missing."""
    out = Computation(name=name)
    inputs: dict[Operand, Input] = {}
    for operand in dict.fromkeys(_operands(tree)):
        if not operand.year:
            out.missing.append(f"{operand.phrase}: no year")
            continue
        got = find_input(store, operand, document_ids, statuses, named, memo)
        if isinstance(got, str):
            out.missing.append(got)
        else:
            inputs[operand] = got
    if out.missing:
        return out
    units = {_scale(i.row.unit.text if i.row.unit else "") for i in inputs.values()}
    if len(units) > 1:
        out.missing.append("inputs in different units: " + ", ".join(sorted(u or "none" for u in units)))
        return out
    negative = [i for i in inputs.values() if i.value < 0]
    if negative:
        out.missing.extend(f"{i.operand.phrase} ({i.operand.year}) is negative, {i.text}: its sign is ambiguous"
                           for i in negative)
        return out
    try:
        value, text = _evaluate(tree, inputs)
    except (ZeroDivisionError, InvalidOperation):
        out.missing.append("a division by zero")
        return out
    out.inputs = list(inputs.values())
    out.value = value
    out.arithmetic = text
    return out


def _scale(unit: str) -> str | None:
    """The scale a unit phrase names ("(in millions, except per share data)" -> "million"), None for none."""
    m = re.search(r"million|thousand|billion|percent|%", unit, re.IGNORECASE)
    return m.group(0).lower() if m else None


def _figure(i: Input) -> str:
    """An input's figure as the arithmetic writes it: its cell's text without the currency sign ("$ 87,270" ->
    "87,270"), a payment printed in parentheses by its size ("(5,207)" -> "5,207")."""
    text = " ".join(i.text.replace("$", " ").split())
    return text.strip("() ") if i.outflow else text


def _evaluate(tree: object, inputs: dict[Operand, Input]) -> tuple[Decimal, str]:
    kind = tree[0]
    if kind == "const":
        return tree[1], tree[2]
    if kind == "value":
        i = inputs[tree[1]]
        return i.value, _figure(i)
    if kind == "mean":
        parts = [_evaluate(t, inputs) for t in tree[1]]
        texts = [f"({t})" if isinstance(sub, tuple) and sub[0] in ("+", "-", "*", "/") else t
                 for (_, t), sub in zip(parts, tree[1], strict=True)]
        return sum((v for v, _ in parts), Decimal(0)) / len(parts), f"({' + '.join(texts)}) / {len(parts)}"
    if kind in ("average", "change"):
        a, b = inputs[tree[1]], inputs[tree[2]]
        va, vb = a.value, b.value
        ta, tb = _figure(a), _figure(b)
        if kind == "average":
            return (va + vb) / 2, f"(({ta} + {tb}) / 2)"
        return vb - va, f"({tb} − {ta})"
    op, left, right = tree
    lv, lt = _evaluate(left, inputs)
    rv, rt = _evaluate(right, inputs)
    if op in ("*", "/") and isinstance(right, tuple) and right[0] in ("+", "-"):
        rt = f"({rt})"
    if op in ("*", "/") and isinstance(left, tuple) and left[0] in ("+", "-"):
        lt = f"({lt})"
    sign = {"+": "+", "-": "−", "*": "×", "/": "/"}[op]
    value = {"+": lv + rv, "-": lv - rv, "*": lv * rv, "/": lv / rv if rv else Decimal(1) / Decimal(0)}[op]
    return value, f"{lt} {sign} {rt}"


def shown(query: str, c: Computation) -> str:
    """The value as the question asks for it: its decimals ("round to two decimal places"), a percentage when
    it asks for one (the ratio times 100, when the formula is a ratio)."""
    assert c.value is not None
    m = _ROUND.search(query)
    inputs = max((-number(i.text).as_tuple().exponent for i in c.inputs), default=0)
    places = (_DIGITS.get(m.group(1).lower()) or int(m.group(1))) if m else (2 if "/" in c.arithmetic else inputs)
    value = c.value
    percent = bool(_PERCENT.search(query) or _MARGIN.search(c.name)) and "/" in c.arithmetic  # a margin is a percentage
    if percent:
        value *= 100
    text = f"{value:,.{places}f}"
    return text + ("%" if percent else "")


def with_computed(out: Synthesis, c: Computation, query: str, *, max_chars: int, max_claims: int) -> Synthesis:
    """`out` with the computed line first, its inputs (table rows) as the next claims, then the claims of `out`
    that still fit; a computation with missing inputs adds a gap naming them and changes nothing else."""
    if c.value is None:
        out.gaps.extend(f"computed: {m}" for m in c.missing)
        out.computed = {"line": "", "value": None, "inputs": [], "missing": list(c.missing)}
        return out
    claims, lines, tables = input_claims(c.inputs)
    value = shown(query, c)
    shown_number = Decimal(value.rstrip("%").replace(",", ""))
    exact = c.value * 100 if value.endswith("%") else c.value
    result = value if shown_number == exact else \
        f"{exact:,.6g}% ≈ {value}" if value.endswith("%") else f"{c.value:,.6g} ≈ {value}"
    head = f"Computed ({c.name}): {c.arithmetic} = {result} " + "".join(f"[{x.id}]" for x in claims)
    lead_with(out, claims, lines, tables, head=head, max_chars=max_chars, max_claims=max_claims)
    out.computed = {"line": head, "value": float(c.value * 100 if value.endswith("%") else c.value),
                    "inputs": [x.id for x in claims], "missing": []}
    out.first_claim = {"id": claims[0].id, "why": "the first input of the computed answer"}
    return out


def input_claims(inputs: Sequence[Input], years: dict[int, tuple[str, ...]] | None = None, change: bool = False
                 ) -> tuple[list, list[str], dict]:
    """The claims of `inputs` (table rows, one claim per row), their answer lines read in the columns of their
    operands' years (or `years[i]` for the i-th input; with `change`, and the change column a table prints) and
    their table readings by claim id."""
    from jsonl_engine.answer.citations import make_claim
    from jsonl_engine.answer.order import asked_cells
    from jsonl_engine.answer.synthesize import Reading
    from jsonl_engine.answer.tables import table_line

    claims, lines, tables = [], [], {}
    asked_years: dict[tuple[str, int], set[str]] = {}
    for n, i in enumerate(inputs):
        got = asked_years.setdefault((i.passage.section_id, i.start), set())
        got.update((years or {}).get(n) or (i.operand.year,))
    for i in inputs:
        p = i.passage
        claim = make_claim(section_id=p.section_id, document_id=p.document_id, document_title=p.document_title,
                           section_text=p.text, page_map=p.page_map, page_start=p.page_start, start=i.start,
                           end=i.end)
        if any(x.id == claim.id for x in claims):
            continue
        asked = asked_cells(i.row, tuple(sorted(asked_years[(p.section_id, i.start)], reverse=True)),
                            quarter=i.operand.quarter is not None, which=i.operand.quarter, change=change)
        reading = Reading(i.page, i.row, asked, table_line(i.row, asked, i.page))
        tables[claim.id] = reading
        claims.append(claim)
        lines.append(f"{reading.line or ' '.join(claim.text.split())} [{claim.id}]")
    return claims, lines, tables


def lead_with(out: Synthesis, claims: list, lines: list[str], tables: dict, *, head: str | None, max_chars: int,
              max_claims: int) -> None:
    """`out` answered by `claims` first (their `lines`, after a `head` line when given), then the claims of `out`
    that still fit (`max_claims`, `max_chars`; the others counted in `more`)."""
    old_lines = out.answer.split("\n") if out.answer else []
    keep, length = [], (len(head) if head else 0) + sum(len(x) + 1 for x in lines)
    taken = {x.id for x in claims}
    for claim, line in zip(out.claims, old_lines, strict=False):
        if claim.id in taken:
            continue
        if len(claims) + len(keep) >= max(max_claims, len(claims)) or length + len(line) + 1 > max_chars:
            out.more += 1
            out.truncated = out.truncated or length + len(line) + 1 > max_chars
            continue
        keep.append((claim, line))
        length += len(line) + 1
    out.answer = "\n".join([*([head] if head else []), *lines, *(line for _, line in keep)])
    out.claims = claims + [claim for claim, _ in keep]
    out.tables = {**{k: v for k, v in out.tables.items() if any(cl.id == k for cl, _ in keep)}, **tables}
