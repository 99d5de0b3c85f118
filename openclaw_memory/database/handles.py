"""The open connections to state databases in this process, and how each one closes.

A connection is used by one thread at a time (its ``use`` lock; any thread may close an idle one)
and looks at its files before each use (:meth:`Handle.alive`): a database file moved away or
replaced is opened anew; companions (:mod:`.companions`) damaged under the process are dealt
with before SQLite reads them, so the checkpoint at the last close never copies frames the WAL
no longer holds over the good pages of the file:

- a ``-shm`` cut short: given back its size with its header cleared, and SQLite rebuilds the
  index from the WAL (instead of dying of SIGBUS on the first page past the cut);
- a WAL cut short or overwritten: the files are copied under ``damaged/`` (never lost) and the
  index cleared the same way: SQLite keeps what the WAL still holds, and says what is lost;
- the WAL deleted: the connection that still has it open copies it into the database
  (a checkpoint through its descriptor), then every connection opens the new one;
- the ``-shm`` deleted or replaced: another process now works on another index of the same
  WAL, so every connection of this process is closed (without a checkpoint) and opened on the
  one at the path.

SQLite checkpoints when a process's last connection closes. A connection here never does so
when it is only dropped (``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE``: a thread that ends drops its
connection, and could be the last): only :meth:`Handle.close`, after looking at the companions
once more, lets SQLite checkpoint. :func:`close_all` closes every connection so at exit and when
the service stops.
"""

from __future__ import annotations

import atexit
import functools
import os
import sqlite3
import sys
import threading
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StateDamaged
from ..fsutil.private import identity
from .companions import Companions, Unsealed, clear_index, companions, header_damage, hold, release, wal_damage
from .failures import BUSY_TIMEOUT_S, worded

if TYPE_CHECKING:
    import ctypes

# Every open connection of the process, held here until it is closed: a connection only dropped
# when its thread ends may live on (not yet collected), mapping an index the process let go of.
_all: set[Handle] = set()
_all_lock = threading.Lock()
_closing: dict[str, threading.RLock] = {}  # per database path: its closes one at a time (Handle.close)
_NO_CKPT_ON_CLOSE = 1006  # SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE (sqlite3.h; in Python's module from 3.12)


