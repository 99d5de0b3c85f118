"""The stdio transport, with the handshake answered before the MCP SDK is imported.

Importing the SDK costs more than a second of CPU (its protocol models are built at import), and
a client gives a stdio server a few seconds to answer ``initialize`` (OpenClaw: 5): on a loaded
machine the import alone missed that (and OpenClaw's probe waits 1.5 s for the tool list). So the
SDK is imported in a thread while the handshake is answered here: a well-formed ``initialize``
with what the server will say anyway (protocol version, tools capability, server info,
instructions), then ``tools/list`` with the tools' own listing. Then the SDK is served every byte
read so far, and its own answers to those requests are checked against the early ones and
dropped: the SDK's session state is exactly as if it had answered. Anything else (a tool call, a
line that is not the handshake) waits for the SDK and goes to it untouched.

As the SDK's own stdio transport does, the wire gets private descriptors while serving: fd 0
reads the null device and fd 1 writes to stderr, so nothing else in the process (a child, a
stray print) can read from or write to the protocol stream.

Three things the SDK's stdio loop does not do are done on its way in (:class:`_Lines`): a line it
cannot read (not JSON, bytes that are not UTF-8, a lone UTF-16 surrogate as JavaScript writes half
an emoji, a number of thousands of digits) gets a JSON-RPC error instead of no answer at all; a
line past ``MAX_LINE`` is refused without being held whole; and at the end of the input every
request already read is answered before the server exits. SIGTERM and SIGHUP end the input as a
closed one does.

The input is read on, always, but a request goes to the SDK only while fewer than
``MAX_UNANSWERED`` requests it was given wait for their answer: the SDK runs each request it is
given at once and holds its answer until the client reads it, so a client that kept sending and
never read made the server hold every answer (1,000 reads of a 1 MB note: 2 GiB). The requests read
meanwhile wait in order, as read, and go to the SDK as answers are written. Reading stops only while
those waiting hold ``MAX_QUEUED`` characters: reading no more as soon as 16 answers waited stopped a
client that writes all its requests before reading any (a script, on one thread): it blocked writing
into a full pipe, never reaching its reads. A ``notifications/cancelled`` is taken at once: a call
still waiting is dropped (never run, never answered), one running is cancelled in the SDK. A call
keeps its place among the 16 until its answer is written or the SDK ends it unanswered (a cancel
that stops it): a cancel freeing it at once let a client whose reader was stuck, cancelling each call
it gave up on, make the server run and hold call after call.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import signal
import sys
import threading
from collections import Counter, deque
from collections.abc import Callable
from typing import Any, BinaryIO

from .. import faults
from ..errors import one_line
from ..memory.protocol import MAX_LINE
from ..signals import note_signals, stop_signals
from .refusals import (
    ID_IN_USE,
    INVALID_REQUEST,
    ODD_ID,
    has_request_id,
    message_problem,
    params_problem,
    surrogate_reason,
    tool_call_problem,
    top_level_id,
)

# The SDK's mcp_types.version HANDSHAKE_PROTOCOL_VERSIONS (initialize negotiates among these: the
# client's if listed, else the newest); a test keeps the two equal.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

# Requests read and not answered yet past which nothing more is read (see the module docstring):
# room for an agent's parallel calls; at most this many answers are held for a client that does not read.
MAX_UNANSWERED = 16

# The characters of request lines read and not given to the SDK yet past which nothing more is read:
# only a client that sends this much without reading an answer waits (its pipe fills).
MAX_QUEUED = 64 << 20
ENTRY = 512  # what a queued line is counted at least: its entry, its parsed message or refusal

# A byte order mark before a line's JSON (a Windows encoder writes one): ignored, as RFC 8259 lets a
# parser do. Read as JSON it was a parse error with id null, and the client waited for its answer.
BOM = "\ufeff"
UTF8_BOM = BOM.encode("utf-8")


def initialize_result(requested: Any, *, name: str, version: str, instructions: str) -> dict:
    """What the SDK answers to ``initialize`` for a server with tools only (no list changes)."""
    return {
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": name, "version": version},
        "instructions": instructions,
    }


def _initialize_request(message: object) -> dict | None:
    """``message`` when it is a well-formed ``initialize`` request, else None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    params = message.get("params")
    if not has_request_id(message) or not isinstance(params, dict):
        return None
    client = params.get("clientInfo")
    if not (isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)
            and isinstance(client, dict) and isinstance(client.get("name"), str) and isinstance(client.get("version"), str)):
        return None
    return message


