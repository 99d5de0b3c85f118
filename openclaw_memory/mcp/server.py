"""The MCP server: the agent's memory as four tools over stdio (official ``mcp`` SDK, 2.x).

- ``memory_search`` (query, maxResults, minScore): the JSON of ``search --json``;
- ``memory_get`` (path, from, lines, maxChars; below 1 clamped to 1, as OpenClaw's reader does): the JSON of ``read --json`` plus ``version`` (a read, recorded
  for the stale-write guard);
- ``memory_write`` (path, content or append, expect): guarded like ``write``; a blocked write is a
  tool error carrying the message that says what to do;
- ``memory_status``: the JSON of ``status --json``.

One server serves one agent of one workspace, and is one session: its reads are its own
(the write guard checks what this session read). When the workspace's service runs
(``openclaw-memory serve``, or ``mcp --serve`` to start it), the calls go to it and many
sessions share one index and one model; otherwise the model is loaded here once and no shard
lock is held between calls. Every failure is a tool error in the tools' words; the server
keeps serving. :mod:`openclaw_memory.serve.http` serves the same tools over streamable HTTP.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
import threading
from typing import Any, Callable, Optional

from pydantic import Field

from ..errors import MemoryToolError

SERVER_NAME = "openclaw-memory"


def indexed_scope(settings) -> str:
    """Exactly what the tools see, for the tool descriptions."""
    if settings.extra_paths:
        extras = (
            "; plus these extra paths: " + ", ".join(settings.extra_paths)
            + " (every .md file under an extra folder, recursively; an extra file itself)."
        )
    else:
        extras = ". No extra paths are configured."
    return (
        f"Memory of agent '{settings.agent}' in workspace {settings.workspace}: MEMORY.md, USER.md (and the dream "
        f"diary DREAMS.md) at the workspace root, and every Markdown (.md) file under memory/, recursively{extras}"
    )


class MemoryTools:
    """The tools' logic: each call goes to a backend with the MCP session's own settings.

    The backend is the workspace's service when one runs (many sessions share its index and
    model), else a :class:`~openclaw_memory.serve.core.ServiceCore` in this process. A service
    that stops answering is reported once on stderr and replaced by the in-process one.
    ``session_of(ctx)`` names the MCP session of a call (its read records are its own).
    """

    def __init__(self, settings, *, client=None, core=None, session_of: Callable[[Any], str] | None = None):
        self.settings = settings
        self.client = client
        self.core = core
        self.in_service = core is not None  # the HTTP endpoint, inside the service
        self._session = f"mcp-{os.getpid()}-{secrets.token_hex(4)}"
        self.session_of = session_of or (lambda _ctx: self._session)
        self._lock = threading.Lock()  # the client's one connection carries one request at a time
        if client is None and core is None:
            self.core = _local_core(settings)

    def call(self, op: str, ctx, **args):
        settings = self.settings.with_session(self.session_of(ctx))
        if self.client is not None:
            from ..serve.client import ServiceUnavailable

            try:
                with self._lock:
                    return self.client.call(op, settings, **args)
            except ServiceUnavailable as exc:
                sys.stderr.write(f"warning: {exc.message}\n")
                sys.stderr.flush()
                self.client = None
                with self._lock:
                    if self.core is None:
                        self.core = _local_core(self.settings)
        return self.core.handle(op, settings, args)

    def warm(self) -> None:
        if self.core is not None and self.client is None:
            self.core.warm()

    def search(self, ctx, query: str, max_results: int, min_score: float, collection=None, paths=None, since=None,
               until=None) -> dict:
        result = self.call(
            "search", ctx, query=query, limit=max_results, min_score=min_score,
            collections=tuple(collection or ()), paths=tuple(paths or ()), since=since, until=until,
        ).to_json()
        if not result["results"]:
            result["message"] = f"Nothing in this memory matches (no file scored {min_score:g} or more)."
        return result

    def get(self, ctx, path: str, from_line: int | None, lines: int | None, max_chars: int | None = None) -> dict:
        from ..files.citation import parse_citation

        citation = parse_citation(path)
        if citation is not None:  # a memory_search citation: its lines, unless from/lines say otherwise
            path = citation.path
            from_line = citation.from_line if from_line is None else from_line
            lines = citation.lines if lines is None else lines
        from_line, lines, max_chars = get_window(self.settings, from_line, lines, max_chars)
        result = self.call("read", ctx, path=path, from_line=from_line, lines=lines, max_chars=max_chars)
        out = result.to_json()
        if not result.missing and result.version is not None:
            out["version"] = result.version
        return out

    def write(self, ctx, path: str, content: str | None, append: str | None, expect: str | None,
              idempotency_key: str | None = None) -> dict:
        data = content.encode("utf-8", "surrogateescape") if content is not None else None
        return self.call(
            "write", ctx, path=path, content=data, append=append, expect=expect, idempotency_key=idempotency_key,
            tool="memory_write",
        ).to_json()

    def status(self, ctx) -> dict:
        out = self.call("status", ctx).to_json()
        if self.client is not None or self.in_service:
            out["service"] = self.call("info", ctx).to_json()
        else:
            out["service"] = {"running": False}
        return out

    def close(self) -> None:
        if self.client is not None:
            from ..serve.client import ServiceUnavailable

            try:
                with self._lock:
                    self.client.call("end_session", self.settings.with_session(self._session))
            except (ServiceUnavailable, MemoryToolError):
                pass
            self.client.close()
        elif self.core is not None:
            self.core.end_session(self.settings.with_session(self._session))
        if self.core is not None:
            self.core.close()


def _local_core(settings):
    from ..serve.core import ServiceCore

    # Shards closed after every call: the CLI and other processes keep working beside it.
    return ServiceCore(settings, live_sync=False, shard_idle_s=0)


# The guard's messages name CLI commands; a tool error names the tools instead.
_TOOL_WORDS = (
    (re.compile(r"[Rr]ead it again \(openclaw-memory read [^)]*\) and redo"), "Call memory_get again and redo"),
    (re.compile(r"read it first \(openclaw-memory read [^)]*\), then write, or pass --expect VERSION\."),
     "call memory_get first, then write (or pass expect: the version memory_get returned)."),
    (re.compile(r"read it first \(openclaw-memory read [^)]*\), then append\."), "call memory_get first, then append."),
    (re.compile(r"agent '([^']*)' (last read|has not read|read it|last saw)"), r"this session (agent '\1') \2"),
    (re.compile(r"--expect\b"), "expect"),
)


def tool_words(message: str) -> str:
    """A product message in the tools' language (``call memory_get first``), not the CLI's."""
    for pattern, words in _TOOL_WORDS:
        message = pattern.sub(words, message)
    return message


def get_window(settings, from_line, lines, max_chars) -> tuple[int, int, int]:
    """``memory_get``'s window as OpenClaw's reader takes it: values below 1 count as 1, and the
    budget defaults to ``contextLimits.memoryGetMaxChars`` (``[read] max_chars``)."""
    from ..files.read import clamp_window_args

    return clamp_window_args(from_line, lines, max_chars, default_lines=settings.read.default_lines,
                             default_max_chars=settings.read.max_chars)


def _tool_errors(fn: Callable[..., dict]) -> Callable[..., str]:
    """Run ``fn``; its JSON is the result, a product error the tool error's message."""
    from mcp.server.mcpserver.exceptions import ToolError

    def call(**kwargs: Any) -> str:
        try:
            return json.dumps(fn(**kwargs), ensure_ascii=False, indent=2)
        except MemoryToolError as exc:
            raise ToolError(tool_words(exc.message)) from None
        except OSError as exc:  # refused (symlink, FIFO...) or unreadable
            reason = exc.strerror or str(exc)
            raise ToolError(f"{exc.filename}: {reason}" if exc.filename else reason) from None

    return call


