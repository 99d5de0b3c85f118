"""The stdio transport, with the handshake answered before the MCP SDK is imported.

Importing the SDK costs more than a second of CPU (its protocol models are built at import), and
a client gives a stdio server a few seconds to answer ``initialize`` (OpenClaw: 5): on a loaded
machine the import alone missed that. So the first line is read here, and a well-formed
``initialize`` is answered at once with what the server will say anyway (protocol version, tools
capability, server info, instructions). Then the SDK is imported and served the same request,
and its own answer to it is checked against the early one and dropped: the SDK's session state is
exactly as if it had answered. Anything else as a first line goes to the SDK untouched.

As the SDK's own stdio transport does, the wire gets private descriptors while serving: fd 0
reads the null device and fd 1 writes to stderr, so nothing else in the process (a child, a
stray print) can read from or write to the protocol stream.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, BinaryIO

# The SDK's mcp_types.version HANDSHAKE_PROTOCOL_VERSIONS (initialize negotiates among these: the
# client's if listed, else the newest); a test keeps the two equal.
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def initialize_result(requested: Any, *, name: str, version: str, instructions: str) -> dict:
    """What the SDK answers to ``initialize`` for a server with tools only (no list changes)."""
    return {
        "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": name, "version": version},
        "instructions": instructions,
    }


def _initialize_request(line: bytes) -> dict | None:
    """The parsed request when ``line`` is a well-formed ``initialize``, else None."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or message.get("method") != "initialize":
        return None
    params = message.get("params")
    if not isinstance(message.get("id"), (int, str)) or isinstance(message.get("id"), bool) or not isinstance(params, dict):
        return None
    client = params.get("clientInfo")
    if not (isinstance(params.get("protocolVersion"), str) and isinstance(params.get("capabilities"), dict)
            and isinstance(client, dict) and isinstance(client.get("name"), str) and isinstance(client.get("version"), str)):
        return None
    return message


def _read_line(fd: int) -> bytes:
    """One line from ``fd``, read a byte at a time: nothing past it is taken from the pipe."""
    out = bytearray()
    while True:
        byte = os.read(fd, 1)
        if not byte:
            return bytes(out)
        out += byte
        if byte == b"\n":
            return bytes(out)


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


def serve_stdio(make_server: Callable[[], Any], *, name: str, version: str, instructions: str,
                after: Callable[[], None] | None = None) -> None:
    """Serve the server ``make_server()`` builds (imports the SDK) over this process's stdin/stdout."""
    wire_in, wire_out, restore = _claim_wire()
    out = os.fdopen(os.dup(wire_out), "wb", buffering=0)
    try:
        first = _read_line(wire_in)
        early = _initialize_request(first) if first else None
        sent = None
        if early is not None:
            sent = {"jsonrpc": "2.0", "id": early["id"], "result": initialize_result(
                early["params"]["protocolVersion"], name=name, version=version, instructions=instructions)}
            out.write(json.dumps(sent, ensure_ascii=False).encode("utf-8") + b"\n")
        _run(make_server(), first, wire_in, out, sent)
    finally:
        out.close()
        restore()
        if after is not None:
            after()


def _run(server: Any, first: bytes, wire_in: int, out: BinaryIO, sent: dict | None) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    reader = os.fdopen(os.dup(wire_in), "r", encoding="utf-8", errors="replace", closefd=True)

    async def lines() -> AsyncIterator[str]:
        if first:
            yield first.decode("utf-8", "replace")
        async for line in anyio.wrap_file(reader):
            yield line

    wire = _Wire(out, sent)

    async def main() -> None:
        async with stdio_server(stdin=lines(), stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        reader.close()


class _Wire:
    """The SDK's stdout: its answer to the initialize already answered is compared, then dropped."""

    def __init__(self, out: BinaryIO, sent: dict | None):
        self.out = out
        self.pending = sent

    async def write(self, text: str) -> None:
        if self.pending is not None:
            message = json.loads(text)
            if message.get("id") == self.pending["id"] and ("result" in message or "error" in message):
                if message != self.pending:
                    sys.stderr.write(f"warning: the early initialize answer differed from the SDK's: {text.strip()}\n")
                self.pending = None
                return
        await _in_thread(lambda: self.out.write(text.encode("utf-8")))

    async def flush(self) -> None:
        await _in_thread(self.out.flush)


async def _in_thread(work: Callable[[], object]) -> None:
    import anyio

    await anyio.to_thread.run_sync(work)

