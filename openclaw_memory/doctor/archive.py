"""The archive folder of a split-root repair: ``.openclaw-repair/root-memory/<stamp>/``.

Stamps are JavaScript ISO timestamps with ``:`` and ``.`` replaced by ``-``
(``2026-11-30T12-55-01-427Z``). The stamp folder is created exclusively, so an
earlier archive is never overwritten; on a clash a new stamp is taken. Every folder
on the way is opened from the workspace's descriptor (``O_NOFOLLOW``): a symlink
there, planted before or swapped in during the repair, is refused.
"""

from __future__ import annotations

import os
import time

from ..files.paths import LEGACY_ROOT, REPAIR_ROOT_MEMORY, archive_stamp
from ..fsutil.atomic import give_to_folder_owner
from ..fsutil.private import as_user_made
from ..fsutil.safeopen import Folder, FolderSwapped, open_folder

ARCHIVE_PARTS = tuple(REPAIR_ROOT_MEMORY.split("/"))


class ArchiveRefused(OSError):
    """A folder on the archive path is a symlink or not a folder: we do not write through it."""


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


def ensure_parents(workspace: str) -> Folder:
    """Open (creating them) ``.openclaw-repair/root-memory`` as real folders; refuse symlinks on the way."""
    try:
        return Folder.under(workspace, ARCHIVE_PARTS, create=True)
    except (FolderSwapped, NotADirectoryError) as exc:
        where = exc.filename or os.path.join(workspace, REPAIR_ROOT_MEMORY)
        raise ArchiveRefused(0, f"{where} is a symlink or not a folder; move it away so the archive stays inside the workspace", where) from None


class StampDir:
    """A freshly created stamp folder, held open, with its parent (to remove it again)."""

    def __init__(self, parent: Folder, name: str):
        self.parent = parent
        self.name = name
        self.folder = Folder(open_folder(parent.path, (name,), root_fd=parent.fd), os.path.join(parent.path, name))

    def remove_if_empty(self) -> None:
        self.folder.close()
        try:
            os.rmdir(self.name, dir_fd=self.parent.fd)
        except OSError:
            return  # not empty (someone put a file there) or already gone: leave it
        self.parent.fsync()

    def close(self) -> None:
        self.folder.close()
        self.parent.close()


def make_stamp_dir(workspace: str, stamp: str) -> StampDir:
    """Create the stamp folder exclusively (FileExistsError on a clash) and hold it open."""
    parent = ensure_parents(workspace)
    try:
        os.mkdir(stamp, 0o755, dir_fd=parent.fd)
        parent.fsync()
        made = StampDir(parent, stamp)
        as_user_made(made.folder.fd, 0o755)  # the workspace's: the user's umask, not the process's private one
        # Root's stamp folder in a user's workspace is the user's, as the folders above it are
        # (Folder.under): left root's, the user could neither remove nor move the archived memory.md.
        give_to_folder_owner(made.folder.fd, parent.fd)
        return made
    except BaseException:
        parent.close()
        raise
