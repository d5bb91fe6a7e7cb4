"""A document's card, derived from its first pages: who it is about, what kind of document it is, the period it
covers, and a title a person recognises and can tell apart from its siblings.

Only generic evidence counts, never a table of names: the SEC cover (the line above "(Exact name of registrant as
specified in its charter)", "FORM 10-K", "For the fiscal year ended ...", "Date of Report ..."), the headline of a
release ("<Issuer> reports ... results"), a name ending in a legal form ("... Inc.", "... plc"), dates, the PDF
metadata title when it says something ("Form 10-K for X filed 02/09/2023", "10-K - 02/08/2023 - X"), and the
extractor's title otherwise. `fill_missing` derives the cards of documents stored before cards existed, from
their stored pages (no source file needed).
"""

from __future__ import annotations

import re
from datetime import date

from jsonl_engine.identity import fields, kinds, titles, transcript
from jsonl_engine.identity.dates import _DATE, add_months, fiscal_year_ending, parse_date, year_of
from jsonl_engine.store import Card, Store

CARD_PAGES = 3  # the pages read: cover, and the page after (a release's headline, a 10-Q's period)
QUARTER_PAGES = 8  # a 10-Q's first statements ("Three/Six/Nine Months Ended") say which quarter it is
MAX_CHARS = 12_000  # of each page: covers are short; a long first page is a report's body

_FISCAL_END = re.compile(rf"(?i)for\s+the\s+(?:fiscal\s+)?(?:year|period)\s+ended:?\s*({_DATE})")
_QUARTER_END = re.compile(rf"(?i)for\s+the\s+quarterly\s+period\s+ended:?\s*(?:[a-z]+\s+){{0,3}}?({_DATE})")
_REPORT_DATE = re.compile(rf"(?i)date\s+of\s+report[^:\n]*?(?:\)|:)\s*:?\s*({_DATE})")
_FORM = re.compile(r"(?i)^\W{0,3}form\s+(10-k|10-q|8-k|20-f|40-f|6-k|11-k|s-1|s-4|def\s*14a)(?:/a)?\b")
_ANNUAL = re.compile(r"(?i)annual\s+report\s+pursuant\s+to\s+section")
_QUARTERLY = re.compile(r"(?i)quarterly\s+report\s+pursuant\s+to\s+section")
_CURRENT = re.compile(r"(?i)current\s+report\s+pursuant\s+to\s+section|\bcurrent\s+report\b")
_REGISTRANT = re.compile(r"(?i)\(?\s*exact\s+name\s+of\s+(?:the\s+)?registrant")
_RESULTS = re.compile(r"(?i)\b(?:report(?:s|ed)?|announc(?:e|es|ed)|posts?|delivers?|releases?)\b[^\n]{0,80}?\b(?:results|earnings)\b")
_HEADLINE = re.compile(r"^(.{2,60}?)\s+(?:reports?|announces?|posts?|delivers?|releases?)\b", re.I)
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_QUARTER_FY = re.compile(
    r"(?i)\b(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+(?:fiscal\s+)?quarter(?:\s+and\s+full[\s-]+year)?\s+"
    r"(?:of\s+)?(?:fiscal\s+(?:year\s+)?)?(\d{4})|\b(?:fiscal\s+(?:year\s+)?)?(\d{4})\s+(first|second|third|fourth)"
    r"[\s-]+quarter|\b(?:q([1-4])|([1-4])q)\s*(?:fy\s*|fiscal\s+(?:year\s+)?)?'?(\d{4}|\d{2})\b")
