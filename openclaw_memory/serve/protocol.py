"""One request, one answer, over the service socket: JSON lines.

A request is one line: ``{"op", "args", "settings": {workspace, stateDir, agent, session, key}}``.
While the service works on it, it sends an empty line every ``HEARTBEAT_S``; then the answer:
``{"ok": true, "value": ...}`` (see :mod:`openclaw_memory.wire`), ``{"ok": false, "error": {"type", "message"}}``
for an error of the product (raised again, same type and words, in the caller), or
``{"ok": false, "refused": "..."}`` when the service cannot answer for these settings (the
caller then works in-process). A caller that hears nothing for its timeout knows the
service hangs. A connection may carry many requests, one after the other.

Standard library only (with :mod:`.paths`): the CLI imports this on its fast path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

HEARTBEAT_S = 0.5
DEFAULT_TIMEOUT_S = 5.0
MAX_LINE = 256 * 1024 * 1024  # a request with a whole file in it can be large; more is refused


def settings_key(settings) -> str:
    """What the service and its caller must agree on, besides the agent and session.

    The workspace, state dir, extra paths, multimodal flag, Qdrant URL, embedding backend and
    every setting from the toml file: a caller with other settings (a per-agent extra path, a changed
    config) gets ``refused`` and works in-process rather than being answered for settings
    it does not have.
    """
    data = [
        str(settings.workspace),
        str(settings.state_dir),
        [(str(p), getattr(p, "pattern", None)) for p in settings.extra_paths],  # an extra path's glob too
        bool(settings.multimodal),
        settings.qdrant_url,
        settings.sections,
        settings.embedding_backend,
        dataclasses.asdict(settings.read),
        dataclasses.asdict(settings.prompt),
    ]
    text = json.dumps(data, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def request_line(op: str, args: dict, settings) -> bytes:
    payload = {
        "op": op,
        "args": args,
        "settings": {
            "workspace": str(settings.workspace),
            "stateDir": str(settings.state_dir),
            "agent": settings.agent,
            "session": settings.session,
            "key": settings_key(settings),
        },
    }
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogateescape") + b"\n"


def service_timeout(settings) -> float:
    """``[service] timeout``: seconds of silence after which the service counts as hung."""
    value = settings.section("service").get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        from ..errors import ConfigError

        raise ConfigError(f"[service] timeout must be a positive number of seconds, not {value!r}")
    return float(value)


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
