"""What the index holds, per collection: each file's content hash and chunk points.

Rows of the state database (``manifests``, ``manifest_files``). A file is not read again while
the one change rule (``database.observations``) knows it unchanged since the content it was
indexed with was hashed; only a changed hash means new content. The manifest is saved after the
store is written, in the transaction that records the files' observations: a crash before
leaves the old manifest, so the next run redoes that work (point ids are deterministic: no
duplicates). A collection marked *dirty* (``index_dirty``, set in its own transaction before the
first write to the store, cleared with the save) tells the next run to reconcile the store with
the manifest even when no file changed.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..bulk import gc_paused
from ..database import Database, dec, enc, in_batches, is_read_only
from ..database.observations import FileStat, Observations
from ..database.schema import FIRST_RELEASED
from ..fsutil.hashing import hash_bytes, hash_file
from ..fsutil.safeopen import FolderSwapped, NotRegularFile, open_regular_in_roots, read_and_close


@dataclass
class FileEntry:
    stat: FileStat | None  # the observation of the indexed content; None once the file was seen otherwise
    hash: str
    chunks: list[tuple[str, str]] = field(default_factory=list)  # (point id, chunk hash)
    abs_path: str = ""


@dataclass
class Manifest:
    collection: str
    agent: str
    fingerprint: str = ""
    settings_key: str = ""
    model: str = ""
    embed_backend: str = ""
    store_backend: str = ""
    dim: int = 0
    indexed_at: float = 0.0
    files: dict[str, FileEntry] = field(default_factory=dict)

    @property
    def chunk_count(self) -> int:
        return sum(len(f.chunks) for f in self.files.values())


def manifest_serial(data_dir: Path, collection: str) -> int | None:
    """What changes at every save of the collection's manifest (None: none saved): a cache key."""
    row = Database(data_dir).one("SELECT serial FROM manifests WHERE collection = ?", (collection,))
    return row[0] if row else None


def manifest_chunk_count(data_dir: Path, collection: str) -> int | None:
    """The points the saved manifest lists (None: none saved), as its save counted them
    (``manifests.points``): what a shard's check compares, read in one row. Summing every file's
    chunk list for it cost a write at 30,000 notes 11 ms each time, twice per process."""
    db = Database(data_dir)
    row = db.one(f"SELECT {_points(db)} FROM manifests WHERE collection = ?", (collection,))
    if row is None:
        return None
    return int(row[0]) if row[0] is not None else _summed(db.one, collection)


def manifest_points(data_dir: Path, collection: str) -> list[tuple[str, str]] | None:
    """(point id, chunk hash) of every point the saved manifest lists (None: none saved): what a
    shard's probe checks it holds (``store.edge``), read only then."""
    db = Database(data_dir)
    if db.one("SELECT 1 FROM manifests WHERE collection = ?", (collection,)) is None:
        return None
    rows = db.rows("SELECT chunks FROM manifest_files WHERE collection = ?", (collection,))
    with gc_paused():
        every_chunks = json.loads("[" + ",".join(row[0] for row in rows) + "]")  # one parse (see _entries)
        return [(pid, h) for chunks in every_chunks for pid, h in chunks]


def _points(db: Database) -> str:
    """``manifests.points``, or NULL (the count then summed) in a database of 0.1.0's schema, which
    lacks it and is read as it is where nothing may migrate it (plain doctor)."""
    if not is_read_only():
        return "points"  # opened, so migrated
    version = db.one("PRAGMA user_version")
    return "points" if version is not None and version[0] > FIRST_RELEASED else "NULL"


def _summed(one, collection: str) -> int:
    """The points every file's chunk list names (a manifest whose count is not known)."""
    row = one("SELECT COALESCE(SUM(json_array_length(chunks)), 0) FROM manifest_files WHERE collection = ?", (collection,))
    return int(row[0])


def load_manifest(data_dir: Path, collection: str) -> Manifest | None:
    """The saved manifest, every file's entry loaded, or None when the collection was never indexed."""
    with gc_paused():
        return _load_manifest(data_dir, collection)


def _load_manifest(data_dir: Path, collection: str) -> Manifest | None:
    manifest = load_manifest_head(data_dir, collection)
    if manifest is None:
        return None
    manifest.files = _entries(Database(data_dir).rows(_ENTRY_ROWS + " WHERE f.collection = ?", (collection,)))
    return manifest


