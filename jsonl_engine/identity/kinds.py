"""What kind of document this is, from how it is written: the words of its title block and of its first pages,
and the structure documents of a kind share (a trial protocol's inclusion criteria, an accident report's probable
cause, a transcript's operator and speaker turns, a paper's abstract and references). Each kind comes with a
confidence: its title names it (high), only its first pages' vocabulary does (lower), nothing does (the generic
kind "document", low). SEC forms are read by `card.py` from their covers; this module names every other kind."""

from __future__ import annotations

import re
from dataclasses import dataclass

from jsonl_engine.identity import transcript

GENERIC = "document"
# Kinds by the period they cover (routing and cards read periods through these)
ANNUAL_KINDS = ("10-K", "20-F", "40-F", "annual report")
QUARTERLY_KINDS = ("10-Q", "earnings release", transcript.KIND)
# The legal forms a company's name ends in; a name's distinctive words are the others
LEGAL_FORMS = ("inc", "incorporated", "corp", "corporation", "co", "company", "plc", "llc", "lp", "ltd", "limited",
               "nv", "sa", "ag", "se", "group", "holding", "holdings", "trust", "bancorp")
TITLE = 0.9        # the title block names the kind
BODY = 0.6         # two of the kind's marks in the first pages
ONE_MARK = 0.4     # one mark only
NONE = 0.2         # nothing recognised: the generic kind


@dataclass(frozen=True, slots=True)
class Kind:
    name: str
    title: re.Pattern[str]          # words a title of this kind carries
    marks: tuple[re.Pattern[str], ...] = ()  # what its first pages carry


def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.I | re.M)


