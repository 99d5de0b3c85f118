"""The memory through the workspace's service: each call is one request on one connection.

The operations declared as the service's (``service=True`` in :mod:`.operations`) go to it; the
rest (listing files, the prompt, history, doctor, the watchdog) are as fast in this process and
run here, on purpose, in a :class:`~.local.LocalMemory`. A service that is gone, hung, refusing or of another version is
reported (``notice``) and the memory works in this process; a service that hung or went away is
asked again after ``RETRY_S`` (a long-lived MCP session must not stay on its own after one stall:
the service still holds the shards it would need), one that refused the caller (another version,
other settings) is not; a request refused for what it asks (a time zone the service cannot name)
runs here alone. Several threads may call at once (an MCP server): the one connection carries one
request at a time.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import signals
from ..errors import LockTimeout, MemoryClosed
from ..service_files import service_may_run
from ..types import MAX_LIMIT
from .client import ServiceClient, ServiceUnavailable, Unsendable
from .local import LocalMemory, held_by_the_service
from .operations import OPERATIONS, Operation, method_of

if TYPE_CHECKING:
    from ..index.pool import IndexPool
    from ..settings import Settings
    from .service_status import ServiceStatus


RETRY_S = 10.0

# Arguments a request takes from the caller's settings when not given, resolved here and sent: the
# service answers with the caller's value, whatever its own config said when it started (they are
# not in the settings key: an edit of maxResults while `watch` ran had every search refused).
RESOLVED_HERE: dict[tuple[str, str], Callable[[Settings], Any]] = {
    ("search", "limit"): lambda settings: min(settings.max_results, MAX_LIMIT),  # openclaw.json's maxResults
}


class _Link:
    """The connection every session's view shares, and its lock."""

    def __init__(self, settings: Settings, notice: Callable[[str], None]):
        self.settings = settings
        self.client: ServiceClient | None = ServiceClient(settings)
        self.lock = threading.Lock()
        self.notice = notice
        self.retry_at: float | None = None  # None: never again (the service refused)
        self.said = ""
        self.refusal = ""  # why the service refused this caller (its settings differ), once it did
        self.silent = False  # its last call got no answer in time (it may be stopped or hung)

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
                self.silent = exc.silent
                if exc.refused and self._answers(settings):
                    self.notice(exc.message)  # this request only (a time zone it cannot name, over 256 MiB): run here
                    raise
                self.retry_at = None if exc.refused else time.monotonic() + RETRY_S
                if exc.refused:
                    self.refusal = exc.message
                if exc.message and exc.message != self.said:  # a service that stays hung is said once
                    self.notice(exc.message)
                self.said = exc.message
                raise
            self.silent = False
            if self.said:
                self.notice("the memory service answers again; calls go to it")
                self.said = ""
            return answer

    def held_by_it(self, exc: LockTimeout) -> LockTimeout | None:
        """``exc`` (a lock waited for in-process) worded as what it is when the holder is the service
        that refused this caller: it keeps the shards its live sync uses open, and answers only its
        own settings, so waiting longer wins nothing; it said `try again when it has finished`."""
        if self.silent:
            return held_by_the_service(self.settings, exc, silent_s=self.settings.service.timeout)
        if not self.refusal:
            return None
        why = re.sub(r"^the memory service \(pid [0-9]+\) ", "", self.refusal).removesuffix("; working in-process")
        why = why.removeprefix("cannot answer this: ")
        return held_by_the_service(self.settings, exc, f"it {why}" if why.startswith("is ") else why)  # (is: another version)

    def _answers(self, settings: Settings) -> bool:
        """Whether the service, which just refused a request, answers this caller: then it refused that
        request for what it asked, and keeps serving the session (on a new connection, made here);
        else it refuses the caller itself (another version, other settings), and is not asked again."""
        probe = ServiceClient(self.settings)
        try:
            probe.call("service", settings)
        except ServiceUnavailable:
            probe.close()
            return False
        self.client = probe
        return True


class ServiceMemory:
    """:class:`~openclaw_memory.memory.Memory` answered by the workspace's service (see the module docstring)."""

    def __init__(self, local: LocalMemory, link: _Link):
        self._local = local
        self._link = link

    @classmethod
    def connect(cls, settings: Settings, pool: IndexPool, notice: Callable[[str], None]) -> ServiceMemory:
        """Connected lazily: the first call the service answers makes the connection."""
        return cls(LocalMemory(settings, pool), _Link(settings, notice))

    @property
    def settings(self) -> Settings:
        return self._local.settings

    @property
    def connected(self) -> bool:
        """False once the service failed to answer and the memory works in this process."""
        return self._link.client is not None

    def for_session(self, session: str | None) -> ServiceMemory:
        return ServiceMemory(self._local.for_session(session), self._link)

    def call(self, op: Operation, args: tuple = (), kwargs: dict[str, Any] | None = None) -> Any:
        """A declared operation: sent to the service when it answers it, else (or when the service
        gives no answer) run here. An argument not of its declared type is BadValue here, before
        anything is sent (``op.checked``): the service, which would refuse it, is not blamed. A call
        on a closed memory is MemoryClosed, nothing sent."""
        self._open()
        arguments = op.checked(args, kwargs or {})
        if op.service:
            sent = {p.name: arguments[p.name] for p in op.params if p.sent}
            for (name, arg), resolve in RESOLVED_HERE.items():
                if name == op.name and sent.get(arg) is None:
                    sent[arg] = resolve(self.settings)
            if op.writes:  # once sent, the service makes it: a Ctrl-C here waits for its answer
                signals.committed()
            try:
                return self._link.call(self.settings, op.name, **sent)
            except (ServiceUnavailable, Unsendable):  # Unsendable: a NaN argument, worded (or used) in-process
                pass
        try:
            return self._local.call(op, (), arguments)
        except LockTimeout as exc:
            worded = self._link.held_by_it(exc)
            if worded is None:
                raise
            raise worded from None

    def __getattr__(self, name: str) -> Any:  # the declared operations (only those)
        return method_of(ServiceMemory, name).__get__(self)

    def _open(self) -> None:
        if self._local.pool.closed:
            raise MemoryClosed()

    def service(self) -> ServiceStatus:
        self._open()
        if self._link.client is None and self._link.said:  # it just failed to answer: say why, not wait again
            from .service_status import ServiceStatus

            return ServiceStatus(note=self._link.said, refused=self._link.retry_at is None)  # (None: it refused)
        return self.call(OPERATIONS["service"])

    def warm(self) -> None:
        self._open()
        if not self.connected:  # the service warms its own model
            self._local.warm()

    def close(self) -> None:
        """Close the connection and the memory here; a later call is MemoryClosed, a second close() nothing."""
        with self._link.lock:
            if self._link.client is not None:
                self._link.client.close()
        self._local.close()

    def __enter__(self) -> ServiceMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
