"""One-shot commands on the Python client: `jsonl-engine ingest|ask|docs|outline|read|render|call|mcp`.

Each spawns the daemon (this package, on `--kb`), sends its requests, prints, and exits: 0 ok, 1 an error event
(its message on stderr) or a failed file, 2 bad usage. Module level stays light (argparse only): `jsonl-engine`
with no command is the daemon, and its start-up must not pay for the client, rich or mcp.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any

COMMANDS = ("ingest", "ask", "docs", "outline", "read", "render", "call", "mcp")
# the markers answers cite with: kb.synthesize's claim ids, kb.answer's section ids (document id ":" path)
_MARKER = re.compile(r"\[(c[0-9a-f]{12}|[0-9a-f]{16}:[^\[\]\s]{1,180})\]")


def add_commands(sub: Any) -> None:
    """Add the one-shot subcommands to the `jsonl-engine` subparsers."""
    def command(name: str, help: str, json_flag: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help, description=help)
        p.add_argument("--kb", metavar="DIR", help="KB directory (default $JSONL_ENGINE_KB or ./.jsonl-engine)")
        p.add_argument("--config", metavar="FILE", help="TOML configuration file")
        if json_flag:
            p.add_argument("--json", action="store_true", help="print the result object(s) as JSON")
        return p

    p = command("ingest", "ingest files and folders (recursive), with progress on stderr and a summary table")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--status", choices=("approved", "draft", "contested", "archived"), default=None,
                   help="review status of new documents")
    p = command("ask", "answer a question with numbered citations (kb.synthesize, or kb.answer with an LLM)")
    p.add_argument("question")
    p.add_argument("--doc", action="append", default=[], metavar="ID", help="only this document (repeatable)")
    p.add_argument("--strategy", help="kb.answer's retrieval strategy (needs an LLM)")
    p.add_argument("--reader", help="named LLM reader (implies --llm)")
    p.add_argument("--llm", action="store_true", help="use kb.answer (the LLM) even if not configured by default")
    p.add_argument("--max-chars", type=int, default=2000, help="kb.synthesize's answer budget (default 2000)")
    p.add_argument("--max-claims", type=int, default=None, help="kb.synthesize's claims, most direct first "
                   "(default 5; the answer says how many more there are)")
    p.add_argument("--render", metavar="DIR", help="write a PNG of each cited PDF page's quote, highlighted, into "
                   "DIR (kb.render, needs Pillow: the [render] extra) and print its path under the citation")
    p.add_argument("--scale", type=float, default=2.0, help="--render's pixels per PDF point (default 2)")
    command("docs", "list the documents")
    p = command("outline", "a document's section tree")
    p.add_argument("document_id", metavar="ID")
    p = command("read", "a page of a document (--page) or a section's text (ID is a section id)")
    p.add_argument("id", metavar="ID", help="document id (with --page) or section id")
    p.add_argument("--page", type=int, help="1-based page number")
    p = command("render", "a PDF page as a PNG, a span of its text highlighted (kb.render; needs Pillow)")
    p.add_argument("id", metavar="ID", help="document id")
    p.add_argument("--page", type=int, required=True, help="1-based page number")
    p.add_argument("--start", type=int, help="highlight from this offset into the page's text (kb.read --page)")
    p.add_argument("--end", type=int, help="... to this one")
    p.add_argument("--crop", action="store_true", help="only the region around the highlight")
    p.add_argument("--scale", type=float, default=2.0, help="pixels per PDF point (default 2)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the PNG here (default: the KB's cache directory)")
    p = command("call", "one raw request; every event printed as a JSON line (for jq)", json_flag=False)
    p.add_argument("method")
    p.add_argument("params", nargs="?", default=None, metavar="JSON", help="params object (default none)")
    command("mcp", "serve the KB as MCP tools over stdio (needs the [mcp] extra)", json_flag=False)


def run(args: argparse.Namespace) -> int:
    if args.command == "mcp":
        try:
            from jsonl_engine import mcp_server
        except ImportError as exc:
            print(f"jsonl-engine mcp: {exc}; install the extra: pip install 'jsonl-engine[mcp]'", file=sys.stderr)
            return 2
        return mcp_server.main(kb=args.kb, config=args.config)
    params: Any = None
    if args.command == "call" and args.params is not None:
        import orjson

        try:
            params = orjson.loads(args.params)
        except orjson.JSONDecodeError as exc:
            print(f"jsonl-engine call: JSON is not valid: {exc}", file=sys.stderr)
            return 2
        if not isinstance(params, dict):
            print("jsonl-engine call: JSON must be an object", file=sys.stderr)
            return 2
    if args.command == "read" and args.page is None and ":" not in args.id:
        print("jsonl-engine read: give --page N with a document id, or a section id", file=sys.stderr)
        return 2
    if args.command == "ask" and args.strategy and not (args.llm or args.reader):
        print("jsonl-engine ask: --strategy applies to kb.answer: add --llm", file=sys.stderr)
        return 2
    if args.command == "render" and (args.start is None) != (args.end is None):
        print("jsonl-engine render: give both --start and --end, or neither", file=sys.stderr)
        return 2
    if args.command == "render" and args.crop and args.start is None:
        print("jsonl-engine render: --crop needs a span to crop around (--start, --end)", file=sys.stderr)
        return 2
    if (args.command == "render" or (args.command == "ask" and args.render)) and not _pillow():
        print(f"jsonl-engine {args.command}: {NO_PILLOW}", file=sys.stderr)
        return 2

    from jsonl_engine.client import Client, DaemonExited, RequestError

    try:
        client = Client(args.kb, config=args.config)
    except DaemonExited as exc:
        print(f"jsonl-engine {args.command}: the daemon did not start", file=sys.stderr)
        return 2 if (exc.data or {}).get("returncode") == 2 else 1
    with client:
        try:
            return _COMMANDS[args.command](client, args, params)
        except RequestError as exc:
            if (exc.data or {}).get("reason") == "no_renderer":  # the daemon runs elsewhere, without Pillow
                print(f"jsonl-engine {args.command}: {NO_PILLOW}", file=sys.stderr)
                return 1
            print(f"jsonl-engine {args.command}: {exc.code}: {exc.message}", file=sys.stderr)
            return 1
        except BrokenPipeError:  # `| head`
            return 0


NO_PILLOW = "pictures of cited pages need Pillow: pip install 'jsonl-engine[render]'"


def _pillow() -> bool:
    """Whether Pillow imports here (the daemon the commands start runs on this interpreter)."""
    try:
        from PIL import Image  # noqa: F401
    except ImportError:
        return False
    return True


def _print_json(value: Any) -> None:
    import orjson

    sys.stdout.write(orjson.dumps(value).decode() + "\n")


# ---- ingest -----------------------------------------------------------------------------------------------


class _PlainProgress:
    """One line per progress event (stderr is not a terminal)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def event(self, data: dict[str, Any]) -> None:
        done, total = data.get("done"), data.get("total")
        count = f" {done}/{total}" if done is not None and total is not None else ""
        print(f"{data.get('stage', '')}{count}: {data.get('message') or ''}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class _BarProgress:
    """rich bars for documents and pages, with rate and ETA (stderr is a terminal)."""

    def __init__(self, stream: Any) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class Rate(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text(f"{speed:.1f} {task.fields.get('unit', '')}/s" if speed else "", style="cyan")

        self.progress = Progress(TextColumn("{task.description:>9}"), BarColumn(), MofNCompleteColumn(),
                                 Rate(), TextColumn("eta"), TimeRemainingColumn(),
                                 TextColumn("{task.fields[note]}"), console=Console(file=stream),
                                 transient=False)
        self.docs = self.progress.add_task("documents", total=None, unit="docs", note="")
        self.pages = self.progress.add_task("pages", total=None, unit="pages", note="")
        self.files: dict[str, tuple[int, int]] = {}
        self.progress.start()

    def event(self, data: dict[str, Any]) -> None:
        stage, message = data.get("stage"), data.get("message") or ""
        if stage == "extract" and data.get("total") is not None:
            self.files[message.split(": ", 1)[0]] = (int(data.get("done") or 0), int(data["total"]))
            self.progress.update(self.pages, completed=sum(d for d, _ in self.files.values()),
                                 total=sum(t for _, t in self.files.values()), note=_short(message))
        elif stage == "document":
            self.progress.update(self.docs, completed=data.get("done"), total=data.get("total"),
                                 note=_short(os.path.basename(message)))
        elif message:
            self.progress.update(self.pages, note=_short(message))

    def close(self) -> None:
        self.progress.stop()


def _short(text: str, width: int = 32) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _ingest(client: Any, args: argparse.Namespace, _params: Any) -> int:
    from jsonl_engine.client import RequestError

    params: dict[str, Any] = {"paths": [os.path.abspath(p) for p in args.paths]}
    if args.status:
        params["status"] = args.status
    progress: Any = None
    if not args.json:
        progress = _BarProgress(sys.stderr) if _rich_on(sys.stderr) else _PlainProgress(sys.stderr)
    results: list[dict[str, Any]] = []
    error: RequestError | None = None
    try:
        for event in client.stream("kb.ingest", params):
            if event["event"] == "progress" and progress is not None:
                progress.event(event["data"])
            elif event["event"] == "result":
                results.append(event["data"])
                if args.json:
                    _print_json(event["data"])
    except RequestError as exc:
        error = exc
    finally:
        if progress is not None:
            progress.close()
    if not args.json:
        _ingest_summary(results)
    if error is not None:
        raise error
    return 1 if any(r.get("error") for r in results) else 0


def ingest_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    """The summary table: outcome, pages, sections, document, note."""
    rows = []
    for r in results:
        outcome = "failed" if r.get("error") else "skipped" if r.get("skipped") else "added"
        note = (r["error"] or {}).get("message", "") if r.get("error") else r.get("reason") or ""
        rows.append([outcome, str(r.get("pages", 0)), str(r.get("sections", 0)),
                     r.get("title") or os.path.basename(r.get("path") or ""), r.get("path") or "", note])
    return rows


def _ingest_summary(results: list[dict[str, Any]]) -> None:
    rows = ingest_rows(results)
    counts = {k: sum(r[0] == k for r in rows) for k in ("added", "skipped", "failed")}
    _table(["outcome", "pages", "sections", "document", "path", "note"], rows, right={1, 2})
    print(f"{counts['added']} added, {counts['skipped']} skipped, {counts['failed']} failed")


def _rich_on(stream: Any) -> bool:
    """rich for a terminal (when it is installed); plain text otherwise."""
    if not stream.isatty() or os.environ.get("TERM") == "dumb":
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def _table(header: list[str], rows: list[list[str]], right: set[int] = frozenset()) -> None:  # type: ignore[assignment]
    if _rich_on(sys.stdout):
        from rich.console import Console
        from rich.table import Table

        table = Table(*header, box=None, pad_edge=False)
        for i, column in enumerate(table.columns):
            column.justify = "right" if i in right else "left"
        for row in rows:
            table.add_row(*row)
        Console().print(table)
        return
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    for row in [header, *rows]:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        print("  ".join(cells).rstrip())


# ---- ask --------------------------------------------------------------------------------------------------


class Renumber:
    """Rewrites citation markers (`[claim_id]`, `[section_id]`) to `[1]`, `[2]`... in order of first use, also
    across streamed deltas (text after an unclosed `[` waits for its `]`)."""

    def __init__(self, known: set[str] | None = None) -> None:
        self.numbers: dict[str, int] = {}
        self.known = known
        self._pending = ""

    def number(self, marker: str) -> int:
        return self.numbers.setdefault(marker, len(self.numbers) + 1)

    def _sub(self, match: re.Match[str]) -> str:
        marker = match.group(1)
        if self.known is not None and marker not in self.known:
            return match.group(0)
        return f"[{self.number(marker)}]"

    def feed(self, text: str) -> str:
        text = self._pending + text
        cut = text.rfind("[")
        if cut != -1 and "]" not in text[cut:] and len(text) - cut <= 200:
            text, self._pending = text[:cut], text[cut:]
        else:
            self._pending = ""
        return _MARKER.sub(self._sub, text)

    def finish(self) -> str:
        rest, self._pending = self._pending, ""
        return _MARKER.sub(self._sub, rest)


def citations(method: str, result: dict[str, Any]) -> list[dict[str, Any]]:
    """The result's citations in one shape: marker, document, section, page, quote and its offsets."""
    if method == "kb.synthesize":
        return [{"marker": c["id"], "document_id": c["document_id"], "document_title": c["document_title"],
                 "section_id": c["section_id"], "page": c["page"], "quote": c["text"],
                 "quote_start": c["quote_start"], "quote_end": c["quote_end"], "pages": c.get("pages") or [],
                 "boxes_status": c.get("boxes_status")} for c in result["claims"]]
    return [{"marker": c["section_id"], "document_id": c["document_id"], "document_title": c["document_title"],
             "section_id": c["section_id"], "page": c["page_start"], "quote": c["quote"],
             "quote_start": c["quote_start"], "quote_end": c["quote_end"], "pages": c.get("pages") or [],
             "boxes_status": c.get("boxes_status")} for c in result["citations"]]


def numbered(renumber: Renumber, cites: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Citations by their number in the text; those the text never used get the next numbers."""
    by_marker: dict[str, dict[str, Any]] = {}
    for c in cites:
        by_marker.setdefault(c["marker"], c)
    for marker in by_marker:
        renumber.number(marker)
    return sorted(((n, by_marker[m]) for m, n in renumber.numbers.items() if m in by_marker), key=lambda x: x[0])


def _ask(client: Any, args: argparse.Namespace, _params: Any) -> int:
    use_llm = args.llm or bool(args.reader) or bool(client.call("capabilities").get("readers"))
    if use_llm:
        method = "kb.answer"
        params: dict[str, Any] = {"query": args.question, "stream": not args.json}
        if args.strategy:
            params["strategy"] = args.strategy
        if args.reader:
            params["reader"] = args.reader
    else:
        method = "kb.synthesize"
        params = {"query": args.question, "max_chars": args.max_chars}
        if args.max_claims is not None:
            params["max_claims"] = args.max_claims
    if args.doc:
        params["document_ids"] = args.doc
    renumber = Renumber()
    streamed = False
    result: dict[str, Any] | None = None
    for event in client.stream(method, params):
        if event["event"] == "delta" and not args.json:
            sys.stdout.write(renumber.feed(event["data"].get("text", "")))
            sys.stdout.flush()
            streamed = True
        elif event["event"] == "result":
            result = event["data"]
    assert result is not None
    if args.json:
        _print_json(result)
        return 0
    cites = citations(method, result)
    if streamed:
        sys.stdout.write(renumber.finish() + "\n")
    else:
        renumber.known = {c["marker"] for c in cites}
        empty = ("(no answer: the first line does not fit in --max-chars; raise it)"
                 if method == "kb.synthesize" and result["_meta"].get("truncated")
                 else "(no answer: nothing in the KB matched)")
        print(renumber.feed(result.get("answer") or "") + renumber.finish() or empty)
    if method == "kb.synthesize" and result.get("gaps"):
        print(f"not found: {', '.join(result['gaps'])}")
    if method == "kb.synthesize" and result["_meta"].get("more"):
        print(f"({result['_meta']['more']} more claims: --max-claims)")
    if method == "kb.answer" and result.get("error"):
        print(f"jsonl-engine ask: the answer is incomplete: {result['error'].get('message')}", file=sys.stderr)
    listed = numbered(renumber, cites)
    if listed:
        print()
    for n, c in listed:
        quote = " ".join(c["quote"].split())
        print(f"[{n}] {c['document_title']}, p. {c['page']}: \"{quote}\"")
        if args.render:
            for line in render_citation(client, n, c, args.render, args.scale):
                print(f"    {line}")
    return 0


def render_citation(client: Any, n: int, c: dict[str, Any], folder: str, scale: float) -> list[str]:
    """kb.render of each page the citation's quote spans, cropped around its boxes, written into `folder` as
    `cite<n>-p<page>.png`: a line per page, the PNG's path, or why there is no picture."""
    import base64

    if c.get("boxes_status") != "ok":
        return [f"(no picture: {c.get('boxes_status') or 'no boxes'})"]
    os.makedirs(folder, exist_ok=True)
    lines = []
    for where in c["pages"]:
        out = client.call("kb.render", {"document_id": c["document_id"], "page": where["page"],
                                        "start": where["start"], "end": where["end"], "crop": True,
                                        "scale": scale, "output": "base64"})
        path = os.path.abspath(os.path.join(folder, f"cite{n}-p{where['page']}.png"))
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(out["data"]))
        lines.append(path)
    return lines


# ---- docs, outline, read, call ----------------------------------------------------------------------------


def _docs(client: Any, args: argparse.Namespace, _params: Any) -> int:
    data = client.call("kb.documents", {})
    if args.json:
        _print_json(data)
        return 0
    rows = [[d["document_id"], str(d["pages"]), str(d["sections"]), d["status"], d["title"]]
            for d in data["documents"]]
    _table(["id", "pages", "sections", "status", "title"], rows, right={1, 2})
    return 0


def _outline(client: Any, args: argparse.Namespace, _params: Any) -> int:
    data = client.call("kb.outline", {"document_id": args.document_id})
    if args.json:
        _print_json(data)
        return 0
    print(data["title"])

    def walk(sections: list[dict[str, Any]], depth: int) -> None:
        for s in sections:
            pages = f"p. {s['page_start']}" + (f"-{s['page_end']}" if s["page_end"] != s["page_start"] else "")
            print(f"{'  ' * depth}{s['title']}  ({pages})  {s['section_id']}")
            walk(s.get("children") or [], depth + 1)

    walk(data["sections"], 1)
    return 0


def _read(client: Any, args: argparse.Namespace, _params: Any) -> int:
    params = {"document_id": args.id, "page": args.page} if args.page is not None else {"section_id": args.id}
    data = client.call("kb.read", params)
    if args.json:
        _print_json(data)
        return 0
    sys.stdout.write(data["text"] + ("" if data["text"].endswith("\n") else "\n"))
    return 0


def _render(client: Any, args: argparse.Namespace, _params: Any) -> int:
    params: dict[str, Any] = {"document_id": args.id, "page": args.page, "scale": args.scale, "crop": args.crop,
                              "output": "base64" if args.output else "file"}
    if args.start is not None:
        params.update(start=args.start, end=args.end)
    data = client.call("kb.render", params)
    path = data["path"]
    if args.output:
        import base64

        path = os.path.abspath(args.output)
        with open(path, "wb") as fh:
            fh.write(base64.b64decode(data["data"]))
        data = {**data, "data": None, "path": path}
    if args.json:
        _print_json(data)
        return 0
    print(path)
    return 0


def _call(client: Any, args: argparse.Namespace, params: Any) -> int:
    from jsonl_engine.client import RequestError

    stream = client.stream(args.method, params)
    code = 0
    try:
        for event in stream:
            _print_json(event)
    except RequestError as exc:
        _print_json({"id": stream.id, "event": "error",
                     "error": {"code": exc.code, "message": exc.message, "data": exc.data}})
        print(f"jsonl-engine call: {exc.code}: {exc.message}", file=sys.stderr)
        code = 1
    if stream.done is not None:
        _print_json(stream.done)
    return code


_COMMANDS = {"ingest": _ingest, "ask": _ask, "docs": _docs, "outline": _outline, "read": _read, "render": _render,
             "call": _call}
