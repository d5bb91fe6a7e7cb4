"""Synthetic variants of real PDFs, for measuring the engine on a library larger than the shared one.

A variant of a filing is the filing's own bytes with one incremental update appended (the PDF format's own way
of amending a file, which every reader applies): each font's ToUnicode map, the text layer a PDF reader
extracts, has its digits 3-9 permuted (0, 1 and 2 kept, so a year stays a plausible year of this century: 2019
may read 2014 and $4,785 read $6,538), one permutation per variant; and a new document information dictionary
whose Title is the original's with the same digits changed, labelled "(synthetic variant N)", with Subject and
Creator saying it is synthetic. The pages render as the original (the glyphs are untouched), their extracted
text has the same words and layout with other numbers and years, so ingest does the work it does on a real
filing (pdfium parses the same content streams, the same fonts, the same scanned pages) and retrieval sees a
library where every company, term and heading has ten times the documents, with numbers that differ.

Names: `synthetic-v{N:02d}-{sha of the source name, 10 hex}.pdf`, neutral (no company in the name), distinct per
variant; the bytes differ per variant (the update holds the maps and the title). Fonts without a ToUnicode map
(text extracted through the font's encoding) keep their digits: a few pages of some variants read as the
original's.

    .venv/bin/python bench/synthetic.py OUT_DIR --variants 9 PDF...   (made once; existing files are kept)
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

_OBJ = re.compile(rb"(?<![0-9])(\d+)\s+(\d+)\s+obj\b")
_STREAM = re.compile(rb">>\s*stream\r?\n")
_HEX = re.compile(rb"<([0-9A-Fa-f]+)>")
_BLOCK = re.compile(rb"(beginbf(?:char|range))(.*?)(endbf(?:char|range))", re.S)
_SKIP = (b"/Image", b"/Length1", b"/Length2", b"/Length3", b"/FontFile", b"/XRef", b"/ObjStm", b"/Type1C",
         b"/CIDFontType0C", b"/OpenType", b"/Metadata", b"/EmbeddedFile")


def permutation(seed: str) -> dict[int, int]:
    """Digits 3-9 shuffled (never all in place), 0-2 kept: code point -> code point."""
    rng = random.Random(hashlib.sha256(seed.encode()).digest())
    digits = list(range(3, 10))
    shuffled = digits[:]
    while shuffled == digits:
        rng.shuffle(shuffled)
    return {0x30 + a: 0x30 + b for a, b in zip(digits, shuffled, strict=True)}


def _units(hexstr: bytes, perm: dict[int, int]) -> bytes:
    """A ToUnicode destination (UTF-16BE hex) with its digit code units permuted."""
    if len(hexstr) % 4:
        return hexstr
    out = []
    for i in range(0, len(hexstr), 4):
        unit = int(hexstr[i:i + 4], 16)
        out.append(b"%04X" % perm.get(unit, unit))
    return b"".join(out)


def _bfrange(body: bytes, perm: dict[int, int]) -> bytes:
    """bfrange lines whose destination run crosses a digit become the array form, each code mapped."""
    lines = []
    for line in body.split(b"\n"):
        m = re.match(rb"\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]{4})>\s*$", line)
        if m:
            lo, hi, dst = (int(g, 16) for g in m.groups())
            width = len(m.group(1))
            if hi >= lo and any(0x30 <= dst + i <= 0x39 for i in range(hi - lo + 1)):
                dsts = b" ".join(b"<%04X>" % perm.get(dst + i, dst + i) for i in range(hi - lo + 1))
                line = b"<%s> <%s> [%s]" % (m.group(1), m.group(2), dsts)
                assert len(m.group(1)) == width
        elif b"[" in line:
            head, _, tail = line.partition(b"[")
            line = head + b"[" + _HEX.sub(lambda h: b"<" + _units(h.group(1), perm) + b">", tail)
        lines.append(line)
    return b"\n".join(lines)


def _bfchar(body: bytes, perm: dict[int, int]) -> bytes:
    def line(m: re.Match) -> bytes:
        return b"<%s> <%s>" % (m.group(1), _units(m.group(2), perm))
    return re.sub(rb"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>", line, body)


def remap_cmap(cmap: bytes, perm: dict[int, int]) -> bytes:
    """A ToUnicode CMap whose digit destinations are permuted."""
    def block(m: re.Match) -> bytes:
        fix = _bfchar if m.group(1) == b"beginbfchar" else _bfrange
        return m.group(1) + fix(m.group(2), perm) + m.group(3)
    return _BLOCK.sub(block, cmap)


def _streams(data: bytes):
    """(object number, generation, inflated bytes) of each top-level Flate (or plain) stream worth reading."""
    for m in _OBJ.finditer(data):
        s = _STREAM.search(data, m.end(), m.end() + 4096)
        if not s:
            continue
        head = data[m.end():s.start()]
        if b"obj" in head or any(k in head for k in _SKIP):
            continue
        end = data.find(b"endstream", s.end())
        if end < 0:
            continue
        raw = data[s.end():end]
        if b"/Filter" in head:
            if not re.search(rb"/Filter\s*\[?\s*/FlateDecode\s*\]?", head) or b"/DecodeParms" in head:
                continue
            try:
                raw = zlib.decompressobj().decompress(raw)
            except zlib.error:
                continue
        if b"begincmap" in raw and b"beginbf" in raw:
            yield int(m.group(1)), int(m.group(2)), raw


def _trailer(data: bytes) -> tuple[int, dict[str, bytes], bool]:
    """(offset of the last cross-reference section, its trailer's /Root /Size /ID /Encrypt, is it a stream)."""
    at = data.rfind(b"startxref")
    prev = int(re.match(rb"startxref\s+(\d+)", data[at:]).group(1))
    section = data[prev:prev + 65536]
    is_stream = not section.startswith(b"xref")
    if is_stream:
        head = section[:section.find(b"stream")]
    else:
        t = section.find(b"trailer")
        head = data[prev + t:prev + t + 4096] if t >= 0 else data[data.rfind(b"trailer"):]
    found = {}
    for key, pat in ((b"Root", rb"/Root\s+(\d+\s+\d+\s+R)"), (b"Size", rb"/Size\s+(\d+)"),
                     (b"ID", rb"/ID\s*(\[[^\]]*\])"), (b"Encrypt", rb"/Encrypt\s+(\d+\s+\d+\s+R)")):
        m = re.search(pat, head)
        if m:
            found[key.decode()] = m.group(1)
    return prev, found, is_stream


def _pdf_string(text: str) -> bytes:
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode() + b">"


def _meta_title(data: bytes) -> str:
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        return (pdf.get_metadata_value("Title") or "").strip()
    finally:
        pdf.close()


def _decrypted(data: bytes) -> bytes:
    """An encrypted PDF (SEC filings often carry an owner password, no user password) saved by pdfium without
    its security handler: its streams readable, its pages the same."""
    import io

    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(data)
    try:
        buf = io.BytesIO()
        pdf.save(buf, flags=3)  # FPDF_REMOVE_SECURITY
        return buf.getvalue()
    finally:
        pdf.close()


def variant(data: bytes, label: str, n: int) -> tuple[bytes, int]:
    """The variant `n` of a PDF (its bytes, `label` its source's name seeding the permutation) and how many
    ToUnicode maps changed. Raises ValueError for a file this cannot amend (encrypted, no readable trailer)."""
    prev, trailer, is_stream = _trailer(data)
    if "Encrypt" in trailer:
        data = _decrypted(data)
        prev, trailer, is_stream = _trailer(data)
    if "Encrypt" in trailer or "Root" not in trailer or "Size" not in trailer:
        raise ValueError("encrypted or no trailer")
    perm = permutation(f"{label}/{n}")
    table = str.maketrans({chr(a): chr(b) for a, b in perm.items()})
    title = _meta_title(data).translate(table)
    out = bytearray(data)
    if not out.endswith(b"\n"):
        out += b"\n"
    offsets: dict[int, tuple[int, int]] = {}
    changed = 0
    for num, gen, cmap in _streams(data):
        new = remap_cmap(cmap, perm)
        if new == cmap:
            continue
        body = zlib.compress(new, 6)
        offsets[num] = (len(out), gen)
        out += b"%d %d obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n" % (num, gen, len(body))
        out += body + b"\nendstream\nendobj\n"
        changed += 1
    size = int(trailer["Size"])
    info = size
    offsets[info] = (len(out), 0)
    out += b"%d 0 obj\n<< %s/Subject %s /Creator %s /Producer %s >>\nendobj\n" % (
        info, b"/Title %s " % _pdf_string(f"{title} (synthetic variant {n})") if title else b"",
        _pdf_string("Synthetic benchmark variant of a public filing: numbers and years changed"),
        _pdf_string("jsonl-engine bench/synthetic.py"), _pdf_string("jsonl-engine bench/synthetic.py"))
    ident = trailer.get("ID", b"")
    if is_stream:
        xref = info + 1
        offsets[xref] = (len(out), 0)
        nums = sorted(offsets)
        rows = b"".join(b"\x01" + offsets[k][0].to_bytes(4, "big") + offsets[k][1].to_bytes(2, "big")
                        for k in nums)
        index = b" ".join(b"%d 1" % k for k in nums)
        out += (b"%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Index [%s] /Root %s /Info %d 0 R /Prev %d%s "
                b"/Length %d >>\nstream\n" % (xref, xref + 1, index, trailer["Root"], info, prev,
                                              b" /ID " + ident if ident else b"", len(rows)))
        out += rows + b"\nendstream\nendobj\n"
        start = offsets[xref][0]
    else:
        start = len(out)
        out += b"xref\n"
        for k in sorted(offsets):
            out += b"%d 1\n%010d %05d n \n" % (k, offsets[k][0], offsets[k][1])
        out += b"trailer\n<< /Size %d /Root %s /Info %d 0 R /Prev %d%s >>\n" % (
            info + 1, trailer["Root"], info, prev, b" /ID " + ident if ident else b"")
    out += b"startxref\n%d\n%%%%EOF\n" % start
    return bytes(out), changed


def variant_name(source: Path, n: int) -> str:
    return f"synthetic-v{n:02d}-{hashlib.sha256(source.stem.encode()).hexdigest()[:10]}.pdf"


def _make(job: tuple[str, str, int]) -> tuple[str, int, str]:
    source, out_dir, n = job
    target = Path(out_dir) / variant_name(Path(source), n)
    if target.exists():
        return target.name, -1, ""
    try:
        data, changed = variant(Path(source).read_bytes(), Path(source).stem, n)
    except (ValueError, AttributeError) as e:
        return target.name, 0, f"{source}: {e}"
    tmp = target.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(target)
    return target.name, changed, ""


def make_variants(sources: list[Path], out_dir: Path, variants: range, workers: int = 2) -> list[Path]:
    """Variant files of every source for each n in `variants` (made once, kept in `out_dir`), in the order
    variant by variant; a source this cannot amend is left out (reported on stderr)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = [(str(s), str(out_dir), n) for n in variants for s in sources]
    made = []
    with ProcessPoolExecutor(workers) as pool:
        for (source, _, n), (name, _changed, error) in zip(jobs, pool.map(_make, jobs, chunksize=4), strict=True):
            if error:
                print(f"synthetic: skipped {error}", file=sys.stderr)
                continue
            made.append(out_dir / name)
            del source, n
    return made


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("pdfs", nargs="+")
    ap.add_argument("--variants", type=int, default=9)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    made = make_variants([Path(p) for p in args.pdfs], Path(args.out_dir), range(1, args.variants + 1), args.workers)
    print(f"{len(made)} variants in {args.out_dir}")


if __name__ == "__main__":
    main()
