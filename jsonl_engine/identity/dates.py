"""Dates as documents and questions write them, and the fiscal calendar: which fiscal year a period end belongs to."""

from __future__ import annotations

import re
from datetime import date

YEAR = re.compile(r"(?:19|20)\d\d")  # a year as documents print it ("2023"): fullmatch a token, or search a text
_MONTHS = {m: i for i, m in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
     "december"), 1)}
_ABBREVIATIONS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec")
MONTH_WORDS = frozenset((*_MONTHS, *_ABBREVIATIONS))  # the words naming a month, lower case: "december", "dec", "sept"
MONTH = rf"(?:{'|'.join(_ABBREVIATIONS)})[a-z]*\.?"  # a month's name as printed, "Dec.", "Sept" (match ignoring case)
_DATE = (rf"(?:{MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}|\d{{1,2}}(?:st|nd|rd|th)?\s+{MONTH},?\s+\d{{4}}"
         r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{4})")
DATE = re.compile(_DATE, re.I)
_WORD_DATE = re.compile(r"(?i)(?:(\d{1,2})(?:st|nd|rd|th)?\s+)?([a-z]+)\.?\s*(?:(\d{1,2})(?:st|nd|rd|th)?,?\s+)?(\d{4})")


def parse_date(text: str) -> date | None:
    """A date written as "December 31, 2022", "31 Dec 2022", "1st July 2022", "2022-12-31" or "12/31/2022"."""
    text = text.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            return date.fromisoformat(text)
        if m := re.fullmatch(r"(\d{1,2})/(\d{1,2})/(\d{4})", text):
            return date(int(m[3]), int(m[1]), int(m[2]))
        m = _WORD_DATE.fullmatch(text.replace(",", ", ").replace("  ", " "))
        if m is None:
            return None
        month = next((n for name, n in _MONTHS.items() if name.startswith(m[2].lower()[:3])), None)
        day = m[1] or m[3]
        if month is None or day is None:
            return None
        return date(int(m[4]), month, int(day))
    except ValueError:
        return None


def year_of(value: str) -> int:
    """A year written with four digits or two ("FY23" -> 2023)."""
    year = int(value)
    return year + 2000 if year < 100 else year


def fiscal_year_ending(end: date) -> int:
    """The fiscal year that ends on `end`: named by the calendar year it ends in, except a 52/53-week year that
    closes in the first days of January (on the weekend nearest December 31), which is the year before's."""
    return end.year - 1 if end.month == 1 and end.day <= 7 else end.year




def add_months(when: date, months: int) -> date:
    """`when` moved by whole months, the day kept where the month has it (else its last day)."""
    index = when.year * 12 + when.month - 1 + months
    year, month = divmod(index, 12)
    for day in (when.day, 30, 29, 28):
        try:
            return date(year, month + 1, day)
        except ValueError:
            continue
    raise ValueError(when)
