"""What ``doctor`` does with the state database: SQLite's integrity check, and for a damaged file
a new database with everything the damaged one still yields.

The damaged file (with its ``-wal`` and ``-shm``) is set aside under ``<data dir>/damaged/``,
never deleted. Every row that still reads is copied, table by table and row by row in primary
key order (a bad page loses the rows on it, not the table); what could not be read is counted
and said. What can be rebuilt from the files is rebuilt by using the product: a version log
starts again at the next sighting, an agent reads a file again before writing it, `state`
hashes the files again.
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path

import xxhash

from ..fsutil.setaside import set_aside
from .connection import Database, forget_connections, peek
from .schema import MIGRATIONS

# Copied in this order; the key is what a damaged page is skipped by.
# The index's tables (manifests, statistics, observations) are not copied: a partly readable
# manifest would hide points from the reconcile. They are rebuilt from the files and the shards
# (the next `index` reads every file again and takes its vectors from the shard, embedding nothing).
_TABLES = {
    "objects": "version", "object_parts": "version, seq", "versions": "id", "reads": "agent, session, path",
    "idempotency": "key", "imports": "source", "collections": "name", "snapshots": "seq", "checkpoint": "id",
    "journal": "id",
}


@dataclass(frozen=True)
class Salvage:
    set_aside: Path | None  # where the damaged file went
    recovered: dict[str, int]  # rows copied per table
    lost: dict[str, str]  # per table, what could not be read


def damage(db: Database) -> str | None:
    """Why the database cannot be trusted, or None (also when there is none yet).

    Only reads: the connection is read-only (SQLite still keeps its readers' marks in the
    ``-shm`` index beside the file, as any reader does)."""
    if not db.exists():
        return None
    try:
        rows = peek(db.path, "PRAGMA quick_check")
    except sqlite3.Error as exc:
        return str(exc)
    problems = [str(r[0]) for r in rows if r[0] != "ok"]
    return "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "") if problems else None


def rebuild(db: Database) -> Salvage:
    """Set the damaged database aside and make a new one from what it still holds."""
    forget_connections()
    moved = set_aside(Path(db.data_dir), db.path)
    for suffix in ("-wal", "-shm"):
        if moved is not None and os.path.exists(db.path + suffix):
            os.rename(db.path + suffix, str(moved) + suffix)
    recovered: dict[str, int] = {}
    lost: dict[str, str] = {}
    if moved is None:
        return Salvage(None, recovered, lost)
    with db.transaction() as target:
        source = sqlite3.connect(f"file:{moved}?mode=ro", uri=True)
        try:
            source.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            source.close()
            return Salvage(moved, recovered, {"the whole file": f"it does not open as a database ({exc})"})
        try:
            for table, key in _TABLES.items():
                recovered[table], why = _copy(source, target, table, key)
                if why:
                    lost[table] = why
        finally:
            source.close()
        broken = _unsound_objects(target)
        if broken:
            recovered["objects"] -= len(broken)
            lost["objects"] = f"{len(broken)} stored version(s) whose bytes no longer read back"
    return Salvage(moved, recovered, lost)


def _unsound_objects(conn: sqlite3.Connection) -> list[str]:
    """Objects whose parts do not inflate to their hash (a part lost with a bad page): removed."""
    broken = []
    for (version,) in conn.execute("SELECT version FROM objects").fetchall():
        parts = [row[0] for row in conn.execute("SELECT data FROM object_parts WHERE version = ? ORDER BY seq", (version,))]
        try:
            sound = xxhash.xxh3_128_hexdigest(zlib.decompress(b"".join(parts))) == version
        except zlib.error:
            sound = False
        if not sound:
            broken.append(version)
            conn.execute("DELETE FROM objects WHERE version = ?", (version,))
            conn.execute("DELETE FROM object_parts WHERE version = ?", (version,))
    return broken


def _copy(source: sqlite3.Connection, target: sqlite3.Connection, table: str, key: str) -> tuple[int, str]:
    columns = _columns(table)
    marks = ", ".join("?" for _ in columns)
    copied = 0
    try:
        cursor = source.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {key}")  # noqa: S608 - our names
        for row in cursor:
            target.execute(f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({marks})", row)  # noqa: S608
            copied += 1
    except sqlite3.Error as exc:
        return copied, f"rows after the {copied}th could not be read ({exc})"
    return copied, ""


def _columns(table: str) -> list[str]:
    """The table's columns as this release creates them (a damaged file's own schema may be unreadable)."""
    conn = sqlite3.connect(":memory:")
    try:
        for migration in MIGRATIONS:
            for statement in migration.split(";"):
                if statement.strip():
                    conn.execute(statement)
        return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()
