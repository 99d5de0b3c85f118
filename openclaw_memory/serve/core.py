"""What the service answers: the same API calls the CLI makes in-process, on warm objects.

One ``MemoryIndex`` per agent, created on first use, all sharing one loaded embedding
model, with their shards kept open between calls (a warm search costs milliseconds, not
the 0.2-0.4 s of loading a shard). An index is used by one thread at a time (its lock);
the live sync takes the same lock. Shards not used for ``[service] shard_idle`` seconds
(default 10) are closed, so ``doctor --fix`` or another tool can open them; the next
request opens them again.

Reads, writes and ``state`` go through :mod:`openclaw_memory.api` exactly as in-process
(their file locks serialize them with every other process). Each request names its
agent and session; the service only answers for its own settings (see
:func:`.protocol.settings_key`).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .. import api
from ..errors import UsageError
from .protocol import settings_key

if TYPE_CHECKING:  # the index loads on a request's first use, not when the service starts
    from ..index.api import MemoryIndex
    from ..index.sync import Models
    from ..settings import Settings
    from ..types import SearchMode

SHARD_IDLE_S = 10.0
SESSION_IDLE_S = 30 * 60.0


class Refused(Exception):
    """The service does not answer this request (other settings); the caller works in-process."""


class Stopping(BaseException):
    """Raised inside long work (a full index) when the service is asked to stop."""


@dataclass(frozen=True)
class ServiceInfo:
    """``status``'s view of the service."""

    pid: int
    started: float
    uptime_s: float
    agent: str  # the agent whose files the live sync follows
    live_sync: bool
    sessions: tuple[str, ...]  # sessions that made a request in the last 30 minutes (or are connected)
    rss_bytes: int | None
    http: str | None  # the MCP HTTP endpoint, when it listens
    requests: int
    lock_waits: int  # requests that waited for an index in use (a sync, another request)
    lock_waits_over_100ms: int
    lock_wait_max_ms: float

    def to_json(self) -> dict:
        return {
            "running": True,
            "pid": self.pid,
            "uptimeS": round(self.uptime_s, 1),
            "agent": self.agent,
            "liveSync": self.live_sync,
            "sessions": len(self.sessions),
            "memoryBytes": self.rss_bytes,
            "http": self.http,
            "requests": self.requests,
            "lockWaits": {"count": self.lock_waits, "slow": self.lock_waits_over_100ms,
                          "maxMs": round(self.lock_wait_max_ms, 1)},
        }


