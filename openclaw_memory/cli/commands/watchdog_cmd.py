"""``openclaw-memory watchdog snapshot|verify|heartbeat``: notice workspace changes made behind the agent's back."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import StateDamaged, UsageError, shell_word
from ...memory import open_memory
from ...settings import command_line
from ..output import printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def _print_delta(result) -> None:
    for c in result.changed:
        suffix = "" if c.new_hash else "  (unreadable, a folder, or still changing)"
        print(f"changed: {printable(c.path)}{suffix}")
    for p in result.deleted:
        print(f"deleted: {printable(p)}")
    for p in result.new:
        print(f"new:     {printable(p)}")


def _print_git(result) -> None:
    """The memory files git has not committed, or ignores, per root in a work tree."""
    for changes in result.git:
        for what, paths in (("modified", changes.modified), ("staged", changes.staged),
                            ("untracked", changes.untracked)):
            for p in paths:
                print(f"git {what}: {printable(p)}  (in {printable(changes.root)})")
        for p in changes.ignored:
            print(f"git ignored: {printable(p)}  (in {printable(changes.root)}: never backed up by the repository)")


def run_snapshot(settings: Settings, label: str | None, json_out: bool) -> int:
    info = open_memory(settings, notice=warn, shard_idle_s=0).snapshot(label)
    if not reported(info, json_out):
        print(f"snapshot {info.label}: {info.entries} entries ({info.rehashed} hashed now, {info.racy} racy, {info.unhashed} without hash)")
    return 0


def _no_usable_baseline(exc: StateDamaged) -> UsageError:
    """Exit 1 of verify and heartbeat is a break: a damaged state database (every other command's
    exit 1) is no baseline to compare with, exit 2 as a damaged snapshot, so that a script never
    reads it as files changed behind the agent's back."""
    return UsageError(exc.message)


def run_verify(settings: Settings, json_out: bool) -> int:
    try:
        result = open_memory(settings, notice=warn, shard_idle_s=0).verify()
    except StateDamaged as exc:
        raise _no_usable_baseline(exc) from None
    if not reported(result, json_out):
        _print_delta(result)
        _print_git(result)
        print(f"{result.break_count} break(s) since snapshot {result.baseline} ({len(result.new)} new file(s), not counted)")
    return 0 if result.break_count == 0 else 1


def run_heartbeat(settings: Settings, json_out: bool) -> int:
    try:
        result = open_memory(settings, notice=warn, shard_idle_s=0).heartbeat()
    except StateDamaged as exc:
        raise _no_usable_baseline(exc) from None
    if reported(result, json_out):
        pass
    elif result.ok:
        print(result.status)
    else:
        verify_result = result.verify
        assert verify_result is not None  # only a heartbeat that took the first snapshot has none, and it is OK
        print(f"⚠️ Workspace changed since snapshot {verify_result.baseline}: {verify_result.break_count} break(s)")
        _print_delta(verify_result)
        # The agent named always: only its prompt shows the section, and with no --agent the prompt a
        # cron line runs later acts for openclaw.json's default agent then, which may be another by then.
        agent = "" if "--agent" in settings.command_flags else f" --agent {shell_word(settings.agent)}"
        print(f"checkpoint: saved in {result.checkpoint} (the next `{command_line(settings)}{agent} prompt` includes it once)")
        print(f"new baseline: {result.snapshot}")
    return 0 if result.ok else 1
