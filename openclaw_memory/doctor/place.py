"""Small file-system steps the repairs share: read a root file, place a file without replacing."""

from __future__ import annotations

import errno
import os

from ..fsutil.hashing import hash_open_file
from ..fsutil.safeopen import NotRegularFile, open_regular_nofollow
from . import hooks

# Link unsupported (FAT, some FUSE file systems): fall back to check-then-rename.
_NO_LINK = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK, errno.EXDEV}


def read_regular(path: str) -> bytes:
    """The bytes of a regular file (never through a symlink, never a FIFO)."""
    fd, _ = open_regular_nofollow(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def hash_or_none(path: str) -> str | None:
    """xxh3 of a regular file, or None when it is missing or not a regular file."""
    try:
        fd, _ = open_regular_nofollow(path)
    except (FileNotFoundError, NotRegularFile):
        return None
    try:
        return hash_open_file(fd)
    finally:
        os.close(fd)


def place_no_replace(src: str, dst: str, step_prefix: str) -> None:
    """Give ``src`` the name ``dst`` in the same folder, never replacing an existing ``dst``.

    A hard link fails atomically when ``dst`` exists (FileExistsError); the source
    name is removed only after the link is in place, so a crash between the two
    leaves two names for the same bytes, which recovery recognises by inode.
    """
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _NO_LINK:
            raise
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, "destination exists", dst) from None
        os.rename(src, dst)
        return
    hooks.reach(f"{step_prefix}:linked")
    os.unlink(src)


def same_file(a: str, b: str) -> bool:
    try:
        sa, sb = os.lstat(a), os.lstat(b)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
