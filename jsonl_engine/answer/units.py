"""Units: what a question asks a figure to be counted or measured in, and whether a unit of text prints one so.

A question asking "how many hours", "how long", "what wind speed", "what dose" or "how many trials" is answered by a
figure followed by its unit ("119 hours", "8500 ft", "8 knots", "16 mg/kg", "24 trials"), not by another figure of
the same page ("a 28-hour solo student", "Kestrel 152", "Page 3 of 4"). Documents that are not financial statements
(reports, protocols, forms) print most of their figures with a unit, and a reader asks in those units' terms:

  asked     the units a question asks for (`asked`): a unit it names ("how many hours", "in feet", "how many
            days"), a measure it asks ("how long": a duration or a length; "how wide", "how far", "how tall", a
            length; "how fast", "speed", a speed; "how old", "ages", years; "how often", "what period", "how
            much time", "duration", "interval", a duration; "dose", a dose; "temperature", "pressure",
            "altitude", "elevation", "height", "distance", ...), or what it counts ("how many trials", "the
            number of participants": the counted noun, or a word documents print for it, answer/wording.py);
  framed    the word before "how many", "what period" in the question, before the figure in the text ("After how
            many interviews ...?": "after 15 interviews"), says more (`framed`);
  money     a question asking an amount of money ("How much did it pay ...", "the budget") is not answered by a
            sentence whose every figure counts things ("1.7 million customer service calls": `counts_only`);
  printed   a figure followed, in its clause, by one of those units ("119 hours (Total, ...)", "30- and 90-days
            post treatment", "13,110-foot-long", "24 trials total", "5,016 full-time equivalent employees"), or a
            labelled statement whose label names the measure or the counted noun and whose value opens with a
            figure ("Sample size: 100", "Wind Speed/Gusts: 8 knots").

The rule is about how figures are written and how people ask for them, never about a document or a question.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from jsonl_engine.answer import wording
from jsonl_engine.identity.dates import YEAR
from jsonl_engine.text import STOPWORDS

# canonical unit -> the forms printed after a figure (lower case; matched as whole tokens)
_FORMS: dict[str, tuple[str, ...]] = {
    "second": ("seconds", "second", "secs", "sec"),
    "minute": ("minutes", "minute", "mins", "min"),
    "hour": ("hours", "hour", "hrs", "hr"),
    "day": ("days", "day"),
    "week": ("weeks", "week", "wks", "wk"),
    "month": ("months", "month", "mos", "mo"),
    "year": ("years", "year", "yrs", "yr"),
    "foot": ("feet", "foot", "ft"),
    "inch": ("inches", "inch"),
    "mile": ("miles", "mile", "mi", "nm", "sm"),
    "meter": ("meters", "metres", "meter", "metre", "m", "km", "kilometers", "kilometres", "cm", "mm"),
    "knot": ("knots", "knot", "kts", "kt"),
    "speed": ("mph", "kph", "km/h"),
    "dose": ("mg/kg", "mg/m2", "mg", "g", "kg", "mcg", "µg", "μg", "ml", "iu", "grams", "milligrams", "micrograms",
             "lbs", "lb", "pounds", "gy", "mg/day", "mg/d", "milliliters", "millilitres", "liters", "litres"),
    "degree": ("°", "°c", "°f", "degrees", "degree"),
    "pressure": ("inhg", "hpa", "mb", "millibars", "psi", "mmhg", "hg"),
}
_UNIT_OF = {form: unit for unit, forms in _FORMS.items() for form in forms}
DURATION = frozenset({"second", "minute", "hour", "day", "week", "month", "year"})
LENGTH = frozenset({"foot", "inch", "mile", "meter"})
SPEED = frozenset({"knot", "speed"})

# a measure a question asks (its words) -> the units that answer it
_MEASURES: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple((re.compile(p, re.IGNORECASE), units) for p, units in (
    (r"\bhow\s+long\b", DURATION | LENGTH),
    (r"\bhow\s+(?:wide|far|tall|deep)\b|\b(?:length|width|height|distance|altitude|elevation|depth|ceiling|"
     r"visibility)s?\b", LENGTH),
    (r"\bhow\s+fast\b|\b(?:speed|velocity)s?\b", SPEED),
    (r"\bhow\s+old\b|\bages?\b|\baged\b", frozenset({"year"})),
    (r"\bhow\s+often\b|\bfrequency\b|\bhow\s+much\s+time\b|\b(?:what|which)\s+(?:time\s+)?period\b|\bover\s+what\b"
     r"|\bduration\b|\binterval\b|\bhow\s+soon\b", DURATION),
    (r"\bdos(?:e|es|age|ing)\b", frozenset({"dose"})),
    (r"\btemperatures?\b", frozenset({"degree"})),
    (r"\bpressures?\b", frozenset({"pressure"})),
))
_FIGURATIVE = re.compile(r"\bhow\s+far\b.*\b(?:differ|deviat|exceed|var(?:y|ied|ies)|miss)", re.IGNORECASE)  # no distance
_NAMED_UNIT = re.compile(r"\b(?:how\s+many|number\s+of|in|how\s+much)\s+([a-z]+)\b", re.IGNORECASE)
_HOW_MANY = re.compile(r"\b(?:how\s+many|(?:the\s+)?(?:\w+\s+)?number\s+of)\s+((?:[\w-]+\s+){0,4}?[\w-]+)"
                       r"(?=\s+(?:of|in|for|at|on|did|do|does|will|would|can|could|had|has|have|were|was|are|is|"
                       r"under|across|during|per|each|that|which|who|to|from|by|with|as|the|a|an|this|its|their|our|his|her)\b"
                       r"|\s*[?,.]|$)",
                       re.IGNORECASE)
_TOKEN = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?|[A-Za-zµμ°][A-Za-z0-9µμ°/]*|[^\sA-Za-z\d]")
_CONNECTORS = frozenset({"and", "or", "to", "-", "–", "—", "/", "x", "by", "than", "of"})
_CLAUSE_END = frozenset({",", ";", ":", "(", ")", ".", "[", "]"})
_LEAD_WORDS = 5  # words a counted noun may follow its figure by ("968 eligible federally owned ... facilities")
_LABELLED = re.compile(r"^\s*(?:\d{1,2}[.)]\s+)?([A-Z][^:;!?\n]{1,60}?):\s*(?:[≥≤<>~]\s*|approx\w*\.?\s+)?\d")
# the word framing the asked figure: "After how many interviews ...", "Within how many days", "Over what period"
_FRAME = re.compile(r"\b(after|within|before|for|over|every|by|up\s+to)\s+(?:how\s+(?:many|much|long|often)|what)\b",
                    re.IGNORECASE)
# an amount of money asked: "$", a sum paid, spent, earned, or a word naming one
_MONEY = re.compile(r"\$|\bhow\s+much\s+(?:money\s+)?(?:[\w'’]+\s+){0,5}?(?:pay|paid|spend|spent|cost|earn|earned|raise|raised|"
                    r"invest|invested|receive|received|lose|lost|borrow|borrowed|owe|owed|save|saved|"
                    r"charge|charged|improperly)\b|\b(?:budget|costs?|spending|payments?|funding|fees?|dollars?)\b",
                    re.IGNORECASE)
_SCALE = frozenset({"million", "millions", "billion", "billions", "thousand", "thousands", "trillion", "trillions"})
_NUMBER_WORDS = frozenset(("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"))


@dataclass(frozen=True, slots=True)
class Asked:
    """What a question asks its figure to be counted or measured in."""
    units: frozenset[str] = frozenset()  # canonical units (`_FORMS`)
    nouns: frozenset[str] = frozenset()  # keys of the counted noun and the words documents print for it
    frame: str = ""  # the word before "how many", "what period" ("after", "within", "over"), if any
    money: bool = False  # an amount of money ("How much did it pay ...", "the budget"): a count of things is none

    def __bool__(self) -> bool:
        return bool(self.units or self.nouns)  # a figure in a unit asked (money is no unit of its own)


def _singular(word: str) -> str:
    word = word.lower()
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


@functools.lru_cache(maxsize=256)
def asked(query: str) -> Asked:
    """The units `query` asks its figure in (module docstring); empty when it asks none."""
    units: set[str] = set()
    for m in _NAMED_UNIT.finditer(query):
        unit = _UNIT_OF.get(m.group(1).lower())
        if unit is not None:
            units.add(unit)
    named = bool(units)
    if not named:  # a unit named ("how long, in hours") is the measure's; else the measure's units
        for pattern, found in _MEASURES:
            if pattern.search(query) and not (found == LENGTH and _FIGURATIVE.search(query)):
                units |= found
    nouns: set[str] = set()
    for m in _HOW_MANY.finditer(query):
        counted = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z-]*", m.group(1))]
        if not counted or counted[-1] in _UNIT_OF:
            continue  # "how many hours": a unit, above
        for n, noun in enumerate(counted):
            if noun in STOPWORDS or noun in _NUMBER_WORDS or len(noun) < 3 or ("-" in noun and n < len(counted) - 1):
                continue
            nouns.add(_singular(noun))
            nouns |= {_singular(w) for w in wording.printed_for(noun)}
    frame = _FRAME.search(query)
    money = bool(_MONEY.search(query)) and not units and not nouns
    return Asked(frozenset(units), frozenset(nouns), frame.group(1).lower() if frame and (units or nouns) else "", money)


def _unit_at(tokens: list[str], i: int, want: Asked) -> bool:
    """The figure at tokens[i] is followed, in its clause, by an asked unit or counted noun."""
    seen = 0
    for n, tok in enumerate(tokens[i + 1:i + 12]):
        low = tok.lower()
        if low in _CLAUSE_END or (n == 0 and low in ("%", "percent")):
            return False  # "50% of eligible buildings": a share, not a count of them
        if low in _CONNECTORS or low[0].isdigit():
            continue
        unit = _UNIT_OF.get(low)
        if unit is not None and seen == 0:
            return unit in want.units
        if _singular(low) in want.nouns:
            return seen == 0 or not YEAR.fullmatch(tokens[i])  # "in 2019 claims rose": a year, not a count

        seen += 1
        if not want.nouns or seen > _LEAD_WORDS:
            return False
    return False


def carries(want: Asked, body: str) -> bool:
    """`body` prints a figure in an asked unit, or is a labelled statement naming the asked measure or counted noun
    with a figure for its value ("Sample size: 100")."""
    if not want:
        return False
    tokens = _TOKEN.findall(body.replace("-", " - "))
    if any(t[0].isdigit() and _unit_at(tokens, i, want) for i, t in enumerate(tokens)):
        return True
    m = _LABELLED.match(body)
    if m is None or not want.nouns:
        return False
    return any(_singular(w) in want.nouns for w in re.findall(r"[A-Za-z]+", m.group(1)))


def names_in(want: Asked, text: str) -> bool:
    """`text` (a table row's label, the line titling its rows, its table's header or lead-in) names the asked unit
    or counted noun: the row's figures are counted or measured in it ("Stores open at the end of the quarter" over
    "Acme 908 907", "Distance (feet)")."""
    if not want:
        return False
    for tok in _TOKEN.findall(text.replace("-", " - ")):
        low = tok.lower()
        if _singular(low) in want.nouns or _UNIT_OF.get(low) in want.units:
            return True
    return False


_IDENTIFIER = re.compile(r"(?<![\w.,$])([A-Za-z]{1,6}-)(\d[\w-]*)")  # "ZX-401", "PA-18-135", "COVID-19": a name
_SECTION = re.compile(r"(?<![\w.,$])\d{1,2}(?:\.\d{1,2}){2,}\.?(?![\w%])")  # "2.3.2.", "1.1.1.1": a part's number
_FIGURE_TOKEN = re.compile(r"(?<![\w.,$])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")


def unnamed(body: str, named: frozenset[str]) -> str:
    """`body` with the numbers that are no answer blanked ("#"): those the question itself writes (`named`, without
    separators: "the Kestrel 152", "the ZX-401 seeding flight", "Phase 2"), those that are part of a name, after
    letters and a hyphen ("Acme Sprayer ZX-401", "COVID-19"), and a part's number ("WXYZ 2.3.2. Compliance",
    "KPI 1.1.1"): a unit holding only those holds no figure asked."""
    out = _IDENTIFIER.sub(lambda m: m.group(1) + re.sub(r"\d", "#", m.group(2)), body)
    out = _SECTION.sub(lambda m: re.sub(r"\d", "#", m.group(0)), out)
    if named:
        out = _FIGURE_TOKEN.sub(lambda m: "#" if m.group(0).replace(",", "") in named else m.group(0), out)
    return out


def framed(want: Asked, body: str) -> bool:
    """`body` prints a figure after the word framing it in the question ("After how many interviews ...?": "after
    15 interviews", "Over what period ...?": "over 60 days")."""
    if not want.frame:
        return False
    return bool(re.search(rf"\b{want.frame}\s+(?:(?:a|an|the|about|approximately|around|up\s+to|at\s+least)\s+)?\d",
                          body, re.IGNORECASE))


def counts_only(body: str) -> bool:
    """Every figure of `body` (not a year) counts things it names right after it ("1.7 million customer service
    calls", "more than 1,000 e-mail inquiries"): no amount of money, rate or measure."""
    tokens = _TOKEN.findall(body.replace("-", " - "))
    found = False
    for i, tok in enumerate(tokens):
        if not tok[0].isdigit() or YEAR.fullmatch(tok):
            continue
        if i and tokens[i - 1] in ("$", "€", "£"):
            return False
        nxt = [t.lower() for t in tokens[i + 1:i + 3]]
        while nxt and nxt[0] in _SCALE:
            nxt = nxt[1:]
        if not nxt or not nxt[0].isalpha() or nxt[0] in _UNIT_OF or nxt[0] in STOPWORDS or nxt[0] in _MONEY_WORDS:
            return False
        found = True
    return found


_MONEY_WORDS = frozenset({"dollars", "dollar", "usd", "eur", "euros", "percent", "basis"})
