"""What killed writes of a memory file left beside it (``.NAME.<hex>.tmp`` and ``.swp``), swept by the
next write of the file and by ``doctor --fix``, never a byte the history does not hold (``doctor --fix``
sets those aside instead)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable

from ..errors import MemoryToolError, describe_os_error
from ..files.read import ResolvedPath
from ..fsutil.atomic import LEFTOVER_AGE_S, leftover_kind, temp_stem
from ..fsutil.move import remove_if_holds, safe_move
from ..fsutil.safeopen import Folder, FolderSwapped
from .store import HistoryStore, snapshot_fd


def sweep_leftovers(store: HistoryStore, resolved: ResolvedPath, folder: Folder,
                    set_aside: Callable[[Folder, str, os.stat_result], None] | None = None) -> None:
    """Remove what earlier writes of this file that were killed left beside it (the caller holds the
    write lock, as every writer does, so none of them is in progress): a write does it first, and
    ``doctor --fix`` (:mod:`~..doctor.check_leftovers`). Only this user's files are looked at: another
    user's is never read (its bytes would go into this user's history) nor removed.

    A leftover goes only as bytes the history holds: bytes some version entry names (:func:`logged`),
    not bytes its object store keeps that no entry names (nothing reaches them: ``history`` and
    ``log`` know nothing of them). A temp file (``.NAME.<hex>.tmp``) holds only what such a write would
    have written, never a byte the file had: removed when a version names its bytes (an import's
    staged file once the import that finishes it logged it), or when the note beside it holds them. One whose bytes no version names is
    never logged as a version of the file (a rollback put such a draft in the note's place) nor
    removed: ``set_aside`` (doctor's, and the repair of an import that cannot be run again) moves it
    out of the way, as the very file looked at, at once when the object store keeps its bytes (a
    write killed between storing its new version and its swap, an interrupted import's staged note:
    ours, and nothing else holds them once the import is dropped), else once it is ten minutes old
    (a write's partial copy, or another program's draft by that name). A swap file
    (``.NAME.<hex>.swp``, see :func:`.guard._commit`) may hold the version an exchange took off the
    file: removed once a version names its bytes, after recording them there as an outside edit
    when the history lacks them (a write killed between its exchange and the check of what it
    displaced), and only as those bytes while no other program holds it open
    (:func:`~..fsutil.move.remove_if_holds`); one holding stored bytes no version names is the
    killed write's (or import's) own new version, never placed: set aside as such a temp file; one
    too big for the history stays."""
    prefix = f"{temp_stem(resolved.name)}."
    try:
        # Only the names of this file's leftovers looked at in Python: a daily-notes folder of
        # 30,000 entries cost a write 34 ms parsing each name (the listing itself is the kernel's).
        entries = [entry for entry in os.listdir(folder.fd) if entry.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        kind = leftover_kind(entry, resolved.name)
        if kind is None:
            continue
        try:
            st = folder.lstat(entry)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                continue
            version, named = _logged_version(store, resolved, folder, entry, kind)
            if not named and version != _version_of(folder, resolved.name):  # (the note holds them: no byte lost)
                stored = store.objects.has(version)
                if set_aside is not None and (stored or time.time() - st.st_mtime > LEFTOVER_AGE_S):
                    set_aside(folder, entry, st)
                continue
            # Only as those bytes, and not while a program holds it open (it would write to an unlinked file).
            remove_if_holds(folder.fd, entry, version)
        except (OSError, MemoryToolError):
            continue


def stored_version(store: HistoryStore, folder: Folder, name: str) -> str | None:
    """The version of the regular file ``name`` in ``folder`` when the history's object store keeps
    its bytes (a write or an import of this workspace made it, whether or not a version names them
    yet); else None."""
    fd, _ = folder.open_regular(name)
    try:
        found = snapshot_fd(fd)
    finally:
        os.close(fd)
    return found.version if store.objects.has(found.version) else None


def logged(store: HistoryStore, version: str) -> bool:
    """Whether the history holds ``version``: its bytes kept and a version entry (of any path) naming
    them. Bytes the object store keeps that no entry names (a killed import's staged note, a killed
    write's new version) are reached by nothing: ``history``, ``log`` and ``restore`` know none."""
    return store.objects.has(version) and bool(store.log.referenced({version}))


def _logged_version(store: HistoryStore, resolved: ResolvedPath, folder: Folder, name: str, kind: str) -> tuple[str, bool]:
    """The version of the leftover ``name`` in ``folder``, and whether a version entry names its bytes
    (a ``.swp``'s bytes the object store lacks recorded here first, as an outside edit of the file:
    what its exchange displaced)."""
    fd, _ = folder.open_regular(name)
    try:
        found = snapshot_fd(fd)
        if logged(store, found.version):
            return found.version, True
        if kind != "swp" or store.objects.has(found.version) or not store.objects.fits(found.size):
            return found.version, False  # (stored, no entry: the killed write's own new version, never the file's)
        with store.lock():
            store.observe(resolved.abs_path, resolved.display, found, fd=fd)
        return found.version, logged(store, found.version)
    finally:
        os.close(fd)


def _version_of(folder: Folder, name: str) -> str | None:
    """What the note ``name`` of ``folder`` holds (None: no regular file there): a leftover holding
    the same bytes loses none when it goes."""
    try:
        fd, _ = folder.open_regular(name)
    except (OSError, MemoryToolError):
        return None
    try:
        return snapshot_fd(fd).version
    finally:
        os.close(fd)


def set_aside_under(workspace: str, aside: str, folder: Folder, name: str, seen: os.stat_result,
                    as_name: str | None = None) -> tuple[str | None, str | None]:
    """Move the leftover ``name`` of ``folder`` (``seen``: its ``lstat``) under ``aside`` (relative to
    the workspace) with its folders (made 0700: this user's alone), as ``as_name`` where that is free
    there, else as the very file looked at; one of an extra path beside the workspace under
    ``aside/outside/<its folder's absolute path>`` (copied, verified and removed where that is another
    file system). (where it went, relative to the workspace; None) or (None, why it stayed)."""
    where = os.path.relpath(folder.path, workspace)
    outside = where == os.pardir or where.startswith(os.pardir + os.sep)
    below = ["outside", *folder.path.split(os.sep)] if outside else where.split(os.sep)
    parts = [*aside.split("/"), *(p for p in below if p not in ("", os.curdir))]
    try:
        with Folder.under(workspace, parts, create=True, mode=0o700) as into:
            target = name
            if as_name:
                try:
                    into.lstat(as_name)
                except FileNotFoundError:
                    target = as_name
            safe_move(folder.fd, name, into.fd, target, expect=seen)
    except (FolderSwapped, NotADirectoryError):
        return None, f"a folder on the way to {aside}/ is a symlink or not a folder: move it away"
    except OSError as exc:  # a full disk, a file changed meanwhile (SourceKept)
        return None, f"not set aside: {describe_os_error(exc)}"
    return "/".join([*parts, target]), None
