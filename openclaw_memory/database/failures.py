"""SQLite's failures as the product's typed errors, worded for the user (see :mod:`.connection`)."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import LockTimeout, MemoryToolError, StateDamaged, StateDirError, disk_full, no_inode_left

BUSY_TIMEOUT_S = 10.0


def enc(text: str) -> bytes:
    """A path, name or key as stored: its bytes (a name that is not UTF-8 round-trips exactly)."""
    return text.encode("utf-8", "surrogateescape")


def dec(data: bytes) -> str:
    return bytes(data).decode("utf-8", "surrogateescape")


def stat_int(value: int) -> int:
    """A stat field as stored: SQLite's INTEGER is signed 64-bit, and a time past 2262-04-11 in
    nanoseconds (ext4 keeps dates until 2446, tmpfs any: a `touch -d` typo, an archive's bogus
    date) or an inode over 2**63 (overlayfs, NFS) is not; such a value is stored as the nearest
    one that is. It never equals the file's own stat again, so that file is hashed again at each
    check: a change is never missed, nothing fails (every index stopped on an OverflowError), and a
    date filter still reads the time as the latest (or earliest) a stored one can be."""
    return max(_INT64_MIN, min(_INT64_MAX, value))


_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


@contextmanager
def translated(path: str) -> Iterator[None]:
    """SQLite's failures as the product's errors (see the module docstring)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise worded(exc, path) from None


# Databases opened read-only because their disk is full: a write through one is a full disk.
_opened_full: set[str] = set()


def opened_read_only_on_a_full_disk(path: str, full: bool = True) -> None:
    if full:
        _opened_full.add(path)
    else:
        _opened_full.discard(path)


def is_opened_read_only_on_a_full_disk(path: str) -> bool:
    return path in _opened_full


def is_full(exc: sqlite3.Error, path: str) -> bool:
    """Whether ``exc`` means no space: SQLite's "full", or an I/O error (its ``-shm`` cannot grow,
    a page cannot be written) on a file system with no space left."""
    name = getattr(exc, "sqlite_errorname", "") or ""
    if name == "SQLITE_FULL" or "disk is full" in str(exc) or name == "SQLITE_IOERR_SHMSIZE":
        return True
    if name.startswith("SQLITE_READONLY") and path in _opened_full:
        return True
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_IOERR")) and no_inode_left(os.path.dirname(path)):
        return True  # (SQLite cannot make its journal or -wal: it says "readonly database")
    if not name.startswith("SQLITE_IOERR"):
        return False
    try:
        vfs = os.statvfs(os.path.dirname(path))
    except OSError:
        return False
    free = vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail
    return free * vfs.f_frsize < 64 * 1024


def full_error(exc: sqlite3.Error, path: str) -> MemoryToolError | None:
    """The disk-full error of the database at ``path`` where ``exc`` is SQLite out of space; else None."""
    if not is_full(exc, path):
        return None
    folder = os.path.dirname(path)
    return disk_full(OSError(errno.ENOSPC, "No space left on device"), f"the state dir ({folder})", folder=folder)


def worded(exc: sqlite3.Error, path: str) -> MemoryToolError:
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if (full := full_error(exc, path)) is not None:
        return full
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return LockTimeout(
            f"the state database ({path}) is busy: another openclaw-memory process kept it for more than "
            f"{BUSY_TIMEOUT_S:g} s; nothing was changed, try again"
        )
    if (name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text or "not a database" in text
            or text.startswith(("no such table", "no such column"))):  # (our tables: one dropped by hand, a bad restore)
        return StateDamaged(
            f"the state database ({path}) is damaged ({text}); `openclaw-memory doctor --fix` sets it aside, "
            "rebuilds it and recovers what it still holds"
        )
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        from .companions import closed_to_us

        closed = closed_to_us(path)
        if closed:  # (this user's own are given 0600 back before each open: another user's)
            each, mode, uid = closed[0]
            return StateDirError(f"cannot open the state database: {each} cannot be read or written by this user "
                                 f"(mode {mode:03o}, owner uid {uid}): give it back to this user (`chown`)")
        return StateDirError(f"cannot write the state database ({path}): {text} (is the state dir writable?)")
    if name.startswith("SQLITE_IOERR"):
        return MemoryToolError(f"cannot read or write the state database ({path}): an I/O error ({text}); nothing was changed")
    return MemoryToolError(f"the state database ({path}) failed: {text}")
