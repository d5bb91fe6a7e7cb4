"""The engine's search vocabulary, shared by the layers: generic accounting terms a question uses -> the phrases
filings print for the same line item. Retrieval adds the phrases to a query that holds the term
(retrieval/query.py); the answer layer reads them too; the SQLite store keeps, at ingest and removal, the counts of
every phrase here of three tokens or more (store/sqlite/terms.py), as it does for every one- and two-word phrase:
a query then reads them instead of counting them over the whole index.

Moving a phrase in or out changes no ranking: a phrase's count is the same read or counted.
"""

from __future__ import annotations

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
# pursuant to government contracts"), rarely with the word "customers" unless as its "principal customers".
_CONCENTRATION = ("of our revenues", "of total revenues", "of consolidated revenues", "of total consolidated revenues",
                  "total consolidated revenues", "of net sales", "of consolidated net sales", "of our net sales",
                  "of total net sales",
                  "largest customer", "largest customers", "single customer", "principal customers", "wholesalers",
                  "distributors")
# Which product or service lines make a large share of revenue a filing says in its segment tables and revenue
# notes (each segment's net revenue with its "% of total net revenue", revenues disaggregated by product line or
# "by revenue category") and in its business description ("... generated net sales of $2.1 billion, which
# represented 39% of our total consolidated net sales").
_CATEGORIES = ("segments", "of total net revenue", "of total revenue", "of total revenues", "of net sales",
               "of total net sales", "total consolidated net sales",
               "disaggregation of revenue", "revenue by", "revenue category", "product line", "product lines")
_PPE = ("property plant and equipment net", "net property plant and equipment", "property and equipment net")

# An analyst's everyday words for an item that filings and reports print under its own name: the words of the
# question -> (the labels the item is printed under, further phrases where it is discussed). "pay to buy back its
# own stock": repurchases of common stock; "how many people worked for": employees; "what did a night's stay
# cost": the average daily rate. How analysts ask and how documents are written, never a company's own wording.
# Retrieval adds both to the query (EXPANSIONS); a row or sentence naming a label is about the asked item
# (ANALYST_ITEMS, answer/synthesize.py), as a statement's label for a line item is (retrieval/query.py LINE_ITEMS).
_REPURCHASES = (("repurchases of common stock", "repurchase of common stock", "share repurchases",
                 "repurchases of shares", "purchases of treasury stock", "common stock repurchases", "stock repurchases"),
                ("repurchase", "treasury stock"))
_RETURNED = (("returned to shareholders",), ("returned", "share repurchases", "repurchase", "dividends"))
_EMPLOYEES = (("employees", "number of employees", "full time employees", "total employees", "headcount"),
              ("human capital", "workforce"))
_ROOM_RATE = (("average daily rate", "adr"), ("revenue per available room", "occupancy"))
_PER_MEMBER = (("average monthly revenue per", "average revenue per", "monthly revenue per", "revenue per"), ())
_SOLD = (("sales", "net sales"), ())
# "per month" is printed "monthly" ("Average monthly revenue per membership"), "a year" "annual"
_MONTHLY = ((), ("monthly",))
# what something "generated for" a company is its revenue ("What did a subscriber generate for Acme per month?")
_GENERATED_FOR = ((), ("revenue", "revenues"))
_UNDERWRITTEN = (("principal amount",), ("underwriters", "to be purchased"))
_CASH_HELD = (("cash and cash equivalents",), ())
_RAISED = (("proceeds from issuance", "net proceeds", "proceeds from"), ("proceeds", "issuance"))
_PAID_OUT = (("benefit payments", "estimated future benefit payments", "expected benefit payments", "payments"),
             ("expected to be paid", "benefits paid"))
_DEBT_OWED = (("total debt", "long term debt", "borrowings"), ("short term borrowings", "notes payable"))
_BOTTOM_LINE = (("net income", "net earnings", "net income attributable", "net earnings attributable"), ())
_TAX_BILL = (("provision for income taxes", "income tax expense", "income taxes"), ("effective tax rate",))
_PER_SHARE = (("diluted earnings per share", "earnings per share", "net income per share", "net earnings per share"),
              ())
_OVERHEAD = (("selling general and administrative", "selling general and administrative expenses"),
             ("general and administrative",))
_LOST_MONEY = (("net loss", "net income loss", "net loss attributable", "net earnings loss"), ())
_CASH_GENERATED = (("net cash provided by operating activities", "cash provided by operating activities",
                    "net cash from operating activities", "cash flows from operating activities"), ())
_CAPITAL_PROJECTS = (("capital expenditures", "capital spending", "purchases of property plant and equipment",
                      "additions to property plant and equipment", "purchases of property and equipment"), ())
