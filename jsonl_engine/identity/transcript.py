"""Earnings-call transcripts, recognised from how transcripts are written, never from a company or publisher name.

A transcript is a sequence of speaker turns: an operator hands the call to the company's people (prepared
remarks, or "Presentation"), then opens the line to analysts (questions and answers). The signs read here: an
"Operator" turn, speaker labels ("Name" on its own line, "Name -- Role", "NAME:", "Name, Role:"), a participants
list ("Company Participants", "Corporate Participants", "Conference Call Participants"), part markers ("Prepared
Remarks", "Presentation", "Questions and Answers", "Q&A", "Question-and-Answer Session"), and "earnings call" or
"conference call" in the first lines. From them: a confidence in [0, 1], the issuer (the title line "<Company>
(<TICKER>) Q3 2023 Earnings Call", the operator's "welcome to the <Company> third quarter ... call", a
"<Company> Participants" header), the fiscal quarter and year as the call names them, the call date, and the
turns with their offsets into the page texts. Pure functions over page texts; no I/O.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from datetime import date

from jsonl_engine.identity.dates import DATE, parse_date, year_of

KIND = "earnings call transcript"  # the card's kind
PREPARED = "prepared remarks"
QA = "questions and answers"
MIN_CONFIDENCE = 0.6  # from here a document is read as a transcript (sections are its turns, its card says so)
HEAD_LINES = 14  # the first lines: title, date, "earnings call"
CUE_CHARS = 8000  # of the first pages: a transcript shows its signs early (a quick test before reading every line)

_CUE = re.compile(r"(?im)^\W*operator\b|\b(?:earnings|conference)\s+call\b|\bparticipants\b|\bprepared\s+remarks\b|"
                  r"question-and-answer")
CALL = re.compile(r"(?i)\b(?:earnings|results|conference|investor|analyst)\s+(?:conference\s+)?call\b|"
                   r"\bcall\s+transcript\b|\bearnings\s+(?:call|webcast)\b")
_PARTICIPANTS = re.compile(r"(?i)^\W*(?:(?:company|corporate|conference\s+call|call|executive|management|analysts?)"
                           r"\s+)?participants\W*$")
_ISSUER_PARTICIPANTS = re.compile(r"^(?P<co>[A-Z][\w&.,'’\- ]{1,60}?)\s+(?i:participants|representatives)\W*$")
_ANALYST_LIST = re.compile(r"(?i)conference\s+call|call\s+participants|analysts?")
_PREPARED_MARK = re.compile(r"(?i)^\W*(?:prepared\s+remarks|presentation|management\s+(?:presentation|remarks|"
                            r"discussion)|opening\s+remarks)\W*$")
_QA_MARK = re.compile(r"(?i)^\W*(?:questions?\s*(?:-|–|and|&)\s*answers?(?:\s+session)?|q\s*&\s*a(?:\s+session)?|"
                      r"question-and-answer\s+session)\W*$")
QA_OPENS = re.compile(r"(?i)\bfirst\s+question\b|\b(?:now\s+)?(?:begin|open|start|take)\s+(?:the\s+)?"
                       r"(?:question|q\s*&\s*a)|\bopen\s+(?:up\s+)?the\s+(?:line|lines|floor|call)\s+(?:for|to)\s+"
                       r"questions|\bnow\s+(?:begin|open)\b")
OPERATOR_TALK = re.compile(r"(?i)your\s+line\s+is\s+open|question\s+comes\s+from|listen-only\s+mode|"
                            r"question-and-answer\s+session|conference\s+is\s+being\s+recorded")
_SPECIAL = re.compile(r"(?i)^(?:operator|moderator|host|(?:unidentified|unknown)\s+(?:analyst|speaker|participant|"
                      r"company\s+representative|corporate\s+participant))$")
# A person's name: two to four capitalised words (initials, particles and hyphens allowed), or in capitals
_NAME = re.compile(r"^(?:[A-Z][A-Za-z'’\-]*\.?|[A-Z]\.)(?:\s+(?:(?:van|von|de|da|del|der|la|le|di|du|bin)\s+)?"
                   r"(?:[A-Z][A-Za-z'’\-]*\.?|[A-Z]\.)){1,3}$")
_SEP = re.compile(r"\s+(?:--|–|—|-)\s+|,\s+")
# Words of headings and figures, never of a person's name
_NOT_NAME_TEXT = """forward looking statements statement safe harbor participants participant presentation
questions question answers answer remarks prepared contents call conference earnings quarter fiscal date total
revenue revenues note notes table item part corporate company session results financial highlights outlook
guidance agenda overview introduction disclaimer transcript copyright operating net income year first second
third fourth full united states and of the for"""
_NOT_NAME = frozenset(_NOT_NAME_TEXT.split())
_ROLE_WORD = re.compile(r"(?i)\b(?:analyst|officer|president|chief|ceo|cfo|coo|cto|cio|vp|svp|evp|ir|director|head|"
                        r"vice|chair|"
                        r"chairman|chairwoman|treasurer|investor\s+relations|founder|partner|manager|controller|"
                        r"secretary|counsel|executive|research|securities|capital|bank|markets)\b")
_ORD = r"(first|second|third|fourth)"
_PERIOD = re.compile(
    rf"(?i)\bq([1-4])\s*(?:fy|f)?\s*'?(\d{{4}}|\d{{2}})\b|\bf(?:y)?\s*'?(\d{{4}}|\d{{2}})\s*q([1-4])\b|"
    rf"\b([1-4])q\s*(?:fy)?\s*'?(\d{{4}}|\d{{2}})\b|"
    rf"\b{_ORD}[\s-]+(?:fiscal\s+)?quarter(?:\s+(?:and|&)\s+(?:full|fiscal)[\s-]+year)?,?\s+(?:of\s+)?"
    rf"(?:fiscal\s+)?(?:year\s+)?(?:fy\s*)?(\d{{4}})\b|"
    rf"\b(?:fiscal\s+)?(?:year\s+)?(\d{{4}})\s+{_ORD}[\s-]+quarter\b")
_TITLE_CO = re.compile(r"^(?P<co>[A-Z0-9][\w&.,'’\- ]{1,70}?)\s*(?:\((?:[A-Z]+\s*:\s*)?[A-Z.\-]{1,8}\))?\s*[-–—:]?\s*"
                       r"(?i:q[1-4]|[1-4]q|fy|f\d|first|second|third|fourth|fiscal|full[\s-]+year|(?:19|20)\d\d|"
                       r"earnings|results|conference)\b")
_WELCOME_CO = re.compile(r"(?i:welcome|welcoming\s+you)\s+(?:(?i:everyone|all|you)\s+)?(?i:to)\s+(?:(?i:the)\s+)?"
                         r"(?P<co>[A-Z][\w&.,'’\- ]{1,60}?)(?:'s|’s)?\s+(?i:q[1-4]|[1-4]q|fy|first|second|third|"
                         r"fourth|fiscal|full[\s-]+year|(?:19|20)\d\d|quarterly|annual|earnings|financial|"
                         r"conference|results)\b")
_PERIOD_FIRST_CO = re.compile(r"(?i:q[1-4]|[1-4]q|fy\s*\d{2,4})\s+(?:(?i:fy)\s*)?(?:(?:19|20)\d\d\s+)?"
                              r"(?P<co>[A-Z][\w&.,'’\- ]{1,60}?)\s+(?i:earnings|results|conference|investor)\b")
_SENTENCE = re.compile(r"(?i)\b(?:welcome|good\s+(?:morning|afternoon|evening|day)|thank|ladies)\b")
_PERIOD_WORDS = re.compile(r"(?i)\b(?:q[1-4]|quarter|fiscal|earnings|call|conference|transcript|results|"
                           r"first|second|third|fourth)\b")


_CALL_WORD = re.compile(r"^(?:earnings|conference|call|calls|transcript|transcripts|webcast|q[1-4]|[1-4]q|fiscal|"
                        r"fy(?:\d{2}|\d{4})?|(?:19|20)\d\d)$")


def call_words(words: list[str]) -> frozenset[str]:
    """The words of a question that name a call ("earnings call", "Q2", "2023") rather than what was said on it:
    they are in the call's title and opening turn only, so inside the call they point at those, not at the answer."""
    return frozenset(w for w in words if _CALL_WORD.match(w))


