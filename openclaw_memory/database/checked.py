"""The state database's last clean check, kept beside it (``state-checked.json``), so that doctor
reads every page only when the database changed since.

SQLite's ``quick_check`` and the count of values of the wrong type (:mod:`.repair`'s ``damage``)
each read the whole database: 0.22 s of doctor's 0.9 s CPU at 30,000 notes, the same every run.
What they found sound stays sound while the bytes they read stay the same, and the change rule
says when they do (``database.observations``): the database file's and its write-ahead log's
size, ns mtime, ns ctime, inode and mode are what they were when the check began, and that
sighting was not racy. A write, a truncation, bytes overwritten in place and a file renamed over
it all move one of them. An empty or absent log holds no page, so only its emptiness counts:
every connection that closes truncates it again, moving its ctime and nothing else.

What is never skipped: whatever is at the paths (links, FIFOs, folders), the log's checksums
against its index (``Database.unusable``), the schema and its version. What the record cannot
see: bytes that rot on the disk under an unchanged stat are found when the database next
changes, not before (docs/doctor.md).
"""

from __future__ import annotations

import json
import os
import time

from .. import faults
from ..fsutil.atomic import atomic_write_bytes
from ..fsutil.fsclock import guard_ns
from ..fsutil.safeopen import read_small_json
from .observations import is_racy

NAME = "state-checked.json"
_MAX = 4096  # a record is one short line; anything longer is not one

ChangeKey = list[int]  # size, mtime_ns, ctime_ns, inode, mode: as JSON keeps them


class Sighting:
    """The database's files as one look at them saw them (``key``), and whether that look came
    within the file system's timestamp guard of their last change (``racy``: not vouched for)."""

    def __init__(self, key: list[ChangeKey | None], racy: bool):
        self.key, self.racy = key, racy

    @classmethod
    def of(cls, db_path: str) -> Sighting | None:
        """The database and its log as they are now; None when either cannot be looked at."""
        now = time.time_ns()
        guard = guard_ns(os.path.dirname(db_path))
        key: list[ChangeKey | None] = []
        racy = False
        for path in (db_path, db_path + "-wal"):
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                key.append(None)
                continue
            except OSError:
                return None
            if path != db_path and st.st_size == 0:
                key.append(None)  # no frame in it: its times move at every close, its bytes do not count
                continue
            key.append([st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode])
            racy = racy or is_racy(st.st_mtime_ns, st.st_ctime_ns, now, guard)
        return cls(key, racy)


class LastCheck:
    """The record of a data dir's database: what its last clean check saw, and what this one
    found sound, kept by the caller only once every check has read (:meth:`keep`)."""

    def __init__(self, data_dir: str | os.PathLike[str]):
        self.path = os.path.join(os.fspath(data_dir), NAME)
        self._sound: tuple[Sighting, str, str] | None = None

    def held(self, seen: Sighting | None) -> str | None:
        """The digest of the type count the last clean check ran, when it saw the files as ``seen``
        (its pages are sound as they were); None when it did not, or there is no record."""
        if seen is None or seen.racy:
            return None
        record = self._read()
        if record is None or record.get("files") != seen.key or not isinstance(record.get("counted"), str):
            return None
        return record["counted"]

    def found_sound(self, seen: Sighting | None, db_path: str, counted: str) -> None:
        """Every page read sound and ``counted`` (the type count's digest) found none wrong, in the
        files as ``seen`` before the check: kept by :meth:`keep` while they stay so."""
        if seen is not None and not seen.racy:
            self._sound = (seen, db_path, counted)

    def keep(self) -> None:
        """Write what this check found sound, if the files are still as it saw them (nothing wrote
        between the check and now); a record that cannot be written is only a cost next time."""
        if self._sound is None:
            return
        seen, db_path, counted = self._sound
        faults.reach("state-checked:keeping")
        now = Sighting.of(db_path)
        if now is None or now.key != seen.key:
            return
        body = json.dumps({"files": seen.key, "counted": counted}, separators=(",", ":")).encode()
        try:
            atomic_write_bytes(self.path, body, 0o600)
        except OSError:
            return

    def _read(self) -> dict | None:
        return read_small_json(self.path, _MAX)