_FISCAL_YEAR = re.compile(r"(?i)\bfiscal\s+(?:year\s+)?(\d{4})\b|\bfy\s*'?(\d{4}|\d{2})\b|\bfull[\s-]+year\s+(\d{4})\b")
_LEGAL = "|".join(r"\.?".join(form) + r"\.?" for form in kinds.LEGAL_FORMS)  # "inc", "Inc.", "N.V."
_LEGAL_NAME = re.compile(rf"^[A-Z0-9][\w&.,'’\- ]{{1,70}}?\b(?:{_LEGAL})$", re.I)
_LEGAL_TAIL = re.compile(rf"(?i)(?:,?\s+(?:{_LEGAL}))+$")
# Metadata titles an EDGAR export writes: "Form 10-K for X filed 02/09/2023", "X (Form: 10-K, Received: ...)",
# "10-K - 02/08/2023 - X".
_META_FOR = re.compile(rf"(?i)^form\s+([\w-]+)\s+for\s+(.+?)\s+filed\s+({_DATE})")
_META_RECEIVED = re.compile(rf"(?i)^(.+?)\s*\(form:\s*([\w-]+),\s*received:\s*({_DATE})")
_META_DASH = re.compile(rf"(?i)^(10-k|10-q|8-k|20-f)\s+-\s+({_DATE})\s+-\s+(.+)$")
_NOT_NAME = re.compile(r"(?i)^(?:commission|state|delaware|\(|i\.r\.s|irs|table of contents|united states|washington|"
                       r"securities|form\b|annual|quarterly|current|for the|or\b|\d+$|exhibit|page\b|date of|\(?mark one)|pursuant|"
                       r"transition report|\bfile number\b|(?:part|item)\s+(?:[ivx]+|\d+[a-z]?)\b")
_BOILER_HEADING = re.compile(r"(?i)^\W*(?:\(?mark one\b|table of contents|(?:part|item)\s+(?:[ivx]+|\d+[a-z]?)\b|pursuant\b|"
                             r"united states\W*$|securities and exchange commission)")  # a heading, never a title
_TICKER = re.compile(r"([A-Z][\w&.,'’\- ]{1,60}?)\s*[(\[](?:NYSE|NASDAQ|Nasdaq|LSE|ASX|TSX|AMEX)\s*:")
_RELEASE = re.compile(r"(?i)for immediate release|news release|press release|exhibit 99\.?1|today (?:reported|announced)")
_INLINE_LEGAL = re.compile(r"\b((?:The\s+)?(?:[A-Z][\w&'’-]*[\s,]+){1,4}(?:Company|Inc\.|Corporation|plc|Ltd\.|N\.V\.|S\.A\.))")
_KINDS = {"10-k": "10-K", "10-q": "10-Q", "8-k": "8-K", "20-f": "20-F", "40-f": "40-F", "6-k": "6-K",
          "11-k": "11-K", "s-1": "S-1", "s-4": "S-4", "def14a": "proxy statement"}
_QUARTERLY_KINDS = ("10-Q",)  # the forms whose quarter the statements' columns tell
_ANNUAL_KINDS = kinds.ANNUAL_KINDS
_SMALL = {"and", "of", "the", "for", "&", "in", "with", "on", "to", "a", "an", "at", "by", "or"}
_KEEP_UPPER = {"plc", "llc", "lp", "nv", "sa", "ag", "se", "usa", "us", "uk", "ii", "iii", "iv"}


def _lines(pages: list[str]) -> list[str]:
    return [ln for page in pages for ln in (" ".join(x.split()) for x in page[:MAX_CHARS].splitlines()) if ln]


def _casing(name: str, text: str) -> str:
    """An all-capitals name as the document writes it elsewhere in mixed case, else capitalised word by word; in a
    mixed-case name, a legal form in capitals as usually written ("Good Harbor INC" -> "Good Harbor Inc")."""
    if _small_caps(name):  # "United StateS Office Of FleeT ManageMent": capitals of a small-caps font
        name = name.upper()
    if not name.isupper():
        return re.sub(r"\b(INC|CORP|CO|LTD|COMPANY|CORPORATION|LIMITED)\b(?=\.?$)", lambda m: m.group(1).capitalize(),
                      name) if re.search(r"[a-z]", name) else name
    found = [m.group(0) for m in re.finditer(re.escape(name), text, re.I)]
    mixed = [f for f in found if not f.isupper() and f[:1].isupper() and not _small_caps(f)]
    if mixed:
        return min(mixed, key=lambda f: (sum(ch.isupper() for ch in f), f))
    words = []
    for word in name.split():
        bare = word.strip(".,").lower()
        short = len(bare) <= 3 and bare.isalpha() and bare not in {"inc", "co"} | _SMALL
        if re.fullmatch(r"(?:[A-Z]\.)+", word):  # initials: "U.S."
            words.append(word)
            continue
        if any(ch.isdigit() for ch in word) or bare in _KEEP_UPPER or (
                short and all(w.isupper() for w in re.findall(rf"\b{bare}\b", text, re.I))):  # an acronym, unless
            # the text also writes it in lower case ("Buy", "in")
            words.append(word)
        else:
            small = bare in _SMALL and words
            words.append(word.lower() if small else "-".join(p.capitalize() for p in word.split("-")))
    return " ".join(words)


