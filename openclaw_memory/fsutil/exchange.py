"""Swap two names in one folder atomically: Linux ``renameat2(RENAME_EXCHANGE)``; and rename without
ever replacing (``RENAME_NOREPLACE``).

A plain rename over a file unlinks whatever is at the target at that instant, even a file another
program renamed there a microsecond after we looked. An exchange never unlinks: both names exist
throughout, and what was at the target is left at the other name, where it can be checked (and put
back). Only Linux has it (glibc 2.28 and later, kernel 3.15 and later), and only where the file
system implements it (ext4, xfs, btrfs, tmpfs, overlayfs do; NFS and many FUSE mounts do not).
"""

from __future__ import annotations

import errno
import os

_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
AT_FDCWD = -100  # Linux: a dir_fd meaning the current folder (absolute paths ignore it)
# The answers of a kernel, C library or file system that has no exchange (nothing was renamed).
UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP})
_renameat2 = None


def _function():
    global _renameat2
    if _renameat2 is None:
        import ctypes

        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
        except (OSError, AttributeError):  # not Linux, or a C library older than glibc 2.28
            _renameat2 = False
        else:
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            fn.restype = ctypes.c_int
            _renameat2 = fn
    return _renameat2


def exchange(dir_fd: int, a: str, b: str) -> bool:
    """Swap the entries ``a`` and ``b`` of the folder open on ``dir_fd`` (both must exist).

    False, having changed nothing, where this system or file system cannot; other failures raise
    OSError as a rename's would.
    """
    return _renameat2_call(dir_fd, a, dir_fd, b, _RENAME_EXCHANGE)


def rename_noreplace(src_dir: int, src: str, dst_dir: int, dst: str) -> bool:
    """Rename ``src`` to ``dst`` only while nothing is at ``dst``, in one step: FileExistsError when
    something is (a check before a plain rename would leave a window where a save there is replaced).

    False, having changed nothing, where this system or file system cannot.
    """
    return _renameat2_call(src_dir, src, dst_dir, dst, _RENAME_NOREPLACE)


def _renameat2_call(src_dir: int, src: str, dst_dir: int, dst: str, flags: int) -> bool:
    fn = _function()
    if not fn:
        return False
    import ctypes

    if fn(src_dir, os.fsencode(src), dst_dir, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), src, None, dst)