def load_manifest_head(data_dir: Path, collection: str) -> Manifest | None:
    """The saved manifest without its files (``files`` empty), or None when the collection was
    never indexed: a sync fills in the entries it needs (:func:`load_entries`)."""
    head = Database(data_dir).one("SELECT agent, fingerprint, settings_key, model, embed_backend, store_backend, dim, "
                                  "indexed_at FROM manifests WHERE collection = ?", (collection,))
    if head is None:
        return None
    agent, fingerprint, settings_key, model, embed_backend, store_backend, dim, indexed_at = head
    return Manifest(collection, dec(agent), fingerprint, settings_key, model, embed_backend, store_backend, dim, indexed_at)


_ENTRY_ROWS = ("SELECT f.path, f.abs_path, f.hash, f.chunks, o.mode, o.size, o.mtime_ns, o.ctime_ns, o.inode, o.racy, "
               "o.hash FROM manifest_files f LEFT JOIN observations o ON o.path = f.abs_path")


def _entries(rows: list) -> dict[str, FileEntry]:
    # Every row's chunk list parsed in one call (one per row was a third of the load).
    every_chunks = json.loads("[" + ",".join(row[3] for row in rows) + "]")
    entries = {}
    for (path, abs_path, digest, _chunks, mode, size, mtime, ctime, inode, racy, seen), chunks in zip(rows, every_chunks):
        stat = FileStat(size, mtime, ctime, inode, bool(racy), mode) if seen == digest else None
        entries[dec(path)] = FileEntry(stat, digest, list(map(tuple, chunks)), dec(abs_path))
    return entries


def load_entries(data_dir: Path, collection: str, paths: Iterable[str]) -> dict[str, FileEntry]:
    """The saved entries of ``paths`` (those the manifest lists), each found by its key: what one
    file's sync needs of a manifest of any size."""
    wanted = sorted(set(paths))
    db = Database(data_dir)
    entries: dict[str, FileEntry] = {}
    with gc_paused():
        for part, marks in in_batches(wanted):
            rows = db.rows(_ENTRY_ROWS + f" WHERE f.collection = ? AND f.path IN ({marks})", (collection, *map(enc, part)))
            entries.update(_entries(rows))
    return entries


