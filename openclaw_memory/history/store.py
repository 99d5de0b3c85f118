"""The version store: objects and per-path logs in the state database, and "observe a file".

Tables ``objects``/``object_parts`` (content-addressed, compressed), ``versions`` (the log of
each path) and ``reads`` (what each agent read or wrote, see :mod:`.states`). Each change is a
transaction. :meth:`HistoryStore.lock` is a transaction too: a check and what it decides (a
sighting and its log entry, a read record) are one step for every other process.

A write to a user's memory file is more than a transaction can cover (the file is renamed into
place outside the database), so writers also take the workspace's write lock
(:meth:`HistoryStore.write_lock`, ``<data dir>/write.lock``): a guarded write's check, the
rename and what it records never interleave with another writer's.
"""

from __future__ import annotations

import os
import re
import shlex
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple

from ..database import Database
from ..errors import BadValue, LockTimeout, StateDamaged, StateDirError, UsageError, shown
from ..fsutil.hashing import hash_open_file
from ..fsutil.lock import FileLock
from ..fsutil.safeopen import open_regular_in_roots
from ..settings import HistorySettings
from .objects import ObjectStore
from .versions import EXTERNAL_EDIT, Entry, FileMode, VersionLog, short

if TYPE_CHECKING:
    from ..settings import Settings

LOCK_TIMEOUT_S = 10.0
MIN_PREFIX = 8
_HEX = re.compile(r"^[0-9a-f]+$")
_held = threading.local()


class FileVersion(NamedTuple):
    """A file's version as hashed from one open file."""

    version: str
    size: int


# How far back a clock may step (NTP, a VM restored) and a new version still be logged after the
# path's latest entry.
CLOCK_STEP_S = 3600.0


