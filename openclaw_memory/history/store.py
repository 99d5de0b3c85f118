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
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NamedTuple

from ..database import Database, enc
from ..errors import BadValue, LockTimeout, StateDamaged, StateDirError, UsageError, shell_word, shown
from ..fsutil.hashing import hash_open_file
from ..fsutil.lock import FileLock
from ..fsutil.safeopen import open_regular_in_roots
from ..settings import HistorySettings
from .objects import ObjectStore
from .versions import EXTERNAL_EDIT, REMOVE, Entry, FileMode, VersionLog, short

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


class _Sighting(NamedTuple):
    """A version an outside edit's sighting found while a writer was at work (decided after it)."""

    store: HistoryStore
    abs_path: str
    display: str
    snapshot: FileVersion
    mode: FileMode | None
    after: int  # the id of the history's last entry when it was seen


def _holds_already(latest: Entry | None, snapshot: FileVersion) -> bool:
    """Whether the path's latest entry says the file holds ``snapshot`` (nothing new to log). A removal
    logs the version it took away: a note that came back with those bytes (a branch switched back,
    a file put back by hand) is there again, and was left logged as removed, so a rollback to a moment
    it was there (read, even) archived it."""
    return latest is not None and latest.version == snapshot.version and latest.origin != REMOVE


def _pending() -> list[_Sighting]:
    return _held.__dict__.setdefault("sightings", [])


def _in_transaction(conn: sqlite3.Connection | None) -> bool:
    try:
        return conn is not None and conn.in_transaction
    except sqlite3.ProgrammingError:  # closed: nothing of it is open
        return False