def lookup_chunks(data_dir: Path, collections: Sequence[str], hashes: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """Chunk hash -> collection -> ids of the saved points holding that text, for ``hashes`` only:
    the database finds the rows naming them (a text search in its own loop), Python parses only those."""
    wanted = sorted(set(hashes))
    found: dict[str, dict[str, list[str]]] = {}
    if not wanted or not collections:
        return found
    names = ",".join("?" * len(collections))
    db = Database(data_dir)
    for start in range(0, len(wanted), 100):  # an OR of 100 terms per query: well inside SQLite's depth limit
        part = wanted[start:start + 100]
        rows = db.rows(f"SELECT collection, chunks FROM manifest_files WHERE collection IN ({names}) AND "
                       f"({' OR '.join(['instr(chunks, ?) > 0'] * len(part))})", (*collections, *part))
        keep = set(part)
        for collection, chunks in rows:
            for pid, h in json.loads(chunks):
                if h in keep:
                    found.setdefault(h, {}).setdefault(collection, []).append(pid)
    return found


def chunk_map(data_dir: Path, collections: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """Chunk hash -> collection -> point ids, over every saved point of ``collections`` (for a
    sync that looks up many texts; built with the cyclic collector paused)."""
    by_hash: dict[str, dict[str, list[str]]] = {}
    if not collections:
        return by_hash
    rows = Database(data_dir).rows(
        f"SELECT collection, chunks FROM manifest_files WHERE collection IN ({','.join('?' * len(collections))})",
        tuple(collections))
    with gc_paused():
        every_chunks = json.loads("[" + ",".join(row[1] for row in rows) + "]")
        for (collection, _chunks), chunks in zip(rows, every_chunks):
            for pid, h in chunks:
                by_hash.setdefault(h, {}).setdefault(collection, []).append(pid)
    return by_hash


def save_manifest(data_dir: Path, manifest: Manifest, before: Manifest | None = None) -> None:
    """Save ``manifest`` (only what differs from ``before``, the manifest it was made from), with
    the observations of its files; joins the caller's transaction."""
    with Database(data_dir).transaction() as conn:
        write_manifest(conn, manifest, before)


def write_manifest(conn: sqlite3.Connection, manifest: Manifest, before: Manifest | None) -> None:
    """Save ``manifest`` in the caller's transaction: only the rows that differ from ``before``
    (the entries it was made from; None: every row anew), and the count of its points kept in
    its row from the rows replaced and their replacements, never summed over every file."""
    name = manifest.collection
    manifest.indexed_at = time.time()
    old = before.files if before is not None else None
    points: int | None = 0
    if old is None:
        conn.execute("DELETE FROM manifest_files WHERE collection = ?", (name,))
        old = {}
    else:
        prior = conn.execute("SELECT points FROM manifests WHERE collection = ?", (name,)).fetchone()
        points = prior[0] if prior is not None else None
    gone = [p for p in old if p not in manifest.files]
    changed = [(p, e) for p, e in manifest.files.items() if old.get(p) != e]
    if points is not None:  # less what the rows about to be replaced or deleted named, plus their replacements
        points -= _chunks_of(conn, name, gone + [p for p, _e in changed]) if before is not None else 0
        points += sum(len(e.chunks) for _p, e in changed)
    conn.execute("INSERT OR REPLACE INTO manifests (collection, agent, fingerprint, settings_key, model, embed_backend, "
                 "store_backend, dim, indexed_at, serial, points) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                 (name, enc(manifest.agent), manifest.fingerprint, manifest.settings_key, manifest.model,
                  manifest.embed_backend, manifest.store_backend, manifest.dim, manifest.indexed_at, time.time_ns(),
                  points))
    conn.executemany("DELETE FROM manifest_files WHERE collection = ? AND path = ?", [(name, enc(p)) for p in gone])
    # A file that left the index because it is gone leaves no observation behind either.
    Observations.forget(conn, [old[p].abs_path for p in gone if old[p].abs_path and not os.path.lexists(old[p].abs_path)])
    # Rows made as SQLite takes them: a first index's 10,000 files held no second copy as JSON.
    conn.executemany("INSERT OR REPLACE INTO manifest_files VALUES (?, ?, ?, ?, ?)",
                     ((name, enc(p), enc(e.abs_path), e.hash, json.dumps(e.chunks, separators=(",", ":")))
                      for p, e in changed))
    if points is None:  # not known before (a manifest saved without its count): summed once, kept from now on
        conn.execute("UPDATE manifests SET points = ? WHERE collection = ?", (_summed(_one(conn), name), name))
    Observations.record(conn, [(e.abs_path, e.stat, e.hash) for _p, e in changed if e.stat is not None and e.abs_path])


def _one(conn: sqlite3.Connection):
    return lambda sql, params: conn.execute(sql, params).fetchone()


def _chunks_of(conn: sqlite3.Connection, collection: str, paths: list[str]) -> int:
    """The points the saved rows of ``paths`` name (each row found by its key)."""
    total = 0
    for part, marks in in_batches(paths):
        total += conn.execute(f"SELECT COALESCE(SUM(json_array_length(chunks)), 0) FROM manifest_files WHERE collection = ? "
                              f"AND path IN ({marks})", (collection, *map(enc, part))).fetchone()[0]
    return total


def delete_manifest(data_dir: Path, collection: str) -> None:
    """Forget what the index held for the collection: its manifest, statistics and dirty mark."""
    with Database(data_dir).transaction() as conn:
        for table in ("manifests", "manifest_files", "term_stats", "term_df", "index_dirty"):
            conn.execute(f"DELETE FROM {table} WHERE collection = ?", (collection,))  # noqa: S608 - our names


def mark_dirty(data_dir: Path, collection: str) -> None:
    with Database(data_dir).transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO index_dirty VALUES (?, ?)", (collection, os.getpid()))


def clear_dirty(conn: sqlite3.Connection, collection: str) -> None:
    conn.execute("DELETE FROM index_dirty WHERE collection = ?", (collection,))


def is_dirty(data_dir: Path, collection: str) -> bool:
    return Database(data_dir).one("SELECT 1 FROM index_dirty WHERE collection = ?", (collection,)) is not None


@dataclass(frozen=True)
class Diff:
    suspects: list  # MemoryFile new or with another stat: read and hash to know
    removed: list[str]  # manifest paths no longer scanned


def diff_files(manifest: Manifest | None, files: list) -> Diff:
    """Split scanned files by stat against the manifest; nothing is read here."""
    known = manifest.files if manifest else {}
    suspects = []
    for f in files:
        entry = known.get(f.path)
        if entry is None or entry.stat is None or not entry.stat.matches(f):
            suspects.append(f)
    scanned = {f.path for f in files}
    return Diff(suspects, sorted(p for p in known if p not in scanned))


def diff_known(data_dir: Path, collection: str, files: list) -> Diff:
    """:func:`diff_files` against the change keys the collection's indexed content was hashed
    with, without any file's chunk list: a file is unchanged where a sighting that is not racy
    and saw the indexed hash (``database.observations``) has its change key as scanned.

    The held rows and the scan's keys are compared as sets (in C): a call and a comparison per
    file in Python was most of the cost of a no-op sync at 30,000 notes."""
    with gc_paused():  # a key and a row a note, none in a cycle
        # Every file the manifest lists, with its change key where a sighting vouches for its
        # indexed content (else a NULL size, which no scanned file has).
        rows = Database(data_dir).rows(
            "SELECT f.path, CASE WHEN o.racy = 0 AND o.hash = f.hash THEN o.size END, o.mtime_ns, o.ctime_ns, o.inode, "
            "o.mode FROM manifest_files f LEFT JOIN observations o ON o.path = f.abs_path WHERE f.collection = ?", (collection,))
        # Each file's row when it holds: its path as stored and its change key (the fields of
        # database.observations.change_key, in its order), built inline.
        expected = {(f.path.encode("utf-8", "surrogateescape"), f.size, f.mtime_ns, f.ctime_ns, f.inode, f.mode): f
                    for f in files}
        left = expected.keys() - rows
        suspects = [f for key, f in expected.items() if key in left] if left else []
        removed: list[str] = []
        if len(expected) - len(left) != len(rows):  # some listed file was not matched: is it gone?
            scanned = {key[0] for key in expected}
            removed = sorted(dec(row[0]) for row in rows if row[0] not in scanned)
    return Diff(suspects, removed)


@dataclass(frozen=True)
class FileContent:
    """The bytes of a file as read once, with the stat and hash of exactly those bytes."""

    data: bytes
    stat: FileStat
    hash: str

    @property
    def size(self) -> int:
        return self.stat.size


def read_version(abs_path: str, roots: Sequence[str], racy_guard_ns: int) -> FileContent | None:
    """Read a file (no symlinks, FIFOs or devices) from the descriptor of its allowed root
    (``roots``: the workspace and the extra paths), one folder at a time, so a folder swapped for
    a symlink is never read through; None when it vanished or is no longer a regular file.
    ``racy_guard_ns``: the timestamp granularity of the file systems (``fsutil.fsclock``)."""
    started_ns = time.time_ns()
    try:
        fd, st = open_regular_in_roots(roots, abs_path)
    except (FileNotFoundError, NotADirectoryError, NotRegularFile, FolderSwapped, PermissionError):
        return None
    data = read_and_close(fd)
    return FileContent(data, FileStat.of(st, started_ns, racy_guard_ns), hash_bytes(data))


def stale_known(data_dir: Path, manifest: Manifest | None, files: list) -> list[str]:
    """Paths whose content differs from the saved ``manifest`` (its head; None: nothing indexed, so
    every file), reading its change keys and the entries of the stat suspects only (never every
    file's chunk list), and hashing only those suspects."""
    if manifest is None:
        return sorted(f.path for f in files)
    collection = manifest.collection
    diff = diff_known(data_dir, collection, files)
    entries = load_entries(data_dir, collection, [f.path for f in diff.suspects])
    stale = list(diff.removed)
    for f in diff.suspects:
        entry = entries.get(f.path)
        try:
            if entry is None or hash_file(f.abs_path) != entry.hash:
                stale.append(f.path)
        except (FileNotFoundError, NotRegularFile, PermissionError):
            stale.append(f.path)
    return sorted(stale)
