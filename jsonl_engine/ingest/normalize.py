"""The one text normalisation applied at ingest; every stored offset points into its output.

pdfium quirks on real filings: `\\r\\n` line ends, U+00A0 between words, U+FFFE where the PDF has a hyphen.
All replacements but the line ends keep the length, so offsets of a line survive normalisation.
"""

from __future__ import annotations

import re
import unicodedata

_SAME_LENGTH = {0x00A0: " ", 0xFFFE: "-", 0xFFFF: " ", 0x2028: "\n", 0x2029: "\n", 0x0085: "\n"}
_SAME_LENGTH.update({c: " " for c in range(0x20) if c not in (0x09, 0x0A, 0x0D)})
_SAME_LENGTH[0x7F] = " "
_TABLE = str.maketrans(_SAME_LENGTH)

_LETTER_SPACED = re.compile(r"^(?:\S {1,2}){3,}\S$")


_ODD = re.compile("[" + "".join(chr(c) for c in sorted(_SAME_LENGTH) if c != 0xA0) + "]")


def normalize_line(line: str) -> str:
    """The same-length replacements (any `\\r` is left alone). Odd characters are rare: check, then translate."""
    if "\xa0" in line:
        line = line.replace("\xa0", " ")
    return line.translate(_TABLE) if _ODD.search(line) else line


def normalize_text(text: str) -> str:
    """Line ends to `\\n`, then the same-length replacements."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return normalize_line(text)


def collapse_ws(text: str) -> str:
    return " ".join(text.split())  # str.split() and re's \s agree on what whitespace is; this is faster


def collapse_letterspacing(line: str) -> str:
    """"U N I T E D  S T A T E S" -> "UNITED STATES" (single spaces inside words, two or more between)."""
    stripped = line.strip()
    if not _LETTER_SPACED.match(stripped):
        return line
    words = re.split(r" {2,}", stripped)
    if not all(all(len(ch) == 1 for ch in w.split(" ")) for w in words):
        return line
    return " ".join(w.replace(" ", "") for w in words)


def safe_cut(text: str, index: int) -> int:
    """Move a cut point left so it does not separate a base character from its combining marks."""
    while 0 < index < len(text) and unicodedata.combining(text[index]):
        index -= 1
    return index
