"""The content-addressed object store: each version's bytes, zlib-compressed, stored once.

An object is a row of the state database's ``objects`` table, named by the xxh3_128 of its
uncompressed bytes (so identical contents, a revert or the same text in two files, share one),
with its compressed bytes in parts of at most 1 MiB in ``object_parts`` (a huge file is never
held whole). ``used`` is its last use: reading it (restore, diff) or seeing its version again
touches it, and eviction removes the least recently used objects first until the compressed
total fits ``max_bytes``. An object is stored in one transaction: whole, or not at all.

An object a watchdog snapshot names (a row of ``snapshot_files``) is pinned: the snapshots'
retention owns it (``watchdog.store``), so neither history's eviction nor its removals touch it,
and it does not count against ``max_bytes``. So is a removed file's (a ``remove`` entry of the
version log): the archive of ``rm`` (:mod:`.moves`).
"""

from __future__ import annotations

import os
import time
import zlib
from collections.abc import Iterable, Iterator

import xxhash

from ..database import Database, in_batches

BLOCK = 1 << 20
# Pinned: what a watchdog snapshot names, a removed file's bytes (its ``remove`` entry, which
# retention never drops): ``rm`` archives, it never deletes; and the versions a rollback in
# progress puts back or replaces (its intent, :mod:`openclaw_memory.rollback.journal`).
_UNPINNED = ("version NOT IN (SELECT version FROM snapshot_files) "
             "AND version NOT IN (SELECT version FROM versions WHERE origin = 'remove') "
             "AND (NOT EXISTS (SELECT 1 FROM rollback_ops) OR version NOT IN "  # asked once: no rollback, no lookup per row
             "(SELECT pin.value FROM rollback_ops, json_each(rollback_ops.record, '$.pins') AS pin))")


