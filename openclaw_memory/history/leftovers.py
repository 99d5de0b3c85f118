"""What killed writes of a memory file left beside it (``.NAME.<hex>.tmp`` and ``.swp``), swept by the
next write of the file and by ``doctor --fix``, never a byte the history does not hold (``doctor --fix``
sets those aside instead)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable

from ..errors import MemoryToolError
from ..files.read import ResolvedPath
from ..fsutil.atomic import LEFTOVER_AGE_S, leftover_kind, temp_stem
from ..fsutil.move import remove_if_holds
from ..fsutil.safeopen import Folder
from .store import HistoryStore, snapshot_fd


def sweep_leftovers(store: HistoryStore, resolved: ResolvedPath, folder: Folder,
                    set_aside: Callable[[Folder, str, os.stat_result], None] | None = None) -> None:
    """Remove what earlier writes of this file that were killed left beside it (the caller holds the
    write lock, as every writer does, so none of them is in progress): a write does it first, and
    ``doctor --fix`` (:mod:`~..doctor.check_leftovers`). Only this user's files are looked at: another
    user's is never read (its bytes would go into this user's history) nor removed.

    A temp file (``.NAME.<hex>.tmp``) holds only what such a write would have written, never a byte
    the file had: removed as bytes the history holds (the new version a write stores before its
    swap, an import's staged file). One whose bytes the history lacks (a write's partial copy, or
    another program's draft by that name) is never logged as a version of the file (a rollback put
    such a draft in the note's place) nor removed: once ten minutes old, ``set_aside`` (doctor's)
    moves it out of the way, as the very file looked at. A swap file (``.NAME.<hex>.swp``, see
    :func:`.guard._commit`) may hold the version an exchange took off the file: removed once its
    bytes are in the history, after recording them there as an outside edit when they are not (a
    write killed between its exchange and the check of what it displaced), and only as those bytes
    while no other program holds it open (:func:`~..fsutil.move.remove_if_holds`); one too big for
    the history stays."""
    prefix = f"{temp_stem(resolved.name)}."
    try:
        # Only the names of this file's leftovers looked at in Python: a daily-notes folder of
        # 30,000 entries cost a write 34 ms parsing each name (the listing itself is the kernel's).
        entries = [entry for entry in os.listdir(folder.fd) if entry.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        kind = leftover_kind(entry, resolved.name)
        if kind is None:
            continue
        try:
            st = folder.lstat(entry)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                continue
            if kind == "tmp":
                version = stored_version(store, folder, entry)
                if version is None:
                    if set_aside is not None and time.time() - st.st_mtime > LEFTOVER_AGE_S:
                        set_aside(folder, entry, st)
                    continue
            else:
                version = _in_history_now(store, resolved, folder, entry)
            if version is not None:
                # Only as those bytes, and not while a program holds it open (it would write to an unlinked file).
                remove_if_holds(folder.fd, entry, version)
        except (OSError, MemoryToolError):
            continue


def stored_version(store: HistoryStore, folder: Folder, name: str) -> str | None:
    """The version of the regular file ``name`` in ``folder`` when the history holds its bytes; else None."""
    fd, _ = folder.open_regular(name)
    try:
        found = snapshot_fd(fd)
    finally:
        os.close(fd)
    return found.version if store.objects.has(found.version) else None


def _in_history_now(store: HistoryStore, resolved: ResolvedPath, folder: Folder, name: str) -> str | None:
    """The version of the file ``name`` in ``folder`` when the history holds its bytes (recorded here
    if need be); None when it cannot."""
    fd, _ = folder.open_regular(name)
    try:
        found = snapshot_fd(fd)
        if store.objects.has(found.version):
            return found.version
        if not store.objects.fits(found.size):
            return None
        with store.lock():
            store.observe(resolved.abs_path, resolved.display, found, fd=fd)
        return found.version if store.objects.has(found.version) else None
    finally:
        os.close(fd)
