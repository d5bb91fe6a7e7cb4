"""Command line: `jsonl-engine [serve] [--kb DIR] [--config FILE]`, `jsonl-engine schemas --write|--check`, and the
one-shot commands of cli_oneshot.py (ingest, ask, docs, outline, read, call, mcp)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from jsonl_engine import __version__, cli_oneshot


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="jsonl-engine", description=(
        "Document knowledge base served as a JSON-lines daemon: requests on stdin, events on stdout."))
    parser.add_argument("--version", action="version", version=f"jsonl-engine {__version__}")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the daemon (the default)")
    for p in (parser, serve):
        p.add_argument("--kb", metavar="DIR", help="KB directory (default $JSONL_ENGINE_KB or ./.jsonl-engine)")
        p.add_argument("--config", metavar="FILE", help="TOML configuration file")
        p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                       help="import MODULE to register extra methods (repeatable)")
        p.add_argument("--log-level", default=None, help="stderr log level (default $JSONL_ENGINE_LOG_LEVEL or WARNING)")
    schemas = sub.add_parser("schemas", help="write or check schemas/ and capabilities.json")
    group = schemas.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true")
    group.add_argument("--check", action="store_true")
    schemas.add_argument("--root", default=".", help="project root holding schemas/ (default .)")
    cli_oneshot.add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "schemas":
        return _schemas(args)
    if args.command in cli_oneshot.COMMANDS:
        return cli_oneshot.run(args)
    return _serve(args)


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
    from jsonl_engine.wire.framing import claim_stdout

    protocol_fd = claim_stdout()
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
    code = run(App(settings, handlers), handlers, protocol_fd)
    sys.stderr.flush()
    os._exit(code)  # handler threads may still run cancelled work; the KB is transactional
