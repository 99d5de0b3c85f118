"""Atomic replacement of a file: temp file, fsync, rename, fsync the folder.

Every function takes an optional ``dir_fd``: then the path is a name in that open
folder (see :mod:`.safeopen`), and the temp file, the rename and the fsync all go
through the descriptor, so a folder swapped meanwhile cannot redirect them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from .. import faults


def fsync_dir(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


NAME_MAX = 255  # bytes in one file name (Linux, macOS: every common file system)


def temp_stem(name: str) -> str:
    """``.NAME``, NAME cut so that ``.NAME.<8 hex>.tmp`` (or ``.swp``) fits in one file name: a file
    whose own name is already 255 bytes long can be written too, and its leftovers found again."""
    return hidden_stem(name, len(".01234567.tmp"))


def hidden_stem(name: str, suffix: int) -> str:
    """``.NAME``, NAME cut so that a suffix of ``suffix`` bytes after it still fits in one file name
    (the same cut every time, so the name made is found again from NAME)."""
    raw = os.fsencode(name)
    room = NAME_MAX - 1 - suffix
    if len(raw) > room:
        name = os.fsdecode(raw[:room])  # a cut inside a UTF-8 sequence stays the same bytes (surrogateescape)
    return f".{name}"


_TAG = re.compile(r"[0-9a-f]{8}")
# A ``.tmp`` whose bytes the history lacks is a leftover once this old (another tool's by that name is too).
LEFTOVER_AGE_S = 600.0
# A leftover of a memory file NAME, found from its name alone (doctor lists a folder, not a file).
_LEFTOVER = re.compile(r"\.(?P<of>.+\.md)\.[0-9a-f]{8}\.(?P<kind>tmp|swp)")


def leftover_kind(name: str, of: str) -> str | None:
    """"tmp" or "swp" when ``name`` is a temp or swap file written beside the file ``of``
    (``.OF.<8 hex>.tmp|swp``, :func:`temp_stem`); else None."""
    stem = temp_stem(of) + "."
    if not name.startswith(stem):
        return None
    tag, _, kind = name[len(stem):].partition(".")
    return kind if kind in ("tmp", "swp") and _TAG.fullmatch(tag) else None


def leftover_of(name: str) -> tuple[str, str] | None:
    """(the Markdown file it was written beside, "tmp" or "swp") of a leftover's ``name``; None when it
    is none (one of a 255-byte name, cut to fit, is found only from that name: :func:`leftover_kind`)."""
    match = _LEFTOVER.fullmatch(name)
    return (match["of"], match["kind"]) if match else None


def temp_name_beside(path: str) -> str:
    """``.NAME.<random>.tmp`` beside ``path`` (see :func:`temp_stem`)."""
    folder, name = os.path.split(path)
    return os.path.join(folder, f"{temp_stem(name)}.{os.urandom(4).hex()}.tmp")


def unlink_quietly(path: str, *, dir_fd: int | None = None) -> None:
    """Remove a temp file of ours; already gone is fine (the cleanup of a failed step must not fail)."""
    try:
        os.unlink(path, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def write_temp_beside(path: str, data: bytes | Iterable[bytes], mode: int | None = None, *,
                      dir_fd: int | None = None, owner: tuple[int, int] | None = None) -> str:
    """Write ``data`` (bytes, or blocks streamed in order) to a fresh (O_EXCL) temp file next to
    ``path``, fsynced; return its name. Nothing is left behind when writing fails (disk full...).

    ``owner`` (uid, gid) is given to the temp file when this process may (root writing a
    user's file keeps it the user's); otherwise it stays ours.
    """
    tmp = temp_name_beside(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600,
                 dir_fd=dir_fd)
    try:
        for block in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
            view = memoryview(block)
            while view:
                view = view[os.write(fd, view):]
        if owner is not None and owner != (os.geteuid(), os.getegid()):
            try:
                os.fchown(fd, *owner)
            except PermissionError:
                pass
        if mode is not None:
            os.fchmod(fd, mode)  # after the chown, which clears set-id bits
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        unlink_quietly(tmp, dir_fd=dir_fd)
        raise
    os.close(fd)
    return tmp


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes | Iterable[bytes], mode: int | None = None, *,
                       dir_fd: int | None = None) -> None:
    """Replace ``path`` with ``data`` (bytes, or blocks in order) so a reader or a crash sees the old
    or the new bytes, never a mix.

    The file keeps its permission bits (``mode`` overrides) and, where this process may, its
    owner when it exists already.
    """
    path = os.fspath(path)
    try:
        st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        owner: tuple[int, int] | None = (st.st_uid, st.st_gid)
        mode = st.st_mode & 0o7777 if mode is None else mode
    except FileNotFoundError:
        owner, mode = None, 0o644 if mode is None else mode
    tmp = write_temp_beside(path, data, mode, dir_fd=dir_fd, owner=owner)
    faults.reach(f"atomic:renaming:{os.path.basename(path)}")  # the temp file written, not yet renamed
    try:
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        unlink_quietly(tmp, dir_fd=dir_fd)
        raise
    if dir_fd is not None:
        os.fsync(dir_fd)
    else:
        fsync_dir(os.path.dirname(path) or ".")

