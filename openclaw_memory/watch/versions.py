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
from ..database import Database, enc
from ..errors import MemoryToolError
from ..fsutil.safeopen import NotRegularFile
from ..history.store import HistoryStore, seen_mode, snapshot_fd
from ..history.versions import EXTERNAL_EDIT, FileMode

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..index.results import FileRead
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


def history_mark(settings: Settings) -> int:
    """The id of the history's last entry now (0: none, or no history to ask): what a sighting made
    after this moment is compared with (see :func:`record_read`)."""
    try:
        row = Database(settings.data_dir).one("SELECT COALESCE(MAX(id), 0) FROM versions")
    except (MemoryToolError, OSError):
        return 0
    return int(row[0]) if row else 0


def record_read(settings: Settings, reads: Sequence[tuple[FileRead, int]]) -> tuple[set[str], str | None]:
    """Record the versions the watch read, with their bytes as read (a sync's reads, an event's read
    during a long sync), in the order they were read, each file's after its earlier ones: not what
    the file holds by the time they are recorded (a save in between left the version indexed out).

    Each comes with the history's last entry before it was read (:func:`history_mark`). A
    version is logged, as an outside edit, unless the path's log already ends with it, or someone
    else logged the path since (an agent's write, which logs the version it replaced, or another
    sighting) and the version is among those entries, or the file no longer holds it (logged after
    them, it would read as a later edit going back): the history's rule for a sighting decided after
    a writer (``HistoryStore._log_after_writer``), the entries logged here not counted. Taken under
    the write lock, as a writer's: a version an agent put in place is logged by it, never as an
    outside edit. Returns the paths handled and a warning where the history could not take them."""
    if not reads:
        return set(), None
    ordered = sorted(reads, key=lambda pair: pair[0].read_ns)
    store = HistoryStore.for_settings(settings)
    mine: set[int] = set()
    done: set[str] = set()
    try:
        for start in range(0, len(ordered), BATCH):
            with store.write_lock(), store.lock(), store.evicting_once():
                for r, after in ordered[start:start + BATCH]:
                    _record_one(store, r, after, mine)
                    done.add(r.path)
    except MemoryToolError as exc:
        return done, f"versions not recorded in the history this time: {exc.message}"
    return done, None


def _record_one(store: HistoryStore, r: FileRead, after: int, mine: set[int]) -> None:
    path = enc(r.abs_path)
    size = len(r.data)
    rows = store.db.rows("SELECT id, version FROM versions WHERE path = ? ORDER BY id DESC LIMIT 1", (path,))
    if rows and rows[0][1] == r.version:
        _keep_bytes(store, r)
        return
    since = [v for i, v in store.db.rows("SELECT id, version FROM versions WHERE path = ? AND id > ?", (path, after))
             if i not in mine]
    if r.version in since:
        return
    if since and not _holds_now(store, r):
        return
    if not since and any(i not in mine for (i,) in store.db.rows(
            "SELECT id FROM versions WHERE id > ? AND version = ? AND path != ? AND moved_from IS NOT NULL",
            (after, r.version, path))):
        return  # a move took it from this path, logged
    _keep_bytes(store, r)
    store.record(r.abs_path, r.path, r.version, size, EXTERNAL_EDIT, None, mode=_mode_of(store, r))
    row = store.db.one("SELECT MAX(id) FROM versions WHERE path = ?", (path,))
    if row and row[0] is not None:
        mine.add(int(row[0]))


def _keep_bytes(store: HistoryStore, r: FileRead) -> None:
    if store.objects.fits(len(r.data)) and not store.objects.touch(r.version):
        store.objects.put_bytes(r.data, r.version)


def _holds_now(store: HistoryStore, r: FileRead) -> bool:
    try:
        fd, _ = store.open_file(r.abs_path)
    except OSError:
        return False
    try:
        return snapshot_fd(fd).version == r.version
    except OSError:
        return False
    finally:
        os.close(fd)


def _mode_of(store: HistoryStore, r: FileRead) -> FileMode | None:
    """The file's mode and owner, where the path still names the file read (else none is known)."""
    try:
        fd, st = store.open_file(r.abs_path)
    except OSError:
        return None
    try:
        return seen_mode(fd) if st.st_ino == r.inode else None
    finally:
        os.close(fd)