# Order matters where titles overlap: the more specific kind first.
KINDS: tuple[Kind, ...] = (
    Kind(transcript.KIND, transcript.CALL,  # the call's own words, as transcript.py reads them
         (_re(r"^\s*operator\s*[:\-–]?\s*$|^\s*operator\s*:"), transcript.QA_OPENS, transcript.OPERATOR_TALK,
          _re(r"\b(?:company|corporate|conference\s+call)\s+participants\b"))),
    Kind("clinical protocol", _re(r"\bprotocol\b|\bstatistical\s+analysis\s+plan\b|\binformed\s+consent\b|"
                                  r"\bclinical\s+(?:study|trial)\b|\bstudy\s+plan\b"),
         (_re(r"\binclusion\s+criteria\b"), _re(r"\bexclusion\s+criteria\b"), _re(r"\bprincipal\s+investigator\b"),
          _re(r"\b(?:primary|secondary)\s+(?:end\s?points?|outcomes?)\b"), _re(r"\binformed\s+consent\b"),
          _re(r"\b(?:randomi[sz]ed|placebo|double[- ]blind|phase\s+(?:i|ii|iii|iv|[1-4])\b)"),
          _re(r"\bNCT\d{8}\b|\bclinicaltrials\.gov\b"), _re(r"\bstudy\s+(?:sponsor|population|design|procedures)\b"))),
    Kind("accident report", _re(r"\b(?:accident|incident|mishap|occurrence|crash)\b.{0,40}\breport\b|"
                                r"\binvestigation\s+report\b"),
         (_re(r"\bprobable\s+cause\b"), _re(r"\b(?:accident|incident)\s+number\b"), _re(r"\binjuries\b"),
          _re(r"\bfindings\b"), _re(r"\b(?:aircraft|vessel|vehicle)\s+damage\b"))),
    Kind("research paper", _re(r"(?!x)x"),
         (_re(r"^\s*abstract\b"), _re(r"^\s*(?:\d\.?\s*)?introduction\s*$"), _re(r"\bet\s+al\.|\bdoi:?\s*10\.\d{4}"),
          _re(r"^\s*(?:keywords|key\s+words)\s*:"), _re(r"\buniversity\b|\binstitute\b|\bdepartment\s+of\b"))),
    Kind("government report", _re(r"\bstrategic\s+plan\b|\bperformance\s+(?:and\s+accountability\s+)?report\b|"
                                  r"\bperformance\s+plan\b|\bbudget\s+(?:in\s+brief|justification|request)\b|"
                                  r"\breport\s+to\s+(?:the\s+)?congress\b|\binspector\s+general\b|\bagency\s+financial\s+report\b"),
         (_re(r"\b(?:u\.\s?s\.|united\s+states)\s+(?:department|office|agency)\b|\bdepartment\s+of\s+[a-z]+|"
              r"\bfederal\s+(?:agency|government)\b"), _re(r"\bstrategic\s+(?:goals?|objectives?)\b"),
          _re(r"\bfiscal\s+years?\s+\d{4}"), _re(r"\bperformance\s+(?:goals?|measures?|indicators?)\b"),
          _re(r"\b(?:congress|the\s+administration|agency|agencies)\b"))),
    Kind("contract", _re(r"\bagreement\b|\bcontract\b|\bterms\s+and\s+conditions\b|\blease\b|\bmemorandum\s+of\s+understanding\b"),
         (_re(r"\bwhereas\b"), _re(r"\bin\s+witness\s+whereof\b"), _re(r"\b(?:the\s+)?parties\s+(?:hereto|agree)\b"),
          _re(r"\bhereinafter\b"), _re(r"\bgoverning\s+law\b"))),
    Kind("manual", _re(r"\bmanual\b|\buser'?s?\s+guide\b|\bhandbook\b|\binstructions?\s+for\s+use\b|\bguidebook\b"),
         (_re(r"\bwarning\b"), _re(r"\binstall(?:ation|ing)?\b"), _re(r"\bstep\s+\d\b|\bfigure\s+\d"),
          _re(r"\btroubleshooting\b"))),
    Kind("standard", _re(r"\bstandard\b|\bspecification\b|\biso(?:/iec)?\s+\d{3,}|\bieee\s+std\b|\brfc\s*\d{3,}"),
         (_re(r"\bshall\b"), _re(r"\bnormative\s+references?\b"), _re(r"\bterms\s+and\s+definitions\b"),
          _re(r"\bconformance\b|\bcompliance\b"))),
    Kind("press release", _re(r"\bpress\s+release\b|\bnews\s+release\b"),
         (_re(r"\bfor\s+immediate\s+release\b"), _re(r"\bmedia\s+contact\b|\binvestor\s+contact\b"),
          _re(r"\btoday\s+announced\b"))),
    Kind("annual report", _re(r"\bannual\s+report\b|\byear\s+in\s+review\b"),
         (_re(r"\bletter\s+to\s+(?:our\s+)?shareholders\b"), _re(r"\bchairman'?s\s+statement\b"))),
    Kind("report", _re(r"\breport\b|\bwhite\s+paper\b|\breview\b|\bassessment\b|\bstudy\b"), ()),
)
MARKS_NEEDED = 2  # marks of one kind in the first pages to name it without its title


def recognise(title_text: str, body: str, *, pages: int = 0, words_per_page: float = 0.0) -> tuple[str, float]:
    """(kind, confidence) from the title block (`title_text`: headline, labelled and metadata titles) and the
    first pages' text (`body`)."""
    for kind in KINDS:
        if kind.title.search(title_text):
            marks = sum(1 for m in kind.marks if m.search(body))
            if kind.name != "report" or marks:
                return kind.name, TITLE
    best, count = None, 0
    for kind in KINDS:
        marks = sum(1 for m in kind.marks if m.search(body))
        if marks > count:
            best, count = kind, marks
    if best is not None and count >= MARKS_NEEDED:
        return best.name, BODY
    if pages >= 5 and 0 < words_per_page < 60:
        return "slide deck", ONE_MARK  # many pages of few words: slides
    for kind in KINDS:
        if kind.title.search(title_text):
            return kind.name, ONE_MARK
    if best is not None and count == 1:
        return best.name, ONE_MARK
    return GENERIC, NONE
