"""SQLite's WAL checksum: a run of frames checked at once (numpy) agrees with the word-by-word loop,
frame for frame, on chains that hold and on chains broken anywhere."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_memory.database import walsum
from openclaw_memory.database.walsum import checksum, frames_sound

numpy = pytest.importorskip("numpy", reason="the search extra's numpy computes a run of frames at once")
SALTS = bytes(range(8))


def chain(pages: list[bytes], big: bool, commits: list[bool], sums=(7, 11)) -> bytes:
    """WAL frames of ``pages``, each with its header: page number, commit size, salts, checksum."""
    out = []
    for n, (page, commit) in enumerate(zip(pages, commits, strict=True)):
        head8 = struct.pack(">2I", n + 1, n + 1 if commit else 0)
        sums = checksum(head8 + page, big, *sums)
        out.append(head8 + SALTS + struct.pack(">2I", *sums) + page)
    return b"".join(out)


@settings(max_examples=60, deadline=None)
@given(page=st.sampled_from([512, 1024, 4096]), frames=st.integers(1, 12), big=st.booleans(), seed=st.binary(min_size=8, max_size=8),
       damage=st.one_of(st.none(), st.tuples(st.integers(0, 11), st.integers(0, 4095 + 24))))
def test_a_run_of_frames_at_once_agrees_with_the_loop(page, frames, big, seed, damage):
    import random

    rng = random.Random(seed)
    pages = [rng.randbytes(page) for _ in range(frames)]
    commits = [rng.random() < 0.3 for _ in range(frames)]
    data = bytearray(chain(pages, big, commits))
    frame = 24 + page
    if damage is not None:
        at = (damage[0] % frames) * frame + damage[1] % frame
        data[at] ^= 0x5A  # any byte of a frame: its header is summed, salted or the sum itself
    at_once = walsum._at_once(numpy, bytes(data), frames, frame, SALTS, big, (7, 11))
    assert at_once == walsum._one_by_one(bytes(data), frames, frame, SALTS, big, (7, 11))
    assert frames_sound(bytes(data), frames, frame, SALTS, big, (7, 11)) == at_once
    if damage is None:
        assert at_once[0] == frames and at_once[2] == commits[-1]


def test_the_coefficients_give_the_loops_checksum_for_every_length():
    import random

    rng = random.Random(5)
    for pairs in (1, 2, 3, 6, 257):
        data = rng.randbytes(8 * pairs)
        for big in (True, False):
            (a00, a01, a10, a11), c0x, c0y, c1x, c1y = walsum._coefficients(pairs)
            words = struct.unpack(f"{'>' if big else '<'}{2 * pairs}I", data)
            s0 = (a00 * 3 + a01 * 9 + sum(c * w for c, w in zip(c0x, words[::2])) + sum(c * w for c, w in zip(c0y, words[1::2]))) & walsum.MASK
            s1 = (a10 * 3 + a11 * 9 + sum(c * w for c, w in zip(c1x, words[::2])) + sum(c * w for c, w in zip(c1y, words[1::2]))) & walsum.MASK
            assert (s0, s1) == checksum(data, big, 3, 9)