def _small_caps(name: str) -> bool:
    """Two or more words with a capital after a lower-case letter that is not a name's ("McDonald") or a
    camel-cased brand's: the extractor read a small-caps font's letters in two sizes."""
    odd = [w for w in name.split() if re.search(r"[a-z][A-Z]", w) and not re.match(r"(?:Mc|Mac|O')[A-Z]", w)]
    return len(odd) >= 2


def _clean_name(name: str) -> str:
    name = re.sub(r"\s*[(\[].*$|(?i:\s+and\s+(?:its\s+)?(?:consolidated\s+)?subsidiaries)$", "", name)
    name = re.sub(r"^[^\w&]+|^(?:o|x)\s+(?=[A-Z])", "", name).strip(" ,;:-–—_")
    return re.sub(r"\s+(?=[.,])", "", " ".join(name.split()))  # "ZENTRO, Inc ." -> "ZENTRO, Inc."


def _registrant(lines: list[str]) -> str | None:
    for i, line in enumerate(lines):
        m = _REGISTRANT.search(line)
        if not m:
            continue
        before = _clean_name(line[: m.start()])
        if len(before) >= 2 and not _NOT_NAME.match(before):
            return before
        fragments = []  # a name set in small capitals comes out in pieces: "NHR R" / "ESORTS I" / "NTERNATIONAL"
        for prev in reversed(lines[max(0, i - 4): i]):
            if len(prev) > 24 or prev.upper() != prev or _NOT_NAME.search(prev):
                break
            fragments.insert(0, prev)
        if len(fragments) > 1:
            joined = re.sub(r"\b([A-Z]) ([A-Z]{2,})", r"\1\2", " ".join(fragments))
            if len(joined.split()) <= 6:
                return _clean_name(joined)
        for prev in reversed(lines[max(0, i - 3): i]):
            name = _clean_name(re.split(r"_{3,}|\s{3,}", prev)[-1])
            if len(name) >= 2 and any(ch.isalpha() for ch in name) and not _NOT_NAME.match(name) and len(name) <= 90:
                return name
    return None


def _legal_name(lines: list[str]) -> str | None:
    for line in lines[:80]:
        name = _clean_name(line)
        if len(name.split()) <= 8 and _LEGAL_NAME.match(name) and not _NOT_NAME.match(name):
            return name
    return None


def _headline_name(lines: list[str]) -> str | None:
    """A release's issuer: "<Issuer> (NYSE: X) today reported", else "<Issuer> reports ... results"."""
    head = " ".join(lines[:25])
    if m := _TICKER.search(head):
        name = _clean_name(re.split(r"[–—]|\s-\s|\)\s", m.group(1))[-1])
        if name[:1].isupper() and len(name.split()) <= 6:
            return name
    for i, _line in enumerate(lines[:8]):
        joined = " ".join(lines[i:i + 2])
        if _RESULTS.search(joined) and (m := _HEADLINE.match(joined)):
            name = _clean_name(m.group(1))
            if name[:1].isupper() and len(name.split()) <= 6 and not _NOT_NAME.match(name):
                return name
    return None


def _frequent_name(text: str) -> str | None:
    """The legal name the first pages write most often ("The Zentro Beverage Company"), when the cover has it as a logo."""
    counts: dict[str, int] = {}
    for m in _INLINE_LEGAL.finditer(text):
        name = " ".join(m.group(1).replace(",", ", ").split()).replace(" ,", ",")
        if not _NOT_NAME.search(name) and len(name) > 6:
            counts[name] = counts.get(name, 0) + 1
    best = max(counts.items(), key=lambda kv: (kv[1], -len(kv[0])), default=None)
    return best[0] if best and best[1] >= 2 else None


def _meta(source_title: str) -> tuple[str | None, str | None, date | None]:
    """(kind, entity, filing date) from a metadata title an EDGAR export wrote, when it is one."""
    title = " ".join(source_title.split())
    if m := _META_FOR.match(title):
        return _KINDS.get(m[1].lower().replace(" ", "")), m[2], parse_date(m[3])
    if m := _META_RECEIVED.match(title):
        return _KINDS.get(m[2].lower()), m[1], parse_date(m[3])
    if m := _META_DASH.match(title):
        return _KINDS.get(m[1].lower()), m[3], parse_date(m[2])
    return None, None, None


