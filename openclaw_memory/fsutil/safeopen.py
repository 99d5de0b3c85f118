"""Open files and folders under an allowed root, one component at a time, from descriptors.

A path checked with ``lstat`` and then opened by name can be redirected in between:
a folder on it swapped for a symlink (``renameat2(RENAME_EXCHANGE)`` does it
atomically) sends the open outside the root. So nothing here opens a user's path by
name: the root is opened with ``O_DIRECTORY | O_NOFOLLOW``, each folder below it with
``openat(parent, name, O_DIRECTORY | O_NOFOLLOW)``, and the file (or temp file,
rename, unlink) is then a ``*at`` call on the last folder's descriptor. A folder
swapped before we reach it fails that open (ELOOP/ENOTDIR: :class:`FolderSwapped`);
one swapped after we opened it no longer matters, because the descriptor still
names the folder we checked, wherever it has been moved.

Files are opened ``O_NOFOLLOW | O_NONBLOCK``: a symlink at the last component is
refused and a FIFO that slipped in cannot hang us.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Sequence

from .atomic import give_to_folder_owner
from .private import as_user_made, kind_words

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC


class NotRegularFile(OSError):
    """The path is a symlink, FIFO, socket, device or folder: we do not open those."""


class FolderSwapped(OSError):
    """A folder on the path is a symlink or not a folder now: it was swapped while in use."""


def open_regular_nofollow(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> tuple[int, os.stat_result]:
    """Return ``(fd, fstat)`` for a regular file, refusing anything else.

    With ``dir_fd``, ``path`` is a name in that folder. ``O_NONBLOCK`` keeps a FIFO
    that slipped in between the type check and the open from hanging us;
    ``O_NOFOLLOW`` refuses a symlink at the last component.
    """
    try:
        fd = os.open(path, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # the last component is a symlink
            raise NotRegularFile(exc.errno, "is a symlink", str(path)) from None
        if exc.errno == errno.ENXIO:  # a Unix socket: open() cannot open those at all
            raise NotRegularFile(exc.errno, "a socket, not a regular file", str(path)) from None
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        # What it is (a restore --last where a folder or a FIFO now is said only "not a regular file").
        raise NotRegularFile(0, f"{kind_words(st.st_mode)}, not a regular file", str(path))
    os.set_blocking(fd, True)
    return fd, st


def out_of_reach(path: str) -> bool | None:
    """Whether ``path`` cannot be looked at (a folder above it this user may not enter: a stat needs
    only search permission on its folders); None when nothing is there, False when something is."""
    try:
        os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return True
    return False


def open_root(root: str | os.PathLike[str]) -> int:
    """A descriptor of the allowed root folder itself (never through a symlink at its last component)."""
    try:
        return os.open(root, DIR_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FolderSwapped(exc.errno, "is a symlink or not a folder", os.fspath(root)) from None
        raise


def open_folder(root: str | os.PathLike[str], parts: Sequence[str] = (), *, create: bool = False,
                create_root: bool = True, mode: int = 0o755, root_fd: int | None = None) -> int:
    """A descriptor of ``root/parts[0]/.../parts[-1]``, each folder opened from its parent's.

    ``create`` makes missing folders (``mkdirat``), ``root`` too unless ``create_root`` is False
    (then a missing root raises FileNotFoundError naming it). A component that is a symlink or
    not a folder raises :class:`FolderSwapped` (its ``filename`` is the path up to it);
    a missing one without ``create`` raises FileNotFoundError. With ``root_fd`` the
    walk starts from that descriptor (left open) instead of opening ``root``.
    """
    if root_fd is not None:
        fd = os.dup(root_fd)
    else:
        made = create and create_root and not os.path.lexists(root)
        if made:
            os.makedirs(root, mode, exist_ok=True)  # a configured root (extra path) not made yet
        fd = open_root(root)
        if made:
            as_user_made(fd, mode)
    walked = os.fspath(root)
    try:
        for part in parts:
            if part in ("", ".", "..") or "/" in part:
                raise FolderSwapped(errno.EINVAL, f"not a single path component: {part!r}", walked)
            walked = os.path.join(walked, part)
            try:
                child = _open_child(fd, part, walked)
            except FileNotFoundError:
                if not create:
                    raise
                made = False
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                    os.fsync(fd)
                    made = True
                except FileExistsError:
                    pass  # made meanwhile by someone else: open it like any other
                child = _open_child(fd, part, walked)
                if made:
                    as_user_made(child, mode)
                    give_to_folder_owner(child, fd)  # root's folder in a user's tree is the user's
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_child(fd: int, part: str, walked: str) -> int:
    try:
        return os.open(part, DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            _refuse(fd, part, walked, exc)
        raise


def _refuse(fd: int, part: str, walked: str, exc: OSError) -> None:
    """Why ``part`` did not open as a folder: a plain file there is NotADirectoryError (the path
    names no folder); a symlink, or a folder again by now, is FolderSwapped (swapped under us)."""
    try:
        st = os.stat(part, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        raise FolderSwapped(exc.errno, "vanished while in use", walked) from None
    if stat.S_ISLNK(st.st_mode) or stat.S_ISDIR(st.st_mode):
        raise FolderSwapped(exc.errno, "is a symlink or not a folder", walked) from None
    raise NotADirectoryError(errno.ENOTDIR, "not a folder", walked) from None


class Folder:
    """An open folder descriptor as a context manager (closed on exit)."""

    __slots__ = ("fd", "path")

    def __init__(self, fd: int, path: str):
        self.fd = fd
        self.path = path  # for messages only: never opened by name

    @classmethod
    def under(cls, root: str | os.PathLike[str], parts: Sequence[str] = (), *, create: bool = False,
              create_root: bool = True, mode: int = 0o755) -> Folder:
        return cls(open_folder(root, parts, create=create, create_root=create_root, mode=mode),
                   os.path.join(os.fspath(root), *parts))

    def open_regular(self, name: str) -> tuple[int, os.stat_result]:
        return open_regular_nofollow(name, dir_fd=self.fd)

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def unlink(self, name: str, *, missing_ok: bool = False) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def fsync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def parts_under(root: str, abs_path: str) -> tuple[str, ...]:
    """The components of ``abs_path`` below ``root`` (both normalised absolute paths)."""
    rel = os.path.relpath(abs_path, root)
    if rel == os.curdir:
        return ()
    parts = tuple(rel.split(os.sep))
    if parts[0] == os.pardir:
        raise ValueError(f"{abs_path} is not under {root}")
    return parts


def open_regular_under(root: str, abs_path: str) -> tuple[int, os.stat_result]:
    """``open_regular_nofollow`` for a file known to lie under ``root``, resolved from ``root``'s descriptor."""
    parts = parts_under(root, abs_path)
    if not parts:
        raise NotRegularFile(0, "not a regular file", abs_path)
    with Folder.under(root, parts[:-1]) as folder:
        return folder.open_regular(parts[-1])