@dataclass(frozen=True, slots=True)
class Turn:
    """One speaker's turn: from its label, (page, start), to the next turn or part, (end_page, end); pages are
    indexes into the page texts read, offsets are into those texts."""

    page: int
    start: int
    end_page: int
    end: int
    speaker: str
    role: str | None
    part: str  # PREPARED | QA

    @property
    def title(self) -> str:
        return f"{self.speaker} ({self.role})" if self.role else self.speaker


@dataclass(slots=True)
class Transcript:
    confidence: float = 0.0
    company: str | None = None
    fiscal_quarter: int | None = None
    fiscal_year: int | None = None
    call_date: date | None = None
    turns: list[Turn] = field(default_factory=list)
    parts: list[tuple[str, int, int]] = field(default_factory=list)  # (part, page, offset) where each part begins
    names: list[str] = field(default_factory=list)  # every way the call names its issuer, `company` first

    @property
    def recognised(self) -> bool:
        return self.confidence >= MIN_CONFIDENCE and len(self.turns) >= 2


@dataclass(frozen=True, slots=True)
class _Line:
    page: int
    start: int
    end: int
    text: str  # whitespace collapsed


def _lines(pages: list[str]) -> list[_Line]:
    out = []
    for index, page in enumerate(pages):
        offset = 0
        for raw in page.split("\n"):
            text = " ".join(raw.split())
            if text:
                out.append(_Line(index, offset + len(raw) - len(raw.lstrip()), offset + len(raw), text))
            offset += len(raw) + 1
    return out


