"""``openclaw-memory watchdog snapshot|verify|heartbeat``: notice workspace changes made behind the agent's back."""

from __future__ import annotations

from typing import Optional

import typer

from ..context import settings_from
from ..output import print_json, warn

watchdog_app = typer.Typer(
    help="Snapshot the workspace and report what changed since (changed, deleted, new files).",
    no_args_is_help=True,
)


def _print_delta(result) -> None:
    from ...watchdog.verify import display

    for c in result.changed:
        suffix = "" if c.new_hash else "  (unreadable, a folder, or still changing)"
        print(f"changed: {display(c.path)}{suffix}")
    for p in result.deleted:
        print(f"deleted: {display(p)}")
    for p in result.new:
        print(f"new:     {display(p)}")


@watchdog_app.command("snapshot")
def snapshot(
    ctx: typer.Context,
    label: Optional[str] = typer.Argument(None, help="Name for this snapshot (letters, digits, . _ -; default: a UTC timestamp)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> int:
    """Record every workspace file (type, stat, content hash); the newest snapshot is the baseline."""
    from ...watchdog.snapshot import take_snapshot

    info = take_snapshot(settings_from(ctx), label)
    for message in info.warnings:
        warn(message)
    if json_out:
        print_json(info.to_json())
    else:
        print(f"snapshot {info.label}: {info.entries} entries ({info.rehashed} hashed now, {info.racy} racy, {info.unhashed} without hash)")
    return 0


@watchdog_app.command("verify")
def verify(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> int:
    """Compare the workspace with the baseline. Exit 0: no break; 1: files changed or deleted; 2: no baseline."""
    from ...watchdog.verify import verify_workspace

    result = verify_workspace(settings_from(ctx))
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    else:
        _print_delta(result)
        print(f"{result.break_count} break(s) since snapshot {result.baseline} ({len(result.new)} new file(s), not counted)")
    return 0 if result.break_count == 0 else 1


@watchdog_app.command("heartbeat")
def heartbeat(ctx: typer.Context, json_out: bool = typer.Option(False, "--json", help="Print JSON.")) -> int:
    """Verify, then take a timestamped snapshot. Clean: prints HEARTBEAT_OK. Break: lists the changes, writes a checkpoint."""
    from ...watchdog.heartbeat import OK, heartbeat as run_heartbeat

    result = run_heartbeat(settings_from(ctx))
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    elif result.status == OK:
        print(OK)
    else:
        verify_result = result.verify
        print(f"⚠️ Workspace changed since snapshot {verify_result.baseline}: {verify_result.break_count} break(s)")
        _print_delta(verify_result)
        print(f"checkpoint: {result.checkpoint} (the next `openclaw-memory prompt` includes it once)")
        print(f"new baseline: {result.snapshot.label}")
    return 0 if result.status == OK else 1


def register(app: typer.Typer) -> None:
    app.add_typer(watchdog_app, name="watchdog")
