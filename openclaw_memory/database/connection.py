"""The state database: one SQLite file per data dir (``state.db``), opened once per thread.

Durability: WAL journal with ``synchronous=FULL``: a committed transaction is on disk (its WAL
frames fsynced) before ``commit`` returns, so a crash or power cut after a write keeps what the
write recorded; a crash before the commit leaves the previous state. Readers never wait for a
writer (WAL); a writer waits up to ``BUSY_TIMEOUT_S`` for another and then says who holds it.

Every SQLite failure becomes a typed error worded for the user: a damaged file
(:class:`~openclaw_memory.errors.StateDamaged`, which ``doctor --fix`` repairs), a full disk
(:class:`~openclaw_memory.errors.DiskFull`, the transaction rolled back), a busy database
(:class:`~openclaw_memory.errors.LockTimeout`) or a state dir that cannot be written.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..errors import DiskFull, StateDamaged, StateDirError, disk_full, is_no_space
from ..fsutil.atomic import dead_leftovers
from ..fsutil.move import NO_LINK, link_noreplace
from ..fsutil.private import make_dirs
from .companions import Unsealed, header_damage, held, not_a_file, odd_companions, wal_damage
from .failures import (
    BUSY_TIMEOUT_S,
    is_full,
    is_opened_read_only_on_a_full_disk,
    opened_read_only_on_a_full_disk,
    translated,
    worded,
)
from .handles import Handle, settle
from .rebuilding import rebuilding_words
from .schema import create_or_migrate

DB_NAME = "state.db"
_ROLE = {"-wal": "write-ahead log", "-shm": "write-ahead log's index"}

_local = threading.local()
_read_only: ContextVar[bool] = ContextVar("openclaw_memory_state_read_only", default=False)
# Within read_only(), the read-only connection of each database path, opened by its first peek and
# kept to the end: a plain doctor asks a few dozen questions, and a connection each cost 0.35 ms.
_kept: ContextVar[dict[str, sqlite3.Connection] | None] = ContextVar("openclaw_memory_state_peeks", default=None)


@contextmanager
def read_only() -> Iterator[None]:
    """Within it the database is only read, never created or migrated (plain ``doctor``,
    which writes nothing): a database that does not exist yet reads as empty, and a write is a bug."""
    token, kept = _read_only.set(True), _kept.set({})
    try:
        yield
    finally:
        for conn in (_kept.get() or {}).values():
            conn.close()
        _kept.reset(kept)
        _read_only.reset(token)


def is_read_only() -> bool:
    return _read_only.get()


def database_path(data_dir: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(data_dir), DB_NAME)


class Database:
    """The data dir's database. Cheap to make; the connection is opened on first use, one per
    thread and path, and shared by every ``Database`` of that path in the thread (so a transaction
    that calls code opening its own ``Database`` joins it instead of waiting for itself)."""

    def __init__(self, data_dir: str | os.PathLike[str]):
        self.data_dir = os.fspath(data_dir)
        self.path = database_path(self.data_dir)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def open(self) -> None:
        """Open this thread's connection now: the file created, migrated, an earlier layout imported."""
        self.conn  # noqa: B018 - the property opens it

    @property
    def conn(self) -> sqlite3.Connection:
        return self._handle().conn

    def _handle(self) -> Handle:
        cache: dict[str, Handle] = _local.__dict__.setdefault("handles", {})
        handle = cache.get(self.path)
        if handle is not None and (handle.closed or (not handle.conn.in_transaction and not handle.alive())):
            handle.close()
            handle = None
        if handle is None:
            conn = self._open()
            handle = Handle(conn, self.path, degraded=is_opened_read_only_on_a_full_disk(self.path))
            cache[self.path] = handle
        return handle

    @contextmanager
    def _using(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, held (its ``use`` lock) while the block uses it: another
        thread closes a connection only while nobody uses it (see :mod:`.handles`)."""
        while True:
            handle = self._handle()
            with handle.use:
                if not handle.closed:
                    yield handle.conn
                    return

    def unusable(self) -> str | None:
        """Why SQLite must not open the database as it is now, or None: what is at its path, or at its
        ``-wal`` or ``-shm``, is not a regular file (a FIFO would block the open forever), or its WAL
        lost committed frames; or ``doctor --fix`` is rebuilding it, or was killed doing so (:mod:`.rebuilding`)."""
        rebuild = rebuilding_words(self.data_dir)
        if rebuild is not None:
            return rebuild
        what = not_a_file(self.path)
        if what is not None:
            return f"{self.path} is {what}, not a database file"
        odd = odd_companions(self.path)
        if odd:
            return "; ".join(f"{path} is {what}, not the state database's {_ROLE[path[-4:]]}" for path, what in odd)
        if emptied(self.path):
            return (f"the state database ({self.path}) was emptied ({emptied_words(self.path)}) in a data dir that was "
                    "in use: its history is gone")
        header = header_damage(self.path)
        if header is not None:
            return f"the state database ({self.path}) is damaged: {header}"
        settle(self.path)  # this process's own connections first deal with what changed under them
        damage = wal_damage(self.path)
        if isinstance(damage, Unsealed) and held(self.path):
            damage = None  # this process's connections copy them in at their next use (Handle.alive)
        return None if damage is None else f"the state database ({self.path}) is damaged: {damage}"

    def _refuse_unusable(self) -> None:
        why = self.unusable()
        if why is None:
            return
        if rebuilding_words(self.data_dir) is not None:
            raise StateDamaged(f"{why}; no command opens the state database meanwhile: wait for it to finish, or, where it "
                               "was interrupted, run `openclaw-memory doctor --fix`, which finishes it")
        if not_a_file(self.path) is None and odd_companions(self.path):
            raise StateDamaged(f"{why}; `openclaw-memory doctor --fix` moves it aside (never deleted) and keeps the "
                               "database itself")
        if emptied(self.path):
            raise StateDamaged(f"{why}; `openclaw-memory doctor --fix` sets the empty file aside (never deleted) and "
                               "starts a new state database")
        raise StateDamaged(f"{why}; `openclaw-memory doctor --fix` sets it aside (never deleted) and "
                           "makes a new state database with what it still holds")

    def _open(self) -> sqlite3.Connection:
        try:
            make_dirs(self.data_dir)
        except OSError as exc:
            raise StateDirError(f"cannot create the state dir {self.data_dir}: {exc.strerror or exc}") from None
        self._refuse_unusable()
        _owner_only(self.path)
        try:
            with translated(self.path):
                conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("PRAGMA synchronous=FULL")
                    create_or_migrate(conn)
                except BaseException:
                    conn.close()
                    raise
        except StateDirError:
            if not self.exists():
                raise
            return self._read_only_copy()  # a read-only state dir (or file): what it holds still reads
        except DiskFull:
            # SQLite cannot make its -shm: what the file holds still reads when no other process
            # has writes pending in the WAL (those are not in the file yet) and it has its tables.
            if not (self.exists() and wal_is_empty(self.path)):
                raise
            conn = self._read_only_copy()
            if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0:
                conn.close()
                raise
            opened_read_only_on_a_full_disk(self.path)
            return conn
        opened_read_only_on_a_full_disk(self.path, False)
        return conn

    def _read_only_copy(self) -> sqlite3.Connection:
        """The database as it is on read-only media (``immutable``: no lock, no ``-shm``); a write
        through it fails as SQLite's "readonly", worded as a state dir that cannot be written."""
        with translated(self.path):
            conn = sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return conn

    def rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        """A query outside any transaction (WAL: it reads the last committed state, never waits)."""
        if _read_only.get():
            return self._peek(sql, params)
        with translated(self.path), self._using() as conn:
            return conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: tuple = ()) -> tuple | None:
        found = self.rows(sql, params) if _read_only.get() else None
        if found is not None:
            return found[0] if found else None
        with translated(self.path), self._using() as conn:
            return conn.execute(sql, params).fetchone()

    def _peek(self, sql: str, params: tuple) -> list[tuple]:
        self._refuse_unusable()
        if not self.exists():
            return []
        with translated(self.path):
            try:
                return peek(self.path, sql, params)
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return []  # a database of an earlier schema: what it lacks reads as empty
                raise

    @contextmanager
    def transaction(self, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``: taken at the start, so a check and the write it
        decides are one step); nested calls in the thread join the outer one.

        ``wait=False`` gives up at once (LockTimeout) when another process is writing: for a write
        that is only a cache, which a reader must not wait for.
        """
        if _read_only.get():
            raise RuntimeError("a write to the state database where only reading is allowed (plain doctor)")
        with self._using() as conn:
            if conn.in_transaction:
                with translated(self.path):
                    yield conn
                return
            with self._transaction(conn, wait):
                yield conn

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection, wait: bool) -> Iterator[None]:
        with translated(self.path):
            if wait:
                conn.execute("BEGIN IMMEDIATE")
            else:
                conn.execute("PRAGMA busy_timeout = 0")
                try:
                    conn.execute("BEGIN IMMEDIATE")
                finally:
                    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            try:
                yield
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # also when the commit itself failed (a full disk)
                    conn.rollback()
                raise

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Inside a transaction: what the block wrote is undone if it fails, the rest stays."""
        conn = self.conn
        with translated(self.path):
            conn.execute("SAVEPOINT step")
            try:
                yield
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK TO step")
                    conn.execute("RELEASE step")
                raise
            conn.execute("RELEASE step")

    def close(self) -> None:
        """Close this thread's connection (the next use opens it again)."""
        handle = _local.__dict__.get("handles", {}).pop(self.path, None)
        if handle is not None:
            handle.close()


