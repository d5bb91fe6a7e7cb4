"""Financial-statement cues: which primary statement a query needs (the pages that are one are judged at ingest,
`identity/statements.py`).

Metric questions (capex, margins, turnover ratios, working capital) are answered from the income
statement, balance sheet or cash flow statement. BM25 alone ranks the prose that discusses a metric above the
table that holds it.
"""

from __future__ import annotations

from jsonl_engine.identity.statements import BALANCE, CASH_FLOW, INCOME
from jsonl_engine.retrieval.query import ngrams

# Query token sequences -> statements that hold the figures.
_TRIGGERS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("capex",): (CASH_FLOW,), ("capital", "expenditure"): (CASH_FLOW,),
    ("capital", "expenditures"): (CASH_FLOW,), ("capital", "intensive"): (CASH_FLOW, BALANCE, INCOME),
    ("capital", "intensity"): (CASH_FLOW, BALANCE, INCOME),
    ("revenue",): (INCOME,), ("revenues",): (INCOME,), ("net", "sales"): (INCOME,), ("topline",): (INCOME,),
    ("cogs",): (INCOME,), ("cost", "of", "goods"): (INCOME,), ("cost", "of", "sales"): (INCOME,),
    ("gross", "margin"): (INCOME,), ("gross", "profit"): (INCOME,), ("operating", "margin"): (INCOME,),
    ("operating", "income"): (INCOME,), ("ebit",): (INCOME,), ("ebitda",): (INCOME, CASH_FLOW),
    ("net", "income"): (INCOME,), ("eps",): (INCOME,), ("earnings", "per", "share"): (INCOME,),
    ("effective", "tax"): (INCOME,), ("interest", "coverage"): (INCOME,), ("interest", "expense"): (INCOME,),
    ("net", "profit"): (INCOME,), ("profit", "margin"): (INCOME,),
    ("total", "assets"): (BALANCE,), ("quick", "ratio"): (BALANCE,), ("current", "ratio"): (BALANCE,),
    ("working", "capital"): (BALANCE,), ("inventory",): (BALANCE,), ("inventories",): (BALANCE,),
    ("accounts", "payable"): (BALANCE,), ("accounts", "receivable"): (BALANCE,), ("receivables",): (BALANCE,),
    ("current", "liabilities"): (BALANCE,), ("current", "assets"): (BALANCE,), ("liabilities",): (BALANCE,),
    ("fixed", "asset"): (BALANCE,), ("fixed", "assets"): (BALANCE,), ("pp", "e"): (BALANCE,),
    ("debt",): (BALANCE,), ("equity",): (BALANCE,), ("cash", "equivalents"): (BALANCE,), ("roa",): (BALANCE, INCOME), ("roe",): (BALANCE, INCOME),
    ("return", "on", "assets"): (BALANCE, INCOME), ("return", "on", "equity"): (BALANCE, INCOME),
    ("dpo",): (BALANCE, INCOME), ("dso",): (BALANCE, INCOME), ("turnover",): (BALANCE, INCOME),
    ("depreciation",): (CASH_FLOW,), ("d", "a"): (CASH_FLOW,), ("dividends",): (CASH_FLOW,),
    ("dividend",): (CASH_FLOW,), ("cash", "flow"): (CASH_FLOW,), ("cash", "flows"): (CASH_FLOW,),
    ("free", "cash"): (CASH_FLOW,), ("retention", "ratio"): (CASH_FLOW, INCOME),
    ("operating", "activities"): (CASH_FLOW,), ("investing", "activities"): (CASH_FLOW,),
    ("financing", "activities"): (CASH_FLOW,),
    # what a company paid for its own shares is a financing activity's line ("Repurchases of common stock")
    ("buy", "back"): (CASH_FLOW,), ("buying", "back"): (CASH_FLOW,), ("bought", "back"): (CASH_FLOW,),
    ("buyback",): (CASH_FLOW,), ("buybacks",): (CASH_FLOW,), ("repurchasing",): (CASH_FLOW,),
    ("share", "repurchases"): (CASH_FLOW,),
    ("balance", "sheet"): (BALANCE,), ("financial", "position"): (BALANCE,), ("income", "statement"): (INCOME,),
    ("statement", "of", "income"): (INCOME,), ("statement", "of", "operations"): (INCOME,),
    ("p", "l"): (INCOME,), ("statement", "of", "earnings"): (INCOME,),
}


def wanted_statements(tokens: list[str]) -> frozenset[str]:
    grams = ngrams(tokens)
    return frozenset(k for trigger, found in _TRIGGERS.items() if trigger in grams for k in found)


# The statement a question names as its source ("... shown in the cash flow statement", "based on the balance
# sheet", "the P&L"): a token run -> the statement. Its words say where to read, not which line item is asked.
_NAMED: dict[tuple[str, ...], str] = {
    ("balance", "sheet"): BALANCE, ("balance", "sheets"): BALANCE, ("financial", "position"): BALANCE,
    ("financial", "condition"): BALANCE,
    ("income", "statement"): INCOME, ("income", "statements"): INCOME, ("statement", "of", "income"): INCOME,
    ("statements", "of", "income"): INCOME, ("statement", "of", "operations"): INCOME,
    ("statements", "of", "operations"): INCOME, ("statement", "of", "earnings"): INCOME,
    ("statements", "of", "earnings"): INCOME, ("p", "l"): INCOME, ("p", "l", "statement"): INCOME,
    ("profit", "and", "loss"): INCOME, ("cash", "flow", "statement"): CASH_FLOW, ("cash", "flow", "statements"): CASH_FLOW,
    ("cash", "flows", "statement"): CASH_FLOW, ("statement", "of", "cash", "flows"): CASH_FLOW,
    ("statements", "of", "cash", "flows"): CASH_FLOW,
}
_NAMED_LONGEST = max(map(len, _NAMED))


def named_statement(tokens: list[str]) -> tuple[str | None, list[str]]:
    """The statement the query names as its source (the first named), and the query's tokens without the runs
    naming a statement: what is left names the item asked."""
    kind, rest, i = None, [], 0
    while i < len(tokens):
        for n in range(_NAMED_LONGEST, 1, -1):
            run = tuple(tokens[i:i + n])
            if run in _NAMED:
                kind = kind or _NAMED[run]
                i += n
                break
        else:
            rest.append(tokens[i])
            i += 1
    return kind, rest