class ObjectStore:
    """Compressed blobs keyed by the hash of their contents, bounded by ``max_bytes`` (LRU)."""

    def __init__(self, db: Database, max_bytes: int):
        self.db = db
        self.max_bytes = max_bytes

    def fits(self, size: int) -> bool:
        """Whether a version of ``size`` bytes is kept at all: one huge file must not flush
        the whole store (nor make a paged read of it compress gigabytes)."""
        return size <= max(1, self.max_bytes // 8)

    def pinned(self, version: str) -> bool:
        """Whether ``version`` is one eviction never takes (a removal, a snapshot or a rollback names it)."""
        row = self.db.one(f"SELECT NOT EXISTS (SELECT 1 FROM (SELECT ? AS version) WHERE {_UNPINNED})", (version,))  # noqa: S608
        return bool(row and row[0])

    def has(self, version: str) -> bool:
        return self.db.one("SELECT 1 FROM objects WHERE version = ?", (version,)) is not None

    def touch(self, version: str) -> bool:
        """Mark an object as just used; False when it is not stored (never was, or evicted)."""
        with self.db.transaction() as conn:
            return conn.execute("UPDATE objects SET used = ? WHERE version = ?", (time.time_ns(), version)).rowcount > 0

    def touch_all(self, versions: Iterable[str]) -> set[str]:
        """:meth:`touch` of many objects in one statement each way; returns those stored."""
        wanted = sorted(set(versions))
        stored: set[str] = set()
        with self.db.transaction() as conn:
            for part, marks in in_batches(wanted):
                stored.update(row[0] for row in conn.execute(f"SELECT version FROM objects WHERE version IN ({marks})", part))
            now = time.time_ns()
            conn.executemany("UPDATE objects SET used = ? WHERE version = ?", [(now, v) for v in stored])
        return stored

    def put_blocks(self, blocks: Iterable[bytes], expected: str | None = None) -> str | None:
        """Store the bytes ``blocks`` yield; return their version.

        With ``expected``, the bytes must hash to it (they come from a file that may be
        changing under us); when they do not, nothing is stored and None is returned. An
        ``expected`` version stored already is only touched: its bytes are not read at all.

        Bytes stored already, or not the expected ones, are deleted again in the same transaction,
        never undone with ``ROLLBACK TO``: SQLite 3.40 (Python's on Debian 12) does not forget,
        at a ``ROLLBACK TO`` that undoes frames its page cache spilled into the WAL, that it owes
        their checksums, and writes every later frame of the transaction, its commit included,
        without salts or checksums: SQLite reads them through its index, but the next process to
        rebuild that index (after a crash) drops the transaction, and the WAL check
        (:mod:`..database.companions`) found them unreadable.
        """
        if expected is not None and self.touch(expected):
            return expected
        incoming = f"~incoming-{os.getpid()}-{os.urandom(4).hex()}"
        digest = xxhash.xxh3_128()
        compressor = zlib.compressobj(1)  # fast: objects are written on the read path
        with self.db.transaction() as conn:
            seq = stored = size = 0
            pending = b""
            for block in blocks:
                digest.update(block)
                size += len(block)
                pending += compressor.compress(block)
                while len(pending) >= BLOCK:
                    conn.execute("INSERT INTO object_parts VALUES (?, ?, ?)", (incoming, seq, pending[:BLOCK]))
                    stored, seq, pending = stored + BLOCK, seq + 1, pending[BLOCK:]
            pending += compressor.flush()
            if pending:
                conn.execute("INSERT INTO object_parts VALUES (?, ?, ?)", (incoming, seq, pending))
                stored += len(pending)
            version = digest.hexdigest()
            if (expected is not None and version != expected) or self.has(version):
                conn.execute("DELETE FROM object_parts WHERE version = ?", (incoming,))
                if expected is not None and version != expected:
                    return None
                self.touch(version)
                return version
            conn.execute("UPDATE object_parts SET version = ? WHERE version = ?", (version, incoming))
            conn.execute("INSERT INTO objects VALUES (?, ?, ?, ?)", (version, size, stored, time.time_ns()))
        return version

    def put_bytes(self, data: bytes, expected: str | None = None) -> str | None:
        version = xxhash.xxh3_128(data).hexdigest()
        if expected is not None and version != expected:
            return None
        return self.put_blocks([data], version)

    def put_fd(self, fd: int, expected: str | None = None) -> str | None:
        """Store the whole file open on ``fd`` (read with pread: its offset is left alone)."""
        return self.put_blocks(pread_blocks(fd), expected)

    def blocks(self, version: str) -> Iterator[bytes] | None:
        """The stored bytes of ``version`` in blocks, or None when not stored.

        The caller must check the hash of what it consumed (see :meth:`read_bytes`):
        a damaged object is detected by its hash, never trusted.
        """
        if not self.touch(version):
            return None
        return _inflate(self._parts(version))

    def _parts(self, version: str) -> Iterator[bytes]:
        """One part at a time, each its own query: nothing else using the connection meanwhile
        (a write between two blocks of a restore) can cut the stream."""
        seq = 0
        while True:
            row = self.db.one("SELECT data FROM object_parts WHERE version = ? AND seq = ?", (version, seq))
            if row is None:
                return
            yield row[0]
            seq += 1

    def read_bytes(self, version: str, *, use: bool = True) -> bytes | None:
        """The whole stored version, verified against its hash; None when missing or damaged.

        ``use=False``: a look that is no use of it (``log`` counting lines), so it neither moves
        the object in the eviction order nor writes to the database."""
        if use:
            blocks = self.blocks(version)
        else:
            blocks = _inflate(self._parts(version)) if self.has(version) else None
        if blocks is None:
            return None
        try:
            data = b"".join(blocks)
        except zlib.error:
            return None
        return data if xxhash.xxh3_128_hexdigest(data) == version else None

    def remove(self, versions: Iterable[str]) -> int:
        """Delete these objects, except those a snapshot pins; returns the compressed bytes freed."""
        freed = 0
        with self.db.transaction() as conn:
            for version in versions:
                row = conn.execute(f"SELECT stored FROM objects WHERE version = ? AND {_UNPINNED}", (version,)).fetchone()
                if row is not None:
                    conn.execute("DELETE FROM objects WHERE version = ?", (version,))
                    conn.execute("DELETE FROM object_parts WHERE version = ?", (version,))
                    freed += row[0]
        return freed

    def usage(self) -> int:
        row = self.db.one("SELECT COALESCE(SUM(stored), 0) FROM objects")
        return row[0] if row else 0

    def evict(self, keep: frozenset[str] = frozenset()) -> list[str]:
        """Remove least-recently-used objects until the unpinned total fits ``max_bytes``.

        ``keep`` (the versions this very operation still needs) is evicted last of all.
        Returns the evicted versions.
        """
        with self.db.transaction() as conn:
            # Every object's bytes first: what is pinned only adds to it, so a store this total
            # fits has nothing to evict. The pinned total's subqueries cost every write 42 ms at
            # 30,000 notes with a watchdog snapshot (2 ms this sum), and a first sync of N files
            # N times that.
            if conn.execute("SELECT COALESCE(SUM(stored), 0) FROM objects").fetchone()[0] <= self.max_bytes:
                return []
            total = conn.execute(f"SELECT COALESCE(SUM(stored), 0) FROM objects WHERE {_UNPINNED}").fetchone()[0]
            if total <= self.max_bytes:
                return []
            rows = conn.execute(f"SELECT version, stored, used FROM objects WHERE {_UNPINNED}").fetchall()
            evicted = []
            for version, stored, _ in sorted(rows, key=lambda r: (r[0] in keep, r[2])):
                if total <= self.max_bytes:
                    break
                conn.execute("DELETE FROM objects WHERE version = ?", (version,))
                conn.execute("DELETE FROM object_parts WHERE version = ?", (version,))
                total -= stored
                evicted.append(version)
        return evicted

    def versions(self) -> set[str]:
        return {row[0] for row in self.db.rows("SELECT version FROM objects")}


def pread_blocks(fd: int) -> Iterator[bytes]:
    offset = 0
    while True:
        block = os.pread(fd, BLOCK, offset)
        if not block:
            return
        offset += len(block)
        yield block


def _inflate(parts: Iterable[bytes]) -> Iterator[bytes]:
    decompressor = zlib.decompressobj()
    for raw in parts:
        while raw:
            # Cap each output block so a highly compressible object never inflates whole.
            out = decompressor.decompress(raw, BLOCK)
            if out:
                yield out
            raw = decompressor.unconsumed_tail
    tail = decompressor.flush()
    if tail:
        yield tail
