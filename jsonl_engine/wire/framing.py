"""Bytes in, lines out; events in, bytes out. stdout is claimed at the file-descriptor level."""

from __future__ import annotations

import json
import math
import os
import select
import stat
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

import orjson

_DUMP_OPTS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_NON_STR_KEYS


def claim_stdout() -> int:
    """Keep a private dup of fd 1 for the protocol and point fd 1 at stderr.

    After this a stray print(), a C library or a child process writing to fd 1 lands on stderr, never
    in the protocol stream.
    """
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    os.set_inheritable(protocol_fd, False)
    return protocol_fd


def scrub(value: Any) -> Any:
    """Replace lone surrogates (which UTF-8 cannot carry) with U+FFFD, recursively."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {scrub(k): scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def encode_event(event: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(event, option=_DUMP_OPTS)
    except TypeError:
        return orjson.dumps(scrub(event), option=_DUMP_OPTS, default=str)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


# An integer a request may carry: what orjson reads (and every event can write back) exactly.
INT_MIN, INT_MAX = -(1 << 63), (1 << 64) - 1


class OutOfRange:
    """A number of valid JSON that no request value can be (a float beyond double's range such as 1e999, an
    integer beyond 64 bits): it stands in the decoded request so the request's id can still be answered."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class NumberOutOfRange(ValueError):
    """Raised by `decode_line` for valid JSON holding an out-of-range number: `request` is the decoded line (the
    numbers replaced by OutOfRange), `path` the keys / indexes leading to the first one."""

    def __init__(self, request: Any, path: list[str | int]) -> None:
        super().__init__("a number is out of range")
        self.request = request
        self.path = path


def _parse_float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else OutOfRange(text)


def _parse_int(text: str) -> Any:
    if len(text) > 21:  # far beyond 64 bits: never convert (Python refuses over 4,300 digits anyway)
        return OutOfRange(text)
    value = int(text)
    return value if INT_MIN <= value <= INT_MAX else OutOfRange(text)


def _first_out_of_range(value: Any, path: list[str | int]) -> list[str | int] | None:
    if isinstance(value, OutOfRange):
        return path
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _first_out_of_range(item, [*path, key])
        if found is not None:
            return found
    return None


def decode_line(line: bytes) -> Any:
    """Parse one request line. Lone surrogate escapes are accepted and replaced; NaN/Infinity are not. Valid JSON
    holding a number out of range raises NumberOutOfRange (orjson refuses 1e999; the stdlib reads it again)."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if b"\\u" not in line and "number" not in str(exc).lower():
            raise
        # orjson refuses lone surrogate escapes and numbers beyond double's range; the stdlib accepts both, then
        # we scrub the surrogates and find the numbers.
        try:
            obj = scrub(json.loads(line.decode("utf-8"), parse_constant=_reject_constant,
                                   parse_float=_parse_float, parse_int=_parse_int))
            path = _first_out_of_range(obj, [])
        except RecursionError:
            raise ValueError("request line is nested too deeply") from None
    if path is not None:
        raise NumberOutOfRange(obj, path)
    return obj


class Writer:
    """The single writer: one whole line per os.write call under a lock, so lines never interleave."""

    def __init__(self, fd: int, on_broken: Callable[[], None]) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._on_broken = on_broken
        self.broken = False

    def write(self, event: dict[str, Any]) -> None:
        self.write_bytes(encode_event(event))

    def write_bytes(self, data: bytes) -> None:
        with self._lock:
            if self.broken:
                return
            view = memoryview(data)
            try:
                while view:
                    try:
                        written = os.write(self._fd, view)
                    except BlockingIOError:
                        # stdin and stdout can be one socket (socat, inetd): reading sets it non-blocking for
                        # both, so a slow reader shows up here. Wait for room; only a closed peer is broken.
                        _wait_writable(self._fd)
                        continue
                    view = view[written:]
            except OSError:
                self.broken = True
                self._on_broken()


def _wait_writable(fd: int) -> None:
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    poller.poll()


class TooLong:
    """Marks an input line that exceeded the limit; it was discarded up to its newline."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class LineSplitter:
    """Splits a byte stream into lines. Lines longer than `limit` bytes (the `\\r` of a CRLF end not counted)
    become a TooLong marker and the rest of such a line is discarded up to its newline, where reading resumes."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._buffer = bytearray()
        self._discarding = 0  # bytes dropped so far of an over-long line, 0 when not discarding

    def _too_long(self, line: bytes | bytearray) -> bool:
        """Over the limit, not counting the `\\r` of a CRLF line end."""
        size = len(line)
        return size > self._limit and not (size == self._limit + 1 and line.endswith(b"\r"))

    def feed(self, chunk: bytes) -> list[bytes | TooLong]:
        lines: list[bytes | TooLong] = []
        start = 0
        limit = self._limit
        while True:
            newline = chunk.find(b"\n", start)
            if newline < 0:
                rest = chunk[start:]
                if self._discarding:
                    self._discarding += len(rest)
                else:
                    self._buffer += rest
                    if len(self._buffer) > limit + 1 or (len(self._buffer) > limit and self._buffer[-1] != 13):
                        self._discarding = len(self._buffer)
                        self._buffer.clear()
                return lines
            if self._discarding:
                lines.append(TooLong(self._discarding + newline - start))
                self._discarding = 0
            elif self._buffer:
                self._buffer += chunk[start:newline]
                line = bytes(self._buffer)
                self._buffer.clear()
                lines.append(TooLong(len(line)) if self._too_long(line) else line)
            elif newline - start > limit and self._too_long(chunk[start:newline]):
                lines.append(TooLong(newline - start))
            else:
                lines.append(chunk[start:newline])
            start = newline + 1

    def finish(self) -> list[bytes | TooLong]:
        """What is left at EOF: an unterminated last line still counts."""
        if self._discarding:
            return [TooLong(self._discarding)]
        if self._buffer.strip():
            return [bytes(self._buffer)]
        return []


CHUNK = 1 << 16


class LineReader(threading.Thread):
    """Reads fd 0 in a thread and hands batches of lines to `deliver` (called in this thread);
    `deliver(None)` signals EOF. Used when stdin cannot be polled (a regular file, a terminal)."""

    def __init__(self, fd: int, limit: int, deliver: Callable[[list[bytes | TooLong] | None], None]) -> None:
        super().__init__(name="jsonl-engine-reader", daemon=True)
        self._fd = fd
        self._splitter = LineSplitter(limit)
        self._deliver = deliver

    def run(self) -> None:
        while True:
            try:
                chunk = os.read(self._fd, CHUNK)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                break
            if batch := self._splitter.feed(chunk):
                self._deliver(batch)
        if rest := self._splitter.finish():
            self._deliver(rest)
        self._deliver(None)


def pollable(fd: int) -> bool:
    """Pipes and sockets can be watched by the event loop directly (no reader thread, no thread hop)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
