"""Checks: what changed in the workspace since the watchdog's last snapshot (when there is one),
and which memory files a git work tree has not committed or ignores."""

from __future__ import annotations

from ..errors import MemoryToolError, StateDamaged, printable
from .model import CheckContext, Finding

SHOWN = 20  # paths listed in the message; the finding's ``paths`` has them all


def check_watchdog(ctx: CheckContext) -> list[Finding]:
    from ..watchdog.store import SnapshotDamaged, has_baseline

    try:
        if not has_baseline(ctx.settings):
            return []  # no baseline: the comparing modules are not even imported (doctor's start)
        from ..watchdog.verify import verify_workspace

        # The scan's stats of the notes: one lstat of each per doctor, not one per walk.
        result = verify_workspace(ctx.settings, {f.path: f for f in ctx.scan.files if not f.path.startswith("../")})
    except (SnapshotDamaged, StateDamaged):
        return []  # reported, with its repair, as watchdog-damaged or state-db-damaged (check_state)
    except (MemoryToolError, OSError) as exc:  # an unreadable snapshot must not hide the other checks
        reason = exc.message if isinstance(exc, MemoryToolError) else f"{exc.strerror or exc} ({exc.filename})"
        return [Finding("watchdog-unavailable", "warning", f"The watchdog baseline cannot be used: {reason}", False, ())]
    # One line per path, as verify prints them: a newline or a terminal escape in a file name (which
    # anyone who can write in the workspace can make) is shown as \xNN, never written to the terminal.
    changed = [printable(c.path) for c in result.changed]
    deleted = [printable(p) for p in result.deleted]
    new = [printable(p) for p in result.new]
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


def check_git(ctx: CheckContext) -> list[Finding]:
    """A memory file with uncommitted changes is not in the repository's history yet; one that
    ``.gitignore`` matches never will be. Only reads (``watchdog.gitstate``)."""
    from ..watchdog.gitstate import memory_git_changes

    roots, notes = memory_git_changes(ctx.settings)
    findings = [Finding("git-unreadable", "info", note, False, ()) for note in notes]
    for changes in roots:
        root = printable(changes.root)
        uncommitted = [f"- {what}: {printable(p)}" for what, paths in (("modified", changes.modified),
                                                                      ("staged", changes.staged),
                                                                      ("untracked", changes.untracked)) for p in paths]
        if uncommitted:
            listed = "\n".join(uncommitted[:SHOWN]) + (
                f"\n- ... and {len(uncommitted) - SHOWN} more" if len(uncommitted) > SHOWN else "")
            findings.append(Finding(
                "git-uncommitted", "info",
                f"{len(changes.uncommitted)} memory file(s) under {root} have changes git has not committed:\n"
                f"{listed}\nCommit them to keep them in the repository's history.",
                False, tuple(map(printable, changes.uncommitted))))
        if changes.ignored:
            listed = "\n".join(f"- {printable(p)}" for p in changes.ignored[:SHOWN])
            findings.append(Finding(
                "git-ignored", "warning",
                f"{len(changes.ignored)} memory file(s) under {root} are ignored by git (.gitignore), so the "
                f"repository never backs them up:\n{listed}\nRemove them from .gitignore unless that is meant.",
                False, tuple(map(printable, changes.ignored))))
    return findings


CHECKS = [check_watchdog, check_git]
