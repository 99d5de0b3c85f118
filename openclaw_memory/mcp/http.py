"""MCP over streamable HTTP, inside the service, on a loopback address only, behind a bearer token.

The token (32 random bytes, URL-safe) is written to ``<data dir>/service/token`` (mode 0600)
when the endpoint starts and removed when it stops: whoever can read the user's state dir
can use it, nobody else. Every HTTP request must carry ``Authorization: Bearer <token>``;
anything else gets 401. Each MCP session (the transport's ``mcp-session-id``) has its own
read records, as a stdio session does, and they go when the client ends the session (its DELETE).
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
import struct
import sys
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING

from ..errors import MemoryToolError, UsageError, describe_os_error, one_line, os_error
from ..memory.protocol import MAX_LINE
from ..service_files import remove_token, service_dir, write_token
from .body import BoundedBody, replay
from .refusals import has_request_id
from .server import take_back

if TYPE_CHECKING:  # uvicorn loads only when the endpoint starts
    from collections.abc import Callable

    import uvicorn

    from ..memory import Memory
    from ..settings import Settings

START_WAIT_S = 20.0
# Connections served at once, as the service's socket bounds its own (serve.service.MAX_CONNECTIONS): each
# holds a file descriptor, and the service's files, shards and socket clients need them too. These are
# the connections that sent a request with the bearer token; those that have not yet (each new one, any
# other local user's) have a bound of their own, the oldest closed to make room for a new one, and a
# shorter wait for a request head: whoever lacks the token never takes the owner's clients' places.
MAX_HTTP_CONNECTIONS = 256
MAX_UNAUTHENTICATED = 64
UNAUTHENTICATED_HEAD_S = 10.0
# MCP sessions open at once, and how long one is kept without a request (the SDK's own defaults were
# 10,000 and 30 minutes: a client that exits without its DELETE, killed or crash-looping, holds its
# place until then; see :class:`_SessionBounds`).
MAX_HTTP_SESSIONS = 256
SESSION_IDLE_S = 30 * 60.0
log = logging.getLogger(__name__)


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``PORT``) on a loopback address; port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    try:
        number = int(port)
    except ValueError:
        raise UsageError(f"--http takes HOST:PORT or PORT, not {text!r}") from None
    if not 0 <= number <= 65535:
        raise UsageError(f"--http: port {number} is out of range")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise UsageError(f"--http listens on a loopback address only (127.0.0.1, ::1, localhost), not {host!r}")
    return host, number


def bearer_ok(headers, expected: bytes) -> bool:
    """Whether a request's headers (lower-case names, as ASGI gives them) carry ``Authorization:
    Bearer <expected>``: the scheme case-insensitive (RFC 9110), the token compared in constant time."""
    scheme, _, given = dict(headers).get(b"authorization", b"").partition(b" ")
    return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), expected)


# How the kernel names the owner of the other end of a loopback connection (Linux): sock_diag's
# lookup of one TCP socket by its addresses (netlink, NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY), and
# /proc/net/tcp{,6} where netlink is refused. See :func:`peer_uid`.
_SOCK_DIAG, _BY_FAMILY, _NLMSG_ERROR, _NO_COOKIE = 4, 20, 2, 0xFFFFFFFF
_diag_refused: list[bool] = [False]  # netlink refused once (a sandbox): /proc from then on


def _diag_uid(family: int, peer: bytes, peer_port: int, ours: bytes, our_port: int) -> int | None:
    """The uid of the socket whose own address is ``peer`` and whose remote is ``ours``, asked of
    sock_diag (one lookup, not a dump of the table). None: no such socket owned by a process."""
    sockid = struct.pack(">HH", peer_port, our_port) + peer + ours + struct.pack("=III", 0, _NO_COOKIE, _NO_COOKIE)
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _SOCK_DIAG) as link:
        link.settimeout(1.0)  # answered within the send; never a wait of the event loop's
        link.sendto(struct.pack("=IHHII", 16 + len(request), _BY_FAMILY, 1, 1, 0) + request, (0, 0))  # NLM_F_REQUEST
        answer = link.recv(8192)
    if len(answer) < 16 + 88 or struct.unpack_from("=H", answer, 4)[0] == _NLMSG_ERROR:
        return None  # ENOENT: the peer's socket is gone
    # inet_diag_msg: family, state, timer, retrans, its sockid (48 bytes), expires, rqueue, wqueue, uid, inode
    uid, inode = struct.unpack_from("=II", answer, 16 + 4 + 48 + 12)
    return uid if inode else None  # no inode: closed by its process (orphans read as uid 0)


def _proc_uid(family: int, peer: bytes, peer_port: int, ours: bytes, our_port: int) -> int | None:
    """As :func:`_diag_uid`, from the row of /proc/net/tcp (tcp6) whose local address is ``peer``
    and whose remote is ``ours``: each address as the kernel prints it, 32-bit words in host order."""

    def shown(address: bytes, port: int) -> bytes:
        words = (int.from_bytes(address[i:i + 4], sys.byteorder) for i in range(0, len(address), 4))
        return b"".join(b"%08X" % word for word in words) + b":%04X" % port

    with open("/proc/net/tcp6" if family == socket.AF_INET6 else "/proc/net/tcp", "rb") as table:
        rows = table.read()
    key = b" " + shown(peer, peer_port) + b" " + shown(ours, our_port) + b" "
    at = rows.find(key)
    if at < 0:
        return None
    fields = rows[at + len(key):rows.find(b"\n", at)].split()  # st, tx:rx, tr:when, retrnsmt, uid, timeout, inode
    return int(fields[4]) if len(fields) > 6 and fields[6] != b"0" else None


def peer_uid(transport) -> int | None:
    """The uid of the process that owns the other end of an accepted loopback connection, as the
    kernel tells it (Linux); None where it cannot be learnt: another system, the peer already
    closed. A process cannot pass for another uid: a socket's owner is the one that created it."""
    sock = transport.get_extra_info("socket")
    peer, ours = transport.get_extra_info("peername"), transport.get_extra_info("sockname")
    if not sys.platform.startswith("linux") or sock is None or not peer or not ours:
        return None
    family = sock.family
    if family not in (socket.AF_INET, socket.AF_INET6):
        return None
    try:
        theirs, mine = socket.inet_pton(family, peer[0]), socket.inet_pton(family, ours[0])
    except OSError:
        return None
    if not _diag_refused[0]:
        try:
            return _diag_uid(family, theirs.ljust(16, b"\0"), peer[1], mine.ljust(16, b"\0"), ours[1])
        except OSError:
            _diag_refused[0] = True
    try:
        return _proc_uid(family, theirs, peer[1], mine, ours[1])
    except (OSError, ValueError, IndexError):
        return None


