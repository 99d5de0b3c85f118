"""Check and repair: what writes killed at the wrong instant left beside memory files.

A write killed before its swap leaves its temp file (``.NAME.<hex>.tmp``: only what it would have
written), one killed just after its exchange what that exchange took off the file
(``.NAME.<hex>.swp``: the version it held, or a save an editor made in that instant, which the
history may lack). Every write that stops (an ``mv --update-links`` rewrite, a rollback's or an
import's step) leaves them the same way. The next write of that file sweeps them
(:func:`~openclaw_memory.history.leftovers.sweep_leftovers`); a file nobody writes again kept them for
good, and a save held only in a ``.swp`` never reached the history, and no command named it.

Plain doctor names each ``.swp``, and each ``.tmp`` that is ours to sweep (bytes the history holds,
or ten minutes old), of this user's files only (another user's is never read); ``--fix`` sweeps them
as that next write would, under the write lock: a ``.swp``'s bytes are logged as an outside edit of
the file when the history lacks them, then each leftover goes only as bytes the history holds; a
``.tmp`` whose bytes no version entry names (a write's partial copy, another program's draft: once
ten minutes old; a killed write's new version or an interrupted import's staged note, bytes the
object store keeps: at once) is no version of the note: it is set aside, as the very file looked at, under
``.openclaw-repair/leftovers/<stamp>/`` (one of an extra path beside the workspace under ``outside/``). A
younger one is left to the next doctor; one too big for the history stays, and the repair names it.
"""

from __future__ import annotations

import os
import stat
import time

from ..errors import MemoryToolError, PathRefused, describe_os_error
from ..fsutil.atomic import LEFTOVER_AGE_S, leftover_of
from ..fsutil.lock import lock_holder
from ..fsutil.safeopen import Folder, FolderSwapped, NotRegularFile, root_spellings
from ..history.store import HistoryStore
from ..settings import Settings
from .aftercare import refresh_watchdog
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "write-leftovers"
_SUFFIXES = (".tmp", ".swp")  # every leftover's (fsutil.atomic.leftover_of)
FIX_HINT = ('Run "openclaw-memory doctor --fix" to keep what they hold in the history and remove them (a .tmp '
            'whose bytes the history lacks is set aside under .openclaw-repair/leftovers/).')


def leftovers(settings: Settings, folders: list[str]) -> list[tuple[str, str]]:
    """(leftover, memory file it was written beside), absolute paths, of the ``folders`` (the scan's)
    that are ours to sweep."""
    store = HistoryStore.for_settings(settings)
    roots = root_spellings((str(settings.workspace), *settings.extra_paths))
    found = []
    for path in folders:
        root = next((r for r in roots if path == r or path.startswith(r + os.sep)), None)
        if root is None:
            continue
        try:  # each folder from its root's descriptor, as the scan walked it: a symlink planted since is not followed
            folder = Folder.under(root, [p for p in os.path.relpath(path, root).split(os.sep) if p != "."])
        except (OSError, FolderSwapped):
            continue  # gone or swapped since the scan: the next doctor looks again
        with folder:
            # Only a name ending as a leftover's is parsed: memory/ of 30,000 notes was 30,000 matches and a sort.
            for name in sorted(n for n in os.listdir(folder.fd) if n.endswith(_SUFFIXES)):
                leftover = leftover_of(name)
                if leftover and _ours(store, folder, name, leftover[1]):
                    found.append((os.path.join(path, name), os.path.join(path, leftover[0])))
    return found


def _ours(store: HistoryStore, folder: Folder, name: str, kind: str) -> bool:
    try:
        st = folder.lstat(name)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False  # another user's is never read nor removed (history.leftovers)
        if kind == "swp" or time.time() - st.st_mtime > LEFTOVER_AGE_S:
            return True
        from ..history.leftovers import stored_version  # the write path's modules: only for a leftover's name

        return stored_version(store, folder, name) is not None
    except (OSError, NotRegularFile, MemoryToolError):
        return False  # unreadable, or no history to ask: not ours to say


def check_write_leftovers(ctx: CheckContext) -> list[Finding]:
    if lock_holder(HistoryStore.for_settings(ctx.settings).write_lock_path) is not None:
        return []  # a write is running: its own temp file is no leftover (the next doctor looks again)
    found = leftovers(ctx.settings, [path for path, _, _ in ctx.scan.folders])
    if not found:
        return []
    shown = [os.path.relpath(p, ctx.workspace) for p, _ in found]
    listed = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
    message = (f"{len(found)} file(s) left beside memory files by writes that were killed: {listed}. A .swp may hold a "
               f"version (or a save made in that instant) the history lacks, a .tmp ten minutes old a partial copy or another program's draft.\n"
               f"{FIX_HINT}")
    return [Finding(ID, "warning", message, True, tuple(shown), FIX_HINT)]


def sweep(settings: Settings, finding: Finding) -> Repair:
    from ..files.paths import REPAIR_DIR, archive_stamp
    from ..files.read import resolve_memory_path
    from ..fsutil.move import safe_move
    from ..history.leftovers import sweep_leftovers

    workspace = str(settings.workspace)
    store = HistoryStore.for_settings(settings)
    # The finding names them from the workspace: one in an extra path beside it as ``../notes/...``.
    targets = {of for _, of in leftovers(settings, sorted({os.path.normpath(os.path.join(workspace, os.path.dirname(p)))
                                                           for p in finding.paths}))}
    aside = f"{REPAIR_DIR}/leftovers/{archive_stamp()}"
    set_aside: list[str] = []
    landed: list[str] = []  # where those went, in the workspace
    why_left: list[str] = []

    def keep_aside(folder: Folder, name: str, seen: os.stat_result) -> None:
        """A ten-minute-old .tmp the history lacks: moved under ``aside``, as the very file looked at
        (a write's partial copy or another program's draft: neither a version of the note, nor to lose);
        one of an extra path beside the workspace under ``aside/outside/<its folder's absolute path>``
        (copied, verified and removed where that is another file system)."""
        where = os.path.relpath(folder.path, workspace)
        outside = where == os.pardir or where.startswith(os.pardir + os.sep)
        shown = os.path.join(where, name)
        below = ["outside", *folder.path.split(os.sep)] if outside else where.split(os.sep)
        parts = [*aside.split("/"), *(p for p in below if p not in ("", os.curdir))]
        try:
            # Folders of this user alone (0700): a draft its folder kept private must not be laid open.
            with Folder.under(workspace, parts, create=True, mode=0o700) as into:
                safe_move(folder.fd, name, into.fd, name, expect=seen)
        except (FolderSwapped, NotADirectoryError):
            why_left.append(f"{shown} (a folder on the way to {aside}/ is a symlink or not a folder: move it away)")
            return
        except OSError as exc:  # a full disk, a file changed meanwhile (SourceKept): said, and left
            why_left.append(f"{shown} (not set aside: {describe_os_error(exc)})")
            return
        set_aside.append(shown)
        if not outside:
            landed.append("/".join([*parts, name]))

    try:
        with store.write_lock():  # no write is in progress: each leftover is a killed one's
            for of in sorted(targets):
                try:
                    resolved = resolve_memory_path(of, workspace, settings.extra_paths)
                    with resolved.folder() as folder:
                        sweep_leftovers(store, resolved, folder, keep_aside)
                except (PathRefused, OSError, FolderSwapped):
                    continue  # not a memory path now, or its folder went: left, named again below
    except MemoryToolError as exc:
        return Repair(finding.id, "sweep", "failed", f"{exc.message}; nothing was removed", finding.paths)
    left = [os.path.relpath(p, workspace) for p, _ in leftovers(settings, sorted({os.path.dirname(of) for of in targets}))]
    moved = (f"; set aside under {aside}/ (bytes no version in the history names: a killed write's copy, an "
             f"interrupted import's staged note, or another program's draft): {', '.join(set_aside)}") if set_aside else ""
    # The leftovers the sweep took away are its own change, not one behind the agent's back: out of
    # the watchdog's baseline (an extra path beside the workspace is outside it), as every repair does.
    gone = [p for p in finding.paths if p not in left and not p.startswith(os.pardir + os.sep)]
    watched = refresh_watchdog(settings, gone + landed, {}, dict.fromkeys(gone))
    if left:
        said = {entry.split(" (", 1)[0] for entry in why_left}
        rest = [p for p in left if p not in said]
        reasons = [*why_left, *([f"{', '.join(rest)} (held open, or bytes the history could not keep)"] if rest else [])]
        return Repair(finding.id, "sweep", "failed", f"left: {'; '.join(reasons)}{moved}{watched}", tuple(left))
    removed = [p for p in finding.paths if p not in set_aside]
    done = f"kept in the history and removed: {', '.join(removed)}" if removed else "nothing removed"
    return Repair(finding.id, "sweep", "done", f"{done}{moved}{watched}", finding.paths)


CHECKS = [check_write_leftovers]
REPAIRS = {ID: RepairSpec("sweep", lambda f: "Keep what killed writes left in the history and remove the files "
                                            "(or set them aside)",
                          sweep)}
