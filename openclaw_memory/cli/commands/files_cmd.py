"""``openclaw-memory files``: list the memory files."""


from ... import api
from ..output import print_json, warn


def run_files(settings, json_out: bool) -> int:
    result = api.list_memory_files(settings)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
        return 0
    if not result.files:
        print(f"No memory files in {result.workspace} (agent {result.agent}).")
    for f in result.files:
        print(f"{f.path}\t{f.source}\t{f.kind}\t{f.size}")
    for s in result.skipped:
        print(f"skipped: {s.path} ({s.reason})")
    return 0


def register(app) -> None:
    import typer

    from ..context import settings_from

    @app.command("files")
    def files(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> int:
        """List the memory files: MEMORY.md, the dream diary, memory/**/*.md, extra paths."""
        return run_files(settings_from(ctx), json_out)
