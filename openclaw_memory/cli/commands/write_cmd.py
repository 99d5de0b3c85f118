"""``openclaw-memory write``: a guarded, atomic write of one memory file."""


import sys
from typing import Optional

from ... import api
from ...errors import UsageError
from ..output import print_json, warn

VERBS = {"append": "appended to", "replace": "wrote"}


def _new_content(replace_file: Optional[str], stdin: bool) -> Optional[bytes]:
    if stdin:
        return sys.stdin.buffer.read()
    if replace_file is None:
        return None
    try:
        with open(replace_file, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read --replace-file {replace_file}: {exc.strerror or exc}") from None


def run_write(settings, path: str, append: Optional[str], replace_file: Optional[str], stdin: bool,
              expect: Optional[str], no_index: bool, json_out: bool) -> int:
    if sum((append is not None, replace_file is not None, stdin)) != 1:
        raise UsageError("give exactly one of --append TEXT, --replace-file FILE or --stdin")
    result = api.write_memory(
        settings, path, content=_new_content(replace_file, stdin), append=append, expect=expect, update_index=not no_index
    )
    index = result.index or {}
    if not index.get("updated") and str(index.get("reason", "")).startswith("index not updated"):
        warn(index["reason"])
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
        return 0
    verb = "created" if result.created else VERBS[result.action]
    print(f"{verb} {result.path}: version {result.version[:12]} ({result.size} bytes)")
    return 0


def register(app) -> None:
    import typer

    from ..context import settings_from

    @app.command("write")
    def write(
        ctx: typer.Context,
        path: str = typer.Argument(..., help="Memory file, relative to the workspace (or inside an extra path)."),
        append: Optional[str] = typer.Option(None, "--append", help="Add TEXT on its own line at the end of the file."),
        replace_file: Optional[str] = typer.Option(None, "--replace-file", help="Replace the whole file with this file's bytes."),
        stdin: bool = typer.Option(False, "--stdin", help="Replace the whole file with standard input."),
        expect: Optional[str] = typer.Option(None, "--expect", help="Write only if the file is at this version (prefix of 8+ hex characters)."),
        no_index: bool = typer.Option(False, "--no-index", help="Do not update the search index afterwards."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> int:
        """Write a memory file atomically, blocked (exit 3) if it changed since this agent read it."""
        return run_write(settings_from(ctx), path, append, replace_file, stdin, expect, no_index, json_out)
