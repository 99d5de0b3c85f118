"""The archive folder of a split-root repair: ``.openclaw-repair/root-memory/<stamp>/``.

Stamps are JavaScript ISO timestamps with ``:`` and ``.`` replaced by ``-``
(``2026-11-30T12-55-01-427Z``). The stamp folder is created exclusively, so an
earlier archive is never overwritten; on a clash a new stamp is taken.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import time

from ..files.paths import LEGACY_ROOT, REPAIR_ROOT_MEMORY
from ..fsutil.atomic import fsync_dir


class ArchiveRefused(OSError):
    """A folder on the archive path is a symlink or not a folder: we do not write through it."""


def archive_stamp(now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    now = now.astimezone(dt.timezone.utc)
    return now.strftime("%Y-%m-%dT%H-%M-%S-") + f"{now.microsecond // 1000:03d}Z"


def archive_rel(stamp: str) -> str:
    """Workspace-relative path of the archived legacy file for ``stamp``."""
    return f"{REPAIR_ROOT_MEMORY}/{stamp}/{LEGACY_ROOT}"


def new_stamp(workspace: str) -> str:
    """A stamp whose folder does not exist yet (a hint only: creation is what is exclusive)."""
    while True:
        stamp = archive_stamp()
        if not os.path.lexists(os.path.join(workspace, REPAIR_ROOT_MEMORY, stamp)):
            return stamp
        time.sleep(0.001)


def ensure_parents(workspace: str) -> str:
    """Create ``.openclaw-repair/root-memory`` as real folders; refuse symlinks on the way."""
    path = workspace
    for part in REPAIR_ROOT_MEMORY.split("/"):
        path = os.path.join(path, part)
        try:
            os.mkdir(path, 0o755)
            fsync_dir(os.path.dirname(path))
        except FileExistsError:
            st = os.lstat(path)
            if not stat.S_ISDIR(st.st_mode):
                kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a folder"
                raise ArchiveRefused(0, f"{path} is {kind}; move it away so the archive stays inside the workspace", path) from None
    return path


def make_stamp_dir(workspace: str, stamp: str) -> str:
    """Create the stamp folder exclusively (FileExistsError on a clash) and return its path."""
    parent = ensure_parents(workspace)
    path = os.path.join(parent, stamp)
    os.mkdir(path, 0o755)
    fsync_dir(parent)
    return path
