"""Free space where a path is, or would be: what the index checks before the engine writes."""

from __future__ import annotations

import os


def free_bytes(folder: str | os.PathLike[str]) -> int:
    """Bytes free to this user on the file system of ``folder`` (its nearest existing parent)."""
    path = os.fspath(folder)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize
