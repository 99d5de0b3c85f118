"""``log``: every version the history recorded, across the memory files, newest first.

What ``git log --stat`` is to a repository: each entry is one version of one file, with when it
was logged, how it came (its origin: an agent's write, a restore, a repair of ``doctor --fix``,
an outside edit, a move, a removal), which agent and session made it, and the lines it added and
removed against the version of that path logged before it (each entry names that one when it is
logged, so the counts do not depend on what retention has dropped since; a removal removes every
line of what the file held).

Only the page returned is diffed (``limit``, newest first), from the object store, and a look
here is no use of an object (eviction order and the database are left alone). A count is None
when either side's bytes are no longer stored. The page itself is one query on the time index.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TYPE_CHECKING

from ..database import dec, enc
from ..errors import BadValue, shown
from ..files.jstext import decode_lossy
from ..history.diff import lines_of
from ..history.store import HistoryStore
from ..history.versions import ORIGINS, REMOVE, iso_time, logged_version
from ..index.filters import SearchFilters
from ..settings import agent_id
from ..timezones import local_midnight
from ..wire import key

if TYPE_CHECKING:
    from ..settings import Settings

DEFAULT_LIMIT = 50
# A page past this is every version (SQLite's LIMIT is a signed 64-bit integer: a larger one overflows).
_UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class LoggedVersion:
    """One version of one memory file, as ``log`` lists it."""

    path: str  # as `files` names it (what `restore` and `history` take)
    time: str  # iso_time, UTC
    origin: str  # one of versions.ORIGINS
    agent: str | None  # who wrote or restored it; None for an outside edit and a repair
    session: str | None  # the agent's session that did; None for the plain command line
    version: str  # what `restore PATH VERSION` takes (a prefix of 8+ characters will do)
    previous: str | None = key("previousVersion")  # the path's version logged before; None for its first
    size: int = key()
    added: int | None = key("linesAdded")  # None: a side's bytes are no longer stored
    removed: int | None = key("linesRemoved")


@dataclass(frozen=True)
class ActivityLog:
    entries: tuple[LoggedVersion, ...]  # newest first
    more: bool  # older versions match too (past the limit)


def activity(settings: Settings, *, since: str | None = None, until: str | None = None, paths: tuple[str, ...] = (),
             agent: str | None = None, session: str | None = None, origins: tuple[str, ...] = (),
             limit: int = DEFAULT_LIMIT) -> ActivityLog:
    """The newest ``limit`` versions that pass every filter (each filter given narrows)."""
    # The same day forms and glob rules as `search` (days in local time, a glob without / matches the name too).
    filters = SearchFilters.from_args(paths=paths, since=since, until=until)
    for origin in origins:
        if origin not in ORIGINS:
            raise BadValue("origins", f"must be one of {', '.join(ORIGINS)}, not {shown(origin)}")
    if limit < 1:
        raise BadValue("limit", f"must be 1 or more, not {shown(limit)}")
    store = HistoryStore.for_settings(settings)
    where: list[str] = []
    params: list[object] = []
    if filters.since is not None and (start := _start_of(filters.since)) is not None:
        where.append("time >= ?")
        params.append(start)
    if filters.until is not None and (end := _start_of(filters.until, days_after=1)) is not None:
        where.append("time < ?")
        params.append(end)
    if agent is not None:
        where.append("agent = ?")
        params.append(enc(agent_id(agent)))  # `--agent Main` is main, who wrote as `main`
    if session is not None:
        where.append("session = ?")
        params.append(enc(session))
    if origins:
        where.append(f"origin IN ({', '.join('?' * len(set(origins)))})")
        params.extend(sorted(set(origins)))
    if paths:
        # Globs are matched on the names as shown, once per path (its newest entry's, found on the
        # path index: not a read of every row); the query then takes the matching paths by their bytes.
        named = store.db.rows("SELECT path, display FROM versions WHERE id IN (SELECT MAX(id) FROM versions GROUP BY path)")
        wants_path = filters.path_test(settings.workspace)  # (an absolute glob: the file's absolute path)
        wanted = [path for path, display in named if wants_path(dec(display))]
        if not wanted:
            return ActivityLog((), False)
        where.append(f"path IN ({', '.join('?' * len(wanted))})")
        params.extend(wanted)
    rows = store.db.rows(
        "SELECT display, version, time, size, origin, agent, session, previous FROM versions"
        + (f" WHERE {' AND '.join(where)}" if where else "")
        + " ORDER BY time DESC, id DESC LIMIT ?", (*params, min(limit, _UNBOUNDED) + 1))
    contents = _Contents(store)
    entries = tuple(_logged(row, contents) for row in rows[:limit])
    return ActivityLog(entries, len(rows) > limit)


def _start_of(day: date, *, days_after: int = 0) -> float | None:
    """The first moment of ``day`` (or of the day ``days_after`` it) in the caller's local time, as search
    reads a day, in seconds since the epoch. None past the calendar's ends (the day after 9999-12-31;
    0001-01-01, whose local midnight the clock cannot name): every version lies within them, so
    such a bound bounds nothing."""
    try:
        return local_midnight(day + timedelta(days=days_after))
    except (OverflowError, ValueError):
        return None


def _logged(row: tuple, contents: _Contents) -> LoggedVersion:
    display, version, when, size, origin, agent, session, previous = row
    version = logged_version(version)
    added, removed = contents.changed_lines(previous, version, origin)
    return LoggedVersion(dec(display), iso_time(when), origin, dec(agent) if agent is not None else None,
                         dec(session) if session is not None else None, version, previous, size, added, removed)


class _Contents:
    """The stored bytes of a page's versions, each read once (a page often names one twice)."""

    def __init__(self, store: HistoryStore):
        self.store = store
        self.seen: dict[str, bytes | None] = {}

    def get(self, version: str) -> bytes | None:
        if version not in self.seen:
            self.seen[version] = self.store.objects.read_bytes(version, use=False)
        return self.seen[version]

    def changed_lines(self, previous: str | None, version: str, origin: str) -> tuple[int | None, int | None]:
        old: bytes | None
        new: bytes | None
        if origin == REMOVE:  # the version is what the file held when it left: every line of it is removed
            old, new = self.get(version), b""
        else:  # a path's first version (or one after a removal) adds every line
            old, new = b"" if previous is None else self.get(previous), self.get(version)
        if new is None or old is None:
            return None, None
        return changed_lines(old, new)


def changed_lines(old: bytes, new: bytes) -> tuple[int, int]:
    """Lines added and removed from ``old`` to ``new``: the + and - lines ``read --diff`` shows
    (the same lines, decoded the same way, the same matcher)."""
    a, b = lines_of(decode_lossy(old)[0]), lines_of(decode_lossy(new)[0])
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b).get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed

