"""What each agent read or wrote, and the state of a file for that agent.

A record per (agent, session, path) holds the version last read (or written: an
agent's own write counts as read). Each MCP session and each ``--session ID`` has its
own records, so a session that never read a file cannot overwrite it; the plain CLI
(no session) keeps one record set per agent. States are computed on demand from the files
as they are now (see :mod:`.report`), so the guard does not depend on ``watch``:

- ``read_fresh``: the agent read the version the file holds now;
- ``written_unread``: the agent wrote the version the file holds now;
- ``read_stale``: the file changed (or was deleted) since the agent read or wrote it;
- ``discovered_unread``: a memory file the agent never read.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple

from ..database import dec, enc
from .store import FileVersion, HistoryStore

if TYPE_CHECKING:
    from ..files.read import ReadResult
    from ..settings import Settings

READ_FRESH = "read_fresh"
READ_STALE = "read_stale"
DISCOVERED_UNREAD = "discovered_unread"
WRITTEN_UNREAD = "written_unread"
STATES = (READ_FRESH, READ_STALE, DISCOVERED_UNREAD, WRITTEN_UNREAD)

READ = "read"
WRITE = "write"
_SEEN = "version, size, time, how, seen_from, seen_to"  # Seen's fields, as the reads table names them


class Seen(NamedTuple):
    """The version an agent last read or wrote, and which of its lines the reads of that version showed."""

    version: str
    size: int
    time: float
    how: str  # READ | WRITE
    # The first and last line shown; None: the whole file (seen_to None: to its end). A write is whole.
    seen_from: int | None = None
    seen_to: int | None = None

    @property
    def whole(self) -> bool:
        return self.seen_from is None

    @property
    def window(self) -> Window:
        return None if self.seen_from is None else (self.seen_from, self.seen_to)


# Lines a read showed: (first, last), last None for "to the end"; None for the whole file.
Window = tuple[int, int | None] | None


_PAST_ANY_FILE = 1 << 62


def shown_lines(result: ReadResult) -> Window:
    """The lines a read (a ``memory_get`` window) showed whole; None when it showed the whole file."""
    # A window from past any file (--from 99999999999999999999999) shows none of its lines: a line
    # number SQLite holds says so (the one asked overflowed its INTEGER, a traceback).
    first = min(result.from_line or 1, _PAST_ANY_FILE)
    if not result.truncated:
        return None if first == 1 else (first, None)
    if result.next_from is not None:
        return first, result.next_from - 1
    return first, first + (result.lines or 0) - 2  # a hard cut: the last line shown was cut short


def joined(before: Seen | None, version: str, window: Window) -> Window:
    """What the session has seen of ``version`` once a read showed ``window``: with what it saw of
    the same version before, when the two windows meet (read from=1, then from=121: the whole file)."""
    if window is None or before is None or before.version != version:
        return window
    prior = before.window
    if prior is None:
        return None  # it saw the whole of this version already
    (a1, b1), (a2, b2) = prior, window
    if (b1 is not None and a2 > b1 + 1) or (b2 is not None and a1 > b2 + 1):
        return window  # apart: the newer window is what the record keeps
    first, last = min(a1, a2), None if b1 is None or b2 is None else max(b1, b2)
    return None if first == 1 and last is None else (first, last)


class ReadRecords:
    """One agent's (or one session's) records: rows of the state database's ``reads`` table
    (the plain command line is the session ``""``)."""

    def __init__(self, store: HistoryStore, agent: str, session: str | None = None):
        self.agent = agent
        self.session = session or ""  # as records, journals and refusals name it
        self.db = store.db
        self._owner = (enc(agent), enc(self.session))

    @classmethod
    def for_settings(cls, store: HistoryStore, settings: Settings) -> ReadRecords:
        return cls(store, settings.agent, getattr(settings, "session", None))

    def load(self) -> dict[str, Seen]:
        rows = self.db.rows(f"SELECT path, {_SEEN} FROM reads WHERE agent = ? AND session = ?", self._owner)  # noqa: S608
        return {dec(row[0]): Seen(*row[1:]) for row in rows}

    def get(self, abs_path: str) -> Seen | None:
        row = self.db.one(f"SELECT {_SEEN} FROM reads WHERE agent = ? AND session = ? AND path = ?",  # noqa: S608
                          (*self._owner, enc(abs_path)))
        return Seen(*row) if row else None

    def put(self, abs_path: str, snapshot: FileVersion, how: str, window: Window = None) -> Seen:
        """Record ``snapshot`` as read (``window``: the lines shown, joined with those an earlier read
        of the same version showed) or written (the whole file)."""
        with self.db.transaction() as conn:
            if how == READ and window is not None:
                row = conn.execute(f"SELECT {_SEEN} FROM reads WHERE agent = ? AND session = ? AND path = ?",  # noqa: S608
                                   (*self._owner, enc(abs_path))).fetchone()
                window = joined(Seen(*row) if row else None, snapshot.version, window)
            first, last = window if window is not None else (None, None)
            seen = Seen(snapshot.version, snapshot.size, time.time(), how, first, last)
            conn.execute(f"INSERT OR REPLACE INTO reads (agent, session, path, {_SEEN}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
                         (*self._owner, enc(abs_path), *seen))
        return seen

    def forget(self, abs_path: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM reads WHERE agent = ? AND session = ? AND path = ?", (*self._owner, enc(abs_path)))


def forget_session(store: HistoryStore, agent: str, session: str, before: float | None = None) -> None:
    """Drop a finished session's records (an MCP session that ended never writes again); ``before``:
    only those made before that time (a sweep's cutoff: a record made since it looked is kept)."""
    with store.db.transaction() as conn:
        if before is None:
            conn.execute("DELETE FROM reads WHERE agent = ? AND session = ?", (enc(agent), enc(session)))
        else:
            conn.execute("DELETE FROM reads WHERE agent = ? AND session = ? AND time < ?", (enc(agent), enc(session), before))


def session_times(store: HistoryStore) -> list[tuple[str, str, float]]:
    """(agent, session, time of its last read or write) of each session that has records (not the plain CLI's)."""
    rows = store.db.rows("SELECT agent, session, MAX(time) FROM reads WHERE session != ? GROUP BY agent, session", (enc(""),))
    return [(dec(a), dec(s), t) for a, s, t in rows]


def state_of(seen: Seen | None, current: str | None) -> str | None:
    """The state of a file whose content is now ``current`` (None: it does not exist)."""
    if seen is None:
        return DISCOVERED_UNREAD if current is not None else None
    if current != seen.version:
        return READ_STALE
    return WRITTEN_UNREAD if seen.how == WRITE else READ_FRESH


def record_read(settings: Settings, abs_path: str, display: str, snapshot: FileVersion | None,
                window: Window = None) -> Seen | None:
    """Record that ``settings.agent`` (its ``settings.session``) read ``snapshot`` of the file (None:
    it found the file missing); ``window``: the lines the read showed (None: all of them). The record
    it had before, or None.

    The version's bytes are kept in the store (for ``read --diff`` and history): the
    file is read again and kept only if it still hashes to the version read.
    """
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.lock():
        before = records.get(abs_path)
        if snapshot is None:
            records.forget(abs_path)
            return before
        store.observe(abs_path, display, snapshot)
        records.put(abs_path, snapshot, READ, window)
        return before
