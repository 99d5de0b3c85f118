"""An OS advisory lock (flock) that records its holder's pid and waits briefly."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from ..errors import LockTimeout, StateDirError, disk_full, is_no_space
from .private import closed_to_me, make_dirs

# The lock files this process holds now, by path: a wait on one of them is a wait for another call
# of this same process (an MCP server's parallel calls), which the file's pid cannot always say (it
# is written just after the lock is taken, emptied just before it is let go, and not written at all
# on a full disk). Counted: a thread may take it between another's unlock and that one's count.
_HELD_HERE: Counter[str] = Counter()
_HELD_HERE_LOCK = threading.Lock()


class FileLock:
    """Exclusive lock on ``path``; waits up to ``timeout`` seconds, then raises LockTimeout.

    The kernel drops a flock when its holder dies, SIGKILL included, so a crashed
    process never leaves the lock taken; the pid written inside is only for messages.

    ``remove=True`` deletes the lock file on release (a service leaves nothing behind). A
    waiter may then hold a lock on the deleted file, so each acquire checks that the file
    it locked is still the one at ``path`` and starts again when it is not.
    """

    def __init__(self, path: str, *, timeout: float = 5.0, what: str = "this workspace", remove: bool = False,
                 readable: bool = False):
        self.path = path
        # ``readable``: a reader's lock, taken all the same on a file system mounted read-only (a
        # state dir bind-mounted so), where no lock file can be made or written; a writer's lock
        # there stays an error, before the writer changes anything (a note written with no history).
        self.readable = readable
        self.timeout = timeout
        self.what = what
        self.remove = remove
        self._fd: int | None = None

    def holder_pid(self) -> str:
        try:
            with open(self.path, encoding="utf-8") as fh:
                return fh.read().strip() or "unknown"
        except OSError:
            return "unknown"

    def acquire(self, on_wait=None) -> None:
        try:
            make_dirs(os.path.dirname(self.path))
            fd = _open_private(self.path)
        except OSError as exc:
            if self.readable and exc.errno == errno.EROFS and (read_only := _open_read_only(self.path)) is not False:
                if read_only is None:
                    return  # no lock file on a read-only file system: no writer here has one to hold
                fd = read_only
            elif is_no_space(exc):  # (no inode for a new lock file: "is the state dir writable?" sent people astray)
                folder = os.path.dirname(self.path)
                raise disk_full(exc, f"the state dir ({folder})", folder=folder) from None
            else:
                why = _why_refused(self.path, exc)
                raise StateDirError(f"cannot take the lock for {self.what} at {self.path}: {exc.strerror or exc} ({why})") from None
        deadline = time.monotonic() + self.timeout
        told = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if self.remove and not _still_at(fd, self.path):
                    os.close(fd)  # its holder deleted it on release: lock the new file instead
                    fd = _open_private(self.path)
                    continue
                with _HELD_HERE_LOCK:
                    _HELD_HERE[self.path] += 1
                break
            except BlockingIOError:
                if not told and on_wait is not None:
                    on_wait(str(os.getpid()) if _HELD_HERE[self.path] > 0 else self.holder_pid())
                    told = True
                if time.monotonic() >= deadline:
                    holder = self.holder_pid()
                    os.close(fd)
                    raise LockTimeout(
                        f"{self.what} is held by another openclaw-memory process (pid {holder}); "
                        f"waited {self.timeout:g} s. Try again when it has finished."
                    ) from None
                time.sleep(0.05)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # a full disk: the lock holds all the same, only the pid for messages is missing
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                # Unlinked while still locked, so a waiter sees a deleted file; only when the file at
                # the path is ours: one removed under us left the name to a new holder's file.
                if self.remove and _still_at(fd, self.path):
                    os.unlink(self.path)
                else:
                    os.ftruncate(fd, 0)
            except OSError:
                pass  # the pid is informational; the unlock below is what matters
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                with _HELD_HERE_LOCK:
                    _HELD_HERE[self.path] -= 1

    def held_at_path(self) -> bool:
        """Held, and its file still the one at ``path`` (not removed, with its folder, under us)."""
        return self._fd is not None and _still_at(self._fd, self.path)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


# What an open of the lock file answers when something else is at its path: a symbolic link
# (O_NOFOLLOW), a folder, a socket; or a file this user may not open (chmod 000, another user's).
_NOT_A_FILE = (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EACCES)


def _open_private(path: str) -> int:
    """The lock file, owner-only (0600, never through a symlink): a user who could open it could
    flock it, and so hold every writer of this workspace waiting. A link, folder or socket at its
    path (a bad restore, a person's mistake), or a file this user may not open, holds no lock of
    anyone's, since nothing of ours can open it as one: it is set aside under the data dir's ``damaged/`` (never deleted) and the lock file
    made anew, as for any lock file, which only ever holds a pid. So is a FIFO, which opens
    (read and write) and locks, but blocks every reader that opens it to see who holds it."""
    try:
        fd = _open_lock_file(path)
    except OSError as exc:
        if exc.errno not in _NOT_A_FILE or not set_aside_odd_lock(path):
            raise
        return _open_lock_file(path)
    if not stat.S_ISREG(os.fstat(fd).st_mode) and set_aside_odd_lock(path):
        os.close(fd)
        return _open_lock_file(path)
    return fd


def _why_refused(path: str, exc: OSError) -> str:
    """What to do when the lock file ``path`` could not be made or opened: the thing in the way, the
    folder closed to this user (named with its ``chmod``), or a read-only file system."""
    if exc.errno in (errno.EEXIST, errno.ENOTDIR):
        return _in_the_way(path)
    if exc.errno in (errno.EACCES, errno.EPERM):
        from ..errors import closed_on_the_way

        return closed_on_the_way(path) or "is the state dir writable?"
    if exc.errno == errno.EROFS:
        return "a read-only file system: remount it read-write, or give another state dir (--state-dir)"
    return "is the state dir writable?"


def _in_the_way(path: str) -> str:
    """What to do about something other than a folder on the way to the lock file ``path``: inside
    the data dir (a file at watch/), doctor names it and ``--fix`` moves it; the data dir itself or
    above, the user moves it."""
    from .setaside import data_dir_above, not_a_folder

    blocker = next((p for p in reversed(Path(path).parents) if not_a_folder(p)), None)
    if blocker is None:
        return "is the state dir writable?"
    data_dir = data_dir_above(path)
    if data_dir is not None and data_dir in blocker.parents:
        return f"{blocker} is not a folder: `openclaw-memory doctor --fix` moves it aside"
    return f"{blocker} is not a folder: move it away"


def set_aside_odd_lock(path: str, moved: list[Path] | None = None) -> bool:
    """Move what is at the lock path ``path`` under the data dir's ``damaged/`` when it is not a
    regular file, or one this user cannot open; True when nothing odd is there now. Where it went is
    added to ``moved`` (doctor reports it).

    Under an exclusive flock of the folder, so two processes finding the same thing never both
    move something: the second looks again and finds the lock file the first one made (moving
    that would take a held lock from under its holder)."""
    from .setaside import data_dir_above, set_aside

    data_dir = data_dir_above(path)
    if data_dir is None:
        return False
    folder = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        if not stat.S_ISREG(st.st_mode) or closed_to_me(st):
            target = set_aside(data_dir, path)
            if moved is not None and target is not None:
                moved.append(target)
        return True
    finally:
        os.close(folder)


def read_only_mount(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` (or its nearest existing folder above) lies on a file system mounted
    read-only: nothing on this mount can be written there, by us or by any other writer."""
    return on_nearest_there(os.fspath(path), lambda there: bool(os.statvfs(there).f_flag & os.ST_RDONLY))


def on_nearest_there(path: str, look: Callable[[str], bool]) -> bool:
    """``look`` of ``path``, or of the nearest folder above it that is there; False where none is,
    or where looking fails otherwise."""
    while True:
        try:
            return look(path)
        except FileNotFoundError:
            parent = os.path.dirname(path)
            if parent == path:
                return False
            path = parent
        except OSError:
            return False


def _open_read_only(path: str) -> int | None | bool:
    """The lock file of a read-only file system (a state dir mounted read-only), opened for reading,
    which flock locks all the same: a writer through another, writable mount of the same folder still
    waits for a reader here, and the reader for it. None: there is no lock file (none was ever taken
    there, and none can be made); False: it cannot be opened (a link, no permission)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError:
        return False
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return False
    return fd


def _open_lock_file(path: str) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        st = os.fstat(fd)
        if st.st_mode & 0o077 and st.st_uid == os.geteuid():
            os.fchmod(fd, 0o600)  # made by a process with another umask (a library's host)
    except OSError:
        os.close(fd)
        raise
    return fd


def _still_at(fd: int, path: str) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def lock_holder(path: str) -> str | None:
    """The pid written in a lock file whose lock is held right now, else None. Takes nothing, writes nothing.
    (Non-blocking: a FIFO at the path would hold a plain read-only open until a writer came.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
