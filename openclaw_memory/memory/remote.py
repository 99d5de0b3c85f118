"""The memory through the workspace's service: each call is one request on one connection.

The calls the service answers (:data:`.operations.OPERATIONS`) go to it; the rest (listing files,
the prompt, history, doctor, the watchdog) are as fast in this process and run here, inherited from
:class:`~.local.LocalMemory`. A service that is gone, hung, refusing or of another version is
reported (``notice``) and the memory works in this process; a service that hung or went away is
asked again after ``RETRY_S`` (a long-lived MCP session must not stay on its own after one stall:
the service still holds the shards it would need), one that refused (another version, other
settings) is not. Several threads may call at once (an MCP server): the one connection carries one
request at a time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..service_files import service_may_run
from .base import ServiceStatus
from .client import ServiceClient, ServiceUnavailable, Unsendable
from .local import IndexPool, LocalMemory

if TYPE_CHECKING:
    from ..files.read import ReadResult
    from ..history.diff import DiffRead
    from ..history.guard import WriteResult
    from ..history.report import StateReport
    from ..index.api import CollectionInfo
    from ..index.results import SearchResult
    from ..index.status import IndexStatus
    from ..index.sync import ProgressCallback, SyncSummary
    from ..settings import Settings
    from ..types import SearchMode


RETRY_S = 10.0


class _Link:
    """The connection every session's view shares, and its lock."""

    def __init__(self, settings: Settings, notice: Callable[[str], None]):
        self.settings = settings
        self.client: ServiceClient | None = ServiceClient(settings)
        self.lock = threading.Lock()
        self.notice = notice
        self.retry_at: float | None = None  # None: never again (the service refused)
        self.said = ""

    def call(self, settings: Settings, method: str, **args: Any) -> Any:
        """The service's answer; ServiceUnavailable with ``self.client`` dropped when it gave none."""
        with self.lock:
            if self.client is None:
                if self.retry_at is None or time.monotonic() < self.retry_at or not service_may_run(self.settings):
                    raise ServiceUnavailable()
                self.client = ServiceClient(self.settings)
            try:
                answer = self.client.call(method, settings, **args)
            except ServiceUnavailable as exc:
                self.client.close()
                self.client = None
                self.retry_at = None if exc.refused else time.monotonic() + RETRY_S
                if exc.message and exc.message != self.said:  # a service that stays hung is said once
                    self.notice(exc.message)
                self.said = exc.message
                raise
            if self.said:
                self.notice("the memory service answers again; calls go to it")
                self.said = ""
            return answer


class ServiceMemory(LocalMemory):
    """:class:`~openclaw_memory.memory.Memory` answered by the workspace's service (see the module docstring)."""

    def __init__(self, settings: Settings, pool: IndexPool, link: _Link):
        super().__init__(settings, pool)
        self._link = link

    @classmethod
    def connect(cls, settings: Settings, pool: IndexPool, notice: Callable[[str], None]) -> ServiceMemory:
        """Connected lazily: the first call the service answers makes the connection."""
        return cls(settings, pool, _Link(settings, notice))

    @property
    def connected(self) -> bool:
        """False once the service failed to answer and the memory works in this process."""
        return self._link.client is not None

    def for_session(self, session: str | None) -> ServiceMemory:
        return ServiceMemory(self._settings.with_session(session), self.pool, self._link)

    def _remote(self, method: str, here: Callable[..., Any], **args: Any) -> Any:
        try:
            return self._link.call(self._settings, method, **args)
        except (ServiceUnavailable, Unsendable):  # Unsendable: a NaN argument, worded (or used) in-process
            return here(**args)

    def read(self, path: str, *, from_line: float | None = None, lines: float | None = None,
             max_chars: float | None = None, clamp: bool = False) -> ReadResult:
        return self._remote("read", super().read, path=path, from_line=from_line, lines=lines, max_chars=max_chars, clamp=clamp)

    def read_diff(self, path: str, *, from_line: int | None = None, lines: int | None = None,
                  max_chars: int | None = None) -> DiffRead:
        return self._remote("read_diff", super().read_diff, path=path, from_line=from_line, lines=lines, max_chars=max_chars)

    def write(self, path: str, *, content: bytes | str | None = None, append: bytes | str | None = None,
              expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
              tool: str = "write", progress: ProgressCallback | None = None) -> WriteResult:
        # Bytes that are not UTF-8 travel exactly (surrogateescape), as in-process.
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        added = append.encode("utf-8", "surrogateescape") if isinstance(append, str) else append
        return self._remote("write", partial(super().write, progress=progress), path=path, content=data, append=added,
                            expect=expect, update_index=update_index, idempotency_key=idempotency_key, tool=tool)

    def restore(self, path: str, version: str, *, update_index: bool = True) -> WriteResult:
        return self._remote("restore", super().restore, path=path, version=version, update_index=update_index)

    def state(self) -> StateReport:
        return self._remote("state", super().state)

    def index(self, *, full: bool = False, progress: ProgressCallback | None = None) -> SyncSummary:
        return self._remote("index", partial(super().index, progress=progress), full=full)

    def search(self, query: str, *, limit: int = 6, min_score: float | None = None, mode: SearchMode = "hybrid",
               sync: bool = True, collections: tuple[str, ...] = (), paths: tuple[str, ...] = (),
               since: str | None = None, until: str | None = None) -> SearchResult:
        return self._remote("search", super().search, query=query, limit=limit, min_score=min_score, mode=mode, sync=sync,
                            collections=tuple(collections), paths=tuple(paths), since=since, until=until)

    def status(self) -> IndexStatus:
        return self._remote("status", super().status)

    def collections(self) -> list[CollectionInfo]:
        return self._remote("collections", super().collections)

    def service(self) -> ServiceStatus:
        if self._link.client is None and self._link.said:  # it just failed to answer: say why, not wait again
            return ServiceStatus(note=self._link.said)
        return self._remote("service", super().service)

    def end_session(self) -> None:
        self._remote("end_session", super().end_session)

    def warm(self) -> None:
        if not self.connected:  # the service warms its own model
            super().warm()

    def close(self) -> None:
        with self._link.lock:
            if self._link.client is not None:
                self._link.client.close()
        super().close()