def as_scanned(path: str) -> str:
    """``path`` with the symbolic links of its folders resolved, not of itself: how the scanner
    names an extra path (/tmp on macOS is a link; the extra root itself, a link, is refused)."""
    folder = os.path.dirname(path)
    for _ in range(3):
        try:
            return os.path.join(os.path.realpath(folder), os.path.basename(path))
        except OSError:  # before Python 3.13, a link swapped for a folder between its lstat and readlink (EINVAL):
            continue  # asked again, the other links on the way are still resolved (/tmp on macOS)
    return os.path.join(os.path.abspath(folder), os.path.basename(path))  # a swap that goes on: the name as given


def root_spellings(roots: Sequence[str]) -> list[str]:
    """``roots`` (the workspace and the extra paths) as given and :func:`as_scanned`, longest first,
    so that the first one holding a path is its own root."""
    return sorted({r for root in roots for r in (str(root), as_scanned(str(root)))}, key=len, reverse=True)


def open_regular_in_roots(roots: Sequence[str], abs_path: str) -> tuple[int, os.stat_result]:
    """Open a file from the descriptor of the allowed root that holds it (the longest match).

    ``roots`` are the workspace and the extra paths; an extra path may be a single file,
    opened from its own folder. A path under none of them is refused (NotRegularFile).
    """
    for root in root_spellings(roots):
        if abs_path == root:
            return open_regular_under(os.path.dirname(root), abs_path)
        if abs_path.startswith(root.rstrip(os.sep) + os.sep):
            return open_regular_under(root, abs_path)
    raise NotRegularFile(0, "not inside the workspace or an extra path", abs_path)


def read_and_close(fd: int) -> bytes:
    """Everything ``fd`` holds from its offset on; the descriptor is closed, whatever happens."""
    try:
        chunks = []
        while block := os.read(fd, 1 << 20):
            chunks.append(block)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_small_json(path: str, limit: int) -> dict | None:
    """The object a small state file of the product's own holds (the service's info, doctor's
    record), or None for anything else: no file, a symlink, a FIFO (never waited on), a folder,
    more than ``limit`` bytes, bytes that are not JSON, JSON nested past the interpreter's depth
    (RecursionError, from a few KB), or JSON that is not an object."""
    try:
        fd, _st = open_regular_nofollow(path)
    except OSError:
        return None
    try:
        raw = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > limit:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