def _owner_only(path: str) -> None:
    """The database file made (or left by a process with another umask) 0600 before SQLite opens it: SQLite
    gives its ``-wal`` and ``-shm`` the database file's mode, whatever the umask. The file and its
    companions are given 0600 back too when they are this user's and closed to them (see
    :func:`.companions.closed_to_us`).

    An existing file is changed by its path, never through a descriptor: closing any descriptor
    of the file drops every POSIX lock this process holds on it, SQLite's connections' included,
    and another process's last close would then checkpoint and delete the WAL and its index
    under them (a service's other threads keep the database open)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        _create(path)  # nobody holds a lock on a file that did not exist
        return
    except OSError:
        return
    if st.st_size == 0 and (dir_fd := _open_folder(os.path.dirname(path) or ".")) is not None:
        try:
            _sweep_new(dir_fd)  # a creation in place killed: what it made under its private name
        finally:
            os.close(dir_fd)
    for each in (path, path + "-wal", path + "-shm"):
        if each != path:
            try:
                st = os.lstat(each)
            except OSError:
                continue
        # Open to others, or (ours) closed to its owner: a chmod 000, a restore that lost the modes,
        # where SQLite could only say "unable to open database file".
        if stat.S_ISREG(st.st_mode) and (st.st_mode & 0o077 or (st.st_uid == os.geteuid() and st.st_mode & 0o600 != 0o600)):
            try:
                os.chmod(each, 0o600)
            except OSError:
                pass  # not ours to change (root's file in a user's data dir): the data dir is 0700 all the same


NEW_PREFIX = ".state.db.new-"  # a new database file's name until it is put in place (see _create)
_NEW_AGE_S = 60.0  # a creation takes milliseconds: its private name and state.db are written within this
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _open_folder(folder: str) -> int | None:
    """A descriptor of the data dir (the folder the path names, as SQLite's own open reaches it), or None."""
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None


def _create(path: str) -> None:
    """A new database file put at ``path`` already a database (its first page written, WAL mode):
    made under a private name beside it, 0600, then put into place (:func:`~openclaw_memory.fsutil.move.link_noreplace`:
    a hard link, or RENAME_NOREPLACE where the file system has no hard links; never over a file
    made meanwhile, whose maker's database is then used). So no state.db this release makes is ever
    0 bytes, and a 0-byte one in a data dir that holds anything else was emptied after it was in use
    (:func:`emptied`).

    A creation that fails (a full disk, a quota) leaves nothing at ``path``: the private name is
    removed and the failure raised worded (before, an empty file was made at ``path`` anyway, which
    every later command refused as "emptied"). Where the file system has neither hard links nor
    RENAME_NOREPLACE the file is made at ``path`` itself (O_EXCL) and its first page written there;
    if that fails the 0-byte file made is removed again. Private names left by killed creations are
    swept first (:func:`_sweep_new`). Every step is a name in the data dir's descriptor, but SQLite's
    writing of the first page, which goes by path."""
    folder = os.path.dirname(path) or "."
    dir_fd = _open_folder(folder)
    if dir_fd is None:
        return  # a closed state dir: SQLite's own open says what is wrong, and makes nothing
    temp = f"{NEW_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    try:
        _sweep_new(dir_fd)
        try:
            os.close(os.open(temp, _FLAGS, 0o600, dir_fd=dir_fd))
            _first_page(os.path.join(folder, temp))
        except FileExistsError:
            return  # (a private name taken: cannot happen) SQLite's own open goes on
        except OSError as exc:
            if is_no_space(exc):
                raise disk_full(exc, f"the state dir ({folder})", folder=folder) from None
            return  # a read-only or closed state dir: SQLite's own open says what is wrong, and makes nothing
        except sqlite3.Error as exc:
            raise worded(exc, path) from None
        linked: list[bool] = []
        try:
            link_noreplace(dir_fd, temp, dir_fd, os.path.basename(path), on_linked=lambda: linked.append(True),
                           checked_rename=False)
        except FileExistsError:
            return  # made meanwhile by another process: theirs is used
        except OSError as exc:
            if linked:
                return  # in place; only the private name's unlink failed (swept below)
            if is_no_space(exc):
                raise disk_full(exc, f"the state dir ({folder})", folder=folder) from None
            if exc.errno in NO_LINK or exc.errno == errno.EXDEV:  # neither hard links nor RENAME_NOREPLACE
                _create_in_place(dir_fd, path)
    finally:
        for each in (temp, f"{temp}-wal", f"{temp}-shm"):
            try:
                os.unlink(each, dir_fd=dir_fd)
            except OSError:
                pass
        os.close(dir_fd)


def _first_page(path: str) -> None:
    """Write the database's first page (WAL mode) into the empty file at ``path``, and fsync it."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")  # writes the first page: the file is a database
    finally:
        conn.close()
    if os.path.getsize(path) == 0:
        raise OSError(errno.EIO, "the new database's first page was not written")
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)  # its first page on disk before its name is: a power cut leaves no 0-byte state.db
    finally:
        os.close(fd)


def _create_in_place(dir_fd: int, path: str) -> None:
    """Neither hard links nor RENAME_NOREPLACE: the file made at ``path`` (never over one made
    meanwhile) and its first page written there; the 0-byte file is removed again when that fails
    (only the file this call made)."""
    name = os.path.basename(path)
    try:
        fd = os.open(name, _FLAGS, 0o600, dir_fd=dir_fd)
    except OSError:
        return  # made meanwhile, or refused: SQLite's own open uses it or says what is wrong
    try:
        made = os.fstat(fd)
    finally:
        os.close(fd)
    try:
        _first_page(path)
    except (OSError, sqlite3.Error) as exc:
        try:
            st = os.lstat(name, dir_fd=dir_fd)
            if (st.st_dev, st.st_ino) == (made.st_dev, made.st_ino) and st.st_size == 0:
                os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
        if isinstance(exc, sqlite3.Error):
            raise worded(exc, path) from None
        if is_no_space(exc):
            raise disk_full(exc, f"the state dir ({os.path.dirname(path) or '.'})", folder=os.path.dirname(path) or ".") from None


def dead_creations(dir_fd: int) -> list[tuple[str, os.stat_result]]:
    """The ``.state.db.new-*`` leftovers in the data dir open on ``dir_fd`` that are dead and may go,
    each with its ``lstat``, sorted by name: what a creation (:func:`_create`) killed before it put its
    database in place left under its private name (the file, its ``-wal``/``-shm``, a sweep's own
    aside name). The one rule for the next creation's sweep (:func:`_sweep_new`) and doctor's
    ``state-temp-leftovers`` (which names and removes them once state.db is in place).

    Dead as :func:`~openclaw_memory.fsutil.atomic.dead_leftovers` says (a regular file of this user's,
    not written for ten minutes; the sweep had a rule of its own, a minute: a creation stalled that
    long lost its file, found nothing to put in place, and left SQLite's own open to make state.db,
    0 bytes until its first write)."""
    try:
        names = sorted(n for n in os.listdir(dir_fd) if n.startswith(NEW_PREFIX))
    except OSError:
        return []
    return dead_leftovers(dir_fd, names)


def _sweep_new(dir_fd: int) -> None:
    """Remove what killed creations left (:func:`dead_creations`), each as the object checked: moved
    to a name of this call's own, compared with what was checked (device, inode) and only then
    removed; another object found there is put back."""
    for name, st in dead_creations(dir_fd):
        gone = f"{NEW_PREFIX}swept-{os.getpid()}-{os.urandom(4).hex()}"
        try:
            os.rename(name, gone, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            continue
        try:
            moved = os.lstat(gone, dir_fd=dir_fd)
            if (moved.st_dev, moved.st_ino) == (st.st_dev, st.st_ino):
                os.unlink(gone, dir_fd=dir_fd)
            else:
                os.rename(gone, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError:
            pass


# A database file shorter than SQLite's 100-byte header holds no database: SQLite takes a file of a
# few bytes (``truncate -s 1``) for an empty one, as it does a 0-byte file, and made a new database
# in it, the history gone without a word.
SQLITE_HEADER = 100


def emptied_words(path: str) -> str:
    """How the emptied database at ``path`` is said: "0 bytes", or what it was cut to."""
    try:
        size = os.lstat(path).st_size
    except OSError:
        size = 0
    return "0 bytes" if size == 0 else f"cut to {size} byte{'s' if size > 1 else ''}, less than a database's header"


def emptied(path: str) -> bool:
    """Whether the database at ``path`` is a 0-byte file (or one shorter than SQLite's header, which
    SQLite takes for an empty one) in a data dir that was in use: one that holds
    anything else (a lock, ``index/``, ``damaged/``, a ``-wal``...). This release never makes a 0-byte
    state.db (:func:`_create`), and everything else in the data dir is made by a command that has used
    the database or was about to, so that file was emptied (a crash's zero-length file, a bad copy) and
    the history it held is gone; it is never silently taken for a new database. A 0-byte state.db alone
    (an earlier release killed while making it on the first run) is a new one."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size >= SQLITE_HEADER:
        return False
    try:
        names = os.listdir(os.path.dirname(path) or ".")
    except OSError:
        return False
    name = os.path.basename(path)
    if _creation_cut_short(os.path.dirname(path) or ".", names, st):
        return False
    return any(n != name and not n.startswith(NEW_PREFIX) for n in names)


def _creation_cut_short(folder: str, names: list[str], st: os.stat_result) -> bool:
    """Whether the 0-byte state.db (``st``) is a creation in place killed before its first page was
    written (:func:`_create_in_place`, where the file system has no hard links): the database made
    under the private name is still beside it, not empty, and no more than a minute apart from it.
    A state.db emptied later is far younger than any such leftover."""
    for each in names:
        if not each.startswith(NEW_PREFIX) or each.endswith(("-wal", "-shm")):
            continue
        try:
            made = os.lstat(os.path.join(folder, each))
        except OSError:
            continue
        if stat.S_ISREG(made.st_mode) and made.st_size > 0 and abs(made.st_mtime - st.st_mtime) <= _NEW_AGE_S:
            return True
    return False


def wal_is_empty(path: str) -> bool:
    """Whether no writes wait in the WAL beside ``path`` (so the main file is the whole database)."""
    try:
        return os.path.getsize(path + "-wal") == 0
    except FileNotFoundError:
        return True
    except OSError:
        return False


def peek(path: str, sql: str, params: tuple = ()) -> list[tuple]:
    """``sql`` on a read-only connection that writes nothing (SQLite still keeps its readers' marks
    in the ``-shm`` beside the file, as any reader does); raises sqlite3.Error."""
    kept = _kept.get()
    if kept is not None and path in kept:
        return kept[path].execute(sql, params).fetchall()
    for mode in ("ro", "ro&immutable=1"):  # immutable: read-only media or a full disk, where no -shm can be made
        conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT_S)
        try:
            rows = conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            conn.close()
            no_shm = getattr(exc, "sqlite_errorname", "") == "SQLITE_CANTOPEN" or (is_full(exc, path) and wal_is_empty(path))
            if not no_shm or mode != "ro":
                raise
            continue
        except BaseException:
            conn.close()
            raise
        if kept is None:
            conn.close()
        else:
            kept[path] = conn
        return rows
    return []


def forget_connections() -> None:
    """Close every connection of this thread (a test that replaces the data dir's files)."""
    for handle in _local.__dict__.pop("handles", {}).values():
        handle.close()
