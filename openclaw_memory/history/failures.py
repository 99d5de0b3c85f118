"""The guarded file operations' failures, told apart by where they happened (the state dir, the
workspace, a step that knows its place) and worded once for every writer: write, restore, mv, rm, import."""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from ..errors import DiskFull, PathRefused, disk_full, os_error, printable
from ..files.read import ResolvedPath, path_changed
from ..fsutil.move import StickyRefused
from ..fsutil.private import kind_words
from ..fsutil.safeopen import FolderSwapped as _Swapped


def translated(store, resolved: ResolvedPath, done: str, operation):
    """Run a write step, turning the OS failures a user can meet into typed errors.

    Everything that can fail runs before the file is replaced (see :func:`.guard._commit`),
    so each of these messages can truthfully say the file was not changed (or, where none was there,
    not created).
    """
    try:
        return operation()
    except _Swapped as exc:
        raise path_changed(resolved, exc, f"nothing was {done}") from None
    except NotADirectoryError:
        raise PathRefused(f"refused: {resolved.display}: {not_a_folder_on(resolved)}; nothing was {done}") from None
    except HistoryFailed as failed:
        raise os_error(failed.error, f"the state dir ({store.data_dir})", unchanged(resolved, done),
                        folder=store.data_dir) from None
    except FailedAt as failed:  # named by the step that knew where (before the DiskFull below took it for the state dir's)
        raise os_error(failed.error, failed.where, failed.outcome) from None
    except DiskFull:
        raise disk_full(OSError(errno.ENOSPC, "No space left on device"), f"the state dir ({store.data_dir})",
                        unchanged(resolved, done), folder=store.data_dir) from None
    except StickyRefused as exc:  # (it said "cannot write in the workspace (...): Operation not permitted")
        named = resolved.display if exc.filename == resolved.name else printable(exc.filename)
        raise PathRefused(f"refused: {named} {exc.why}; {unchanged(resolved, done)}") from None
    except OSError as exc:
        raise os_error(exc, where_written(resolved), unchanged(resolved, done),
                       folder=os.path.dirname(resolved.abs_path)) from None


def not_a_folder_on(resolved: ResolvedPath) -> str:
    """Which folder on the file's path is not one, and what it is ("memory/p on its path is a FIFO (named
    pipe), not a folder"): looked at for the words only, once the open failed (it said "a folder on its
    path is a file" of a FIFO)."""
    at = resolved.root
    for depth, part in enumerate(resolved.parts[:-1], 1):
        at = os.path.join(at, part)
        try:
            st = os.lstat(at)
        except OSError:
            break
        if not stat.S_ISDIR(st.st_mode):
            below = "/".join(resolved.parts[depth:])
            shown = resolved.display[:-len(below) - 1] if resolved.display.endswith("/" + below) else part
            return f"{printable(shown)} on its path is {kind_words(st.st_mode)}, not a folder"
    return "a folder on its path is a file"


def unchanged(resolved: ResolvedPath, done: str) -> str:
    """What a failed step left: ``nothing was written: memory/a.md is unchanged``, or, where nothing is at
    its path (a new note's write or restore that failed: a full disk), ``... memory/b.md was not
    created`` (it said "is unchanged" of a file that did not exist). Looked at once it failed: for the
    words only."""
    try:
        os.lstat(resolved.abs_path)
    except FileNotFoundError:
        return f"nothing was {done}: {resolved.display} was not created"
    except (OSError, ValueError):
        pass
    return f"nothing was {done}: {resolved.display} is unchanged"


def where_written(resolved: ResolvedPath) -> str:
    """Where a failing step wrote, for its message: an extra path is named as one (a note of a shared
    extra path another user owns read "cannot write in the workspace (/srv/shared)")."""
    return f"{'the workspace' if resolved.in_workspace else 'the extra path'} ({os.path.dirname(resolved.abs_path)})"


class FailedAt(Exception):
    """An OS error of a step that knows where it happened and what it left (a move's destination)."""

    def __init__(self, error: OSError, where: str, outcome: str):
        super().__init__(error)
        self.error, self.where, self.outcome = error, where, outcome


class HistoryFailed(Exception):
    """An OS error in the history (state dir), told apart from one in the workspace for the message."""

    def __init__(self, error: OSError):
        super().__init__(error)
        self.error = error


@contextlib.contextmanager
def in_history():
    """Around history steps: their OS errors become HistoryFailed (the state dir, not the workspace)."""
    try:
        yield
    except _Swapped:
        raise
    except OSError as exc:
        raise HistoryFailed(exc) from None
