"""openclaw-memory: find, read, index and search an AI agent's Markdown memory.

The stable public surface (like OpenClaw's plugin SDK facade). Every function takes resolved
:class:`Settings` and returns frozen data classes; errors are :class:`MemoryToolError` subclasses
with messages written for the user::

    from openclaw_memory import Overrides as Overrides, resolve_settings as resolve_settings, list_memory_files as list_memory_files, read_memory as read_memory

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
    from .api import build_prompt as build_prompt
    from .api import file_history as file_history
    from .api import file_states as file_states
    from .api import list_memory_files as list_memory_files
    from .api import read_memory as read_memory
    from .api import read_memory_diff as read_memory_diff
    from .api import restore as restore
    from .api import write_memory as write_memory
    from .doctor.model import Repair as Repair
    from .doctor.runner import DoctorReport as DoctorReport
    from .doctor.runner import run_doctor as run_doctor
    from .errors import ConfigError as ConfigError
    from .errors import IndexMissing as IndexMissing
    from .errors import LockTimeout as LockTimeout
    from .errors import MemoryToolError as MemoryToolError
    from .errors import MissingExtra as MissingExtra
    from .errors import PathRefused as PathRefused
    from .errors import UsageError as UsageError
    from .errors import WorkspaceError as WorkspaceError
    from .errors import WriteBlocked as WriteBlocked
    from .files.paths import is_memory_path as is_memory_path
    from .files.read import ReadResult as ReadResult
    from .files.root import RootMemoryFiles as RootMemoryFiles
    from .files.root import detect_root_memory_files as detect_root_memory_files
    from .files.root import resolve_canonical_root_file as resolve_canonical_root_file
    from .files.scan import MemoryFile as MemoryFile
    from .files.scan import ScanResult as ScanResult
    from .findings import Finding as Finding
    from .history.diff import DiffRead as DiffRead
    from .history.guard import IndexUpdate as IndexUpdate
    from .history.guard import WriteResult as WriteResult
    from .history.listing import VersionHistory as VersionHistory
    from .history.report import FileState as FileState
    from .history.report import StateReport as StateReport
    from .index.api import CollectionInfo as CollectionInfo
    from .index.api import MemoryIndex as MemoryIndex
    from .index.search import SearchHit as SearchHit
    from .index.search import SearchResult as SearchResult
    from .index.status import CollectionStatus as CollectionStatus
    from .index.status import IndexStatus as IndexStatus
    from .index.sync import SyncSummary as SyncSummary
    from .prompt.loader import PromptSection as PromptSection
    from .settings import Overrides as Overrides
    from .settings import Settings as Settings
    from .settings import resolve_settings as resolve_settings
    from .types import FileStateName as FileStateName
    from .types import RepairStatus as RepairStatus
    from .types import SearchMode as SearchMode
    from .types import Severity as Severity
    from .types import WriteAction as WriteAction
    from .watchdog.heartbeat import HeartbeatResult as HeartbeatResult
    from .watchdog.heartbeat import heartbeat as heartbeat
    from .watchdog.snapshot import SnapshotInfo as SnapshotInfo
    from .watchdog.snapshot import take_snapshot as take_snapshot
    from .watchdog.verify import VerifyResult as VerifyResult
    from .watchdog.verify import verify_workspace as verify_workspace

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
    "Finding": ".findings",
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

__all__ = [
    "CollectionInfo",
    "CollectionStatus",
    "ConfigError",
    "DiffRead",
    "DoctorReport",
    "FileState",
    "FileStateName",
    "Finding",
    "HeartbeatResult",
    "IndexMissing",
    "IndexStatus",
    "IndexUpdate",
    "LockTimeout",
    "MemoryFile",
    "MemoryIndex",
    "MemoryToolError",
    "MissingExtra",
    "Overrides",
    "PathRefused",
    "PromptSection",
    "ReadResult",
    "Repair",
    "RepairStatus",
    "RootMemoryFiles",
    "ScanResult",
    "SearchHit",
    "SearchMode",
    "SearchResult",
    "Settings",
    "Severity",
    "SnapshotInfo",
    "StateReport",
    "SyncSummary",
    "UsageError",
    "VerifyResult",
    "VersionHistory",
    "WorkspaceError",
    "WriteAction",
    "WriteBlocked",
    "WriteResult",
    "build_prompt",
    "detect_root_memory_files",
    "file_history",
    "file_states",
    "heartbeat",
    "is_memory_path",
    "list_memory_files",
    "read_memory",
    "read_memory_diff",
    "resolve_canonical_root_file",
    "resolve_settings",
    "restore",
    "run_doctor",
    "take_snapshot",
    "verify_workspace",
    "write_memory",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'openclaw_memory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
