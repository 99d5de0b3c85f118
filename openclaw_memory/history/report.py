"""``state``: every memory file's state for one agent (see :mod:`.states` for the four states)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..database.observations import FileStat, Observations, is_racy
from ..errors import DiskFull, StateDirError
from ..files.paths import display_path
from ..files.scan import scan_workspace
from ..fsutil.fsclock import guard_ns
from ..fsutil.safeopen import FolderSwapped
from ..wire import camel, key
from .removals import see_removals
from .states import READ_FRESH, STATES, ReadRecords, Seen, Window, state_of
from .store import FileVersion, HistoryStore, snapshot_fd
from .versions import iso_time

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class FileState:
    path: str
    abs_path: str
    state: str
    version: str | None  # what the file holds now; None when it no longer exists
    seen_version: str | None  # what this agent last read or wrote
    seen_how: str | None = key("seenAs")
    seen_at: str | None = key()  # when, as iso_time
    size: int | None = key()
    # The first and last line of the version seen that its reads showed, when they showed only those
    # (last None: to the end; empty: no whole line, a read cut inside its first): a replacing write is
    # blocked until the rest is read (an append is not).
    seen_lines: tuple[int | None, ...] | None = key(omit=lambda f: f.seen_lines is None, default=None)

    JSON_DERIVED: ClassVar = ("exists",)

    @property
    def exists(self) -> bool:
        return self.version is not None


@dataclass(frozen=True)
class Unreadable:
    """A memory file ``state`` could not hash (permission denied, replaced by a FIFO, swapped folder)."""

    path: str
    reason: str


@dataclass(frozen=True)
class StateReport:
    agent: str
    workspace: str
    files: tuple[FileState, ...]
    unreadable: tuple[Unreadable, ...] = ()
    notes: tuple[str, ...] = key(omit=lambda r: not r.notes, default=())

    JSON_DERIVED: ClassVar = ("counts",)

    @property
    def warnings(self) -> list[str]:
        return [f"cannot read {u.path}: {u.reason}; its state is unknown" for u in self.unreadable] + list(self.notes)

    @property
    def counts(self) -> dict[str, int]:
        """Files per state, keyed by the state's camelCase name (``readFresh``, ...) like every JSON key."""
        return {camel(name): sum(1 for f in self.files if f.state == name) for name in STATES}


def file_states(settings: Settings) -> StateReport:
    """Every Markdown memory file's state for ``settings.agent``, plus files it read that are gone.

    Hashing a file is a sighting: new versions go into the history (this is a verify). A file
    the change rule (:mod:`..database.observations`) knows unchanged is not hashed.
    """
    scan = scan_workspace(settings, multimodal=False)
    store = HistoryStore.for_settings(settings)
    workspace = str(settings.workspace)
    out: list[FileState] = []
    guard = guard_ns(settings.workspace, *settings.extra_paths)  # the widest file system of them
    unreadable: list[Unreadable] = []
    unrecorded: list[str] = []
    records = ReadRecords.for_settings(store, settings).load()
    known = Observations(store.db).load()
    seen: list[tuple[str, FileStat, str]] = []
    hashed: list[tuple[str, str]] = []  # (path, version) of each file hashed
    listed = set()

    def look() -> None:
        for f in scan.files:
            if f.kind != "markdown":
                continue
            listed.add(f.abs_path)
            cached = known.get(f.abs_path)
            snap: FileVersion | None
            if cached is not None and cached.stat.matches(f):
                snap = FileVersion(cached.hash, f.size)  # hashed and logged already, unchanged since
            else:
                started_ns = time.time_ns()
                snap = _observe(store, f, unreadable, unrecorded)
                if snap is None:
                    continue
                hashed.append((f.abs_path, snap.version))
                # The scan's stat describes the bytes hashed only if the file still has it now.
                stat = FileStat(f.size, f.mtime_ns, f.ctime_ns, f.inode, is_racy(f.mtime_ns, f.ctime_ns, started_ns, guard),
                                f.mode)
                if not stat.racy and _stat_now(f.abs_path) == stat and not unrecorded:
                    seen.append((f.abs_path, stat, snap.version))
            state = _file_state(f.path, f.abs_path, records.get(f.abs_path), snap)
            if state is not None:
                out.append(state)

    try:
        # One transaction: every sighting of the run is committed (synced to disk) once, at its end.
        with store.lock() as conn:
            look()
            if not unrecorded:
                Observations.record(conn, seen)
                Observations.forget(conn, [p for p in known if p not in listed and not os.path.lexists(p)])
                see_removals(settings, store, listed)  # a note deleted by hand, said "deleted" below: logged so
    except (DiskFull, StateDirError) as exc:
        # The states are still true; only new versions miss the history this time.
        if not listed:  # it could not even start (a read-only state dir): look without it, and a version
            look()  # that needed recording says so (it said so where every version was recorded already)
        elif any(not any(e.version == v for e in store.entries(p)) for p, v in hashed):
            # The commit failed: this run's sightings are lost; said where one was of a version the
            # history does not hold (not of the sightings' times alone: a read-only state dir).
            unrecorded.append(exc.message)
    for abs_path, record in records.items():
        if abs_path in listed or os.path.lexists(abs_path):
            continue
        state = _file_state(display_path(abs_path, workspace), abs_path, record, None)
        if state is not None:
            out.append(state)
    return StateReport(settings.agent, workspace, tuple(out), tuple(unreadable),
                       tuple(f"new versions not recorded in the history: {m}" for m in unrecorded))


def _stat_now(abs_path: str) -> FileStat | None:
    try:
        st = os.lstat(abs_path)
    except OSError:
        return None
    return FileStat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, False, st.st_mode)


def _file_state(path: str, abs_path: str, seen: Seen | None, snap: FileVersion | None) -> FileState | None:
    """None when the file has no state for the agent (never read, and gone)."""
    current = snap.version if snap else None
    state = state_of(seen, current)
    if state is None:
        return None
    return FileState(
        path,
        abs_path,
        state,
        current,
        seen.version if seen else None,
        seen.how if seen else None,
        iso_time(seen.time) if seen else None,
        snap.size if snap else None,
        _lines(seen.window) if seen is not None and state == READ_FRESH else None,
    )


def _lines(window: Window) -> tuple[int | None, ...] | None:
    if window is None:
        return None
    first, last = window
    return () if last is not None and last < first else window  # (a read that showed no whole line)


def _observe(store: HistoryStore, f, unreadable: list, unrecorded: list) -> FileVersion | None:
    """Hash ``f`` through its folder's descriptor and record the sighting; None when it is gone or
    unreadable (then listed in ``unreadable``). A full state dir only stops the recording."""
    try:
        fd, _ = store.open_file(f.abs_path)
    except FileNotFoundError:
        return None  # gone since the scan
    except FolderSwapped:
        unreadable.append(Unreadable(f.path, "a folder on its path changed while in use (now a symlink or not a folder)"))
        return None
    except OSError as exc:
        unreadable.append(Unreadable(f.path, exc.strerror or str(exc)))
        return None
    try:
        snap = snapshot_fd(fd)
        if not unrecorded:
            try:
                with store.db.savepoint():
                    store.observe(f.abs_path, f.path, snap, fd=fd)
            except (DiskFull, StateDirError) as exc:
                # The states are still true; only new versions miss the history this time (a version
                # recorded already misses only this sighting's time: not said).
                if not any(e.version == snap.version for e in store.entries(f.abs_path)):
                    unrecorded.append(exc.message)
        return snap
    except OSError as exc:
        unreadable.append(Unreadable(f.path, exc.strerror or str(exc)))
        return None
    finally:
        os.close(fd)
