"""A fast path for the commands agents call at every turn: ``files``, ``read``, ``prompt``.

Importing typer costs 100-150 ms on this project's machines, which alone spends the
150 ms start-up budget of these commands. When the command line is one of them and
parses cleanly with the standard library, it runs here, through the same ``run_*``
handlers as the typer commands; anything else (help, a typo, another command) goes
to typer, which owns every message about usage. tests/test_cli_fast.py checks that
both paths give the same results.
"""

from __future__ import annotations

import argparse

FAST_COMMANDS = ("files", "read", "prompt")


class _NoExit(argparse.ArgumentParser):
    def error(self, message):  # argparse would print and exit; typer reports it instead
        raise ValueError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _NoExit(add_help=False, allow_abbrev=False)
    parser.add_argument("-w", "--workspace")
    parser.add_argument("--agent")
    parser.add_argument("--state-dir")
    parser.add_argument("--extra", action="append", default=[])
    parser.add_argument("--multimodal", action="store_const", const=True, default=None)
    parser.add_argument("--no-multimodal", dest="multimodal", action="store_const", const=False)
    parser.add_argument("--qdrant-url")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_NoExit)
    files = sub.add_parser("files", add_help=False, allow_abbrev=False)
    files.add_argument("--json", action="store_true")
    read = sub.add_parser("read", add_help=False, allow_abbrev=False)
    read.add_argument("path")
    read.add_argument("--from", dest="from_line", type=int, default=1)
    read.add_argument("--lines", type=int)
    read.add_argument("--max-chars", type=int)
    read.add_argument("--json", action="store_true")
    read.add_argument("--diff", action="store_true")
    prompt = sub.add_parser("prompt", add_help=False, allow_abbrev=False)
    prompt.add_argument("--date")
    prompt.add_argument("--peek", action="store_true")
    prompt.add_argument("--json", action="store_true")
    return parser


def parse_fast(args: list[str]) -> argparse.Namespace | None:
    """The parsed command line, or None when typer must handle it."""
    if not any(a in FAST_COMMANDS for a in args) or any(a in ("--help", "-h") for a in args):
        return None
    try:
        return _parser().parse_args(args)
    except (ValueError, SystemExit):
        return None


def run_fast(ns: argparse.Namespace) -> int:
    from ..settings import Overrides, resolve_settings

    settings = resolve_settings(
        Overrides(
            workspace=ns.workspace or None,
            agent=ns.agent or None,
            state_dir=ns.state_dir or None,
            extra=tuple(ns.extra),
            multimodal=ns.multimodal,
            qdrant_url=ns.qdrant_url or None,
        )
    )
    if ns.command == "files":
        from .commands.files_cmd import run_files

        return run_files(settings, ns.json)
    if ns.command == "read":
        from .commands.read_cmd import run_read

        return run_read(settings, ns.path, ns.from_line, ns.lines, ns.max_chars, ns.json, ns.diff)
    from .commands.prompt_cmd import run_prompt

    return run_prompt(settings, ns.date, ns.peek, ns.json)
