"""openclaw-memory: find, read, index and search an AI agent's Markdown memory.

The stable public surface (like OpenClaw's plugin SDK facade). Every function takes resolved
:class:`Settings` and returns frozen data classes; errors are :class:`MemoryToolError` subclasses
with messages written for the user::

    from openclaw_memory import Overrides, resolve_settings, list_memory_files, read_memory

    settings = resolve_settings(Overrides(workspace="~/agent"))
    for f in list_memory_files(settings).files:
        print(f.path, f.size)
    print(read_memory(settings, "MEMORY.md", lines=20).text)

Names load on first use, so importing the package costs only what is touched; the
``TYPE_CHECKING`` block below shows type checkers the same names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api import build_prompt, file_history, file_states, list_memory_files, read_memory, read_memory_diff, restore, write_memory
    from .doctor.model import Finding, Repair
    from .doctor.runner import DoctorReport, run_doctor
    from .errors import ConfigError, IndexMissing, LockTimeout, MemoryToolError, MissingExtra, PathRefused, UsageError, WorkspaceError, WriteBlocked
    from .files.paths import is_memory_path
    from .files.read import ReadResult
    from .files.root import RootMemoryFiles, detect_root_memory_files, resolve_canonical_root_file
    from .files.scan import MemoryFile, ScanResult
    from .history.diff import DiffRead
    from .history.guard import IndexUpdate, WriteResult
    from .history.listing import VersionHistory
    from .history.report import FileState, StateReport
    from .index.api import CollectionInfo, MemoryIndex
    from .index.search import SearchHit, SearchResult
    from .index.status import CollectionStatus, IndexStatus
    from .index.sync import SyncSummary
    from .prompt.loader import PromptSection
    from .settings import Overrides, Settings, resolve_settings
    from .types import FileStateName, RepairStatus, SearchMode, Severity, WriteAction
    from .watchdog.heartbeat import HeartbeatResult, heartbeat
    from .watchdog.snapshot import SnapshotInfo, take_snapshot
    from .watchdog.verify import VerifyResult, verify_workspace

# Public name -> module that defines it.
_EXPORTS = {
    "build_prompt": ".api",
    "file_history": ".api",
    "file_states": ".api",
    "list_memory_files": ".api",
    "read_memory": ".api",
    "read_memory_diff": ".api",
    "restore": ".api",
    "write_memory": ".api",
    "Finding": ".doctor.model",
    "Repair": ".doctor.model",
    "DoctorReport": ".doctor.runner",
    "run_doctor": ".doctor.runner",
    "ConfigError": ".errors",
    "IndexMissing": ".errors",
    "LockTimeout": ".errors",
    "MemoryToolError": ".errors",
    "MissingExtra": ".errors",
    "PathRefused": ".errors",
    "UsageError": ".errors",
    "WorkspaceError": ".errors",
    "WriteBlocked": ".errors",
    "is_memory_path": ".files.paths",
    "ReadResult": ".files.read",
    "RootMemoryFiles": ".files.root",
    "detect_root_memory_files": ".files.root",
    "resolve_canonical_root_file": ".files.root",
    "MemoryFile": ".files.scan",
    "ScanResult": ".files.scan",
    "DiffRead": ".history.diff",
    "IndexUpdate": ".history.guard",
    "WriteResult": ".history.guard",
    "VersionHistory": ".history.listing",
    "FileState": ".history.report",
    "StateReport": ".history.report",
    "CollectionInfo": ".index.api",
    "MemoryIndex": ".index.api",
    "SearchHit": ".index.search",
    "SearchResult": ".index.search",
    "CollectionStatus": ".index.status",
    "IndexStatus": ".index.status",
    "SyncSummary": ".index.sync",
    "PromptSection": ".prompt.loader",
    "Overrides": ".settings",
    "Settings": ".settings",
    "resolve_settings": ".settings",
    "FileStateName": ".types",
    "RepairStatus": ".types",
    "SearchMode": ".types",
    "Severity": ".types",
    "WriteAction": ".types",
    "HeartbeatResult": ".watchdog.heartbeat",
    "heartbeat": ".watchdog.heartbeat",
    "SnapshotInfo": ".watchdog.snapshot",
    "take_snapshot": ".watchdog.snapshot",
    "VerifyResult": ".watchdog.verify",
    "verify_workspace": ".watchdog.verify",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'openclaw_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
