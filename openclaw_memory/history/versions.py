"""The per-path version log: every version of a file the product saw, oldest first.

One small JSON file per memory path under ``logs/`` (named by a hash of the absolute
path). An entry is one sighting of a version: the same bytes seen again later (a
revert) get a new entry and share the stored object. Retention keeps the newest
``keep_per_path`` entries; older ones are dropped from the log.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import NamedTuple

import xxhash

from ..errors import StateDamaged
from ..fsutil.atomic import atomic_write_bytes

AGENT_WRITE = "agent-write"
EXTERNAL_EDIT = "external-edit"
RESTORE = "restore"
DOCTOR_FIX = "doctor-fix"  # a repair of `doctor --fix` (a legacy root merged into MEMORY.md)
ORIGINS = (AGENT_WRITE, EXTERNAL_EDIT, RESTORE, DOCTOR_FIX)


class Entry(NamedTuple):
    """One logged version (a NamedTuple: ``read`` loads this module and must start fast)."""

    version: str
    time: float  # seconds since the epoch
    size: int
    origin: str  # one of ORIGINS; a first sighting is an external edit
    agent: str | None  # the agent that wrote or restored it; None for an outside edit


def iso_time(seconds: float) -> str:
    """UTC, millisecond precision: ``2026-11-30T13:45:12.123Z``."""
    whole = int(seconds)
    millis = int(round((seconds - whole) * 1000))
    if millis == 1000:
        whole, millis = whole + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def short(version: str | None) -> str:
    """The short form shown to people and in diff labels (12 hex characters)."""
    return version[:12] if version else "none"


class VersionLog:
    """The logs of every path, in ``folder``. Callers that append hold the history lock."""

    def __init__(self, folder: str):
        self.folder = folder
        self.durable = True  # see ObjectStore.durable

    def log_path(self, abs_path: str) -> str:
        key = xxhash.xxh3_128_hexdigest(abs_path.encode("utf-8", "surrogateescape"))
        return os.path.join(self.folder, f"{key}.json")

    def entries(self, abs_path: str) -> list[Entry]:
        """The path's entries, oldest first (empty when never seen).

        Raises StateDamaged when the log cannot be read: listing it must not pretend the
        file has no history (``doctor --fix`` sets such a log aside).
        """
        log = self.log_path(abs_path)
        try:
            return self._entries(log, abs_path)
        except _LogDamaged as exc:
            raise StateDamaged(
                f"the history log of {abs_path} ({log}) is damaged ({exc}); "
                "`openclaw-memory doctor --fix` sets it aside and starts a new log"
            ) from None

    def latest(self, abs_path: str) -> Entry | None:
        """The newest entry; a damaged log is set aside first (kept under ``damaged/``), so a
        write or a sighting still works and logs a fresh first version."""
        entries = self._tolerant_entries(abs_path)
        return entries[-1] if entries else None

    def append(self, abs_path: str, display: str, entry: Entry, keep: int) -> list[Entry]:
        """Add ``entry``; returns the entries retention dropped."""
        entries = self._tolerant_entries(abs_path) + [entry]
        dropped = entries[:-keep] if len(entries) > keep else []
        kept = entries[len(dropped):]
        payload = {"absPath": abs_path, "path": display, "entries": [e._asdict() for e in kept]}
        os.makedirs(self.folder, exist_ok=True)
        data = json.dumps(payload, ensure_ascii=True).encode("ascii")
        if self.durable:
            atomic_write_bytes(self.log_path(abs_path), data, 0o644)
        else:
            path = self.log_path(abs_path)
            tmp = f"{path}.{os.getpid()}.{os.urandom(3).hex()}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        return dropped

    def all_versions(self) -> set[str]:
        """Every version any log still lists (what eviction of dropped entries must keep)."""
        versions: set[str] = set()
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return versions
        for name in names:
            if name.endswith(".json"):
                try:
                    data = self._load(os.path.join(self.folder, name)) or {}
                except _LogDamaged:
                    continue
                versions.update(item["version"] for item in data.get("entries", []) if _valid(item))
        return versions

    def damaged_logs(self) -> list[tuple[str, str]]:
        """(log file, reason) for every log that cannot be read. Only reads."""
        try:
            names = sorted(os.listdir(self.folder))
        except FileNotFoundError:
            return []
        found = []
        for name in names:
            if name.endswith(".json"):
                path = os.path.join(self.folder, name)
                reason = self.damage(path)
                if reason is not None:
                    found.append((path, reason))
        return found

    def damage(self, log: str) -> str | None:
        """Why the log file ``log`` cannot be used, or None (also when it does not exist)."""
        try:
            self._load(log)
        except _LogDamaged as exc:
            return str(exc)
        return None

    def set_aside(self, log: str) -> Path | None:
        from ..fsutil.setaside import set_aside

        return set_aside(Path(os.path.dirname(os.path.dirname(self.folder))), log)

    def _tolerant_entries(self, abs_path: str) -> list[Entry]:
        log = self.log_path(abs_path)
        try:
            return self._entries(log, abs_path)
        except _LogDamaged:
            self.set_aside(log)
            return []

    def _entries(self, log: str, abs_path: str) -> list[Entry]:
        data = self._load(log)
        if data is None or data.get("absPath") != abs_path:
            return []
        return [_entry(item) for item in data.get("entries", []) if _valid(item)]

    @staticmethod
    def _load(path: str) -> dict | None:
        """The log's JSON; None when there is none. Raises _LogDamaged when it cannot be read."""
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise _LogDamaged(exc.strerror or str(exc)) from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise _LogDamaged(f"not UTF-8 at byte {exc.start}") from None
        except ValueError as exc:
            raise _LogDamaged(f"not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("absPath"), str) or not isinstance(data.get("entries"), list):
            raise _LogDamaged("not a history log")
        if not all(_valid(item) for item in data["entries"]):
            raise _LogDamaged("an entry is malformed")
        return data


class _LogDamaged(Exception):
    pass


def _valid(item) -> bool:
    return (
        isinstance(item, dict)
        and isinstance(item.get("version"), str)
        and item.get("origin") in ORIGINS
        and isinstance(item.get("time", 0), (int, float))
        and isinstance(item.get("size", 0), int)
        and isinstance(item.get("agent"), (str, type(None)))
    )


def _entry(item: dict) -> Entry:
    return Entry(item["version"], float(item.get("time", 0)), int(item.get("size", 0)), item["origin"], item.get("agent"))
