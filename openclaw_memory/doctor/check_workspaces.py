"""History left behind: data folders of this state dir whose workspace is no longer at its path.

openclaw-memory keeps a workspace's data (its history above all) in a folder named after the
workspace's real path (:attr:`Settings.data_dir`: the folder's name and the hash of its whole path).
A workspace moved or renamed gets a new, empty one: ``restore --last``, ``history``, ``log`` and
``rollback`` at the new path see nothing recorded before, while every byte is still in the old
folder. Nothing new is recorded for this check: the history's rows name each file by its absolute
path beside its workspace-relative name, which gives the workspace's path, and it is taken only
when that path is the one whose hash the folder's name holds.

The old path may hold something again: a symbolic link left there to the new place (every command
given that path follows it, so the old folder's history is out of reach all the same), a file, or a
folder made again (OpenClaw makes its default workspace anew). A folder is taken as made again only
when it holds no memory file at all and the workspace moved here by the look of this one: it has no
history of its own yet, or a memory file here holds the very bytes the old history last recorded for
the same name. A workspace in use whose notes were all removed is not named from another one that
has notes and history of its own.

Read-only: each other data folder's state database is read through a read-only connection, and
nothing is moved, merged or removed. The finding says what to run to bring that history here.
"""

from __future__ import annotations

import os
import shlex
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..settings import Settings
from ..settings.agents import configured_workspaces
from .model import CheckContext, Finding

ID = "history-left-behind"
WORKSPACE_IN_MEMORY = "workspace-in-memory"
SHOWN = 5  # workspaces given their commands one by one; more are named only
_ROWS = "SELECT DISTINCT path, display FROM versions LIMIT 64"
_COUNTS = "SELECT COUNT(*), COUNT(DISTINCT path) FROM versions"
_LATEST = "SELECT display, version FROM versions WHERE id IN (SELECT MAX(id) FROM versions GROUP BY path) LIMIT 64"
_ANY = "SELECT 1 FROM versions LIMIT 1"
_AGENTS = "SELECT DISTINCT agent FROM versions"

# What is at the old path now (LeftBehind.found)
GONE = "gone"  # nothing (or its folders above gone too)
LINK = "link"  # a symbolic link (to this workspace, most often)
LINK_ABOVE = "link-above"  # a folder above it is a symbolic link now
NOT_A_FOLDER = "file"  # a file, a FIFO ...
EMPTY = "empty"  # a folder holding no memory file, made since the workspace moved


@dataclass(frozen=True)
class LeftBehind:
    """A data folder of this state dir and the workspace its history was recorded for."""

    folder: Path
    workspace: str
    versions: int
    files: int
    found: str = GONE  # what the old path holds now
    leads_to: str | None = None  # where a symbolic link at or above it leads
    link: str | None = None  # that link
    # Another agent's, whose history this agent is not offered: the agent openclaw.json gives that
    # workspace, or the only agents whose writes it holds. None: this agent may take it.
    owner: str | None = None
    configured: bool = False  # ``owner``'s configured workspace (else: the writer of all its history)


def _same_folder(a: str, b: str) -> bool:
    """Whether two paths name one folder: as spelled, or as their real paths (where they are)."""
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def _writers(db: str) -> set[str]:
    """The agents whose writes a data folder's history holds (NULL: outside edits, repairs: none)."""
    from ..database import dec
    from ..database.connection import peek

    return {dec(a) if isinstance(a, bytes) else str(a) for (a,) in peek(db, _AGENTS) if a is not None}


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
    agents = configured_workspaces(settings)
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
            if workspace is None:
                continue
            at = _found_at(settings, workspace, db)
            if at is None:
                continue
            versions, files = peek(db, _COUNTS)[0]
            owner, configured = _owner(settings, workspace, db, agents)
        except (sqlite3.Error, OSError):
            continue
        found.append(LeftBehind(folder, workspace, int(versions), int(files), *at, owner, configured))
    return sorted(found, key=lambda each: each.workspace)


