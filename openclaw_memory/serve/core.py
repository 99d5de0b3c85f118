"""What the service answers: JSON-RPC requests, each one call of the service's own :class:`LocalMemory`.

The memory's pool keeps one warm index per agent, shared with the live sync (see
:mod:`openclaw_memory.memory.local`); shards unused for ``[service] shard_idle`` seconds (default
10) are closed, so ``doctor --fix`` or another tool can open them. Reads, writes and ``state`` take
the same file locks as every other process. Each request names its agent and session; the service
only answers for its own settings (:func:`~openclaw_memory.memory.protocol.settings_key`) and its own
protocol.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import wire
from ..errors import ERROR_KINDS, MemoryToolError, shown
from ..fsutil.private import CALLER_UMASK
from ..index.pool import IndexPool
from ..memory.local import LocalMemory
from ..memory.operations import OPERATIONS, Operation
from ..memory.protocol import PRODUCT_ERROR, PROTOCOL, REFUSED, answer_line, parse_line, settings_key
from ..memory.service_status import LockWaits, ServiceInfo
from ..signals import Stopping
from ..timezones import CALLER_ZONE, UnnamedZone, caller_zone_of_tz, tz_setting

if TYPE_CHECKING:
    from ..settings import Settings

SESSION_IDLE_S = 30 * 60.0

# JSON-RPC 2.0's own codes
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class Refused(Exception):
    """The service does not answer this request; the caller works in-process. ``code``: JSON-RPC's;
    ``request_id``: the request's id, once it was read (the answer carries it back)."""

    def __init__(self, message: str, code: int = REFUSED, request_id: Any = None):
        super().__init__(message)
        self.code = code
        self.request_id = request_id


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


@dataclass(frozen=True)
class Request:
    id: Any
    operation: Operation
    args: dict[str, Any]
    settings: Settings
    zone: dt.tzinfo | str | None = None  # the caller's local time when not the service's (str: its TZ, unnamed)
    umask: int | None = None  # the caller's umask: what the service makes in the workspace for it gets its modes


