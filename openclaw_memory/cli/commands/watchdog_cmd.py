"""``openclaw-memory watchdog snapshot|verify|heartbeat``: notice workspace changes made behind the agent's back."""

from __future__ import annotations

from ..output import print_json, warn


def _print_delta(result) -> None:
    from ...watchdog.verify import display

    for c in result.changed:
        suffix = "" if c.new_hash else "  (unreadable, a folder, or still changing)"
        print(f"changed: {display(c.path)}{suffix}")
    for p in result.deleted:
        print(f"deleted: {display(p)}")
    for p in result.new:
        print(f"new:     {display(p)}")


def run_snapshot(settings, label: str | None, json_out: bool) -> int:
    from ...watchdog.snapshot import take_snapshot

    info = take_snapshot(settings, label)
    for message in info.warnings:
        warn(message)
    if json_out:
        print_json(info.to_json())
    else:
        print(f"snapshot {info.label}: {info.entries} entries ({info.rehashed} hashed now, {info.racy} racy, {info.unhashed} without hash)")
    return 0


def run_verify(settings, json_out: bool) -> int:
    from ...watchdog.verify import verify_workspace

    result = verify_workspace(settings)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    else:
        _print_delta(result)
        print(f"{result.break_count} break(s) since snapshot {result.baseline} ({len(result.new)} new file(s), not counted)")
    return 0 if result.break_count == 0 else 1


def run_heartbeat(settings, json_out: bool) -> int:
    from ...watchdog.heartbeat import OK
    from ...watchdog.heartbeat import heartbeat as run_heartbeat

    result = run_heartbeat(settings)
    for message in result.warnings:
        warn(message)
    if json_out:
        print_json(result.to_json())
    elif result.status == OK:
        print(OK)
    else:
        verify_result = result.verify
        assert verify_result is not None  # only a heartbeat that took the first snapshot has none, and it is OK
        print(f"⚠️ Workspace changed since snapshot {verify_result.baseline}: {verify_result.break_count} break(s)")
        _print_delta(verify_result)
        print(f"checkpoint: {result.checkpoint} (the next `openclaw-memory prompt` includes it once)")
        print(f"new baseline: {result.snapshot.label}")
    return 0 if result.status == OK else 1