class _BearerAuth:
    """ASGI middleware: 401 unless ``Authorization: Bearer <token>`` (compared in constant time)."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = token.encode("ascii")

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            if not bearer_ok(scope.get("headers") or [], self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body",
                            "body": b'{"error": "missing or wrong bearer token (see <state dir>/.../service/token)"}'})
                return
        await self.app(scope, receive, send)


class _SessionEnds:
    """ASGI middleware: once the transport has ended an MCP session (the client's DELETE with its
    ``mcp-session-id``, answered 2xx), ``end(session)`` drops what the service keeps for it."""

    def __init__(self, app, end):
        self.app = app
        self.end = end

    async def __call__(self, scope, receive, send):
        sid = None
        if scope["type"] == "http" and scope.get("method") == "DELETE":
            sid = _header(scope, b"mcp-session-id")
        if not sid:
            await self.app(scope, receive, send)
            return
        status: list[int] = []

        async def watched(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        await self.app(scope, receive, watched)
        if status and 200 <= status[0] < 300:
            import anyio

            await anyio.to_thread.run_sync(self._end, f"http-{sid.decode('ascii', 'replace')}")

    def _end(self, session: str) -> None:
        """In a worker thread: the state database may be busy (another process writing) for seconds,
        and every other session's request waited in the event loop meanwhile."""
        try:
            self.end(session)
        except (MemoryToolError, OSError) as exc:  # its records stay: they never let another session's write through
            said = exc.message if isinstance(exc, MemoryToolError) else describe_os_error(exc)
            # One line, escaped: the message may quote a name (a newline split the log line, an escape drove the terminal).
            log.warning("MCP over HTTP: the read records of session %s, which ended, are kept: %s", one_line(session),
                        one_line(said))


