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
from typing import NamedTuple

import xxhash

from ..fsutil.atomic import atomic_write_bytes

AGENT_WRITE = "agent-write"
EXTERNAL_EDIT = "external-edit"
RESTORE = "restore"
ORIGINS = (AGENT_WRITE, EXTERNAL_EDIT, RESTORE)


class Entry(NamedTuple):
    """One logged version (a NamedTuple: ``read`` loads this module and must start fast)."""

    version: str
    time: float  # seconds since the epoch
    size: int
    origin: str  # one of ORIGINS; a first sighting is an external edit
    agent: str | None  # the agent that wrote or restored it; None for an outside edit

    def to_json(self, *, available: bool, current: bool) -> dict:
        """The ``history --json`` entry; ``hash`` repeats ``version`` (the issue's name for it)."""
        return {
            "version": self.version,
            "time": iso_time(self.time),
            "size": self.size,
            "hash": self.version,
            "origin": self.origin,
            "agent": self.agent,
            "available": available,
            "current": current,
        }


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

    def log_path(self, abs_path: str) -> str:
        key = xxhash.xxh3_128_hexdigest(abs_path.encode("utf-8", "surrogateescape"))
        return os.path.join(self.folder, f"{key}.json")

    def entries(self, abs_path: str) -> list[Entry]:
        """The path's entries, oldest first (empty when never seen)."""
        data = self._load(self.log_path(abs_path))
        if data is None or data.get("absPath") != abs_path:
            return []
        return [_entry(item) for item in data.get("entries", []) if _valid(item)]

    def latest(self, abs_path: str) -> Entry | None:
        entries = self.entries(abs_path)
        return entries[-1] if entries else None

    def append(self, abs_path: str, display: str, entry: Entry, keep: int) -> list[Entry]:
        """Add ``entry``; returns the entries retention dropped."""
        entries = self.entries(abs_path) + [entry]
        dropped = entries[:-keep] if len(entries) > keep else []
        kept = entries[len(dropped):]
        payload = {"absPath": abs_path, "path": display, "entries": [e._asdict() for e in kept]}
        os.makedirs(self.folder, exist_ok=True)
        atomic_write_bytes(self.log_path(abs_path), json.dumps(payload, ensure_ascii=True).encode("ascii"), 0o644)
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
                data = self._load(os.path.join(self.folder, name)) or {}
                versions.update(item["version"] for item in data.get("entries", []) if _valid(item))
        return versions

    @staticmethod
    def _load(path: str) -> dict | None:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def _valid(item) -> bool:
    return isinstance(item, dict) and isinstance(item.get("version"), str) and item.get("origin") in ORIGINS


def _entry(item: dict) -> Entry:
    return Entry(item["version"], float(item.get("time", 0)), int(item.get("size", 0)), item["origin"], item.get("agent"))
