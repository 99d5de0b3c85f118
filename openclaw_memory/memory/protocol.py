"""Requests and answers over the service socket: JSON-RPC 2.0 (the protocol MCP speaks), one per line.

A request: ``{"jsonrpc": "2.0", "id": n, "method": "search", "params": {"args": {...}, "context":
{workspace, stateDir, agent, session, key, protocol, tz, umask}}}``, the method one of
:data:`~openclaw_memory.memory.operations.OPERATIONS`, the arguments and the result JSON data of the
declared types (:mod:`openclaw_memory.wire`: no type names). While the service works on it, it sends an
empty line every ``HEARTBEAT_S``; then ``{"jsonrpc": "2.0", "id": n, "result": ...}`` or ``"error":
{code, message, data: {kind}}``: :data:`PRODUCT_ERROR` for an error of the product (raised again in the
caller, same kind and words), :data:`REFUSED` or a JSON-RPC code when the service cannot answer this
request (the caller then works in-process, saying why). A caller that hears nothing for its timeout
knows the service hangs. A connection may carry many requests, one after the other.

``protocol`` in the context is :data:`PROTOCOL`; a service of another protocol refuses the request
with a refusal that says to restart the service, so the caller works in-process instead.

``tz`` is the caller's TZ (None: unset): a day read as local is the caller's (:mod:`openclaw_memory.timezones`).
``umask`` is the caller's umask (0 to 0o777): a note or folder the service makes for the caller gets the
mode the caller's own process would give it (:data:`~openclaw_memory.fsutil.private.CALLER_UMASK`).

Standard library only (with :mod:`..timezones` and :mod:`..fsutil.private`): the CLI imports this on its fast path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import TYPE_CHECKING

from ..fsutil.private import umask_of_user
from ..timezones import tz_setting

if TYPE_CHECKING:
    from ..settings import Settings

HEARTBEAT_S = 0.5
MAX_LINE = 256 * 1024 * 1024  # a request with a whole file in it can be large; more is refused


def settings_key(settings: Settings) -> str:
    """What the service and its caller must agree on, besides the agent and session.

    The workspace, state dir, extra paths, multimodal flag and media kinds, Qdrant URL, embedding
    backend and every setting from the toml file: a caller with other settings (a per-agent extra
    path, a changed config) gets ``refused`` and works in-process rather than being answered for
    settings it does not have. What only gives a request its default is not in it: the caller sends
    the value it resolved (a search's limit, openclaw.json's ``maxResults``: :mod:`.remote`), and the
    service answers with it (an edit of maxResults while ``watch`` ran made every search refused, then
    wait for the shards the live sync held and fail).
    """
    data = [
        str(settings.workspace),
        str(settings.state_dir),
        [(str(p), p.pattern) for p in settings.extra_paths],  # an extra path's glob too
        list(settings.media),  # which media files are memory (openclaw.json's modalities, when multimodal is on)
        settings.qdrant_url,
        settings.embedding_backend,
        # Every table of the toml as resolved ([read] with openclaw.json's limits in it), but [prompt]:
        # the startup prompt is built in-process, and only a write's warnings of its caps read it there
        # (an edit of bootstrapMaxChars while `watch` ran made every search refused, as maxResults did).
        {name: dataclasses.asdict(table) for name, table in settings.tables().items() if name != "prompt"},
    ]
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


PROTOCOL = 7  # 3: one JSON shape per result (the --json keys), ServiceInfo with lockWaits nested; 4: write's
# replace_unread, and the guard's rules a service of 3 would not apply (expect names a version read, keys per session);
# 5: maxResults out of the settings key, a search's limit sent resolved (a service of 4 would refuse every caller);
# 6: [prompt] out of the settings key (a service of 5 would refuse every caller with a [prompt] of its own);
# 7: the caller's umask in the context (a service of 6 would make a new note with its own: 0644 for a caller at 077)
PRODUCT_ERROR = -32000  # a MemoryToolError: data.kind names which, from the closed set in errors
REFUSED = -32001  # this service does not answer this request: the caller works in-process


def request_line(request_id: int, method: str, args: dict, settings: Settings) -> bytes:
    context = {
        "workspace": str(settings.workspace),
        "stateDir": str(settings.state_dir),
        "agent": settings.agent,
        "session": settings.session,
        "key": settings_key(settings),
        "protocol": PROTOCOL,
        "tz": tz_setting(),  # the service reads a local day as this process's (its own TZ may differ)
        "umask": umask_of_user(),  # and makes a new note and folder as this process would (its own umask may differ)
    }
    payload = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"args": args, "context": context}}
    return json_line(payload)  # ValueError: a number strict JSON cannot hold


def answer_line(answer: dict) -> bytes:
    return json_line(answer)


def json_line(message: dict) -> bytes:
    """``message`` as one line of strict JSON: UTF-8, never ``NaN`` or ``Infinity`` (ValueError
    for a number JSON cannot hold). A string with a lone surrogate (a file name that is not UTF-8,
    read with surrogateescape) cannot be UTF-8: the line is then written all ASCII, each such
    character as its ``\\uXXXX`` escape, which reads back as the same string (its raw bytes made
    the line not UTF-8, so not JSON, and the peer refused it)."""
    text = json.dumps(message, ensure_ascii=False, allow_nan=False)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        data = json.dumps(message, allow_nan=False).encode("ascii")
    return data + b"\n"


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


def parse_line(line: bytes):
    """A line read as strict JSON: UTF-8 (not the surrogates json.loads lets through in bytes) and
    no ``NaN``/``Infinity``; ValueError (or RecursionError, nested too deep) otherwise."""
    return json.loads(line.decode("utf-8"), parse_constant=_not_json)


class LineTooLong(Exception):
    """A line past ``MAX_LINE``: refused as soon as it is known to be too long."""


class LineReader:
    """Newline-framed JSON lines from a socket in linear time: each chunk is searched once, and a
    line is joined from its chunks only when it is complete (a 64 MiB request took minutes when the
    whole buffer was searched after every chunk). The bytes of a line past ``MAX_LINE`` are not kept."""

    def __init__(self, sock, limit: int = MAX_LINE):
        self.sock = sock
        self.limit = limit
        self.rest = b""

    def next(self) -> bytes | None:
        """The next line without its newline; None at the end of the stream."""
        parts: list[bytes] = []
        size = 0
        chunk, self.rest = self.rest, b""
        while True:
            if chunk:
                end = chunk.find(b"\n")
                if end >= 0:
                    self.rest = chunk[end + 1 :]
                    if size + end > self.limit:
                        raise LineTooLong
                    return b"".join([*parts, chunk[:end]])
                parts.append(chunk)
                size += len(chunk)
                if size > self.limit:
                    raise LineTooLong
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return None