def _int_or_none(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:  # past Python's limit on the digits of an int read from text
        return None


def _odd_id(line: str) -> bool:
    """Whether the message on ``line`` has an ``id`` member that is not a request id."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "id" in data and not has_request_id(data)


def _claim_wire() -> tuple[int, int, Callable[[], None]]:
    """Private copies of fd 0 and 1 for the protocol; fd 0 then reads /dev/null, fd 1 goes to stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)

    def restore() -> None:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)

    return wire_in, wire_out, restore


def _import_sdk() -> None:
    import anyio  # noqa: F401  (the import is the work)
    import mcp.server.lowlevel  # noqa: F401
    import mcp.server.stdio  # noqa: F401


def serve_stdio(make_server: Callable[[], Any], *, name: str, version: str, instructions: str, tools: list[dict],
                after: Callable[[], None] | None = None) -> None:
    """Serve the server ``make_server()`` builds over this process's stdin/stdout, answering the
    handshake (``initialize``, then ``tools/list`` with ``tools``) while the SDK is imported."""
    wire_in, wire_out, restore = _claim_wire()
    out = os.fdopen(os.dup(wire_out), "wb", buffering=0)
    loader = threading.Thread(target=_import_sdk, name="mcp-sdk-import", daemon=True)
    loader.start()
    # SIGTERM (how a client stops its server, and a service manager its processes) ends the input as
    # if the client had closed it: the calls already read are answered, then the server exits (it
    # was killed mid-call: a write cut short left its temp file, and the call no answer).
    # SIGHUP as SIGTERM (its terminal closed), unless ignored (started under nohup): it killed the
    # server mid-call, exit 129, a write's temp file left beside the note and the call unanswered.
    terminated: list[str] = []
    faults.reach("mcp:starting")  # (its SIGTERM and SIGHUP noted by the CLI, its own handlers not yet in place)
    stopping = stop_signals()
    restores = [note_signals(terminated, sig, said=f"stopping ({sig.name}): answering the calls already read\n".encode())
                for sig in (signal.SIGTERM, signal.SIGHUP) if sig in stopping]
    # Ctrl-C too: a KeyboardInterrupt raised wherever the event loop was (inside anyio's own
    # bookkeeping: "assert _task in task_state.cancel_scope._tasks") left the loop spinning at full
    # CPU, never exiting (1 in about 40 Ctrl-Cs after a call). It ends the input instead, then exits
    # 130. Not where it is ignored (started in the background of a script): it must run on.
    if signal.SIGINT in stopping:
        restores.append(note_signals(terminated, signal.SIGINT, said=b"stopping (Ctrl-C): answering the calls already read\n"))
    try:
        consumed, answered = _handshake(wire_in, out, loader, tools, terminated, initialize_result=lambda requested:
                                        initialize_result(requested, name=name, version=version, instructions=instructions))
        loader.join()
        _run(make_server(), consumed, wire_in, out, answered, terminated)
        if "SIGINT" in terminated:
            raise KeyboardInterrupt  # (out of the loop now: the CLI's "interrupted", exit 130)
    finally:
        for restore_signals in reversed(restores):
            restore_signals()
        out.close()
        restore()
        if after is not None:
            after()


