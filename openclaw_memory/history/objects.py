"""The content-addressed object store: each version's bytes, zlib-compressed, stored once.

An object lives at ``objects/<2 hex>/<30 hex>.z``, named by the xxh3_128 of its
uncompressed bytes, so identical contents (a revert, the same text in two files)
share one object. An object's mtime is its last use: reading it (restore, diff)
or seeing its version again touches it, and eviction removes the least recently
used objects first until the total fits ``max_bytes``. Objects are written to a
temp file, fsynced, then renamed into place: a crash leaves a whole object or none.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator

import xxhash

from ..fsutil.atomic import fsync_dir, unlink_quietly

BLOCK = 1 << 20
USAGE_FILE = "usage"  # running total of object bytes; recounted at every eviction pass


class ObjectStore:
    """Compressed blobs keyed by the hash of their contents, bounded by ``max_bytes`` (LRU).

    Callers that add or remove objects hold the history lock (see :mod:`.store`).
    """

    def __init__(self, folder: str, max_bytes: int):
        self.folder = folder
        self.max_bytes = max_bytes
        # False while a caller that flushes the whole file system at its end (``state``) writes
        # many objects: one barrier instead of three fsyncs per object.
        self.durable = True
        self._usage: int | None = None  # the running total while not durable, written by flush()

    def fits(self, size: int) -> bool:
        """Whether a version of ``size`` bytes is kept at all: one huge file must not flush
        the whole store (nor make a paged read of it compress gigabytes)."""
        return size <= max(1, self.max_bytes // 8)

    def object_path(self, version: str) -> str:
        return os.path.join(self.folder, version[:2], version[2:] + ".z")

    def has(self, version: str) -> bool:
        return os.path.exists(self.object_path(version))

    def touch(self, version: str) -> bool:
        """Mark an object as just used; False when it is not stored (never was, or evicted)."""
        try:
            os.utime(self.object_path(version))
            return True
        except FileNotFoundError:
            return False

    def put_blocks(self, blocks: Iterable[bytes], expected: str | None = None) -> str | None:
        """Store the bytes ``blocks`` yield; return their version.

        With ``expected``, the bytes must hash to it (they come from a file that may be
        changing under us); when they do not, nothing is stored and None is returned.
        """
        os.makedirs(self.folder, exist_ok=True)
        tmp = os.path.join(self.folder, f".incoming.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        digest = xxhash.xxh3_128()
        compressor = zlib.compressobj(1)  # fast: objects are written on the read path
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        try:
            for block in blocks:
                digest.update(block)
                _write_all(fd, compressor.compress(block))
            _write_all(fd, compressor.flush())
            if self.durable:
                os.fsync(fd)
            stored = os.fstat(fd).st_size
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        version = digest.hexdigest()
        if expected is not None and version != expected:
            os.unlink(tmp)
            return None
        target = self.object_path(version)
        if os.path.exists(target):
            os.unlink(tmp)
            self.touch(version)
            return version
        subdir = os.path.dirname(target)
        fresh_dir = not os.path.isdir(subdir)
        try:
            os.makedirs(subdir, exist_ok=True)
            os.replace(tmp, target)
        except BaseException:
            unlink_quietly(tmp)  # no room for the folder: no half-stored object left behind
            raise
        if self.durable:
            fsync_dir(subdir)
            if fresh_dir:
                fsync_dir(self.folder)
        self._add_usage(stored)
        return version

    def put_bytes(self, data: bytes, expected: str | None = None) -> str | None:
        return self.put_blocks([data], expected)

    def put_fd(self, fd: int, expected: str | None = None) -> str | None:
        """Store the whole file open on ``fd`` (read with pread: its offset is left alone)."""
        return self.put_blocks(_pread_blocks(fd), expected)

    def blocks(self, version: str) -> Iterator[bytes] | None:
        """The stored bytes of ``version`` in blocks, or None when not stored.

        The caller must check the hash of what it consumed (see :meth:`read_bytes`):
        a damaged object is detected by its hash, never trusted.
        """
        try:
            fh = open(self.object_path(version), "rb")
        except FileNotFoundError:
            return None
        self.touch(version)
        return _inflate(fh)

    def read_bytes(self, version: str) -> bytes | None:
        """The whole stored version, verified against its hash; None when missing or damaged."""
        blocks = self.blocks(version)
        if blocks is None:
            return None
        try:
            data = b"".join(blocks)
        except zlib.error:
            return None
        return data if xxhash.xxh3_128_hexdigest(data) == version else None

    def remove(self, versions: Iterable[str]) -> int:
        """Delete these objects; returns the bytes freed."""
        freed = 0
        for version in versions:
            path = self.object_path(version)
            try:
                size = os.stat(path).st_size
                os.unlink(path)
            except FileNotFoundError:
                continue
            freed += size
        if freed:
            self._add_usage(-freed)
        return freed

    def usage(self) -> int:
        if self._usage is not None:
            return self._usage
        current = self._read_usage()
        return self.recount() if current is None else current

    def recount(self) -> int:
        total = sum(size for _, size, _ in self._listing())
        self._write_usage(total)
        return total

    def evict(self, keep: frozenset[str] = frozenset()) -> list[str]:
        """Remove least-recently-used objects until the total fits ``max_bytes``.

        ``keep`` (the versions this very operation still needs) is evicted last of all.
        Returns the evicted versions.
        """
        if self.usage() <= self.max_bytes:
            return []
        listing = self._listing()
        total = sum(size for _, size, _ in listing)
        order = sorted(listing, key=lambda item: (item[0] in keep, item[2]))
        evicted = []
        for version, size, _ in order:
            if total <= self.max_bytes:
                break
            try:
                os.unlink(self.object_path(version))
            except FileNotFoundError:
                pass
            total -= size
            evicted.append(version)
        self._write_usage(total)
        return evicted

    def versions(self) -> set[str]:
        return {version for version, _, _ in self._listing()}

    def _listing(self) -> list[tuple[str, int, int]]:
        """(version, compressed size, last use in ns) of every stored object."""
        out: list[tuple[str, int, int]] = []
        try:
            subdirs = os.scandir(self.folder)
        except FileNotFoundError:
            return out
        with subdirs:
            for sub in subdirs:
                if len(sub.name) != 2 or not sub.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(sub.path) as entries:
                    for entry in entries:
                        if entry.name.endswith(".z"):
                            st = entry.stat(follow_symlinks=False)
                            out.append((sub.name + entry.name[:-2], st.st_size, st.st_mtime_ns))
        return out

    def _read_usage(self) -> int | None:
        try:
            with open(os.path.join(self.folder, USAGE_FILE), encoding="ascii") as fh:
                return int(fh.read().strip())
        except (FileNotFoundError, ValueError):
            return None

    def flush(self) -> None:
        """Write the running total kept in memory while not durable."""
        if self._usage is not None:
            total, self._usage = self._usage, None
            self._write_usage(total)

    def _add_usage(self, delta: int) -> None:
        if not self.durable:
            if self._usage is None:
                self._usage = self.usage()
            self._usage = max(0, self._usage + delta)
            return
        current = self._read_usage()
        if current is None:
            self.recount()  # the count already includes this change
        else:
            self._write_usage(max(0, current + delta))

    def _write_usage(self, total: int) -> None:
        if self._usage is not None:
            self._usage = total
            return
        # Not fsynced: a lost update only makes the next eviction pass recount.
        os.makedirs(self.folder, exist_ok=True)  # no object stored yet (the first file did not fit)
        path = os.path.join(self.folder, USAGE_FILE)
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="ascii") as fh:
                fh.write(f"{total}\n")
            os.replace(tmp, path)
        except BaseException:
            unlink_quietly(tmp)
            raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _pread_blocks(fd: int) -> Iterator[bytes]:
    offset = 0
    while True:
        block = os.pread(fd, BLOCK, offset)
        if not block:
            return
        offset += len(block)
        yield block


def _inflate(fh) -> Iterator[bytes]:
    with fh:
        decompressor = zlib.decompressobj()
        while True:
            raw = fh.read(BLOCK)
            if not raw:
                break
            while raw:
                # Cap each output block so a highly compressible object never inflates whole.
                out = decompressor.decompress(raw, BLOCK)
                if out:
                    yield out
                raw = decompressor.unconsumed_tail
        tail = decompressor.flush()
        if tail:
            yield tail
