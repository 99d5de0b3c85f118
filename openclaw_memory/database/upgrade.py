"""The first run on a data dir of an earlier release: its files are imported into the database.

Releases before 0.3 kept the history as files: ``history/logs/*.json`` (a version log per path),
``history/objects/xx/*.z`` (each version's bytes), ``history/reads/*.json`` (read records),
``history/sightings.json``, ``idempotency/*.json`` (write keys), the index's collection names
in ``index/collections.json``, its manifests, keyword statistics and dirty marks in
``index/manifests/``, its probe records in ``index/probes/``, an ``index migrate`` under way in
``index/migrate-progress.json``, the watchdog's ``snapshots/``, the pending ``checkpoint.md`` and
the doctor's ``doctor-journal.json``. The first connection that
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
from ..fsutil.private import make_dirs
from .failures import enc, translated

if TYPE_CHECKING:
    from .connection import Database

# Test-only: SIGKILL the process at a step of the upgrade (``imported``: every row written, not
# committed; ``committed``: committed, the old folders not yet moved aside).
KILL_ENV = "OPENCLAW_MEMORY_TEST_UPGRADE_KILL_AT"
OLD_LAYOUT = ("history", "idempotency", "index/collections.json", "index/manifests", "snapshots", "checkpoint.md",
              "doctor-journal.json", "index/probes", "index/migrate-progress.json")
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


_TABLES = ("versions", "objects", "object_parts", "reads", "observations", "idempotency", "collections", "manifests",
           "manifest_files", "term_stats", "index_dirty", "snapshots", "checkpoint", "journal", "probes",
           "migration")


def pending(data_dir: str) -> list[str]:
    """The parts of an earlier release's layout still in ``data_dir`` (imported or not)."""
    return [name for name in OLD_LAYOUT if os.path.exists(os.path.join(data_dir, name))]


def _rows(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in _TABLES}  # noqa: S608 - our names


