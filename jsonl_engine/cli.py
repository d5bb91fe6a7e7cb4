"""Command line: `jsonl-engine [serve] [--kb DIR] [--config FILE]`, `jsonl-engine schemas --write|--check`, and the
one-shot commands of cli_oneshot.py (ingest, ask, docs, outline, read, render, call, mcp).

The global options (`--kb`, `--config`, `--log-level`, `--plugin`) are accepted before or after the command
(`jsonl-engine --kb DIR docs` and `jsonl-engine docs --kb DIR` are the same); given on both sides with different
values they are refused, never silently dropped.
"""

from __future__ import annotations

from jsonl_engine.wire import parent  # isort: skip - first: records the parent before anything else runs

import argparse
import contextlib
import gc
import logging
import os
import sys
from pathlib import Path

from jsonl_engine import __version__

GLOBALS = ("kb", "config", "log_level")
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
AFTER = "_after"  # suffix of the dest of a global option given after the command

TOP_EPILOG = """\
ARGUMENTS
  PATH      a file or a folder (folders are searched recursively)
  question  what to ask, in quotes: "What was revenue in 2022?"
  LEVEL     the daemon's log level on stderr: DEBUG, INFO, WARNING, ERROR

ENVIRONMENT
  JSONL_ENGINE_KB         the KB without --kb (default ./.jsonl-engine)
  JSONL_ENGINE_CONFIG     the TOML file without --config
  JSONL_ENGINE_LOG_LEVEL  LEVEL without --log-level (default WARNING)
  NO_COLOR, TERM=dumb     plain output: no colours, bars or other escape codes

EXIT CODES
  0  ok        1  an error (on stderr)       2  bad usage
  3  ingest: some files could not be read (the rest went in; listed on stderr)
  130  interrupted (Ctrl-C)

EXAMPLES
  $ jsonl-engine ingest --sample
  $ jsonl-engine ask "How tall is the Tern Point lighthouse?"
  $ jsonl-engine --kb ~/kb ingest ~/Documents/reports
  $ jsonl-engine docs --kb ~/kb
  $ echo '{"id":1,"method":"kb.documents"}' | jsonl-engine --kb ~/kb

LEARN MORE
  `jsonl-engine COMMAND --help` for a command; README.md and PROTOCOL.md for
  the daemon's protocol (the default command, for programs and editors).
"""

