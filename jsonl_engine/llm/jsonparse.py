"""Tolerant JSON-object parsing for what models really send: code fences, prose before or after the
object, trailing commas, raw newlines inside strings, Python literals."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

_FENCE = re.compile(r"```[ \t]*(?:json5?|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class JSONParseError(ValueError):
    """No JSON object could be recovered from the text."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in `text`, repaired if need be; JSONParseError when there is none."""
    for candidate in _candidates(text):
        for attempt in (candidate, _repair(candidate)):
            try:
                value = orjson.loads(attempt)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict) and (value or attempt is candidate):
                return value
    raise JSONParseError(f"no JSON object in model output ({len(text)} chars)")


def _candidates(text: str) -> Iterator[str]:
    stripped = text.strip().lstrip("\ufeff")
    yield stripped
    for match in _FENCE.finditer(stripped):
        yield match.group(1).strip()
    yield from _balanced_objects(stripped)


def _balanced_objects(text: str) -> Iterator[str]:
    """Each `{...}` span balanced outside strings, from every opening brace, in order of position."""
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                if escaped:
                    escaped = False
                elif ch == "\\":
                    escaped = True
                elif ch == '"':
                    in_string = False
            elif ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    yield text[start:i + 1]
                    break
        else:
            yield text[start:]  # unbalanced (cut off): _repair may still close it
        start = text.find("{", start + 1)


def _repair(text: str) -> str:
    """Drop trailing commas, escape raw control characters in strings, map Python literals, and close
    brackets left open by a cut-off reply."""
    out: list[str] = []
    stack: list[str] = []
    in_string, escaped = False, False
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if in_string:
            ch, in_string, escaped = _string_char(ch, escaped)
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            _drop_trailing_comma(out)
            if stack:
                stack.pop()
        elif ch.isalpha():
            j = _word_end(text, i)
            word = text[i:j]
            out.append(_PY_LITERALS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    if in_string:
        out.append('"')
    _drop_trailing_comma(out)
    for closer in reversed(stack):
        out.append(closer)
    return "".join(out)


def _string_char(ch: str, escaped: bool) -> tuple[str, bool, bool]:
    """A character inside a string as written out (a raw control character escaped), whether the string goes
    on, and whether the next character is escaped."""
    if escaped:
        return ch, True, False
    if ch == "\\":
        return ch, True, True
    if ch == '"':
        return ch, False, False
    if ch in _ESCAPES:
        return _ESCAPES[ch], True, False
    if ord(ch) < 0x20:
        return f"\\u{ord(ch):04x}", True, False
    return ch, True, False


def _word_end(text: str, i: int) -> int:
    """The end of the word (letters and digits) starting at `i`."""
    j = i
    while j < len(text) and text[j].isalnum():
        j += 1
    return j


def _drop_trailing_comma(out: list[str]) -> None:
    j = len(out) - 1
    while j >= 0 and out[j].isspace():
        j -= 1
    if j >= 0 and out[j] == ",":
        del out[j]
