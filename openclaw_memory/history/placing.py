"""Putting a memory file in place, through its folder's descriptor: the folder made as needed (and
unmade when the write fails), the current file opened, a temp file written beside the target from
blocks, a new file created only where nothing is, the swap name, the target's version just before
the swap. Shared by the guarded write (:mod:`.guard`), mv and rm (:mod:`.moves`) and import."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from typing import TypeGuard

import xxhash

from ..errors import PathRefused, WriteBlocked
from ..files.jstext import js_trim
from ..files.paths import LEGACY_ROOT, REPAIR_DIR, ExtraPath, display_path
from ..files.read import ResolvedPath, resolve_memory_path
from ..fsutil.atomic import write_temp_beside
from ..fsutil.move import link_noreplace
from ..fsutil.private import user_umask
from ..fsutil.safeopen import Folder, NotRegularFile, as_scanned
from .store import FileVersion, HistoryStore, snapshot_fd
from .versions import FileMode


def resolve_writable(path: str, workspace: str, extra_paths=()) -> ResolvedPath:
    """``path`` as :func:`~..files.read.resolve_memory_path` resolves it, or a configured extra path
    naming one ``.md`` file that is gone (moved into the workspace, removed), in its existing folder:
    a place a note may be put back (``mv`` back, ``restore --last``, a rollback's bring-back, an
    import, a write) and whose history may be listed. ``read`` refuses it as OpenClaw does (nothing
    there is memory until a file is): only what writes, and what lists the history, ask here."""
    try:
        return resolve_memory_path(path, workspace, extra_paths)
    except PathRefused:
        raw = js_trim(path or "")
        absolute = os.path.normpath(raw if os.path.isabs(raw) else os.path.join(workspace, raw)) if raw else ""
        if not absolute.endswith(".md") or not extra_paths:
            raise
        named = as_scanned(absolute)  # as the scanner named it while it was there
        for given in extra_paths if not _never_memory(named, as_scanned(workspace)) else ():
            if isinstance(given, ExtraPath) and given.pattern is not None:
                continue
            if absolute in (str(given), as_scanned(str(given))) and _gone_beside_a_folder(named):
                return ResolvedPath(named, display_path(named, workspace), os.path.dirname(named),
                                    (os.path.basename(named),), False)
        raise


def _never_memory(named: str, workspace: str) -> bool:
    """Whether ``named`` is a name no configuration makes memory: the legacy root ``memory.md``, the
    workspace itself, anything in a repair archive (an extra path inside the workspace, such as
    ``notes/todo.md``, is a place like any other)."""
    if os.path.commonpath([named, workspace]) != workspace:
        return False
    parts = os.path.relpath(named, workspace).split(os.sep)
    return parts in ([LEGACY_ROOT], ["."]) or REPAIR_DIR in parts


def _gone_beside_a_folder(absolute: str) -> bool:
    """Nothing at ``absolute`` (not even a link), and its folder is a folder (not a link to one)."""
    try:
        os.lstat(absolute)
        return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        return stat.S_ISDIR(os.lstat(os.path.dirname(absolute)).st_mode)
    except OSError:
        return False


def open_current(resolved: ResolvedPath) -> tuple[Folder | None, int | None, FileVersion | None]:
    """The file's folder (None when a folder on the way does not exist yet), the file and its version.

    Everything after this goes through the folder's descriptor: a folder swapped
    later cannot redirect the temp file, the check or the rename.
    """
    try:
        folder = resolved.folder()
    except FileNotFoundError:
        return None, None, None
    try:
        fd, _ = folder.open_regular(resolved.name)
    except FileNotFoundError:
        return folder, None, None
    except NotRegularFile as exc:
        folder.close()
        raise PathRefused(f"refused: {resolved.display}: {exc.strerror}") from None
    except PermissionError:
        folder.close()
        raise PathRefused(f"cannot read {resolved.display}: permission denied") from None
    except BaseException:
        folder.close()
        raise
    try:
        return folder, fd, snapshot_fd(fd)
    except BaseException:
        os.close(fd)
        folder.close()
        raise


def make_folder(resolved: ResolvedPath) -> tuple[Folder, int]:
    """The file's folder, created as needed, and how many of its folders existed already."""
    dirs = resolved.parts[:-1]
    existed = len(dirs)
    while existed and not _is_folder(resolved.root, dirs[:existed]):
        existed -= 1
    try:
        return resolved.folder(create=True), existed
    except BaseException:
        remove_made_folders(resolved, existed)
        raise


def _is_folder(root: str, parts: tuple[str, ...]) -> bool:
    try:
        Folder.under(root, parts).close()
    except OSError:
        return False
    return True


def remove_made_folders(resolved: ResolvedPath, existed: int) -> None:
    """Undo what :func:`make_folder` made for a write that failed (a disk out of inodes): empty
    folders only, deepest first, each removed by name from its parent's descriptor."""
    dirs = resolved.parts[:-1]
    for depth in range(len(dirs), existed, -1):
        try:
            with Folder.under(resolved.root, dirs[: depth - 1]) as parent:
                os.rmdir(dirs[depth - 1], dir_fd=parent.fd)
        except FileNotFoundError:
            continue  # the creation stopped above this depth
        except OSError:
            return  # not empty (someone wrote there meanwhile): leave it and its parents


def kept_stat(fd: int | None) -> FileMode | None:
    """The mode and owner of the file being replaced: they carry over to the new one."""
    return FileMode.of(os.fstat(fd)) if fd is not None else None