class ServiceCore:
    def __init__(self, settings: Settings, *, live_sync: bool = True):
        self.settings = settings
        self.live_sync = live_sync
        self.started = time.time()
        self.http: str | None = None
        self.requests = 0
        self.pool = IndexPool(shard_idle_s=settings.service.shard_idle)
        self.memory = LocalMemory(settings, self.pool, service_info=self.info, on_session_end=self._session_ended)
        self._sessions: dict[str, float] = {}
        self._connected: dict[str, int] = {}
        self._sessions_lock = threading.Lock()

    @property
    def stopping(self) -> threading.Event:
        return self.pool.stopping

    # -- sessions ------------------------------------------------------------------------------

    def touch_session(self, session: str | None) -> None:
        if session:
            with self._sessions_lock:
                self._sessions[session] = time.time()

    def called(self, session: str | None) -> None:
        """One more request answered for ``session`` (the socket's, and MCP over HTTP's tool calls)."""
        self.requests += 1
        self.touch_session(session)

    def connected(self, session: str, delta: int) -> None:
        with self._sessions_lock:
            n = self._connected.get(session, 0) + delta
            if n > 0:
                self._connected[session] = n
            else:
                self._connected.pop(session, None)

    def _session_ended(self, session: str) -> None:
        """A session ended (its MCP client went away, or it said so): no longer counted."""
        with self._sessions_lock:
            self._sessions.pop(session, None)
            self._connected.pop(session, None)

    def sweep_sessions(self, now: float | None = None) -> int:
        """Drop the read records of the MCP sessions that are over without having said so; how many.

        A session ends by saying so (its client closes a stdio server, or ends an HTTP session);
        one whose client vanished left its records for good (a row per file it read, the state
        database growing with every such session). Over: idle ``SESSION_IDLE_S`` (no request here,
        no record made) and not connected, and an HTTP session (the SDK has forgotten one idle that
        long, or it was of an earlier service) or a stdio one whose ``mcp`` process is gone. A
        session named on the CLI (``--session``) is kept: a person may come back to it. Dropping
        records never lets a write through: a session without them must read again."""
        from ..history.states import forget_session, session_times
        from ..history.store import HistoryStore

        cutoff = (time.time() if now is None else now) - SESSION_IDLE_S
        with self._sessions_lock:
            live = {s for s, t in self._sessions.items() if t >= cutoff} | set(self._connected)
        store = HistoryStore.for_settings(self.settings)
        over = [(agent, session) for agent, session, last in session_times(store)
                if last < cutoff and session not in live and _vanished(session)]
        for agent, session in over:
            forget_session(store, agent, session, before=cutoff)
        return len(over)

    def info(self) -> ServiceInfo:
        cutoff = time.time() - SESSION_IDLE_S
        with self._sessions_lock:
            live = {s for s, t in self._sessions.items() if t >= cutoff} | set(self._connected)
        return ServiceInfo(
            os.getpid(), self.started, time.time() - self.started, self.settings.agent, self.live_sync,
            len(live), rss_bytes(), self.http, self.requests,
            LockWaits(self.pool.waits, self.pool.slow_waits, self.pool.longest_wait_ms),
        )

    # -- requests ------------------------------------------------------------------------------

    def read_request(self, line: bytes) -> Request:
        """The request on ``line``, its arguments read into their declared types; Refused otherwise."""
        try:
            data = parse_line(line)
        except ValueError as exc:  # not UTF-8, not JSON, or NaN/Infinity (JavaScript's, not JSON's)
            raise Refused(f"a request that is not JSON ({str(exc)[:120]})", PARSE_ERROR) from None
        except RecursionError:  # JSON nested deeper than the decoder goes
            raise Refused("a request that is not JSON (nested too deeply)", PARSE_ERROR) from None
        if isinstance(data, dict) and not carriable_id(data.get("id")):
            raise Refused("a request whose id an answer cannot carry: an id is a string of Unicode text "
                          "(no lone surrogate), a finite number or null", INVALID_REQUEST)
        request_id = data.get("id") if isinstance(data, dict) else None
        try:
            return self._read_call(data)
        except Refused as exc:  # its id was read: the answer carries it (it was null)
            raise Refused(str(exc), exc.code, request_id) from None

    def _read_call(self, data: Any) -> Request:
        if not isinstance(data, dict) or data.get("jsonrpc") != "2.0" or not isinstance(data.get("method"), str):
            raise Refused("a request that is not JSON-RPC 2.0", INVALID_REQUEST)
        params = data.get("params")
        context = params.get("context") if isinstance(params, dict) else None
        args = params.get("args", {}) if isinstance(params, dict) else None
        if not isinstance(context, dict) or not isinstance(args, dict):
            raise Refused("a request's params are {args: {...}, context: {...}}", INVALID_PARAMS)
        if context.get("protocol") != PROTOCOL:
            raise Refused(f"it speaks protocol {PROTOCOL}, the caller {context.get('protocol')!r}: "
                          "restart the service with the installed version (stop it, then `openclaw-memory serve`)")
        operation = OPERATIONS.get(data["method"])
        if operation is None:
            raise Refused(f"it does not know the method {data['method'][:80]!r}", METHOD_NOT_FOUND)
        if not operation.service:
            raise Refused(f"the method {operation.name} runs in the caller's process", METHOD_NOT_FOUND)
        params = {wire.camel(p.name): p for p in operation.params if p.sent}
        unknown = sorted(set(args) - set(params))
        if unknown:
            raise Refused(f"unknown arguments for {operation.name}: {', '.join(unknown)[:200]}", INVALID_PARAMS)
        try:
            typed = {p.name: wire.from_json(args[name], p.wire_hint) for name, p in params.items() if name in args}
            arguments = operation.arguments((), typed)
        except (ValueError, TypeError) as exc:  # TypeError: a required argument missing
            raise Refused(f"arguments it cannot read ({exc})", INVALID_PARAMS) from None
        return Request(data.get("id"), operation, arguments, self._settings_for(context), _caller_zone(context),
                       _caller_umask(context))

    def _settings_for(self, context: dict) -> Settings:
        agent = str(context.get("agent") or self.settings.agent)
        session = context.get("session")
        try:
            settings = self.settings.with_agent(agent).with_session(session if isinstance(session, str) else None)
        except MemoryToolError as exc:  # an agent or session id no command line could give
            raise Refused(exc.message, INVALID_PARAMS) from None
        agent = settings.agent  # as OpenClaw normalizes it: `Main` is this service's `main`
        if context.get("key") != settings_key(settings):
            if agent != self.settings.agent:  # a restart changes nothing when the agent is configured otherwise
                # One service runs per workspace (its lock) and answers only callers of its settings: the
                # caller's agent is not served while it runs, whatever restarting it for its own agent does.
                # (The commands named are worded by the caller's front-end with its flags: `--agent main`.)
                ours, theirs = shown(self.settings.agent), shown(agent)
                raise Refused(
                    f"it serves agent {ours}, and agent {theirs} has other settings (extra paths or search settings "
                    "of its own in openclaw.json, extra paths given to this command, or a config changed since the "
                    f"service started); one service runs per workspace and answers only the agents of its settings, "
                    f"so agent {theirs} is not served while it runs (to serve agent {theirs} in its place: stop it, "
                    "`openclaw-memory serve --stop`, then `openclaw-memory serve`)"
                )
            raise Refused(
                "it runs with the settings it started with, and this caller has other settings (extra paths, config "
                "or state dir differ); to use them, restart it: `openclaw-memory serve --stop`, then `openclaw-memory "
                "serve` (or `openclaw-memory watch`) again"
            )
        return settings

    def answer(self, request: Request) -> dict:
        """The JSON-RPC answer to one request."""
        self.called(request.settings.session)
        memory = self.memory.for_agent(request.settings.agent, request.settings.session)
        zone = CALLER_ZONE.set(request.zone)  # this thread's request only
        umask = CALLER_UMASK.set(request.umask)
        try:
            value = memory.call(request.operation, (), request.args)
            return {"jsonrpc": "2.0", "id": request.id, "result": wire.to_json(value)}
        except MemoryToolError as exc:
            return error_answer(request.id, PRODUCT_ERROR, exc.message, _kind(exc), exc.fields())
        except Stopping:
            return error_answer(request.id, REFUSED, "it is stopping")
        except UnnamedZone as exc:
            return error_answer(request.id, REFUSED, str(exc))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            return error_answer(request.id, PRODUCT_ERROR, f"{exc.filename}: {reason}" if exc.filename else reason,
                                "MemoryToolError")
        except Exception as exc:  # a bug, not the caller's fault: the caller still gets its answer in-process
            return error_answer(request.id, REFUSED, f"it failed ({type(exc).__name__}: {exc})")
        finally:
            CALLER_UMASK.reset(umask)
            CALLER_ZONE.reset(zone)

    def let_go(self) -> None:
        """As it stops, its socket gone: the shards no request in flight uses are closed now, and each
        other one as its last request leaves it (callers work in-process meanwhile and wait for them)."""
        self.pool.shard_idle_s = 0.0  # (the pool closes a shard when its last call leaves it)
        self.pool.close_idle_shards()

    def close(self) -> None:
        self.pool.close()

    def warm(self) -> None:
        self.pool.warm(self.settings)


