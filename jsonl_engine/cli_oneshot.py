"""One-shot commands on the Python client: `jsonl-engine ingest|ask|docs|outline|read|render|call|mcp`.

Each spawns the daemon (this package, on `--kb`), sends its requests, prints, and exits: 0 ok, 1 an error (its
message on stderr), 2 bad usage, 3 `ingest` when some files could not be read (the others went in), 130
interrupted (Ctrl-C: the daemon is stopped, nothing is left running). Module level stays light (argparse only):
`jsonl-engine` with no command is the daemon, and its start-up must not pay for the client, rich or mcp.

Terminal output fits the terminal's width (80 columns when it is not a terminal): table cells cut with an
ellipsis, paths from the left. Bars and colours only on a terminal, never with NO_COLOR or TERM=dumb.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import signal
import sys
import textwrap
from collections.abc import Callable
from typing import Any

COMMANDS = ("ingest", "ask", "docs", "outline", "read", "render", "call", "mcp")
# the markers answers cite with: kb.synthesize's claim ids, kb.answer's section ids (document id ":" path)
_MARKER = re.compile(r"\[(c[0-9a-f]{12}|[0-9a-f]{16}:[^\[\]\s]{1,180})\]")
PARTIAL = 3  # ingest: some files could not be read, the others went in
INTERRUPTED = 130

EPILOGS = {
    "ingest": """\
{paths}

EXAMPLES
  $ jsonl-engine ingest --sample
  $ jsonl-engine ingest ~/Documents/reports
  $ jsonl-engine ingest report.pdf notes.md --kb ~/kb --status draft
  $ jsonl-engine ingest ~/Documents/reports --json | jq -r .title

EXIT CODES
  0 every file added or skipped   1 an error   2 bad usage
  3 some files could not be read (the rest went in; listed on stderr with
    what to do)   130 interrupted
""",
    "ask": """\
The question is free text, in quotes. Without an LLM the answer is made of
verbatim sentences of the documents (kb.synthesize); with an LLM configured
($JSONL_ENGINE_LLM_BASE_URL, or [llm] in --config) or --llm, the LLM writes it
from checked quotes (kb.answer). Each [N] is a citation listed below it.

EXAMPLES
  $ jsonl-engine ask "How tall is the Tern Point lighthouse?"
  $ jsonl-engine ask "What was revenue in 2022?" --doc d5cf549543a24b04
  $ jsonl-engine ask "What did repainting cost?" --render pictures
  $ jsonl-engine ask "What was revenue in 2022?" --llm --reader careful
  $ jsonl-engine ask "What was revenue in 2022?" --json | jq .claims
""",
    "docs": """\
EXAMPLES
  $ jsonl-engine docs
  $ jsonl-engine docs --kb ~/kb --json | jq -r '.documents[].path'
""",
    "outline": """\
ID is a document id, as `jsonl-engine docs` lists them.

EXAMPLES
  $ jsonl-engine outline d5cf549543a24b04
""",
    "read": """\
ID is a document id with --page, or a section id (as `outline` lists them).

EXAMPLES
  $ jsonl-engine read d5cf549543a24b04 --page 52
  $ jsonl-engine read d5cf549543a24b04:4.4.18
""",
    "render": """\
