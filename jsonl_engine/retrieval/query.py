"""User text -> search phrases. User text is never search syntax: only index tokens are kept, as token tuples
(the store renders them in its own query language).

A query is an OR of equally weighted phrases (an AND starves recall on questions; BM25 ranks the OR). Stopwords and question boilerplate are dropped; numbers, years and fiscal forms stay
matchable ("FY2018" -> fy2018, 2018; "$1,577" -> the phrase "1 577", as the index splits on commas);
generic accounting vocabulary adds the phrases filings use for the same line item (capex -> "purchases of
property plant and equipment"); identity/statements.py finds the statement pages that carry the figures.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from jsonl_engine.retrieval.weights import MAX_PHRASES, MAX_QUERY_CHARS
from jsonl_engine.text import STOPWORDS, normalise

# Kept for retrieval (filings use them: "data center", "margin improved", "driven by") but not terms an
# answer must contain: what drove, whether something improved or which is highest is stated by the figures,
# and hedges ("key", "primary", "overall", "profile") qualify the question rather than name its subject.
_ANSWER_NEUTRAL_TEXT = """
data drove drive drives driven driver drivers driving improve improved improving improvement
decline declined declining performed highest lowest largest smallest biggest worst
key primary main major overall profile agenda exclude vs versus
"""
ANSWER_NEUTRAL = frozenset(_ANSWER_NEUTRAL_TEXT.split())
_NUMBER_WORDS = frozenset(("zero", "one", "two", "three", "four", "five", "six"))
_PRECISION = frozenset(("decimal", "decimals"))  # "two decimal places": the count is an instruction

# Generic accounting vocabulary: trigger (token tuple, matched on the query's token sequence) -> phrases
# filings use for it. No document- or question-specific entries.
# Statement pages themselves are found by identity/statements.py; these only name the statements for prose passages.
_CASH_FLOW = ("cash flows",)
_INCOME = ()
_BALANCE = ("total assets",)
_CAPEX = ("capital expenditures", "purchases of property plant and equipment", "purchases of property and equipment",
          "additions to property plant and equipment", "payments for property plant and equipment",
          "capital spending", "acquisitions of property plant and equipment") + _CASH_FLOW
_REVENUE = ("net sales", "total revenues", "net revenues", "net operating revenues", "total net sales",
            "sales to customers") + _INCOME
_COGS = ("cost of sales", "cost of goods sold", "cost of revenues", "cost of products sold")
_OPINC = ("operating income", "operating profit", "income from operations", "operating expenses") + _INCOME
_DA = ("depreciation and amortization", "depreciation amortization")
_CURRENT = ("total current assets", "total current liabilities") + _BALANCE
# An annual report prints each quarter's figures in one table ("Selected Quarterly Financial Data", "Quarterly Data
# (Unaudited)"): a question naming a quarter reads it there; a quarterly report has no such table (no phrase added).
_QUARTERLY = ("quarterly financial data", "quarterly data")
# Who a company's main customers are, a filing says as the share of its revenues they make ("two wholesalers ...
# represented approximately 13.5% and 10.7% of the total consolidated revenues", "40% of our revenues were earned
# pursuant to government contracts"), rarely with the word "customers".
_CONCENTRATION = ("of our revenues", "of total revenues", "of consolidated revenues", "of total consolidated revenues",
                  "total consolidated revenues", "of net sales", "of consolidated net sales", "of our net sales",
                  "of total net sales",
                  "largest customer", "largest customers", "single customer", "wholesalers", "distributors")
_PPE = ("property plant and equipment net", "net property plant and equipment", "property and equipment net")

EXPANSIONS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("capex",): _CAPEX,
    ("capital", "expenditure"): _CAPEX,
    ("capital", "expenditures"): _CAPEX,
    ("capital", "intensive"): _CAPEX + _PPE + ("total assets", "depreciation and amortization"),
    ("capital", "intensity"): _CAPEX + _PPE + ("total assets",),
    ("revenue",): _REVENUE,
    ("revenues",): _REVENUE,
    ("sales",): ("net sales", "total revenues", "net revenues"),
    ("topline",): _REVENUE,
    ("top", "line"): _REVENUE,
    ("cogs",): _COGS + _INCOME,
    ("cost", "of", "goods"): _COGS + _INCOME,
    ("gross", "margin"): ("gross profit", "gross margin") + _COGS + ("net sales", "total revenues") + _INCOME,
    ("gross", "profit"): ("gross profit", "gross margin") + _COGS + _INCOME,
    ("operating", "margin"): _OPINC + ("net sales", "total revenues"),
    ("operating", "income"): _OPINC,
    ("operating", "profit"): _OPINC,
    ("ebitda",): _OPINC + _DA + _CASH_FLOW,
    ("ebit",): _OPINC + ("interest expense",),
    ("d", "a"): _DA + _CASH_FLOW,
    ("depreciation",): _DA + _CASH_FLOW,
    ("net", "income"): ("net income", "net earnings", "net income attributable") + _INCOME,
    ("eps",): ("earnings per share", "diluted earnings per share"),
    ("quick", "ratio"): ("cash and cash equivalents", "accounts receivable", "short term investments",
                         "inventories") + _CURRENT,
    ("current", "ratio"): _CURRENT,
    ("working", "capital"): _CURRENT,
    ("liquidity",): ("liquidity and capital resources", "cash and cash equivalents") + _CURRENT,
    ("fixed", "asset"): _PPE + ("net sales", "total revenues") + _BALANCE,
    ("fixed", "assets"): _PPE + ("net sales", "total revenues") + _BALANCE,
    ("pp", "e"): _PPE + _BALANCE,
    ("inventory", "turnover"): ("inventories", "total inventories") + _COGS + _BALANCE,
    ("inventory",): ("inventories",),
    ("days", "payable"): ("accounts payable", "inventories") + _COGS + _BALANCE,
    ("dpo",): ("accounts payable", "inventories") + _COGS + _BALANCE,
    ("days", "sales"): ("accounts receivable", "net sales") + _BALANCE,
    ("dso",): ("accounts receivable", "net sales") + _BALANCE,
    ("receivable", "turnover"): ("accounts receivable",) + _REVENUE + _BALANCE,
    ("roa",): ("net income", "total assets") + _BALANCE + _INCOME,
    ("return", "on", "assets"): ("net income", "total assets") + _BALANCE + _INCOME,
    ("roe",): ("net income", "total equity", "shareholders equity") + _BALANCE + _INCOME,
    ("return", "on", "equity"): ("net income", "total equity", "shareholders equity") + _BALANCE + _INCOME,
    ("total", "assets"): _BALANCE,
    ("liabilities",): ("total liabilities", "total current liabilities") + _BALANCE,
    ("liability",): ("total liabilities",) + _BALANCE,
    ("debt",): ("long term debt", "short term borrowings", "total debt", "current portion of long term debt",
                "notes payable", "borrowings") + _BALANCE,
    ("leverage",): ("long term debt", "total debt", "total equity"),
    ("dividends",): ("dividends paid", "cash dividends", "dividends declared", "dividends per share"),
    ("dividend",): ("dividends paid", "cash dividends", "dividends declared", "dividends per share"),
    ("retention", "ratio"): ("dividends paid", "cash dividends", "net income attributable") + _CASH_FLOW + _INCOME,
    ("payout", "ratio"): ("dividends paid", "cash dividends", "net income attributable") + _CASH_FLOW,
    ("cash", "flow"): ("net cash provided by operating activities", "operating activities", "investing activities",
                       "financing activities") + _CASH_FLOW,
    ("free", "cash"): ("net cash provided by operating activities",) + _CAPEX,
    ("effective", "tax"): ("effective tax rate", "provision for income taxes", "income before income taxes",
                           "statutory rate"),
    ("interest", "coverage"): ("interest expense", "operating income", "interest expense net"),
    ("interest", "expense"): ("interest expense", "interest expense net"),
    ("restructuring",): ("restructuring charges", "restructuring costs", "restructuring and impairment"),
    ("acquisitions",): ("acquisitions", "business combinations", "acquired"),
    ("acquisition",): ("acquisitions", "business combinations", "acquired"),
    ("m", "a"): ("acquisitions", "divestitures", "business combinations", "organic"),
    ("legal",): ("legal proceedings", "litigation", "contingencies", "lawsuits"),
    ("lawsuits",): ("legal proceedings", "litigation", "contingencies"),
    ("litigation",): ("legal proceedings", "litigation", "contingencies"),
    ("geographies",): ("geographic", "geographic areas", "regions", "international", "segments"),
    ("geography",): ("geographic", "geographic areas", "regions", "international"),
    ("regions",): ("region", "geographic", "segments"),
    ("segment",): ("segments", "reportable segments", "segment results"),
    ("customers",): ("customers", "largest customer", "major customers"),
    ("primary", "customers"): _CONCENTRATION, ("main", "customers"): _CONCENTRATION,
    ("major", "customers"): _CONCENTRATION, ("key", "customers"): _CONCENTRATION,
    ("largest", "customers"): _CONCENTRATION, ("biggest", "customers"): _CONCENTRATION,
    ("cyclicality",): ("cyclical", "cyclicality", "economic cycles"),
    ("balance", "sheet"): _BALANCE,
    ("financial", "position"): _BALANCE,
    ("income", "statement"): _INCOME,
    ("p", "l"): _INCOME,
    ("statement", "of", "income"): _INCOME,
    ("cash", "flows"): _CASH_FLOW,
    ("var",): ("value at risk", "var"),
    ("quarter",): _QUARTERLY, ("q1",): _QUARTERLY, ("q2",): _QUARTERLY, ("q3",): _QUARTERLY, ("q4",): _QUARTERLY,
    ("notional",): ("notional amount", "notional amounts", "derivatives"),
    ("share", "repurchases"): ("repurchases of common stock", "share repurchases", "treasury stock"),
    ("buybacks",): ("repurchases of common stock", "share repurchases", "treasury stock"),
}

# Line items: how a question names a financial statement's line item (token tuple, matched on the query's token
# sequence) -> the labels statements print for that same item. Stricter than EXPANSIONS (which adds related
# items for retrieval: "gross margin" -> "net sales"): a row whose label holds one of these phrases is the item
# asked, as if it held the question's words (answer/synthesize.py). No document- or question-specific entries.
_LI_CAPEX = ("capital expenditures", "capital expenditure", "purchases of property plant and equipment",
             "purchases of property and equipment", "additions to property plant and equipment",
             "additions to property and equipment", "payments for property plant and equipment",
             "acquisitions of property plant and equipment", "capital spending", "payments for property and equipment",
             "purchase of property plant and equipment", "purchase of property and equipment",
             "purchases of property plant equipment", "additions to property plant equipment")
_LI_REVENUE = ("revenue", "revenues", "net sales", "total revenues", "total revenue", "net revenues", "net revenue",
               "total net sales", "net operating revenues", "total net revenues", "operating revenues", "sales",
               "sales to customers")
_LI_COGS = ("cost of sales", "cost of goods sold", "cost of revenues", "cost of revenue", "cost of products sold",
            "cost of products", "total cost of sales", "total cost of revenues")
_LI_NET_INCOME = ("net income", "net earnings", "net income attributable", "net earnings attributable",
                  "net income loss", "net earnings loss")
_LI_OPINC = ("operating income", "operating profit", "income from operations", "earnings from operations",
             "operating income loss")
_LI_DA = ("depreciation and amortization", "depreciation amortization", "depreciation depletion and amortization")
_LI_CFO = ("net cash provided by operating activities", "net cash from operating activities",
           "cash provided by operating activities", "net cash provided by used in operating activities",
           "cash flows from operating activities", "net cash flows provided by operating activities",
           "cash generated by operating activities", "operating cash flow")
_LI_DIVIDENDS = ("dividends paid", "cash dividends paid", "cash dividends", "dividends paid to shareholders",
                 "payments of dividends", "dividends")
_LI_PPE = ("property plant and equipment net", "net property plant and equipment", "property and equipment net",
           "property plant and equipment", "property and equipment", "net property and equipment")
LINE_ITEMS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("capex",): _LI_CAPEX, ("capital", "expenditure"): _LI_CAPEX, ("capital", "expenditures"): _LI_CAPEX,
    ("revenue",): _LI_REVENUE, ("revenues",): _LI_REVENUE, ("sales",): _LI_REVENUE, ("topline",): _LI_REVENUE,
    ("top", "line"): _LI_REVENUE,
    ("cogs",): _LI_COGS, ("cost", "of", "goods", "sold"): _LI_COGS, ("cost", "of", "sales"): _LI_COGS,
    ("cost", "of", "revenue"): _LI_COGS, ("cost", "of", "revenues"): _LI_COGS,
    ("net", "income"): _LI_NET_INCOME, ("net", "earnings"): _LI_NET_INCOME, ("net", "profit"): _LI_NET_INCOME,
    ("operating", "income"): _LI_OPINC, ("operating", "profit"): _LI_OPINC, ("ebit",): _LI_OPINC,
    ("d", "a"): _LI_DA, ("depreciation", "and", "amortization"): _LI_DA,
    ("cash", "from", "operations"): _LI_CFO, ("cash", "from", "operating"): _LI_CFO,
    ("operating", "cash", "flow"): _LI_CFO, ("operating", "cash", "flows"): _LI_CFO,
    ("cash", "flow", "from", "operations"): _LI_CFO, ("cash", "flows", "from", "operations"): _LI_CFO,
    ("dividends",): _LI_DIVIDENDS, ("dividend",): _LI_DIVIDENDS,
    ("pp", "e"): _LI_PPE, ("fixed", "assets"): _LI_PPE,
    ("inventory",): ("inventories", "inventory", "total inventories", "inventories net"),
    ("inventories",): ("inventories", "inventory", "total inventories", "inventories net"),
    ("accounts", "payable"): ("accounts payable", "trade accounts payable", "trade payables"),
    ("accounts", "receivable"): ("accounts receivable", "trade receivables", "receivables net",
                                 "trade accounts receivable"),
    ("sg", "a"): ("selling general and administrative",), ("r", "d"): ("research and development",),
    ("shareholders", "equity"): ("total shareholders equity", "total stockholders equity", "total equity"),
    ("stockholders", "equity"): ("total shareholders equity", "total stockholders equity", "total equity"),
    ("interest", "expense"): ("interest expense", "interest expense net"),
    ("eps",): ("earnings per share", "diluted earnings per share", "net income per share",
               "net earnings per share"),
    ("gross", "profit"): ("gross profit", "gross margin"),
    ("gross", "margin"): ("gross margin", "gross profit margin", "gross profit"),
    ("operating", "margin"): ("operating margin", "operating income margin", "operating profit margin"),
}

_ORDINAL_QUARTER = {"q1": "first quarter", "q2": "second quarter", "q3": "third quarter", "q4": "fourth quarter"}
_HALF = {"h1": "six months", "h2": "second half"}

# Tokens as the index sees them, plus numbers with separators ("1,577", "3.5") kept whole for phrasing.
_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|[^\W_]+", re.UNICODE)
_FISCAL = re.compile(r"^fy(\d{2}|\d{4})$")
_YEAR = re.compile(r"^(19|20)\d\d$")
_MONTH_TEXT = "january february march april may june july august september october november december"
_MONTHS = frozenset(_MONTH_TEXT.split())
_FORMS = {"10k": "10 k", "10q": "10 q", "8k": "8 k", "20f": "20 f"}  # as a cover page spells "Form 10-K"
_PERIOD = re.compile(r"^(q[1-4]|h[12]|10k|10q|8k|\d+(st|nd|rd|th))$")


@dataclass(frozen=True, slots=True)
class Query:
    """A parsed query: `words` are the salient terms in order; `phrases` the search phrases (token tuples)."""

    words: list[str] = field(default_factory=list)
    phrases: list[tuple[str, ...]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # every token of the query, stopwords included
    names: list[tuple[str, ...]] = field(default_factory=list)  # capitalised runs: issuer / product names
    years: list[str] = field(default_factory=list)  # periods: years ("FY18" -> "2018"), months, form types
    n_words: int = 0  # phrases[:n_words] come from the query's own words (and their fiscal forms)


def has_stopword(phrase: tuple[str, ...]) -> bool:
    return len(phrase) > 1 and any(t in STOPWORDS for t in phrase)


def tokenize(text: str) -> list[str]:
    """Lowercased tokens of `text` (numbers with separators kept whole), never raising for any input."""
    text = normalise(text[:MAX_QUERY_CHARS * 2])
    return _TOKEN.findall(text)


def _index_tokens(token: str) -> tuple[str, ...]:
    """How the FTS tokenizer splits a token ("1,577" -> ("1", "577"))."""
    return tuple(t for t in re.split(r"[^\w]+", token) if t)


def _fiscal_year(token: str) -> str | None:
    m = _FISCAL.match(token)
    if not m:
        return None
    year = m.group(1)
    return year if len(year) == 4 else "20" + year


def salient_terms(query: str) -> list[str]:
    """The query's content terms in order, stopwords dropped, duplicates removed."""
    out: list[str] = []
    tokens = tokenize(query[:MAX_QUERY_CHARS])
    for i, tok in enumerate(tokens):
        if tok in STOPWORDS or (len(tok) == 1 and not tok.isdigit()):
            continue
        if (tok in _NUMBER_WORDS or tok.isdigit()) and i + 1 < len(tokens) and tokens[i + 1] in _PRECISION:
            continue
        if tok not in out:
            out.append(tok)
    return out


