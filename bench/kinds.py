"""Kinds benchmark: one mixed library (filings and documents of other kinds) under neutral names, per kind.

The library is `../shared/library-kinds/pdfs` (30 documents that are not filings: clinical-study protocols,
aviation accident reports, federal agency reports) plus `../shared/financebench-dev/pdfs` and
`../shared/financebench-more/pdfs` (10-K, 10-Q, 8-K, earnings releases), ingested through kb.ingest under neutral
file names (library.py's hashed names), so nothing but the content says what a document is. `--kinds-only`
builds a smaller library (the 30 kinds documents and the 30 dev filings) for iteration.

The bench talks to the daemon over the wire only. Documents are matched by content (a document id is the sha256
of its bytes, cut to 16 hex digits), never by name. Ground truth is in `bench/data/` (README.md there holds the
kind vocabulary and the rules): `kinds_truth.jsonl` (identity of the 30 kinds documents), `kinds_questions.jsonl`
(questions on them, gold pages 1-based) and the dev split's `questions.jsonl` (evidence_page_num zero-based).
A filing's kind, company and year come from its FinanceBench file name, which the engine never sees, corrected by
`filings_overrides.jsonl` where the name contradicts the pages (two "10-Q"s that are earnings releases, a 10-Q
named for the wrong fiscal year). A document the engine refuses at ingest (a scan without text) counts as a miss.

Per kind (protocol, accident, agency; 10-K, 10-Q, 8-K, earnings release, annual report):
- questions asked corpus-wide with kb.context (limit 10): doc@1 (the first item is from the gold document),
  hit@5 (an item spanning at most 2 pages holds a gold page among the first 5) and rt@1 (kb.context's `routed`
  names the gold document first);
- the same-run baseline: Okapi BM25 (k1 1.2, b 0.75, pure Python, simple tokens) over the very same page texts
  (read back through kb.read), one page a unit: its doc@1 and hit@5;
- from kb.documents: documents, distinct titles (documents whose title no other document of the library has),
  and label accuracy: kind accepted (the card's kind is in the document's accepted set), title names the document
  (the title holds the words the truth's title rules ask for) and year right (the card's year: fiscal_year, else
  the year of period_end, report_date or filed; for a quarterly document also its fiscal_quarter).

Rows per kind, then "not filings" (protocol, accident, agency: the issue's targets for documents that are not
filings), "filings" and "all"; every question's outcome and every judged card go to <out>/kinds.json.

The KB and the page texts are built once under --out and reused; --rebuild ingests afresh.

    .venv/bin/python bench/kinds.py [--kinds-only] [--rebuild] [--out bench/out/kinds] [--show-titles]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import re
import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

from _common import ROOT, find_dev, load_questions, pct
from library import first_hit, ingest, library_dir

LIMIT = 10
DATA = ROOT / "bench" / "data"
K1, B = 1.2, 0.75
FILING_KINDS = {"10K": "10-K", "10Q": "10-Q", "8K": "8-K", "EARNINGS": "earnings release",
                "annualreport": "annual report"}
NON_FILINGS = ("protocol", "accident", "agency")
GROUP_ORDER = ("protocol", "accident", "agency", "10-K", "annual report", "10-Q", "8-K", "earnings release")


def doc_id(pdf: Path) -> str:
    return hashlib.sha256(pdf.read_bytes()).hexdigest()[:16]


def norm(text: str) -> str:
    """Lower case, every run of other characters than letters and digits one space, padded: ' a b '."""
    return " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "


def has_words(title: str, words: str) -> bool:
    return norm(words) in norm(title)


def title_names(title: str, rules: list[list[list[str]]]) -> bool:
    """A rule is a list of groups, a group a list of alternative phrases: the title names the document when, for
    some rule, every group has a phrase in the title (whole words, case and punctuation ignored)."""
    return any(all(any(has_words(title, w) for w in group) for group in rule) for rule in rules)


def card_year(card: dict | None) -> int | None:
    if not card:
        return None
    if card.get("fiscal_year"):
        return int(card["fiscal_year"])
    for key in ("period_end", "report_date", "date", "filed"):
        if card.get(key):
            return int(card[key][:4])
    return None


def vocabulary() -> dict:
    """bench/data/kinds_vocabulary.json: `kinds` (canonical kind -> the kind strings accepted for it) and
    `filing_forms` (a FinanceBench form -> its canonical kind)."""
    return json.loads((DATA / "kinds_vocabulary.json").read_text())


def accepts(kind: str | None, accepted: list[str]) -> bool:
    return kind is not None and norm(kind) in {norm(a) for a in accepted}


def filing_truth(pdf: Path, vocab: dict, override: dict | None = None) -> dict:
    """What a FinanceBench file name (COMPANY_2023Q2_10Q, COMPANY_2022_8K_dated-2023-02-21) says: company, kind,
    fiscal year and quarter (an 8-K: also the year of its date), corrected by `override` (filings_overrides.jsonl:
    `kind`, `years`, `quarter` where the name does not say what the pages say); title rules from them."""
    override = override or {}
    stem = pdf.stem
    form = next((k for k in FILING_KINDS if k in stem), None)
    kind = FILING_KINDS.get(form, "document")
    company = stem[:stem.index("_" + form)] if form else stem.split("_")[0]
    company = re.sub(r"_\d{4}(Q\d)?$", "", company).replace("_", "")
    m = re.search(r"_(\d{4})(?:Q(\d))?_", stem)
    years = [int(m.group(1))] if m else []
    quarter = int(m.group(2)) if m and m.group(2) else None
    dated = re.search(r"(\d{4})-\d\d-\d\d", stem)
    if dated and int(dated.group(1)) not in years:
        years.append(int(dated.group(1)))
    kind = override.get("kind", kind)
    years = override.get("years", years)
    quarter = override.get("quarter", quarter)
    groups = [[str(y) for y in years]]
    if quarter:
        groups.append([f"Q{quarter}", ("first", "second", "third", "fourth")[quarter - 1] + " quarter"])
    canonical = vocab["filing_forms"].get(kind, "document")
    return {"file": pdf.name, "kind_group": kind, "accepted_kinds": vocab["kinds"][canonical], "years": years,
            "fiscal_quarter": quarter, "company": company, "title_rules": [groups]}


def title_ok(title: str | None, truth: dict) -> bool:
    """A filing's title names its company (the file name's squashed words, AMERICANWATERWORKS, found in the title
    with its spaces and punctuation dropped) and passes the rules; another document's passes its rules."""
    if title is None:
        return False
    if "company" in truth and truth["company"].lower() not in re.sub(r"[^a-z0-9]", "", title.lower()):
        return False
    return title_names(title, truth["title_rules"])


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


