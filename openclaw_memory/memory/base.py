"""The one door: every operation on an agent's memory, as one typed protocol.

The CLI, MCP (stdio and HTTP) and the service's own loop call a :class:`Memory`; which
implementation they get (in this process, or the workspace's service) is chosen once, by
:func:`~openclaw_memory.memory.open_memory`. Results are the package's frozen dataclasses; errors
are :class:`~openclaw_memory.errors.MemoryToolError` subclasses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from ..wire import key

if TYPE_CHECKING:
    from ..doctor.model import Finding
    from ..doctor.runner import DoctorReport
    from ..files.read import ReadResult
    from ..files.scan import ScanResult
    from ..history.diff import DiffRead
    from ..history.guard import WriteResult
    from ..history.listing import VersionHistory
    from ..history.report import StateReport
    from ..index.api import CollectionInfo
    from ..index.migrate import MigrationResult
    from ..index.results import SearchResult
    from ..index.status import IndexStatus
    from ..index.sync import ProgressCallback, SyncSummary
    from ..prompt.loader import PromptSection
    from ..settings import Settings
    from ..types import SearchMode
    from ..watchdog.heartbeat import HeartbeatResult
    from ..watchdog.snapshot import SnapshotInfo
    from ..watchdog.verify import VerifyResult


@dataclass(frozen=True)
class ServiceInfo:
    """The running service's figures (``status``'s ``service``)."""

    pid: int
    started: float
    uptime_s: float = key("uptimeS", digits=1)
    agent: str = key()  # the agent whose files the live sync follows
    live_sync: bool = key()
    sessions: int = key()  # sessions that made a request in the last 30 minutes (or are connected)
    rss_bytes: int | None = key("memoryBytes")
    http: str | None = key()  # the MCP HTTP endpoint, when it listens
    requests: int = key()
    lock_waits: LockWaits = key()


@dataclass(frozen=True)
class LockWaits:
    """Requests that waited for an index in use (a sync, another request)."""

    count: int
    slow: int  # over 100 ms
    max_ms: float = key(digits=1)


@dataclass(frozen=True)
class ServiceStatus:
    """Whether the workspace's service runs: its figures, or why it does not answer (``note``)."""

    info: ServiceInfo | None = key(flatten=True, default=None)
    note: str = key(omit=lambda s: not s.note, default="")

    JSON_DERIVED: ClassVar = ("running",)

    @property
    def running(self) -> bool:
        return self.info is not None


OnLockWait = Callable[[str, str], None]  # (what is locked, the holder's pid)


class Memory(Protocol):
    """An agent's memory in one workspace, for one session (``settings.agent``, ``settings.session``)."""

    @property
    def settings(self) -> Settings: ...

    def for_session(self, session: str | None) -> Memory:
        """The same memory (and its warm index) for another session of the agent."""
        ...

    # -- files ---------------------------------------------------------------------------------

    def files(self) -> ScanResult:
        """The workspace's memory files in OpenClaw's order, with what was skipped and why."""
        ...

    def read(self, path: str, *, from_line: float | None = None, lines: float | None = None,
             max_chars: float | None = None, clamp: bool = False) -> ReadResult:
        """A paged read (``memory_get``), recorded as read by this session.

        ``path`` may be a search citation (``memory/a.md#L10-L24``): its lines, unless
        ``from_line``/``lines`` say otherwise. ``clamp``: take the window as OpenClaw's reader takes
        it (floored, below 1 raised to 1) instead of refusing values below 1.
        """
        ...

    def read_diff(self, path: str, *, from_line: int | None = None, lines: int | None = None,
                  max_chars: int | None = None) -> DiffRead:
        """What changed since this agent last read the file; counts as a read."""
        ...

    def write(self, path: str, *, content: bytes | str | None = None, append: bytes | str | None = None,
              expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
              tool: str = "write", progress: ProgressCallback | None = None) -> WriteResult:
        """A guarded, atomic write (WriteBlocked when the file changed since this session read it)."""
        ...

    def restore(self, path: str, version: str, *, update_index: bool = True) -> WriteResult:
        """Restore an earlier version (the current one is kept in the history first)."""
        ...

    def history(self, path: str) -> VersionHistory:
        """Every kept version of a memory file, newest first."""
        ...

    def state(self) -> StateReport:
        """What this agent has read, written and not yet seen of each memory file."""
        ...

    def prompt(self, *, today: dt.date | None = None, consume: bool = True) -> PromptSection:
        """The startup-prompt memory section (a pending watchdog checkpoint included once)."""
        ...

    # -- index and search ------------------------------------------------------------------------

    def index(self, *, full: bool = False, progress: ProgressCallback | None = None) -> SyncSummary:
        """Bring the agent's index up to date (``full``: re-embed everything)."""
        ...

    def search(self, query: str, *, limit: int = 6, min_score: float | None = None, mode: SearchMode = "hybrid",
               sync: bool = True, collections: tuple[str, ...] = (), paths: tuple[str, ...] = (),
               since: str | None = None, until: str | None = None) -> SearchResult:
        """Hybrid search with line-exact citations; one result per file."""
        ...

    def status(self) -> IndexStatus:
        """The index: per collection files, chunks, stale files, model, size."""
        ...

    def collections(self) -> list[CollectionInfo]:
        """The agent's collections and their points."""
        ...

    def migrate(self, to: str, source: str | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> MigrationResult:
        """Copy the index between the embedded engine and a Qdrant server, verified."""
        ...

    def service(self) -> ServiceStatus:
        """The workspace's service: running (its figures) or not (and why, when it should be)."""
        ...

    # -- repair and watchdog ---------------------------------------------------------------------

    def doctor(self, *, fix: bool = False, confirm: Callable[[Finding, str], bool] | None = None,
               on_lock_wait: Callable[[str], None] | None = None) -> DoctorReport:
        """Check the workspace; ``fix`` repairs it without losing a byte."""
        ...

    def snapshot(self, label: str | None = None) -> SnapshotInfo:
        """Record the workspace as it is now (the watchdog's baseline)."""
        ...

    def verify(self) -> VerifyResult:
        """What changed since the last snapshot."""
        ...

    def heartbeat(self) -> HeartbeatResult:
        """Verify, and on a change leave a checkpoint for the next prompt and take a new baseline."""
        ...

    # -- lifetime --------------------------------------------------------------------------------

    def warm(self) -> None:
        """Load the model now when the agent has an index, so the first search answers at once."""
        ...

    def end_session(self) -> None:
        """This session is over: its read records go."""
        ...

    def close(self) -> None: ...