def answer_terms(query: str) -> list[str]:
    """The salient terms an answer must cover (kb.synthesize gaps and confidence): without the
    question words that are kept for retrieval but that evidence need not repeat."""
    return [t for t in salient_terms(query) if t not in ANSWER_NEUTRAL]


def parse(query: str) -> Query:
    """Build the search phrases for `query`: salient words, fiscal-form variants, then domain expansions."""
    query = query[:MAX_QUERY_CHARS]
    raw = tokenize(query)
    words = salient_terms(query)
    phrases: list[tuple[str, ...]] = []

    def add(p: tuple[str, ...]) -> None:
        if p and p not in phrases and len(phrases) < MAX_PHRASES:
            phrases.append(p)

    for word in words:
        add(_index_tokens(word))
        if year := _fiscal_year(word):
            add((year,))
            add(("fiscal", year))
        if word in _ORDINAL_QUARTER:
            add(tuple(_ORDINAL_QUARTER[word].split()))
        if word in _HALF:
            add(tuple(_HALF[word].split()))
    n_words = len(phrases)
    # Adjacent content words as phrases reward passages that use the same wording.
    for a, b in zip(raw, raw[1:], strict=False):
        if _content(a) and _content(b) and not (a.isdigit() or b.isdigit()):
            add(_index_tokens(a) + _index_tokens(b))
    grams = ngrams(raw)
    for trigger, expansion in EXPANSIONS.items():
        if trigger in grams:
            for phrase in expansion:
                add(tuple(phrase.split()))
    years = list(dict.fromkeys(y for w in words if (y := _fiscal_year(w) or (w if _YEAR.match(w) else None))))
    years += [_FORMS.get(t, t) for t in dict.fromkeys(raw) if t in _MONTHS or t in _FORMS
              if t != "may" or re.search(r"\bMay\b", query)]  # "may" is a month only when written "May"
    return Query(words=words, phrases=phrases, tokens=raw, n_words=n_words, names=names(query),
                 years=years)


