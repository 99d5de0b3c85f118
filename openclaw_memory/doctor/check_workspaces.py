"""History left behind: data folders of this state dir whose workspace no longer exists.

openclaw-memory keeps a workspace's data (its history above all) in a folder named after the
workspace's path (:attr:`Settings.data_dir`: the folder's name and the hash of its whole path).
A workspace moved or renamed gets a new, empty one: ``restore --last``, ``history``, ``log`` and
``rollback`` at the new path see nothing recorded before, while every byte is still in the old
folder. Nothing new is recorded for this check: the history's rows name each file by its absolute
path beside its workspace-relative name, which gives the workspace's path, and it is taken only
when that path is the one whose hash the folder's name holds.

Read-only: each other data folder's state database is read through a read-only connection, and
nothing is moved, merged or removed. The finding says what to run to bring that history here.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import stat
from dataclasses import dataclass, replace
from pathlib import Path

from ..settings import Settings
from .model import CheckContext, Finding

ID = "history-left-behind"
SHOWN = 5  # workspaces given their commands one by one; more are named only
_ROWS = "SELECT DISTINCT path, display FROM versions LIMIT 64"
_COUNTS = "SELECT COUNT(*), COUNT(DISTINCT path) FROM versions"


@dataclass(frozen=True)
class LeftBehind:
    """A data folder of this state dir and the workspace its history was recorded for."""

    folder: Path
    workspace: str
    versions: int
    files: int


def _workspace_of(settings: Settings, folder: Path, rows: list[tuple]) -> str | None:
    """The workspace the history in ``folder`` was recorded for: a row's absolute path less its
    workspace-relative name, taken only when that workspace's data folder is ``folder`` (a row of an
    extra path, whose name is shown otherwise, gives none)."""
    from ..database import dec

    for raw_path, raw_display in rows:
        if not isinstance(raw_path, bytes | str) or not isinstance(raw_display, bytes | str):
            continue
        path = dec(raw_path) if isinstance(raw_path, bytes) else raw_path
        display = dec(raw_display) if isinstance(raw_display, bytes) else raw_display
        if not display or display.startswith(("/", "~")) or not path.endswith("/" + display):
            continue
        workspace = path[: -len(display) - 1] or "/"
        if replace(settings, workspace=Path(workspace)).data_dir == folder:
            return workspace
    return None


def left_behind(settings: Settings) -> list[LeftBehind]:
    """Every other data folder of the state dir holding history of a workspace that is no folder
    any more, by its workspace's path. A folder whose database cannot be read (damaged, another
    user's, a development build's) is passed over: its own workspace's doctor names that."""
    from ..database.companions import not_a_file, odd_companions
    from ..database.connection import DB_NAME, peek

    top = settings.data_dir.parent
    try:
        names = sorted(os.listdir(top))
    except OSError:
        return []  # no state dir yet, or not readable: the state dir's own checks say so
    found: list[LeftBehind] = []
    for name in names:
        folder = top / name
        if folder == settings.data_dir:
            continue
        db = str(folder / DB_NAME)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode) or not stat.S_ISREG(os.lstat(db).st_mode):
                continue
        except OSError:
            continue
        if not_a_file(db) is not None or odd_companions(db):
            continue  # never opened: a FIFO beside it would block
        try:
            workspace = _workspace_of(settings, folder, peek(db, _ROWS))
            if workspace is None or os.path.isdir(workspace):
                continue
            versions, files = peek(db, _COUNTS)[0]
        except (sqlite3.Error, OSError):
            continue
        found.append(LeftBehind(folder, workspace, int(versions), int(files)))
    return sorted(found, key=lambda each: each.workspace)


def _command(settings: Settings, workspace: str, *args: str) -> str:
    """``openclaw-memory -w WORKSPACE ARGS`` with the other settings flags doctor was given."""
    given, i = settings.command_flags, 0
    flags: list[str] = []
    while i < len(given):
        width = 1 if given[i] in ("--multimodal", "--no-multimodal") else 2
        if given[i] != "-w":
            flags += given[i:i + width]
        i += width
    return " ".join(["openclaw-memory", "-w", shlex.quote(workspace), *map(shlex.quote, flags), *map(shlex.quote, args)])


