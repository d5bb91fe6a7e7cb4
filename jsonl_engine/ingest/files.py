"""What the ingest reads from disk, and how: regular files only, checked with stat before any open (a FIFO blocks
a read forever, a character device such as /dev/zero never ends), opened non-blocking and checked again once open
(so a path swapped for a FIFO in between cannot block), and text read within a size cap.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from jsonl_engine.errors import NotFound, UnsupportedMedia

MAX_TEXT_BYTES = 64 << 20  # a .txt/.md document over this is refused (too_large): it is read whole to parse it
BINARY_PROBE = 8192  # a NUL in this prefix: not a text file

_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def unreachable(path: str, exc: OSError | ValueError) -> NotFound:
    """A path that cannot be stat'ed or opened, as not_found with a message that says why (and does not repeat
    an over-long path)."""
    code = getattr(exc, "errno", None)
    if code in (errno.ENOENT, errno.ENOTDIR):
        return NotFound(f"no such file: {path}")
    if code == errno.ENAMETOOLONG:
        return NotFound(f"path too long ({len(path)} characters)")
    if code == errno.ELOOP:
        return NotFound(f"cannot read {path}: symbolic link loop")
    if isinstance(exc, ValueError):  # os functions refuse a path with a NUL byte
        return NotFound(f"invalid path {path!r}: {exc}")
    return NotFound(f"cannot read {path}: {exc.strerror or exc}")


def require_regular(path: str, st: os.stat_result) -> None:
    """UnsupportedMedia(not_regular) unless `st` is a regular file's."""
    if stat.S_ISREG(st.st_mode):
        return
    kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
    raise UnsupportedMedia(f"{Path(path).name} is not a regular file ({kind})", reason="not_regular")


def require_text_size(path: str, size: int) -> None:
    if size > MAX_TEXT_BYTES:
        raise UnsupportedMedia(f"{Path(path).name} is too large for a text document: {size} bytes "
                               f"(limit {MAX_TEXT_BYTES})", reason="too_large")


def open_regular(path: str) -> BinaryIO:
    """`path` opened for reading, non-blocking (opening a FIFO would wait for a writer), if it is a regular file."""
    fh = open(path, "rb", opener=_open_nonblocking)  # noqa: SIM115 - returned open
    try:
        require_regular(path, os.fstat(fh.fileno()))
    except BaseException:
        fh.close()
        raise
    return fh


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def read_text(path: str) -> str:
    """A text file's content: a prefix first for the binary check, then at most MAX_TEXT_BYTES in all."""
    limit = MAX_TEXT_BYTES + 1  # reading one byte over the cap tells a file over it
    with open_regular(path) as fh:
        head = fh.read(min(BINARY_PROBE, limit))
        if b"\x00" in head:
            raise UnsupportedMedia(f"{Path(path).name} is not a text file", reason="unknown_type")
        data = head + fh.read(limit - len(head))
        if len(data) > MAX_TEXT_BYTES:  # grew since pipeline.check_file, or parsed without it
            require_text_size(path, max(len(data), os.fstat(fh.fileno()).st_size))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")