def _split_label(label: str) -> tuple[str, str | None] | None:
    """("Name", role or None) when `label` is a speaker label: a person's name or a special speaker
    ("Operator"), then optionally a separator and a role or affiliation."""
    label = re.sub(r"\s*\[\d+\]$", "", label.strip().rstrip(":").strip())  # "Name, Firm - Role [2]": a turn's number
    if _SPECIAL.match(label):
        return label, None
    m = _SEP.search(label)
    name, role = (label[: m.start()], label[m.end():]) if m else (label, None)
    name = name.strip()
    if len(name) > 40 or not _NAME.match(name) or any(w.strip(".").lower() in _NOT_NAME for w in name.split()):
        return None
    if role is not None:
        role = _SEP.sub(", ", role).strip(" ,;-–—")
        if not role or len(role) > 90 or not role[:1].isalnum() or role.endswith("."):
            return None
    return name, role


def _person(name: str) -> str:
    """A name as people write it: "BRETT IVERSEN" -> "Brett Iversen"."""
    if name.isupper():
        return " ".join("-".join(p.capitalize() for p in w.split("-")) for w in name.split())
    return name


def _participants(lines: list[_Line]) -> tuple[dict[str, str | None], set[str], set[int], str | None]:
    """Names listed under participants headers: name (casefolded) -> role; the names listed as analysts (under a
    "Conference Call Participants" header); the indexes of the list's lines; an issuer named by the header."""
    roles: dict[str, str | None] = {}
    analysts: set[str] = set()
    listed: set[int] = set()
    issuer = None
    i = 0
    while i < len(lines):
        text = lines[i].text
        own = _ISSUER_PARTICIPANTS.match(text)
        if not (_PARTICIPANTS.match(text) or (own and not _PERIOD_WORDS.search(own["co"]))):
            i += 1
            continue
        if own and not _PARTICIPANTS.match(text) and issuer is None:
            issuer = own["co"].strip(" ,")
        is_analysts = bool(_ANALYST_LIST.search(text))
        listed.add(i)
        i += 1
        while i < len(lines):
            parsed = _split_label(lines[i].text)
            if parsed is None or len(lines[i].text) > 120 or _SPECIAL.match(parsed[0]):
                break  # the list ends where the call begins (the operator)
            roles[parsed[0].casefold()] = parsed[1]
            if is_analysts:
                analysts.add(parsed[0].casefold())
            listed.add(i)
            i += 1
    return roles, analysts, listed, issuer


_INLINE = re.compile(r"^(?P<label>[^:]{2,110}?):(?:\s+(?P<rest>\S.*))?$")


def _labels(lines: list[_Line], listed: set[int]) -> list[tuple[int, str, str | None, bool]]:
    """(line index, name, role, own line) of each line that opens with a speaker label: "Name: text", "Name, Role:
    text", or a label alone on its line followed by text."""
    out = []
    for i, line in enumerate(lines):
        if i in listed or len(line.text) < 2:
            continue
        if (m := _INLINE.match(line.text)) and (parsed := _split_label(m["label"])):
            out.append((i, parsed[0], parsed[1], m["rest"] is None))
            continue
        if len(line.text) > 100 or i + 1 >= len(lines):
            continue
        parsed = _split_label(line.text)
        if parsed is None:
            continue
        following = lines[i + 1].text
        if _split_label(following) is not None or len(following) < 2:
            continue  # a list of names, not a turn
        out.append((i, parsed[0], parsed[1], True))
    return out


def _period(text: str) -> tuple[int | None, int | None]:
    for m in _PERIOD.finditer(text):
        g = m.groups()
        if g[0]:
            return int(g[0]), year_of(g[1])
        if g[2]:
            return int(g[3]), year_of(g[2])
        if g[4]:
            return int(g[4]), year_of(g[5])
        if g[6]:
            return ("first", "second", "third", "fourth").index(g[6].lower()) + 1, int(g[7])
        return ("first", "second", "third", "fourth").index(g[9].lower()) + 1, int(g[8])
    return None, None


