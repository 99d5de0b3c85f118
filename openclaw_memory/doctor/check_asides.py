"""Check and repair: a note a killed move or removal left at its private name.

A move or removal takes the file it removes to ``.NAME.aside-<hex>`` beside it for the instant
before the unlink (:mod:`~openclaw_memory.fsutil.move`); one killed in that instant, or one whose
file was replaced meanwhile by a save under NAME, leaves it there: a whole note no listing shows
(hidden), no search finds and nothing named (doctor said "No problems found").

Plain doctor names each one (a warning); ``--fix``, under the write lock, gives it its name back
where the name is free, removes it where the file at the name holds the same bytes (a second copy),
and otherwise leaves it, saying so: it holds something the note at the name does not, and only the
user can say which to keep. Nothing is ever unlinked but a byte-for-byte copy of the file beside it.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat

from ..errors import MemoryToolError
from ..fsutil.hashing import hash_open_file
from ..fsutil.lock import lock_holder
from ..fsutil.move import ASIDE_TAG, aside_prefix, link_noreplace, remove_if_holds
from ..fsutil.safeopen import Folder, FolderSwapped, NotRegularFile, open_regular_nofollow, root_spellings
from ..history.store import HistoryStore
from ..settings import Settings
from .aftercare import held_now, inside_workspace, refresh_watchdog
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "move-leftovers"
# fsutil.move.aside_name: ``.`` + the file's name + ``.aside-`` + 16 hex digits; a long name cut to
# fit ends in ``~`` + 8 hex digits of the whole name's hash (fsutil.atomic.hidden_stem), found again
# from the names in its folder or in the history.
_ASIDE = re.compile(r"\.(?P<of>.+\.md)\.aside-[0-9a-f]{16}")
_CUT_ASIDE = re.compile(r"\.(?P<stem>.+~[0-9a-f]{8})\.aside-[0-9a-f]{16}")
FIX_HINT = 'Run "openclaw-memory doctor --fix" to give each its name back where the name is free.'
UNKNOWN = ("the note it was taken from is not known (its long name was cut to fit, and no name here or in the "
           "history matches): rename it to a .md name to keep it, or delete it")


def asides(settings: Settings, folders: list[str]) -> list[tuple[str, str | None]]:
    """(left file, the note's name it was taken from), absolute paths, in the scan's ``folders``; the
    note None where its long name was cut and no name in its folder or in the history is it."""
    found: list[tuple[str, str | None]] = []
    known: list[str] | None = None
    for path in folders:
        try:
            folder = _open(settings, path)
        except (OSError, FolderSwapped):
            continue  # gone or swapped since the scan: the next doctor looks again
        with folder:
            listed = os.listdir(folder.fd)
            for name in sorted(n for n in listed if ".aside-" in n):
                if not _regular(folder, name):
                    continue
                if match := _ASIDE.fullmatch(name):
                    found.append((os.path.join(path, name), os.path.join(path, match["of"])))
                elif match := _CUT_ASIDE.fullmatch(name):
                    if known is None:
                        known = _known_paths(settings)
                    of = _cut_note(f".{match['stem']}{ASIDE_TAG}", path, listed, known)
                    found.append((os.path.join(path, name), of))
    return found


def _known_paths(settings: Settings) -> list[str]:
    """Every path the history has entries for; none where it cannot be read (its own checks say why)."""
    try:
        return HistoryStore.for_settings(settings).log.paths()
    except (OSError, MemoryToolError, sqlite3.Error):
        return []


def _cut_note(prefix: str, path: str, listed: list[str], known: list[str]) -> str | None:
    """The note (absolute path) whose private names begin with ``prefix`` (a cut one, see
    :func:`~..fsutil.move.aside_prefix`): a Markdown name in its folder, or one the history holds there."""
    names = [n for n in listed if n.endswith(".md")]
    names += [os.path.basename(p) for p in known if os.path.dirname(p) == path]
    return next((os.path.join(path, n) for n in names if aside_prefix(n) == prefix), None)


def _open(settings: Settings, path: str) -> Folder:
    """The memory folder ``path``, from its root's descriptor as the scan walked it (a symlink planted
    since is not followed); FileNotFoundError when it is under no root."""
    roots = root_spellings((str(settings.workspace), *settings.extra_paths))
    root = next((r for r in roots if path == r or path.startswith(r + os.sep)), None)
    if root is None:
        raise FileNotFoundError(path)
    return Folder.under(root, [p for p in os.path.relpath(path, root).split(os.sep) if p != "."])


def _regular(folder: Folder, name: str) -> bool:
    try:
        return stat.S_ISREG(folder.lstat(name).st_mode)
    except OSError:
        return False


def check_move_leftovers(ctx: CheckContext) -> list[Finding]:
    if lock_holder(HistoryStore.for_settings(ctx.settings).write_lock_path) is not None:
        return []  # a move or removal is running: its file is aside for an instant (the next doctor looks again)
    found = asides(ctx.settings, [path for path, _, _ in ctx.scan.folders])
    if not found:
        return []
    shown = [os.path.relpath(p, ctx.workspace) for p, _ in found]
    listed = ", ".join(f"{s} (of {os.path.relpath(of, ctx.workspace) if of else 'a note whose name is not known'})"
                       for s, (_, of) in zip(shown, found, strict=True))
    unknown = [s for s, (_, of) in zip(shown, found, strict=True) if of is None]
    differ = [s for s, (aside, of) in zip(shown, found, strict=True) if of is not None and not _fixable(aside, of)]
    fixable = len(differ) + len(unknown) < len(found)
    message = (f"{len(found)} note(s) left at a hidden name by a move or removal that was killed or met a save: {listed}. "
               "No listing or search sees them."
               + (f" Each of {', '.join(differ)} differs from the note now at its name: rename it to a .md name to keep "
                  "it, or delete it." if differ else "")
               + (f" For {', '.join(unknown)}, {UNKNOWN}." if unknown else "")
               + (f"\n{FIX_HINT}" if fixable else ""))
    return [Finding(ID, "warning", message, fixable, tuple(shown), FIX_HINT if fixable else "")]


def _fixable(aside: str, of: str) -> bool:
    """Whether --fix can act: the name is free, or holds the same bytes (read by path: only a hint)."""
    try:
        os.lstat(of)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return (held := _hash_at(aside)) is not None and held == _hash_at(of)


def _hash_at(path: str) -> str | None:
    try:
        fd, _ = open_regular_nofollow(path)  # never a symlink, never waiting on a FIFO
    except OSError:
        return None
    try:
        return hash_open_file(fd)
    finally:
        os.close(fd)


def give_names_back(settings: Settings, finding: Finding) -> Repair:
    workspace = str(settings.workspace)
    store = HistoryStore.for_settings(settings)
    folders = sorted({os.path.normpath(os.path.join(workspace, os.path.dirname(p))) for p in finding.paths})
    done: list[str] = []
    kept: list[str] = []
    failed: list[str] = []
    gone: list[str] = []  # the private names given back or removed
    with store.write_lock():  # no move or removal is in progress: each one is a killed one's
        found = asides(settings, folders)
        # Each name it gives back, and each private name it empties, is the repair's change, not one
        # behind the agent's back: the watchdog's baseline takes them (an extra path is outside it).
        touched = inside_workspace(workspace, (p for aside, of in found for p in (aside, of) if p))
        started = held_now(settings, touched)
        for aside, of in found:
            shown = os.path.relpath(aside, workspace)
            if of is None:
                kept.append(f"{shown} ({UNKNOWN})")
                continue
            note = os.path.relpath(of, workspace)
            try:
                with _open(settings, os.path.dirname(aside)) as folder:
                    done.append(_give_back(folder, os.path.basename(aside), os.path.basename(of), shown, note))
                    gone.append(shown)
            except FileExistsError:
                kept.append(f"{shown} (it differs from {note}: rename it to a .md name to keep it, or delete it)")
            except (OSError, FolderSwapped) as exc:
                failed.append(f"{shown} ({exc.strerror or exc})")
        watched = refresh_watchdog(settings, touched, started, dict.fromkeys(gone)) if gone else ""
    detail = "; ".join([*done, *([f"left as it is: {', '.join(kept)}"] if kept else []),
                        *([f"failed: {', '.join(failed)}"] if failed else [])]) + watched
    return Repair(finding.id, "give back", "failed" if failed else "done",
                  detail or "none left (an earlier repair gave them back)", finding.paths)


def _give_back(folder: Folder, aside: str, name: str, shown: str, note: str) -> str:
    """Its name back where free; unlinked where the file at the name holds the same bytes; else FileExistsError."""
    try:
        link_noreplace(folder.fd, aside, folder.fd, name)
        folder.fsync()
        return f"{shown} is {note} again"
    except FileExistsError:
        pass
    held = _hash(folder, aside)
    if held is None or held != _hash(folder, name):
        raise FileExistsError(name)
    remove_if_holds(folder.fd, aside, held)  # only as those bytes, checked as it goes
    return f"{shown} removed: {note} holds the same bytes"


def _hash(folder: Folder, name: str) -> str | None:
    try:
        fd, _ = folder.open_regular(name)
    except (OSError, NotRegularFile):
        return None
    try:
        return hash_open_file(fd)
    finally:
        os.close(fd)


CHECKS = [check_move_leftovers]
REPAIRS = {ID: RepairSpec("give back", lambda f: "Give notes left at a hidden name by a killed move their names back",
                          give_names_back)}
