"""SQLite's WAL checksum (https://www.sqlite.org/walformat.html), of one piece or of a run of frames.

The checksum runs over the 32-bit words of its input two at a time, each pair continuing from the
sums before it: ``s0 += w0 + s1; s1 += w1 + s0`` (mod 2**32). Done word by word in Python it cost a
frame of 4 KiB about 120 us, and every page a transaction commits is checked once: half the CPU
of recording 10,000 notes in the history. The step is linear, so the sums after n pairs are a
fixed combination of the starting sums and of every word (coefficients that depend only on n);
:func:`frames_sound` computes a run of frames that way at once with numpy where a process has it
loaded already (the search extra's processes do), or has so many frames to check that importing
it costs less than the loop (the same combination in pure Python was no faster than the loop).
Recording 10,000 notes: 1.6-1.8 -> 0.8-1.0 s of CPU; a full index of 3,000 notes 19.2-19.7 ->
18.4-18.6 s (hash embedder, same run).
"""

from __future__ import annotations

import struct
import sys
from functools import lru_cache

MASK = 0xFFFFFFFF
# Frames from which importing numpy (about 0.1 s) costs less than checking them word by word.
_IMPORT_FRAMES = 1024


def checksum(data: bytes, big_endian: bool, s0: int = 0, s1: int = 0) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` (a multiple of 8 bytes), continuing from (s0, s1)."""
    words = struct.unpack(f"{'>' if big_endian else '<'}{len(data) // 4}I", data)
    for w0, w1 in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + w0 + s1) & MASK
        s1 = (s1 + w1 + s0) & MASK
    return s0, s1


def frames_sound(data: bytes, count: int, frame: int, salts: bytes, big_endian: bool,
                 sums: tuple[int, int], ahead: int = 0) -> tuple[int, tuple[int, int], bool | None]:
    """The first ``count`` frames of ``data`` (each ``frame`` bytes: a 24-byte header and a page)
    checked in turn: each must carry ``salts`` and the checksum of its first 8 bytes and its page
    continuing from the frame before (from ``sums`` for the first). Returns how many verify, the
    checksum after the last that does, and whether that one ends a commit (None: none verified).
    ``ahead``: the frames the caller will check after these (whether numpy is worth importing)."""
    if count and ("numpy" in sys.modules or count + ahead >= _IMPORT_FRAMES):
        try:
            import numpy
        except ImportError:  # the base install: word by word
            pass
        else:
            return _at_once(numpy, data, count, frame, salts, big_endian, sums)
    return _one_by_one(data, count, frame, salts, big_endian, sums)


def _one_by_one(data: bytes, count: int, frame: int, salts: bytes, big_endian: bool,
                sums: tuple[int, int]) -> tuple[int, tuple[int, int], bool | None]:
    done: int = 0
    commit: bool | None = None
    for at in range(0, count * frame, frame):
        one = data[at:at + frame]
        stored = struct.unpack(">2I", one[16:24])
        if one[8:16] != salts or checksum(one[:8] + one[24:], big_endian, *sums) != stored:
            break
        sums, commit, done = stored, struct.unpack(">I", one[4:8])[0] != 0, done + 1
    return done, sums, commit


def _at_once(np, data: bytes, count: int, frame: int, salts: bytes, big_endian: bool,
             sums: tuple[int, int]) -> tuple[int, tuple[int, int], bool | None]:
    rows = np.frombuffer(data, dtype=np.uint8, count=count * frame).reshape(count, frame)
    stored = rows[:, 16:24].copy().view(">u4").astype(np.uint64)  # (count, 2): each frame's checksum
    words = np.concatenate((rows[:, :8], rows[:, 24:]), axis=1).view(">u4" if big_endian else "<u4").astype(np.uint64)
    # Each frame continues from the checksum the one before it carries (from ``sums`` for the
    # first): where every frame before verified, that is the chain's own value.
    before = np.concatenate((np.array([sums], dtype=np.uint64), stored[:-1]))
    (a00, a01, a10, a11), c0x, c0y, c1x, c1y = (np.asarray(c, dtype=np.uint64) for c in _coefficients(words.shape[1] // 2))
    x, y = words[:, 0::2], words[:, 1::2]
    # uint64 arithmetic wraps modulo 2**64, a multiple of 2**32: the low 32 bits are exact.
    s0 = (a00 * before[:, 0] + a01 * before[:, 1] + x @ c0x + y @ c0y) & MASK
    s1 = (a10 * before[:, 0] + a11 * before[:, 1] + x @ c1x + y @ c1y) & MASK
    ok = (rows[:, 8:16] == np.frombuffer(salts, dtype=np.uint8)).all(axis=1) & (s0 == stored[:, 0]) & (s1 == stored[:, 1])
    done = count if ok.all() else int(np.argmin(ok))
    if done == 0:
        return 0, sums, None
    last = rows[done - 1]
    return done, (int(stored[done - 1, 0]), int(stored[done - 1, 1])), bytes(last[4:8]) != b"\0\0\0\0"


@lru_cache(maxsize=4)
def _coefficients(pairs: int) -> tuple[tuple[int, int, int, int], list[int], list[int], list[int], list[int]]:
    """For ``pairs`` steps: A**pairs (how the starting sums carry through) and, per pair k, the
    row of A**(pairs-1-k) @ B that weighs its two words, where one step is v' = A v + B (w0, w1)
    with A = [[1, 1], [1, 2]] and B = [[1, 0], [1, 1]]."""
    c0x, c0y, c1x, c1y = [0] * pairs, [0] * pairs, [0] * pairs, [0] * pairs
    p00, p01, p10, p11 = 1, 0, 0, 1  # A**j, from j = 0 (the last pair) up
    for k in range(pairs - 1, -1, -1):
        c0x[k], c0y[k], c1x[k], c1y[k] = (p00 + p01) & MASK, p01, (p10 + p11) & MASK, p11
        p00, p01, p10, p11 = (p00 + p01) & MASK, (p00 + 2 * p01) & MASK, (p10 + p11) & MASK, (p10 + 2 * p11) & MASK
    return (p00, p01, p10, p11), c0x, c0y, c1x, c1y
