"""The memory files as ``files`` lists them, each with its modified time and the state this
session has of it (:mod:`.states`): what MCP ``memory_files`` answers."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..files.scan import Skipped, scan_workspace
from ..wire import key
from .report import file_states
from .versions import iso_time

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class ListedFile:
    """A file of ``files --json`` (path, absPath, source, kind, size), plus when it last changed and,
    for a Markdown file, this session's state of it."""

    path: str
    abs_path: str
    source: str
    kind: str
    size: int
    modified: str  # the file's mtime, as iso_time (UTC)
    state: str | None = key(omit=lambda f: f.state is None, default=None)  # read_fresh, read_stale, ...
    seen_lines: tuple[int | None, ...] | None = key(omit=lambda f: f.seen_lines is None, default=None)  # as state's


@dataclass(frozen=True)
class MemoryListing:
    workspace: str
    agent: str
    files: tuple[ListedFile, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())

    def suggesting(self, program: str) -> MemoryListing:
        """As :meth:`~openclaw_memory.files.scan.ScanResult.suggesting`."""
        from ..files.scan import worded_skips

        return replace(self, skipped=tuple(worded_skips(list(self.skipped), program)))


def memory_listing(settings: Settings) -> MemoryListing:
    """The scan of ``files`` with ``state``'s view of each file for ``settings.session``."""
    scan = scan_workspace(settings)
    states = file_states(settings)
    state_of = {f.abs_path: (f.state, f.seen_lines) for f in states.files}
    files = tuple(ListedFile(f.path, f.abs_path, f.source, f.kind, f.size, iso_time(f.mtime_ns / 1e9),
                             *state_of.get(f.abs_path, (None, None))) for f in scan.files)
    return MemoryListing(scan.workspace, scan.agent, files, tuple(scan.skipped), tuple(scan.warnings + states.warnings))
