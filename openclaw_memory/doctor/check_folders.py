"""The data dir's own folders: something other than a folder where one belongs.

A file, a symbolic link or a FIFO at ``index/``, ``index/edge/``, ``index/locks/``, ``watch/`` or
``service/`` (a bad restore, a person's mistake) made every command that goes there fail with "Not
a directory", or refuse the link, and doctor with them. Plain doctor names it; ``--fix`` moves it
under ``damaged/<stamp>/`` (never deleted, a link never followed) and the folder is made anew when
next needed; an index folder moved so is then built again from the memory files.
"""

from __future__ import annotations

import os
import stat

from ..fsutil.private import what_is_at
from ..fsutil.setaside import set_aside
from ..settings import Settings
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "state-folder-not-a-folder"

# The folders a data dir holds (damaged/ looks after itself: fsutil.setaside), parents first.
FOLDERS = ("index", "index/edge", "index/locks", "watch", "service")


def odd_folders(settings: Settings) -> list[tuple[str, str]]:
    """(path, what is there) for each folder of the data dir that is something else."""
    found: list[tuple[str, str]] = []
    for rel in FOLDERS:
        path = os.path.join(settings.data_dir, rel)
        if any(path.startswith(odd + os.sep) for odd, _ in found):
            continue  # inside one already named: it goes with it
        try:
            st = os.lstat(path)
        except OSError:
            continue  # not there (made when needed), or not to be looked at (the data dir's own check says it)
        if not stat.S_ISDIR(st.st_mode):
            found.append((path, what_is_at(path, st)))
    return found


def check_folders(ctx: CheckContext) -> list[Finding]:
    found = odd_folders(ctx.settings)
    if not found:
        return []
    listing = "\n".join(f"- {path}: {what}" for path, what in found)
    return [Finding(
        ID,
        "error",
        f"Where openclaw-memory keeps a folder of its own is something else:\n{listing}\n"
        "Every command that goes there fails (or refuses a link). `openclaw-memory doctor --fix` moves it under the "
        "state dir's damaged/ folder (never deleting it, never following a link); the folder is made anew when next "
        "needed, and a search index kept there is built again from the memory files.",
        True,
        tuple(path for path, _ in found),
    )]


def _set_aside(settings: Settings, finding: Finding) -> Repair:
    from ..history.store import HistoryStore

    moved = []
    shards = False  # the folder the index's shards are in went: built again below
    try:
        with HistoryStore.for_settings(settings).write_lock():
            for path, what in odd_folders(settings):  # looked at again, under the lock
                moved.append(f"{what} to {set_aside(settings.data_dir, path)}")
                shards = shards or os.path.relpath(path, settings.data_dir) in ("index", "index/edge")
    except OSError as exc:
        return Repair(finding.id, "set aside", "failed", f"{exc.strerror or exc} ({exc.filename or ''}); nothing was deleted",
                      finding.paths)
    detail = "moved " + "; ".join(moved) if moved else "every folder is a folder again; nothing to do"
    if shards and _indexed(settings):
        from .repair_index import reindex

        built = reindex(settings, finding)
        detail += f"; {built.detail}" if built.status == "done" else f"; the index could not be built again: {built.detail}"
    return Repair(finding.id, "set aside", "done", detail, finding.paths)


def _indexed(settings: Settings) -> bool:
    """Whether the agent had a search index (its manifests are in the state database, which stays)."""
    from ..index.collections import resolve_collections
    from ..index.manifest import manifest_serial

    return any(manifest_serial(settings.data_dir, c.name) is not None for c in resolve_collections(settings))


CHECKS = [check_folders]
REPAIRS = {ID: RepairSpec("set aside", lambda f: "Move what is at a folder of the state dir aside (kept under damaged/)",
                          _set_aside)}
