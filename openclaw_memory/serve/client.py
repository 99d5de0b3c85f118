"""Talk to the workspace's service, or say in one line why not and let the caller work in-process.

Standard library only (socket + json, plus :mod:`.wire` and :mod:`.protocol`): this is the
CLI's path when a service runs, so nothing heavy may load here.

- No service folder or no socket: no service runs; nothing is said.
- A socket nobody listens on (the service was killed): one line, then in-process.
- A service that sends nothing for ``[service] timeout`` seconds (default 5; a working
  service sends a heartbeat every half second) or drops the connection: one line, then
  in-process. A write retried that way is safe: the idempotency key makes the second
  attempt return the first one's result if the first went through.
- ``OPENCLAW_MEMORY_SERVICE=off`` in the environment: always in-process, silently.
"""

from __future__ import annotations

import json
import os
import socket
import sys

from .. import wire
from .paths import read_info, socket_address
from .protocol import LineReader, LineTooLong, request_line, service_timeout

OFF_ENV = "OPENCLAW_MEMORY_SERVICE"


class ServiceUnavailable(Exception):
    """No answer from the service; ``message`` says why in one line (empty: none runs)."""

    def __init__(self, message: str = ""):
        super().__init__(message)
        self.message = message


def _who(settings) -> str:
    info = read_info(settings) or {}
    pid = info.get("pid")
    return f"the memory service (pid {pid})" if pid else "the memory service"


class ServiceClient:
    """One connection to the service; requests go one after the other. Not thread-safe."""

    def __init__(self, settings, timeout: float | None = None):
        self.settings = settings
        self.timeout = service_timeout(settings) if timeout is None else timeout
        self._sock: socket.socket | None = None
        self._lines: LineReader | None = None

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
        if self._sock is not None:
            sock, self._sock = self._sock, None
            sock.close()

    def call(self, op: str, settings=None, **args):
        """The service's answer to ``op``: the API's result object, or its error raised here.

        Raises ServiceUnavailable when the service refused, hung or went away.
        """
        sock = self._connected()
        settings = settings or self.settings
        try:
            sock.sendall(request_line(op, wire.encode(args), settings))
            answer = self._answer(sock)
        except TimeoutError:
            self.close()
            raise ServiceUnavailable(f"{_who(self.settings)} did not answer within {self.timeout:g} s; working in-process") from None
        except (OSError, ValueError) as exc:
            self.close()
            detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else "connection closed"
            raise ServiceUnavailable(f"{_who(self.settings)} stopped answering ({detail}); working in-process") from None
        if answer.get("ok"):
            return wire.decode(answer.get("value"))
        if "refused" in answer:
            raise ServiceUnavailable(f"{_who(self.settings)} cannot answer this: {answer['refused']}; working in-process")
        raise _error(answer.get("error") or {})

    def _answer(self, sock: socket.socket) -> dict:
        while True:
            line = self._line(sock)
            if line.strip():
                return json.loads(line)

    def _line(self, sock: socket.socket) -> bytes:
        if self._lines is None or self._lines.sock is not sock:
            self._lines = LineReader(sock)
        try:
            line = self._lines.next()
        except LineTooLong:
            raise ValueError("answer too large") from None
        if line is None:
            raise ValueError("connection closed")
        return line


def _error(data: dict) -> Exception:
    from .. import errors

    cls = getattr(errors, str(data.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.MemoryToolError)):
        cls = errors.MemoryToolError
    return cls(str(data.get("message") or "the memory service failed"))


def service_disabled() -> bool:
    return os.environ.get(OFF_ENV, "").strip().lower() in ("off", "0", "no", "false")


class _Absent:
    def __repr__(self) -> str:
        return "IN_PROCESS"


IN_PROCESS = _Absent()


def try_service(settings, op: str, **args):
    """The service's answer, or ``IN_PROCESS`` when the caller must do the work itself.

    A service that is gone, hung or refusing is reported in one line on stderr first.
    Product errors (a blocked write, no index) are raised as they are.
    """
    if service_disabled():
        return IN_PROCESS
    client = ServiceClient(settings)
    try:
        return client.call(op, **args)
    except ServiceUnavailable as exc:
        if exc.message:
            sys.stderr.write(f"warning: {exc.message}\n")
        return IN_PROCESS
    finally:
        client.close()


def service_status(settings) -> dict:
    """``status``'s ``service`` field: ``{"running": false}`` or the running service's figures."""
    client = ServiceClient(settings, timeout=min(2.0, service_timeout(settings)))
    try:
        return client.call("info").to_json()
    except ServiceUnavailable as exc:
        return {"running": False, "note": exc.message} if exc.message else {"running": False}
    finally:
        client.close()