def _vanished(session: str) -> bool:
    """Whether an MCP session idle ``SESSION_IDLE_S`` is over: an HTTP one (``http-<id>``) is; a stdio
    one (``mcp-<pid>-<hex>``, :class:`~openclaw_memory.mcp.server.MemoryTools`) when its process is gone."""
    if session.startswith("http-"):
        return True
    pid = session.split("-")[1] if session.startswith("mcp-") and session.count("-") == 2 else ""
    if not pid.isdigit():
        return False  # a session named on the CLI: a person may come back to it
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's process: alive
        return False
    return False


def _caller_zone(context: dict) -> dt.tzinfo | str | None:
    """The caller's local time when its TZ is not the service's (None: the same, or a caller that
    does not say). A TZ this service cannot name stays the string it is: a request that reads a
    day in it is refused (:class:`UnnamedZone`), and the caller answers it in-process."""
    if "tz" not in context or context["tz"] == tz_setting():
        return None
    tz = context["tz"]
    return (caller_zone_of_tz(tz) if tz is None or isinstance(tz, str) else None) or str(tz)


def _caller_umask(context: dict) -> int:
    """The caller's umask (a note the service makes for it gets the mode the caller's process would
    give it); Refused where the context has none a umask can be."""
    umask = context.get("umask")
    if type(umask) is not int or not 0 <= umask <= 0o777:
        raise Refused("a request's context names the caller's umask, a number from 0 to 0o777", INVALID_PARAMS)
    return umask


def error_answer(request_id: Any, code: int, message: str, kind: str | None = None,
                 fields: dict[str, str] | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if kind is not None:
        error["data"] = {"kind": kind, **({"fields": fields} if fields else {})}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def carriable_id(request_id: Any) -> bool:
    """Whether an answer can echo this id as JSON: JSON-RPC's string, number or null, and only what
    strict JSON holds (``1e400`` reads as infinity, ``"\\ud800"`` as a string no UTF-8 can hold)."""
    if request_id is None:
        return True
    if isinstance(request_id, str):
        try:
            request_id.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(request_id, float):
        return math.isfinite(request_id)
    return isinstance(request_id, int) and not isinstance(request_id, bool)


def encoded(answer: dict) -> bytes:
    """The answer's line. A result strict JSON cannot hold (a NaN or infinite number in it: a bug) is
    answered as a failure instead, so the caller still gets its answer, in-process."""
    try:
        return answer_line(answer)
    except ValueError as exc:
        return answer_line(error_answer(answer.get("id"), REFUSED, f"it failed (an answer JSON cannot hold: {exc})"))


def _kind(exc: MemoryToolError) -> str:
    """The error's kind as the caller knows it: its class, or the nearest one of ERROR_KINDS (a
    ReadOnlyRefused goes as the PathRefused it is: exit 2, not a plain failure's 1)."""
    return next(c.__name__ for c in type(exc).__mro__ if c.__name__ in ERROR_KINDS)