SERVE_EPILOG = """\
The daemon reads one JSON request per line on stdin and writes events on
stdout (PROTOCOL.md); EOF on stdin finishes the requests read, then exits 0.

EXAMPLES
  $ echo '{"id":1,"method":"capabilities"}' | jsonl-engine
  $ jsonl-engine serve --kb ~/kb --log-level INFO
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help at the terminal's width, never wider than 80 columns; descriptions and epilogs as
    written (they are written to fit 80 columns)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=min(80, _columns()), max_help_position=28)


def _columns() -> int:
    """The terminal's width as shutil.get_terminal_size gives it (COLUMNS, else stdout's terminal, else 80), without
    importing shutil and the compression modules with it: argparse builds a formatter at each add_argument."""
    with contextlib.suppress(ValueError):
        if (columns := int(os.environ.get("COLUMNS", ""))) > 0:
            return columns
    with contextlib.suppress(AttributeError, ValueError, OSError):
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or 80
    return 80


def add_globals(parser: argparse.ArgumentParser, after: bool) -> None:
    """The global options, on the top-level parser (`after` False) or a command's (True: stored under their own
    names so that a value given before the command is neither lost nor silently overridden)."""
    default = argparse.SUPPRESS if after else None
    suffix = AFTER if after else ""
    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--kb", metavar="DIR", dest="kb" + suffix, default=default,
                       help="the KB: a directory, or a postgresql:// URL (default $JSONL_ENGINE_KB or "
                            "./.jsonl-engine)")
    group.add_argument("--config", metavar="FILE", dest="config" + suffix, default=default,
                       help="TOML configuration file (default $JSONL_ENGINE_CONFIG)")
    group.add_argument("--log-level", metavar="LEVEL", dest="log_level" + suffix, type=_level, default=default,
                       help="the daemon's log level on stderr (default $JSONL_ENGINE_LOG_LEVEL or WARNING)")
    group.add_argument("--plugin", action="append", metavar="MODULE", dest="plugin" + suffix,
                       default=default, help="import MODULE to register extra methods (repeatable)")


def _level(value: str) -> str:
    if value.upper() not in LEVELS:
        raise argparse.ArgumentTypeError(f"{value!r} is not a log level ({', '.join(LEVELS)})")
    return value.upper()


def _parser(commands: bool = True) -> argparse.ArgumentParser:
    """The command line's parser; without `commands` only the daemon's (`serve`): the one-shot commands' module
    is not imported to start the daemon."""
    parser = argparse.ArgumentParser(
        prog="jsonl-engine", formatter_class=HelpFormatter, epilog=TOP_EPILOG,
        description="A document knowledge base that answers with checkable citations.\n\n"
                    "With no command: the daemon (JSON requests on stdin, events on stdout).\n"
                    "The commands below start it, send their requests, print and exit.")
    parser.add_argument("--version", action="version", version=f"jsonl-engine {__version__}")
    add_globals(parser, after=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    serve = sub.add_parser("serve", help="run the daemon (the default)", formatter_class=HelpFormatter,
                           description="Run the daemon on the KB.", epilog=SERVE_EPILOG)
    add_globals(serve, after=True)
    schemas = sub.add_parser("schemas", help="write or check schemas/ and capabilities.json",
                             formatter_class=HelpFormatter, description="Write or check schemas/ and "
                             "capabilities.json (development).",
                             epilog="EXAMPLES\n  $ jsonl-engine schemas --check\n  $ jsonl-engine schemas --write\n")
    group = schemas.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    schemas.add_argument("--root", default=".", help="project root holding schemas/ (default .)")
    if commands:
        from jsonl_engine import cli_oneshot

        cli_oneshot.add_commands(sub, HelpFormatter, add_globals)
    return parser


_VALUED = frozenset(("--kb", "--config", "--log-level", "--plugin"))  # global options followed by their value


def _daemon_only(argv: list[str]) -> bool:
    """Whether the command line starts the daemon (no command, or `serve`) and asks for no help or version."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED:
            skip = True
        elif arg in ("-h", "--help", "--version"):
            return False
        elif not arg.startswith("-"):
            return arg == "serve"
    return True


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse, then merge each global option given after the command into its name (an error when it was also
    given before the command with another value)."""
    argv = sys.argv[1:] if argv is None else argv
    parser = _parser(commands=not _daemon_only(argv))
    args = parser.parse_args(argv)
    for name in GLOBALS:
        if hasattr(args, name + AFTER):
            after = getattr(args, name + AFTER)
            delattr(args, name + AFTER)
            before = getattr(args, name, None)
            if before is not None and before != after:
                parser.error(f"--{name.replace('_', '-')} given twice, before and after the command "
                             f"({before} and {after}): give it once")
            setattr(args, name, after)
    args.plugin = [*(args.plugin or []), *(getattr(args, "plugin" + AFTER, None) or [])]
    if hasattr(args, "plugin" + AFTER):
        delattr(args, "plugin" + AFTER)
    if args.kb == "":
        parser.error("--kb is empty: give a directory (or a postgresql:// URL)")
    from jsonl_engine.config import env_setting

    if args.log_level is None and (env := env_setting("LOG_LEVEL")):  # else the file's, else WARNING
        try:
            args.log_level = _level(env)
        except argparse.ArgumentTypeError as exc:
            parser.error(f"JSONL_ENGINE_LOG_LEVEL: {exc}")
    return args


def main(argv: list[str] | None = None) -> int:
    # pydantic scans every installed distribution's entry points for its plugins when it builds its first model
    # (a few ms of each start): jsonl-engine loads none unless the variable says otherwise (empty: load them all)
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Start-up makes what the process keeps (modules, classes, models, settings): no collection would free any of
    # it, so none runs until the daemon starts serving (`_serve`) or the command line is parsed.
    gc.disable()
    try:
        args = parse(argv)
        if args.command in (None, "serve"):
            return _serve(args)
    finally:
        gc.enable()
    if args.command == "schemas":
        return _schemas(args)
    from jsonl_engine import cli_oneshot

    return cli_oneshot.run(args)


def _schemas(args: argparse.Namespace) -> int:
    from jsonl_engine import schemagen

    root = Path(args.root)
    if args.write:
        for rel in schemagen.write(root):
            print(f"wrote {rel}")
        return 0
    problems = schemagen.check(root)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print("run `jsonl-engine schemas --write` and commit the result", file=sys.stderr)
        return 1
    print("schemas and capabilities.json are current")
    return 0


def _serve(args: argparse.Namespace) -> int:
    parent.arm()  # a parent dying during start-up ends the daemon (it used to be watched only once serving)
    from jsonl_engine.wire.framing import claim_stdout

    protocol_fd = claim_stdout()
    if sys.stdin is not None and sys.stdin.isatty():  # a person, not a program: say what this is
        print("jsonl-engine: the daemon, reading JSON requests on stdin (one per line; Ctrl-D ends it). "
              "For the commands (ingest, ask, docs...): jsonl-engine --help", file=sys.stderr, flush=True)
    from jsonl_engine.app import App, load_methods
    from jsonl_engine.config import ConfigError, load_settings
    from jsonl_engine.wire.server import run

    try:
        settings = load_settings(args.config, kb_dir=args.kb, log_level=args.log_level)
        logging.basicConfig(stream=sys.stderr, level=settings.log_level.upper(),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        if args.plugin:
            settings = settings.model_copy(update={"plugins": [*settings.plugins, *args.plugin]})
        handlers = load_methods(settings.plugins)
    except ConfigError as exc:
        print(f"jsonl-engine: {exc}", file=sys.stderr)
        return 2
    except ImportError as exc:
        print(f"jsonl-engine: cannot load plugin: {exc}", file=sys.stderr)
        return 2
    app = App(settings, handlers)
    gc.freeze()  # what start-up made stays out of every collection (else the first one would go through it all)
    gc.enable()
    code = run(app, handlers, protocol_fd)
    sys.stderr.flush()
    os._exit(code)  # handler threads may still run cancelled work; the KB is transactional