def is_read_only(kept: FileMode | None) -> TypeGuard[FileMode]:
    """Whether the note was made read-only by its owner, this user (``chmod u-w``, ``a-w``). Replacing
    or removing it is a rename or an unlink, which only its folder's mode governs, so the product
    looks at the mode itself, where an editor and the shell's ``rm`` ask first and OpenClaw's own
    write gets EACCES (but root's, which is why the rule is the owner's bit and not the kernel's
    answer). Another user's note this one may write is not: its owner's bit says nothing of this user."""
    return kept is not None and kept.uid == os.geteuid() and not kept.mode & 0o200


def read_only_refusal(found: list[tuple[str, FileMode]], done: str) -> str:
    """The one line every change that would replace or remove read-only notes (each shown name with
    its mode) refuses with; ``done``: "written", "moved", "rolled back"..."""
    if len(found) == 1:
        display, kept = found[0]
        return (f"refused: {display} is read-only (mode {kept.mode & 0o777:o}); nothing was {done} "
                "(`chmod u+w` it to let writes through)")
    named = [f"{display} (mode {kept.mode & 0o777:o})" for display, kept in found]
    return (f"refused: {', '.join(named[:-1])} and {named[-1]} are read-only; nothing was {done} "
            "(`chmod u+w` them to let writes through)")


def refuse_read_only(kept: FileMode | None, display: str, done: str) -> None:
    """PathRefused (exit 2) when the note is read-only (:func:`is_read_only`)."""
    if is_read_only(kept):
        raise PathRefused(read_only_refusal([(display, kept)], done))


def mode_now(resolved: ResolvedPath) -> FileMode | None:
    """The mode and owner of what is at ``resolved`` now; None when nothing (or no folder) is there.
    For a check of many files before any is changed (a rollback's, an import's): each change's own
    check is on the file it opened."""
    try:
        with resolved.folder() as folder:
            return FileMode.of(folder.lstat(resolved.name))
    except (OSError, PathRefused):
        return None


def recorded_mode(store: HistoryStore, resolved: ResolvedPath) -> FileMode | None:
    """What a file brought back where none is gets: the permission bits and owner its history last
    saw (a removed ``0600`` note came back ``0644``, readable by every user, and a user's note came
    back the caller's, root's, which the user's agent could no longer write). The set-id and sticky
    bits are left off: a file made anew, perhaps given to another user by root, never gets those.
    None where the history saw none (versions logged before schema 7): the default, a new file's."""
    seen = store.log.last_mode(resolved.abs_path, resolved.display)
    return seen._replace(mode=seen.mode & 0o777) if seen is not None else None


def temp_from_blocks(folder: Folder, resolved: ResolvedPath, blocks: Iterable[bytes], kept: FileMode | None,
                      tail: bytes = b"") -> tuple[str, FileVersion, str]:
    """Write ``blocks`` then ``tail`` to a fsynced temp file beside the target, in ``folder``.

    Returns the temp name, the new content's snapshot, and the hash of the ``blocks``
    part alone (for an append: the bytes copied from the current file).
    """
    whole, head = xxhash.xxh3_128(), xxhash.xxh3_128()
    size = 0

    def hashed() -> Iterator[bytes]:
        nonlocal size
        for block in blocks:
            head.update(block)
            whole.update(block)
            size += len(block)
            yield block
        whole.update(tail)
        size += len(tail)
        yield tail

    mode, owner = (kept.mode, (kept.uid, kept.gid)) if kept is not None else (new_file_mode(), None)
    tmp = write_temp_beside(resolved.name, hashed(), mode, dir_fd=folder.fd, owner=owner)
    return tmp, FileVersion(whole.hexdigest(), size), head.hexdigest()


def new_file_mode() -> int:
    """A new memory file's mode: what the user's umask leaves of 0666, as an editor's new file gets."""
    umask = user_umask()
    if umask is None:  # no private umask in force: the process's own is the user's
        umask = os.umask(0o077)  # read by setting it; a file made meanwhile by a thread is only more private
        os.umask(umask)
    return 0o666 & ~umask


def current_version(folder: Folder, name: str) -> str | None:
    """The target's version just before the swap (a non-regular file counts as a change)."""
    try:
        fd, _ = folder.open_regular(name)
    except FileNotFoundError:
        return None
    except OSError:
        return "not-a-regular-file"
    try:
        return snapshot_fd(fd).version
    finally:
        os.close(fd)


def create_new(folder: Folder, tmp: str, name: str) -> None:
    """Move the temp file to ``name`` only if nothing is there (link, or a checked rename without hard links)."""
    try:
        link_noreplace(folder.fd, tmp, folder.fd, name)
    except FileExistsError:
        raise Raced() from None


def held_open(resolved: ResolvedPath) -> WriteBlocked:
    return WriteBlocked.because(f"{resolved.display} is held open for writing by another program, which could still "
                                "write to it; nothing was written.", path=resolved.display, step="held_open")


def swap_name(folder: Folder, tmp: str) -> str:
    """``.NAME.<hex>.swp`` (as long as the ``.tmp`` name, so it fits too): the temp file, renamed once its bytes are stored and its key recorded.
    An exchange leaves the displaced file at this name, which the sweep records before removing: one
    left by a killed write is never replaced (another ``<hex>`` is drawn)."""
    stem = tmp[: -len(".01234567.tmp")]
    swap = tmp[: -len(".tmp")] + ".swp"
    while True:
        try:
            link_noreplace(folder.fd, tmp, folder.fd, swap)
            return swap
        except FileExistsError:
            swap = f"{stem}.{os.urandom(4).hex()}.swp"


class Raced(Exception):
    """The target changed between the check and the replace."""
