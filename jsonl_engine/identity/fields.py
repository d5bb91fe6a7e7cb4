"""What a document states about itself in labelled lines of its first pages: "Title: ...", "Accident Number:
XYZ09LA123", "Protocol Number: ABC-1234", "Version 2.0", "Date: March 3, 2020", "Location: Millbrook, OR",
"Sponsor: ...", and identifiers written in a registry's own form (a trial registry number, a DOI). Read from how
documents label things, never from who publishes them."""

from __future__ import annotations

import re
from datetime import date

from jsonl_engine.identity.dates import _DATE, _MONTHS, parse_date

FIELD_LINES = 80  # lines of the first pages where a document labels its title, numbers, date and place

_TITLE_LABEL = re.compile(r"(?i)^(?:(?:official\s+|full\s+|study\s+|protocol\s+|scientific\s+|public\s+|project\s+|"
                          r"report\s+)?title(?:\s+of\s+(?:the\s+)?(?:study|trial|project|protocol|report))?|"
                          r"(?:project|study|trial|protocol)\s+name)\s*[:.\-–：]?\s*(.*)$")
_LABEL_LINE = re.compile(r"^[A-Z][\w&/().,' -]{1,40}:")  # "Sponsor:", "Protocol Number:", "Date & Time:"
_ID_LABEL = re.compile(
    r"(?i)\b((?:accident|incident|report|protocol|clinical\s+protocol|study|grant|project|irb|registration|docket|"
    r"case|contract|file|document|publication|award|trial)\s*(?:number|no\.?|num\.?|#|id|identifier))\s*[:.#]?\s*"
    r"([A-Z0-9][A-Za-z0-9\-/.]{2,30}[A-Za-z0-9])")
_REGISTRY_ID = re.compile(r"\b(NCT\d{8}|ISRCTN\d{6,}|EudraCT\s*(?:No\.?|Number)?:?\s*\d{4}-\d{6}-\d{2}|"
                          r"CTR\d{8,}|ChiCTR[\w-]{6,}|10\.\d{4,9}/[^\s\"<>]{3,60})")
_VERSION = re.compile(r"(?i)\bversion\s*(?:number|no\.?)?\s*[:.]?\s*(v?\d+(?:\.\d+)*)\b")
_DATE_LABEL = re.compile(rf"(?i)\b(?:date(?:\s*&\s*time)?|dated|document\s+date|version\s+date|last\s+(?:updated|revised)|"
                         rf"issued|published|effective\s+date|date\s+of\s+(?:report|issue|publication))\s*[:\-]?\s*"
                         rf"({_DATE}|(?:{'|'.join(m for m in _MONTHS)})\.?\s+\d{{4}}|\d{{1,2}}\s+\w{{3,9}}\.?\s+\d{{2,4}})")
_VERSION_DATE = re.compile(rf"(?i)\bversion\b[^\n]{{0,30}}?({_DATE})")
_PLACE_LABEL = re.compile(r"(?i)^\W*(?:location|place|site|city)\s*:\s*([A-Z][\w .'-]{1,40}?(?:,\s*[A-Z][\w .'-]{1,30}?)?)"
                          r"(?=\s{2,}|\s+[A-Z]\w+(?: \w+)?:|$)")
_ISSUER_LABEL = re.compile(r"(?i)^\W*(?:study\s+)?(?:sponsor|sponsored\s+by|issued\s+by|prepared\s+by|submitted\s+by|"
                           r"applicant|study\s+applicant|funded\s+by)\s*(?:[:\-]\s*(.{3,90})|\s+(?=[A-Z].{2,89}$)(.{3,90})|$)")
# A labelled line that ends a title continued over several lines ("Study Sponsor", "Date:", "Version 2")
_NEXT_LABEL = re.compile(r"(?i)^(?:study\s+|lead\s+)?(?:sponsor|principal\s+investigator|investigators?|version|date|"
                         r"protocol\s+(?:number|no|version)|nct|irb|authors?|prepared\s+by|funded\s+by|phase|"
                         r"short\s+title|acronym)\b")