def _tool(name: str, description: str, args_model, fn: Callable[..., dict]):
    """A tool whose arguments are ``args_model`` (camelCase aliases, ``from``), not a Python signature."""
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

    return Tool(
        fn=_tool_errors(fn),
        name=name,
        description=description,
        parameters=args_model.model_json_schema(by_alias=True),
        fn_metadata=FuncMetadata(arg_model=args_model),
        is_async=False,
        context_kwarg="ctx",
    )


def _arg_models():
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

    from ..index.results import DEFAULT_MIN_SCORE

    class SearchArgs(ArgModelBase):
        query: str = Field(description="What to look for (meaning and keywords: hybrid search).")
        max_results: int = Field(6, alias="maxResults", ge=1, le=100, description="Most results to return.")
        min_score: float = Field(
            DEFAULT_MIN_SCORE, alias="minScore", ge=0.0, le=1.0, description="Drop results scoring below this (0-1, calibrated relevance)."
        )
        collection: Optional[list[str]] = Field(None, description="Only these collections (names as memory_status lists them).")
        paths: Optional[list[str]] = Field(None, description="Only files matching one of these globs (memory/people/*.md).")
        since: Optional[str] = Field(None, description="Only files dated (daily notes) or modified on or after this day (YYYY-MM-DD).")
        until: Optional[str] = Field(None, description="Only files dated or modified on or before this day (YYYY-MM-DD).")

    class GetArgs(ArgModelBase):
        path: str = Field(
            description="Memory file: relative to the workspace (MEMORY.md, memory/...) or inside an extra path; "
            "or a memory_search citation (memory/notes.md#L10-L24), which reads those lines."
        )
        from_line: Optional[float] = Field(None, alias="from", description="First line to return (1-based; below 1 reads from 1).")
        lines: Optional[float] = Field(None, description="How many lines (default 120; below 1 reads 1).")
        max_chars: Optional[float] = Field(
            None, alias="maxChars", description="Character budget (UTF-16 units; default contextLimits.memoryGetMaxChars, 12000)."
        )

    class WriteArgs(ArgModelBase):
        path: str = Field(description="Memory file to write: MEMORY.md, memory/... or a file inside an extra path.")
        content: Optional[str] = Field(None, description="The whole new content of the file (replaces it).")
        append: Optional[str] = Field(None, description="Text to add on its own line at the end of the file.")
        expect: Optional[str] = Field(
            None, description="Write only if the file is at this version (8+ hex characters of `version` from memory_get)."
        )
        idempotency_key: Optional[str] = Field(
            None, alias="idempotencyKey",
            description="Retry-safe key: a second write with the same key within 24 hours writes nothing and returns "
            "the first result (default: derived from agent, path, mode and content).",
        )

    class StatusArgs(ArgModelBase):
        pass

    return SearchArgs, GetArgs, WriteArgs, StatusArgs