def settle_sightings() -> None:
    """Log what this thread's sightings found while a writer was at work, waiting for the writers
    (its transactions ended: see :meth:`HistoryStore.observe`)."""
    pending = _held.__dict__.pop("sightings", None)
    while pending:
        store = pending[0].store
        group = [s for s in pending if s.store.write_lock_path == store.write_lock_path]
        pending = [s for s in pending if s.store.write_lock_path != store.write_lock_path]
        store._after_writers(group)


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

    @contextmanager
    def lock(self) -> Iterator[sqlite3.Connection]:
        """One transaction for what follows (a context manager). The outermost one of a thread
        logs, once it has ended, what its sightings found while a writer was at work (:meth:`observe`)."""
        conn = None
        try:
            with self.db.transaction() as conn:
                yield conn
        except BaseException:
            if conn is not None and not _in_transaction(conn):
                _held.__dict__.pop("sightings", None)  # rolled back, their bytes with them
            raise
        if not _in_transaction(conn):
            settle_sightings()

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
        """Log a version of ``abs_path``, then apply the limits. Its bytes are the caller's to store
        first, where they fit (:meth:`observe` does): a version logged without them is lost at the
        file's next edit, and shown as evicted.
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

        An outside edit is logged only when it is what the file holds, looked at under the store's
        lock and the write lock (a sighting by a read, a listing, ``watch``): a snapshot hashed
        before a write came between, or a version a writer has put in place but not yet logged as
        its own, is never logged as someone else's edit. The caller that holds the write lock (a
        writer's look at the version it replaces) is taken at its word.

        One seen while a writer is at work (the write lock is workspace-wide: most often a write to
        another file) is decided once that writer is done, when the outermost transaction of this
        thread ends (:meth:`lock`): see :meth:`_after_writers`. Returns None then.
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
        if _holds_already(latest, snapshot):
            if stored:
                self._evict(snapshot.version)
            return None
        if origin != EXTERNAL_EDIT or self.write_lock_path in _held.__dict__.get("paths", ()):
            # A writer's own look (it holds the write lock: no other agent writes meanwhile), or a
            # repair's version, logged as its own origin.
            return self._record_seen(abs_path, display, snapshot, origin, fd)
        with self.db.transaction() as conn:  # the look at the latest entry and the entry it decides: one step
            latest = self.log.latest(abs_path)
            if _holds_already(latest, snapshot):
                return None
            with self._no_write_in_progress() as quiet:
                holds = self._holds_now(abs_path, snapshot, fd)
                if quiet and holds:
                    return self._record_seen(abs_path, display, snapshot, origin, fd)
            if holds:  # a writer is at work: what the file holds now is decided once it is done
                mode = seen_mode(fd) if fd is not None else self._mode_now(abs_path)
                _pending().append(_Sighting(self, abs_path, display, snapshot, mode, self.last_id()))
            if stored:
                self._evict(snapshot.version)
        if not _in_transaction(conn):
            settle_sightings()
        return None

    def _record_seen(self, abs_path: str, display: str, snapshot: FileVersion, origin: str, fd: int | None) -> Entry:
        return self.record(abs_path, display, snapshot.version, snapshot.size, origin, None,
                           mode=seen_mode(fd) if fd is not None else self._mode_now(abs_path))

    def last_id(self) -> int:
        """The id of the newest entry logged (0: none): a step's mark, what was logged after it being since."""
        row = self.db.one("SELECT COALESCE(MAX(id), 0) FROM versions")
        return int(row[0]) if row else 0

    @contextmanager
    def _no_write_in_progress(self) -> Iterator[bool]:
        """The write lock, taken without waiting, for a sighting about to log a new version: True
        (held until the block ends) when no writer of a memory file is at work, False when one is.

        A writer puts its version in place, then logs it as its own: a sighting between the two
        would log the agent's version as an outside edit (and the writer's entry after it). A
        sighting made while a writer is at work is decided after it (:meth:`_after_writers`). A
        lock that cannot be taken at all (a state dir that holds none) holds no writer either."""
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

    def _after_writers(self, seen: list[_Sighting]) -> None:
        """Log what the sightings ``seen`` found while a writer was at work, once it is done: the
        write lock waited for (as long as a writer waits for it), then the store's lock, in the order
        every writer takes them, with no transaction of this thread open (a writer waits for the
        store's lock while it holds the write lock). A writer of this thread is not waited for.

        Giving up (a writer took longer than that) leaves the version to the next sighting."""
        lock: FileLock | None = None
        if self.write_lock_path not in _held.__dict__.get("paths", ()):
            lock = FileLock(self.write_lock_path, timeout=LOCK_TIMEOUT_S, what="the write lock of this workspace's memory files")
            try:
                lock.acquire()
            except LockTimeout:
                return
            except StateDirError:
                lock = None
        try:
            with self.db.transaction():
                for sighting in seen:
                    self._log_after_writer(sighting)
        finally:
            if lock is not None:
                lock.release()

    def _log_after_writer(self, seen: _Sighting) -> None:
        """Log ``seen``, a version the file held while a writer was at work, now that none is,
        unless a writer logged it meanwhile.

        It was what the file held when seen (looked at under the store's lock). A writer that came
        to the file since logged it: as the version it replaced, a save its swap displaced, its own
        version it had put in place, or one it moved away; logged since, it is not logged again. A
        path whose log went on without it gets it only while the file still holds it (a version
        back again). A path that logged nothing since was written by no writer: the version is
        someone else's save, logged whatever the file holds now (a later save is the next sighting's)."""
        path = enc(seen.abs_path)
        since = [row[0] for row in self.db.rows("SELECT version FROM versions WHERE path = ? AND id > ? ORDER BY id",
                                                 (path, seen.after))]
        version, size = seen.snapshot
        if version in since:
            return
        if since:
            if not self._holds_now(seen.abs_path, seen.snapshot, None):
                return
        elif self.db.one("SELECT 1 FROM versions WHERE id > ? AND version = ? LIMIT 1", (seen.after, version)):
            return  # a move took it away from this path, logged
        if self.objects.fits(size) and not self.objects.touch(version):
            self._store_from_path(seen.abs_path, version)  # evicted since: kept again only if the file still holds it
        self.record(seen.abs_path, seen.display, version, size, EXTERNAL_EDIT, None, mode=seen.mode)

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
            raise UsageError(f"no version of {display} starts with {wanted} (see `openclaw-memory history {shell_word(display)}`)")
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
            fd, _st = self.open_file(abs_path)
        except OSError:
            return None
        try:
            return seen_mode(fd)
        finally:
            os.close(fd)

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
        # An expect names a version this session read (stale.check_write), never one seen elsewhere.
        raise BadValue(name, problem, hint=" (the version `read --json` gives, or a prefix of it)",
                       hint_tools=" (the version memory_get gives, or a prefix of it)")
    return wanted


def snapshot_fd(fd: int) -> FileVersion:
    """Hash the whole file open on ``fd`` from its start (streamed)."""
    os.lseek(fd, 0, os.SEEK_SET)
    version = hash_open_file(fd)
    return FileVersion(version, os.lseek(fd, 0, os.SEEK_CUR))


def seen_mode(fd: int) -> FileMode:
    """The mode a sighting logs: with a POSIX ACL, narrowed (fsutil.atomic.acl_narrowed_mode), as rm
    logs it: a note brought back by it (a rollback to before a move) gave its group what only the
    ACL's mask allowed a named user."""
    from ..fsutil.atomic import acl_narrowed_mode, read_xattrs

    mode = FileMode.of(os.fstat(fd))
    try:
        xattrs = read_xattrs(fd)
    except OSError:
        return mode._replace(mode=mode.mode & ~0o077)  # an ACL that cannot be read: give no one else anything
    return mode._replace(mode=acl_narrowed_mode(mode.mode, xattrs))