def _handshake(wire_in: int, out: BinaryIO, loader: threading.Thread, tools: list[dict], terminated: list[str],
               initialize_result: Callable[[Any], dict]) -> tuple[bytes, dict[str, dict]]:
    """Answer what can be answered before the SDK is loaded; every byte read is returned (the SDK
    reads it all again), with the answers sent, by request id."""
    consumed = bytearray()
    answered: dict[str, dict] = {}
    start = 0  # where the next unread line begins in ``consumed``
    initialized = False
    while loader.is_alive() and not terminated:
        end = consumed.find(b"\n", start)
        if end < 0:
            if not loader.is_alive():
                break  # the SDK is ready: it reads the rest of the line itself
            if len(consumed) - start > 1 << 20:
                break  # no handshake line is this long: the SDK reads it (and the transport caps it)
            ready, _, _ = select.select([wire_in], [], [], 0.05)
            if ready:
                chunk = os.read(wire_in, 1 << 16)
                if not chunk:
                    break
                consumed += chunk
            continue
        line, start = bytes(consumed[start:end]).removeprefix(UTF8_BOM), end + 1
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: the SDK refuses it
            break
        if not isinstance(message, dict) or json.dumps(message.get("id")) in answered:
            break  # an id answered already: the SDK answers (it sees both), once each
        if not initialized and _initialize_request(message) is not None:
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(message["params"]["protocolVersion"])}
            initialized = True
        elif initialized and message.get("method") == "notifications/initialized" and "id" not in message:
            continue
        elif initialized and message.get("method") == "tools/list" and has_request_id(message) and not message.get("params"):
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools}}
        else:
            break  # only the SDK can answer this one
        out.write(json.dumps(answer, ensure_ascii=False).encode("utf-8") + b"\n")
        answered[json.dumps(message["id"])] = answer
    return bytes(consumed), answered


def _run(server: Any, consumed: bytes, wire_in: int, out: BinaryIO, answered: dict[str, dict],
         terminated: list[str]) -> None:
    import anyio

    wire_reader = _Prefixed(consumed, os.dup(wire_in), terminated)
    reader = io.TextIOWrapper(io.BufferedReader(wire_reader), encoding="utf-8", errors="surrogateescape")

    async def main() -> None:
        # The SDK's stdio_server, but with the input read apart from what is given to the SDK (see
        # the module docstring), and each request carrying the hook by which the SDK says it ended
        # one unanswered (a cancel that stopped it), which frees its place.
        wire = _Wire(out, answered)
        lines = _Lines(reader, wire)
        to_sdk, from_client = anyio.create_memory_object_stream[Any](0)
        to_client, from_sdk = anyio.create_memory_object_stream[Any](0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lines.read)
            tasks.start_soon(lines.feed, to_sdk)
            tasks.start_soon(wire.serve, from_sdk)
            await server.run(from_client, to_client, server.create_initialization_options())

    try:
        anyio.run(main)
    except* (BrokenPipeError, ConnectionResetError):
        sys.stderr.write("the client closed its end of the connection; stopping\n")
    finally:
        wire_reader.stopping = True  # a read still waiting for the client ends, so the reader can close
        reader.close()


