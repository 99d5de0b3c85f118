"""Streaming xxh3-128 content hashes (hex), the product's notion of a file version."""

from __future__ import annotations

import os
import threading

import xxhash


def hash_bytes(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def hash_open_file(fd: int) -> str:
    """Hash from the current offset to the end, in blocks: never the whole file in memory."""
    remaining = os.fstat(fd).st_size - os.lseek(fd, 0, os.SEEK_CUR)
    return digest_fd(fd, max(remaining, 0)).hex()


def hash_file(path: str | os.PathLike[str]) -> str:
    from .safeopen import open_regular_nofollow

    fd, _ = open_regular_nofollow(path)
    try:
        return hash_open_file(fd)
    finally:
        os.close(fd)


BLOCK = 1 << 20
# From this size on, a reader thread fills buffers while this thread hashes the previous
# one: the read (a system call, GIL released) and the hash overlap instead of adding up.
PIPELINE_MIN = 16 * BLOCK
_local = threading.local()


def digest_fd(fd: int, size: int) -> bytes:
    """xxh3-128 digest of an open regular file from its current offset, never held whole.

    ``size`` (the bytes expected) only chooses the strategy.

    A small file is read in one call of its size + 1 bytes (a short read of a regular
    file means end of file), saving the empty read at the end. Larger ones stream
    through reused buffers: a fresh 1 MiB object per block costs more page faults
    than the hashing itself.
    """
    if size < BLOCK:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return xxhash.xxh3_128_digest(data)
        h = xxhash.xxh3_128(data)
    else:
        h = xxhash.xxh3_128()
        st = os.fstat(fd)
        if st.st_blocks * 512 + BLOCK < st.st_size:  # at least a block's worth of holes
            _hash_holes(fd, h, st.st_size)  # then on below: whatever lies past the size taken
        elif size >= PIPELINE_MIN:
            return _hash_pipelined(fd, h)
    buffer = _buffer()
    view = memoryview(buffer)
    while True:
        n = os.readv(fd, [buffer])
        if not n:
            return h.digest()
        h.update(view[:n])


def _buffer() -> bytearray:
    buffer = getattr(_local, "buffer", None)
    if buffer is None:
        buffer = _local.buffer = bytearray(BLOCK)
    return buffer


_ZEROS = memoryview(bytes(BLOCK))


def _hash_holes(fd: int, h, end: int) -> None:
    """Hash a sparse file from its offset to ``end``: its holes as zeros from memory, only its data
    read (:func:`.sparse.data_extents`). Reading a hole makes the kernel fill pages with zeros: an
    8 GiB sparse file took a minute to hash (``cat`` as long), its zeros hashed from memory take a
    tenth of a second. The digest is the same: the bytes of a hole are zeros."""
    from .sparse import data_extents

    buffer = memoryview(_buffer())
    pos = os.lseek(fd, 0, os.SEEK_CUR)
    for data, hole in data_extents(fd, pos, end):
        _hash_zeros(h, data - pos)
        pos = os.lseek(fd, data, os.SEEK_SET)
        while pos < hole:
            n = os.readv(fd, [buffer[: min(BLOCK, hole - pos)]])
            if not n:  # cut short meanwhile: the caller's stat after the read shows it
                return
            h.update(buffer[:n])
            pos += n
    _hash_zeros(h, end - pos)
    os.lseek(fd, end, os.SEEK_SET)


def _hash_zeros(h, count: int) -> None:
    while count > 0:
        step = min(BLOCK, count)
        h.update(_ZEROS[:step])
        count -= step


def _hash_pipelined(fd: int, h) -> bytes:
    import queue  # only for large files: kept off the start-up path

    free: queue.SimpleQueue = queue.SimpleQueue()
    full: queue.SimpleQueue = queue.SimpleQueue()
    for _ in range(3):
        free.put(bytearray(BLOCK))

    def reader() -> None:
        while True:
            buffer = free.get()
            if buffer is None:
                return
            try:
                n = os.readv(fd, [buffer])
            except OSError as exc:
                full.put((None, exc))
                return
            full.put((buffer, n))
            if not n:
                return

    thread = threading.Thread(target=reader, name="openclaw-memory-read", daemon=True)
    thread.start()
    try:
        while True:
            buffer, n = full.get()
            if buffer is None:
                raise n
            if not n:
                return h.digest()
            h.update(memoryview(buffer)[:n])
            free.put(buffer)
    finally:
        free.put(None)  # stops a reader still waiting for a buffer
        thread.join()
