"""What the bench scripts share: the FinanceBench dev split, the KB built from it, percentiles, evidence hits.

Importing this puts the repository root on sys.path (the scripts import jsonl_engine and tests.support).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEV = ROOT.parent / "shared" / "financebench-dev"


def find_dev(arg: str | None = None) -> Path:
    """The dev split: `arg` if given, else next to the repository, else /work/shared; exits when absent."""
    for cand in ([Path(arg)] if arg else []) + [DEV, Path("/work/shared/financebench-dev")]:
        if (cand / "pdfs").is_dir():
            return cand
    sys.exit("financebench-dev not found (pass --dev)")


def load_questions(path: Path) -> list[dict]:
    """The questions of a questions.jsonl file (blank lines skipped)."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ensure_kb(kb: Path, pdfs: list[Path]) -> dict[str, str]:
    """Build the KB (in-process ingest) unless it already holds every PDF; returns doc name -> document id."""
    from jsonl_engine.ingest.sync import ingest_paths
    from jsonl_engine.store import open_store

    store = open_store(kb)
    try:
        have = {Path(d.path).stem: d.document_id for d in store.documents() if d.path}
        missing = [p for p in pdfs if p.stem not in have]
        if missing:
            t = time.perf_counter()
            print(f"ingesting {len(missing)} PDFs into {kb} ...", file=sys.stderr)
            for o in ingest_paths(store, [str(p) for p in missing]):
                if o.error:
                    sys.exit(f"ingest failed: {o.path}: {o.error}")
            print(f"ingested in {time.perf_counter() - t:.1f}s", file=sys.stderr)
            have = {Path(d.path).stem: d.document_id for d in store.documents() if d.path}
        return have
    finally:
        store.close()


def document_ids(location: Path | str) -> dict[str, str]:
    """A KB's documents by their file's stem (its path's), a SQLite KB directory or a PostgreSQL URL."""
    from jsonl_engine.store import open_store

    store = open_store(location)
    try:
        return {Path(d.path).stem: d.document_id for d in store.documents() if d.path}
    finally:
        store.close()


def pct(values: list[float], q: float) -> float:
    """The q-quantile (nearest rank); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def gold_pages(question: dict) -> set[int]:
    """The 1-based evidence pages of a question (the dataset's evidence_page_num is zero-indexed)."""
    return {int(e["evidence_page_num"]) + 1 for e in question["evidence"]}


def on_evidence(start: int, end: int, page: int) -> bool:
    """An item hits: it spans at most 2 pages (a long section cannot score by covering many) and holds `page`."""
    return end - start <= 1 and start <= page <= end


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    out: list[int] = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(entry.name))
    return out


def cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system), seconds; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