class _SessionBounds:
    """ASGI middleware: at most ``MAX_HTTP_SESSIONS`` MCP sessions open. A client that exits without
    its DELETE (killed, crash-looping) leaves its session open until ``SESSION_IDLE_S`` without a
    request end it; with the SDK alone, once its bound was reached every new session was refused
    ("Too many open sessions") until then, saying neither when nor what to do. A new session now
    closes the one idle longest (none of its requests in flight: never a call running, nor an open
    event stream), by the DELETE its client would send (so its read records go as theirs do); only
    when every session has a request in flight is it refused, in one line saying so. A request for a
    session that is not open is answered 404 saying why it may have ended, and to initialize again.

    Every session the SDK opens is counted here (from its opening answer's ``mcp-session-id``, before
    the client can name it), so the SDK never has more open than this counts, nor reaches its own
    bound (the same) first."""

    def __init__(self, app):
        self.app = app
        # Session id -> [requests in flight, when the last one ended], least recently active first.
        self.open: OrderedDict[str, list[float]] = OrderedDict()
        self.opening = 0  # opening requests not answered yet
        self.said_full = False  # the bound said once each time it is reached, not per session

    async def __call__(self, scope, receive, send):
        version = _header(scope, b"mcp-protocol-version") if scope["type"] == "http" else None
        if (scope["type"] != "http" or scope.get("path") != "/mcp"
                or (version is not None and _version_refused(version.decode("latin-1"), in_session=True))):
            await self.app(scope, receive, send)  # not the SDK's sessions (its sessionless protocol: it opens none)
            return
        sid = _header(scope, b"mcp-session-id")
        if sid is None:
            await self._opening(scope, receive, send)
            return
        key = sid.decode("latin-1")
        entry = self.open.get(key)
        if entry is None or (not entry[0] and time.monotonic() - entry[1] >= SESSION_IDLE_S):
            self.open.pop(key, None)
            minutes = f"{SESSION_IDLE_S / 60:g}"
            await _answer(send, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": (
                f"MCP session {json.dumps(key[:64])} is not open: its client ended it, it went {minutes} minutes "
                f"without a request, or it was the one idle longest when {MAX_HTTP_SESSIONS} were open and a new one "
                "was opened; initialize a new session")}}, status=404)
            return
        entry[0] += 1
        self.open.move_to_end(key)
        status: list[int] = []

        async def watched(message):
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            entry[0] -= 1
            entry[1] = time.monotonic()
            if key in self.open:
                self.open.move_to_end(key)
            if status and (status[0] == 404 or (scope.get("method") == "DELETE" and 200 <= status[0] < 300)):
                self.open.pop(key, None)  # ended by its client, or by the SDK (idle) already

    async def _opening(self, scope, receive, send) -> None:
        """A request without a session: an initialize opens one, when there is room or room is made."""
        messages = []
        if scope.get("method") == "POST":
            messages.append(await receive())  # the whole body, in one message (BoundedBody, outside this)
            now = time.monotonic()
            for stale in [k for k, (busy, since) in self.open.items() if not busy and now - since >= SESSION_IDLE_S]:
                del self.open[stale]  # ended by the SDK already
            initialize = _is_initialize(messages[0].get("body", b""))  # (anything else opens nothing: the SDK refuses it)
            if initialize and len(self.open) + self.opening >= MAX_HTTP_SESSIONS:
                if not await self._make_room(scope):
                    log.warning("MCP over HTTP: %d sessions are open, each with a request in flight; refusing a new one",
                                MAX_HTTP_SESSIONS)
                    await _answer(send, {"jsonrpc": "2.0", "id": None, "error": {"code": -32000, "message": (
                        f"{MAX_HTTP_SESSIONS} MCP sessions are open, each with a request in flight: try again when "
                        "one of them ends (an idle one is closed to make room for a new session)")}}, status=503)
                    return
            elif initialize:
                self.said_full = False
        self.opening += 1
        opened: list[list[float]] = []

        async def watched(message):
            if message["type"] == "http.response.start" and message["status"] < 400:
                sid = next((v for k, v in message.get("headers") or [] if k.lower() == b"mcp-session-id"), None)
                if sid is not None:  # counted before the client can name it in a request of its own
                    self.opening -= 1
                    opened.append([1, 0.0])
                    self.open[sid.decode("latin-1")] = opened[0]
            await send(message)

        try:
            await self.app(scope, replay(messages, receive), watched)
        finally:
            if opened:
                opened[0][0] -= 1
                opened[0][1] = time.monotonic()
            else:
                self.opening -= 1

    async def _make_room(self, scope) -> bool:
        """Ends the session idle longest, as its client's DELETE would; False when every one is busy."""
        idle = next((k for k, (busy, _) in self.open.items() if not busy), None)
        if idle is None:
            return False
        del self.open[idle]  # from now on its id is answered 404 here, never let through
        if not self.said_full:
            log.warning("MCP over HTTP: %d sessions are open; closing the one idle longest to make room for each new one",
                        MAX_HTTP_SESSIONS)
            self.said_full = True
        given = [{"type": "http.request", "body": b"", "more_body": False}]

        async def receive():
            return given.pop() if given else {"type": "http.disconnect"}

        async def ignore(_message):
            pass

        host = _header(scope, b"host") or b""
        await self.app({**scope, "method": "DELETE", "query_string": b"", "headers": [
            (b"host", host), (b"mcp-session-id", idle.encode("latin-1"))]}, receive, ignore)
        return True


