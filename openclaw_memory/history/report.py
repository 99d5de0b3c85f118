"""``state``: every memory file's state for one agent (see :mod:`.states` for the four states)."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from ..files.paths import display_path
from ..files.scan import scan_memory_files
from ..fsutil.atomic import sync_filesystem
from ..fsutil.safeopen import NotRegularFile
from .states import STATES, ReadRecords, Seen, state_of
from .store import HistoryStore, FileVersion
from .versions import iso_time


@dataclass(frozen=True)
class FileState:
    path: str
    abs_path: str
    state: str
    version: str | None  # what the file holds now; None when it no longer exists
    seen_version: str | None  # what this agent last read or wrote
    seen_how: str | None
    seen_time: float | None
    size: int | None

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "state": self.state,
            "exists": self.version is not None,
            "version": self.version,
            "size": self.size,
            "seenVersion": self.seen_version,
            "seenAs": self.seen_how,
            "seenAt": iso_time(self.seen_time) if self.seen_time is not None else None,
        }


@dataclass(frozen=True)
class StateReport:
    agent: str
    workspace: str
    files: tuple[FileState, ...]

    def counts(self) -> dict[str, int]:
        return {name: sum(1 for f in self.files if f.state == name) for name in STATES}

    def to_json(self) -> dict:
        return {
            "agent": self.agent,
            "workspace": self.workspace,
            "counts": self.counts(),
            "files": [f.to_json() for f in self.files],
        }


def file_states(settings) -> StateReport:
    """Every Markdown memory file's state for ``settings.agent``, plus files it read that are gone.

    Hashing a file is a sighting: new versions go into the history (this is a verify).
    """
    scan = scan_memory_files(settings.workspace, extra_paths=settings.extra_paths, multimodal=False, agent=settings.agent)
    store = HistoryStore.for_settings(settings)
    workspace = str(settings.workspace)
    out: list[FileState] = []
    settled = time.time_ns() - _RACY_NS
    with store.lock():
        records = ReadRecords(store, settings.agent).load()
        known = _load_sightings(store)
        seen: dict[str, list] = {}
        listed = set()
        # Sightings are flushed to disk once, at the end, not file by file (see sync_filesystem).
        store.objects.durable = store.log.durable = False
        try:
            for f in scan.files:
                if f.kind != "markdown":
                    continue
                listed.add(f.abs_path)
                key = _stat_key(f.abs_path)
                cached = known.get(f.abs_path)
                if key is not None and cached is not None and cached[:4] == key:
                    snap = FileVersion(cached[4], key[0])  # hashed and logged already, unchanged since
                else:
                    try:
                        snap = store.observe_file(f.abs_path, f.path)
                    except (NotRegularFile, PermissionError):
                        continue
                    if snap is not None and key is not None and key[1] < settled and _stat_key(f.abs_path) == key:
                        key = [*key, snap.version]
                    else:
                        key = None
                if key is not None:
                    seen[f.abs_path] = key if len(key) == 5 else [*key, snap.version]
                out.append(_file_state(f.path, f.abs_path, records.get(f.abs_path), snap))
        finally:
            store.objects.durable = store.log.durable = True
            store.objects.flush()
            if os.path.isdir(store.root):
                sync_filesystem(store.root)
        if seen != known:
            _save_sightings(store, seen)
        for abs_path, seen in records.items():
            if abs_path in listed or os.path.lexists(abs_path):
                continue
            out.append(_file_state(display_path(abs_path, workspace), abs_path, seen, None))
    return StateReport(settings.agent, workspace, tuple(s for s in out if s.state is not None))


# ``state`` reads a file again only when its stat moved since it was last hashed: the cost of a
# run follows what changed. A file modified within this many ns of the scan is hashed every
# time (an edit in the same clock tick would keep the stat).
_RACY_NS = 2_000_000_000
SIGHTINGS = "sightings.json"


def _stat_key(abs_path: str) -> list | None:
    try:
        st = os.lstat(abs_path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def _load_sightings(store: HistoryStore) -> dict[str, list]:
    """{path: [size, mtime_ns, ctime_ns, inode, version]}; a damaged cache is simply rebuilt."""
    try:
        with open(os.path.join(store.root, SIGHTINGS), "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        p: v for p, v in data.items()
        if isinstance(v, list) and len(v) == 5 and all(isinstance(x, int) for x in v[:4]) and isinstance(v[4], str)
    }


def _save_sightings(store: HistoryStore, data: dict[str, list]) -> None:
    path = os.path.join(store.root, SIGHTINGS)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(store.root, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass  # only a cache: the next run hashes again


def _file_state(path: str, abs_path: str, seen: Seen | None, snap: FileVersion | None) -> FileState:
    current = snap.version if snap else None
    return FileState(
        path,
        abs_path,
        state_of(seen, current),
        current,
        seen.version if seen else None,
        seen.how if seen else None,
        seen.time if seen else None,
        snap.size if snap else None,
    )