def _kind(text: str, lines: list[str]) -> str | None:
    head = "\n".join(lines[:60])
    m = next((m for line in lines[:60] if len(line) <= 40 and (m := _FORM.search(line))), None)
    form = _KINDS.get(re.sub(r"\s", "", m.group(1).lower())) if m else None
    results = [i for i in range(min(25, len(lines))) if _RESULTS.search(" ".join(lines[i:i + 2]))]
    release = bool(results) and (results[0] < 3 or bool(_RELEASE.search("\n".join(lines[:25]))))
    if release and form in (None, "8-K"):
        return "earnings release"
    if form is None:
        if _ANNUAL.search(head):
            form = "10-K"
        elif _QUARTERLY.search(head):
            form = "10-Q"
        elif _CURRENT.search(head) and _REPORT_DATE.search(head):
            form = "8-K"
    if form is None and re.search(r"(?i)\bannual\s+report\b", "\n".join(lines[:15])):
        return "annual report"  # a company's annual report: issuer and fiscal year, as a 10-K
    return form


def _quarter_mentions(text: str) -> tuple[int | None, int | None]:
    """(fiscal quarter, fiscal year) named in the text ("second quarter of fiscal 2024", "Q2 FY24")."""
    for m in _QUARTER_FY.finditer(text):
        if m[1]:
            return _ORDINAL[m[1].lower()], year_of(m[2])
        if m[4]:
            return _ORDINAL[m[4].lower()], year_of(m[3])
        return int(m[5] or m[6]), year_of(m[7])
    return None, None


_MONTHS_ENDED = re.compile(r"(?i)\b(three|six|nine|thirteen|twenty-six|thirty-nine|13|26|39)[\s-]+(?:months|weeks)\s+ended")
_LAST_FY_END = re.compile(rf"(?i)fiscal\s+year\s+ended\s+({_DATE})")
_SPAN_QUARTER = {"three": 1, "thirteen": 1, "13": 1, "six": 2, "twenty-six": 2, "26": 2, "nine": 3,
                 "thirty-nine": 3, "39": 3}


def _quarter_of_10q(card: Card, pages: list[str], text: str) -> None:
    """A 10-Q's fiscal quarter and year. The quarter: months since the fiscal year it names as last closed ("the
    fiscal year ended January 28, 2023"), else its statements' columns (three months only: Q1; six: Q2; nine:
    Q3), else a quarter it names, else the calendar quarter. The fiscal year: the one the filing itself names for
    this quarter ("second quarter of fiscal 2024", '... ended January 31, 2023 ("fiscal 2023")'), else the year in
    which the fiscal year closes: the period end plus the quarters left (a July-to-June year's September quarter
    is Q1 of the year ending next June), named by the calendar year it ends in (52/53-week years closing in the
    first days of January: the year before)."""
    said_quarter, _ = _quarter_mentions(text)
    body = " ".join(" ".join(p[:MAX_CHARS].split()) for p in pages[:QUARTER_PAGES])
    spans = {_SPAN_QUARTER[m.group(1).lower()] for m in _MONTHS_ENDED.finditer(body)}
    quarter = max(spans) if spans else said_quarter
    end = date.fromisoformat(card.period_end) if card.period_end else None
    last = parse_date(m.group(1)) if (m := _LAST_FY_END.search(body)) else None
    year = None
    if end is not None and last is not None and last < end:
        months = (end.year - last.year) * 12 + end.month - last.month + (1 if end.day - last.day > 15 else 0)
        if 1 <= months <= 13:
            quarter = min(4, max(1, round(months / 3)))
            year = _named_fiscal_year(body, last)
            year = year + 1 if year is not None else fiscal_year_ending(last) + 1
    if quarter is None and end is not None:
        quarter = (end.month - 1) // 3 + 1
    if year is None and end is not None and quarter is not None:
        year = fiscal_year_ending(add_months(end, 3 * (4 - quarter)))
    said = _fiscal_quarter_said(f"{text}\n{body}", quarter)
    card.fiscal_quarter = quarter
    card.fiscal_year = said or year or card.fiscal_year