def _is_initialize(body: bytes) -> bool:
    """Whether a POST body is an ``initialize`` request (one is small: a larger body is not looked into)."""
    if len(body) > 1 << 16:
        return False
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(parsed, dict) and parsed.get("method") == "initialize"


LOST_KEPT_S = 600.0  # how long a lost answer waits for its call to end (one refused before it ran never does)


class _Deliveries:
    """The memory_get calls of HTTP sessions in flight, and those whose answer was lost.

    A read is recorded for the write guard when it runs; over HTTP its answer may then never reach
    the client (it gave up waiting, the connection dropped), and the session could write over a
    version it never saw. So a read whose answer is lost is taken back (``Memory.forget_read``): by
    the endpoint, when the call had ended before the loss, else by the call when it ends. The
    session then reads again before it writes."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str], dict] = {}  # {"undo": ..., "ended": bool, "lost": monotonic or None}

    def begin(self, key: tuple[str, str]) -> None:
        with self._lock:
            now = time.monotonic()
            for stale in [k for k, c in self._calls.items() if c["lost"] is not None and now - c["lost"] > LOST_KEPT_S]:
                del self._calls[stale]
            self._calls[key] = {"undo": None, "ended": False, "lost": None}

    def delivered(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._calls.pop(key, None)

    def lost(self, key: tuple[str, str]) -> Callable[[], None] | None:
        """The answer did not reach the client: the undo to run now (the call has ended), or None."""
        with self._lock:
            call = self._calls.get(key)
            if call is None:
                return None
            if call["ended"]:
                del self._calls[key]
                return call["undo"]
            call["lost"] = time.monotonic()
            return None

    def ended(self, ctx, undo: Callable[[], None] | None) -> None:
        """In the call's worker thread, once its read ran: taken back at once when its answer is lost already."""
        headers = getattr(ctx.request, "headers", None) or {}
        key = (headers.get("mcp-session-id") or "", request_key(ctx.request_id))
        with self._lock:
            call = self._calls.get(key)
            if call is None:
                return
            call["ended"], call["undo"] = True, undo
            if call["lost"] is None:
                return
            del self._calls[key]
        take_back(undo)


_ANSWER = re.compile(rb'"(?:result|error)":')


def _delivery_watched(receive, send):
    """``receive`` and ``send`` watched for whether a JSON-RPC answer went out before the client went away."""
    state = {"sent": False, "gone": False}

    async def watched_receive():
        message = await receive()
        if message["type"] == "http.disconnect" and not state["sent"]:
            state["gone"] = True
        return message

    async def watched_send(message):
        if message["type"] == "http.response.body" and not state["gone"]:
            body = message.get("body", b"")
            # The answer (an event or a JSON body holding a result or an error), not a notification
            # sent before it: its JSON's own key, never a string's (a quote in one is escaped).
            state["sent"] = state["sent"] or _ANSWER.search(body) is not None
        await send(message)

    return watched_receive, watched_send, state


