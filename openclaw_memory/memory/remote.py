"""The memory through the workspace's service: each call is one request on one connection.

The calls the service answers (:data:`.operations.OPERATIONS`) go to it; the rest (listing files,
the prompt, history, doctor, the watchdog) are as fast in this process and run here. A service that
is gone, hung, refusing or of another version is reported once (``notice``) and the memory works in
this process from then on. Several threads may call at once (an MCP server): the one connection
carries one request at a time.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .base import ServiceStatus
from .client import ServiceClient, ServiceUnavailable

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
    from .local import LocalMemory


class _Link:
    """What every session's view shares: the connection, its lock, and the in-process fallback."""

    def __init__(self, client: ServiceClient | None, local: Callable[[], LocalMemory], notice: Callable[[str], None]):
        self.client = client
        self.lock = threading.Lock()
        self.notice = notice
        self._make_local = local
        self._local: LocalMemory | None = None

    def local(self) -> LocalMemory:
        with self.lock:
            if self._local is None:
                self._local = self._make_local()
            return self._local

    def call(self, settings: Settings, method: str, **args: Any) -> Any:
        """The service's answer; None with ``self.client`` dropped when it gave none (said once)."""
        with self.lock:
            if self.client is None:
                raise ServiceUnavailable()
            try:
                return self.client.call(method, settings, **args)
            except ServiceUnavailable as exc:
                self.client.close()
                self.client = None
                if exc.message:
                    self.notice(exc.message)
                raise


class ServiceMemory:
    """:class:`~openclaw_memory.memory.Memory` answered by the workspace's service (see the module docstring)."""

    def __init__(self, settings: Settings, link: _Link):
        self._settings = settings
        self._link = link

    @classmethod
    def connect(cls, settings: Settings, local: Callable[[], LocalMemory], notice: Callable[[str], None]) -> ServiceMemory:
        """Connected lazily: the first call the service answers makes the connection."""
        return cls(settings, _Link(ServiceClient(settings), local, notice))

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def connected(self) -> bool:
        """False once the service failed to answer and the memory works in this process."""
        return self._link.client is not None

    def for_session(self, session: str | None) -> ServiceMemory:
        return ServiceMemory(self._settings.with_session(session), self._link)

    def _local(self) -> LocalMemory:
        return self._link.local().for_session(self._settings.session)

    def _remote(self, method: str, fallback: Callable[[LocalMemory], Any], **args: Any) -> Any:
        try:
            return self._link.call(self._settings, method, **args)
        except ServiceUnavailable:
            return fallback(self._local())

    # -- answered by the service -----------------------------------------------------------------

    def read(self, path: str, *, from_line: float | None = None, lines: float | None = None,
             max_chars: float | None = None, clamp: bool = False) -> ReadResult:
        return self._remote("read", lambda m: m.read(path, from_line=from_line, lines=lines, max_chars=max_chars, clamp=clamp),
                            path=path, from_line=from_line, lines=lines, max_chars=max_chars, clamp=clamp)

    def read_diff(self, path: str, *, from_line: int | None = None, lines: int | None = None,
                  max_chars: int | None = None) -> DiffRead:
        return self._remote("read_diff", lambda m: m.read_diff(path, from_line=from_line, lines=lines, max_chars=max_chars),
                            path=path, from_line=from_line, lines=lines, max_chars=max_chars)

    def write(self, path: str, *, content: bytes | str | None = None, append: bytes | str | None = None,
              expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
              tool: str = "write", progress: ProgressCallback | None = None) -> WriteResult:
        # Bytes that are not UTF-8 travel exactly (surrogateescape), as in-process.
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        added = append.encode("utf-8", "surrogateescape") if isinstance(append, str) else append
        return self._remote(
            "write",
            lambda m: m.write(path, content=data, append=added, expect=expect, update_index=update_index,
                              idempotency_key=idempotency_key, tool=tool, progress=progress),
            path=path, content=data, append=added, expect=expect, update_index=update_index,
            idempotency_key=idempotency_key, tool=tool,
        )

    def restore(self, path: str, version: str, *, update_index: bool = True) -> WriteResult:
        return self._remote("restore", lambda m: m.restore(path, version, update_index=update_index),
                            path=path, version=version, update_index=update_index)

    def state(self) -> StateReport:
        return self._remote("state", lambda m: m.state())

    def index(self, *, full: bool = False, progress: ProgressCallback | None = None) -> SyncSummary:
        return self._remote("index", lambda m: m.index(full=full, progress=progress), full=full)

    def search(self, query: str, *, limit: int = 6, min_score: float | None = None, mode: SearchMode = "hybrid",
               sync: bool = True, collections: tuple[str, ...] = (), paths: tuple[str, ...] = (),
               since: str | None = None, until: str | None = None) -> SearchResult:
        args: dict[str, Any] = dict(limit=limit, min_score=min_score, mode=mode, sync=sync, collections=tuple(collections),
                                    paths=tuple(paths), since=since, until=until)
        return self._remote("search", lambda m: m.search(query, **args), query=query, **args)

    def status(self) -> IndexStatus:
        return self._remote("status", lambda m: m.status())

    def collections(self) -> list[CollectionInfo]:
        return self._remote("collections", lambda m: m.collections())

    def service(self) -> ServiceStatus:
        return self._remote("service", lambda m: m.service())

    def end_session(self) -> None:
        self._remote("end_session", lambda m: m.end_session())

    # -- answered here ---------------------------------------------------------------------------

    def files(self) -> ScanResult:
        return self._local().files()

    def history(self, path: str) -> VersionHistory:
        return self._local().history(path)

    def prompt(self, *, today: dt.date | None = None, consume: bool = True) -> PromptSection:
        return self._local().prompt(today=today, consume=consume)

    def migrate(self, to: str, source: str | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> MigrationResult:
        return self._local().migrate(to, source, progress)

    def doctor(self, *, fix: bool = False, confirm: Callable[[Finding, str], bool] | None = None,
               on_lock_wait: Callable[[str], None] | None = None) -> DoctorReport:
        return self._local().doctor(fix=fix, confirm=confirm, on_lock_wait=on_lock_wait)

    def snapshot(self, label: str | None = None) -> SnapshotInfo:
        return self._local().snapshot(label)

    def verify(self) -> VerifyResult:
        return self._local().verify()

    def heartbeat(self) -> HeartbeatResult:
        return self._local().heartbeat()

    def warm(self) -> None:
        if not self.connected:  # the service warms its own model
            self._local().warm()

    def close(self) -> None:
        with self._link.lock:
            if self._link.client is not None:
                self._link.client.close()
            local = self._link._local
        if local is not None:
            local.close()
