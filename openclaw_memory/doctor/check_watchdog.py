"""Check: what changed in the workspace since the watchdog's last snapshot (when there is one)."""

from __future__ import annotations

from ..errors import MemoryToolError, StateDamaged
from .model import CheckContext, Finding

SHOWN = 20  # paths listed in the message; the finding's ``paths`` has them all


def check_watchdog(ctx: CheckContext) -> list[Finding]:
    from ..watchdog.snapshot import has_baseline
    from ..watchdog.store import SnapshotDamaged
    from ..watchdog.verify import display, verify_workspace

    try:
        if not has_baseline(ctx.settings):
            return []
        result = verify_workspace(ctx.settings)
    except (SnapshotDamaged, StateDamaged):
        return []  # reported, with its repair, as watchdog-damaged or state-db-damaged (check_state)
    except (MemoryToolError, OSError) as exc:  # an unreadable snapshot must not hide the other checks
        reason = exc.message if isinstance(exc, MemoryToolError) else f"{exc.strerror or exc} ({exc.filename})"
        return [Finding("watchdog-unavailable", "warning", f"The watchdog baseline cannot be used: {reason}", False, ())]
    changed = [display(c.path) for c in result.changed]
    deleted = [display(p) for p in result.deleted]
    new = [display(p) for p in result.new]
    if not (changed or deleted or new):
        return []
    lines = [f"- changed: {p}" for p in changed] + [f"- deleted: {p}" for p in deleted] + [f"- new: {p}" for p in new]
    listed = "\n".join(lines[:SHOWN]) + (f"\n- ... and {len(lines) - SHOWN} more" if len(lines) > SHOWN else "")
    head = (
        f"The workspace changed since the watchdog snapshot '{result.baseline}': "
        f"{len(changed)} changed, {len(deleted)} deleted, {len(new)} new (break count {result.break_count})."
    )
    advice = (
        "Review the changes; `openclaw-memory watchdog snapshot` accepts the current state as the new baseline."
        if result.break_count
        else "New files are low risk; `openclaw-memory watchdog snapshot` accepts them."
    )
    return [Finding(
        "watchdog-changes",
        "warning" if result.break_count else "info",
        f"{head}\n{listed}\n{advice}",
        False,
        tuple(changed + deleted + new),
    )]


CHECKS = [check_watchdog]
