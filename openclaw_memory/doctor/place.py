"""Small file-system steps the repairs share, on names in a folder held open by descriptor.

Every repair opens the workspace root (and the archive folders below it) once, one
component at a time (see :mod:`openclaw_memory.fsutil.safeopen`), and works on names
in those descriptors: a folder swapped for a symlink while a repair runs cannot send
a read, a move or a temp file outside the workspace.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .. import faults
from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT
from ..fsutil.hashing import BLOCK, hash_bytes, hash_open_file
from ..fsutil.move import link_noreplace
from ..fsutil.safeopen import Folder, FolderSwapped, NotRegularFile
from ..history.versions import FileMode


def read_within(folder: Folder, name: str, limit: int) -> tuple[bytes | None, str, int]:
    """``(bytes, hash, size)`` of a regular file (never through a symlink, never a FIFO); the bytes
    are None when the file is over ``limit``: at most ``limit + 1`` bytes are ever held, and the
    hash of a bigger file is streamed."""
    return read_within_mode(folder, name, limit)[:3]


def read_within_mode(folder: Folder, name: str, limit: int) -> tuple[bytes | None, str, int, FileMode]:
    """:func:`read_within`, with the mode and owner of the file the bytes came from (its descriptor's)."""
    fd, st = folder.open_regular(name)
    try:
        return (*_read_open(fd, st, limit), FileMode.of(st))
    finally:
        os.close(fd)


def _read_open(fd: int, st: os.stat_result, limit: int) -> tuple[bytes | None, str, int]:
    if st.st_size <= limit:
        data = b""
        while len(data) <= limit and (block := os.read(fd, limit + 1 - len(data))):
            data += block
        if len(data) <= limit:
            return data, hash_bytes(data), len(data)
        os.lseek(fd, 0, os.SEEK_SET)  # it grew past the limit while read
    return None, hash_open_file(fd), os.fstat(fd).st_size


def holds_bytes(folder: Folder, name: str, needle: bytes) -> bool:
    """Whether a regular file holds ``needle`` (not empty), searched block by block: never the whole file."""
    fd, _ = folder.open_regular(name)
    try:
        carry = b""  # the end of the last block, where a needle across the edge begins
        while block := os.read(fd, BLOCK):
            window = carry + block
            if needle in window:
                return True
            carry = window[len(window) - len(needle) + 1:]
        return False
    finally:
        os.close(fd)


def hash_or_none(folder: Folder | None, name: str) -> str | None:
    """xxh3 of a regular file, or None when it (or its folder) is missing or not a regular file."""
    if folder is None:
        return None
    try:
        fd, _ = folder.open_regular(name)
    except (FileNotFoundError, NotRegularFile):
        return None
    try:
        return hash_open_file(fd)
    finally:
        os.close(fd)


def folder_or_none(workspace: str, parts: Sequence[str]) -> Folder | None:
    """The folder ``workspace/parts...`` opened from the workspace's descriptor; None when it is
    missing, a symlink or not a folder (a repair never works through those)."""
    try:
        return Folder.under(workspace, parts)
    except (FileNotFoundError, NotADirectoryError, FolderSwapped):
        return None


def place_no_replace(folder: Folder, src: str, dst: str, step_prefix: str) -> None:
    """Give ``src`` the name ``dst`` in the same folder, never replacing an existing ``dst``.

    A hard link fails atomically when ``dst`` exists (FileExistsError); the source
    name is removed only after the link is in place, so a crash between the two
    leaves two names for the same bytes, which recovery recognises by inode; and only while
    ``dst`` still names that file, checked as the object removed
    (:func:`~..fsutil.move.unlink_other_name`): after an editor's save over ``dst`` in between,
    ``src`` is the file's last name and stays (SourceKept, ``kept_at`` its name now). Unchecked,
    the unlink took memory.md's text with it (a migration paused between its link and its unlink).
    """
    link_noreplace(folder.fd, src, folder.fd, dst, on_linked=lambda: faults.reach(f"{step_prefix}:linked"), verified=True)


def same_file(folder: Folder, a: str, b: str) -> bool:
    try:
        sa, sb = folder.lstat(a), folder.lstat(b)
    except FileNotFoundError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def identical_twins(workspace: str) -> bool:
    """Whether MEMORY.md and memory.md hold the same bytes (compared by streamed hash, any size)."""
    try:
        with Folder.under(workspace) as root:
            first = hash_or_none(root, CANONICAL_ROOT)
            return first is not None and first == hash_or_none(root, LEGACY_ROOT)
    except OSError:
        return False
