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

import json
import os
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import xxhash

from ..fsutil.atomic import unlink_quietly
from .store import FileVersion, HistoryStore

if TYPE_CHECKING:
    from ..settings import Settings

READ_FRESH = "read_fresh"
READ_STALE = "read_stale"
DISCOVERED_UNREAD = "discovered_unread"
WRITTEN_UNREAD = "written_unread"
STATES = (READ_FRESH, READ_STALE, DISCOVERED_UNREAD, WRITTEN_UNREAD)

READ = "read"
WRITE = "write"


class Seen(NamedTuple):
    """The version an agent last read or wrote."""

    version: str
    size: int
    time: float
    how: str  # READ | WRITE


class ReadRecords:
    """One agent's (or one session's) records; changed under the history lock.

    ``<history>/reads/<agent>-<hash>.json`` for the plain CLI, and
    ``<history>/reads/<agent>-<hash>.session-<session>-<hash>.json`` for a session.
    """

    def __init__(self, store: HistoryStore, agent: str, session: str | None = None):
        self.agent = agent
        self.session = session
        name = _slug(agent)
        if session is not None:
            name += f".session-{_slug(session)}"
        self.path = os.path.join(store.root, "reads", f"{name}.json")
        self.store_root = store.root

    @classmethod
    def for_settings(cls, store: HistoryStore, settings: Settings) -> ReadRecords:
        return cls(store, settings.agent, getattr(settings, "session", None))

    def load(self) -> dict[str, Seen]:
        """The records; a damaged file is set aside (kept under ``damaged/``) and counts as no record,
        so the guard asks the agent to read again rather than trust it. Call under the history lock."""
        try:
            return self._parse()
        except _RecordsDamaged:
            from ..fsutil.setaside import set_aside

            set_aside(Path(os.path.dirname(self.store_root)), self.path)
            return {}

    def damage(self) -> str | None:
        """Why the records file cannot be used, or None. Only reads."""
        try:
            self._parse()
        except _RecordsDamaged as exc:
            return str(exc)
        return None

    def _parse(self) -> dict[str, Seen]:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise _RecordsDamaged(exc.strerror or str(exc)) from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except ValueError as exc:  # UnicodeDecodeError included
            raise _RecordsDamaged(f"not JSON: {exc}") from None
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            raise _RecordsDamaged("not a read-records file")
        out = {}
        for abs_path, item in files.items():
            if not (
                isinstance(item, dict)
                and isinstance(item.get("version"), str)
                and item.get("how") in (READ, WRITE)
                and isinstance(item.get("size", 0), int)
                and isinstance(item.get("time", 0), (int, float))
            ):
                raise _RecordsDamaged(f"the record of {abs_path} is malformed")
            out[abs_path] = Seen(item["version"], int(item.get("size", 0)), float(item.get("time", 0)), item["how"])
        return out

    def get(self, abs_path: str) -> Seen | None:
        return self.load().get(abs_path)

    def put(self, abs_path: str, snapshot: FileVersion, how: str) -> Seen:
        seen = Seen(snapshot.version, snapshot.size, time.time(), how)
        records = self.load()
        records[abs_path] = seen
        self._save(records)
        return seen

    def forget(self, abs_path: str) -> None:
        records = self.load()
        if records.pop(abs_path, None) is not None:
            self._save(records)

    def _save(self, records: dict[str, Seen]) -> None:
        # Replaced atomically but not fsynced: a record lost in a crash only makes the
        # agent read the file again (the guard then blocks, never lets a stale write through).
        payload = {
            "agent": self.agent,
            "session": self.session,
            "files": {p: {"version": s.version, "size": s.size, "time": s.time, "how": s.how} for p, s in sorted(records.items())},
        }
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = f"{self.path}.{os.getpid()}.{os.urandom(3).hex()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(payload, fh, ensure_ascii=True)  # a path that is not UTF-8 round-trips as \udcXX
            os.replace(tmp, self.path)
        except BaseException:
            unlink_quietly(tmp)  # a full disk leaves no temp file behind
            raise


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "agent"
    return f"{slug}-{xxhash.xxh3_64_hexdigest(name.encode('utf-8'))[:8]}"


def forget_session(store: HistoryStore, agent: str, session: str) -> None:
    """Drop a finished session's records (an MCP session that ended never writes again)."""
    try:
        os.unlink(ReadRecords(store, agent, session).path)
    except FileNotFoundError:
        pass


class _RecordsDamaged(Exception):
    pass


def state_of(seen: Seen | None, current: str | None) -> str | None:
    """The state of a file whose content is now ``current`` (None: it does not exist)."""
    if seen is None:
        return DISCOVERED_UNREAD if current is not None else None
    if current != seen.version:
        return READ_STALE
    return WRITTEN_UNREAD if seen.how == WRITE else READ_FRESH


def record_read(settings: Settings, abs_path: str, display: str, snapshot: FileVersion | None) -> None:
    """Record that ``settings.agent`` (its ``settings.session``) read ``snapshot`` of the file (None: it found the file missing).

    The version's bytes are kept in the store (for ``read --diff`` and history): the
    file is read again and kept only if it still hashes to the version read.
    """
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.lock():
        if snapshot is None:
            records.forget(abs_path)
            return
        store.observe(abs_path, display, snapshot)
        records.put(abs_path, snapshot, READ)
