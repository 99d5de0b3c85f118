"""The startup files (``USER.md``, ``MEMORY.md``, the day's daily notes) that are there but that the
agent does not see at the start of a session: each file ``prompt`` refuses or leaves out, named by its
reason, from the very section ``prompt`` builds (``CheckContext.prompt``), so doctor and prompt never
disagree (a hard-linked MEMORY.md was ``[UNREADABLE: ...]`` in the prompt, and doctor said "No problems
found")."""

from __future__ import annotations

import os
import shlex

from ..prompt.refusals import RefusalReason, StartupRefusal
from .model import CheckContext, Finding

# One finding id per reason (prompt.refusals.RefusalReason).
FINDING_IDS: dict[RefusalReason, str] = {
    "symlink": "prompt-file-symlink",
    "not-a-file": "prompt-file-not-file",
    "hardlinked": "prompt-file-hardlinked",
    "too-large": "prompt-file-too-large",
}


def _seen(r: StartupRefusal) -> str:
    if r.marker is not None:
        return f"at the start of a session the agent sees `{r.marker}` in its place, as in OpenClaw"
    return "it is left out of the daily notes a new session starts with"


def _legacy_is_its_second_name(ctx: CheckContext) -> bool:
    from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT

    try:
        return os.path.samestat(os.lstat(os.path.join(ctx.workspace, CANONICAL_ROOT)),
                                os.lstat(os.path.join(ctx.workspace, LEGACY_ROOT)))
    except OSError:
        return False


def _todo(ctx: CheckContext, r: StartupRefusal) -> str:
    path = shlex.quote(f"{ctx.workspace}/{r.path}")
    if r.reason == "hardlinked":  # the copy breaks the link; the other name keeps every byte it had
        if r.path == "MEMORY.md" and _legacy_is_its_second_name(ctx):
            return ("Its second name is the legacy memory.md beside it: doctor --fix removes that name (split-root), "
                    "checked as the same file; nothing is lost.")
        return (f"Give it a file of its own, e.g. `cp -p {path} {path}.copy && mv {path}.copy {path}` (the other "
                "hard link keeps its bytes; nothing is lost). doctor --fix leaves it: the second link may be on purpose.")
    if r.reason == "not-a-file":
        return "Move it out of the way (what a folder holds can go under memory/), then make it a regular file."
    if r.reason == "symlink":
        return "Replace the link with a regular file holding the text."
    if r.marker is not None:  # a bootstrap file over what OpenClaw's loader reads
        return "Move older details into memory/ notes (they stay searchable) until it is under 2 MiB."
    return "Move details into other notes under memory/ (they stay searchable) until it is under startupContext.maxFileBytes."


def _message(ctx: CheckContext, r: StartupRefusal) -> str:
    return f"{r.path} is not loaded: {r.why}; {_seen(r)}. {_todo(ctx, r)}"


def check_startup_files(ctx: CheckContext) -> list[Finding]:
    """A warning for each startup file the prompt refuses or leaves out, but for what the scan passed
    over (a symlink, an entry that is no file): the scan's own findings name those (``memory-md-*``,
    ``memory-file-symlink``, ``memory-file-not-regular``, ``memory-dir-symlink``)."""
    passed_over = {s.path for s in ctx.scan.skipped}
    return [Finding(FINDING_IDS[r.reason], "warning", _message(ctx, r), False, (r.path,))
            for r in ctx.prompt.refused if r.path not in passed_over]


CHECKS = [check_startup_files]