class _OneRequestPerId:
    """ASGI middleware: a JSON-RPC request whose id is already in flight in the same MCP session is
    answered at once with an error, instead of waiting on a response the transport can route to
    only one of them (concurrent calls reusing an id were left hanging for minutes); a body the SDK
    would refuse in its validator's words is refused in plain ones (:mod:`.refusals`), and a session's
    request whose ``MCP-Protocol-Version`` no session can have agreed on, 400, naming it."""

    def __init__(self, app, deliveries: _Deliveries):
        self.app = app
        self.deliveries = deliveries
        self.inflight: set[tuple[bytes, str]] = set()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope.get("method") != "POST":
            version = _header(scope, b"mcp-protocol-version")
            unsupported = _version_refused(version.decode("latin-1"), in_session=True) if version is not None else None
            if unsupported is not None and _header(scope, b"mcp-session-id"):
                await _answer(send, {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": unsupported}},
                              status=400)
                return
            await self.app(scope, receive, send)
            return
        sid = _header(scope, b"mcp-session-id")
        header = _header(scope, b"mcp-protocol-version")
        # The protocol version the client agreed on (it sends it on every request after initialize;
        # without it, the spec says to assume 2025-03-26): its methods' params are checked against it.
        version = (header or b"2025-03-26").decode("latin-1")
        unsupported = _version_refused(version, in_session=True) if sid else (
            _version_refused(version, in_session=False) if header is not None else None)
        if not sid and unsupported is None:  # an initialize or stateless: no id in flight to share
            await self.app(scope, receive, send)
            return
        message = await receive()  # the whole body, in one message (BoundedBody, outside this)
        data = message.get("body", b"")
        try:
            parsed = json.loads(data)
        except (ValueError, RecursionError):
            parsed = _UNREADABLE  # the SDK's own parse error says it
        if unsupported is not None:
            asked_id = parsed.get("id") if isinstance(parsed, dict) and has_request_id(parsed) else None
            await _answer(send, {"jsonrpc": "2.0", "id": asked_id, "error": {"code": -32600, "message": unsupported}},
                          status=400)
            return
        refused = _refusal(data, parsed, version)
        if refused is not None:
            await _answer(send, refused)
            return
        ids = _request_ids(parsed)
        reads = bool(ids) and isinstance(parsed, dict) and parsed.get("method") == "tools/call" and isinstance(
            parsed.get("params"), dict) and parsed["params"].get("name") == "memory_get"
        asked = parsed["id"] if ids and isinstance(parsed, dict) else None
        del data, parsed  # the SDK parses the body again: not kept twice while the call runs
        taken = [i for i in ids if (sid, i) in self.inflight]
        if taken:
            await _answer(send, {"jsonrpc": "2.0", "id": asked, "error": {
                "code": -32600, "message": f"request id {json.dumps(asked)} is already in flight in this session (as "
                                           f"{taken[0]!r}: an id is told by its text, 7 and \"7\" alike); give each "
                                           "request its own id"}})
            return
        keys = {(sid, i) for i in ids}
        self.inflight |= keys
        try:
            if not reads:
                await self.app(scope, replay([message], receive), send)
                return
            key = (sid.decode("latin-1"), ids[0])
            self.deliveries.begin(key)
            receive, send, state = _delivery_watched(replay([message], receive), send)
            try:
                await self.app(scope, receive, send)
            finally:
                import anyio

                with anyio.CancelScope(shield=True):
                    if state["sent"] and not state["gone"] and await _written(scope):
                        self.deliveries.delivered(key)
                    elif (undo := self.deliveries.lost(key)) is not None:
                        await anyio.to_thread.run_sync(take_back, undo)
        finally:
            self.inflight -= keys


# The ASGI scope's extension by which :func:`_protocol`'s connections tell whether what they were
# given went out whole; and how long an answer may take to go out before its client counts as gone.
WRITTEN = "openclaw_memory.written"
WRITTEN_WAIT_S = 60.0


async def _written(scope) -> bool:
    """Whether the answer the app sent went out whole: every byte of it handed to the kernel before
    the connection was lost (uvicorn counts an answer as sent once it is in its buffer: a client that
    closed after 227 KB of a 30 MiB read kept the read recorded). True where the server cannot tell."""
    import anyio

    written = (scope.get("extensions") or {}).get(WRITTEN)
    if written is None:
        return True
    with anyio.move_on_after(WRITTEN_WAIT_S):  # a client that stopped reading, its connection open
        return await written()
    return False


async def _answer(send, error: dict, status: int = 200) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": json.dumps(error).encode("utf-8")})


def _version_refused(version: str, in_session: bool) -> str | None:
    """Why a request with ``MCP-Protocol-Version: version`` is refused (400, as the spec says), or
    None: in a session, a version initialize can have agreed on; outside one (an initialize, or the
    SDK's sessionless protocol), any version the SDK speaks. The SDK took any other for its
    sessionless protocol's and refused the request in that one's terms (``params._meta must be an
    object carrying the required 'io.modelcontextprotocol/protocolVersion' ... envelope keys``), even
    an initialize."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, KNOWN_PROTOCOL_VERSIONS

    allowed = HANDSHAKE_PROTOCOL_VERSIONS if in_session else KNOWN_PROTOCOL_VERSIONS
    if version in allowed:
        return None
    hint = "send the version initialize agreed on" if in_session else "send initialize without it, or one of these"
    return f"MCP-Protocol-Version {json.dumps(version[:64])} is not supported ({', '.join(reversed(allowed))}): {hint}"


_UNREADABLE = object()  # a body that is not JSON


def _refusal(data: bytes, parsed: object, version: str) -> dict | None:
    """The error for a body the SDK would refuse in its validator's words (a batch, a tools/call
    without a tool's name or arguments...) or in none (params an MCP method does not take), in plain
    ones; None: the SDK takes it (or words it well)."""
    from .refusals import INVALID_REQUEST, has_request_id, lone_surrogate_reason, message_problem, params_problem

    if parsed is _UNREADABLE:
        return None
    problem = message_problem(parsed)
    if problem is None and isinstance(parsed, dict) and "method" in parsed and has_request_id(parsed):
        problem = params_problem(parsed["method"], version, parsed.get("params"))
    if problem is None and (surrogate := lone_surrogate_reason(data, parsed)) is not None:
        problem = INVALID_REQUEST, surrogate
    if problem is None or (isinstance(parsed, dict) and "id" not in parsed):
        return None  # a notification gets no answer
    request_id = parsed["id"] if isinstance(parsed, dict) and has_request_id(parsed) else None
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": problem[0], "message": f"the request cannot be read: {problem[1]}"}}


def _request_ids(parsed: object) -> list[str]:
    """The id of the JSON-RPC request of a POST body (a batch is refused before), as the transport
    routes its answer: by ``str(id)``, so 7 and "7" are one id (keyed by their JSON, both went through,
    the second got the first's answer, the first none, and a memory_get's read was recorded as
    delivered to a session that never saw it)."""
    from .refusals import has_request_id

    return [request_key(parsed["id"])] if isinstance(parsed, dict) and "method" in parsed and has_request_id(parsed) else []


def request_key(request_id: object) -> str:
    """A request's id as the SDK's HTTP transport keys its answer stream (``str``)."""
    return str(request_id)


def _header(scope, name: bytes) -> bytes | None:
    """The first value of the header ``name``, as Starlette's ``Request.headers`` (and so the SDK)
    reads it: with two ``mcp-session-id`` headers, a DELETE ended the first's session and dropped
    the last's read records."""
    return next((value for key, value in scope.get("headers") or [] if key == name), None)


def _session_of(ctx) -> str:
    """``http-<mcp-session-id>``: the transport routes a request to its session by that header,
    so it names the session the request belongs to (a stateless request gets its own)."""
    headers = getattr(ctx.request, "headers", None) or {}
    sid = headers.get("mcp-session-id")
    return f"http-{sid}" if sid else f"http-{id(ctx.session):x}"


def _served_names(host: str) -> list[str]:
    """The names a request may give for the loopback address served (its ``Host``, without the port)."""
    # `localhost` names the loopback by definition: a rebinding page cannot make a browser send it.
    return ["localhost", "127.0.0.1", "[::1]"] if host == "localhost" else [f"[{host}]" if ":" in host else host, "localhost"]


def _transport_security(host: str):
    """The SDK's own DNS-rebinding check, on the same names as :class:`_LoopbackOnly` (which answers first)."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = _served_names(host)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*hosts, *(f"{h}:*" for h in hosts)],
        allowed_origins=[*(f"http://{h}" for h in hosts), *(f"http://{h}:*" for h in hosts)],
    )


_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]]+)(?::[0-9]{1,5})?")


class _LoopbackOnly:
    """ASGI middleware, outermost: DNS-rebinding protection before anything answers. A request
    whose ``Host`` is not one of ``names`` (an optional port after it), or is empty or missing, gets
    421; one whose ``Origin``, when sent, is not ``http://`` and such a host gets 403. The SDK checks
    the same, but only for what reaches it: our own answers (a refused body, a repeated id, the
    bearer token's 401) came before it."""

    def __init__(self, app, names: list[str]):
        self.app = app
        self.names = {n.lower() for n in names}

    def _ours(self, host: bytes) -> bool:
        match = _HOST.fullmatch(host.decode("latin-1"))
        return match is not None and match.group(1).lower() in self.names

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            # Every copy of each checked (one request's two Host headers are read first or last by others).
            headers = scope.get("headers") or []
            hosts = [value for key, value in headers if key == b"host"]
            origins = [value for key, value in headers if key == b"origin"]
            if not hosts or not all(self._ours(host) for host in hosts):
                await _plain(send, 421, b"the Host header must name the loopback address this endpoint serves")
                return
            if not all(origin.startswith(b"http://") and self._ours(origin[len(b"http://"):]) for origin in origins):
                await _plain(send, 403, b"the Origin header must be the loopback address this endpoint serves")
                return
        await self.app(scope, receive, send)


async def _plain(send, status: int, text: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": text})


def _protocol(head_timeout: float, token: str):
    """uvicorn's HTTP/1.1 protocol, bounded: one whose request head (its request line and headers)
    has not arrived whole ``head_timeout`` seconds after the connection was made, or after the
    answer before it, is closed. uvicorn waits for a head without end (a connection that sent
    nothing, or half a header, was held for good: each one a file descriptor of the service, until it
    could open no file).

    A connection counts against ``MAX_HTTP_CONNECTIONS`` once a request head it sent carries the
    bearer token; one past them is answered 503 and closed. Until then (a new connection, one that
    sent a wrong token or none) it is one of at most ``MAX_UNAUTHENTICATED``, each waited for at most
    ``UNAUTHENTICATED_HEAD_S``: a new one past them closes the oldest. Another local user without
    the token (300 idle connections held all 256 places, and the owner's client got no answer) so
    never takes the owner's places.

    Where the kernel says who holds the other end (:func:`peer_uid`: Linux), the oldest closed is
    the oldest of another user's (not the service's owner's, nor root's), the newcomer itself when
    only the owner's wait: another user's flood of new connections closed the owner's clients'
    before their request head was read (a reset). Where it cannot tell, the oldest of all."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    expected = token.encode("ascii")
    trusted_uids = {os.geteuid(), 0}
    waiting: dict[Bounded, None] = {}  # without the token yet, oldest first
    admitted: set[Bounded] = set()  # sent a request with the token
    full = {"admitted": False, "waiting": False}  # said once each time a bound is reached, not per connection

    class Bounded(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None
        _closed: bool | None = None  # None: open; True: closed cleanly (its buffer went out); False: lost
        _told: asyncio.Event | None = None  # set when the buffer empties or the connection ends
        _refused = False  # sent the token past MAX_HTTP_CONNECTIONS: its requests are answered 503
        _owners: bool | None = None  # its peer is the owner's or root's (asked of the kernel once, when needed)

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            app = self.app

            async def telling_written(scope, receive, send):
                if self._refused:
                    await _plain(send, 503, b"too many MCP connections are open; try again when some close")
                    return
                scope.setdefault("extensions", {})[WRITTEN] = self.written
                await app(scope, receive, send)

            self.app = telling_written

        async def written(self) -> bool:
            """Whether every byte this connection was given went to the kernel before it was lost.
            asyncio tells a protocol that its buffer drained only down to a low-water mark, and only
            once it paused it: the limits are 0 while this waits, so it is told at the last byte."""
            transport = self.transport
            try:
                while self._closed is None:
                    if not transport.is_closing() and transport.get_write_buffer_size() == 0:
                        return True
                    self._told = asyncio.Event()
                    if not transport.is_closing():
                        transport.set_write_buffer_limits(high=0, low=0)
                    await self._told.wait()
                return self._closed
            finally:
                self._told = None
                if self._closed is None:
                    transport.set_write_buffer_limits()  # asyncio's own, as uvicorn leaves them

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._told is not None:
                self._told.set()

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            waiting[self] = None
            if len(waiting) > MAX_UNAUTHENTICATED:
                if not full["waiting"]:
                    log.warning("MCP over HTTP: %d connections have sent no request with the token; closing the oldest "
                                "(another user's before the owner's) to make room for each new one", MAX_UNAUTHENTICATED)
                full["waiting"] = True
                # Another user's first (this one at worst), never the owner's for theirs; where the
                # kernel cannot tell, every peer is another's: the oldest of all, as before.
                oldest = next((c for c in waiting if not c.owners()), None)
                if oldest is None:  # only the owner's (or root's) wait, this one too
                    oldest = next(iter(waiting))
                del waiting[oldest]
                oldest._stop_waiting()
                oldest.transport.close()
                if oldest is self:
                    return
            else:
                full["waiting"] = False
            self._await_head()

        def owners(self) -> bool:
            """Whether the other end is the owner's (or root's) process: asked of the kernel once."""
            if self._owners is None:
                self._owners = peer_uid(self.transport) in trusted_uids
            return self._owners

        def handle_events(self) -> None:
            super().handle_events()  # a request head that arrived has its scope now (its app not yet run)
            if self in waiting and self.scope is not None and bearer_ok(self.scope["headers"], expected):
                del waiting[self]
                if len(admitted) >= MAX_HTTP_CONNECTIONS:
                    if not full["admitted"]:
                        log.warning("MCP over HTTP: %d connections are open; refusing more until some close",
                                    MAX_HTTP_CONNECTIONS)
                    full["admitted"] = True
                    self._refused = True  # answered 503, and closed
                    return
                full["admitted"] = False
                admitted.add(self)

        def _await_head(self) -> None:
            self._stop_waiting()
            wait = head_timeout if self in admitted else min(head_timeout, UNAUTHENTICATED_HEAD_S)
            self._head_timer = self.loop.call_later(wait, self._head_late)

        def _stop_waiting(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_late(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()  # nothing to answer: no request was made

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the head is in (a body's time is BoundedBody's)
                self._stop_waiting()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._await_head()  # the next request on a kept connection

        def shutdown(self) -> None:
            """The stop: a GET's event stream (a client listening for the server's messages, open as
            long as its session: the SDK's own client keeps one) is closed at once, not waited for as
            a request in flight: every stop waited 5 s for it, saying nothing. A tool call in flight
            (a POST) is let finish, as uvicorn does."""
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete and (self.scope or {}).get("method") == "GET":
                cycle.keep_alive = False
                self.transport.close()
                return
            super().shutdown()

        def connection_lost(self, exc) -> None:
            # Closed without an error only once its buffer went out (asyncio's close flushes first).
            self._closed = exc is None
            if self._told is not None:
                self._told.set()
            self._stop_waiting()
            waiting.pop(self, None)
            admitted.discard(self)
            super().connection_lost(exc)

    return Bounded


class _StartFailure(logging.Filter):
    """uvicorn's error while the endpoint starts (a port in use: ``[Errno 98] error while attempting
    to bind on address ...``), kept for the one line that says it, not printed too."""

    def __init__(self):
        super().__init__()
        self.reason = ""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        said = record.msg.strerror if isinstance(record.msg, OSError) and record.msg.strerror else record.getMessage()
        self.reason = str(said).rpartition("): ")[2]  # the address is said already
        return False


class HttpEndpoint:
    """The endpoint, serving ``memory`` (the service's own); ``on_session_end`` hears each session that
    ends, ``on_call`` the session of each tool call (the service counts them with its socket's)."""

    def __init__(self, memory: Memory, settings: Settings, address: str, on_session_end: Callable[[str], None],
                 on_call: Callable[[str], None] = lambda _session: None):
        self.memory = memory
        self.on_session_end = on_session_end
        self.on_call = on_call
        self.settings = settings
        self.host, self.port = parse_address(address)
        self.url: str | None = None
        self.token: str | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> HttpEndpoint:
        import uvicorn

        from .server import MemoryTools, build_server

        self.token = secrets.token_urlsafe(32)
        try:
            write_token(self.settings, self.token)
        except OSError as exc:  # (a full disk: said naming no place)
            raise os_error(exc, f"the memory service's folder {service_dir(self.settings)}",
                           "MCP over HTTP did not start", folder=service_dir(self.settings)) from None
        deliveries = _Deliveries()
        tools = MemoryTools(self.memory, session_of=self._session_of, on_read=deliveries.ended)
        # The SDK's default (4 MiB) refuses a write that stdio and the CLI take, with a 413 that its
        # client shows the model only as "Server returned an error response".
        app = build_server(tools).streamable_http_app(host=self.host, transport_security=_transport_security(self.host),
                                                      max_request_body_size=MAX_LINE, max_sessions=MAX_HTTP_SESSIONS,
                                                      session_idle_timeout=SESSION_IDLE_S)
        sessions = _SessionBounds(_SessionEnds(app, self.on_session_end))
        app = BoundedBody(_OneRequestPerId(sessions, deliveries), MAX_LINE, self.settings.service.http_body_timeout)
        app = _LoopbackOnly(_BearerAuth(app, self.token), _served_names(self.host))
        # No log_config: uvicorn's lines go to the process's own handlers (`serve` prints them as its own lines).
        config = uvicorn.Config(app, host=self.host, port=self.port, log_level="warning", lifespan="on",
                                http=_protocol(self.settings.service.http_body_timeout, self.token), log_config=None)
        server = self._server = uvicorn.Server(config)
        thread = self._thread = threading.Thread(target=server.run, name="mcp-http", daemon=True)
        failed = _StartFailure()
        logging.getLogger("uvicorn.error").addFilter(failed)
        try:
            thread.start()
            deadline = time.monotonic() + START_WAIT_S
            while not server.started:
                if not thread.is_alive() or time.monotonic() > deadline:
                    self.stop()
                    raise UsageError(f"--http: cannot listen on {self.host}:{self.port} ({failed.reason or 'in use?'})")
                time.sleep(0.02)
        finally:
            logging.getLogger("uvicorn.error").removeFilter(failed)
        port = server.servers[0].sockets[0].getsockname()[1]
        shown = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{shown}:{port}/mcp"
        return self

    def _session_of(self, ctx) -> str:
        session = _session_of(ctx)
        self.on_call(session)
        return session

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(5.0)
        remove_token(self.settings)
