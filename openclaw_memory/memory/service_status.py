"""What ``status`` says of the workspace's service (its own module: only ``status`` and the
service itself define these, so the other commands do not pay for defining them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..wire import key


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
    # It answered, refusing this caller (another agent's settings, another version): it runs.
    refused: bool = key(omit=lambda s: not s.refused, default=False)

    JSON_DERIVED: ClassVar = ("running",)

    @property
    def running(self) -> bool:
        return self.info is not None
