"""Look at one workspace entry: its type, its stat, and a hash of what it holds.

A regular file is hashed by the protocol that pairs a stat with the bytes it
describes: lstat -> open(O_NOFOLLOW | O_NONBLOCK) -> fstat (same device and inode
as the lstat, still a regular file) -> read in blocks -> fstat. If size, mtime or
ctime moved during the read, or the path was swapped between lstat and open, the
whole sequence is retried; after ``TRIES`` attempts the file is reported as
changing, without a hash. The stat kept is the fstat taken *before* the read, so a
write landing during the read always shows as a stat difference later.

Symlinks are never followed: their "content" is the target string (``readlink``).
FIFOs, sockets and devices are never opened: their content is their type (and
device number), so only a change of type or device shows.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass

from ..errors import OutOfFiles, is_out_of_files, printable
from ..fsutil.hashing import digest_fd, hash_bytes
from ..fsutil.safeopen import FILE_FLAGS as _OPEN_FLAGS

TRIES = 3

KIND_FILE = "f"
KIND_DIR = "d"


_KINDS = {stat.S_IFREG: "f", stat.S_IFDIR: "d", stat.S_IFLNK: "l", stat.S_IFIFO: "p", stat.S_IFSOCK: "s",
          stat.S_IFCHR: "c", stat.S_IFBLK: "b"}


def kind_of(mode: int) -> str:
    """One letter per file type: f, d, l, p (FIFO), s (socket), c, b (devices), ? (other)."""
    return _KINDS.get(stat.S_IFMT(mode), "?")


@dataclass(frozen=True)
class Observation:
    """One entry as seen now. ``digest`` is None when the content could not be pinned down."""

    kind: str
    st: os.stat_result | None  # None: the entry vanished while we looked
    digest: bytes | None
    observed_ns: int
    problem: str | None = None  # why there is no digest, for the warning

    @property
    def gone(self) -> bool:
        return self.st is None


def _special_digest(kind: str, st: os.stat_result) -> bytes:
    device = f":{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}" if kind in ("c", "b") else ""
    return bytes.fromhex(hash_bytes(f"special:{kind}{device}".encode()))


def _moved(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_size, a.st_mtime_ns, a.st_ctime_ns) != (b.st_size, b.st_mtime_ns, b.st_ctime_ns)


def observe(path: str, st: os.stat_result | None = None, *, dir_fd: int | None = None) -> Observation:
    """Observe the entry at ``path`` (``st``: its lstat, if already taken).

    With ``dir_fd``, ``path`` is a name in that open folder: the walk opens every
    folder from its parent's descriptor, so a folder swapped for a symlink meanwhile
    cannot make us read (or hash) anything outside the workspace.
    """
    last: os.stat_result | None = None
    for _ in range(TRIES):
        if st is None:
            try:
                st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                return Observation("", None, None, time.time_ns())
            except OSError as exc:
                return Observation("?", last, None, time.time_ns(), f"cannot stat: {exc.strerror}")
        kind = kind_of(st.st_mode)
        if kind == "l":
            try:
                target = os.readlink(path, dir_fd=dir_fd)
            except FileNotFoundError:
                return Observation("", None, None, time.time_ns())
            except OSError:  # EINVAL: no longer a symlink; look again
                st = None
                continue
            return Observation(kind, st, bytes.fromhex(hash_bytes(b"symlink:" + os.fsencode(target))), time.time_ns())
        if kind != "f":
            return Observation(kind, st, None if kind == "d" else _special_digest(kind, st), time.time_ns())
        last = st
        try:
            fd = os.open(path, _OPEN_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return Observation("", None, None, time.time_ns())
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # became a symlink since the lstat
                st = None
                continue
            if is_out_of_files(exc):  # a limit: "recorded without a hash" would read as a change at every look
                raise OutOfFiles(f"cannot read {printable(path)}") from None
            return Observation(kind, st, None, time.time_ns(), f"cannot read: {exc.strerror}")
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode) or (before.st_dev, before.st_ino) != (st.st_dev, st.st_ino):
                st = None  # swapped between lstat and open
                continue
            last = before
            try:
                digest = digest_fd(fd, before.st_size)
            except OSError as exc:
                return Observation(kind, before, None, time.time_ns(), f"cannot read: {exc.strerror}")
            after = os.fstat(fd)
            observed = time.time_ns()
        finally:
            os.close(fd)
        if not _moved(before, after):
            return Observation(kind, before, digest, observed)
        st = None
    return Observation(KIND_FILE, last, None, time.time_ns(), f"kept changing while being hashed ({TRIES} tries)")