class BM25:
    """Okapi BM25 over pages, pure Python: the baseline."""

    def __init__(self, pages: list[tuple[str, int, str]]) -> None:
        self.keys = [(d, p) for d, p, _ in pages]
        self.postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        self.lengths = []
        for i, (_, _, text) in enumerate(pages):
            counts = Counter(tokens(text))
            self.lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings[term].append((i, tf))
        self.avg = (sum(self.lengths) / len(self.lengths)) if self.lengths else 1.0

    def search(self, query: str, k: int = LIMIT) -> list[tuple[str, int]]:
        n = len(self.keys)
        scores: dict[int, float] = defaultdict(float)
        for term in set(tokens(query)):
            posting = self.postings.get(term)
            if not posting:
                continue
            idf = math.log(1 + (n - len(posting) + 0.5) / (len(posting) + 0.5))
            for i, tf in posting:
                norm_tf = tf * (K1 + 1) / (tf + K1 * (1 - B + B * self.lengths[i] / self.avg))
                scores[i] += idf * norm_tf
        best = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:k]
        return [self.keys[i] for i, _ in best]


def page_texts(d, docs: list[dict], cache: Path) -> list[tuple[str, int, str]]:
    """Every page's text through kb.read (cached in `cache`, rebuilt when the documents differ)."""
    want = {(x["document_id"], x["pages"]) for x in docs}
    if cache.exists():
        with gzip.open(cache, "rt", encoding="utf-8") as f:
            data = json.load(f)
        if {(k, v) for k, v in data["docs"]} == want:
            return [tuple(p) for p in data["pages"]]
    pages = []
    t = time.perf_counter()
    for x in docs:
        for n in range(1, x["pages"] + 1):
            text = d.result("kb.read", {"document_id": x["document_id"], "page": n})["text"]
            pages.append((x["document_id"], n, text))
    print(f"read {len(pages)} pages through kb.read in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    with gzip.open(cache, "wt", encoding="utf-8") as f:
        json.dump({"docs": sorted(want), "pages": pages}, f)
    return pages


def load_truth(kinds_pdfs: list[Path], filing_pdfs: list[Path]) -> dict[str, dict]:
    """document id -> truth (kinds documents from kinds_truth.jsonl, filings from their file names; a file whose
    bytes another has too keeps the first name that says the quarter)."""
    vocab = vocabulary()
    by_sha = {t["sha256"]: t for t in load_questions(DATA / "kinds_truth.jsonl")}
    truth = {}
    for pdf in kinds_pdfs:
        sha = hashlib.sha256(pdf.read_bytes()).hexdigest()
        if sha not in by_sha:
            sys.exit(f"{pdf.name}: no ground truth for its sha256 in kinds_truth.jsonl")
        truth[sha[:16]] = by_sha[sha]
    overrides = {o["sha256"][:16]: o for o in load_questions(DATA / "filings_overrides.jsonl")}
    for pdf in sorted(filing_pdfs, key=lambda p: ("Q" not in p.stem.split("_")[1], p.name)):
        document_id = doc_id(pdf)
        truth.setdefault(document_id, filing_truth(pdf, vocab, overrides.get(document_id)))
    return truth


def load_all_questions(dev: Path, filing_pdfs: list[Path], truth: dict[str, dict]) -> list[dict]:
    """Questions as {question, doc, pages, group}: the kinds questions and the dev split's."""
    ids = {p.stem: doc_id(p) for p in filing_pdfs}
    qs = []
    for q in load_questions(DATA / "kinds_questions.jsonl"):
        qs.append({"question": q["question"], "doc": q["sha256"][:16], "pages": q["pages"],
                   "group": q["kind_group"], "id": q["id"]})
    for q in load_questions(dev / "questions.jsonl"):
        doc = ids[q["doc_name"]]
        pages = sorted({int(e["evidence_page_num"]) + 1 for e in q["evidence"] if ids[e["doc_name"]] == doc})
        qs.append({"question": q["question"], "doc": doc, "pages": pages, "group": truth[doc]["kind_group"],
                   "id": q["financebench_id"]})
    return qs


def run(out: Path, pdfs: list[Path], truth: dict[str, dict], questions: list[dict], rebuild: bool) -> dict:
    from tests.support.daemon import Daemon

    folder, _names = library_dir(out, "neutral", pdfs)
    kb = out / "kb"
    if rebuild and kb.exists():
        shutil.rmtree(kb)
    fresh = not kb.exists()
    report: dict = {}
    with Daemon(kb_dir=kb, timeout=600) as d:
        if fresh:
            seconds, written, count = ingest(d, folder)
            (kb / "ingest.json").write_text(json.dumps({"ingest_s": round(seconds, 1), "ingest_pages": written,
                                                        "ingest_docs": count}))
        report.update(json.loads((kb / "ingest.json").read_text()))
        docs = d.result("kb.documents", {})["documents"]
        pages = page_texts(d, docs, out / "pages.json.gz")
        bm25 = BM25(pages)
        d.result("kb.context", {"query": "warm up the reader connections", "limit": 1})
        rows = []
        for q in questions:
            gold = {(q["doc"], p) for p in q["pages"]}
            t = time.perf_counter()
            data = d.result("kb.context", {"query": q["question"], "limit": LIMIT})
            ms = (time.perf_counter() - t) * 1000
            items = data["items"]
            base = bm25.search(q["question"])
            rows.append({
                "id": q["id"], "group": q["group"], "question": q["question"], "doc": q["doc"], "ms": round(ms, 1),
                "doc1": bool(items) and items[0]["document_id"] == q["doc"],
                "rank": first_hit(items, gold),
                "first_title": items[0]["document_title"] if items else None,
                "routed": [r["title"] for r in data.get("routed") or []][:3],
                "routed1": bool(data.get("routed")) and data["routed"][0]["document_id"] == q["doc"],
                "bm25_doc1": bool(base) and base[0][0] == q["doc"],
                "bm25_hit5": any((dd, p) in gold for dd, p in base[:5]),
            })
    title_count = Counter(x["title"] for x in docs)
    by_id = {x["document_id"]: x for x in docs}
    doc_rows = []
    for document_id, t in truth.items():
        # a document the engine did not ingest (no text layer) counts as wrong on every label
        x = by_id.get(document_id, {"title": None, "pages": 0})
        card = x.get("card") or {}
        doc_rows.append({
            "document_id": document_id, "group": t["kind_group"], "file": t["file"], "title": x["title"],
            "kind": card.get("kind"), "year": card_year(card), "pages": x["pages"], "in_kb": document_id in by_id,
            "unique_title": document_id in by_id and title_count[x["title"]] == 1,
            "kind_ok": accepts(card.get("kind"), t["accepted_kinds"]),
            "title_ok": title_ok(x["title"], t),
            "year_ok": card_year(card) in t["years"]
            and (not t.get("fiscal_quarter") or card.get("fiscal_quarter") == t["fiscal_quarter"]),
        })
    report["documents"] = len(docs)
    report["pages"] = sum(x["pages"] for x in docs)
    report["distinct_titles"] = len(title_count)
    report["p50_ms"] = pct([r["ms"] for r in rows], 0.5)
    report["p95_ms"] = pct([r["ms"] for r in rows], 0.95)
    for r in rows:
        r["hit5"] = r["rank"] is not None and r["rank"] <= 5
    names = [g for g in GROUP_ORDER + tuple(sorted({r["group"] for r in doc_rows} - set(GROUP_ORDER)))
             if any(r["group"] == g for r in doc_rows + rows)]
    spans = {g: {g} for g in names}
    spans["not filings"] = set(NON_FILINGS)  # the targets for the documents that are not filings
    spans["filings"] = set(names) - set(NON_FILINGS)
    spans["all"] = set(names)
    groups = {name: summary([r for r in doc_rows if r["group"] in span], [r for r in rows if r["group"] in span])
              for name, span in spans.items()}
    report["groups"] = groups
    report["not_in_kb"] = [r["file"] for r in doc_rows if not r["in_kb"]]
    report["doc_rows"] = doc_rows
    report["rows"] = rows
    return report


def summary(docs: list[dict], questions: list[dict]) -> dict:
    """One row of the table: the documents' label accuracy and the questions' retrieval figures."""

    def share(rs: list[dict], key: str) -> float | None:
        return round(sum(1 for r in rs if r[key]) / len(rs), 3) if rs else None

    return {"docs": len(docs), "questions": len(questions),
            "doc@1": share(questions, "doc1"), "bm25_doc@1": share(questions, "bm25_doc1"),
            "hit@5": share(questions, "hit5"), "bm25_hit@5": share(questions, "bm25_hit5"),
            "routed@1": share(questions, "routed1"),
            "distinct_titles": share(docs, "unique_title"), "kind_ok": share(docs, "kind_ok"),
            "title_ok": share(docs, "title_ok"), "year_ok": share(docs, "year_ok")}


def fmt(v: float | None) -> str:
    return "     -" if v is None else f"{v:6.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "kinds"))
    ap.add_argument("--dev", default=None)
    ap.add_argument("--kinds-only", action="store_true",
                    help="only the 30 kinds documents and the 30 dev filings (a smaller library, for iteration)")
    ap.add_argument("--rebuild", action="store_true", help="ingest afresh")
    ap.add_argument("--show-titles", action="store_true", help="print every judged document's card")
    args = ap.parse_args()

    dev = find_dev(args.dev)
    kinds_dir = dev.parent / "library-kinds" / "pdfs"
    more = dev.parent / "financebench-more" / "pdfs"
    kinds_pdfs = sorted(kinds_dir.glob("*.pdf"))
    filing_pdfs = sorted((dev / "pdfs").glob("*.pdf")) + ([] if args.kinds_only else sorted(more.glob("*.pdf")))
    truth = load_truth(kinds_pdfs, filing_pdfs)
    questions = load_all_questions(dev, filing_pdfs, truth)
    out = Path(args.out) / ("kinds-only" if args.kinds_only else "full")
    out.mkdir(parents=True, exist_ok=True)
    r = run(out, kinds_pdfs + filing_pdfs, truth, questions, args.rebuild)

    print(f"kinds ({'kinds-only' if args.kinds_only else 'full'}): {r['documents']} documents, {r['pages']} pages, "
          f"{r['distinct_titles']} distinct titles; {len(questions)} questions corpus-wide (limit {LIMIT}); "
          f"kb.context p50 {r['p50_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms; ingest {r.get('ingest_s')} s")
    cols = ("docs", "questions", "doc@1", "bm25_doc@1", "hit@5", "bm25_hit@5", "routed@1", "distinct_titles",
            "kind_ok", "title_ok", "year_ok")
    heads = ("docs", "qs", "doc@1", "bm.d@1", "hit@5", "bm.h@5", "rt@1", "titles", "kind", "title", "year")
    print(f"{'kind':17}" + " ".join(f"{h:>6}" for h in heads))
    for g, v in r["groups"].items():
        if g == "not filings":
            print("-" * (17 + 7 * len(cols)))
        print(f"{g:17}" + " ".join(f"{v[c]:6d}" if isinstance(v[c], int) else fmt(v[c]) for c in cols))
    if r["not_in_kb"]:
        print(f"not in the KB (refused at ingest, counted as misses): {', '.join(r['not_in_kb'])}")
    print("(titles: share of documents whose title no other document has; kind / title / year: label accuracy; "
          "bm.*: page-BM25 over the same page texts; rt@1: the first routed document is the gold one)")
    if args.show_titles:
        for x in sorted(r["doc_rows"], key=lambda x: (x["group"], x["file"])):
            marks = "".join("+" if x[k] else "-" for k in ("kind_ok", "title_ok", "year_ok"))
            print(f"  {marks} {x['group']:16} {x['file'][:34]:34} kind={x['kind']!s:22} year={x['year']!s:5} "
                  f"{x['title']}")
    print(f"\nmachine load average at the end: {Path('/proc/loadavg').read_text().split()[0]}")
    (out / "kinds.json").write_text(json.dumps(r, indent=1))
    print(f"wrote {out / 'kinds.json'}")


if __name__ == "__main__":
    main()
