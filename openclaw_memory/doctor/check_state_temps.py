"""Check and repair: temp files the product's own atomic writes left in the data dir.

``state-checked.json`` (doctor's record of the state database's last clean check) and the
service's ``info.json`` and ``token`` are each written to a fresh ``.NAME.<8 hex>.tmp`` beside
them, then renamed over them (:func:`~openclaw_memory.fsutil.atomic.atomic_write_bytes`); a
process killed between the two leaves the temp file, and nothing else ever removes it. A new
state database is made as ``.state.db.new-*`` and linked in place; a creation killed before the
link leaves it (the next creation sweeps it only while state.db is missing or empty).

Plain doctor names each that is ours to remove: that exact name beside one of those files, a
regular file of this user, last written ten minutes ago (no lock covers these writes: a younger
one may be a write going on now); a creation's, as the creation's own sweep decides
(:func:`~openclaw_memory.database.connection.dead_creations`: the same rule). ``--fix`` removes
each as the file it checked: found without following a link and stat'ed, then unlinked by its
name in the folder's descriptor only while that name is still the file looked at.
"""

from __future__ import annotations

import os
import stat
import time

from ..database.checked import NAME as CHECKED
from ..database.connection import dead_creations
from ..fsutil.atomic import LEFTOVER_AGE_S, leftover_kind
from ..fsutil.safeopen import DIR_FLAGS, NotRegularFile, open_regular_nofollow
from ..service_files import INFO, TOKEN
from ..settings import Settings
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "state-temp-leftovers"
# The folders under the data dir the product writes atomically, and the files it writes there.
_WRITTEN: tuple[tuple[str, tuple[str, ...]], ...] = (("", (CHECKED,)), ("service", (INFO, TOKEN)))
FIX_HINT = 'Run "openclaw-memory doctor --fix" to remove them.'


def _folders(settings: Settings) -> list[tuple[str, int, tuple[str, ...]]]:
    """(path, open descriptor, the files written there) of each folder of ``_WRITTEN`` that is a
    folder now (not a link); the caller closes each descriptor."""
    opened = []
    for rel, written in _WRITTEN:
        path = os.path.join(str(settings.data_dir), rel) if rel else str(settings.data_dir)
        try:
            opened.append((path, os.open(path, DIR_FLAGS), written))
        except OSError:
            continue  # absent (no service ever ran), or not a folder: the folder checks' finding
    return opened


def _ours(dir_fd: int, name: str, now: float) -> os.stat_result | None:
    """The leftover's stat, when ``name`` in the folder is a regular file of this user written
    ``LEFTOVER_AGE_S`` ago; else None (a link, a FIFO, another user's, a write going on now)."""
    try:
        fd, st = open_regular_nofollow(name, dir_fd=dir_fd)
    except (OSError, NotRegularFile):
        return None
    os.close(fd)
    return st if st.st_uid == os.geteuid() and now - st.st_mtime > LEFTOVER_AGE_S else None


def _leftovers(dir_fd: int, written: tuple[str, ...]) -> list[tuple[str, os.stat_result]]:
    now = time.time()
    found = dead_creations(dir_fd) if CHECKED in written else []  # the data dir: a killed creation's too
    for name in os.listdir(dir_fd):
        if any(leftover_kind(name, of) == "tmp" for of in written):
            st = _ours(dir_fd, name, now)
            if st is not None:
                found.append((name, st))
    return sorted(found, key=lambda each: each[0])


def leftovers(settings: Settings) -> list[str]:
    """The paths of the temp files the product's killed atomic writes left, ours to remove."""
    found = []
    for path, fd, written in _folders(settings):
        try:
            found += [os.path.join(path, name) for name, _ in _leftovers(fd, written)]
        finally:
            os.close(fd)
    return found


def check_state_temps(ctx: CheckContext) -> list[Finding]:
    found = leftovers(ctx.settings)
    if not found:
        return []
    listing = "\n".join(f"- {path}" for path in found)
    message = (f"{len(found)} temp file(s) left in the state dir by writes of the product's own files that were killed "
               f"before their rename (ten minutes old or more; nothing reads them):\n{listing}\n{FIX_HINT}")
    return [Finding(ID, "info", message, True, tuple(found), FIX_HINT)]


def remove(settings: Settings, finding: Finding) -> Repair:
    """Each leftover found again now, removed only while its name is still the file checked."""
    removed, left = [], []
    for path, fd, written in _folders(settings):
        try:
            for name, st in _leftovers(fd, written):
                try:
                    now = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino) or not stat.S_ISREG(now.st_mode):
                        raise FileNotFoundError  # replaced since it was checked: not the file found
                    os.unlink(name, dir_fd=fd)
                    os.fsync(fd)
                    removed.append(os.path.join(path, name))
                except FileNotFoundError:
                    continue  # gone, or another file now: the next doctor looks at it again
                except OSError:
                    left.append(os.path.join(path, name))
        finally:
            os.close(fd)
    if left:
        return Repair(finding.id, "remove", "failed", f"could not remove: {', '.join(left)}", tuple(left))
    return Repair(finding.id, "remove", "done", f"removed: {', '.join(removed) or 'nothing (already gone)'}",
                  tuple(removed))


CHECKS = [check_state_temps]
REPAIRS = {ID: RepairSpec("remove", lambda f: "Remove the temp files killed writes left in the state dir", remove)}