def _set_aside(data_dir: str, name: str) -> None:
    source = os.path.join(data_dir, name)
    target = os.path.join(data_dir, SET_ASIDE, name)
    make_dirs(os.path.dirname(target))
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
    counts = {"versions": 0, "objects": 0, "reads": 0, "observations": 0, "unreadable": 0}
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
            # No mode was kept: each file is hashed once more, then known by the whole rule.
            counts["observations"] += conn.execute("INSERT OR IGNORE INTO observations VALUES (?, 0, ?, ?, ?, ?, 0, ?)",
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


def _import_manifests(conn: sqlite3.Connection, root: str) -> dict[str, int]:
    """``index/manifests/<collection>.json`` with its ``.terms.json`` and ``.dirty``. A file's entry
    keeps its hash and chunk points; its stat named no absolute path, so the next `index` hashes
    each file once (re-embedding nothing) and records its observation then."""
    counts = {"manifests": 0, "manifest_files": 0, "term_stats": 0, "index_dirty": 0, "unreadable": 0}
    serial = time.time_ns()
    for path in _json_files(root):
        name = os.path.basename(path)[: -len(".json")]
        if name.endswith(".terms"):
            continue
        if conn.execute("SELECT 1 FROM manifests WHERE collection = ?", (name,)).fetchone():
            counts["newer"] = counts.get("newer", 0) + 1  # the database's own manifest is the newer one
            continue
        data = _load(path)
        try:
            files = data["files"]
            head = (name, enc(str(data["agent"])), str(data["fingerprint"]), str(data["settingsKey"]), str(data["model"]),
                    str(data["embedBackend"]), str(data["storeBackend"]), int(data["dim"]), float(data["indexedAt"]), serial)
            rows = [(name, enc(p), b"", str(e["hash"]), json.dumps([[str(i), str(h)] for i, h in e["chunks"]]))
                    for p, e in files.items()]
        except (TypeError, KeyError, ValueError, AttributeError):
            counts["unreadable"] += 1  # its collection is reconciled with its shard by the next `index`
            counts["index_dirty"] += conn.execute("INSERT OR IGNORE INTO index_dirty VALUES (?, 0)", (name,)).rowcount
            continue
        counts["manifests"] += conn.execute("INSERT INTO manifests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", head).rowcount
        conn.execute("DELETE FROM manifest_files WHERE collection = ?", (name,))
        counts["manifest_files"] += conn.executemany("INSERT INTO manifest_files VALUES (?, ?, ?, ?, ?)", rows).rowcount
        stats = _load(os.path.join(root, f"{name}.terms.json"))
        if isinstance(stats, dict) and all(k in stats for k in ("chunks", "length", "df")):
            counts["term_stats"] += conn.execute("INSERT OR IGNORE INTO term_stats VALUES (?, ?, ?)",
                                                 (name, serial, json.dumps(stats, ensure_ascii=False))).rowcount
        if os.path.exists(os.path.join(root, f"{name}.dirty")):
            counts["index_dirty"] += conn.execute("INSERT OR IGNORE INTO index_dirty VALUES (?, 0)", (name,)).rowcount
    return counts


def _import_journal(conn: sqlite3.Connection, path: str) -> dict[str, int]:
    """An interrupted repair's journal, byte for byte (a damaged one too: doctor reads it from the
    database as it read the file, and sets it aside the same way)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    try:
        record: str | bytes = raw.decode("utf-8")
    except UnicodeDecodeError:
        record = raw
    return {"journal": conn.execute("INSERT OR IGNORE INTO journal VALUES (1, ?)", (record,)).rowcount}


def _import_probes(conn: sqlite3.Connection, root: str) -> dict[str, int]:
    """``index/probes/<collection>.key`` ("<stat key> <points>"): a cache, so an unreadable one only
    costs a probe of its shard."""
    counts = {"probes": 0, "unreadable": 0}
    names = sorted(n for n in os.listdir(root) if n.endswith(".key")) if os.path.isdir(root) else []
    for name in names:
        try:
            with open(os.path.join(root, name), encoding="ascii") as fh:
                key, count = fh.read().split()
            row = (name[: -len(".key")], key, int(count))
        except (OSError, ValueError):
            counts["unreadable"] += 1
            continue
        counts["probes"] += conn.execute("INSERT OR IGNORE INTO probes VALUES (?, ?, ?)", row).rowcount
    return counts


def _import_migration(conn: sqlite3.Connection, path: str) -> dict[str, int]:
    """An interrupted `index migrate`'s record: the collections it had verified."""
    data = _load(path)
    done = data.get("done") if isinstance(data, dict) and isinstance(data.get("key"), str) else None
    if not isinstance(done, dict) or not all(isinstance(v, int) for v in done.values()):
        return {"migration": 0, "unreadable": 1}  # the next run starts over: upserts by id make that safe
    rows = [(data["key"], str(name), points) for name, points in done.items()]
    return {"migration": conn.executemany("INSERT OR IGNORE INTO migration VALUES (?, ?, ?)", rows).rowcount, "unreadable": 0}


_IMPORTERS = {"history": _import_history, "idempotency": _import_keys, "index/collections.json": _import_registry,
              "index/manifests": _import_manifests, "doctor-journal.json": _import_journal, "index/probes": _import_probes,
              "index/migrate-progress.json": _import_migration}


def _snapshot_header(body: bytes) -> dict | None:
    """The header of a snapshot file (watchdog.store's format, which imports this package) whose
    body still matches its checksum, or None."""
    head, newline, rest = body.partition(b"\n")
    try:
        header = json.loads(head)
        sound = (newline and header["format"] == "openclaw-memory-snapshot" and header["version"] == 1
                 and xxhash.xxh3_128_hexdigest(rest) == header["checksum"] and isinstance(header["label"], str)
                 and isinstance(header["taken_at"], str) and isinstance(header["count"], int))
    except (ValueError, KeyError, TypeError):
        return None
    return header if sound else None


def _import_snapshots(conn: sqlite3.Connection, root: str) -> dict[str, int]:
    """The watchdog's ``snapshots/``: each snapshot ``index.json`` lists, in its order (the last is
    the baseline), stored as it was (the file is the row's body). One that does not load stays in
    the moved folder, counted; with the list itself unreadable, every snapshot file that loads, by
    time (what that release's ``doctor --fix`` rebuilt the list from)."""
    counts = {"snapshots": 0, "unreadable": 0}
    listing = _load(os.path.join(root, "index.json"))
    entries = listing.get("snapshots") if isinstance(listing, dict) else None
    if isinstance(entries, list):
        labels = [e["label"] for e in entries if isinstance(e, dict) and isinstance(e.get("label"), str)]
    else:
        counts["unreadable"] += 1
        try:
            labels = [n[: -len(".snap")] for n in os.listdir(root) if n.endswith(".snap") and not n.startswith(".")]
        except OSError:
            labels = []
    loaded = []
    for label in dict.fromkeys(labels):
        try:
            with open(os.path.join(root, label + ".snap"), "rb") as fh:
                body = fh.read()
        except OSError:
            body = b""
        header = _snapshot_header(body)
        if header is None or header["label"] != label:
            counts["unreadable"] += 1
            continue
        loaded.append((header, body))
    if not isinstance(entries, list):
        loaded.sort(key=lambda t: (t[0]["taken_at"], t[0]["label"]))
    for header, body in loaded:
        counts["snapshots"] += conn.execute(
            "INSERT OR IGNORE INTO snapshots VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM snapshots), ?, ?, ?)",
            (header["label"], header["taken_at"], header["count"], body)).rowcount
    return counts


CHECKPOINT_HEADING = "# ⚠️ Workspace Changes Detected"  # watchdog.checkpoint.HEADING (it imports this package)


def _import_checkpoint(conn: sqlite3.Connection, path: str) -> dict[str, int]:
    """The pending ``checkpoint.md``: one unconsumed section holding all it said after the heading,
    so ``prompt`` shows the same text. Damaged (not UTF-8, NUL bytes, no heading), its readable
    lines are kept with a note; the file itself stays in the moved folder. ``consumed/`` (what
    ``prompt`` showed before) is a user-readable archive and stays where it is."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        when = os.stat(path).st_mtime
    except OSError:
        return {"checkpoint": 0, "unreadable": 1}
    text = raw.decode("utf-8", "replace")
    if "\ufffd" not in text and "\0" not in text and text.startswith(CHECKPOINT_HEADING):
        section, unreadable = text.partition("\n")[2].strip("\n"), 0
    else:
        readable = [line for line in text.replace("\0", "").splitlines()
                    if line.strip() and line.strip() != CHECKPOINT_HEADING and "\ufffd" not in line]
        section = (f"- the pending checkpoint of the earlier release was damaged; it is kept at "
                   f"{os.path.join(os.path.dirname(path), SET_ASIDE, os.path.basename(path))}")
        section += "; its readable lines follow\n\n" + "\n".join(readable) if readable else ""
        unreadable = 1
    if not section:
        return {"checkpoint": 0, "unreadable": unreadable}
    added = conn.execute("INSERT INTO checkpoint (time, section) VALUES (?, ?)", (when, section)).rowcount
    return {"checkpoint": added, "unreadable": unreadable}


_IMPORTERS["snapshots"] = _import_snapshots
_IMPORTERS["checkpoint.md"] = _import_checkpoint
