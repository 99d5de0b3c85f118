"""``history``, ``restore`` and ``state``: versions of memory files and what this agent has seen."""


from ... import api
from ..output import print_json, warn


def run_history(settings, path: str, json_out: bool) -> int:
    result = api.file_history(settings, path)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
        return 0
    data = result.to_json()
    if not data["versions"]:
        print(f"{result.path} does not exist and has no history.")
    for v in data["versions"]:
        marks = [m for m, on in (("current", v["current"]), ("evicted", not v["available"])) if on]
        who = f" by {v['agent']}" if v["agent"] else ""
        tail = f"  [{', '.join(marks)}]" if marks else ""
        print(f"{v['version'][:12]}  {v['time']}  {v['size']:>9} B  {v['origin']}{who}{tail}")
    return 0


def run_restore(settings, path: str, version: str, no_index: bool, json_out: bool) -> int:
    result = api.restore(settings, path, version, update_index=not no_index)
    index = result.index or {}
    if not index.get("updated") and str(index.get("reason", "")).startswith("index not updated"):
        warn(index["reason"])
    if json_out:
        print_json(result.to_json())
    elif not result.changed:
        print(f"{result.path} is already at version {result.version[:12]}; nothing to restore.")
    else:
        head = f"restored {result.path} to version {result.version[:12]} ({result.size} bytes)"
        if result.previous:
            print(f"{head}; it was at {result.previous[:12]}, which `openclaw-memory restore` can bring back.")
        else:
            print(f"{head}; the file did not exist, so it was recreated.")
    return 0


def run_state(settings, json_out: bool) -> int:
    report = api.file_states(settings)
    for message in report.warnings:
        warn(message)
    if json_out:
        print_json(report.to_json())
        return 0
    if not report.files:
        print(f"No memory files in {report.workspace} (agent {report.agent}).")
    for f in report.files:
        gone = "  (deleted)" if f.version is None else ""
        print(f"{f.state:<18} {f.path}{gone}")
    return 0


def register(app) -> None:
    import typer

    from ..context import settings_from

    @app.command("history")
    def history(
        ctx: typer.Context,
        path: str = typer.Argument(..., help="Memory file, relative to the workspace (or inside an extra path)."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> int:
        """List the versions of a memory file kept in the history, newest first."""
        return run_history(settings_from(ctx), path, json_out)

    @app.command("restore")
    def restore(
        ctx: typer.Context,
        path: str = typer.Argument(..., help="Memory file to restore."),
        version: str = typer.Argument(..., help="The version to bring back (a unique prefix of 8+ hex characters)."),
        no_index: bool = typer.Option(False, "--no-index", help="Do not update the search index afterwards."),
        json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    ) -> int:
        """Restore an earlier version atomically; the current one is kept, so this can be undone."""
        return run_restore(settings_from(ctx), path, version, no_index, json_out)

    @app.command("state")
    def state(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> int:
        """Show each memory file's state for this agent: read_fresh, read_stale, discovered_unread, written_unread."""
        return run_state(settings_from(ctx), json_out)