_SAID_QUARTER = re.compile(r"(?i)\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+(?:fiscal\s+)?quarter\s+(?:of\s+)?"
                           r"fiscal\s+(?:year\s+)?(\d{4})\b|\bfiscal\s+(\d{4})\s+(first|second|third|fourth)\s+quarter\b|"
                           r"\bq([1-4])\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?|fy\s*)'?(\d{4}|\d{2})\b")


def _fiscal_quarter_said(text: str, quarter: int | None) -> int | None:
    """The fiscal year the filing names for `quarter` in its own words ("second quarter of fiscal 2024"); only a
    phrase that says "fiscal" counts (a bare "second quarter of 2023" may be a calendar period)."""
    for m in _SAID_QUARTER.finditer(text):
        q = _ORDINAL[m[1].lower()] if m[1] else _ORDINAL[m[4].lower()] if m[4] else int(m[5])
        if q == quarter:
            return year_of(m[2] or m[3] or m[6])
    return None


def _named_fiscal_year(body: str, last: date) -> int | None:
    """How the filing names the fiscal year that closed on `last`, when it says ('... January 31, 2023 ("fiscal
    2023")' -> 2023; a year named by the one it began in -> the year before)."""
    m = re.search(rf"(?i)fiscal\s+year\s+ended\s+{_DATE}\s*,?\s*\(\W*fiscal\s+(\d{{4}})\W*\)", body)
    return int(m.group(1)) if m else None


def derive(pages: list[str], source_title: str = "", file_name: str | None = None, headline: str = "") -> Card:
    """The card of a document whose first pages are `pages` (CARD_PAGES are read for the cover, QUARTER_PAGES
    for a 10-Q's statement columns); `source_title` is the extractor's title (meaningful PDF metadata, else the
    most prominent line), `headline` the first page's typographic title (identity/typography.py)."""
    all_pages = pages[:QUARTER_PAGES]
    pages = pages[:CARD_PAGES]
    lines = _lines(pages)
    text = "\n".join(lines)
    meta_kind, meta_entity, filed = _meta(source_title)
    kind = _kind(text, lines) or meta_kind
    call = transcript.read(all_pages)  # earnings-call transcripts: by their speaker turns (identity/transcript.py)
    if call.recognised and kind in (None, "earnings release"):
        card = _transcript_card(call, lines, text, source_title)
    elif kind is None:
        card = _document_card(pages, lines, source_title, headline, file_name)
    else:
        card = _filing_card(kind, all_pages, lines, source_title, meta_entity, filed)
        card.kind_confidence = kinds.TITLE
        heading = source_title if not _BOILER_HEADING.match(source_title) else ""
        card.title = title_of(card, heading or file_name or "")
    card.headline = headline
    card.name = card.title
    return card


def _filing_card(kind: str, all_pages: list[str], lines: list[str], source_title: str, meta_entity: str | None,
                 filed: date | None) -> Card:
    """The card of an SEC filing or an earnings release: issuer, form, period from the cover's own words."""
    text = "\n".join(lines)
    more = "\n".join(_lines(all_pages))  # the first statements' pages: more mentions of the name
    entity = (_headline_name(lines) if kind == "earnings release" else None) or _registrant(lines) \
        or meta_entity or _legal_name(lines) or _frequent_name(text) or _frequent_name(more)
    entity = _casing(_clean_name(entity), more) if entity else None
    card = Card(kind=kind, entities=[entity] if entity else [], source_title=source_title,
                filed=filed.isoformat() if filed else None)
    head = "\n".join(lines[:60])
    if m := (_QUARTER_END.search(head) if kind in _QUARTERLY_KINDS else None) or _FISCAL_END.search(head):
        end = parse_date(m.group(1))
        if end:
            card.period_end = end.isoformat()
            card.fiscal_year = fiscal_year_ending(end) if kind in _ANNUAL_KINDS else end.year
    if m := _REPORT_DATE.search(head):
        when = parse_date(m.group(1))
        if when:
            card.report_date = when.isoformat()
            card.fiscal_year = card.fiscal_year or when.year
    if kind == "earnings release":
        quarter, year = _quarter_mentions(source_title + "\n" + text)
        if quarter:
            card.fiscal_quarter, card.fiscal_year = quarter, year
    elif kind in _QUARTERLY_KINDS:
        _quarter_of_10q(card, all_pages, text)
    if card.fiscal_year is None:
        years = [year_of(next(g for g in m.groups() if g)) for m in _FISCAL_YEAR.finditer(text)]
        if years:
            card.fiscal_year = years[0]
    return card


