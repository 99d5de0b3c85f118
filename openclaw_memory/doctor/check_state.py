"""Checks of what openclaw-memory keeps in the state dir: damaged (truncated, zeroed, garbled) files.

Each finding names the damaged files and says what ``doctor --fix`` does with them
(:mod:`.repair_state`). Only reads: an index shard is probed in a child process
under a shared lock, and nothing is recorded (plain ``doctor`` writes nothing).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import MemoryToolError, StateDamaged, UnreleasedLayout
from .model import CheckContext, Finding

if TYPE_CHECKING:
    from ..settings import Settings

WATCHDOG_DAMAGED = "watchdog-damaged"
STATE_DB_DAMAGED = "state-db-damaged"
STATE_DB_NOT_A_FILE = "state-db-not-a-file"
STATE_DB_CLOSED = "state-db-closed"
STATE_DB_COMPANION_NOT_A_FILE = "state-db-companion-not-a-file"
STATE_DB_NEWER = "state-db-newer"
STATE_DB_UNRELEASED = "state-db-unreleased"
INDEX_DAMAGED = "index-damaged"
INDEX_UNCHECKED = "index-unchecked"


def _listing(found: list[tuple[str, str]]) -> str:
    return "\n".join(f"- {path}: {reason}" for path, reason in found)


def check_watchdog_files(ctx: CheckContext) -> list[Finding]:
    from ..watchdog.store import SnapshotStore

    store = SnapshotStore(ctx.settings.data_dir)
    try:
        found = store.damaged()
    except StateDamaged:
        return []  # the state database's own finding says it
    if not found:
        return []
    return [Finding(
        WATCHDOG_DAMAGED,
        "warning",
        f"{len(found)} watchdog snapshot(s) are damaged:\n{_listing(found)}\n"
        "`openclaw-memory doctor --fix` sets the damaged snapshots aside (written under the state dir's damaged/ "
        "folder, then removed from the state database); the newest sound snapshot becomes the baseline.",
        True,
        (str(store.path),),
    )]


def check_database(ctx: CheckContext) -> list[Finding]:
    from ..database import Database
    from ..database.checked import LastCheck
    from ..database.companions import closed_to_us, not_a_file, odd_companions
    from ..database.connection import emptied, emptied_words
    from ..database.rebuilding import rebuilding_words
    from ..database.repair import damage, newer_schema

    db = Database(ctx.settings.data_dir)
    rebuild = rebuilding_words(db.data_dir)
    if rebuild is not None:
        return [Finding(
            STATE_DB_DAMAGED,
            "error",
            f"The state database is being rebuilt, or its rebuild was interrupted: {rebuild}.\n"
            "No command opens the state database until the rebuild is finished: its damaged file (or, once complete, "
            "the new one) is kept as it is until then. `openclaw-memory doctor --fix` finishes an interrupted rebuild "
            "(it waits for one in progress): the damaged files go under the state dir's damaged/ folder, never "
            "deleted, the new database is put in their place, and the rebuild's scratch folder is removed.",
            True,
            (db.path,),
        )]
    closed = closed_to_us(db.path)
    if closed:
        mine = all(uid == os.geteuid() for _, _, uid in closed)
        listing = _listing([(path, f"mode {mode:03o}, owner uid {uid}") for path, mode, uid in closed])
        return [Finding(
            STATE_DB_CLOSED,
            "error",
            f"The state database cannot be read or written by this user (uid {os.geteuid()}):\n{listing}\n"
            + ("Every command that opens it gives it back its mode 0600, `openclaw-memory doctor --fix` among them "
               "(nothing else is needed)."
               if mine else "It belongs to another user: give it back (`chown`) to this user; nothing here changes "
               "another user's file."),
            mine,
            tuple(path for path, _, _ in closed),
        )]
    what = not_a_file(db.path)  # never opened: a FIFO would block the open forever
    if what is not None and os.path.isfile(db.path):
        return [Finding(
            STATE_DB_NOT_A_FILE,
            "error",
            f"The state database's path holds {what}, not the database itself: {db.path}.\n"
            "SQLite would keep the database's write-ahead log beside that file, outside the state dir, where nothing "
            "checks it; no command opens it. `openclaw-memory doctor --fix` moves the link under the state dir's "
            "damaged/ folder (the file it names is left as it is) and builds a new state database from every row "
            "that file holds.",
            True,
            (db.path,),
        )]
    if what is not None:
        return [Finding(
            STATE_DB_NOT_A_FILE,
            "error",
            f"The state database's path holds {what}, not a database: {db.path}.\n"
            "No command can keep a version history, read records or write keys while it is there. "
            "`openclaw-memory doctor --fix` moves it (with any -wal and -shm beside it) under the state dir's "
            "damaged/ folder, never deleting it; the next command starts a new state database.",
            True,
            (db.path,),
        )]
    odd = odd_companions(db.path)
    if odd:
        return [Finding(
            STATE_DB_COMPANION_NOT_A_FILE,
            "error",
            "Beside the state database, where SQLite keeps its write-ahead log (-wal) and that log's index (-shm), "
            f"is something that is not a file:\n{_listing([(path, what) for path, what in odd])}\n"
            "No command can open the state database while it is there. `openclaw-memory doctor --fix` moves it under "
            "the state dir's damaged/ folder, never deleting it; the database itself is kept as it is.",
            True,
            tuple(path for path, _ in odd),
        )]
    if emptied(db.path):
        return [Finding(
            STATE_DB_DAMAGED,
            "error",
            f"The state database was emptied: {db.path} is {emptied_words(db.path)}, in a data dir that was in use (it holds other "
            "state of openclaw-memory). The version history, what each agent read, the write keys, the index's "
            "manifests and the watchdog's snapshots it held are gone; no command takes it for a new database. "
            "`openclaw-memory doctor --fix` sets the empty file aside (under the state dir's damaged/ folder, never "
            "deleted) and starts a new one: the history starts again at the next write, an agent reads a file again "
            "before writing it, and the next `index` reads every file again.",
            True,
            (db.path,),
        )]
    last = LastCheck(db.data_dir)
    reason = damage(db, last)
    if reason is None:
        ctx.cache_writes.append(last.keep)  # what was found sound, kept only where doctor found no error
        newer = newer_schema(db)
        if newer is None:
            return _unreleased(db)
        return [Finding(
            STATE_DB_NEWER,
            "error",
            f"The state database was written by a newer openclaw-memory: {db.path}: {newer}.\n"
            "This release reads and writes nothing in it (a newer release may have changed what its tables mean): "
            "upgrade openclaw-memory. Nothing here is repaired by `doctor --fix`.",
            False,
            (db.path,),
        )]
    service = live_service(ctx.settings)
    first = (f"The memory service (pid {service}) has it open and may still hold what is missing: stop it first "
             "(`openclaw-memory serve --stop`), which copies that in, then run `openclaw-memory doctor` again. "
             if service else "")
    return [Finding(
        STATE_DB_DAMAGED,
        "error",
        f"The state database is damaged: {db.path}: {reason}.\n{first}"
        "It holds the version history, what each agent read, the write keys, the index's manifests and "
        "statistics, the watchdog's snapshots, the pending checkpoint and the doctor's journal. "
        "`openclaw-memory doctor --fix` sets it aside with its -wal and -shm (under the state dir's damaged/ folder, "
        "never deleted), builds a new one from every row the damaged files still yield (its header restored, "
        "SQLite's own recovery where the file does not read whole), and says what could not be read; "
        "an agent then reads a file again before writing it.",
        True,
        (db.path,),
    )]


def live_service(settings: Settings) -> str | None:
    """The pid of the memory service that has this state dir's database open right now, or None.
    Its connections may still hold what is no longer at the paths (a WAL deleted under it): only
    it can copy that in, when it stops."""
    from ..fsutil.lock import lock_holder
    from ..service_files import lock_path

    return lock_holder(lock_path(settings))


def _unreleased(db) -> list[Finding]:
    """A development build's database or files, which no release reads (the one line commands say)."""
    from ..database.connection import peek
    from ..database.schema import refuse_unreleased

    try:
        refuse_unreleased(db.data_dir, peek(db.path, "PRAGMA user_version")[0][0] if db.exists() else 0)
    except UnreleasedLayout as exc:
        return [Finding(STATE_DB_UNRELEASED, "error", f"{exc.message[:1].upper()}{exc.message[1:]}.", False, (db.path,))]
    return []