class Handle:
    def __init__(self, conn: sqlite3.Connection, path: str, degraded: bool = False):
        self.conn = conn
        self.path = path
        self.pid = os.getpid()
        self.file = identity(path)
        self.degraded = degraded  # read-only because the disk was full: tried anew at each use
        # A read-only copy (immutable: read-only media, a full disk) has no companions of its own.
        wal = conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        self.companions = companions(path) if wal else Companions(None, None, 0)
        # A connection that is only dropped (its thread ended) never checkpoints: only close() does,
        # after looking at the companions.
        _checkpoint_on_close(conn, path, False)
        self.use = threading.RLock()
        self.closed = False
        self.damaged: str | None = None  # the file was damaged under this connection: every use says so
        self.header_sound_at: tuple[int, int, int] | None = None  # the file's size and times when its header was last read sound
        self.owner = weakref.ref(threading.current_thread())
        _close_orphans()
        with _all_lock:
            _all.add(self)
        hold(path)

    def alive(self) -> bool:
        """Still the database at its path, its companions the ones it opened: a forked child opens
        its own, a file moved away (``doctor --fix`` set a damaged one aside) or replaced is
        opened anew, and damaged companions are dealt with (see the module docstring)."""
        if self.closed or self.degraded or self.pid != os.getpid():
            return False
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != self.file:
            return False
        self._check_header((st.st_size, st.st_mtime_ns, st.st_ctime_ns))
        try:
            return self._companions_sound()
        except sqlite3.Error as exc:
            raise worded(exc, self.path) from None

    def _check_header(self, key: tuple[int, int, int]) -> None:
        """Raise StateDamaged when the database file was written over (or cut) under this connection,
        its files copied under ``damaged/`` first, once: it read on from the WAL and its cache, and
        wrote on, a replaced note's last version committed into a file no process opens again. Read
        again only where the file's size or times (``key``: a write moves its ctime, which no program
        sets) are not those it was found sound with: in WAL mode the file changes at a checkpoint only."""
        if self.damaged is None:
            if key == self.header_sound_at:
                return
            why = header_damage(self.path, opened=True)
            if why is None:
                self.header_sound_at = key
                return
            kept = _keep_copies(self.path)
            self.damaged = (f"the state database ({self.path}) was damaged under this process: {why}; it is copied as it "
                            f"was, with its companions, to {kept}; `openclaw-memory doctor --fix` sets it "
                            "aside (never deleted) and makes a new state database with what it still holds")
        raise StateDamaged(self.damaged)

    def _companions_sound(self) -> bool:
        was = self.companions
        if was.wal is None or was.shm is None:
            return True  # a read-only copy
        now = companions(self.path)
        if now.shm != was.shm:
            _close_every(self.path)  # this process's index is not the one the others use
            return False
        if now.wal != was.wal:
            if now.wal is None:
                with self.use:  # only unlinked: this connection still reads it, so it is copied in
                    self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.close()
            return False
        why = wal_damage(self.path)
        if isinstance(why, Unsealed):
            why = self._seal()
        if now.shm_size < was.shm_size or why:
            kept = _keep_copies(self.path) if why else None
            clear_index(self.path, was.shm_size)
            with self.use:  # SQLite rebuilds the index now, from what the WAL really holds
                self.conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            now = companions(self.path)
            if kept is not None:
                self.companions = now
                raise StateDamaged(f"the state database's files were damaged under this process: {why}; what they "
                                   f"still hold is kept, and they are copied as they were to {kept}")
        if now.shm_size > was.shm_size:
            self.companions = now  # the index grew with the WAL
        return True

    def _seal(self) -> str | None:
        """Committed frames SQLite wrote without their checksums (:class:`.companions.Unsealed`) copied
        into the database file and the WAL emptied, while this process's index still names them: a
        rebuilt index (the next process after a crash) would drop them. A reader of another process
        that holds the WAL leaves them for the next use or the last close (never damage: the WAL
        holds what was committed)."""
        if self.conn.in_transaction:
            return None
        with self.use:
            self.conn.execute("PRAGMA busy_timeout = 0")
            try:
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            except sqlite3.OperationalError:
                pass  # busy: the next use tries again
            finally:
                self.conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        why = wal_damage(self.path)
        return None if isinstance(why, Unsealed) else why

    def close(self, checkpoint: bool | None = None) -> None:
        """Close the connection; without a checkpoint when ``checkpoint`` is False or, when None,
        when its companions are not sound or it is not this process's last connection to the file.

        One close at a time: which close is the last is decided and made in one step. Two threads
        closing at once (a service stopping) could each judge the other's still open: the one that
        found the WAL damaged closing first, the other, let checkpoint after a look at the new
        frames only, would be SQLite's last close and copy the damaged log into the file."""
        with _all_lock:
            closing = _closing.setdefault(self.path, threading.RLock())
        with closing:
            self._close(checkpoint)

    def _close(self, checkpoint: bool | None) -> None:
        if self.closed:
            return
        if checkpoint is None:
            was, now = self.companions, companions(self.path)
            if was.wal is not None and now.wal is None and now.shm == was.shm:
                # Only unlinked: this connection still reads it, so it is copied in before it is let go.
                try:
                    self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                except sqlite3.Error:
                    pass  # not copied in: the index still names its frames, and the next process says they are lost
            # SQLite checkpoints only at the close of the last connection to the file (it needs the
            # file to itself): only that close may, once it verified every frame again, not only those
            # new since the last use.
            with _all_lock:
                last = not any(h is not self and h.path == self.path and h.pid == self.pid and not h.closed for h in _all)
            checkpoint = last and self.damaged is None and header_damage(self.path, opened=True) is None and (
                was.shm is None or (now.wal == was.wal and now.shm == was.shm and now.shm_size >= was.shm_size
                                    and _closable(wal_damage(self.path, full=True))))
        if checkpoint:
            _checkpoint_on_close(self.conn, self.path, True)
        self.closed = True
        with _all_lock:
            _all.discard(self)
            last = not any(h.path == self.path and h.pid == self.pid for h in _all)
        self.conn.close()
        if last:
            release(self.path)


