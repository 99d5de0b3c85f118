"""Move a file without ever losing it, even across file systems.

``rename`` is atomic on one file system. Across file systems (EXDEV) we copy into
a temp file at the destination, fsync it, rename it into place, fsync the folder,
check the copy's hash against the source, and only then unlink the source. At
every instant the bytes exist complete at the source, the destination, or both.

Both ends are a name in a folder held open by descriptor (see :mod:`.safeopen`):
every link, rename, unlink and fsync is an ``*at`` call on those descriptors, so a
folder swapped for a symlink while the move runs cannot send the file outside.
"""

from __future__ import annotations

import errno
import os

from .atomic import write_temp_beside
from .hashing import hash_open_file
from .safeopen import open_regular_nofollow

# Test-only: makes the first rename fail with EXDEV so the copy path runs on any machine.
INJECT_EXDEV_ENV = "OPENCLAW_MEMORY_TEST_INJECT_EXDEV"
# No hard links on this file system (FAT, some FUSE/SMB mounts): check, then rename.
NO_LINK = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK})


class CopyMismatch(OSError):
    """The copy at the destination does not hash like the source; the source was kept."""


def link_noreplace(src_dir: int, src: str, dst_dir: int, dst: str, *, on_linked=None) -> None:
    """Rename that never replaces a ``dst`` created meanwhile.

    A hard link fails with EEXIST when ``dst`` exists, where a rename would silently
    replace it; between the link and the unlink both names hold the same inode, so
    a crash there loses nothing. File systems without hard links fall back to a
    plain rename after the existence check. ``on_linked`` runs between link and unlink.
    """
    try:
        os.link(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in NO_LINK:
            raise
        try:
            os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(src, dst, src_dir_fd=src_dir, dst_dir_fd=dst_dir)
            return
        raise FileExistsError(errno.EEXIST, "destination exists", dst) from None
    if on_linked is not None:
        on_linked()
    os.unlink(src, dir_fd=src_dir)


def safe_move(src_dir: int, src: str, dst_dir: int, dst: str, *, on_step=None) -> str:
    """Move ``src`` (a name in ``src_dir``) to ``dst`` in ``dst_dir`` (which must not exist).

    Returns ``"rename"`` or ``"copy"``. ``on_step`` is called with a step name before
    each irreversible step, so a caller can journal progress (and tests can kill the
    process there).
    """
    step = on_step or (lambda name: None)
    try:
        os.stat(dst, dir_fd=dst_dir, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        raise FileExistsError(errno.EEXIST, "destination exists", dst)
    try:
        step("rename")
        if os.environ.get(INJECT_EXDEV_ENV) == "1":
            raise OSError(errno.EXDEV, "injected cross-device error (test hook)", src)
        link_noreplace(src_dir, src, dst_dir, dst)
        os.fsync(dst_dir)
        os.fsync(src_dir)
        return "rename"
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
    fd, st = open_regular_nofollow(src, dir_fd=src_dir)
    try:
        # A disk full mid-copy leaves no half copy.
        tmp = write_temp_beside(dst, iter(lambda: os.read(fd, 1 << 20), b""), st.st_mode & 0o7777, dir_fd=dst_dir)
        os.lseek(fd, 0, os.SEEK_SET)
        source_hash = hash_open_file(fd)
    finally:
        os.close(fd)
    step("copy-written")
    try:
        link_noreplace(dst_dir, tmp, dst_dir, dst)
    except FileExistsError:
        os.unlink(tmp, dir_fd=dst_dir)
        raise
    os.fsync(dst_dir)
    fd, _ = open_regular_nofollow(dst, dir_fd=dst_dir)
    try:
        copy_hash = hash_open_file(fd)
    finally:
        os.close(fd)
    if copy_hash != source_hash:
        raise CopyMismatch(errno.EIO, "copy does not match the source; source kept", dst)
    step("unlink-source")
    os.unlink(src, dir_fd=src_dir)
    os.fsync(src_dir)
    return "copy"
