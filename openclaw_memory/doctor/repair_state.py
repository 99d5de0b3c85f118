"""Repairs of damaged state files (see :mod:`.check_state`).

Nothing that may be the only trace of something is deleted: the state database and the doctor
journal are set aside under ``<data dir>/damaged/<stamp>/``, and a damaged snapshot's bytes are
written there before its row is deleted (:mod:`openclaw_memory.fsutil.setaside`).
The index is derived from the memory files, so its damaged parts are rebuilt from them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import MemoryToolError
from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT
from ..fsutil.move import SourceKept, asides_of, unlink_other_name
from ..fsutil.safeopen import Folder, open_regular_nofollow
from .check_state import (
    INDEX_DAMAGED,
    STATE_DB_COMPANION_NOT_A_FILE,
    STATE_DB_DAMAGED,
    STATE_DB_NOT_A_FILE,
    WATCHDOG_DAMAGED,
    damaged_index,
    live_service,
)
from .model import Finding, Repair, RepairSpec
from .place import place_no_replace, same_file

if TYPE_CHECKING:
    from ..database.repair import Salvage
    from ..settings import Settings


def _said(exc: MemoryToolError | OSError) -> str:
    return exc.message if isinstance(exc, MemoryToolError) else f"{exc.strerror or exc} ({exc.filename or ''})"


def _failed(finding: Finding, action: str, exc: MemoryToolError | OSError) -> Repair:
    said = _said(exc)  # (a sentence already ended, "... Free some space and try again.", gets one of its own)
    return Repair(finding.id, action, "failed", f"{said} Nothing was deleted." if said.endswith(".") else
                  f"{said}; nothing was deleted", finding.paths)


def _rebuild_snapshots(settings: Settings, finding: Finding) -> Repair:
    from ..watchdog.store import SnapshotStore

    try:
        moved, baseline = SnapshotStore(settings.data_dir).rebuild(settings.watchdog.keep)
    except (MemoryToolError, OSError) as exc:
        return _failed(finding, "set aside", exc)
    where = (f"wrote {len(moved)} damaged snapshot(s) to {', '.join(str(p) for p in moved)} and removed them from the "
             "state database" if moved else "nothing needed setting aside")
    after = f"the baseline is now snapshot '{baseline}'" if baseline else "no sound snapshot is left: take one with `openclaw-memory watchdog snapshot`"
    return Repair(finding.id, "set aside", "done", f"{where}; {after}", tuple(str(p) for p in moved))


def _rebuild_database(settings: Settings, finding: Finding) -> Repair:
    from ..database import Database
    from ..database.repair import damage, rebuild
    from ..history.store import HistoryStore

    db = Database(settings.data_dir)
    service = live_service(settings)
    if service:  # its connections may hold committed frames no longer at the paths: a rebuild would drop them
        return Repair(finding.id, "rebuild", "failed",
                      f"the memory service (pid {service}) has the state database open and may still hold what is missing; "
                      "stop it (`openclaw-memory serve --stop`, which copies that in) and run `openclaw-memory doctor` "
                      "again; nothing was moved", finding.paths)
    try:
        with HistoryStore.for_settings(settings).write_lock():
            if damage(db) is None:  # looked at again under the lock
                return Repair(finding.id, "rebuild", "done", "the state database is sound again; nothing to do", finding.paths)
            salvage = rebuild(db)
    except (MemoryToolError, OSError) as exc:
        return _failed(finding, "rebuild", exc)
    if salvage.resumed and salvage.set_aside is None:
        return Repair(finding.id, "rebuild", "done", "removed what an interrupted rebuild left (its record and scratch "
                      "folder); the state database is sound: nothing else to do", finding.paths)
    detail = f"set the damaged database aside at {salvage.set_aside}; {_held(salvage)}"
    if salvage.resumed:
        detail = f"finished a rebuild that was interrupted (its new database was complete): {detail}"
    return Repair(finding.id, "rebuild", "done", detail, tuple(str(p) for p in (salvage.set_aside,) if p))


def _held(salvage: Salvage) -> str:
    """What the new database holds of the old one, and what could not be recovered."""
    kept = ", ".join(f"{n} {table}" for table, n in salvage.recovered.items() if n) or "nothing"
    lost = "; ".join(f"{table}: {why}" for table, why in salvage.lost.items())
    return f"the new one holds {kept}" + (f". Could not be recovered: {lost}" if lost else "; every row was recovered")


def _set_aside_database(settings: Settings, finding: Finding) -> Repair:
    from ..database import Database
    from ..database.companions import not_a_file
    from ..database.repair import rebuild, set_aside_files
    from ..history.store import HistoryStore

    db = Database(settings.data_dir)
    try:
        with HistoryStore.for_settings(settings).write_lock():
            what = not_a_file(db.path)  # looked at again under the lock
            if what is None:
                return Repair(finding.id, "set aside", "done", "the state database's path holds a file again; nothing to do",
                              finding.paths)
            if os.path.isfile(db.path):  # a link to a file: the new database gets every row that file yields
                salvage = rebuild(db)
                return Repair(finding.id, "set aside", "done",
                              f"moved {what} to {salvage.set_aside} (the file it names is left as it is); {_held(salvage)}",
                              tuple(str(p) for p in (salvage.set_aside,) if p))
            moved = set_aside_files(db)
    except (MemoryToolError, OSError) as exc:
        return _failed(finding, "set aside", exc)
    return Repair(finding.id, "set aside", "done", f"moved {what} to {moved}; the next command starts a new state database",
                  tuple(str(p) for p in (moved,) if p))


def _set_aside_companions(settings: Settings, finding: Finding) -> Repair:
    from ..database import Database
    from ..database.companions import odd_companions
    from ..fsutil.setaside import set_aside
    from ..history.store import HistoryStore

    db = Database(settings.data_dir)
    try:
        with HistoryStore.for_settings(settings).write_lock():
            moved = [(what, set_aside(settings.data_dir, path)) for path, what in odd_companions(db.path)]  # looked at again under the lock
    except (MemoryToolError, OSError) as exc:
        return _failed(finding, "set aside", exc)
    if not moved:
        return Repair(finding.id, "set aside", "done", "only files are beside the state database again; nothing to do",
                      finding.paths)
    said = "; ".join(f"moved {what} to {where}" for what, where in moved)
    return Repair(finding.id, "set aside", "done", f"{said}; the state database itself is kept as it was",
                  tuple(str(where) for _, where in moved if where))


def _rebuild_index(settings: Settings, finding: Finding) -> Repair:
    from ..fsutil.setaside import not_a_folder, set_aside
    from ..index.api import MemoryIndex
    from ..index.manifest import delete_manifest
    from ..index.store.factory import open_store

    done: list[str] = []  # the shards dropped so far: a failure after one is no "nothing was deleted"
    try:
        damaged = damaged_index(settings)
        store = open_store(settings)
        try:
            for name, _reason in damaged:
                shard = settings.data_dir / "index" / "edge" / name
                if not_a_folder(shard):
                    set_aside(settings.data_dir, shard)  # not a shard: kept under damaged/, never deleted
                elif store.exists(name) or shard.is_dir():
                    store.drop(name)
                done.append(name)  # (before its manifest goes: a failure there still says it was dropped)
                delete_manifest(settings.data_dir, name)
        finally:
            store.close()
        with MemoryIndex(settings) as index:
            summary = index.sync()
    except (MemoryToolError, OSError) as exc:
        if not done:
            return _failed(finding, "rebuild", exc)
        return Repair(finding.id, "rebuild", "failed", f"dropped {', '.join(done)} (their files are searched again once "
                      f"re-indexed); then: {_said(exc)}", finding.paths)
    dropped = "dropped " + ", ".join(done) if done else "nothing was damaged any more"
    detail = (
        f"{dropped}; re-indexed: {summary.chunks_embedded} chunk(s) embedded, {summary.chunks_reused} reused"
    )
    return Repair(finding.id, "rebuild", "done", detail, finding.paths)


def stranded_temps(folder: int | str) -> list[str]:
    """The names memory.md is left at in the workspace root ``folder`` when nothing loads it: an
    interrupted rename's ``.memory.md.migrate-<hex>.tmp``, and a move's private name
    ``.memory.md.aside-<hex>`` (killed before it unlinked it, or kept because a new memory.md
    was made while the move checked it). Only regular files, each checked as the object opened: a
    symlink so named (to /etc/passwd) holds no bytes of memory.md, and given back a name it was a
    ``MEMORY.md`` link to wherever it pointed."""
    if isinstance(folder, str):
        with Folder.under(folder) as root:
            return stranded_temps(root.fd)
    names = os.listdir(folder)
    renames = [n for n in names if n.startswith(f".{LEGACY_ROOT}.migrate-") and n.endswith(".tmp")]
    return sorted(n for n in renames + asides_of(names, LEGACY_ROOT) if _regular_file(folder, n))


def _regular_file(dir_fd: int, name: str) -> bool:
    try:
        fd, _ = open_regular_nofollow(name, dir_fd=dir_fd)  # a FIFO never blocks it, a link is never followed
    except OSError:
        return False
    os.close(fd)
    return True


def _unlinked_second_name(root: Folder, name: str) -> bool:
    """Unlink ``name``, a hard link of MEMORY.md's file, while it still is one, checked as the
    object removed (:func:`~openclaw_memory.fsutil.move.unlink_other_name`: nothing is lost, the
    bytes stay at MEMORY.md); False, and ``name`` kept, where it no longer is one (a file saved
    over either name meanwhile: it is placed as any stranded name)."""
    try:
        unlink_other_name(root.fd, name, root.fd, CANONICAL_ROOT)
    except SourceKept:
        return False
    root.fsync()
    return True


def recover_without_journal(settings: Settings) -> Repair:
    """The doctor journal cannot be read, or is gone (a new or rebuilt state dir) while a rename's
    temporary file is left: set the journal aside and recover from what the files show.

    A repair leaves the legacy bytes at ``memory.md``, in the archive, merged into
    ``MEMORY.md`` (under a marker the split-root check recognises, so nothing is merged
    twice), or at a migration's temporary name ``.memory.md.migrate-<hex>.tmp``. Only the
    last needs this repair: the file is given back a name the other checks see; or, where it is
    a second name (hard link) of MEMORY.md's file (a migration killed between its link and its
    unlink), that name is removed as the journal's recovery removes it: given back as memory.md,
    it was merged as a split root into an archive that shared MEMORY.md's inode, and the prompt
    refused MEMORY.md as hard-linked ever after.
    """
    from ..fsutil.setaside import set_aside_bytes
    from .journal import FILE_NAME, clear_journal, raw_journal

    ws = str(settings.workspace)
    ident = "interrupted-repair"
    notes = []
    try:
        with Folder.under(ws) as root:  # names in the workspace's descriptor, as every doctor move
            temps = stranded_temps(root.fd)
            for name in temps:
                if same_file(root, name, CANONICAL_ROOT) and _unlinked_second_name(root, name):
                    notes.append(f"{name} (an interrupted repair's temporary name) was a second name of MEMORY.md's "
                                 "file (the rename had finished but for its unlink): removed, MEMORY.md unchanged")
                    continue
                for target in (CANONICAL_ROOT, LEGACY_ROOT):
                    try:
                        place_no_replace(root, name, target, "migrate")
                    except FileExistsError:
                        continue
                    root.fsync()
                    notes.append(f"{name} (an interrupted repair's temporary name) is {target} again")
                    break
                else:
                    notes.append(f"{name} holds the text of memory.md from an interrupted repair while MEMORY.md and memory.md both exist: merge it by hand")
        raw = raw_journal(settings.data_dir)
        moved = set_aside_bytes(settings.data_dir, FILE_NAME, raw) if raw is not None else None
        clear_journal(settings.data_dir)  # kept as a file first: its bytes are never lost
    except OSError as exc:
        return Repair(ident, "resume", "failed", f"{exc.strerror or exc} ({exc.filename or ''}); nothing was moved", ())
    except MemoryToolError as exc:
        return Repair(ident, "resume", "failed", f"{exc.message}; nothing was moved", ())
    detail = "; ".join(([f"set the damaged journal aside at {moved}"] if moved is not None else []) + notes)
    detail += "; the root files are checked again as they are (a merge already done is never repeated)"
    return Repair(ident, "resume", "completed", detail, tuple(temps))


REPAIRS = {
    WATCHDOG_DAMAGED: RepairSpec("set aside", lambda f: "Set the damaged watchdog snapshots aside (kept as files under damaged/)", _rebuild_snapshots),
    STATE_DB_DAMAGED: RepairSpec("rebuild", lambda f: "Set the damaged state database aside and rebuild it from what it still holds",
                                 _rebuild_database),
    STATE_DB_NOT_A_FILE: RepairSpec("set aside", lambda f: "Move what is at the state database's path aside (kept under damaged/)",
                                    _set_aside_database),
    STATE_DB_COMPANION_NOT_A_FILE: RepairSpec(
        "set aside", lambda f: "Move what is not a file beside the state database aside (kept under damaged/)", _set_aside_companions),
    INDEX_DAMAGED: RepairSpec("rebuild", lambda f: "Rebuild the damaged parts of the search index from the memory files", _rebuild_index),
}