def _closable(why: str | None) -> bool:
    """Whether the last close may checkpoint: the WAL is sound, or holds frames SQLite wrote without
    their checksums (the checkpoint copies them into the file, which only a rebuilt index would lose)."""
    return why is None or isinstance(why, Unsealed)


def _ours(path: str | None = None) -> list[Handle]:
    with _all_lock:
        return [h for h in _all if (path is None or h.path == path) and not h.closed and h.pid == os.getpid()]


def _close_orphans() -> None:
    """Close the connections whose thread has ended (nobody else uses them)."""
    for handle in _ours():
        thread = handle.owner()
        if (thread is None or not thread.is_alive()) and handle.use.acquire(blocking=False):
            try:
                handle.close()
            finally:
                handle.use.release()


def _close_every(path: str) -> None:
    """Close every connection of this process to ``path``, without a checkpoint, so that the next
    one maps the index at the path (SQLite shares one mapping among a process's connections)."""
    for handle in _ours(path):
        if not handle.use.acquire(timeout=BUSY_TIMEOUT_S):
            raise StateDamaged(f"the state database's index ({path}-shm) was replaced under this process, and one of "
                               "its connections stayed busy; restart the process")
        try:
            handle.close(checkpoint=False)
        finally:
            handle.use.release()


def _keep_copies(path: str) -> Path:
    """Copies of the database and its companions under ``damaged/<stamp>/``, before SQLite rebuilds
    its index from what the WAL still holds (which may drop frames a person could still read)."""
    from ..fsutil.setaside import set_aside_copy

    data_dir = Path(os.path.dirname(path))
    folder = None
    for suffix in ("", "-wal", "-shm"):
        try:
            kept = set_aside_copy(data_dir, path + suffix, folder)
        except FileNotFoundError:
            continue
        folder = kept.parent
    return folder or data_dir


def _checkpoint_on_close(conn: sqlite3.Connection, path: str, on: bool) -> bool:
    """Whether SQLite checkpoints when ``conn`` closes (it does by default); False when this
    Python cannot say."""
    if hasattr(conn, "setconfig"):  # Python 3.12 and later
        conn.setconfig(sqlite3.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, not on)  # type: ignore[attr-defined]
        return True
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        return False  # the layout read below is CPython 3.11's only
    import ctypes  # here: 2 ms of every command's start, for what only a connection's close asks

    lib = _library()
    # The connection's sqlite3* is the first field after the object header (CPython 3.11's
    # pysqlite_Connection); it is used only when SQLite names this database for it.
    db = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
    named = lib.sqlite3_db_filename(db, b"main") if db else None
    if not named or os.path.realpath(os.fsdecode(named)) != os.path.realpath(path):
        return False
    done = ctypes.c_int(0)
    return lib.sqlite3_db_config(ctypes.c_void_p(db), ctypes.c_int(_NO_CKPT_ON_CLOSE), ctypes.c_int(0 if on else 1),
                                 ctypes.byref(done)) == 0


@functools.cache
def _library() -> ctypes.CDLL:
    """The SQLite library Python's sqlite3 module is linked with (its symbols through the module)."""
    import _sqlite3
    import ctypes

    lib = ctypes.CDLL(_sqlite3.__file__)
    lib.sqlite3_db_filename.restype = ctypes.c_char_p
    lib.sqlite3_db_filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    return lib


def settle(path: str) -> None:
    """Let this process's connections to ``path`` deal with what changed under them (a WAL only
    they still read is copied in) before a new connection opens it."""
    for handle in _ours(path):
        if handle.use.acquire(blocking=False):  # one in use looks for itself at its next use
            try:
                if not handle.closed and not handle.conn.in_transaction and not handle.alive():
                    handle.close()
            finally:
                handle.use.release()


def close_all() -> None:
    """Close every connection of this process (each one checks its companions first): when the
    service stops and at exit, so that the last close, which checkpoints, is one that looked."""
    for handle in _ours():
        # One still busy is left open: dropped at exit, it does not checkpoint.
        if handle.use.acquire(timeout=1.0):
            try:
                handle.close()
            finally:
                handle.use.release()


atexit.register(close_all)
