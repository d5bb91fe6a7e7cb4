"""Loaded by the daemons bench/threads.py starts (on their PYTHONPATH): each thread's OS name (/proc/<pid>/task/
<tid>/comm) made its Python name (MainThread, retrieval-1, kb-reader-janitor, ...: cut to 15 bytes), and, with
BENCH_GC_LOG set, every garbage collection written to BENCH_GC_LOG.<pid> as "<generation> <thread CPU ns>"."""

from __future__ import annotations

import ctypes
import gc
import os
import threading
import time

_PR_SET_NAME = 15
try:
    _prctl = ctypes.CDLL(None).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


def _name(name: str) -> None:
    if _prctl is not None:
        _prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


_name("MainThread")
_bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]


def _named_bootstrap(self: threading.Thread) -> None:
    _name(self.name)
    _bootstrap(self)


threading.Thread._bootstrap_inner = _named_bootstrap  # type: ignore[attr-defined]

_log_path = os.environ.get("BENCH_GC_LOG")
if _log_path:
    _log = open(f"{_log_path}.{os.getpid()}", "a", buffering=1)  # noqa: SIM115 (open while the process lives)
    _started: dict[int, int] = {}

    def _timed(phase: str, info: dict) -> None:
        tid = threading.get_native_id()
        if phase == "start":
            _started[tid] = time.thread_time_ns()
        elif (began := _started.pop(tid, None)) is not None:
            _log.write(f"{info['generation']} {time.thread_time_ns() - began}\n")

    gc.callbacks.append(_timed)