def _archive_name(folder: str, old: str, taken: set[str]) -> str:
    """``<folder>/<old's name>-history.tar.gz``, or ``-2``, ``-3`` ... before ``.tar.gz``: a name
    nothing holds now (export refuses one that exists: the import after it then failed, and the
    old history was removed) and no other workspace's steps use."""
    stem = os.path.join(folder, f"{os.path.basename(old) or 'workspace'}-history")
    n = 1
    while True:
        name = f"{stem}.tar.gz" if n == 1 else f"{stem}-{n}.tar.gz"
        if name not in taken and not os.path.lexists(name):
            taken.add(name)
            return name
        n += 1


def _steps(settings: Settings, each: LeftBehind, taken: set[str]) -> list[str]:
    """The shell lines that bring ``each``'s history into this workspace: one command, its steps
    chained with ``&&`` (so a step that fails stops the rest, the old data folder's removal above
    all), for bash and sh alike. This folder goes back to the old path for an export of it (its
    files and all that history), then here again whether the export worked or not (its status is
    kept in ``rc``, tested after the move), and the archive is imported; last, the old data folder
    is removed."""
    here, old = str(settings.workspace), each.workspace
    archive = _archive_name(os.path.dirname(here) or "/", old, taken)
    missing, parent = [], os.path.dirname(old) or "/"  # the old path's folders gone with it, deepest first
    while not os.path.isdir(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    made = [f"mkdir -p {shlex.quote(missing[0])}"] if missing else []
    unmade = [f"{{ rmdir {' '.join(map(shlex.quote, missing))} || true; }}"] if missing else []
    steps = [
        *made,
        f"mv {shlex.quote(here)} {shlex.quote(old)}",
        f"{{ {_command(settings, old, 'export', archive)}; rc=$?; mv {shlex.quote(old)} {shlex.quote(here)}; }}",
        *unmade,
        '[ "$rc" = 0 ]',
        _command(settings, here, "import", archive),
        f"rm -r {shlex.quote(str(each.folder))}",
    ]
    return [f"{step} &&" for step in steps[:-1]] + steps[-1:]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def check_history_left_behind(ctx: CheckContext) -> list[Finding]:
    found = left_behind(ctx.settings)
    if not found:
        return []
    listed = "\n".join(f"- {each.workspace}: {_plural(each.versions, 'version')} of {_plural(each.files, 'memory file')}, "
                       f"kept in {each.folder}" for each in found)
    steps: list[str] = []
    taken: set[str] = set()
    for each in found[:SHOWN]:
        lines = "\n".join(f"  {line}" for line in _steps(ctx.settings, each, taken))
        steps.append(f"If {each.workspace} is this workspace, moved or renamed, bring its history here with this one "
                     f"command, pasted whole into a shell (stop any `openclaw-memory serve` or `watch` of this workspace "
                     f"first; a step that fails stops the rest, this folder is moved back here whatever the export does, "
                     f"and the last line removes the old copy only once the import has taken it):\n{lines}")
    more = f"\n(and the same for the {len(found) - SHOWN} other(s) listed)" if len(found) > SHOWN else ""
    n = len(found)
    message = (
        f"This state dir holds the history of {_plural(n, 'workspace')} that no longer {'exists' if n == 1 else 'exist'}, "
        f"out of reach of every command here:\n{listed}\n"
        "openclaw-memory keeps a workspace's history under the workspace's path: after a move or a rename, `history`, "
        "`log`, `restore --last` and `rollback` at the new path know nothing recorded before it.\n"
        + "\n".join(steps) + more
        + "\nMoved elsewhere: the same, with that folder in place of this one. If that history is no longer wanted, remove "
        "its folder (the `rm -r` line alone). doctor never moves, merges or removes it."
    )
    # Info, not a warning: a workspace deleted on purpose leaves its data folder, and every doctor of
    # every workspace sharing the state dir would exit 1 until it is removed.
    return [Finding(ID, "info", message, False, tuple(str(each.folder) for each in found))]


CHECKS = [check_history_left_behind]
