"""The words a question asks with, and the words documents print for the same thing.

A reader asks "how many participants", "how long is the runway", "how many people were killed", "by how much did it
differ"; a protocol prints "subjects", a form "Runway Length", a report "people died", "the variance". Filings have
their own table (jsonl_engine/vocabulary.py, which retrieval also searches); this one is the plain English every
kind of document shares, used by answer synthesis only: a question's term also matches the words of its group
(`alternates`), and a count asked ("how many participants") is also printed with them (answer/units.py).

  groups    the people a study enrols (participants, subjects, patients, volunteers), enrolling them (enrol,
            enroll, enrolment, recruit), an adjective of size and
            the noun a form labels (long/length, wide/width, high and tall/height, far/distance, deep/depth,
            old/age, fast/speed, heavy/weight, often/frequency), how death is counted (killed, died, deaths,
            fatalities), flying (flown, flight), a difference (differ, difference, variance), buildings
            (buildings, facilities), staff (employees, staff, personnel);
  how       "how long", "how old", "how often": the adjective asks for a measure, printed as its noun ("Runway
            Length", "Age: 40") or after the figure ("31 metres tall"), and a document not printing it leaves no
            gap: the figure's unit answers (`measured_by`);
  adverbs   "improperly" is printed "improper" ("... were improper"): a term ending in -ly also matches the word
            without it (not a period's word: "quarterly", "annually" are the period asked, answer/order.py);
  nouns     a verb a question asks with is printed as its noun in -ment ("pay" -> "payments", "assessing" ->
            "assessment");
  the item  "What are the assets of the plans ...?", "What was the lowest ceiling reported near ...?": the words
            after "what is/are/was/were (the)" up to a preposition or a participle are the item asked
            (`asked_item`), and a figure printed next to them ("these plans hold estimated assets of $12.9
            trillion") states it (answer/order.py);
  initials  a question names an issuer, an agency, a sponsor by its initials ("OFA's resources" for a report of the
            "United States Office of Farm Affairs", whose title names only "Annual Performance Report"): the
            initials of the capitalised words of one of the documents' entities, or of its last ones (a country's
            name before an agency's is left out of its initials), are the issuer, not a part of it asked
            (`initials_of`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from jsonl_engine.identity.route import acronym

_GROUPS: tuple[tuple[str, ...], ...] = (
    ("participant", "participants", "subject", "subjects", "patient", "patients", "volunteer", "volunteers"),
    ("enrol", "enroll", "enrolled", "enrolment", "enrollment", "recruit", "recruited"),
    ("long", "length", "duration"),
    ("wide", "width"),
    ("high", "tall", "height"),
    ("far", "distance"),
    ("deep", "depth"),
    ("old", "age", "aged"),
    ("fast", "speed"),
    ("heavy", "weight"),
    ("often", "frequency", "every"),
    ("killed", "died", "deaths", "fatalities"),
    ("flown", "flew", "flight", "flying"),
    ("differ", "differed", "difference", "variance"),
    ("building", "buildings", "facility", "facilities"),
    ("employee", "employees", "staff", "personnel"),
)
# verbs a question asks with whose noun in -ment a document prints ("paid improperly": "improper payments")
_MENT_VERBS = frozenset({"pay", "repay", "settle", "impair", "commit", "invest", "recruit", "employ"})
# the adjective of "how long", "how old": the measure asked, printed as its noun ("Length", "Age") or after its figure
_HOW = frozenset({"long", "wide", "high", "tall", "far", "deep", "old", "fast", "heavy", "often"})
_GROUP_OF = {w: g for g in _GROUPS for w in g}
# adverbs in -ly long enough to lose it (alternates) that name a period, not a manner: "quarterly" is no "quarter"
_PERIOD_ADVERBS = frozenset({"quarterly", "annually", "monthly"})


def printed_for(word: str) -> tuple[str, ...]:
    """The other words of `word`'s group (lower case): what a document may print for it."""
    return tuple(w for w in _GROUP_OF.get(word.lower(), ()) if w != word.lower())


def measured_by(query: str, term: str) -> tuple[str, ...]:
    """The nouns a "how <adjective>" question's `term` stands for ("How long is ...": "length", "duration"), or ()
    when `term` is not so asked."""
    low = term.lower()
    if low not in _HOW or not re.search(rf"\bhow\s+{low}\b", query, re.IGNORECASE):
        return ()
    return tuple(w for w in printed_for(low) if w not in _HOW and w != "every")


def alternates(term: str) -> tuple[str, ...]:
    """Words that stand for the question's `term` in a document's text (module docstring): its group's other
    words, the adjective of an adverb in -ly, the noun in -ment of a short verb."""
    low = term.lower()
    out = list(printed_for(low))
    if low.endswith("ly") and len(low) > 6 and low not in _PERIOD_ADVERBS:
        out.append(low[:-2])
    if low in _MENT_VERBS:
        out.append(low + "ment")
    for ending in ("ing", "ed"):  # "assessing": "assessment", "managed": "management"
        if low.endswith(ending) and len(low) > len(ending) + 4:
            base = low[:-len(ending)]
            out.extend((base + "ment", base + "ement"))
    return tuple(dict.fromkeys(out))


# small words a name's initials leave out ("Office of Farm Affairs": "OFA")
_JOINERS = frozenset({"of", "and", "for", "the", "on", "in", "&"})


def initials_of(word: str, names: Sequence[str]) -> bool:
    """`word` (three letters or more, upper case in the question) is the initials of one of `names`, or of its
    last words (`identity.route.acronym` of the name's words without its small words, "U.S." one word): "OFA" of
    "United States Office of Farm Affairs", "BWS" of "Bureau of Widget Standards" (module docstring)."""
    if not word.isalpha():
        return False
    low = word.lower()
    return any(acronym(low, [w.lower() for w in re.findall(r"[A-Za-z][\w'’.-]*", name) if w.lower() not in _JOINERS])
               for name in names)


_ITEM_WORDS = r"((?:[A-Za-z][\w-]*\s+){0,3}?[A-Za-z][\w-]*?)"
_ITEM_ENDS = (r"(?:'s)?(?:\s+(?:of|for|in|at|on|from|under|by|during|that|which|when|as|to|with|reported|recorded|"
              r"estimated|expected|planned|given|used|set|required|listed|stated)\b|\s*[,?])")
_ASKED_ITEM = re.compile(  # "What are the <item> of ...", "What <item> was reported ..."
    r"\b(?:what|which)\s+(?:is|are|was|were|will\s+be|would\s+be)\s+(?:the\s+|its\s+|their\s+)?" + _ITEM_WORDS + _ITEM_ENDS
    + r"|\b(?:what|which)\s+" + _ITEM_WORDS + r"\s+(?:is|are|was|were|did|does|do|will|had|has|have)\b", re.IGNORECASE)


def asked_item(query: str) -> tuple[str, ...]:
    """The words of the item a "What is the ... of ...?" question asks for ("assets" of "What are the assets of the
    plans ... estimated at?"), lower case; () when it is not asked so."""
    m = _ASKED_ITEM.search(query)
    words = [w.lower() for w in (m.group(1) or m.group(2)).split()] if m else []
    return tuple(words[:words.index("of")] if "of" in words else words)  # "dose of daratumumab": the dose
