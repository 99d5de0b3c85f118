"""A POST body read whole within a size limit and a time limit, before anything parses it.

Everything behind this reads a request's body whole (the per-session id check parses it, and so
does the SDK, which measures it only once read). So the body is read here, once, counted as it
streams:

- past ``limit`` bytes (or a ``Content-Length`` declaring more) the request is answered 413 at
  once; nothing more is kept, and the connection is closed;
- a body still unfinished ``timeout`` seconds after its request arrived is answered 408 and the
  connection closed;
- a client that disconnects mid-body is simply forgotten (nobody is left to answer).

Each refusal is one log line, never the traceback the SDK logs for a body it could not read.
Before the close, what the client still sends is read and dropped for ``LINGER_S`` (a lingering
close): closed at once with its bytes unread, the connection is reset, and a client still sending
loses the answer it has not read yet. What goes on is one ``http.request`` message holding the
whole body (without a byte order mark before it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from ..errors import one_line

log = logging.getLogger(__name__)
LINGER_S = 2.0
UTF8_BOM = "\ufeff".encode("utf-8")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB"


class BoundedBody:
    """ASGI middleware: every POST body read whole, at most ``limit`` bytes within ``timeout`` seconds."""

    def __init__(self, app, limit: int, timeout: float):
        self.app = app
        self.limit = limit
        self.timeout = timeout

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await _refuse(receive, send, 413, f"the request body ({_mib(int(declared))}) is over the {_mib(self.limit)} limit")
            return
        chunks: list[bytes] = []  # kept as they came: one join at the end, no growing copy
        size = 0
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                message = await asyncio.wait_for(receive(), max(0.0, deadline - time.monotonic()))
            except TimeoutError:
                await _refuse(receive, send, 408, f"the request body did not end within {self.timeout:g} s "
                                                  f"({size:,} bytes received)")
                return
            if message["type"] != "http.request":
                return  # the client went away mid-body: nobody to answer
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                chunks.clear()
                await _refuse(receive, send, 413, f"the request body is over the {_mib(self.limit)} limit "
                                                  f"(refused at {_mib(size)}, before its end)")
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        # A byte order mark before the JSON (a Windows encoder writes one) is dropped, as RFC 8259 lets a
        # parser do and as stdio does: the SDK refused the body as not JSON.
        whole = {"type": "http.request", "body": b"".join(chunks).removeprefix(UTF8_BOM), "more_body": False}
        chunks.clear()
        await self.app(scope, replay([whole], receive), send)


async def _refuse(receive, send, status: int, reason: str) -> None:
    """Answer ``status`` with a JSON-RPC error naming ``reason``, drop what still comes of the body
    for ``LINGER_S`` (the answer is whole on the wire by then: its length is declared), then close."""
    log.warning("MCP over HTTP: refused a request (%d): %s", status, one_line(reason))  # (every log line's rule)
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": reason}}).encode("utf-8")
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii")),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": True})
    deadline = time.monotonic() + LINGER_S
    try:
        while (left := deadline - time.monotonic()) > 0:
            message = await asyncio.wait_for(receive(), left)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
    except TimeoutError:
        pass
    await send({"type": "http.response.body", "body": b""})  # the answer ends: the server closes


def replay(messages: list[dict], receive):
    """``receive`` with ``messages`` (already taken from it) given back first, each let go once given."""
    pending = list(messages)

    async def replayed():
        if pending:
            return pending.pop(0)
        return await receive()  # the disconnect, when it comes

    return replayed