def build_server(tools: MemoryTools):
    """The ``MCPServer`` with the four tools bound to ``tools``."""
    from mcp.server.mcpserver import MCPServer

    scope = indexed_scope(tools.settings)
    search_args, get_args, write_args, status_args = _arg_models()
    return MCPServer(
        name=SERVER_NAME,
        instructions=f"{scope} Read a file with memory_get before changing it with memory_write.",
        log_level="WARNING",
        tools=[
            _tool(
                "memory_search",
                f"Search the agent's memory by meaning and keywords. Searches: {scope} Returns "
                "{results: [{path, startLine, endLine, score, snippet, source, citation, alsoIn?}], mode, stale, "
                "message?}: one result per file, its best passage; message says so when nothing matched. "
                "Pass a citation to memory_get to read the passage.",
                search_args,
                lambda query, maxResults, minScore, collection, paths, since, until, ctx=None: tools.search(
                    ctx, query, maxResults, minScore, collection, paths, since, until
                ),
            ),
            _tool(
                "memory_get",
                f"Read lines of one memory file (a window: from, lines). Readable: {scope} Returns "
                "{text, path, from, lines, truncated?, nextFrom?, version}; version is the whole file's "
                "content hash, recorded as read (memory_write checks it).",
                get_args,
                lambda path, lines, maxChars, ctx=None, **kw: tools.get(ctx, path, kw["from"], lines, maxChars),
            ),
            _tool(
                "memory_write",
                f"Write one memory file atomically, guarded: give content (replace) or append. Writable: {scope} "
                "The write is refused (tool error) when the file changed since you last read it with memory_get: "
                "read it again and redo the change. Appending to today's daily note (memory/YYYY-MM-DD.md) is "
                "allowed while the file only grew. expect makes it a strict compare-and-swap on that version. "
                "A retried call (same idempotencyKey, by default the same path, mode and content) within 24 hours "
                "writes nothing and returns the first result with replayed: true.",
                write_args,
                lambda path, content, append, expect, idempotencyKey=None, ctx=None: tools.write(
                    ctx, path, content, append, expect, idempotencyKey
                ),
            ),
            _tool(
                "memory_status",
                f"The search index of this memory: per collection files, chunks, stale files, last indexed, "
                f"model, size. Covers: {scope}",
                status_args,
                lambda ctx=None: tools.status(ctx),
            ),
        ],
    )


def serve(settings, *, start_service: bool = False) -> None:
    """Serve over stdin/stdout until the client closes the connection.

    When the workspace's service runs (or ``start_service`` starts it), every call goes
    to it; otherwise the tools run in this process.
    """
    from ..serve.client import ServiceClient, ServiceUnavailable, service_disabled

    client = None
    if start_service:
        from ..serve.launch import ensure_service

        ensure_service(settings, notice=lambda m: sys.stderr.write(m + "\n"))
    if not service_disabled():
        try:
            client = ServiceClient(settings).connect()
        except ServiceUnavailable as exc:
            if exc.message:
                sys.stderr.write(f"warning: {exc.message}\n")
    tools = MemoryTools(settings, client=client)
    if client is None:
        threading.Thread(target=_warm_quietly, args=(tools,), name="model-warm-up", daemon=True).start()
    try:
        build_server(tools).run("stdio")
    finally:
        tools.close()


def _warm_quietly(tools: MemoryTools) -> None:
    # A failure here (no index, busy index) shows up, worded, at the first tool call instead.
    try:
        tools.warm()
    except (MemoryToolError, OSError):
        pass