def _owner(settings: Settings, workspace: str, db: str, agents: dict[str, str]) -> tuple[str | None, bool]:
    """Whose history ``db`` is when it is not this agent's to take (see :attr:`LeftBehind.owner`):
    another configured agent's workspace is that agent's, deleted or not; else a history that holds
    writes of other agents only (none of this agent's) is theirs. An import offered anyway gave one
    agent another's notes, deleted history and all, with a one-paste command."""
    others = sorted(agent for agent, path in agents.items() if agent != settings.agent and _same_folder(path, workspace))
    if others and not any(agent == settings.agent and _same_folder(path, workspace) for agent, path in agents.items()):
        return ", ".join(others), True
    writers = _writers(db)
    if writers and settings.agent not in writers:
        return ", ".join(sorted(writers)), False
    return None, False


def _found_at(settings: Settings, workspace: str, db: str) -> tuple[str, str | None, str | None] | None:
    """What ``workspace``, the path a data folder's history was recorded for (its real path then),
    holds now, when that is not the workspace: (what, where a link leads, the link); None while it is
    (a folder holding memory files, or an empty one nothing says the workspace left)."""
    parent = os.path.dirname(workspace) or "/"
    if os.path.realpath(parent) != parent:  # a folder above it is a symbolic link now
        link = next((p for p in _ancestors(parent) if os.path.islink(p)), parent)
        return LINK_ABOVE, os.path.realpath(workspace), link
    try:
        mode = os.lstat(workspace).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return GONE, None, None
    if stat.S_ISLNK(mode):  # os.path.isdir followed it: taken for the workspace, often this one
        return LINK, os.path.realpath(workspace), workspace
    if not stat.S_ISDIR(mode):
        return NOT_A_FOLDER, None, None
    if _holds_memory(workspace) or not _moved_here(settings, db):
        return None
    return EMPTY, None, None


def _ancestors(path: str) -> list[str]:
    """``path`` and every folder above it, the topmost first."""
    out = [path]
    while os.path.dirname(out[-1]) != out[-1]:
        out.append(os.path.dirname(out[-1]))
    return out[::-1]


def _holds_memory(folder: str) -> bool:
    """Whether ``folder`` holds a memory file: a root one, or anything but folders under ``memory/``.
    Unreadable: taken as holding one (nothing is said of a folder that cannot be looked at)."""
    from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT

    try:
        if any(os.path.lexists(os.path.join(folder, name)) for name in (CANONICAL_ROOT, LEGACY_ROOT)):
            return True
        notes = os.path.join(folder, "memory")
        if not os.path.lexists(notes):
            return False
        if not stat.S_ISDIR(os.lstat(notes).st_mode):
            return True
        for _root, _dirs, files in os.walk(notes, onerror=_raise):
            if files:
                return True
    except OSError:
        return True
    return False


def _raise(exc: OSError) -> None:
    raise exc


def _moved_here(settings: Settings, db: str) -> bool:
    """Whether this workspace looks like the one whose history is in ``db``, moved here: it has no
    history of its own yet, or one of its memory files holds the bytes that history last recorded
    for the same name."""
    from ..database import dec
    from ..database.connection import DB_NAME, peek
    from ..fsutil.hashing import hash_file

    try:
        own = peek(str(settings.data_dir / DB_NAME), _ANY) if os.path.lexists(settings.data_dir / DB_NAME) else []
    except sqlite3.Error:
        own = [(1,)]  # unreadable here: the state checks say so; no guess
    if not own:
        return True
    for raw_display, version in peek(db, _LATEST):
        display = dec(raw_display) if isinstance(raw_display, bytes) else raw_display
        if not isinstance(display, str) or not display or display.startswith(("/", "~")) or ".." in display.split("/"):
            continue
        try:
            if hash_file(os.path.join(str(settings.workspace), display)) == version:
                return True
        except (OSError, ValueError):
            continue
    return False


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
    return _free(lambda n: f"{stem}.tar.gz" if n == 1 else f"{stem}-{n}.tar.gz", taken)