def rss_bytes(pid: int | str = "self") -> int | None:
    """Resident memory of a process, from ``/proc``."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class _Slot:
    def __init__(self, index: MemoryIndex):
        self.index = index
        self.lock = threading.RLock()
        self.used = time.monotonic()


class ServiceCore:
    def __init__(self, settings: Settings, *, live_sync: bool = True, shard_idle_s: float | None = None):
        self.settings = settings
        self.live_sync = live_sync
        self.started = time.time()
        self.http: str | None = None
        self.stopping = threading.Event()
        self.requests = 0
        self._slots: dict[str, _Slot] = {}
        self._slots_lock = threading.Lock()
        self._models: Models | None = None
        self._sessions: dict[str, float] = {}
        self._connected: dict[str, int] = {}
        self._sessions_lock = threading.Lock()
        self._waits = 0
        self._slow_waits = 0  # over 100 ms
        self._longest_wait_ms = 0.0
        idle = settings.section("service").get("shard_idle", SHARD_IDLE_S)
        if isinstance(idle, bool) or not isinstance(idle, (int, float)) or idle <= 0:
            from ..errors import ConfigError

            raise ConfigError(f"[service] shard_idle must be a positive number of seconds, not {idle!r}")
        # 0: close after every call (an MCP server without a service, beside other processes).
        self.shard_idle_s = float(idle) if shard_idle_s is None else shard_idle_s

    # -- settings of a request ---------------------------------------------------------------

    def settings_for(self, wanted: dict) -> Settings:
        """The service's settings for the request's agent and session; Refused when they differ."""
        agent = str(wanted.get("agent") or self.settings.agent)
        settings = self.settings.with_agent(agent).with_session(wanted.get("session"))
        if wanted.get("key") != settings_key(settings):
            raise Refused(
                "it runs with other settings for this workspace (extra paths, config or state dir differ); "
                "restart it (`openclaw-memory serve`) to use the new ones"
            )
        return settings

    def touch_session(self, session: str | None) -> None:
        if session:
            with self._sessions_lock:
                self._sessions[session] = time.time()

    def connected(self, session: str, delta: int) -> None:
        with self._sessions_lock:
            n = self._connected.get(session, 0) + delta
            if n > 0:
                self._connected[session] = n
            else:
                self._connected.pop(session, None)

    def end_session(self, settings) -> None:
        """A session ended (its MCP client went away): its read records go too."""
        from ..history.states import forget_session
        from ..history.store import HistoryStore

        if settings.session:
            forget_session(HistoryStore.for_settings(settings), settings.agent, settings.session)
            with self._sessions_lock:
                self._sessions.pop(settings.session, None)

    # -- indexes -----------------------------------------------------------------------------

    def slot(self, settings: Settings) -> _Slot:
        from ..index.api import MemoryIndex

        with self._slots_lock:
            slot = self._slots.get(settings.agent)
            if slot is None:
                index = MemoryIndex(replace(settings, session=None), keep_open=True, models=self._models)
                self._models = self._models or index.models
                slot = self._slots[settings.agent] = _Slot(index)
            return slot

    @contextmanager
    def using(self, index: MemoryIndex) -> Iterator[None]:
        """The live sync's session on a shared index: its lock, shards left open."""
        slot = next(s for s in list(self._slots.values()) if s.index is index)
        with slot.lock:
            slot.used = time.monotonic()
            try:
                yield
            finally:
                slot.used = time.monotonic()

    @contextmanager
    def _index(self, settings: Settings) -> Iterator[MemoryIndex]:
        slot = self.slot(settings)
        if not slot.lock.acquire(blocking=False):
            started = time.monotonic()
            slot.lock.acquire()
            waited = (time.monotonic() - started) * 1000
            with self._sessions_lock:
                self._waits += 1
                self._slow_waits += waited > 100
                self._longest_wait_ms = max(self._longest_wait_ms, waited)
        try:
            slot.used = time.monotonic()
            yield slot.index
        finally:
            slot.used = time.monotonic()
            if self.shard_idle_s == 0 and slot.index.store.backend == "edge":
                slot.index.store.close()
            slot.lock.release()

    def close_idle_shards(self) -> None:
        """Close the shards of indexes unused for ``shard_idle_s`` (never one in use)."""
        now = time.monotonic()
        for slot in list(self._slots.values()):
            if now - slot.used < self.shard_idle_s or slot.index.store.backend != "edge":
                continue
            if slot.lock.acquire(blocking=False):
                try:
                    slot.index.store.close()
                finally:
                    slot.lock.release()

    def close(self) -> None:
        for slot in list(self._slots.values()):
            with slot.lock:
                slot.index.close()

    def warm(self) -> None:
        """Load the model now when the agent has an index (the first search then answers at once)."""
        from ..index.collections import resolve_collections
        from ..index.manifest import load_manifest

        loaded = [load_manifest(self.settings.data_dir, c.name) for c in resolve_collections(self.settings)]
        manifests = [m for m in loaded if m is not None]
        if not manifests:
            return
        with self._index(self.settings) as index:
            for m in manifests:
                if m.embed_backend:
                    index.models.pin_backend(m.embed_backend)
            index.models.embedder.encode(["warm-up"])

    # -- requests ----------------------------------------------------------------------------

    def info(self) -> ServiceInfo:
        cutoff = time.time() - SESSION_IDLE_S
        with self._sessions_lock:
            live = {s for s, t in self._sessions.items() if t >= cutoff} | set(self._connected)
        return ServiceInfo(
            os.getpid(), self.started, time.time() - self.started, self.settings.agent, self.live_sync,
            tuple(sorted(live)), rss_bytes(), self.http, self.requests, self._waits, self._slow_waits, self._longest_wait_ms,
        )

    def handle(self, op: str, settings, args: dict):
        """Answer one request (``settings`` from :meth:`settings_for`)."""
        self.requests += 1
        self.touch_session(settings.session)
        handler = getattr(self, f"op_{op}", None)
        if handler is None:
            raise UsageError(f"the memory service does not know the request {op!r}")
        return handler(settings, **args)

    def op_info(self, settings):
        return self.info()

    def op_search(self, settings, query: str, limit: int = 6, min_score: float | None = None, mode: SearchMode = "hybrid", sync: bool = True,
                  collections=(), paths=(), since: str | None = None, until: str | None = None):
        from ..index.filters import SearchFilters
        from ..index.results import DEFAULT_MIN_SCORE

        filters = SearchFilters.from_args(collections, paths, since, until)
        with self._index(settings) as index:
            return index.search(query, limit=limit, min_score=DEFAULT_MIN_SCORE if min_score is None else min_score, mode=mode,
                                sync=sync, filters=filters)

    def op_index(self, settings, full: bool = False):
        def progress(_p) -> None:
            if self.stopping.is_set():
                raise Stopping()  # the index is crash-safe: the next run finishes what this one started

        with self._index(settings) as index:
            return index.sync(full=full, progress=progress)

    def op_status(self, settings):
        with self._index(settings) as index:
            return index.status()

    def op_collections(self, settings):
        with self._index(settings) as index:
            return index.collections()

    def op_read(self, settings, path: str, from_line: int = 1, lines: int | None = None, max_chars: int | None = None):
        return api.read_memory(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)

    def op_read_diff(self, settings, path: str, from_line: int = 1, lines: int | None = None, max_chars: int | None = None):
        return api.read_memory_diff(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)

    def op_state(self, settings):
        return api.file_states(settings)

    def op_write(self, settings, path: str, content: bytes | None = None, append: bytes | str | None = None,
                 expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
                 tool: str = "write"):
        return api.write_memory(
            settings, path, content=content, append=append, expect=expect, update_index=update_index,
            idempotency_key=idempotency_key, tool=tool, sync=lambda: self.op_index(settings),
        )

    def op_restore(self, settings, path: str, version: str, update_index: bool = True):
        return api.restore(settings, path, version, update_index=update_index, sync=lambda: self.op_index(settings))

    def op_end_session(self, settings):
        self.end_session(settings)
        return None
