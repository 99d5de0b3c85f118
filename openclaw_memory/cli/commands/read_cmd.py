"""``openclaw-memory read``: a paged read of one memory file (``memory_get``)."""


import sys
from typing import Optional

from ... import api
from ..output import print_json, warn


def run_read(settings, path: str, from_line: int, lines: Optional[int], max_chars: Optional[int], json_out: bool,
             diff: bool = False) -> int:
    from ...files.citation import parse_citation

    citation = parse_citation(path)
    if citation is not None:  # a search result's citation: its lines, unless --from/--lines say otherwise
        path = citation.path
        from_line, lines = (citation.from_line if from_line == 1 else from_line), (citation.lines if lines is None else lines)
    if diff:
        return _run_diff(settings, path, from_line, lines, max_chars, json_out)
    result = api.read_memory(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    elif result.text:
        sys.stdout.write(result.text if result.text.endswith("\n") else result.text + "\n")
    elif result.missing:
        warn(f"{result.path} does not exist")
    return 0


def _run_diff(settings, path: str, from_line: int, lines: Optional[int], max_chars: Optional[int], json_out: bool) -> int:
    result = api.read_memory_diff(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    elif result.mode == "diff":
        sys.stdout.write(result.diff)
    elif result.mode == "unchanged":
        sys.stderr.write(f"{result.path}: unchanged since your last read (version {result.version[:12]})\n")
    elif result.mode == "full":
        sys.stderr.write(f"{result.path}: no earlier version to compare with ({result.reason}); the file follows\n")
        text = result.read.text
        if text:
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        warn(f"{result.path} does not exist")
    return 0


def register(app) -> None:
    import typer

    from ..context import settings_from

    @app.command("read")
    def read(
        ctx: typer.Context,
        path: str = typer.Argument(..., help="Memory file, relative to the workspace (or inside an extra path), or a search citation (PATH#L10-L24)."),
        from_line: int = typer.Option(1, "--from", help="First line to return (1-based)."),
        lines: Optional[int] = typer.Option(None, "--lines", help="How many lines (default 120)."),
        max_chars: Optional[int] = typer.Option(None, "--max-chars", help="Character budget (default 12000)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON (OpenClaw's memory_get result)."),
        diff: bool = typer.Option(False, "--diff", help="Show what changed since this agent's last read (whole file, unified diff)."),
    ) -> int:
        """Read a window of a memory file by lines and characters."""
        return run_read(settings_from(ctx), path, from_line, lines, max_chars, json_out, diff)
