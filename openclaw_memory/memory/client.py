"""Talk to the workspace's service, or say in one line why not (the caller then works in-process).

Standard library only (socket + json, plus :mod:`openclaw_memory.wire` and :mod:`.protocol`):
this is the CLI's path when a service runs, so nothing heavy may load here.

- No service folder or no socket: no service runs; nothing is said.
- A socket nobody listens on (the service was killed): one line, then in-process.
- A service that runs with its socket removed (nothing can reach it): one line, then in-process
  (:func:`unreachable_note`; the service itself stops within a second).
- A service that sends nothing for ``[service] timeout`` seconds (default 5; a working
  service sends a heartbeat every half second) or drops the connection: one line, then
  in-process. A write retried that way is safe: the idempotency key makes the second
  attempt return the first one's result if the first went through.
- A service of another version (another protocol): one line saying to restart it, then in-process.
- ``OPENCLAW_MEMORY_SERVICE=off`` in the environment: always in-process, silently.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

from .. import wire
from ..service_files import read_info, socket_address, socket_path, unreachable_service
from .operations import OPERATIONS
from .protocol import PRODUCT_ERROR, PROTOCOL, LineReader, LineTooLong, parse_line, request_line

if TYPE_CHECKING:
    from ..settings import Settings
    from .operations import Operation
    from .service_status import ServiceStatus


class ServiceUnavailable(Exception):
    """No answer from the service; ``message`` says why in one line (empty: none runs). ``refused``:
    it answered that it will not serve this caller (another version, other settings); ``silent``: it
    took the request and said nothing for the timeout (busy, stopped or hung)."""

    def __init__(self, message: str = "", *, refused: bool = False, silent: bool = False):
        super().__init__(message)
        self.message = message
        self.refused = refused
        self.silent = silent


class _Closed(ValueError):
    """The service closed the connection: no answer will come on it."""


class Unsendable(ValueError):
    """A request strict JSON cannot carry (a NaN or infinite number in its arguments): this call runs
    in-process, where the product words what is wrong with the value; the connection stays."""


def unreachable_note(settings: Settings, pid: str) -> str:
    """The line for a service that runs with its socket removed (:func:`.paths.unreachable_service`):
    it notices within a second and stops, and a new ``serve`` waits for that."""
    return (f"the memory service (pid {pid}) cannot be reached: its socket {socket_path(settings)} was removed; "
            "it stops on its own and a new `openclaw-memory serve` takes over; working in-process")


def _who(settings: Settings) -> str:
    info = read_info(settings) or {}
    pid = info.get("pid")
    return f"the memory service (pid {pid})" if pid else "the memory service"


class ServiceClient:
    """One connection to the service; requests go one after the other. Not thread-safe."""

    def __init__(self, settings: Settings, timeout: float | None = None):
        self.settings = settings
        self.timeout = settings.service.timeout if timeout is None else timeout
        self._sock: socket.socket | None = None
        self._lines: LineReader | None = None
        self._next_id = 0
        self._answered = False  # this connection answered a call: a service was there when it was made
        self._heard = False  # a byte (a heartbeat, an answer) came for the call under way

    def connect(self) -> ServiceClient:
        """Connect; raises ServiceUnavailable (with an empty message when no service runs)."""
        self._connected()
        return self

    def _connected(self) -> socket.socket:
        """The open connection, made first when there is none."""
        if self._sock is not None:
            return self._sock
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            with socket_address(self.settings) as address:
                sock.connect(address)
        except (FileNotFoundError, NotADirectoryError):
            sock.close()
            raise ServiceUnavailable() from None
        except ConnectionRefusedError:
            sock.close()
            raise ServiceUnavailable(
                f"{_who(self.settings)} is not running (its socket is left over); working in-process"
            ) from None
        except TimeoutError:
            sock.close()
            raise ServiceUnavailable(f"{_who(self.settings)} did not accept the connection within {self.timeout:g} s; working in-process") from None
        except OSError as exc:
            sock.close()
            raise ServiceUnavailable(f"cannot reach {_who(self.settings)} ({exc.strerror or exc}); working in-process") from None
        self._sock = sock
        return sock

    def close(self) -> None:
        self._answered = False
        if self._sock is not None:
            sock, self._sock = self._sock, None
            sock.close()

    def call(self, method: str, settings: Settings | None = None, **args: Any) -> Any:
        """The service's answer to ``method``, read into the method's result type; its error raised here.

        Raises ServiceUnavailable when the service refused, hung or went away. A connection that
        answered before and is found closed before this request is sent was left by a service that
        stopped since (restarted: an upgrade): the request goes on a new one. One that closes after
        it is sent, before a byte of the answer, is asked again only for what changes nothing: the
        service may have died making a change (an `rm` asked again found nothing to remove).
        """
        operation = OPERATIONS[method]
        reused = self._sock is not None and self._answered
        if reused and self._sock is not None and _closed_by_peer(self._sock):
            self.close()
        sock = self._connected()
        self._heard = False
        settings = settings or self.settings
        self._next_id += 1
        params = {wire.camel(name): wire.to_json(value) for name, value in args.items()}
        try:
            line = request_line(self._next_id, method, params, settings)
        except ValueError as exc:
            raise Unsendable(str(exc)) from None
        try:
            try:
                sock.sendall(line)
            except (BrokenPipeError, ConnectionResetError):
                pass  # a service that refuses this connection (too many) answers and closes first: read it
            answer = self._answer(sock)
        except TimeoutError:
            self.close()
            raise ServiceUnavailable(f"{_who(self.settings)} did not answer within {self.timeout:g} s"
                                     f"{_maybe_made(operation)}; working in-process", silent=True) from None
        except (OSError, ValueError) as exc:
            self.close()
            if reused and not self._heard and not operation.writes and isinstance(exc, (ConnectionError, _Closed)):
                return self.call(method, settings, **args)  # on a new connection (none there: ServiceUnavailable)
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else "connection closed"
            raise ServiceUnavailable(f"{_who(self.settings)} stopped answering ({detail}){_maybe_made(operation)}; "
                                     "working in-process") from None
        self._answered = True
        if answer.get("jsonrpc") != "2.0":
            self.close()  # not JSON-RPC: another program, or a version of ours that spoke something else
            raise ServiceUnavailable(
                f"{_who(self.settings)} is of an older version of openclaw-memory (it does not speak protocol {PROTOCOL}); "
                "restart it (stop it, then `openclaw-memory serve`); working in-process", refused=True
            )
        if "result" in answer:
            try:
                return wire.from_json(answer["result"], operation.result)
            except ValueError as exc:
                raise ServiceUnavailable(f"{_who(self.settings)} sent an answer this version cannot read ({exc}); "
                                         "working in-process", refused=True) from None
        error = answer.get("error")
        error = error if isinstance(error, dict) else {}
        message = str(error.get("message") or "the memory service failed")
        if error.get("code") == PRODUCT_ERROR:
            data = error.get("data")
            raise _product_error(data if isinstance(data, dict) else {}, message)
        raise ServiceUnavailable(f"{_who(self.settings)} cannot answer this: {message}; working in-process",
                                 refused=message != "it is stopping")

    def _answer(self, sock: socket.socket) -> dict:
        while True:
            line = self._line(sock)
            self._heard = True
            if line.strip():
                answer = parse_line(line)
                if not isinstance(answer, dict):
                    raise ValueError("not an answer")
                return answer

    def _line(self, sock: socket.socket) -> bytes:
        if self._lines is None or self._lines.sock is not sock:
            self._lines = LineReader(sock)
        try:
            line = self._lines.next()
        except LineTooLong:
            raise ValueError("answer too large") from None
        if line is None:
            raise _Closed("connection closed")
        return line


def _closed_by_peer(sock: socket.socket) -> bool:
    """Whether the service closed ``sock`` already (an end of file or a reset waits in it), before
    anything more is sent: a request sent then was never read. Asked of ``poll`` first: a socket
    with a timeout waits that long in ``recv`` for something to read, MSG_DONTWAIT or not (every
    search through the service took 5 s); ``select`` refuses a descriptor past 1023 (a process
    holding that many files made a new connection for every call)."""
    import select

    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        readable = poller.poll(0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _maybe_made(operation: Operation) -> str:
    """For a change the service stopped answering in the middle of: it may be made (the caller then
    makes it again in-process, and an `rm` said `nothing was removed` of the note the service removed)."""
    if not operation.changes_notes:
        return ""
    name = operation.cli.command if operation.cli else operation.name
    return f" during this {name}, which it may have made (`openclaw-memory log` shows what was done)"


def _product_error(data: dict, message: str) -> Exception:
    from .. import errors

    cls = errors.ERROR_KINDS.get(str(data.get("kind")), errors.MemoryToolError)
    fields = data.get("fields")
    if cls is errors.WriteBlocked and isinstance(fields, dict) and all(isinstance(v, str) for v in fields.values()):
        known = {k: fields[k] for k in ("problem", "path", "step", "agent", "session", "rest") if k in fields}
        if known.get("step", "read_again") in errors.BLOCKED_STEPS and "problem" in known:
            blocked = errors.WriteBlocked(message, **known)
            if fields.get("finished"):
                blocked.after_finishing(fields["finished"])
            return blocked
    if cls is errors.IndexMissing and isinstance(fields, dict) and all(isinstance(fields.get(k), str) for k in ("head", "run", "then")):
        return errors.IndexMissing(fields["head"], run=fields["run"], then=fields["then"])  # (worded by the caller's flags)
    if cls is errors.BadValue and isinstance(fields, dict) and all(isinstance(fields.get(k), str) for k in ("name", "problem")):
        return errors.BadValue(fields["name"], fields["problem"], hint=str(fields.get("hint") or ""),
                               hint_tools=str(fields.get("hintTools") or ""))
    if cls is errors.NulInText and isinstance(fields, dict) and str(fields.get("offset", "")).isdigit():
        return errors.NulInText(str(fields.get("mode")), int(fields["offset"]))
    if cls is errors.NulInText:
        return errors.UsageError(message)
    return cls(message)


def service_status(settings: Settings) -> ServiceStatus:
    """Whether the workspace's service answers: its figures, or why not (nothing when none runs)."""
    from .service_status import ServiceStatus

    if not os.path.lexists(socket_path(settings)):  # asked even when this caller works in-process
        pid = unreachable_service(settings)
        return ServiceStatus(note=unreachable_note(settings, pid) if pid else "")
    client = ServiceClient(settings, timeout=min(2.0, settings.service.timeout))
    try:
        status = client.call("service")
        return status if status.info is not None else ServiceStatus(note="the memory service did not give its figures")
    except ServiceUnavailable as exc:
        return ServiceStatus(note=exc.message, refused=exc.refused)
    finally:
        client.close()
