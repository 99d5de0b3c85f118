"""Every version ``watch`` sees goes into the history, so an outside edit can always be restored.

A version that differs from the path's latest history entry is logged as ``external-edit``
(the history's own rule); the agent's own writes are already logged as ``agent-write`` and
are not logged twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..bulk import gc_paused
from ..errors import MemoryToolError
from ..fsutil.safeopen import NotRegularFile
from ..history.store import HistoryStore

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings

BATCH = 256  # sightings recorded in one transaction


def record_versions(settings: Settings, paths: Iterable[str], files: Sequence[MemoryFile] = ()) -> str | None:
    """Hash each memory file (display paths) as it is now and record new versions.

    ``files``: the scan's entries of (some of) those paths, with their stat. One whose sighting
    holds for that stat (the one change rule), whose content is the history's newest entry of it
    and whose bytes are stored has nothing new to record: it is not opened, only its bytes marked
    as used, as a sighting does (`serve` restarted to `watching` at 30,000 notes: 7.5-8.2 -> 5.1 s
    of CPU, about half of what is left the checks of the state database's WAL, in Python).

    Returns a warning when the history could not take them (busy for too long, its disk full): the
    next sighting records what the files hold then.
    """
    paths = list(dict.fromkeys(paths))
    if not paths:
        return None
    store = HistoryStore.for_settings(settings)
    workspace = str(settings.workspace)
    try:
        known = _known(store, files)
        # A transaction per batch, not per sync: every other writer of the state database waits
        # while one is open (a first sync of 30,000 notes held it for minutes).
        for start in range(0, len(paths), BATCH):
            with store.lock(), store.evicting_once():
                batch = paths[start:start + BATCH]
                stored = store.objects.touch_all(known[p] for p in batch if p in known)
                for path in batch:
                    if known.get(path) in stored:
                        continue
                    try:
                        # A display path may lead out of the workspace (`../notes/a.md`, an extra folder
                        # beside it): normalised, it is the scanner's name of the file again.
                        store.observe_file(os.path.normpath(os.path.join(workspace, path)), path)
                    except (NotRegularFile, OSError):
                        continue  # gone or not a regular file any more: nothing to keep
    except MemoryToolError as exc:  # LockTimeout, DiskFull: the watch goes on, the index is apart
        return f"versions not recorded in the history this time: {exc.message}"
    return None


# Each sighting that is not racy, of content that is its path's newest history entry: its path,
# its change key (database.observations.change_key, in its order) and that version.
_HELD = ("SELECT o.path, o.size, o.mtime_ns, o.ctime_ns, o.inode, o.mode, o.hash FROM observations o "
         "WHERE o.racy = 0 AND o.hash = (SELECT v.version FROM versions v WHERE v.path = o.path ORDER BY v.id DESC LIMIT 1)")


def _known(store: HistoryStore, files: Sequence[MemoryFile]) -> dict[str, str]:
    """Display path -> version of each of ``files`` whose content the history's newest entry of
    it holds, by its sighting (its bytes' being stored is asked by the caller, as it marks them used)."""
    if not files:
        return {}
    with gc_paused():  # a key and a row a note, none in a cycle
        held = {row[:6]: row[6] for row in store.db.rows(_HELD)}
        known = {}
        for f in files:
            version = held.get((f.abs_path.encode("utf-8", "surrogateescape"), f.size, f.mtime_ns, f.ctime_ns, f.inode, f.mode))
            if version is not None:
                known[f.path] = version
    return known