def names(query: str) -> list[tuple[str, ...]]:
    """Runs of words written with a capital (or mixing letters and digits, "3M"): the issuer, product or
    segment names a question carries ("American Express", "AMCOR"), whatever the size of the KB.
    Stopwords, years and fiscal forms end a run and are never part of one."""
    out: list[tuple[str, ...]] = []
    run: list[str] = []
    for surface in [*_TOKEN.findall(unicodedata.normalize("NFKC", query[:MAX_QUERY_CHARS])), ""]:
        token = surface.lower()
        capital = any(ch.isupper() for ch in surface) or (any(ch.isdigit() for ch in surface)
                                                         and any(ch.isalpha() for ch in surface))
        if capital and not (token in STOPWORDS or _FISCAL.match(token) or _PERIOD.match(token)
                            or _YEAR.match(token) or len(token) < 2):
            run.append(token)
            continue
        if run and tuple(run) not in out:
            out.append(tuple(run))
        run = []
    return out


def _content(token: str) -> bool:
    return token not in STOPWORDS and (len(token) > 1 or token.isdigit())


def ngrams(tokens: list[str], longest: int = 4) -> set[tuple[str, ...]]:
    """Every run of 1..longest consecutive tokens (to look up multi-word triggers at once)."""
    return {tuple(tokens[i:i + n]) for n in range(1, longest + 1) for i in range(len(tokens) - n + 1)}
