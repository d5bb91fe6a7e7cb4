"""bench/backends.py's timed ingest (what bench/ingest_scale.py prints per round): the pages it ingested, its
CPU and the time it waited for a CPU, and on PostgreSQL the CPU of the server's backends that did the writes."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import backends  # noqa: E402

FILINGS = ["FOOTLOCKER_2022_8K_dated-2022-05-20", "PEPSICO_2023_8K_dated-2023-05-05"]  # 4 and 5 pages


def test_the_timed_ingest_reports_its_pages_and_cpu(kb_location, dev_pdfs):
    stats: dict = {}
    ids, rate, pages, peak = backends.build_apart(kb_location, [dev_pdfs / f"{n}.pdf" for n in FILINGS], stats)
    assert sorted(ids) == sorted(FILINGS) and pages == 9 and stats["ingested_pages"] == 9
    assert rate == stats["ingested_pages"] / stats["elapsed_s"] and peak > 0
    assert stats["cpu_s"] > 0 and 0 <= stats["queued_s"] < stats["elapsed_s"]
    if isinstance(kb_location, str):  # the writes ran in the server's backends, on this machine
        assert stats["server_cpu_s"] > 0 and stats["server_queued_s"] >= 0
    else:
        assert "server_cpu_s" not in stats
    # nothing new: nothing timed
    again: dict = {}
    assert backends.build_apart(kb_location, [dev_pdfs / f"{n}.pdf" for n in FILINGS], again)[1] is None
    assert again == {}


def test_time_queued_for_a_cpu_is_read_per_task():
    assert backends._queued_s("thread-self") >= 0
    assert backends._queued_s("0") == 0.0  # no such task