MAX_NAME = 150  # characters of a document's own title kept in its card title
_GOVERNMENT = re.compile(r"(?i)\b((?:u\.\s?s\.|united\s+states)\s+(?:department|office|agency)\s+of\s+"
                         r"(?:the\s+)?[a-z]+(?:\s+(?:and\s+)?[a-z]+){0,3}?)(?=\s*(?:fy|fiscal|strategic|annual|"
                         r"performance|\d|$|\n|,))")


_AGENCY = re.compile(r"\b((?:[A-Z][a-z]+[ \t]+(?:and[ \t]+)?){1,4}(?:Department|Office|Agency|Administration|Board|"
                     r"Commission|Bureau|Service|Council|Authority)(?:[ \t]+of[ \t]+(?:the[ \t]+)?[A-Z][a-z]+"
                     r"(?:[ \t]+(?:and[ \t]+)?[A-Z][a-z]+){0,3})?)\b")
_NOT_AGENCY = re.compile(r"^(?:The|This|Our|Each|Plan|Strategic|Values|Public|Contract|Annual|Report)\b\s*")


def _agency(text: str, headline: str = "") -> str | None:
    """The public body a report is by: the agency name (words ending in Department, Office, Agency,
    Administration, Board, Commission, ...) its title block names, else the one its first pages write most
    often, at least twice."""
    if m := _AGENCY.search(headline):
        return " ".join(m.group(1).split())
    counts: dict[str, int] = {}
    for m in _AGENCY.finditer(text):
        name = " ".join(m.group(1).split())
        while (cut := _NOT_AGENCY.sub("", name)) != name:  # a sentence's or a heading's first word
            name = cut
        if len(name.split()) >= 2:
            counts[name] = counts.get(name, 0) + 1
    best = max(counts.items(), key=lambda kv: (kv[1], len(kv[0])), default=None)
    return best[0] if best and best[1] >= 2 else None


def _document_card(pages: list[str], lines: list[str], source_title: str, headline: str,
                   file_name: str | None) -> Card:
    """The card of a document that is not an SEC form: its kind (with a confidence), its own title (labelled,
    typographic or metadata), issuer, identifiers, date and place, from how such documents are written."""
    first = pages[:2]
    labelled = fields.labelled_title(first)
    meta = source_title if source_title and source_title != file_name else ""
    body = "\n".join(lines)
    words = sum(len(p.split()) for p in pages)
    kind, confidence = kinds.recognise("\n".join((headline, labelled, meta)), body, pages=len(pages),
                                       words_per_page=words / max(1, len(pages)))
    name = _own_title(labelled, headline, meta, _first_line(lines), body) or file_name or ""
    issuer = fields.labelled_issuer(first)
    if issuer is None and (m := _GOVERNMENT.search("\n".join(lines[:40]))):
        issuer = " ".join(m.group(1).split())
    if issuer is None and kind in ("government report", "report", "accident report"):
        issuer = _agency(body, headline)
    if issuer is None and kind in ("annual report", "press release", "contract"):
        issuer = _legal_name(lines[:10])
    card = Card(kind=kind, kind_confidence=confidence, entities=[_casing(_clean_name(issuer), body)] if issuer else [],
                source_title=source_title, identifiers=fields.identifiers(first), date=fields.document_date(first),
                place=fields.place(first))
    if m := _FISCAL_YEAR.search(f"{headline}\n{labelled}\n{meta}"):
        card.fiscal_year = year_of(next(g for g in m.groups() if g))
    card.title = _document_title(card, name)
    return card


def _first_line(lines: list[str]) -> str:
    """A first line that reads as a heading (short, words, no closing period), as plain text files begin."""
    first = lines[0] if lines else ""
    return first if 3 <= len(first) <= 100 and sum(ch.isalpha() for ch in first) >= 3 \
        and not first.endswith((".", ",", ";")) else ""


