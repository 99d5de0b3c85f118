"""The per-path version log: every version of a file the product saw, oldest first.

Rows of the state database's ``versions`` table, by absolute path. An entry is one sighting
of a version: the same bytes seen again later (a revert) get a new entry and share the stored
object. Retention keeps the newest ``keep_per_path`` entries; older ones are dropped, except a
removal's (``remove``): a removed file's entry, and so its bytes (pinned by it), stay.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple, get_args

from ..database import dec, enc
from ..types import Origin

if TYPE_CHECKING:
    from ..database import Database
    from ..fsutil.atomic import Xattrs

AGENT_WRITE = "agent-write"
EXTERNAL_EDIT = "external-edit"
RESTORE = "restore"
DOCTOR_FIX = "doctor-fix"  # a repair of `doctor --fix` (a legacy root merged into MEMORY.md)
MOVE = "move"  # `mv`: the file arrived at this path; its versions under the old path are listed before it
REMOVE = "remove"  # `rm`: the file left the workspace; this version is what `restore --last` brings back
ORIGINS = (AGENT_WRITE, EXTERNAL_EDIT, RESTORE, DOCTOR_FIX, MOVE, REMOVE)
assert ORIGINS == get_args(Origin)  # (the word list the CLI's completion offers is the Literal's)


class FileMode(NamedTuple):
    """Who may read and write a file: its permission bits and owner, as a stat gave them; and, from a
    stat, when its bytes and its status last changed (logged with a sighting: a rollback to a moment
    before the history first saw a note tells by them whether it held those bytes then)."""

    mode: int  # the permission bits (st_mode & 0o7777)
    uid: int
    gid: int
    mtime_ns: int | None = None
    ctime_ns: int | None = None

    @classmethod
    def of(cls, st) -> FileMode:
        return cls(st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_mtime_ns, st.st_ctime_ns)

    @property
    def bits(self) -> tuple[int, int, int]:
        """The permission bits and owner alone (what a move's or removal's record keeps)."""
        return self.mode, self.uid, self.gid

    @property
    def xattrs(self) -> Xattrs | None:
        """The extended attributes read with it: none from a stat alone (``placing.KeptMode`` has them)."""
        return None


class Entry(NamedTuple):
    """One logged version (a NamedTuple: ``read`` loads this module and must start fast)."""

    version: str
    time: float  # seconds since the epoch
    size: int
    origin: str  # one of ORIGINS; a first sighting is an external edit
    agent: str | None  # the agent that wrote or restored it; None for an outside edit
    session: str | None = None  # the agent's session that did; None for the plain command line and outside edits


class LoggedRow(NamedTuple):
    """An entry with the rest of its row, as ``export`` carries it: its permission bits (None: not
    looked at, or logged before schema 7), the name it was logged under (``display``: a moved file's
    entries keep theirs), a move's source, the version its path logged before it, the move that
    brought it to its path (``arrived_by``, an id) and its own id."""

    entry: Entry
    mode: int | None
    display: str
    moved_from: str | None
    previous: str | None
    arrived_by: int | None
    id: int


def micros(seconds: float) -> int:
    """A time to the microsecond, as every time is shown and read (``rollback --to``'s moment too)."""
    return round(seconds * 1_000_000)


def iso_time(seconds: float) -> str:
    """UTC, millisecond precision: ``2026-11-30T13:45:12.123Z``, the time to the microsecond cut (never
    rounded up): a time printed is never after its entry, so ``rollback --to`` it (the end of that
    millisecond) includes the entry and no later one printed later (rounded, half of them printed
    after their entry, and a rollback to the time ``log`` gave a version went back to the one before)."""
    whole, millis = divmod(micros(seconds) // 1000, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def short(version: str | None) -> str:
    """The short form shown to people and in diff labels (12 hex characters)."""
    return version[:12] if version else "none"


class VersionLog:
    """The logs of every path, in the state database."""

    def __init__(self, db: Database):
        self.db = db

    def entries(self, abs_path: str) -> list[Entry]:
        """The path's entries, oldest first (empty when never seen)."""
        rows = self.db.rows("SELECT version, time, size, origin, agent, session FROM versions WHERE path = ? ORDER BY id",
                            (enc(abs_path),))
        return [_entry(*row) for row in rows]

    def entries_as_logged(self, abs_path: str) -> list[LoggedRow]:
        """The path's entries, oldest first, each with what its row holds besides (:class:`LoggedRow`):
        what ``export`` carries, read in one query."""
        rows = self.db.rows("SELECT version, time, size, origin, agent, session, mode, display, moved_from, previous, "
                            "arrived_by, id FROM versions WHERE path = ? ORDER BY id", (enc(abs_path),))
        return [LoggedRow(_entry(*row[:6]), row[6], dec(row[7]), dec(row[8]) if row[8] is not None else None, row[9],
                          row[10], row[11]) for row in rows]

    def paths(self) -> list[str]:
        """Every path the log has entries for (what ``export`` carries: removed and moved files too)."""
        return [dec(row[0]) for row in self.db.rows("SELECT DISTINCT path FROM versions ORDER BY path")]

    def latest(self, abs_path: str) -> Entry | None:
        entries = self.entries(abs_path)
        return entries[-1] if entries else None

    def latest_mode(self, abs_path: str) -> FileMode | None:
        """The permission bits and owner logged with the path's latest entry; None when it has none."""
        row = self.db.one("SELECT mode, uid, gid FROM versions WHERE path = ? ORDER BY id DESC LIMIT 1", (enc(abs_path),))
        return FileMode(*row) if row is not None and row[0] is not None else None

    def latest_in_time(self, abs_path: str) -> Entry | None:
        """The path's entry of the latest time (of those, the last logged): what a rollback to now
        replays last. It is :meth:`latest` unless an import logged versions of earlier times after it."""
        row = self.db.one("SELECT version, time, size, origin, agent, session FROM versions WHERE path = ? "
                          "ORDER BY time DESC, id DESC LIMIT 1", (enc(abs_path),))
        return _entry(*row) if row else None

    def logged(self) -> set[tuple[str, float, str]]:
        """Every entry's (version, time, origin), whichever path's history holds it now (a moved file's
        went with it, each under the name it was logged as): one event of this log each."""
        return {(logged_version(version), when, origin)
                for version, when, origin in self.db.rows("SELECT version, time, origin FROM versions")}

    def last_mode(self, abs_path: str, display: str) -> FileMode | None:
        """The permission bits and owner the path's file had when last seen with them (its removal,
        for a removed file); None when no entry has them (all logged before schema 7, or without a
        look at the file: an import's of a version its archive gives no bits, a removal found after a
        deletion by hand).

        A path with none of its own may be a name a file had before a move, whose entries went with
        it, each logged under the name it had then (``display``): the newest of those (a rollback to
        before the move brings the file back there). Only then is the whole log read (no index by name)."""
        row = self.db.one("SELECT mode, uid, gid FROM versions WHERE path = ? AND mode IS NOT NULL ORDER BY id DESC LIMIT 1",
                          (enc(abs_path),))
        if row is None:
            row = self.db.one("SELECT mode, uid, gid FROM versions WHERE display = ? AND mode IS NOT NULL "
                              "ORDER BY id DESC LIMIT 1", (enc(display),))
        return FileMode(*row) if row else None

    def held_here_since(self, abs_path: str, version: str) -> bool:
        """Whether the path's file now is the one that held ``version`` at this path: the path logged
        that version and neither a removal nor an arrival by a move since (a file made at the name
        after a removal, or moved there, is another file, whatever it is named)."""
        row = self.db.one("SELECT MAX(id) FROM versions WHERE path = ? AND version = ? AND origin != ?",
                          (enc(abs_path), version, REMOVE))  # (a removal logs the version it took away)
        if row is None or row[0] is None:
            return False
        return self.db.one("SELECT 1 FROM versions WHERE path = ? AND id > ? AND origin IN (?, ?) LIMIT 1",
                           (enc(abs_path), row[0], REMOVE, MOVE)) is None

    def mode_of(self, abs_path: str, display: str, version: str) -> FileMode | None:
        """The permission bits and owner the path's file had when last seen at ``version`` (under its
        name before a move, as :meth:`last_mode`); None when no entry of that version has them."""
        row = self.db.one("SELECT mode, uid, gid FROM versions WHERE path = ? AND version = ? AND mode IS NOT NULL "
                          "ORDER BY id DESC LIMIT 1", (enc(abs_path), version))
        if row is None:
            row = self.db.one("SELECT mode, uid, gid FROM versions WHERE display = ? AND version = ? AND mode IS NOT NULL "
                              "ORDER BY id DESC LIMIT 1", (enc(display), version))
        return FileMode(*row) if row else None

    def append(self, abs_path: str, display: str, entry: Entry, keep: int, mode: FileMode | None = None,
               moved_from: str | None = None, arrived: float | None = None) -> list[Entry]:
        """Add ``entry`` (with ``mode``, the file's when it was seen at this version, its mtime and ctime
        too where the stat gave them; a move's with
        ``moved_from``, the name it came from, as ``display`` names one; an imported one's with
        ``arrived``, the import's moment, its own time being the exporting side's), naming the
        path's version logged before it (``log`` counts the lines changed against it, whatever
        retention drops later; none after a removal: the file comes back from nothing); returns
        the entries retention dropped."""
        path = enc(abs_path)
        with self.db.transaction() as conn:
            before = None
            if moved_from is not None:  # what the moved file was: its own newest entry, come with it
                before = conn.execute(
                    "SELECT version, origin FROM versions WHERE path = ? AND arrived_by = "
                    "(SELECT MAX(arrived_by) FROM versions WHERE path = ?) ORDER BY id DESC LIMIT 1", (path, path)).fetchone()
            if before is None:
                before = conn.execute("SELECT version, origin FROM versions WHERE path = ? ORDER BY id DESC LIMIT 1",
                                      (path,)).fetchone()
            inserted = conn.execute(
                "INSERT INTO versions (path, display, version, time, size, origin, agent, session, previous, mode, uid, gid, "
                "moved_from, arrived, mtime_ns, ctime_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (path, enc(display), entry.version, entry.time, entry.size, entry.origin, _blob(entry.agent),
                 _blob(entry.session or None), before[0] if before and before[1] != REMOVE else None,  # removed: none
                 *(mode.bits if mode is not None else (None, None, None)), enc(moved_from) if moved_from is not None else None,
                 arrived, *(mode[3:] if mode is not None else (None, None))))
            if entry.origin == MOVE:  # a move's own entry names itself (one logged before schema 14: none; note_since)
                conn.execute("UPDATE versions SET arrived_by = id WHERE id = ?", (inserted.lastrowid,))
            old = conn.execute(
                "SELECT id, version, time, size, origin, agent, session FROM versions WHERE path = ? AND origin != ? "
                "ORDER BY id DESC LIMIT -1 OFFSET ?", (path, REMOVE, keep)).fetchall()
            conn.executemany("DELETE FROM versions WHERE id = ?", [(row[0],) for row in old])
        return [_entry(*row[1:]) for row in reversed(old)]

    def note_since(self, abs_path: str) -> int:
        """Where the history of the note now at ``abs_path`` begins: the id of the last removal logged
        there that ``restore --last`` did not undo (0: none). The entries there up to it are notes'
        removed from that name (what `restore PATH --last` brings back), except those a move brought
        after it (``arrived_by``): they are the note's own, which a move takes along."""
        path = enc(abs_path)
        for removal, version in self.db.rows("SELECT id, version FROM versions WHERE path = ? AND origin = ? "
                                             "ORDER BY id DESC", (path, REMOVE)):
            after = self.db.one("SELECT origin, version FROM versions WHERE path = ? AND id > ? ORDER BY id LIMIT 1",
                                (path, removal))
            if after == (RESTORE, version):
                continue
            # A move logged before schema 14 named none of the entries it brought (arrived_by NULL):
            # which are the note's cannot be told, so all of them are, as then.
            # (A move's own entry names itself since: never NULL.)
            if self.db.one("SELECT 1 FROM versions WHERE path = ? AND id > ? AND origin = ? AND arrived_by IS NULL "
                           "LIMIT 1", (path, removal, MOVE)):
                return 0
            return int(removal)
        return 0

    def claim(self, abs_path: str, entry: Entry, origin: str, agent: str, session: str | None) -> bool:
        """Relabel ``entry`` of ``abs_path``, a sighting logged as an outside edit, as the write of
        ``agent`` (its ``session``) that made it (a write killed after it put its version in place,
        before logging it, answered on its retry): True when an entry was found to relabel."""
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT id FROM versions WHERE path = ? AND version = ? AND time = ? AND origin = ? AND agent IS NULL "
                "ORDER BY id LIMIT 1", (enc(abs_path), entry.version, entry.time, entry.origin)).fetchone()
            if row is None:
                return False
            conn.execute("UPDATE versions SET origin = ?, agent = ?, session = ? WHERE id = ?",
                         (origin, _blob(agent), _blob(session or None), row[0]))
        return True

    def referenced(self, versions: set[str]) -> set[str]:
        """Which of ``versions`` some log still lists (what eviction of dropped entries must keep)."""
        return {v for v in versions if self.db.one("SELECT 1 FROM versions WHERE version = ? LIMIT 1", (v,))}


def _blob(text: str | None) -> bytes | None:
    return enc(text) if text is not None else None


def logged_version(version: object) -> str:
    """A version as a row of the log holds it; a row damaged by hand (NULL) fails here, which the
    memory's door says as the damage it is (:meth:`openclaw_memory.memory.local.LocalMemory.call`),
    rather than in whatever later reads it (a renderer's ``version[:12]``)."""
    if not isinstance(version, str):
        raise TypeError(f"a version of the history is {version!r}, not a version")
    return version


def _entry(version: str, time: float, size: int, origin: str, agent: bytes | None, session: bytes | None) -> Entry:
    return Entry(logged_version(version), time, size, origin, dec(agent) if agent is not None else None,
                 dec(session) if session is not None else None)
