"""kb.ingest on hostile input through the real daemon (issue 17): special files, crashing pool workers, symlink
loops, unusable paths, PDFs with pages pdfium cannot load, oversized text. Each bad entry fails alone, with
its own result; the good entries of the same request are ingested. Request timeouts are hang guards only."""

from __future__ import annotations

import os
import socket
import stat
import zlib
from pathlib import Path

from jsonl_engine.ingest.files import MAX_TEXT_BYTES
from tests.e2e.test_ingest_e2e import _descendants, results
from tests.support.daemon import Daemon

CRASH_PLUGIN = ["--plugin", "tests.support.worker_crash"]
HANG_GUARD = 60.0


def _pdf(path: Path, words: str, pages: int = 1, *, page_count: int | None = None) -> Path:
    """A small PDF of `words`; `page_count` overstates the page tree's /Count: pdfium then opens the document
    but fails to load the pages past the real ones."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", "", 11)
    for n in range(1, pages + 1):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"{words} on page {n}. " * 20)
    data = bytes(pdf.output())
    if page_count is not None:
        old = f"/Count {pages}\n".encode()
        assert data.count(old) == 1
        data = data.replace(old, f"/Count {page_count}\n".encode())
    path.write_bytes(data)
    return path


def error(code: str, message: str, reason: str | None = None) -> dict:
    return {"code": code, "message": message, "reason": reason}


def by_name(out: list[dict]) -> dict[str, dict]:
    return {Path(r["path"]).name: r for r in out}


def ingest(d: Daemon, paths: list[str]) -> list[dict]:
    events = d.request("kb.ingest", {"paths": paths}, timeout=HANG_GUARD)
    assert events[-1]["status"] == "ok", events[-1]
    return results(events)


def test_fifos_devices_and_sockets_are_refused_without_being_read(tmp_path):
    specials = []  # (path, name in its result, what it is)
    for name in ("pipe.txt", "pipe.pdf"):
        os.mkfifo(tmp_path / name)
        specials.append((tmp_path / name, name, "a FIFO"))
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    specials.append((tmp_path / "zero.txt", "zero", "a character device"))  # results name the file linked to
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.md"))
    specials.append((tmp_path / "sock.md", "sock.md", "a socket"))
    try:  # /dev/zero's device under a text name (needs CAP_MKNOD)
        os.mknod(tmp_path / "zeros.txt", stat.S_IFCHR | 0o644, os.makedev(1, 5))
        specials.append((tmp_path / "zeros.txt", "zeros.txt", "a character device"))
    except PermissionError:
        pass
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "inbox.md")
    specials.append((folder, "inbox.md", "a FIFO"))
    (folder / "notes.md").write_text("# Notes\n\nThe heron paragraph.\n", encoding="utf-8")
    good = _pdf(tmp_path / "good.pdf", "Good words")
    with Daemon(tmp_path / "kb") as d, server:
        out = ingest(d, [*(str(path) for path, _name, _kind in specials), str(good)])
    assert [(Path(r["path"]).name, r["error"]) for r in out[:-2]] == [
        (name, error("unsupported_media", f"{name} is not a regular file ({kind})", "not_regular"))
        for _path, name, kind in specials]
    notes, pdf = out[-2:]
    assert notes["path"] == str(folder / "notes.md") and notes["error"] is None and notes["title"] == "Notes"
    assert pdf["path"] == str(good) and pdf["error"] is None and pdf["pages"] == 1


def test_a_crashing_worker_fails_only_its_own_file(tmp_path):
    """The worker parsing crashme.pdf dies while other files of the batch are in the pool: they run again on a
    fresh pool, and crashme.pdf, which kills its worker again when run alone, is the only failure."""
    crash = _pdf(tmp_path / "crashme.pdf", "Crash words")
    good = [_pdf(tmp_path / f"filing{n}.pdf", f"Filing number {n} words") for n in range(7)]
    later = _pdf(tmp_path / "later.pdf", "Later words")
    with Daemon(tmp_path / "kb", args=CRASH_PLUGIN, env={"JSONL_ENGINE_WORKERS": "2"}) as d:
        out = ingest(d, [str(crash), *map(str, good)])
        assert out[0]["path"] == str(crash) and out[0]["error"] == error(
            "unsupported_media", "the extractor crashed on crashme.pdf", "crashed")
        assert [r["path"] for r in out[1:]] == list(map(str, good))
        assert all(r["error"] is None and r["pages"] == 1 for r in out[1:]), out
        (after,) = ingest(d, [str(later)])  # the next request gets a working pool
        assert after["error"] is None and after["pages"] == 1
        assert len(d.result("kb.documents", {})["documents"]) == 8


def test_a_worker_killed_between_requests_fails_nothing(tmp_path):
    first, second = _pdf(tmp_path / "first.pdf", "First words"), _pdf(tmp_path / "second.pdf", "Second words")
    with Daemon(tmp_path / "kb", args=CRASH_PLUGIN) as d:
        assert ingest(d, [str(first)])[0]["error"] is None
        d.result("test.kill_worker", {})  # the pool is broken, with no request running
        out = ingest(d, [str(second)])
        assert out[0]["error"] is None and out[0]["pages"] == 1, out


def test_unusable_paths_fail_alone(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "loop.md").symlink_to("loop.md")
    (folder / "ping.txt").symlink_to("pong.txt")
    (folder / "pong.txt").symlink_to("ping.txt")
    (folder / "up").symlink_to("..")  # a directory cycle
    (folder / "a.md").write_text("# Alpha\n\nThe alpaca paragraph.\n", encoding="utf-8")
    (folder / "copy.md").write_text("# Alpha\n\nThe alpaca paragraph.\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# Beta\n\nThe beaver paragraph.\n", encoding="utf-8")
    long_path = "/" + "x" * 100_000
    with Daemon(tmp_path / "kb") as d:
        out = ingest(d, [str(folder), long_path, str(tmp_path / "nul\x00.md"), str(tmp_path / "b.md")])
    assert len(out) == 8
    names = by_name(out[:5])
    assert list(names) == ["a.md", "copy.md", "loop.md", "ping.txt", "pong.txt"]  # up/.. is not followed
    for name in ("loop.md", "ping.txt", "pong.txt"):
        assert names[name]["error"] == error("not_found", f"cannot read {folder / name}: symbolic link loop")
    too_long, nul, beta = out[5:]
    assert too_long["path"] == long_path and too_long["error"] == error(
        "not_found", "path too long (100001 characters)")
    assert nul["path"] == str(tmp_path / "nul\x00.md") and nul["error"]["code"] == "not_found"
    assert beta["path"] == str(tmp_path / "b.md") and beta["title"] == "Beta"
    alpha, copy = names["a.md"], names["copy.md"]
    assert alpha["error"] is None and copy["error"] is None and alpha["document_id"] == copy["document_id"]
    skipped, stored = (alpha, copy) if alpha["skipped"] else (copy, alpha)
    assert not stored["skipped"] and skipped["reason"] == f"same content already ingested from {stored['path']}"


def test_pdf_pages_pdfium_cannot_load_make_it_corrupt(tmp_path):
    broken = _pdf(tmp_path / "broken.pdf", "Broken words", pages=2, page_count=3)
    big = _pdf(tmp_path / "big.pdf", "Batched words", pages=2, page_count=120)  # extracted in page batches
    good = _pdf(tmp_path / "good.pdf", "Good words")
    with Daemon(tmp_path / "kb") as d:
        out = ingest(d, [str(broken), str(big), str(good)])
    assert out[0]["error"] == error("unsupported_media", "broken.pdf is corrupt: page 3: Failed to load page.",
                                    "corrupt")
    first_failed = {"page 3", "page 65"}  # whichever of its two page batches fails first
    assert out[1]["error"] in [error("unsupported_media", f"big.pdf is corrupt: {page}: Failed to load page.",
                                     "corrupt") for page in first_failed]
    assert out[2]["error"] is None and out[2]["pages"] == 1


def _peak_rss(pid: int) -> int:
    """VmHWM (peak resident set) of the process and its descendants (the forkserver and the pool workers), in
    bytes: the largest of them."""
    peaks = []
    for proc in (pid, *_descendants(pid)):
        try:
            status = Path(f"/proc/{proc}/status").read_text()
        except OSError:  # it ended meanwhile
            continue
        peaks += [int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:")]
    return max(peaks)


def test_oversized_text_is_refused_unread(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("The start of a sparse file.\n")
    size = 1 << 30
    os.truncate(big, size)  # sparse: no disk used, 1 GiB to whoever reads it
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nThe stoat paragraph.\n", encoding="utf-8")
    with Daemon(tmp_path / "kb") as d:
        out = ingest(d, [str(big), str(small)])
        peak = _peak_rss(d.proc.pid)
    assert out[0]["error"] == error(
        "unsupported_media", f"big.txt is too large for a text document: {size} bytes (limit {MAX_TEXT_BYTES})",
        "too_large")
    assert out[1]["error"] is None and out[1]["title"] == "Small"
    assert peak < size // 4, f"peak RSS {peak >> 20} MiB"


def _zip_bomb_pdf(path: Path, stream_mb: int) -> Path:
    """A valid one-page PDF whose content stream draws `stream_mb` MB of text, stored in a few hundred KB
    (Flate): pdfium decompresses it whole and lays out every glyph (about 15 bytes of memory per stream byte)."""
    op = b"1 0 0 1 72 720 Tm (Widgets sold through distributors.) Tj\n"
    data = zlib.compress(b"BT /F1 12 Tf\n" + op * (stream_mb * (1 << 20) // len(op)) + b"ET\n", 9)
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
               b"/Contents 5 0 R >>", b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def test_a_pdf_that_decompresses_past_the_worker_memory_cap_is_too_large(tmp_path: Path) -> None:
    # Issue 25: a 0.6 MB PDF (a 250 MB content stream) ingested "ok" at a 3.9 GiB peak in one worker. Here a
    # 24 MB stream (about 350 MB of worker memory) against a 160 MiB cap, the file next to it unharmed.
    bomb = _zip_bomb_pdf(tmp_path / "bomb.pdf", 24)
    assert bomb.stat().st_size < 200_000
    fine = _pdf(tmp_path / "fine.pdf", "Widgets are sold through distributors in every region.")
    with Daemon(tmp_path / "kb", env={"JSONL_ENGINE_WORKER_MEMORY_MB": "160"}, timeout=120) as d:
        out = results(d.request("kb.ingest", {"paths": [str(bomb), str(fine)]}))
        assert out[0]["error"]["code"] == "unsupported_media" and out[0]["error"]["reason"] == "too_large", out[0]
        assert out[1]["error"] is None and out[1]["document_id"], out[1]
        assert [doc["title"] for doc in d.result("kb.documents", {})["documents"]] == [out[1]["title"]]
        assert d.proc.poll() is None and d.bad_lines == []