_NOT_ID = re.compile(r"(?i)^(?:tbd|n/?a|none|pending|number|date|version)$")
_MONTH_YEAR = re.compile(rf"(?i)^({'|'.join(_MONTHS)})\.?\s+(\d{{4}})$")


def _lines(pages: list[str]) -> list[str]:
    return [ln for page in pages for ln in (" ".join(x.split()) for x in page.splitlines()) if ln][:FIELD_LINES]


def labelled_title(pages: list[str]) -> str:
    """The title a document labels as such ("Title: ...", "Official Title: ...", a "Title" line over it),
    continued over the lines that follow until the next labelled line; "" when it labels none."""
    lines = _lines(pages)
    for i, line in enumerate(lines):
        m = _TITLE_LABEL.match(line)
        if not m:
            continue
        parts = [m.group(1)] if m.group(1) else []
        for nxt in lines[i + 1: i + 5]:
            if _LABEL_LINE.match(nxt) or _TITLE_LABEL.match(nxt) or _NEXT_LABEL.match(nxt) \
                    or len(" ".join(parts)) > 220 or (parts and parts[-1].endswith((".", ":"))):
                break
            parts.append(nxt)
        title = " ".join(parts).strip(" :-–")
        if len(title) >= 15 and sum(ch.isalpha() for ch in title) >= 10:
            return title[:250]
    return ""


def identifiers(pages: list[str]) -> list[str]:
    """The document's own identifiers, labelled ("Accident Number: XYZ09LA123") or in a registry's form
    (NCT01234567, a DOI), first seen first."""
    text = "\n".join(_lines(pages))
    found: list[str] = []
    for m in _REGISTRY_ID.finditer(text):
        found.append(" ".join(m.group(1).split()))
    for m in _ID_LABEL.finditer(text):
        value = m.group(2).rstrip(".")
        if any(ch.isdigit() for ch in value) and not _NOT_ID.match(value):
            found.append(value)
    return list(dict.fromkeys(found))[:5]


def version(pages: list[str]) -> str | None:
    m = _VERSION.search("\n".join(_lines(pages)))
    return m.group(1) if m else None


def _when(text: str) -> str | None:
    text = " ".join(text.replace(".", ". ").split()).replace(" ,", ",")
    if m := _MONTH_YEAR.match(text):
        return f"{m[2]}-{_MONTHS[m[1].lower()]:02d}"
    when = parse_date(text)
    if when is None and (m := re.fullmatch(r"(\d{1,2})\s+([A-Za-z]{3,9})\.?\s+(\d{2})", text)):
        when = parse_date(f"{m[1]} {m[2]} 20{m[3]}")
    if when is None or not 1900 <= when.year <= date.today().year + 1:
        return None
    return when.isoformat()


def document_date(pages: list[str]) -> str | None:
    """The date a document gives itself (labelled "Date:", "Version ... <date>", "Last updated: ..."): ISO
    "YYYY-MM-DD", or "YYYY-MM" when only the month is written."""
    lines = _lines(pages)
    for pattern in (_DATE_LABEL, _VERSION_DATE):
        for i, line in enumerate(lines):
            if m := pattern.search(line):
                if when := _when(m.group(1)):
                    return when
            elif pattern is _DATE_LABEL and re.fullmatch(r"(?i)date\s*:?", line) and i + 1 < len(lines) \
                    and (when := _when(lines[i + 1])):  # "Date:" over the date
                return when
    return None


def place(pages: list[str]) -> str | None:
    for line in _lines(pages):
        if m := _PLACE_LABEL.match(line):
            return m.group(1).strip(" ,")
    return None


def labelled_issuer(pages: list[str]) -> str | None:
    """The organisation a document names as its sponsor, applicant or author ("Sponsor: Northwind Medical, Inc.")."""
    lines = _lines(pages)
    for i, line in enumerate(lines):
        m = _ISSUER_LABEL.match(line)
        value = (m.group(1) or m.group(2) or "").strip() if m else ""
        if m and not value and i + 1 < len(lines):
            value = lines[i + 1]
        if value and not _LABEL_LINE.match(value) and sum(ch.isalpha() for ch in value) >= 3:
            return re.split(r"\s{2,}|;|\s+\d{3,}", value)[0].strip(" ,.")
    return None
