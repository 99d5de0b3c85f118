"""openclaw-memory: find, read, index and search an AI agent's Markdown memory.

The stable public surface. :func:`open_memory` gives an agent's :class:`Memory` (the same door the
CLI, the MCP server and the service use: in this process, or through the workspace's service when
one runs); its methods return frozen data classes, and errors are :class:`MemoryToolError`
subclasses with messages written for the user::

    from openclaw_memory import Overrides, open_memory, resolve_settings

    memory = open_memory(resolve_settings(Overrides(workspace="~/agent")))
    for f in memory.files().files:
        print(f.path, f.size)
    print(memory.read("MEMORY.md", lines=20).text)

Every name loads on first use (the result types' modules bring parts of the history and the index);
the ``TYPE_CHECKING`` block shows type checkers the same names.
"""

from __future__ import annotations

import importlib

# (not typing's: loading typing took a tenth of a second, inside the console script's Ctrl-C window)
TYPE_CHECKING = False

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .archive.export import ExportResult as ExportResult
    from .archive.importer import ImportResult as ImportResult
    from .doctor.runner import DoctorReport as DoctorReport
    from .errors import BadValue as BadValue
    from .errors import ConfigError as ConfigError
    from .errors import DiskFull as DiskFull
    from .errors import IndexMissing as IndexMissing
    from .errors import LockTimeout as LockTimeout
    from .errors import MemoryClosed as MemoryClosed
    from .errors import MemoryToolError as MemoryToolError
    from .errors import MissingExtra as MissingExtra
    from .errors import PathRefused as PathRefused
    from .errors import UsageError as UsageError
    from .errors import WorkspaceError as WorkspaceError
    from .errors import WriteBlocked as WriteBlocked
    from .files.read import ReadResult as ReadResult
    from .files.scan import MemoryFile as MemoryFile
    from .files.scan import ScanResult as ScanResult
    from .findings import Finding as Finding
    from .history.diff import DiffRead as DiffRead
    from .history.guard import IndexUpdate as IndexUpdate
    from .history.guard import WriteResult as WriteResult
    from .history.inventory import ListedFile as ListedFile
    from .history.inventory import MemoryListing as MemoryListing
    from .history.listing import VersionHistory as VersionHistory
    from .history.moves import MoveResult as MoveResult
    from .history.moves import RemoveResult as RemoveResult
    from .history.report import FileState as FileState
    from .history.report import StateReport as StateReport
    from .index.api import CollectionInfo as CollectionInfo
    from .index.api import CollectionsResult as CollectionsResult
    from .index.results import SearchHit as SearchHit
    from .index.results import SearchResult as SearchResult
    from .index.results import SyncSummary as SyncSummary
    from .index.status import CollectionStatus as CollectionStatus
    from .index.status import IndexStatus as IndexStatus
    from .links.report import LinkReport as LinkReport
    from .links.report import NoteLink as NoteLink
    from .log.activity import ActivityLog as ActivityLog
    from .log.activity import LoggedVersion as LoggedVersion
    from .memory import Memory as Memory
    from .memory import open_memory as open_memory
    from .memory import to_json as to_json
    from .memory.service_status import ServiceInfo as ServiceInfo
    from .memory.service_status import ServiceStatus as ServiceStatus
    from .prompt.loader import PromptSection as PromptSection
    from .rollback.apply import RollbackResult as RollbackResult
    from .settings import Overrides as Overrides
    from .settings import Settings as Settings
    from .settings import resolve_settings as resolve_settings
    from .types import FileStateName as FileStateName
    from .types import RepairStatus as RepairStatus
    from .types import SearchMode as SearchMode
    from .types import Severity as Severity
    from .types import WriteAction as WriteAction
    from .watchdog.heartbeat import HeartbeatResult as HeartbeatResult
    from .watchdog.snapshot import SnapshotInfo as SnapshotInfo
    from .watchdog.verify import VerifyResult as VerifyResult

# Each name -> the module that defines it, loaded on first use: ``import openclaw_memory`` (the
# console script's first step) loads nothing else, so a Ctrl-C while the CLI's modules load is
# caught by its entry (:func:`openclaw_memory.cli.run`), not a traceback.
_NAMES = {
    **dict.fromkeys(("BadValue", "ConfigError", "DiskFull", "IndexMissing", "LockTimeout", "MemoryClosed", "MemoryToolError",
                     "MissingExtra", "PathRefused", "UsageError", "WorkspaceError", "WriteBlocked"), ".errors"),
    **dict.fromkeys(("Memory", "open_memory", "to_json"), ".memory"),
    **dict.fromkeys(("Overrides", "Settings", "resolve_settings"), ".settings"),
    **dict.fromkeys(("FileStateName", "RepairStatus", "SearchMode", "Severity", "WriteAction"), ".types"),
    "ExportResult": ".archive.export",
    "ImportResult": ".archive.importer",
    "DoctorReport": ".doctor.runner",
    "ReadResult": ".files.read",
    "MemoryFile": ".files.scan",
    "ScanResult": ".files.scan",
    "Finding": ".findings",
    "DiffRead": ".history.diff",
    "IndexUpdate": ".history.guard",
    "WriteResult": ".history.guard",
    "ListedFile": ".history.inventory",
    "MemoryListing": ".history.inventory",
    "VersionHistory": ".history.listing",
    "MoveResult": ".history.moves",
    "RemoveResult": ".history.moves",
    "RollbackResult": ".rollback.apply",
    "FileState": ".history.report",
    "StateReport": ".history.report",
    "CollectionInfo": ".index.api",
    "CollectionsResult": ".index.api",
    "SearchHit": ".index.results",
    "SearchResult": ".index.results",
    "CollectionStatus": ".index.status",
    "IndexStatus": ".index.status",
    "SyncSummary": ".index.results",
    "ActivityLog": ".log.activity",
    "LoggedVersion": ".log.activity",
    "LinkReport": ".links.report",
    "NoteLink": ".links.report",
    "PromptSection": ".prompt.loader",
    "HeartbeatResult": ".watchdog.heartbeat",
    "SnapshotInfo": ".watchdog.snapshot",
    "ServiceInfo": ".memory.service_status",
    "ServiceStatus": ".memory.service_status",
    "VerifyResult": ".watchdog.verify",
}

__all__ = [*_NAMES]


if not TYPE_CHECKING:  # (seen by a type checker, it let any name be imported: a misspelt one passed)

    def __getattr__(name: str) -> object:
        module = _NAMES.get(name)
        if module is None:
            raise AttributeError(f"module 'openclaw_memory' has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
