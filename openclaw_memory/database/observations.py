"""The one rule by which the index, the history and the watchdog know a file unchanged without
reading it, and the table that remembers what was seen.

A file is unchanged when its mode, size, ns mtime, ns ctime and inode all equal those it had
when its bytes were hashed, and that sighting was not *racy*: taken so soon after the file's
last mtime or ctime (within the file system's timestamp granularity, ``fsutil.fsclock``) that
a rewrite of the same size in the same clock tick would have kept every one of those fields. A
racy sighting is hashed again the next time, so such a rewrite is always found.

``observations`` holds one sighting per absolute path, whoever made it: a file `state` hashed
is not hashed again by `index` while its stat holds, and the other way round. What each part
concludes from the hash (a new version, chunks to embed) stays its own.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..fsutil.fsclock import file_guard_ns
from .failures import dec, enc, stat_int

if TYPE_CHECKING:
    from .connection import Database


class ChangeStat(Protocol):
    """What the rule compares of a file: an ``os.stat_result`` seen through these names, a
    ``MemoryFile``, a ``FileStat``."""

    @property
    def size(self) -> int: ...
    @property
    def mtime_ns(self) -> int: ...
    @property
    def ctime_ns(self) -> int: ...
    @property
    def inode(self) -> int: ...
    @property
    def mode(self) -> int: ...


def is_racy(mtime_ns: int, ctime_ns: int, observed_ns: int, guard_ns: int) -> bool:
    """Whether a sighting at ``observed_ns`` came within ``guard_ns`` of the file's timestamps: the
    file system's guard, a second at least for a file on a whole-second clock (``fsclock.file_guard_ns``)."""
    return max(mtime_ns, ctime_ns) >= observed_ns - file_guard_ns(mtime_ns, guard_ns)


@dataclass(frozen=True)
class FileStat:
    """A file's stat as seen when its bytes were hashed, and whether that sighting was racy."""

    size: int
    mtime_ns: int
    ctime_ns: int = 0
    inode: int = 0
    racy: bool = False
    mode: int = 0

    @classmethod
    def of(cls, st: os.stat_result, observed_ns: int, guard_ns: int) -> FileStat:
        return cls(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
                   is_racy(st.st_mtime_ns, st.st_ctime_ns, observed_ns, guard_ns), st.st_mode)

    def matches(self, now: ChangeStat) -> bool:
        """Whether a file whose stat is ``now`` (a scanned MemoryFile) is known unchanged since."""
        return not self.racy and change_key(self) == change_key(now)


def change_key(s: ChangeStat) -> tuple[int, int, int, int, int]:
    """The fields the rule compares, as one value: two sightings with equal keys (the earlier one
    not racy) are the same content. Bulk checks compare these tuples instead of building a
    FileStat per row."""
    return (s.size, s.mtime_ns, s.ctime_ns, s.inode, s.mode)


@dataclass(frozen=True)
class Observed:
    stat: FileStat
    hash: str  # xxh3_128 of the bytes read with that stat


class Observations:
    """The data dir's sightings, by absolute path."""

    def __init__(self, db: Database):
        self.db = db

    def load(self) -> dict[str, Observed]:
        rows = self.db.rows("SELECT path, mode, size, mtime_ns, ctime_ns, inode, racy, hash FROM observations")
        return {dec(path): Observed(FileStat(size, mtime, ctime, inode, bool(racy), mode), digest)
                for path, mode, size, mtime, ctime, inode, racy, digest in rows}

    @staticmethod
    def record(conn: sqlite3.Connection, seen: Iterable[tuple[str, FileStat, str]]) -> None:
        """Remember each (absolute path, stat, hash), in the caller's transaction."""
        conn.executemany(
            "INSERT OR REPLACE INTO observations VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(enc(path), s.mode, s.size, stat_int(s.mtime_ns), stat_int(s.ctime_ns), stat_int(s.inode), int(s.racy), digest)
             for path, s, digest in seen],
        )

    @staticmethod
    def forget(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
        """Drop the sightings of files that are gone, and what was found of their text (in the
        caller's transaction)."""
        gone = [(enc(p),) for p in paths]
        conn.executemany("DELETE FROM observations WHERE path = ?", gone)
        conn.executemany("DELETE FROM text_checks WHERE path = ?", gone)

    @staticmethod
    def record_text(conn: sqlite3.Connection, checks: Iterable[tuple[str, TextCheck]]) -> None:
        """Remember what was found of each (absolute path, its bytes as text), in the caller's
        transaction: one row per path, replaced by the next check of it."""
        conn.executemany("INSERT OR REPLACE INTO text_checks VALUES (?, ?, ?, ?)",
                         [(enc(path), c.hash, c.bad, c.nul) for path, c in checks])


@dataclass(frozen=True)
class TextCheck:
    """What bytes are as text: the first invalid UTF-8 sequence and the first NUL byte (offsets;
    None: none). What doctor's UTF-8 check reports; a reader that holds the bytes (the index)
    records it, so that doctor need not open a file unchanged since (``doctor.vouched``)."""

    hash: str  # xxh3_128 of the bytes
    bad: int | None
    nul: int | None

    @classmethod
    def of(cls, data: bytes, digest: str) -> TextCheck:
        try:
            data.decode("utf-8")
            bad = None
        except UnicodeDecodeError as exc:
            bad = exc.start
        nul = data.find(b"\x00")
        return cls(digest, bad, nul if nul >= 0 else None)
