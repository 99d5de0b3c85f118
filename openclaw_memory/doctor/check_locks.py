"""The lock files of the data dir: something other than a file at a lock's path.

A lock file only ever holds its holder's pid, but a folder, a symbolic link or a socket at its
path (a bad restore, a person's mistake) cannot be opened as one, and a FIFO blocks whoever opens
it to read who holds it. The next command that takes
that lock sets it aside itself (:func:`~openclaw_memory.fsutil.lock.set_aside_odd_lock`); plain
doctor names it before then, and ``--fix`` does the same as that command, under the folder's
flock, never deleting it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..fsutil.private import closed_to_me, what_is_at
from ..settings import Settings
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "lock-not-a-file"

# The folders of the data dir that hold lock files, and which of their names are locks.
_LOCK_FOLDERS = ((".", ("write.lock", "doctor.lock")), ("service", ("lock", "start.lock")), ("watch", None), ("index/locks", None))


def odd_locks(data_dir: Path) -> list[tuple[str, str]]:
    """(path, what is there) for each lock path of ``data_dir`` that holds something other than a
    file (a FIFO opens and locks, but blocks whoever opens it only to read), or a file this user
    cannot open."""
    found = []
    for folder, names in _LOCK_FOLDERS:
        where = os.path.join(data_dir, folder)
        try:
            entries = os.listdir(where) if names is None else names
        except OSError:
            continue  # no such folder: no lock taken there yet
        for name in sorted(entries):
            if names is None and not name.endswith(".lock"):
                continue
            path = os.path.normpath(os.path.join(where, name))
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                found.append((path, what_is_at(path, st)))
            elif closed_to_me(st):
                found.append((path, f"a file this user cannot open (mode {stat.S_IMODE(st.st_mode):03o}, owner uid {st.st_uid})"))
    return found


def check_locks(ctx: CheckContext) -> list[Finding]:
    found = odd_locks(ctx.settings.data_dir)
    if not found:
        return []
    listing = "\n".join(f"- {path}: {what}" for path, what in found)
    return [Finding(
        ID,
        "warning",
        f"Where openclaw-memory keeps a lock file is something else:\n{listing}\n"
        "The next command that takes that lock, or `openclaw-memory doctor --fix`, moves it under the state dir's "
        "damaged/ folder (never deleting it) and makes the lock file anew.",
        True,
        tuple(path for path, _ in found),
    )]


def _set_aside(settings: Settings, finding: Finding) -> Repair:
    from ..fsutil.lock import set_aside_odd_lock

    moved = []
    try:
        for path, what in odd_locks(settings.data_dir):  # looked at again: a command may have set it aside since
            went: list[Path] = []
            set_aside_odd_lock(path, went)
            moved += [f"{path} ({what}) to {target}" for target in went]
    except OSError as exc:
        return Repair(finding.id, "set aside", "failed", f"{exc.strerror or exc} ({exc.filename or ''})", finding.paths)
    detail = (f"moved under damaged/: {'; '.join(moved)}; each lock file is made anew when next taken" if moved
              else "every lock path holds a lock file again; nothing to do")
    return Repair(finding.id, "set aside", "done", detail, finding.paths)


CHECKS = [check_locks]
REPAIRS = {ID: RepairSpec("set aside", lambda f: "Move what is at a lock file's path aside (kept under damaged/)", _set_aside)}
