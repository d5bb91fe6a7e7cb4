"""The daemon's parent, recorded when the process first runs package code (`cli` imports this module first), and
its death noticed at any moment of start-up, not only once the server loop runs.

A parent that dies after this import is seen two ways: Linux signals DEATH_SIGNAL (PR_SET_PDEATHSIG, set by
`arm`), whose handler exits at once during start-up and hands over to the server (`on_orphaned`) once it runs;
and the server's watch thread compares `os.getppid()` with PARENT. The death signal is also sent when the thread
that spawned the daemon ends while its process lives on (Linux ties it to the thread): the handler then finds the
parent alive and ignores it. A parent that dies before the interpreter reaches this module cannot be told from
one that started the daemon as a reaper (init, `docker --init`): that start-up window is not covered.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable

PARENT = os.getppid()
DEATH_SIGNAL = signal.SIGUSR1
PR_SET_PDEATHSIG = 1

on_orphaned: Callable[[], None] | None = None  # set by the server once its loop runs


def orphaned() -> bool:
    return os.getppid() != PARENT


def _on_death_signal(_signum: int, _frame: object) -> None:
    if not orphaned():
        return  # the spawning thread ended, its process lives
    if on_orphaned is None:
        os._exit(0)  # start-up: nothing is open yet that needs closing
    on_orphaned()


def arm() -> None:
    """Exit when the parent dies from now on (and now, if it died since the import)."""
    if sys.platform.startswith("linux"):
        signal.signal(DEATH_SIGNAL, _on_death_signal)
        with contextlib.suppress(OSError, AttributeError):  # no prctl: the watch thread alone
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0)
    if orphaned():
        os._exit(0)