def _companies(head: list[str], opening: str, issuer: str | None) -> list[str]:
    """The issuer's names, the first the one to title it by: a title line's ("<Company> (<TICKER>) Q3 2023 Earnings
    Call", "Q3 2023 <Company> Earnings Call"), the operator's welcome's, a "<Company> Participants" header's (a call
    may write the legal name on its title and the short one in its welcome)."""
    names = []
    for text in head:
        if not CALL.search(text) or len(text) > 120:
            continue
        for m in (_TITLE_CO.match(text), _PERIOD_FIRST_CO.match(text)):
            name = m["co"].strip(" ,-–—:") if m else ""
            if name and not _PERIOD_WORDS.search(name) and not _SENTENCE.search(name):
                names.append(name)
                break
        if names:
            break
    if (m := _WELCOME_CO.search(opening)) and not _PERIOD_WORDS.search(name := m["co"].strip(" ,")):
        names.append(name)
    names += [issuer] if issuer else []
    return list({n.casefold(): n for n in reversed(names)}.values())[::-1]


def _text_between(pages: list[str], a: tuple[int, int], b: tuple[int, int]) -> str:
    if a[0] == b[0]:
        return pages[a[0]][a[1]:b[1]]
    return "\n".join([pages[a[0]][a[1]:], *pages[a[0] + 1: b[0]], pages[b[0]][: b[1]]])


def _turns(pages: list[str], lines: list[_Line], labels: list[tuple[int, str, str | None]],
           marks: list[tuple[int, str]], roles: dict[str, str | None]) -> tuple[list[Turn], list[tuple[int, str]]]:
    """The turns the labels open (each up to the next label or part marker) and the part markers that count: a
    marker followed by a turn before any other marker (a table of contents lists them all)."""
    starts = sorted([(i, "turn") for i, _n, _r in labels] + [(i, part) for i, part in marks])
    marks = [(i, kind) for k, (i, kind) in enumerate(starts)
             if kind != "turn" and k + 1 < len(starts) and starts[k + 1][1] == "turn"]
    bounds = sorted([i for i, _n, _r in labels] + [i for i, _k in marks])
    end = (len(pages) - 1, len(pages[-1]))
    turns = []
    for i, name, role in labels:
        k = bisect.bisect_right(bounds, i)
        stop = (lines[bounds[k]].page, lines[bounds[k]].start) if k < len(bounds) else end
        turns.append(Turn(lines[i].page, lines[i].start, stop[0], stop[1], _person(name),
                          role if role is not None else roles.get(name.casefold()), PREPARED))
    return turns, marks


def _said(pages: list[str], turn: Turn) -> str:
    return _text_between(pages, (turn.page, turn.start), (turn.end_page, turn.end))


def _talk(pages: list[str], turn: Turn) -> bool:
    """Whether a turn is speech: an operator running a call, anyone else a dozen words or more."""
    said = _said(pages, turn)
    if _SPECIAL.match(turn.speaker):
        return bool(OPERATOR_TALK.search(said) or QA_OPENS.search(said) or CALL.search(said))
    return len(said.split()) >= 14


def _parts(turns: list[Turn], marks: list[tuple[int, str]], lines: list) -> list[tuple[str, int, int]]:
    """Where each part begins: its marker line when it comes before the part's first turn, else that turn."""
    parts: list[tuple[str, int, int]] = []
    for part in (PREPARED, QA):
        mark = next((i for i, kind in marks if kind == part), None)
        first = next((t for t in turns if t.part == part), None)
        if first is None:
            continue
        at = (lines[mark].page, lines[mark].start) if mark is not None and (
            lines[mark].page, lines[mark].start) <= (first.page, first.start) else (first.page, first.start)
        parts.append((part, *at))
    return parts


def _call_period(head: list[str], opening: str) -> tuple[int | None, int | None]:
    """The fiscal quarter and year the call names first, in its title lines or its opening turn."""
    quarter, year = None, None
    for text in [*head, opening]:
        quarter, year = _period(text)
        if quarter:
            break
    return quarter, year


def _call_date(head: list[str], opening: str) -> date | None:
    """The first date written before the first turn, else in the opening turn."""
    for text in [*head, opening]:
        if (m := DATE.search(text)) and (when := parse_date(m.group(0))):
            return when
    return None


