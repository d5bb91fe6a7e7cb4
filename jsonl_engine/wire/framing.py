"""Bytes in, lines out; events in, bytes out. stdout is claimed at the file-descriptor level."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

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


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def decode_line(line: bytes) -> Any:
    """Parse one request line. Lone surrogate escapes are accepted and replaced; NaN/Infinity are not."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        if b"\\u" not in line:
            raise
        # orjson refuses lone surrogate escapes; the stdlib accepts them, then we scrub.
        return scrub(json.loads(line.decode("utf-8"), parse_constant=_reject_constant))


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
                    written = os.write(self._fd, view)
                    view = view[written:]
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.broken = True
                self._on_broken()


class TooLong:
    """Marks an input line that exceeded the limit; it was discarded up to its newline."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class LineReader(threading.Thread):
    """Reads fd 0 in a thread and hands batches of complete lines to `deliver` (called in this thread).

    Lines longer than `limit` bytes are replaced by a TooLong marker and reading resumes after the next
    newline. `deliver(None)` signals EOF.
    """

    CHUNK = 1 << 16

    def __init__(self, fd: int, limit: int, deliver: Callable[[list[bytes | TooLong] | None], None]) -> None:
        super().__init__(name="jsonl-engine-reader", daemon=True)
        self._fd = fd
        self._limit = limit
        self._deliver = deliver

    def run(self) -> None:
        buffer = bytearray()
        discarding = 0  # bytes dropped so far of an over-long line, 0 when not discarding
        while True:
            try:
                chunk = os.read(self._fd, self.CHUNK)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                break
            batch: list[bytes | TooLong] = []
            start = 0
            while True:
                newline = chunk.find(b"\n", start)
                if newline < 0:
                    rest = chunk[start:]
                    if discarding:
                        discarding += len(rest)
                    else:
                        buffer += rest
                        if len(buffer) > self._limit:
                            discarding = len(buffer)
                            buffer.clear()
                    break
                piece = chunk[start:newline]
                if discarding:
                    batch.append(TooLong(discarding + len(piece)))
                    discarding = 0
                elif buffer:
                    buffer += piece
                    line = bytes(buffer)
                    buffer.clear()
                    batch.append(TooLong(len(line)) if len(line) > self._limit else line)
                elif len(piece) > self._limit:
                    batch.append(TooLong(len(piece)))
                else:
                    batch.append(piece)
                start = newline + 1
            if batch:
                self._deliver(batch)
        if discarding:
            self._deliver([TooLong(discarding)])
        elif buffer.strip():
            self._deliver([bytes(buffer)])
        self._deliver(None)
