"""The first run on a data dir of an earlier release: its files are imported into the database.

Releases before 0.3 kept the history as files: ``history/logs/*.json`` (a version log per path),
``history/objects/xx/*.z`` (each version's bytes), ``history/reads/*.json`` (read records),
``history/sightings.json``, ``idempotency/*.json`` (write keys) and the index's collection names
in ``index/collections.json``. The first connection that
finds them imports every one in a single transaction, checks the import (row counts, and every
object's hash read back from the database), records it in ``imports`` and commits; only then
are the old folders moved under ``<data dir>/before-state-db/`` (never deleted). A crash before
the commit leaves the old layout, imported again by the next run; a crash after it leaves the
new one, and the next run only moves the old folders aside. A file the import cannot read (a
damaged log) is not imported and stays in the moved folder; the import record counts it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from typing import TYPE_CHECKING, Any

import xxhash

from ..errors import MemoryToolError
from .failures import enc, translated

if TYPE_CHECKING:
    from .connection import Database

# Test-only: SIGKILL the process at a step of the upgrade (``imported``: every row written, not
# committed; ``committed``: committed, the old folders not yet moved aside).
KILL_ENV = "OPENCLAW_MEMORY_TEST_UPGRADE_KILL_AT"
OLD_LAYOUT = ("history", "idempotency", "index/collections.json")
SET_ASIDE = "before-state-db"
_ORIGINS = ("agent-write", "external-edit", "restore", "doctor-fix")


class UpgradeFailed(MemoryToolError):
    """The import did not check out: nothing was committed, and the old files are left as they are."""


def upgrade_old_layout(db: Database, conn: sqlite3.Connection) -> None:
    present = pending(db.data_dir)
    if not present:
        return
    with translated(db.path):
        conn.execute("BEGIN IMMEDIATE")
        try:
            done = {row[0] for row in conn.execute("SELECT source FROM imports")}
            for name in present:
                if name not in done and os.path.exists(os.path.join(db.data_dir, name)):
                    before = _rows(conn)
                    counts = _IMPORTERS[name](conn, os.path.join(db.data_dir, name))
                    after = _rows(conn)
                    for table, added in counts.items():
                        if table in after and after[table] - before[table] != added:
                            raise UpgradeFailed(
                                f"the import of {os.path.join(db.data_dir, name)} into the state database did not check "
                                f"out ({table}: {added} read, {after[table] - before[table]} stored); nothing was changed")
                    conn.execute("INSERT INTO imports VALUES (?, ?, ?)", (name, time.time(), json.dumps(counts)))
            _reach("imported")
        except BaseException:
            conn.rollback()
            raise
        conn.execute("COMMIT")
    _reach("committed")
    for name in present:
        _set_aside(db.data_dir, name)


def _reach(step: str) -> None:
    if os.environ.get(KILL_ENV) == step:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


_TABLES = ("versions", "objects", "object_parts", "reads", "sightings", "idempotency", "collections")


def pending(data_dir: str) -> list[str]:
    """The parts of an earlier release's layout still in ``data_dir`` (imported or not)."""
    return [name for name in OLD_LAYOUT if os.path.exists(os.path.join(data_dir, name))]


def _rows(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _TABLES}  # noqa: S608 - our names


def _set_aside(data_dir: str, name: str) -> None:
    source = os.path.join(data_dir, name)
    target = os.path.join(data_dir, SET_ASIDE, name)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    n = 1
    first = target
    while os.path.lexists(target):
        n += 1
        target = f"{first}.{n}"
    try:
        os.rename(source, target)
    except FileNotFoundError:
        pass  # another process moved it meanwhile