def read(pages: list[str]) -> Transcript:
    """What the pages say about themselves as an earnings-call transcript (confidence 0 when nothing does)."""
    if not pages or not _CUE.search("\n".join(pages[:3])[:CUE_CHARS]):
        return Transcript()
    lines = _lines(pages)
    roles, analysts, listed, issuer = _participants(lines)
    found = _labels(lines, listed)
    counts: dict[str, int] = {}
    for _i, name, _role, _own in found:
        counts[name.casefold()] = counts.get(name.casefold(), 0) + 1
    labels = [(i, name, role) for i, name, role, own in found
              if _SPECIAL.match(name) or name.casefold() in roles or counts[name.casefold()] >= 2
              or (role is not None and _ROLE_WORD.search(role)) or (not own and counts[name.casefold()] >= 2)]
    found_marks = [(i, PREPARED if _PREPARED_MARK.match(ln.text) else QA) for i, ln in enumerate(lines)
                   if i not in listed and (_PREPARED_MARK.match(ln.text) or _QA_MARK.match(ln.text))]
    end = (len(pages) - 1, len(pages[-1]))
    turns, _marks = _turns(pages, lines, labels, found_marks, roles)
    # a speaker talks: some turn of theirs is prose (a form's "Flight Time: 1,200 hours" is not), the operator
    # runs a call; the turns are read again without the labels that do not
    talks = {t.speaker.casefold() for t in turns if _talk(pages, t)}
    labels = [(i, n, r) for i, n, r in labels if _person(n).casefold() in talks]
    turns, marks = _turns(pages, lines, labels, found_marks, roles)
    qa_line = next((i for i, kind in marks if kind == QA), None)
    if qa_line is None and turns:  # no marker: the operator opening the line, else the first analyst
        for k, turn in enumerate(turns):
            said = _said(pages, turn)
            analyst = turn.speaker.casefold() in analysts or "analyst" in (turn.role or "").lower()
            if (_SPECIAL.match(turn.speaker) and k > 0 and QA_OPENS.search(said)) or analyst:
                qa_line = next(i for i, _n, _r in labels if (lines[i].page, lines[i].start) == (turn.page, turn.start))
                break
    qa_at = (lines[qa_line].page, lines[qa_line].start) if qa_line is not None else end
    turns = [Turn(t.page, t.start, t.end_page, t.end, t.speaker, t.role, QA if (t.page, t.start) >= qa_at else PREPARED)
             for t in turns]
    parts = _parts(turns, marks, lines)
    # the evidence
    head = [ln.text for ln in lines[:HEAD_LINES]]
    first_turn = min((i for i, _n, _r in labels), default=len(lines))
    operator = [t for t in turns if _SPECIAL.match(t.speaker)]
    opening = _said(pages, turns[0]) if turns else ""
    opening = " ".join(opening.split())[:1500]
    repeated = sum(1 for n in counts.values() if n >= 2)
    score = 0.0
    score += 0.3 if any(CALL.search(t) for t in head) or CALL.search(opening) else 0.0
    score += 0.2 if listed else 0.0
    score += 0.3 if operator else 0.0
    score += 0.1 * len({kind for _i, kind in marks})
    score += 0.2 if len(turns) >= 4 and repeated >= 2 else 0.0
    score += 0.1 if any(OPERATOR_TALK.search(ln.text) for ln in lines[: first_turn + 40]) else 0.0
    quarter, year = _call_period(head, opening)
    when = _call_date([ln.text for ln in lines[: min(first_turn, HEAD_LINES)]], opening)
    names = _companies(head, opening, issuer)
    return Transcript(round(min(1.0, score), 2) if len(turns) >= 2 else round(min(score, 0.3), 2),
                      names[0] if names else None, quarter, year, when, turns, parts, names)


def merged(turns: list[Turn], pages: list[str], min_chars: int = 60, handover_chars: int = 200) -> list[Turn]:
    """Turns with very short ones folded into a neighbour: the operator's short hand-over ("Our next question
    comes from ...") into the turn it introduces, any other ("Thank you.") into the turn before it."""
    out: list[Turn] = []
    pending: Turn | None = None
    for k, turn in enumerate(turns):
        size = len(" ".join(_said(pages, turn).split()))
        nxt = turns[k + 1] if k + 1 < len(turns) else None
        if pending is not None:
            turn = Turn(pending.page, pending.start, turn.end_page, turn.end, turn.speaker, turn.role, turn.part)
            pending = None
        if size < handover_chars and _SPECIAL.match(turn.speaker) and nxt is not None and nxt.part == turn.part \
                and (nxt.page, nxt.start) == (turn.end_page, turn.end):
            pending = turn
            continue
        if size < min_chars and out and out[-1].part == turn.part:
            last = out[-1]
            out[-1] = Turn(last.page, last.start, turn.end_page, turn.end, last.speaker, last.role, last.part)
            continue
        out.append(turn)
    return out