def _aside_name(old: str, taken: set[str]) -> str:
    """``<old>.set-aside`` (or ``-2``, ``-3`` ...): where what the old path holds now (a link, a
    folder made again) waits while this folder is there; a name nothing holds now."""
    return _free(lambda n: f"{old}.set-aside" if n == 1 else f"{old}.set-aside-{n}", taken)


def _free(named: Callable[[int], str], taken: set[str]) -> str:
    """The first of ``named(1)``, ``named(2)`` ... that nothing holds now and no other step took."""
    n = 1
    while (name := named(n)) in taken or os.path.lexists(name):
        n += 1
    taken.add(name)
    return name


def _steps(settings: Settings, each: LeftBehind, taken: set[str]) -> list[str]:
    """The shell lines that bring ``each``'s history into this workspace: one command, its steps
    chained with ``&&`` (so a step that fails stops the rest, the old data folder's removal above
    all), for bash and sh alike. This folder goes back to the old path for an export of it (its
    files and all that history), then here again whether the export worked or not (its status is
    kept in ``rc``, tested after the move), and the archive is imported; last, the old data folder
    is removed. What the old path holds now (a symbolic link, a file, a folder made again) is set
    aside first and put back with this folder's move back (a ``mv`` onto a folder or a link to one
    would move this folder into it)."""
    here, old = str(settings.workspace), each.workspace
    archive = _archive_name(os.path.dirname(here) or "/", old, taken)
    missing, parent = [], os.path.dirname(old) or "/"  # the old path's folders gone with it, deepest first
    while not os.path.isdir(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    made = [f"mkdir -p {shlex.quote(missing[0])}"] if missing else []
    unmade = [f"{{ rmdir {' '.join(map(shlex.quote, missing))} || true; }}"] if missing else []
    aside = _aside_name(old, taken) if each.found != GONE else None
    q_here, q_old = shlex.quote(here), shlex.quote(old)
    if aside is None:
        moved, back = [f"mv {q_here} {q_old}"], ""
    else:  # put back at once if this folder's move fails
        q_aside = shlex.quote(aside)
        moved = [f"mv {q_old} {q_aside}", f"{{ mv {q_here} {q_old} || {{ mv {q_aside} {q_old}; false; }}; }}"]
        back = f" mv {q_aside} {q_old};"
    steps = [
        *made,
        *moved,
        f"{{ {_command(settings, old, 'export', archive)}; rc=$?; mv {q_old} {q_here};{back} }}",
        *unmade,
        '[ "$rc" = 0 ]',
        _command(settings, here, "import", archive),
        f"rm -r {shlex.quote(str(each.folder))}",
    ]
    return [f"{step} &&" for step in steps[:-1]] + steps[-1:]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _now_there(each: LeftBehind, here: str) -> str:
    """What the old path holds now, where it holds something: a note for its line."""
    if each.found == LINK:
        if each.leads_to == here:
            return (f" ({each.workspace} is now a symbolic link to this workspace: every command given that path "
                    "works here, with this workspace's history)")
        return (f" ({each.workspace} is now a symbolic link to {each.leads_to}: every command given that path "
                "works there, with that folder's history)")
    if each.found == LINK_ABOVE:
        to = "this workspace" if each.leads_to == here else str(each.leads_to)
        return f" ({each.workspace} now leads to {to}, through the symbolic link {each.link})"
    if each.found == NOT_A_FOLDER:
        return f" ({each.workspace} is now a file, not a folder)"
    if each.found == EMPTY:
        return (f" ({each.workspace} is a folder again but holds no memory file: made again after the workspace "
                "moved, as OpenClaw makes its default workspace anew; if it is a workspace of its own whose notes "
                "were all removed, leave its history where it is)")
    return ""


def _theirs(each: LeftBehind) -> str:
    """Another agent's history: said so, with no command that would bring it here."""
    if each.owner is None:
        return ""
    if each.configured:
        return (f" — the workspace openclaw.json gives agent {each.owner}: its history is that agent's, so no command "
                "is given here to bring it in")
    return (f" — its history holds writes of agent {each.owner} alone: that agent's, so no command is given here to "
            f"bring it in (`openclaw-memory --agent {shlex.quote(each.owner.split(', ')[0])} doctor` offers one)")


def check_history_left_behind(ctx: CheckContext) -> list[Finding]:
    found = left_behind(ctx.settings)
    if not found:
        return []
    here = str(ctx.settings.workspace)
    listed = "\n".join(f"- {each.workspace}: {_plural(each.versions, 'version')} of {_plural(each.files, 'memory file')}, "
                       f"kept in {each.folder}{_now_there(each, here)}{_theirs(each)}" for each in found)
    steps: list[str] = []
    taken: set[str] = set()
    for each in [each for each in found if each.owner is None][:SHOWN]:
        if each.found == LINK_ABOVE:
            steps.append(f"{each.workspace} cannot be a workspace of its own while {each.link} is a symbolic link (every "
                         f"command given that path works in {each.leads_to}): no command is given for it; with that link "
                         "replaced by the folder it stood for, run doctor again for one")
            continue
        lines = "\n".join(f"  {line}" for line in _steps(ctx.settings, each, taken))
        steps.append(f"If {each.workspace} is this workspace, moved or renamed, bring its history here with this one "
                     f"command, pasted whole into a shell (stop any `openclaw-memory serve` or `watch` of this workspace "
                     f"first; a step that fails stops the rest, this folder is moved back here whatever the export does, "
                     f"and the last line removes the old copy only once the import has taken it):\n{lines}")
    mine = sum(each.owner is None for each in found)
    more = f"\n(and the same for the {mine - SHOWN} other(s) listed)" if mine > SHOWN else ""
    n = len(found)
    message = (
        f"This state dir holds the history of {_plural(n, 'workspace')} no longer at {'its' if n == 1 else 'their'} path, "
        f"out of reach of every command here:\n{listed}\n"
        "openclaw-memory keeps a workspace's history under the workspace's path: after a move or a rename, `history`, "
        "`log`, `restore --last` and `rollback` at the new path know nothing recorded before it.\n"
        + "\n".join(steps) + more
        + ("\nMoved elsewhere: the same, with that folder in place of this one. If that history is no longer wanted, "
           "remove its folder (the `rm -r` line alone)." if mine else "")
        + (" " if mine else "") + "doctor never moves, merges or removes it."
    )
    # Info, not a warning: a workspace deleted on purpose leaves its data folder, and every doctor of
    # every workspace sharing the state dir would exit 1 until it is removed.
    return [Finding(ID, "info", message, False, tuple(str(each.folder) for each in found))]


def check_workspace_in_memory(ctx: CheckContext) -> list[Finding]:
    """A configured agent's workspace inside another agent's memory (its memory/ folder or an extra path):
    an agent named ``memory`` with no workspace of its own gets ``<agents.defaults.workspace>/memory``, the
    default agent's memory/ folder (OpenClaw's resolveAgentWorkspaceDir does so too), and the default agent
    lists, reads and searches its notes as its own. Every agent's doctor names it: it is openclaw.json's."""
    from ..settings.agents import configured_agents, overlap_text, overlaps

    found = overlaps(configured_agents(ctx.settings))
    if not found:
        return []
    return [Finding(WORKSPACE_IN_MEMORY, "warning", "\n".join(overlap_text(o) for o in found), False,
                    tuple(dict.fromkeys(o.places.workspace for o in found)))]


CHECKS = [check_history_left_behind, check_workspace_in_memory]