def _own_title(labelled: str, headline: str, meta: str, first: str = "", body: str = "") -> str:
    """A document's own title: the one it labels as such, else its typographic title, else meaningful metadata,
    else a first line that reads as a heading."""
    for candidate in (labelled, headline, meta, first):
        candidate = " ".join(candidate.split())
        if candidate and not _BOILER_HEADING.match(candidate):
            if len(candidate) > MAX_NAME:
                candidate = candidate[:MAX_NAME].rsplit(" ", 1)[0].rstrip(" ,;:-–") + "…"
            return _casing(candidate, body or candidate) if candidate.isupper() else candidate
    return ""


def _document_title(card: Card, name: str) -> str:
    """The title plus what tells it from documents of the same name: an identifier, the place, the date (or the
    year), each only when the title does not already say it."""
    parts = [name]
    low = name.lower()
    if card.identifiers and card.identifiers[0].lower() not in low:
        parts.append(card.identifiers[0])
    if card.place and card.place.lower() not in low:
        parts.append(card.place)
    when = card.date or (str(card.fiscal_year) if card.fiscal_year else None)
    if when and when[:4] not in name:
        parts.append(when)
    return ", ".join(p for p in parts if p)


def _transcript_card(call: transcript.Transcript, lines: list[str], text: str, source_title: str) -> Card:
    """A transcript's card: the issuer the call names (else the cover's legal name), its fiscal quarter and year,
    the call date; titled "<Company>, earnings call transcript, Q<q> fiscal <year>", never by a speaker."""
    names = call.names or [n for n in (_legal_name(lines) or _frequent_name(text),) if n]
    names = list(dict.fromkeys(_casing(_clean_name(n), text) for n in names))
    entity = names[0] if names else None
    when = call.call_date.isoformat() if call.call_date else None
    card = Card(kind=transcript.KIND, kind_confidence=call.confidence, entities=names,
                source_title=source_title, fiscal_quarter=call.fiscal_quarter if call.fiscal_year else None,
                fiscal_year=call.fiscal_year, report_date=when, date=when)
    title = f"{entity}, {transcript.KIND}" if entity else transcript.KIND.capitalize()
    if card.fiscal_quarter:
        title += f", Q{card.fiscal_quarter} fiscal {card.fiscal_year}"
    elif card.fiscal_year:
        title += f", fiscal year {card.fiscal_year}"
    card.title = title if card.fiscal_quarter or not card.report_date else f"{title} (dated {card.report_date})"
    return card


def title_of(card: Card, fallback: str = "") -> str:
    """"Z9 Company, 10-K, fiscal year 2018 (period ended 2018-12-31)": the entity (else `fallback`), the kind and
    the period; just `fallback` for a document of no known kind."""
    name = card.entities[0] if card.entities else fallback
    if not card.kind:
        return name
    if not card.entities and fallback and (card.kind.lower() in fallback.lower()
                                           or str(card.fiscal_year) in fallback):
        return fallback  # a heading that already says what and when ("Widget Holdings Annual Report 2023")
    parts = [name, card.kind] if name else [card.kind]
    if card.fiscal_quarter and card.fiscal_year:
        parts.append(f"Q{card.fiscal_quarter} fiscal {card.fiscal_year}")
    elif card.fiscal_year and card.kind != "8-K":
        parts.append(f"fiscal year {card.fiscal_year}")
    title = ", ".join(parts)
    when = []
    if card.report_date:
        when.append(f"dated {card.report_date}")
    elif card.period_end:
        when.append(f"period ended {card.period_end}")
    if card.filed:
        when.append(f"filed {card.filed}")
    return title + (f" ({'; '.join(when)})" if when else "")


def fill_missing(store: Store) -> int:
    """Derive the cards of the documents stored without one (written before cards existed) from their stored
    first pages; returns how many were filled."""
    missing = [d for d in store.documents() if d.card is None]
    for doc in missing:
        pages = list(store.page_range(doc.document_id, 1, QUARTER_PAGES).values())
        stem = doc.path.rsplit("/", 1)[-1].rsplit(".", 1)[0] if doc.path else None
        card = derive(pages, doc.title, stem)
        store.update_document(doc.document_id, card=card)
    titles.retitle(store, {d.card.name for d in store.documents(document_ids=[m.document_id for m in missing])
                           if d.card is not None})
    return len(missing)
