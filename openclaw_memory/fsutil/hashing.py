"""Streaming xxh3-128 content hashes (hex), the product's notion of a file version."""

from __future__ import annotations

import os

import xxhash

BLOCK = 1 << 20


def hash_bytes(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def hash_open_file(fd: int) -> str:
    """Hash from the current offset to the end, in blocks: never the whole file in memory."""
    h = xxhash.xxh3_128()
    while True:
        block = os.read(fd, BLOCK)
        if not block:
            return h.hexdigest()
        h.update(block)


def hash_file(path: str | os.PathLike[str]) -> str:
    from .safeopen import open_regular_nofollow

    fd, _ = open_regular_nofollow(path)
    try:
        return hash_open_file(fd)
    finally:
        os.close(fd)
