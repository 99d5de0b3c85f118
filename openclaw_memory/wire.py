"""The API's own result objects as JSON, rebuilt exactly on the other side.

The service sends its answers in this form, so the CLI renders the same frozen dataclasses
whether they were computed in-process or by the service (its output is identical either way);
the idempotency store keeps a write's first result in it. Values are JSON with a few tagged forms:
``{"~c": "module:Class", "f": {...}}`` a dataclass, ``{"~n": ..., "v": [...]}`` a NamedTuple,
``{"~t": [...]}`` a tuple, ``{"~p": "..."}`` a path, ``{"~b": "base64"}`` bytes, and
``{"~m": {...}}`` a dict (so a dict whose keys look like tags stays a dict). Floats survive
JSON exactly (shortest repr). Only the data types listed in :data:`TYPES` are rebuilt: data never
names code (no module, function or class outside that closed list is ever looked up).

Standard library only: the CLI imports this on its fast path.
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
from pathlib import PurePath

# Every type that may be rebuilt from the wire or the data dir: the package's public data types
# (dataclasses and NamedTuples outside the front-ends); tests/test_wire.py keeps it complete.
TYPES = frozenset({
    "openclaw_memory.doctor.journal:JournalRecord",
    "openclaw_memory.doctor.model:Repair",
    "openclaw_memory.doctor.model:RepairSpec",
    "openclaw_memory.doctor.runner:DoctorReport",
    "openclaw_memory.files.citation:Citation",
    "openclaw_memory.files.read:ReadResult",
    "openclaw_memory.files.read:ResolvedPath",
    "openclaw_memory.files.root:RootEntry",
    "openclaw_memory.files.root:RootMemoryFiles",
    "openclaw_memory.files.scan:MemoryFile",
    "openclaw_memory.files.scan:Skipped",
    "openclaw_memory.files.scan:ScanResult",
    "openclaw_memory.findings:Finding",
    "openclaw_memory.history.config:HistoryConfig",
    "openclaw_memory.history.diff:DiffRead",
    "openclaw_memory.history.guard:IndexUpdate",
    "openclaw_memory.history.guard:WriteResult",
    "openclaw_memory.history.idempotency:ReplayedWrite",
    "openclaw_memory.history.listing:VersionHistory",
    "openclaw_memory.history.report:FileState",
    "openclaw_memory.history.report:Unreadable",
    "openclaw_memory.history.report:StateReport",
    "openclaw_memory.history.states:Seen",
    "openclaw_memory.history.store:FileVersion",
    "openclaw_memory.history.versions:Entry",
    "openclaw_memory.index.api:CollectionInfo",
    "openclaw_memory.index.bm25:TermStats",
    "openclaw_memory.index.chunking:Chunk",
    "openclaw_memory.index.chunking:FrontMatter",
    "openclaw_memory.index.collections:Collection",
    "openclaw_memory.index.config:IndexConfig",
    "openclaw_memory.index.filters:SearchFilters",
    "openclaw_memory.index.manifest:FileEntry",
    "openclaw_memory.index.manifest:Manifest",
    "openclaw_memory.index.manifest:Diff",
    "openclaw_memory.index.manifest:FileContent",
    "openclaw_memory.index.migrate:CollectionCopy",
    "openclaw_memory.index.migrate:MigrationResult",
    "openclaw_memory.index.results:SearchHit",
    "openclaw_memory.index.results:SearchResult",
    "openclaw_memory.index.search:Ranking",
    "openclaw_memory.index.snippets:Passage",
    "openclaw_memory.index.status:CollectionStatus",
    "openclaw_memory.index.status:IndexStatus",
    "openclaw_memory.index.store.base:PointData",
    "openclaw_memory.index.store.base:Hit",
    "openclaw_memory.index.store.server_config:ServerConfig",
    "openclaw_memory.index.sync:SyncSummary",
    "openclaw_memory.index.sync:SyncProgress",
    "openclaw_memory.prompt.bootstrap:Injected",
    "openclaw_memory.prompt.loader:PromptCut",
    "openclaw_memory.prompt.loader:PromptSection",
    "openclaw_memory.prompt.startup:DailyNote",
    "openclaw_memory.prompt.startup:Prelude",
    "openclaw_memory.serve.core:ServiceInfo",
    "openclaw_memory.serve.service:ServiceStarted",
    "openclaw_memory.serve.service:ServiceSummary",
    "openclaw_memory.settings:ReadLimits",
    "openclaw_memory.settings:StartupContext",
    "openclaw_memory.settings:PromptLimits",
    "openclaw_memory.settings:Settings",
    "openclaw_memory.settings:Overrides",
    "openclaw_memory.watch.changes:FileChange",
    "openclaw_memory.watch.feeds:Message",
    "openclaw_memory.watch.targets:Target",
    "openclaw_memory.watch.targets:Targets",
    "openclaw_memory.watch.watcher:WatchStarted",
    "openclaw_memory.watch.watcher:WatchSummary",
    "openclaw_memory.watchdog.compare:Changed",
    "openclaw_memory.watchdog.compare:Delta",
    "openclaw_memory.watchdog.heartbeat:HeartbeatResult",
    "openclaw_memory.watchdog.ignore:IgnoreRules",
    "openclaw_memory.watchdog.observe:Observation",
    "openclaw_memory.watchdog.snapshot:SnapshotInfo",
    "openclaw_memory.watchdog.store:Table",
    "openclaw_memory.watchdog.store:IndexEntry",
    "openclaw_memory.watchdog.verify:VerifyResult",
})


def encode(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        return {"~c": f"{cls.__module__}:{cls.__qualname__}", "f": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        cls = type(value)
        return {"~n": f"{cls.__module__}:{cls.__qualname__}", "v": [encode(v) for v in value]}
    if isinstance(value, tuple):
        return {"~t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"~m": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, PurePath):
        return {"~p": str(value)}
    if isinstance(value, (bytes, bytearray)):
        return {"~b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (set, frozenset)):
        return {"~t": [encode(v) for v in sorted(value)]}
    raise TypeError(f"cannot send a {type(value).__name__} over the service socket")


def _class(name: str) -> type:
    """The data type ``name`` stands for: one of :data:`TYPES`, nothing else, whatever the bytes."""
    if not isinstance(name, str) or name not in TYPES:
        raise ValueError(f"refusing to rebuild {str(name)[:100]!r}: not one of the product's data types")
    module, _, qualname = name.partition(":")
    cls = getattr(importlib.import_module(module), qualname)
    if not (isinstance(cls, type) and (dataclasses.is_dataclass(cls) or issubclass(cls, tuple))):
        raise ValueError(f"refusing to rebuild {name}: not a data type")
    return cls


def decode(value):
    if isinstance(value, list):
        return [decode(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "~c" in value:
        cls = _class(value["~c"])
        fields = {k: decode(v) for k, v in value["f"].items()}
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        obj = cls(**{k: v for k, v in fields.items() if k in init})
        for k, v in fields.items():
            if k not in init:
                object.__setattr__(obj, k, v)
        return obj
    if "~n" in value:
        return _class(value["~n"])(*(decode(v) for v in value["v"]))
    if "~t" in value:
        return tuple(decode(v) for v in value["~t"])
    if "~m" in value:
        return {k: decode(v) for k, v in value["~m"].items()}
    if "~p" in value:
        from pathlib import Path

        return Path(value["~p"])
    if "~b" in value:
        return base64.b64decode(value["~b"])
    raise ValueError(f"unknown value on the service socket: {sorted(value)}")
