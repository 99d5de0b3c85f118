"""Open a file without following a symlink and without blocking on a FIFO."""

from __future__ import annotations

import os
import stat


class NotRegularFile(OSError):
    """The path is a symlink, FIFO, socket, device or folder: we do not open those."""


def open_regular_nofollow(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """Return ``(fd, fstat)`` for a regular file, refusing anything else.

    ``O_NONBLOCK`` keeps a FIFO that slipped in between the type check and the
    open from hanging us; ``O_NOFOLLOW`` refuses a symlink at the last component.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise NotRegularFile(exc.errno, "is a symlink", str(path)) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotRegularFile(0, "not a regular file", str(path))
    os.set_blocking(fd, True)
    return fd, st