class HistoryStore:
    """One workspace's version history (shared by all agents)."""

    def __init__(self, data_dir, config: HistorySettings | None = None, roots: tuple[str, ...] = ()):
        self.config = config or HistorySettings()  # [history]: keep_per_path, max_bytes (checked by settings)
        # The allowed roots (workspace, extra paths): a file is only ever opened from one of them.
        self.roots = tuple(os.fspath(r) for r in roots)
        self.data_dir = os.fspath(data_dir)
        self.db = Database(self.data_dir)
        self.objects = ObjectStore(self.db, self.config.max_bytes)
        self.log = VersionLog(self.db)
        self.write_lock_path = os.path.join(self.data_dir, "write.lock")
        self._keep: set[str] | None = None  # within evicting_once(): the versions recorded so far

    @classmethod
    def for_settings(cls, settings: Settings) -> HistoryStore:
        return cls(settings.data_dir, settings.history, (str(settings.workspace), *settings.extra_paths))

    def lock(self):
        """One transaction for what follows (a context manager)."""
        return self.db.transaction()

    @contextmanager
    def evicting_once(self) -> Iterator[None]:
        """Record many sightings (a sync's) and apply the byte limit once at the end, keeping the
        versions recorded here last of all: a look at the limit per file made a first sync of N
        files cost N looks over the whole store."""
        if self._keep is not None:
            yield
            return
        self._keep = set()
        try:
            yield
            self.objects.evict(keep=frozenset(self._keep))
        finally:
            self._keep = None

    def _evict(self, keep: str) -> None:
        if self._keep is None:
            self.objects.evict(keep=frozenset({keep}))
        else:
            self._keep.add(keep)

    @contextmanager
    def write_lock(self) -> Iterator[None]:
        """Held by every writer of a memory file; a thread that holds it already (a keyed write
        around its guarded write) goes on."""
        path = self.write_lock_path
        held = _held.__dict__.setdefault("paths", set())
        if path in held:
            yield
            return
        with FileLock(path, timeout=LOCK_TIMEOUT_S, what="the write lock of this workspace's memory files"):
            held.add(path)
            try:
                yield
            finally:
                held.discard(path)

    def record(self, abs_path: str, display: str, version: str, size: int, origin: str, agent: str | None,
               session: str | None = None, mode: FileMode | None = None, moved_from: str | None = None) -> Entry:
        """Log a version of ``abs_path`` (store its bytes first, when they fit), then apply the limits.
        ``mode``: the file's permission bits and owner at this version, where it was looked at;
        ``moved_from``: a move's source, as ``display`` names a path. Its time is now, or the path's
        latest entry's where the clock stepped back a little since (a rollback replays a path's entries
        in time order, an import's earlier-dated ones among them: a write logged before another must
        not replay after it). An entry more than ``CLOCK_STEP_S`` ahead is a clock that ran ahead
        and was set right: taking its time would date every later write in that future, out of
        reach of a rollback to now."""
        when = time.time()
        latest = self.log.latest_in_time(abs_path)
        if latest is not None and when < latest.time <= when + CLOCK_STEP_S:
            when = latest.time
        return self.record_entry(abs_path, display, Entry(version, when, size, origin, agent, session or None), mode,
                                 moved_from)

    def record_entry(self, abs_path: str, display: str, entry: Entry, mode: FileMode | None = None,
                     moved_from: str | None = None, arrived: float | None = None) -> Entry:
        """Log ``entry`` as given (``import`` keeps each version's own time and origin, and gives the
        moment it arrived here: ``arrived``), then apply the limits."""
        dropped = {e.version for e in self.log.append(abs_path, display, entry, self.config.keep_per_path, mode, moved_from,
                                                      arrived)}
        if dropped:
            self.objects.remove(dropped - self.log.referenced(dropped))
        self._evict(entry.version)
        return entry

    def observe(self, abs_path: str, display: str, snapshot: FileVersion, *, fd: int | None = None, data: bytes | None = None,
                origin: str = EXTERNAL_EDIT) -> Entry | None:
        """A sighting of ``snapshot``: keep its bytes (from ``fd`` or ``data``) and log it when new.

        A version that differs from the path's latest entry is logged with ``origin`` (by default
        an outside edit; the first sighting of a file too). Bytes that no longer hash to the
        version (the file moved on) are not stored; the entry then shows as unavailable.

        An outside edit is logged only when it is still what the file holds, looked at under the
        store's lock and the write lock (a sighting by a read, a listing, ``watch``): a snapshot
        hashed before a write came between, or a version a writer has put in place but not yet
        logged as its own, is never logged as someone else's edit. The caller that holds the write
        lock (a writer's look at the version it replaces) is taken at its word.
        """
        stored = False
        if self.objects.fits(snapshot.size) and not self.objects.touch(snapshot.version):
            if data is not None:
                stored = self.objects.put_bytes(data, snapshot.version) is not None
            elif fd is not None:
                stored = self.objects.put_fd(fd, snapshot.version) is not None
            else:
                stored = self._store_from_path(abs_path, snapshot.version)
        latest = self.log.latest(abs_path)
        if latest is not None and latest.version == snapshot.version:
            if stored:
                self._evict(snapshot.version)
            return None
        if origin != EXTERNAL_EDIT or self.write_lock_path in _held.__dict__.get("paths", ()):
            # A writer's own look (it holds the write lock: no other agent writes meanwhile), or a
            # repair's version, logged as its own origin.
            return self._record_seen(abs_path, display, snapshot, origin, fd)
        with self.db.transaction():  # the look at the latest entry and the entry it decides: one step
            latest = self.log.latest(abs_path)
            if latest is not None and latest.version == snapshot.version:
                return None
            with self._no_write_in_progress() as quiet:
                if not quiet or not self._holds_now(abs_path, snapshot, fd):
                    if stored:
                        self._evict(snapshot.version)
                    return None
                return self._record_seen(abs_path, display, snapshot, origin, fd)

    def _record_seen(self, abs_path: str, display: str, snapshot: FileVersion, origin: str, fd: int | None) -> Entry:
        return self.record(abs_path, display, snapshot.version, snapshot.size, origin, None,
                           mode=FileMode.of(os.fstat(fd)) if fd is not None else self._mode_now(abs_path))

    @contextmanager
    def _no_write_in_progress(self) -> Iterator[bool]:
        """The write lock, taken without waiting, for a sighting about to log a new version: True
        (held until the block ends) when no writer of a memory file is at work, False when one is.

        A writer puts its version in place, then logs it as its own: a sighting between the two
        would log the agent's version as an outside edit (and the writer's entry after it). While a
        writer is at work its own look logs any outside edit it finds (the version it replaces, a
        save its swap displaced), so a sighting then logs nothing; the next one logs what the file
        holds. A lock that cannot be taken at all (a state dir that holds none) holds no writer either."""
        lock = FileLock(self.write_lock_path, timeout=0, what="the write lock of this workspace's memory files")
        try:
            lock.acquire()
        except LockTimeout:
            yield False
            return
        except StateDirError:
            yield True
            return
        try:
            yield True
        finally:
            lock.release()

    def _holds_now(self, abs_path: str, snapshot: FileVersion, fd: int | None) -> bool:
        """Whether the file at ``abs_path`` holds ``snapshot`` now: a read's snapshot is hashed
        before the store's lock is taken, and a write may have come between (logged after the
        writer's entry, it would be an "outside edit" back to the older version, and the next
        sighting one forward again). One hashed from ``fd`` holds while the path still names that
        file at that size (a write renames a new file into place); any other is hashed again."""
        if fd is not None:
            try:
                hashed, now = os.fstat(fd), os.lstat(abs_path)
            except OSError:
                return False
            return (hashed.st_dev, hashed.st_ino) == (now.st_dev, now.st_ino) and hashed.st_size == snapshot.size
        try:
            fd, _ = self.open_file(abs_path)
        except OSError:
            return False
        try:
            return snapshot_fd(fd) == snapshot
        except OSError:
            return False
        finally:
            os.close(fd)

    def observe_file(self, abs_path: str, display: str, origin: str = EXTERNAL_EDIT) -> FileVersion | None:
        """Hash the file as it is now and record the sighting; None when it does not exist.

        Raises NotRegularFile (a symlink, FIFO...), FolderSwapped (a folder on the way was
        swapped) and PermissionError for the caller to word.
        """
        try:
            fd, _ = self.open_file(abs_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            snapshot = snapshot_fd(fd)
            self.observe(abs_path, display, snapshot, fd=fd, origin=origin)
        finally:
            os.close(fd)
        return snapshot

    def entries(self, abs_path: str) -> list[Entry]:
        return self.log.entries(abs_path)

    def resolve_prefix(self, abs_path: str, display: str, prefix: str, also: tuple[str, ...] = ()) -> str:
        """The one version of ``abs_path`` (its history, plus ``also``) that starts with ``prefix``."""
        wanted = check_prefix(prefix)
        also_known = {v for v in also if v}
        try:
            known = {e.version for e in self.entries(abs_path)} | also_known
        except StateDamaged:
            if not any(v.startswith(wanted) for v in also_known):
                raise
            known = also_known  # the version asked for is the file's own: no need of the history
        matches = sorted(v for v in known if v.startswith(wanted))
        if not matches:
            raise UsageError(f"no version of {display} starts with {wanted} (see `openclaw-memory history {shlex.quote(display)}`)")
        if len(matches) > 1:
            raise UsageError(
                f"version prefix {wanted} is ambiguous for {display}: it matches "
                + ", ".join(short(v) for v in matches) + "; give more characters"
            )
        return matches[0]

    def open_file(self, abs_path: str) -> tuple[int, os.stat_result]:
        """Open a memory file from the descriptor of the allowed root that holds it, never by its whole path."""
        return open_regular_in_roots(self.roots, abs_path)

    def _mode_now(self, abs_path: str) -> FileMode | None:
        """The file's mode and owner, for a sighting made without a descriptor (a read's): looked at
        only when a new entry is logged. None when it cannot be opened (gone meanwhile)."""
        try:
            fd, st = self.open_file(abs_path)
        except OSError:
            return None
        os.close(fd)
        return FileMode.of(st)

    def _store_from_path(self, abs_path: str, version: str) -> bool:
        try:
            fd, _ = self.open_file(abs_path)
        except OSError:
            return False
        try:
            return self.objects.put_fd(fd, version) is not None
        finally:
            os.close(fd)


def check_prefix(prefix: str, name: str | None = None) -> str:
    """A version prefix as given to ``--expect`` (``name`` ``expect``) or ``restore``: 8 to 32 hex characters."""
    wanted = (prefix or "").strip().lower()
    if len(wanted) < MIN_PREFIX or len(wanted) > 32 or not _HEX.match(wanted):
        problem = f"must be a version: {MIN_PREFIX} to 32 hexadecimal characters, not {shown(prefix)}"
        where = " (a prefix of the xxh3_128 hash shown by `state --json` or `history`)"
        if name is None:
            raise UsageError(f"a version is {MIN_PREFIX} to 32 hexadecimal characters{where}, not {shown(prefix)}")
        # An expect names a version this session read (guard.check_write), never one seen elsewhere.
        raise BadValue(name, problem, hint=" (the version `read --json` gives, or a prefix of it)",
                       hint_tools=" (the version memory_get gives, or a prefix of it)")
    return wanted


def snapshot_fd(fd: int) -> FileVersion:
    """Hash the whole file open on ``fd`` from its start (streamed)."""
    os.lseek(fd, 0, os.SEEK_SET)
    version = hash_open_file(fd)
    return FileVersion(version, os.lseek(fd, 0, os.SEEK_CUR))
