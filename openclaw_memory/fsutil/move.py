"""Move a file without ever losing it, even across file systems.

``os.rename`` is atomic on one file system. Across file systems (EXDEV) we copy
into a temp file at the destination, fsync it, rename it into place, fsync the
folder, check the copy's hash against the source, and only then unlink the source.
At every instant the bytes exist complete at the source, the destination, or both.
"""

from __future__ import annotations

import errno
import os

from .atomic import fsync_dir, temp_name_beside
from .hashing import hash_open_file
from .safeopen import open_regular_nofollow

# Test-only: makes the first rename fail with EXDEV so the copy path runs on any machine.
INJECT_EXDEV_ENV = "OPENCLAW_MEMORY_TEST_INJECT_EXDEV"


class CopyMismatch(OSError):
    """The copy at the destination does not hash like the source; the source was kept."""


def _link_noreplace(src: str, dst: str) -> None:
    """Rename that never replaces a ``dst`` created meanwhile.

    A hard link fails with EEXIST when ``dst`` exists, where ``os.rename`` would
    silently replace it; between the link and the unlink both names hold the same
    inode, so a crash there loses nothing. File systems without hard links fall
    back to a plain rename after the existence check.
    """
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK):
            raise
        if os.path.lexists(dst):
            raise FileExistsError(errno.EEXIST, "destination exists", dst) from None
        os.rename(src, dst)
        return
    os.unlink(src)


def safe_move(src: str, dst: str, *, on_step=None) -> str:
    """Move ``src`` to ``dst`` (which must not exist). Returns ``"rename"`` or ``"copy"``.

    ``on_step`` is called with a step name before each irreversible step, so a
    caller can journal progress (and tests can kill the process there).
    """
    step = on_step or (lambda name: None)
    if os.path.lexists(dst):
        raise FileExistsError(errno.EEXIST, "destination exists", dst)
    try:
        step("rename")
        if os.environ.get(INJECT_EXDEV_ENV) == "1":
            raise OSError(errno.EXDEV, "injected cross-device error (test hook)", src)
        _link_noreplace(src, dst)
        fsync_dir(os.path.dirname(dst))
        fsync_dir(os.path.dirname(src))
        return "rename"
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    fd, st = open_regular_nofollow(src)
    try:
        tmp = temp_name_beside(dst)
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o7777)
        try:
            while True:
                block = os.read(fd, 1 << 20)
                if not block:
                    break
                view = memoryview(block)
                while view:
                    view = view[os.write(out, view):]
            os.fsync(out)
        finally:
            os.close(out)
        os.lseek(fd, 0, os.SEEK_SET)
        source_hash = hash_open_file(fd)
    finally:
        os.close(fd)
    step("copy-written")
    try:
        _link_noreplace(tmp, dst)
    except FileExistsError:
        os.unlink(tmp)
        raise
    fsync_dir(os.path.dirname(dst))
    fd, _ = open_regular_nofollow(dst)
    try:
        copy_hash = hash_open_file(fd)
    finally:
        os.close(fd)
    if copy_hash != source_hash:
        raise CopyMismatch(errno.EIO, "copy does not match the source; source kept", dst)
    step("unlink-source")
    os.unlink(src)
    fsync_dir(os.path.dirname(src))
    return "copy"