_ORDER_BOOK = (("backlog", "total backlog"), ())
_WRITE_DOWN = (("impairment", "impairment charges", "goodwill impairment", "impairment of"), ("write down",))
_SAME_STORE = (("comparable sales", "comparable store sales", "comparable stores sales"), ())
_RECEIVABLES = (("accounts receivable", "trade receivables", "receivables"), ())
_ANALYST: dict[tuple[str, ...], tuple[tuple[str, ...], tuple[str, ...]]] = {
    **dict.fromkeys([("buy", "back"), ("buying", "back"), ("bought", "back"), ("buys", "back"), ("buyback",),
                     ("buybacks",), ("repurchasing",), ("repurchased",)], _REPURCHASES),
    **dict.fromkeys([("hand", "back"), ("handed", "back"), ("give", "back"), ("gave", "back"),
                     ("return", "to", "shareholders"), ("returned", "to", "shareholders")], _RETURNED),
    **dict.fromkeys([("people",), ("headcount",), ("staff",), ("employ",), ("employed",), ("workforce",),
                     ("workers",)], _EMPLOYEES),
    **dict.fromkeys([("night",), ("nights",), ("nightly",), ("room", "rate"), ("room", "rates")], _ROOM_RATE),
    **dict.fromkeys([("per", "member"), ("per", "paying", "member"), ("per", "subscriber"),
                     ("per", "paying", "subscriber"), ("per", "user"), ("per", "membership")], _PER_MEMBER),
    **dict.fromkeys([("sell",), ("sold",)], _SOLD),
    **dict.fromkeys([("per", "month"), ("a", "month"), ("each", "month")], _MONTHLY),
    **dict.fromkeys([("generate", "for"), ("generated", "for"), ("generates", "for")], _GENERATED_FOR),
    **dict.fromkeys([("underwriter",), ("underwrite",), ("underwrote",)], _UNDERWRITTEN),
    **dict.fromkeys([("sitting", "on"), ("cash", "pile"), ("cash", "on", "hand")], _CASH_HELD),
    **dict.fromkeys([("raise",), ("raised",), ("raising",)], _RAISED),
    **dict.fromkeys([("owe",), ("owes",), ("owed", "to"), ("borrowed",)], _DEBT_OWED),
    **dict.fromkeys([("owed", "by"), ("owe", "it"), ("owes", "it")], _RECEIVABLES),
    **dict.fromkeys([("overhead",), ("overheads",)], _OVERHEAD),
    **dict.fromkeys([("lose", "money"), ("lost", "money"), ("losing", "money"), ("in", "the", "red")], _LOST_MONEY),
    **dict.fromkeys([("cash", "generated"), ("operations", "generated"), ("operations", "generate"),
                     ("generated", "from", "operations"),
                     ("generated", "by", "operations"), ("cash", "its", "operations")], _CASH_GENERATED),
    **dict.fromkeys([("capital", "projects"), ("capital", "investments"), ("capital", "investment")], _CAPITAL_PROJECTS),
    **dict.fromkeys([("order", "book"), ("orders", "on", "hand"), ("unfilled", "orders")], _ORDER_BOOK),
    **dict.fromkeys([("write", "down"), ("wrote", "down"), ("written", "down"), ("writedown",), ("writedowns",),
                     ("write", "off"), ("wrote", "off"), ("written", "off")], _WRITE_DOWN),
    **dict.fromkeys([("same", "store"), ("same", "stores"), ("like", "for", "like")], _SAME_STORE),
    **dict.fromkeys([("bottom", "line")], _BOTTOM_LINE),
    **dict.fromkeys([("tax", "bill"), ("taxes", "paid"), ("pay", "in", "taxes"), ("paid", "in", "taxes")], _TAX_BILL),
    **dict.fromkeys([("profit", "per", "share"), ("earned", "per", "share"), ("earn", "per", "share")], _PER_SHARE),
    **dict.fromkeys([("war", "chest"), ("cash", "reserves")], _CASH_HELD),
    # a country a question spells out, tables abbreviate ("U.S. 3,759 3,225"; the index reads "U.S." as "u s")
    ("united", "states"): (("u s",), ()),
    **dict.fromkeys([("pay", "out"), ("paid", "out"), ("pays", "out"), ("paying", "out")], _PAID_OUT),
}
# words saying an item is held, not which: "how much inventory was Acme sitting on" names its item itself, and only
# a question naming none ("how much was Acme sitting on") asks for its cash
HOLDING: frozenset[tuple[str, ...]] = frozenset({("sitting", "on")})
# trigger -> the labels the item it names is printed under
ANALYST_ITEMS: dict[tuple[str, ...], tuple[str, ...]] = {t: items for t, (items, _) in _ANALYST.items()}

# The accounting terms alone (the words of the items a question asks for, answer/qualifier.py): EXPANSIONS adds
# an analyst's everyday words for them.
ACCOUNTING: dict[tuple[str, ...], tuple[str, ...]] = {
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
    ("categories",): _CATEGORIES, ("category",): _CATEGORIES,
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
EXPANSIONS: dict[tuple[str, ...], tuple[str, ...]] = {
    **ACCOUNTING, **{trigger: items + related for trigger, (items, related) in _ANALYST.items() if trigger not in ACCOUNTING}}

# Every phrase of EXPANSIONS, in order, once.
PHRASES: tuple[str, ...] = tuple(dict.fromkeys(p for phrases in EXPANSIONS.values() for p in phrases))