START and END are offsets into the page's text as `read ID --page N` prints it
(a citation's `pages[]` in `ask --json`).

EXAMPLES
  $ jsonl-engine render d5cf549543a24b04 --page 7
  $ jsonl-engine render d5cf549543a24b04 --page 7 --start 2876 --end 2988 \\
      --crop -o quote.png
""",
    "call": """\
Prints every event of one raw request as a JSON line (PROTOCOL.md).

EXAMPLES
  $ jsonl-engine call capabilities
  $ jsonl-engine call kb.context '{"query": "revenue 2022", "limit": 3}'
""",
    "mcp": """\
EXAMPLES
  $ jsonl-engine mcp --kb ~/kb
""",
}


def add_commands(sub: Any, formatter: type, add_globals: Callable[[argparse.ArgumentParser, bool], None]) -> None:
    """Add the one-shot subcommands to the `jsonl-engine` subparsers (`add_globals` adds --kb, --config...)."""
    from jsonl_engine.ingest.parsers import EXTENSIONS

    def command(name: str, help: str, json_flag: bool = True) -> argparse.ArgumentParser:
        epilog = EPILOGS[name].replace("{paths}", textwrap.fill(
            f"PATH is a file or a folder; folders are searched recursively for {EXTENSIONS} files (hidden files "
            "and folders are left out). A file already in the KB with the same content is skipped. The KB is "
            "created by the first ingest (it says so).", 78))
        p = sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".", epilog=epilog,
                           formatter_class=formatter)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print the result object(s) as JSON")
        return p

    p = command("ingest", "ingest files and folders, with progress on stderr and a summary table")
    p.add_argument("paths", nargs="*", metavar="PATH", help="a file or a folder (searched recursively)")
    p.add_argument("--sample", action="store_true", help="also the sample document shipped with jsonl-engine")
    p.add_argument("--status", choices=("approved", "draft", "contested", "archived"), default=None,
                   help="review status of new documents")
    p = command("ask", "answer a question with numbered citations")
    p.add_argument("question", help="what to ask, in quotes")
    p.add_argument("--doc", action="append", default=[], metavar="ID", help="only this document (repeatable)")
    p.add_argument("--strategy", help="kb.answer's retrieval strategy (needs an LLM)")
    p.add_argument("--reader", help="named LLM reader (implies --llm)")
    p.add_argument("--llm", action="store_true", help="use kb.answer (the LLM) even if not configured by default")
    p.add_argument("--max-chars", type=int, default=2000, help="kb.synthesize's answer budget (default 2000)")
    p.add_argument("--max-claims", type=int, default=None, help="kb.synthesize's claims, most direct first "
                   "(default 5; the answer says how many more there are)")
    p.add_argument("--render", metavar="DIR", help="write a PNG of each cited PDF page, the quote highlighted, "
                   "into DIR and print its path under the citation (needs the [render] extra)")
    p.add_argument("--scale", type=float, default=2.0, help="--render's pixels per PDF point (default 2)")
    command("docs", "list the documents: id, kind, pages, status, title, path")
    p = command("outline", "a document's section tree")
    p.add_argument("document_id", metavar="ID", help="document id")
    p = command("read", "a page of a document (--page) or a section's text")
    p.add_argument("id", metavar="ID", help="document id (with --page) or section id")
    p.add_argument("--page", type=int, help="1-based page number")
    p = command("render", "a PDF page as a PNG, a span of its text highlighted (needs the [render] extra)")
    p.add_argument("id", metavar="ID", help="document id")
    p.add_argument("--page", type=int, required=True, help="1-based page number")
    p.add_argument("--start", type=int, help="highlight from this offset into the page's text")
    p.add_argument("--end", type=int, help="... to this one")
    p.add_argument("--crop", action="store_true", help="only the region around the highlight")
    p.add_argument("--scale", type=float, default=2.0, help="pixels per PDF point (default 2)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the PNG here (default: the KB's cache directory)")
    p = command("call", "one raw request; every event printed as a JSON line (for jq)")
    p.add_argument("method", help="e.g. kb.documents (PROTOCOL.md lists them)")
    p.add_argument("params", nargs="?", default=None, metavar="JSON", help="params object (default none)")
    command("mcp", "serve the KB as MCP tools over stdio (needs the [mcp] extra)", json_flag=False)
    for name in COMMANDS:
        add_globals(sub.choices[name], True)


class Stdout:
    """Where the commands print: stdout, but a closed stdout (`>&-`), a full disk or a reader that went away
    (`| head`) stops the printing instead of raising; `error` tells which."""

    def __init__(self) -> None:
        self.error: OSError | None = None

    def write(self, text: str) -> int:
        if self.error is None:
            try:
                if sys.stdout is None:
                    raise OSError(errno.EBADF, "stdout is closed")
                sys.stdout.write(text)
            except OSError as exc:
                self.error = exc
        return len(text)

    def flush(self) -> None:
        if self.error is None and sys.stdout is not None:
            try:
                sys.stdout.flush()
            except OSError as exc:
                self.error = exc

    def finish(self, command: str, code: int) -> int:
        """The exit code once the output is flushed: a reader gone (EPIPE) is not an error, a write that
        failed otherwise is (the command's work is done, its report is not)."""
        self.flush()
        if self.error is None:
            return code
        # what is still buffered would fail again at exit: send it to /dev/null
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
        if self.error.errno == errno.EPIPE:
            return code
        print(f"jsonl-engine {command}: cannot write the output ({self.error.strerror or self.error}); the "
              "command itself finished",
              file=sys.stderr)
        return code or 1


OUT = Stdout()


def _say(*parts: Any, end: str = "\n") -> None:
    print(*parts, end=end, file=OUT)


def _fail(command: str, message: str) -> None:
    print(f"jsonl-engine {command}: {message}", file=sys.stderr)


def _fill_std_fds() -> None:
    """A closed stdin, stdout or stderr gets /dev/null, so that the daemon's pipes never take its number."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDWR)
            if opened != fd:  # a lower one was free too: it is filled by the loop's earlier turn
                os.close(opened)
    if sys.stderr is None:  # closed at start: messages go nowhere rather than to stdout (print's fallback)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - lives as long as the process


def run(args: argparse.Namespace) -> int:
    _fill_std_fds()
    holder: dict[str, Any] = {}
    try:
        code = _run(args, holder)
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not interrupt the clean-up
        plan = holder.get("plan")
        if plan is not None and plan.poll() is None:  # the counting child, when it is still at work
            plan.kill()
            plan.wait()
        _stop_daemon(holder.get("client"))
        fresh_line = "\n" if sys.stderr is not None and sys.stderr.isatty() else ""  # after the terminal's ^C
        print(f"{fresh_line}jsonl-engine {args.command}: interrupted", file=sys.stderr)
        OUT.finish(args.command, INTERRUPTED)
        return INTERRUPTED
    return OUT.finish(args.command, code)


def _stop_daemon(client: Any) -> None:
    """Stop the daemon now: SIGTERM cancels its requests (an ingest keeps each document fully in or out) and it
    exits within a second; then the client's threads end."""
    if client is None:
        return
    proc = client.proc
    if proc.poll() is None:
        proc.terminate()
    client.close(timeout=10)


def _run(args: argparse.Namespace, holder: dict[str, Any]) -> int:
    if args.command == "mcp":
        return _run_mcp(args)
    problem = _usage_problem(args)
    if problem:
        _fail(args.command, problem)
        return 2
    params, code = _call_params(args)
    if code is not None:
        return code
    if (args.command == "render" or (args.command == "ask" and args.render)) and not _pillow():
        _fail(args.command, NO_PILLOW)
        return 2
    if args.command == "render" and args.output:
        problem = _unwritable(args.output)
        if problem:
            _fail("render", problem)
            return 1
    kb = _kb(args)
    if isinstance(kb, int):
        return kb
    if args.command == "ingest":
        args.paths = [*args.paths, *([sample_path()] if args.sample else [])]
        holder["plan"] = _start_plan(args.paths) if _bars_on(sys.stderr) and not args.json else None
    return _run_command(args, params, holder)


def _run_mcp(args: argparse.Namespace) -> int:
    try:
        from jsonl_engine import mcp_server
    except ImportError as exc:
        _fail("mcp", f"{exc}; install the extra: pip install 'jsonl-engine[mcp]'")
        return 2
    return mcp_server.main(kb=args.kb, config=args.config)


def _call_params(args: argparse.Namespace) -> tuple[Any, int | None]:
    """The params `call` was given (a JSON object; None when none were given or for another command), or the
    exit code of a problem with them, already reported."""
    if args.command != "call" or args.params is None:
        return None, None
    import orjson

    try:
        params = orjson.loads(args.params)
    except orjson.JSONDecodeError as exc:
        _fail("call", f"JSON is not valid: {exc}")
        return None, 2
    if not isinstance(params, dict):
        _fail("call", "JSON must be an object")
        return None, 2
    return params, None


def _run_command(args: argparse.Namespace, params: Any, holder: dict[str, Any]) -> int:
    """Start the daemon and run the command through it; a request's error is reported, exit code 1."""
    from jsonl_engine.client import Client, DaemonExited, RequestError

    try:
        client = holder["client"] = Client(args.kb, config=args.config, args=_daemon_args(args))
    except DaemonExited as exc:
        _fail(args.command, "the daemon did not start")
        return 2 if (exc.data or {}).get("returncode") == 2 else 1
    with client:
        try:
            return _COMMANDS[args.command](client, args, params, holder)
        except RequestError as exc:
            if (exc.data or {}).get("reason") == "no_renderer":  # the daemon runs elsewhere, without Pillow
                _fail(args.command, NO_PILLOW)
                return 1
            _fail(args.command, f"{exc.code}: {exc.message}")
            return 1


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.command == "ingest":
        if not args.paths and not args.sample:
            return "give a PATH (a file or a folder) to ingest, or --sample"
        if any(p == "" for p in args.paths):
            return "PATH is empty: give a file or a folder (`.` for the current folder)"
    if args.command == "read" and args.page is None and ":" not in args.id:
        return "give --page N with a document id, or a section id"
    if args.command == "ask" and args.strategy and not (args.llm or args.reader):
        return "--strategy applies to kb.answer: add --llm"
    if args.command == "render" and (args.start is None) != (args.end is None):
        return "give both --start and --end, or neither"
    if args.command == "render" and args.crop and args.start is None:
        return "--crop needs a span to crop around (--start, --end)"
    return None


def _daemon_args(args: argparse.Namespace) -> list[str]:
    out = ["--log-level", args.log_level] if args.log_level else []  # else the daemon's settings say
    for module in args.plugin:
        out += ["--plugin", module]
    return out


def _kb(args: argparse.Namespace) -> str | int | None:
    """The KB the command works on (a directory, or None for a URL), checked: only an ingest (`ingest`, `call
    kb.ingest`) creates a KB, and says so; any other command on a KB that does not exist is an error (it would
    create an empty one). An int is the exit code of a problem already reported."""
    from jsonl_engine.config import ConfigError, env_setting, load_settings
    from jsonl_engine.store.sqlite.db import DB_FILENAME

    try:
        location = load_settings(args.config, kb_dir=args.kb).kb_location
    except ConfigError as exc:
        _fail(args.command, str(exc))
        return 2
    if isinstance(location, str):  # a PostgreSQL URL: the server says whether it is there
        return None
    where = os.path.abspath(location)
    origin = ("--kb" if args.kb is not None else "$JSONL_ENGINE_KB" if env_setting("KB")
              else "the configuration file" if args.config or env_setting("CONFIG")
              else "the default: ./.jsonl-engine in the current folder")
    if os.path.exists(os.path.join(where, DB_FILENAME)):
        return where
    creates = args.command == "ingest" or (args.command == "call" and args.method == "kb.ingest")
    if not creates:
        _fail(args.command, f"no KB at {where} ({origin})")
        print(f"  create it: jsonl-engine ingest PATH{_kb_flag(args)}  (or give --kb DIR for another KB)",
              file=sys.stderr)
        return 1
    if os.path.exists(where) and not os.path.isdir(where):
        _fail(args.command, f"the KB {where} ({origin}) is not a directory")
        return 1
    print(f"jsonl-engine {args.command}: creating a new KB at {where} ({origin})", file=sys.stderr)
    return where


def _kb_flag(args: argparse.Namespace) -> str:
    return f" --kb {args.kb}" if args.kb is not None else ""


def empty_kb_hint(args: argparse.Namespace) -> str:
    return f"this KB has no documents: run `jsonl-engine ingest PATH{_kb_flag(args)}`"


def sample_path() -> str:
    """The sample document shipped in the package (`ingest --sample`)."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample", "tern-point-lighthouse.pdf")


NO_PILLOW = "pictures of cited pages need Pillow: pip install 'jsonl-engine[render]'"


def _pillow() -> bool:
    """Whether Pillow imports here (the daemon the commands start runs on this interpreter)."""
    try:
        from PIL import Image  # noqa: F401
    except ImportError:
        return False
    return True


def _unwritable(path: str) -> str | None:
    """Why a file cannot be written at `path` (checked before any work), or None."""
    target = os.path.abspath(path)
    if os.path.isdir(target):
        return f"cannot write {path}: it is a directory"
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        return f"cannot write {path}: no folder {folder}"
    return None


def _write_file(command: str, path: str, data: bytes) -> bool:
    """Write `data` to `path`, reporting a failure (no space, no permission...) on stderr."""
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as exc:
        _fail(command, f"cannot write {path}: {exc.strerror or exc}")
        return False
    return True


def _print_json(value: Any) -> None:
    import orjson

    OUT.write(orjson.dumps(value).decode() + "\n")


# ---- terminal ---------------------------------------------------------------------------------------------


def _plain_terminal() -> bool:
    return bool(os.environ.get("NO_COLOR")) or os.environ.get("TERM") == "dumb"


def _bars_on(stream: Any) -> bool:
    """rich's bars and colours for a terminal (when rich is installed), never with NO_COLOR or TERM=dumb."""
    if stream is None or not stream.isatty() or _plain_terminal():
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def width() -> int:
    """Columns to fit: the terminal's ($COLUMNS first), 80 when stdout is not a terminal."""
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def _ellipsis() -> str:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "…".encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return "..."
    return "…"


def cut(text: str, size: int, left: bool = False) -> str:
    """`text` in `size` characters: cut at the end with an ellipsis, or at the start (`left`, for paths)."""
    text = " ".join(text.split()) if not left else text
    if len(text) <= size:
        return text
    dots = _ellipsis()
    keep = max(0, size - len(dots))
    return dots + text[len(text) - keep:] if left else text[:keep] + dots


MIN_CELL = 10


def fit(header: list[str], rows: list[list[str]], right: set[int] = frozenset(),  # type: ignore[assignment]
        shrink: dict[int, str] | None = None, total: int | None = None, first: int | None = None) -> list[str]:
    """The table's lines within `total` columns (the terminal's): the columns in `shrink` ("end": cut the end;
    "start": cut the start, for paths) give up width, column `first` before the others, then the widest first,
    each down to MIN_CELL."""
    total = width() if total is None else total
    shrink = {i: how for i, how in (shrink or {}).items() if i < len(header)}
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    over = sum(widths) + 2 * (len(widths) - 1) - total
    while over > 0:
        movable = [i for i in shrink if widths[i] > max(MIN_CELL, len(header[i]))]
        if not movable:
            break
        i = first if first in movable else max(movable, key=lambda c: widths[c])
        widths[i] -= 1
        over -= 1
    lines = []
    for row in [header, *rows]:
        cells = []
        for i, (cell, size) in enumerate(zip(row, widths, strict=True)):
            if len(cell) > size:
                cell = cut(cell, size, left=shrink.get(i) == "start")
            cells.append(cell.rjust(size) if i in right else cell.ljust(size))
        lines.append("  ".join(cells).rstrip())
    return lines


def shown_path(path: str | None) -> str:
    """A path as a table shows it: relative to the current folder when inside it, `~` for the home folder."""
    if not path:
        return ""
    cwd, home = os.getcwd(), os.path.expanduser("~")
    if path.startswith(cwd + os.sep):
        return os.path.relpath(path, cwd)
    if home not in ("", "/") and path.startswith(home + os.sep):
        return "~" + path[len(home):]
    return path


def _table(header: list[str], rows: list[list[str]], right: set[int] = frozenset(),  # type: ignore[assignment]
           shrink: dict[int, str] | None = None, first: int | None = None) -> None:
    for line in fit(header, rows, right, shrink, first=first):
        _say(line)


def _wrap(text: str, indent: str = "") -> str:
    return textwrap.fill(text, width=width(), subsequent_indent=indent, break_long_words=False,
                         break_on_hyphens=False)


# ---- ingest -----------------------------------------------------------------------------------------------


class _PlainProgress:
    """One line per progress event (stderr is not a terminal, or NO_COLOR / TERM=dumb); on a terminal, within
    its width (a path cut from the left)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.tty = stream.isatty()

    def event(self, data: dict[str, Any]) -> None:
        done, total = data.get("done"), data.get("total")
        head = f"{data.get('stage', '')}{f' {done}/{total}' if done is not None and total is not None else ''}: "
        message = data.get("message") or ""
        if self.tty:
            message = shown_path(message) if os.path.isabs(message) else message
            message = cut(message, max(MIN_CELL, width() - len(head)), left=os.sep in message)
        print(f"{head}{message}", file=self.stream, flush=True)

    def result(self, data: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        pass


class _BarProgress:
    """rich bars for documents and pages, with rate and ETA (stderr is a terminal). Their totals come from the
    plan (files counted, PDF pages counted before the bars start) when it is there, else from the events."""

    def __init__(self, stream: Any, plan: dict[str, int] | None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.table import Column
        from rich.text import Text

        class Rate(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text(f"{speed:.0f}/s" if speed else "", style="cyan")

        # one line per bar at 80 columns: the note (the file at work) is what gives way
        self.progress = Progress(TextColumn("{task.description:>9}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                                 Rate(), TimeRemainingColumn(),
                                 TextColumn("{task.fields[note]}",
                                            table_column=Column(no_wrap=True, overflow="ellipsis")),
                                 console=Console(file=stream), transient=False)
        self.plan = plan
        files = len(plan) if plan is not None else None
        pages = sum(plan.values()) if plan is not None else None
        self.docs = self.progress.add_task("documents", total=files, unit="docs", note="")
        self.pages = self.progress.add_task("pages", total=pages, unit="pages", note="")
        self.extracting: dict[str, tuple[int, int]] = {}  # file name -> (pages done, pages) while extracted
        self.finished_pages = 0
        self.progress.start()

    def _pages_done(self) -> int:
        return self.finished_pages + sum(d for d, _ in self.extracting.values())

    def event(self, data: dict[str, Any]) -> None:
        stage, message = data.get("stage"), data.get("message") or ""
        if stage == "extract" and data.get("total") is not None:
            self.extracting[message.split(": ", 1)[0]] = (int(data.get("done") or 0), int(data["total"]))
            total = None if self.plan is not None else \
                self.finished_pages + sum(t for _, t in self.extracting.values())
            self.progress.update(self.pages, completed=self._pages_done(), note=_short(message),
                                 **({"total": total} if total is not None else {}))
        elif stage == "document":
            name = os.path.basename(message)
            counted = self.extracting.pop(name, (0, 0))[1]
            self.finished_pages += self.plan.get(message, counted) if self.plan is not None else counted
            self.progress.update(self.pages, completed=self._pages_done())
            self.progress.update(self.docs, completed=data.get("done"), total=data.get("total"),
                                 note=_short(name))
        elif message:
            self.progress.update(self.pages, note=_short(message))

    def result(self, data: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        self.progress.stop()


def _short(text: str, size: int = 24) -> str:
    return cut(text, size)


def _start_plan(paths: list[str]) -> Any:
    """Count the files and PDF pages to ingest in a child process (a hostile PDF may crash pdfium: not here),
    alongside the daemon's start-up; `_finish_plan` collects it."""
    import subprocess

    import orjson

    try:
        proc = subprocess.Popen([sys.executable, "-c", "from jsonl_engine.cli_oneshot import plan_main; plan_main()"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    try:
        assert proc.stdin is not None
        proc.stdin.write(orjson.dumps([os.path.abspath(p) for p in paths]))
        proc.stdin.close()
        proc.stdin = None  # written: communicate() only reads
    except OSError:
        proc.kill()
        proc.wait()
        return None
    return proc


PLAN_TIMEOUT_S = 20.0


def _finish_plan(proc: Any) -> dict[str, int] | None:
    """{file: pages} of the plan, or None when counting failed or took too long (the bars then grow)."""
    import subprocess

    import orjson

    if proc is None:
        return None
    try:
        out, _ = proc.communicate(timeout=PLAN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    if proc.returncode != 0:
        return None
    try:
        return {path: int(pages) for path, pages in orjson.loads(out)}
    except (orjson.JSONDecodeError, ValueError, TypeError):
        return None


def plan_main() -> None:
    """The plan's child process: JSON paths on stdin, `[[file, pages], ...]` on stdout, files as the daemon
    expands them (`expand_paths`), a PDF's pages counted by pdfium, 1 for a text file or a file that fails."""
    import orjson

    from jsonl_engine.ingest import PDF
    from jsonl_engine.ingest.pipeline import check_file, expand_paths

    out = []
    for path, early in expand_paths(orjson.loads(sys.stdin.buffer.read())):
        pages = 0 if early is not None else 1
        if early is None:
            try:
                if check_file(path) == PDF:
                    import pypdfium2 as pdfium

                    doc = pdfium.PdfDocument(path)
                    pages = max(1, len(doc))
                    doc.close()
            except Exception:  # the daemon reports what is wrong with the file
                pages = 1
        out.append([path, pages])
    sys.stdout.buffer.write(orjson.dumps(out))


def _ingest(client: Any, args: argparse.Namespace, _params: Any, holder: dict[str, Any]) -> int:
    params: dict[str, Any] = {"paths": [os.path.abspath(p) for p in args.paths]}
    if args.status:
        params["status"] = args.status
    progress: Any = None
    if not args.json:
        plan = _finish_plan(holder.get("plan"))
        progress = _BarProgress(sys.stderr, plan) if _bars_on(sys.stderr) else _PlainProgress(sys.stderr)
    results, error = _ingest_events(client, params, progress, args.json)
    if not args.json:
        _ingest_summary(results)
    if error is not None:
        raise error
    failures = [r for r in results if r.get("error")]
    for r in failures:
        _fail("ingest", f"cannot read {r.get('path') or '?'}: {r['error'].get('message')}")
        step = next_step(r["error"])
        if step:
            print(f"  {step}", file=sys.stderr)
    if not failures:
        return 0
    return PARTIAL if len(failures) < len(results) else 1


def _ingest_events(client: Any, params: dict[str, Any], progress: Any, as_json: bool
                   ) -> tuple[list[dict[str, Any]], Exception | None]:
    """The results of kb.ingest's stream, progress shown as it comes (each result printed with --json), and
    the request's error if it failed: the results that came before it are still summarised."""
    from jsonl_engine.client import RequestError

    results: list[dict[str, Any]] = []
    error: RequestError | None = None
    try:
        for event in client.stream("kb.ingest", params):
            if event["event"] == "progress" and progress is not None:
                progress.event(event["data"])
            elif event["event"] == "result":
                results.append(event["data"])
                if as_json:
                    _print_json(event["data"])
    except RequestError as exc:
        error = exc
    finally:
        if progress is not None:
            progress.close()
    return results, error


def next_step(error: dict[str, Any]) -> str | None:
    """What a user can do about a file that could not be ingested, by the error's reason."""
    reason = error.get("reason")
    if "install" in (error.get("message") or ""):  # the daemon's message says what to do already
        return None
    if reason == "needs_ocr":
        return "install Tesseract and the [ocr] extra (README: Scanned PDFs), then ingest it again"
    if reason == "no_text":
        return ("no text could be read from it (pages of pictures, or a scan too faint for OCR): check it in a "
                "viewer; a clearer scan, or a copy with a text layer, can be ingested")
    if reason == "encrypted":
        return "it is password-protected: save an unprotected copy, then ingest that"
    if reason in ("corrupt", "not_pdf", "crashed"):
        return "the file is damaged or not what its name says: open it in a viewer, or ingest another copy"
    if reason == "unknown_type":
        from jsonl_engine.ingest.parsers import SUPPORTED

        return f"supported file types: {SUPPORTED}"
    if reason == "too_large":
        return "split it into smaller files"
    if error.get("code") == "not_found":
        return "check the path"
    return None


def ingest_rows(results: list[dict[str, Any]]) -> list[list[str]]:
    """The summary table: outcome, pages, sections, document, path, note."""
    rows = []
    for r in results:
        outcome = "failed" if r.get("error") else "skipped" if r.get("skipped") else "added"
        note = (r["error"] or {}).get("message", "") if r.get("error") else r.get("reason") or ""
        rows.append([outcome, str(r.get("pages", 0)), str(r.get("sections", 0)),
                     r.get("title") or os.path.basename(r.get("path") or ""), shown_path(r.get("path")), note])
    return rows


def _ingest_summary(results: list[dict[str, Any]]) -> None:
    rows = ingest_rows(results)
    counts = {k: sum(r[0] == k for r in rows) for k in ("added", "skipped", "failed")}
    header = ["outcome", "pages", "sections", "document", "path", "note"]
    if not any(r[5] for r in rows):  # no note to show: the room goes to titles and paths
        header, rows = header[:5], [r[:5] for r in rows]
    _table(header, rows, right={1, 2}, shrink={3: "end", 4: "start", 5: "end"}, first=5)  # failures: on stderr
    _say(f"{counts['added']} added, {counts['skipped']} skipped, {counts['failed']} failed")


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


class StreamWrap:
    """Text that arrives in pieces (streamed deltas), wrapped at spaces within `width` columns as it arrives: a
    word is written once it is complete (a word longer than the width gets a line of its own)."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.column = 0
        self.word = ""
        self.space = False

    def feed(self, text: str) -> str:
        out = []
        for ch in text:
            if ch == "\n":
                out += [self._word(), "\n"]
                self.column, self.space = 0, False
            elif ch == " ":
                out.append(self._word())
                self.space = True
            else:
                self.word += ch
        return "".join(out)

    def finish(self) -> str:
        return self._word()

    def _word(self) -> str:
        word, self.word = self.word, ""
        if not word:
            return ""
        sep = " " if self.space and self.column else ""
        self.space = False
        if self.column and self.column + len(sep) + len(word) > self.width:
            self.column = len(word)
            return "\n" + word
        self.column += len(sep) + len(word)
        return sep + word


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


def _ask(client: Any, args: argparse.Namespace, _params: Any, _holder: dict[str, Any]) -> int:
    method, params = _ask_request(client, args)
    if args.render:
        try:
            os.makedirs(args.render, exist_ok=True)
        except OSError as exc:
            _fail("ask", f"cannot write pictures into {args.render}: {exc.strerror or exc}")
            return 1
    renumber = Renumber()
    wrap = StreamWrap(width())
    result, streamed = _ask_stream(client, method, params, renumber, wrap, show=not args.json)
    cites = citations(method, result)
    empty = not cites and not (client.call("kb.documents", {}).get("documents"))
    if empty:
        _fail("ask", empty_kb_hint(args))
    if args.json:
        _print_json(result)
        return 1 if empty else 0
    if empty:  # the hint says it all
        return 1
    _say_answer(method, result, cites, renumber, wrap, streamed)
    _say_notes(method, result)
    _say_citations(client, args, numbered(renumber, cites))
    return 0


def _ask_request(client: Any, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The method and params that answer the question: kb.answer when a reader is asked for or configured
    (streamed unless --json), else kb.synthesize."""
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
    return method, params


def _ask_stream(client: Any, method: str, params: dict[str, Any], renumber: Renumber, wrap: StreamWrap, *,
                show: bool) -> tuple[dict[str, Any], bool]:
    """The request's result, and whether deltas of its answer were shown (`show`) as they came."""
    streamed = False
    result: dict[str, Any] | None = None
    for event in client.stream(method, params):
        if event["event"] == "delta" and show:
            OUT.write(wrap.feed(renumber.feed(event["data"].get("text", ""))))
            OUT.flush()
            streamed = True
        elif event["event"] == "result":
            result = event["data"]
    assert result is not None
    return result, streamed


def _say_answer(method: str, result: dict[str, Any], cites: list[dict[str, Any]], renumber: Renumber,
                wrap: StreamWrap, streamed: bool) -> None:
    """The answer with its markers numbered: what a streamed answer still holds back, or the whole answer
    (or why there is none)."""
    if streamed:
        _say(wrap.feed(renumber.finish()) + wrap.finish())
        return
    renumber.known = {c["marker"] for c in cites}
    answer = renumber.feed(result.get("answer") or "") + renumber.finish()
    nothing = ("(no answer: the first line does not fit in --max-chars; raise it)"
               if method == "kb.synthesize" and result["_meta"].get("truncated")
               else "(no answer: nothing in the KB matched)")
    _say(_wrap(answer) if answer else nothing)


def _say_notes(method: str, result: dict[str, Any]) -> None:
    """What the answer lacks: the question's terms not found and the claims left out (kb.synthesize), an
    error that cut the answer (kb.answer, on stderr)."""
    if method == "kb.synthesize" and result.get("gaps"):
        _say(_wrap(f"not found: {', '.join(result['gaps'])}"))
    if method == "kb.synthesize" and result["_meta"].get("more"):
        _say(f"({result['_meta']['more']} more claims: --max-claims)")
    if method == "kb.answer" and result.get("error"):
        _fail("ask", f"the answer is incomplete: {result['error'].get('message')}")


def _say_citations(client: Any, args: argparse.Namespace, listed: list[tuple[int, dict[str, Any]]]) -> None:
    """The numbered citations after a blank line, each with its pictures (--render)."""
    if listed:
        _say()
    for n, c in listed:
        quote = " ".join(c["quote"].split())
        _say(_wrap(f"[{n}] {c['document_title']}, p. {c['page']}: \"{quote}\"", indent="    "))
        if args.render:
            for line in render_citation(client, n, c, args.render, args.scale):
                _say(f"    {line}")


def render_citation(client: Any, n: int, c: dict[str, Any], folder: str, scale: float) -> list[str]:
    """kb.render of each page the citation's quote spans, cropped around its boxes, written into `folder` as
    `cite<n>-p<page>.png`: a line per page, the PNG's path, or why there is no picture."""
    import base64

    if c.get("boxes_status") != "ok":
        return [f"(no picture: {c.get('boxes_status') or 'no boxes'})"]
    lines = []
    for where in c["pages"]:
        out = client.call("kb.render", {"document_id": c["document_id"], "page": where["page"],
                                        "start": where["start"], "end": where["end"], "crop": True,
                                        "scale": scale, "output": "base64"})
        path = os.path.abspath(os.path.join(folder, f"cite{n}-p{where['page']}.png"))
        ok = _write_file("ask", path, base64.b64decode(out["data"]))
        lines.append(path if ok else f"(no picture: cannot write {path})")
    return lines


# ---- docs, outline, read, call ----------------------------------------------------------------------------


def _docs(client: Any, args: argparse.Namespace, _params: Any, _holder: dict[str, Any]) -> int:
    data = client.call("kb.documents", {})
    if not data["documents"]:
        _fail("docs", empty_kb_hint(args))
    if args.json:
        _print_json(data)
        return 0
    if not data["documents"]:
        return 0
    rows = [[d["document_id"], (d.get("card") or {}).get("kind") or _kind_of(d["media_type"]), str(d["pages"]),
             d["status"], d["title"], shown_path(d.get("path")) or "(inline text)"] for d in data["documents"]]
    _table(["id", "kind", "pages", "status", "title", "path"], rows, right={2},
           shrink={1: "end", 4: "end", 5: "start"})
    return 0


def _kind_of(media_type: str) -> str:
    """A document's kind when its card names none: its file type."""
    return {"application/pdf": "pdf", "text/markdown": "markdown", "text/plain": "text"}.get(media_type, media_type)


def _outline(client: Any, args: argparse.Namespace, _params: Any, _holder: dict[str, Any]) -> int:
    data = client.call("kb.outline", {"document_id": args.document_id})
    if args.json:
        _print_json(data)
        return 0
    _say(cut(data["title"], width()))

    def walk(sections: list[dict[str, Any]], depth: int) -> None:
        for s in sections:
            pages = f"p. {s['page_start']}" + (f"-{s['page_end']}" if s["page_end"] != s["page_start"] else "")
            tail = f"  ({pages})  {s['section_id']}"
            indent = "  " * depth
            _say(f"{indent}{cut(s['title'], max(MIN_CELL, width() - len(indent) - len(tail)))}{tail}")
            walk(s.get("children") or [], depth + 1)

    walk(data["sections"], 1)
    return 0


def _read(client: Any, args: argparse.Namespace, _params: Any, _holder: dict[str, Any]) -> int:
    params = {"document_id": args.id, "page": args.page} if args.page is not None else {"section_id": args.id}
    data = client.call("kb.read", params)
    if args.json:
        _print_json(data)
        return 0
    OUT.write(data["text"] + ("" if data["text"].endswith("\n") else "\n"))
    return 0


def _render(client: Any, args: argparse.Namespace, _params: Any, _holder: dict[str, Any]) -> int:
    params: dict[str, Any] = {"document_id": args.id, "page": args.page, "scale": args.scale, "crop": args.crop,
                              "output": "base64" if args.output else "file"}
    if args.start is not None:
        params.update(start=args.start, end=args.end)
    data = client.call("kb.render", params)
    path = data["path"]
    if args.output:
        import base64

        path = os.path.abspath(args.output)
        if not _write_file("render", args.output, base64.b64decode(data["data"])):
            return 1
        data = {**data, "data": None, "path": path}
    if args.json:
        _print_json(data)
        return 0
    _say(path)
    return 0


def _call(client: Any, args: argparse.Namespace, params: Any, _holder: dict[str, Any]) -> int:
    """Every event as a JSON line (`--json` changes nothing: the output is JSON already)."""
    from jsonl_engine.client import RequestError

    stream = client.stream(args.method, params)
    code = 0
    try:
        for event in stream:
            _print_json(event)
    except RequestError as exc:
        _print_json({"id": stream.id, "event": "error",
                     "error": {"code": exc.code, "message": exc.message, "data": exc.data}})
        _fail("call", f"{exc.code}: {exc.message}")
        code = 1
    if stream.done is not None:
        _print_json(stream.done)
    return code


_COMMANDS = {"ingest": _ingest, "ask": _ask, "docs": _docs, "outline": _outline, "read": _read, "render": _render,
             "call": _call}