class _Prefixed(io.RawIOBase):
    """The bytes already read from the wire, then the wire itself; once ``stopping`` (or
    ``terminated``: SIGTERM), the end."""

    def __init__(self, prefix: bytes, fd: int, terminated: list[str]):
        self.prefix = memoryview(prefix)
        self.fd = fd
        self.stopping = False
        self.terminated = terminated

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.prefix:
            n = min(len(buffer), len(self.prefix))
            buffer[:n] = self.prefix[:n]
            self.prefix = self.prefix[n:]
            return n
        # Waited for in slices: a blocked read would hold the reader's lock, and closing it (Ctrl-C)
        # would wait for a client that may never write again.
        while not select.select([self.fd], [], [], 0.2)[0] or self.terminated:
            if self.stopping or self.terminated:
                return 0
        data = os.read(self.fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


class _Lines:
    """The input, read (:meth:`read`) and given to the SDK (:meth:`feed`); see the module docstring."""

    def __init__(self, stdin: io.TextIOBase, wire: _Wire, limit: int = MAX_LINE):
        self.stdin = stdin
        self.wire = wire
        self.limit = limit
        # What was read and waits for the SDK, in order: (the request's id or None, its characters,
        # the parsed message or the bytes of this transport's own refusal to write).
        self.queue: deque[tuple[str | None, int, Any]] = deque()
        self.queued = 0  # the characters of the lines in ``queue``
        self.waiting: Counter[str] = Counter()  # the ids of the requests in ``queue``
        self.cancels: deque[Any] = deque()  # cancels of calls given to the SDK: they go before the queue
        self.ended = False  # the input ended (or SIGTERM)

    async def read(self) -> None:
        """Read the input to its end, while the queue holds less than ``MAX_QUEUED``."""
        import anyio
        from mcp import types

        async def readline(size: int) -> str:
            # Abandoned on cancel (Ctrl-C): a read waits for the client, which may never write again.
            return await anyio.to_thread.run_sync(self.stdin.readline, size, abandon_on_cancel=True)

        def refuse(line: str, exc: Exception, *, code: int | None = None, reason: str | None = None) -> None:
            refusal = self.wire.refusal(line, exc, code=code, reason=reason)
            if refusal:  # a notification's is nothing: nothing to queue and write
                self._put(None, len(refusal), refusal)

        try:
            while True:
                while self.queued >= MAX_QUEUED:
                    await self.wire.changed()
                if not (line := await readline(self.limit + 1)):
                    break
                if len(line) > self.limit and not line.endswith("\n"):
                    # A line past the cap (the service's and HTTP's): its rest is read and dropped, never held.
                    while (rest := await readline(1 << 20)) and not rest.endswith("\n"):
                        pass
                    refuse("", ValueError(), code=INVALID_REQUEST,
                           reason=f"it is longer than {self.limit >> 20} MiB; write a file that large in-process")
                    continue
                line = line.removeprefix(BOM)
                if not line.strip():
                    continue
                try:
                    line.encode("utf-8")
                except UnicodeEncodeError as exc:  # bytes that are not UTF-8, kept as they came (surrogateescape)
                    where = len(line[: exc.start].encode("utf-8", "surrogateescape"))
                    refuse(line, exc, code=-32700, reason=f"it is not valid UTF-8 (byte {where} of the line); JSON text is UTF-8")
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except Exception as exc:  # noqa: BLE001 - whatever the SDK cannot read, it would not answer
                    refuse(line, exc)
                    continue
                method, request_id = getattr(message, "method", None), getattr(message, "id", None)
                if method is not None and request_id is None and '"id"' in line and _odd_id(line):
                    # The SDK reads a request whose id is null, a fraction, a boolean or an object as a
                    # notification: it would run unanswered.
                    refuse(line, ValueError(), code=INVALID_REQUEST, reason=ODD_ID)
                    continue
                key = json.dumps(request_id) if method is not None and request_id is not None else None
                if key is not None and (self.wire.in_flight(key) or self.waiting[key]):
                    # The SDK keeps one request per id in flight (a second overwrites the first), so
                    # one of the two could go unanswered; MCP never reuses an id within a session.
                    refuse(line, ValueError(), code=INVALID_REQUEST, reason=ID_IN_USE.format(id=request_id))
                    continue
                if method == "notifications/cancelled":  # a cancelled request gets no answer
                    if not self._drop(json.dumps((getattr(message, "params", None) or {}).get("requestId"))):
                        self.cancels.append(message)  # given to the SDK (it stops the call), or one it ignores
                        self.wire.notify()
                    continue
                if key is not None:
                    self.waiting[key] += 1
                # The line goes once parsed (only the message is held): a 100 MB write was held three
                # times while the SDK parsed it, twice until the client wrote again.
                size = len(line)
                del line
                self._put(key, size, message)
                del message
        finally:
            self.ended = True
            self.wire.notify()

    def _put(self, key: str | None, size: int, item: Any) -> None:
        # Each entry counted at least ENTRY: refusals of 2-byte lines counted as nothing, and a client
        # that sent bad lines and read no answer made the queue grow without end (~270 bytes each).
        size = max(size, ENTRY)
        self.queue.append((key, size, item))
        self.queued += size
        self.wire.notify()

    def _drop(self, key: str) -> bool:
        """Drop the waiting request with the id ``key``, if one waits: it is never run nor answered."""
        if not self.waiting[key]:
            return False
        for entry in self.queue:
            if entry[0] == key:
                self.queue.remove(entry)
                self._taken(entry)
                return True
        return False  # (not reached: ``waiting`` counts the ids in the queue)

    def _taken(self, entry: tuple[str | None, int, Any]) -> None:
        key, size, _ = entry
        self.queued -= size
        if key is not None:
            self.waiting[key] -= 1
            if not self.waiting[key]:
                del self.waiting[key]
        self.wire.notify()  # room to read on

    async def feed(self, sdk: Any) -> None:
        """Give the SDK what was read, in order, a request only while fewer than ``MAX_UNANSWERED``
        wait for their answer; at the end of the input, wait for every answer (the SDK cancels what
        is in flight when its input closes)."""
        from mcp.shared.message import SessionMessage

        async with sdk:
            while True:
                if self.cancels:
                    await sdk.send(SessionMessage(self.cancels.popleft()))
                elif self.queue and (self.queue[0][0] is None or self.wire.unanswered() < MAX_UNANSWERED):
                    entry = self.queue.popleft()
                    self._taken(entry)
                    await self._give(sdk, entry[0], entry[2])
                    del entry
                elif self.queue or not self.ended:
                    await self.wire.changed()
                else:
                    break
            while self.wire.pending:
                await self.wire.changed()

    async def _give(self, sdk: Any, key: str | None, item: Any) -> None:
        import anyio
        from mcp.shared.message import ServerMessageMetadata, SessionMessage

        if isinstance(item, bytes):
            await self.wire.send(item)
            return
        method, params = getattr(item, "method", None), getattr(item, "params", None)
        if key is not None:
            problem = tool_call_problem(params or {}) if method == "tools/call" else None
            if problem is None and self.wire.version is not None:
                problem = params_problem(item.method, self.wire.version, params)
            if problem is not None:  # the SDK would say only "Invalid request parameters"
                await self.wire.send(self.wire.error(item.id, *problem))
                return
            self.wire.pending[key] += 1
            if method == "initialize":
                self.wire.initializing.add(key)
            metadata = ServerMessageMetadata(on_request_unanswered=lambda: self.wire.unanswered_end(key))
            await sdk.send(SessionMessage(item, metadata=metadata))
            return
        if method == "notifications/initialized":
            while self.wire.initializing:  # an initialize given before it: its answer decides
                await anyio.sleep(0.02)
            if self.wire.refused_initialize and not self.wire.initialized:
                # The SDK takes the notification alone as the end of a handshake: after an
                # initialize it refused, every call was then answered as if it had succeeded.
                return
        await sdk.send(SessionMessage(item))


class _Wire:
    """The SDK's stdout: its answers to requests already answered are compared, then dropped;
    ``pending`` counts the requests not answered yet, by id."""

    def __init__(self, out: BinaryIO, answered: dict[str, dict]):
        self.out = out
        self.answered = answered
        # Counted, not a set: a client may reuse an id once its answer came (the handshake's early
        # answers come first), so one id can stand for two requests read and not yet answered by
        # the SDK; a set held it once, the first answer emptied it and the input ended with the
        # second still running (the SDK cancels what is in flight when its input closes).
        self.pending: Counter[str] = Counter()
        self.lock = threading.Lock()
        # The ids of the initialize requests read, and whether one was answered with a result: the
        # SDK refuses a request before that as "Invalid request parameters", data "" (see ``write``).
        self.initializing: set[str] = set()
        self.initialized = False
        self.refused_initialize = False  # an initialize was answered with an error
        self.version: str | None = None  # the protocol version the initialize answer agreed on
        self._waiters: list[Any] = []  # anyio.Events of the tasks waiting for a change (see ``changed``)

    def in_flight(self, key: str) -> bool:
        """Whether a request with the id ``key`` is still waiting for the SDK's answer (the SDK's
        second answer to an ``initialize`` answered early does not count: the client has its answer)."""
        return self.pending[key] - (key in self.answered) > 0

    def unanswered(self) -> int:
        """The requests given to the SDK and not answered yet."""
        return sum(self.pending.values())

    def settle(self, key: str) -> None:
        """One request with the id ``key`` given to the SDK needs no answer any more."""
        if self.pending[key] > 1:
            self.pending[key] -= 1
        else:
            del self.pending[key]
        self.notify()

    async def unanswered_end(self, key: str) -> None:
        """The SDK ended a request unanswered (a cancel stopped it): its place is free."""
        self.initializing.discard(key)
        self.settle(key)

    def notify(self) -> None:
        """Wake the tasks waiting in ``changed``: a request was read, taken, answered."""
        for waiter in self._waiters:
            waiter.set()
        self._waiters.clear()

    async def changed(self) -> None:
        """Returns at the next ``notify`` (the caller checks again what it waits for)."""
        import anyio

        waiter = anyio.Event()
        self._waiters.append(waiter)
        await waiter.wait()

    def refusal(self, line: str, exc: Exception, *, code: int | None = None, reason: str | None = None) -> bytes:
        """A JSON-RPC error for a line the SDK cannot read, with its id when one can be found; b""
        for a notification (nothing to answer)."""
        try:
            data = json.loads(line, parse_int=_int_or_none)  # a number of thousands of digits still gives the id
        except (ValueError, RecursionError):
            data, found = None, -32700
        else:
            found = INVALID_REQUEST
        code = code or found
        if isinstance(data, dict) and "id" not in data:
            return b""
        request_id = data.get("id") if isinstance(data, dict) and has_request_id(data) else None
        if data is None:  # nested past the parser's depth, or cut short: its id still answers the client
            request_id = top_level_id(line)
        problem = message_problem(data) if reason is None and code == INVALID_REQUEST else None
        if problem is not None:
            code, reason = problem
        if reason is None:
            reason = surrogate_reason(data) or _plain(exc)
        return self.error(request_id, code, reason)

    @staticmethod
    def error(request_id: Any, code: int, reason: str) -> bytes:
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": f"the request cannot be read: {reason[:300]}"}}
        return json.dumps(error, ensure_ascii=True).encode("ascii") + b"\n"

    async def send(self, data: bytes) -> None:
        if data:
            await _in_thread(lambda: self._send(data))

    async def serve(self, answers: Any) -> None:
        """Write the SDK's messages, as its stdio_server does."""
        async with answers:
            async for answer in answers:
                await self.write(answer.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n")

    def _send(self, data: bytes) -> None:
        with self.lock:  # the SDK's answers and this transport's own refusals, one line at a time
            self.out.write(data)

    async def write(self, text: str) -> None:
        key = _large_result_key(text)
        if key is not None and key not in self.answered and key not in self.initializing:
            message: dict = {}  # a tool's large result: its id is all this needs of it
        else:
            message = json.loads(text) if self.pending or self.answered else {}
            key = json.dumps(message.get("id")) if "result" in message or "error" in message else None
        initialize = key in self.initializing
        self.initializing.discard(key)  # answered: its id may stand for another request next
        self.refused_initialize = self.refused_initialize or (initialize and "result" not in message)
        if initialize and "result" in message:
            self.initialized = True
            self.version = message["result"].get("protocolVersion")
        elif not self.initialized and message.get("error") == _NOT_INITIALIZED:
            # ``initialize`` is handled before the next message is read (the SDK parks its read loop),
            # so its answer is written by now: without one, the session is not initialized.
            said = ("its params are not an initialize request's: protocolVersion, capabilities and clientInfo "
                    "(name, version)" if initialize else
                    "the session is not initialized: send initialize first (then the notifications/initialized notification)")
            message["error"] = {"code": _NOT_INITIALIZED["code"], "message": said}
            text = json.dumps(message) + "\n"
        try:
            if key is not None and key in self.answered:
                sent = self.answered.pop(key)
                if message != sent:
                    sys.stderr.write(f"warning: an early answer differed from the SDK's: {one_line(text.strip()[:300])}\n")
            else:
                await _in_thread(lambda: self._send(text.encode("utf-8")))
        finally:
            if key is not None:  # answered, on the wire already (or the client is gone): the input may end
                self.settle(key)


# The head of the SDK's answer with a result, as its serializer writes it (fields in their order).
_RESULT_HEAD = re.compile(r'\{"jsonrpc":"2\.0","id":(-?[0-9]+|"(?:[^"\\]|\\.)*"),"result":')
_LARGE = 1 << 20


def _large_result_key(text: str) -> str | None:
    """The id (as ``json.dumps`` writes it) of a large answer with a result, read from its head; None
    for any other text. Parsing a whole read of a 200 MB note to learn its id held it once more."""
    if len(text) < _LARGE or (head := _RESULT_HEAD.match(text)) is None:
        return None
    return json.dumps(json.loads(head[1]))


# The SDK's answer to a request before ``initialize`` (kept, it says, for compatibility), which says
# nothing of why; the params of a request before it are checked first, and refused the same way.
_NOT_INITIALIZED = {"code": -32602, "message": "Invalid request parameters", "data": ""}


def _plain(exc: Exception) -> str:
    """A validator's complaint without its class names and annotations: where, and what."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(part) for part in first.get("loc", ()) if not str(part).startswith("JSONRPC"))
        return f"{where}: {first.get('msg')}" if where else str(first.get("msg"))
    detail = str(exc).splitlines()
    return detail[0] if detail else "unreadable"


async def _in_thread(work: Callable[[], object]) -> None:
    import anyio

    await anyio.to_thread.run_sync(work)