def _json_files(folder: str) -> list[str]:
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _load(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            return json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return None


def _import_history(conn: sqlite3.Connection, root: str) -> dict[str, int]:
    counts = {"versions": 0, "objects": 0, "reads": 0, "sightings": 0, "unreadable": 0}
    for path in _json_files(os.path.join(root, "logs")):
        data = _load(path)
        if not (isinstance(data, dict) and isinstance(data.get("absPath"), str) and isinstance(data.get("entries"), list)
                and all(_valid_entry(e) for e in data["entries"])):
            counts["unreadable"] += 1
            continue
        display: str = data["path"] if isinstance(data.get("path"), str) else data["absPath"]
        for e in data["entries"]:
            counts["versions"] += conn.execute(
                "INSERT INTO versions (path, display, version, time, size, origin, agent) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (enc(data["absPath"]), enc(display), e["version"], float(e.get("time", 0)), int(e.get("size", 0)),
                 e["origin"], enc(e["agent"]) if e.get("agent") is not None else None)).rowcount
    objects = os.path.join(root, "objects")
    for sub in sorted(os.listdir(objects)) if os.path.isdir(objects) else []:
        if len(sub) != 2 or not os.path.isdir(os.path.join(objects, sub)):
            continue
        for name in sorted(os.listdir(os.path.join(objects, sub))):
            if not name.endswith(".z"):
                continue
            version = sub + name[:-2]
            stat = os.stat(os.path.join(objects, sub, name))
            try:
                with open(os.path.join(objects, sub, name), "rb") as fh:
                    packed = fh.read()
                data = zlib.decompress(packed)
            except (OSError, zlib.error):
                counts["unreadable"] += 1
                continue
            if xxhash.xxh3_128_hexdigest(data) != version:
                counts["unreadable"] += 1
                continue
            counts["objects"] += conn.execute("INSERT OR IGNORE INTO objects VALUES (?, ?, ?, ?)",
                                              (version, len(data), len(packed), stat.st_mtime_ns)).rowcount
            conn.execute("INSERT OR IGNORE INTO object_parts VALUES (?, 0, ?)", (version, packed))
    for path in _json_files(os.path.join(root, "reads")):
        data = _load(path)
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict) or not isinstance(data.get("agent"), str):
            counts["unreadable"] += 1
            continue
        session = data.get("session") if isinstance(data.get("session"), str) else ""
        for abs_path, item in files.items():
            if isinstance(item, dict) and isinstance(item.get("version"), str) and item.get("how") in ("read", "write"):
                counts["reads"] += conn.execute(
                    "INSERT OR IGNORE INTO reads VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (enc(data["agent"]), enc(session), enc(abs_path), item["version"], int(item.get("size", 0)),
                     float(item.get("time", 0)), item["how"])).rowcount
    sightings = _load(os.path.join(root, "sightings.json"))
    for abs_path, v in sightings.items() if isinstance(sightings, dict) else ():
        if isinstance(v, list) and len(v) == 5 and all(isinstance(x, int) for x in v[:4]) and isinstance(v[4], str):
            counts["sightings"] += conn.execute("INSERT OR IGNORE INTO sightings VALUES (?, ?, ?, ?, ?, ?)",
                                                (enc(abs_path), *v)).rowcount
    for (version,) in conn.execute("SELECT version FROM objects").fetchall():
        packed = b"".join(row[0] for row in conn.execute(
            "SELECT data FROM object_parts WHERE version = ? ORDER BY seq", (version,)))
        if xxhash.xxh3_128_hexdigest(zlib.decompress(packed)) != version:
            raise UpgradeFailed(f"version {version} does not read back from the database as imported")
    return counts


def _import_keys(conn: sqlite3.Connection, root: str) -> dict[str, int]:
    counts = {"idempotency": 0, "unreadable": 0}
    for path in _json_files(root):
        data = _load(path)
        if not (isinstance(data, dict) and isinstance(data.get("key"), str) and isinstance(data.get("time"), (int, float))
                and isinstance(data.get("result"), dict)):
            counts["unreadable"] += 1
            continue
        binding = data.get("binding")
        counts["idempotency"] += conn.execute(
            "INSERT OR IGNORE INTO idempotency VALUES (?, ?, ?, ?)",
            (enc(data["key"]), float(data["time"]), json.dumps(data["result"], ensure_ascii=True),
             json.dumps(binding, ensure_ascii=True) if isinstance(binding, dict) else None)).rowcount
    return counts


def _valid_entry(item: object) -> bool:
    return (isinstance(item, dict) and isinstance(item.get("version"), str) and item.get("origin") in _ORIGINS
            and isinstance(item.get("time", 0), (int, float)) and isinstance(item.get("size", 0), int)
            and isinstance(item.get("agent"), (str, type(None))))


def legacy_registry(path: str) -> list[dict] | None:
    """The entries of an earlier release's ``collections.json``; None when it cannot be read."""
    data = _load(path)
    entries = data.get("collections") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and all(isinstance(e.get(k), str) for k in ("name", "agent", "kind", "key"))
        and isinstance(e.get("n"), (int, type(None))) for e in entries
    ):
        return None
    return entries


def _import_registry(conn: sqlite3.Connection, path: str) -> dict[str, int]:
    entries = legacy_registry(path)
    if entries is None:
        return {"collections": 0, "unreadable": 1}  # its shards are indexed again under names given anew
    added = sum(conn.execute("INSERT OR IGNORE INTO collections VALUES (?, ?, ?, ?, ?)",
                             (e["name"], enc(e["agent"]), e["kind"], enc(e["key"]), e.get("n"))).rowcount for e in entries)
    return {"collections": added, "unreadable": 0}


_IMPORTERS = {"history": _import_history, "idempotency": _import_keys, "index/collections.json": _import_registry}