def damaged_index(settings: Settings, unchecked: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """(shard, reason) for each shard of the agent that is damaged or does not hold what its manifest says.

    ``unchecked``: where given, a shard that cannot be checked now (out of memory, no room for its
    copy where the state dir is mounted read-only) goes there with why, and the others are still
    checked; else its error ends the whole check.
    """
    from ..fsutil.setaside import not_a_folder
    from ..index.collections import resolve_collections
    from ..index.manifest import is_dirty, manifest_chunk_count
    from ..index.store.factory import open_store

    try:
        collections = resolve_collections(settings)
    except StateDamaged:
        return []  # the state database's own finding says it (the names live there)
    found: list[tuple[str, str]] = []
    store = open_store(settings)
    try:
        for c in collections:
            shard = settings.data_dir / "index" / "edge" / c.name
            if not_a_folder(shard):
                # (the engine's open failed on it at every sync: "Not a directory")
                found.append((c.name, f"what is at {shard} is not a shard's folder"))
                continue
            if not store.exists(c.name) and not os.path.isdir(shard):
                continue
            expected = None if is_dirty(settings.data_dir, c.name) else manifest_chunk_count(settings.data_dir, c.name)
            try:
                reason = store.check(c.name, expected, record=False)
            except MemoryToolError as exc:
                if unchecked is None:
                    raise
                unchecked.append((c.name, exc.message))
                continue
            if reason is not None:
                found.append((c.name, reason))
    finally:
        store.close()
    return found


def check_index_files(ctx: CheckContext) -> list[Finding]:
    unchecked: list[tuple[str, str]] = []  # a shard that cannot be checked now: the others' findings still stand
    try:
        found = damaged_index(ctx.settings, unchecked)
    except MemoryToolError:
        return []  # a busy or unreachable index is reported by the index checks
    findings = []
    if found:
        findings.append(Finding(
            INDEX_DAMAGED,
            "warning",
            f"The search index is damaged:\n{_listing(found)}\n"
            "`openclaw-memory doctor --fix` rebuilds the damaged parts from the memory files (the memory files are not touched).",
            True,
            tuple(p for p, _ in found),
        ))
    if unchecked:
        findings.append(Finding(
            INDEX_UNCHECKED,
            "warning",
            f"Part of the search index could not be checked:\n{_listing(unchecked)}\n"
            "It is neither known sound nor damaged: do what each line says, then run `openclaw-memory doctor` again.",
            False,
            tuple(p for p, _ in unchecked),
        ))
    return findings


CHECKS = [check_watchdog_files, check_database, check_index_files]
