"""The MCP server: the agent's memory as four tools over stdio (official ``mcp`` SDK, 2.x).

- ``memory_search`` (query, maxResults, minScore): the JSON of ``search --json``;
- ``memory_get`` (path, from, lines, maxChars; below 1 clamped to 1, as OpenClaw's reader does): the JSON of ``read --json`` plus ``version`` (a read, recorded
  for the stale-write guard);
- ``memory_write`` (path, content or append, expect): guarded like ``write``; a blocked write is a
  tool error carrying the message that says what to do;
- ``memory_status``: the JSON of ``status --json``.

One server serves one agent of one workspace. The embedding model is loaded once (in the
background at start when an index exists) and kept; no shard lock is held between calls, so
the CLI and a ``watch`` keep working beside it. Every failure is a tool error with the
user-facing message; the server keeps serving.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Optional

from pydantic import Field

from .. import api
from ..errors import MemoryToolError
from ..watch.sessions import short_session

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
    """The tools' logic over one ``MemoryIndex`` (model loaded once); thread-safe."""

    def __init__(self, settings):
        from ..index.api import MemoryIndex

        self.settings = settings
        self.index = MemoryIndex(settings, keep_open=True)  # shards closed after every call: short_session
        # The SDK runs each sync tool in a worker thread; the index and its model are used by one at a time.
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Load the model now when the agent has an index (the first search then answers at once)."""
        from ..index.collections import resolve_collections
        from ..index.manifest import load_manifest

        with self._lock:
            manifests = [load_manifest(self.settings.data_dir, c.name) for c in resolve_collections(self.settings)]
            manifests = [m for m in manifests if m is not None]
            if not manifests:
                return
            for m in manifests:
                if m.embed_backend:
                    self.index.models.pin_backend(m.embed_backend)  # embed queries like the index was built
            self.index.models.embedder.encode(["warm-up"])

    def search(self, query: str, max_results: int, min_score: float) -> dict:
        with self._lock, short_session(self.index):
            return self.index.search(query, limit=max_results, min_score=min_score).to_json()

    def get(self, path: str, from_line: int | None, lines: int | None, max_chars: int | None = None) -> dict:
        from_line, lines, max_chars = get_window(self.settings, from_line, lines, max_chars)
        result = api.read_memory(self.settings, path, from_line=from_line, lines=lines, max_chars=max_chars)
        out = result.to_json()
        if not result.missing and result.version is not None:
            out["version"] = result.version
        return out

    def write(self, path: str, content: str | None, append: str | None, expect: str | None) -> dict:
        return api.write_memory(self.settings, path, content=content, append=append, expect=expect, sync=self._sync).to_json()

    def _sync(self):
        with self._lock, short_session(self.index):
            return self.index.sync()

    def status(self) -> dict:
        with self._lock, short_session(self.index):
            return self.index.status().to_json()

    def close(self) -> None:
        self.index.close()


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
            raise ToolError(exc.message) from None
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
    )


def _arg_models():
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

    class SearchArgs(ArgModelBase):
        query: str = Field(description="What to look for (meaning and keywords: hybrid search).")
        max_results: int = Field(6, alias="maxResults", ge=1, le=100, description="Most results to return.")
        min_score: float = Field(0.35, alias="minScore", ge=0.0, le=1.0, description="Drop results scoring below this (0-1).")

    class GetArgs(ArgModelBase):
        path: str = Field(description="Memory file: relative to the workspace (MEMORY.md, memory/...) or inside an extra path.")
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
                "{results: [{path, startLine, endLine, score, snippet, source, citation}], mode, stale}.",
                search_args,
                lambda query, maxResults, minScore: tools.search(query, maxResults, minScore),
            ),
            _tool(
                "memory_get",
                f"Read lines of one memory file (a window: from, lines). Readable: {scope} Returns "
                "{text, path, from, lines, truncated?, nextFrom?, version}; version is the whole file's "
                "content hash, recorded as read (memory_write checks it).",
                get_args,
                lambda path, lines, maxChars, **kw: tools.get(path, kw["from"], lines, maxChars),
            ),
            _tool(
                "memory_write",
                f"Write one memory file atomically, guarded: give content (replace) or append. Writable: {scope} "
                "The write is refused (tool error) when the file changed since you last read it with memory_get: "
                "read it again and redo the change. Appending to today's daily note (memory/YYYY-MM-DD.md) is "
                "allowed while the file only grew. expect makes it a strict compare-and-swap on that version.",
                write_args,
                lambda path, content, append, expect: tools.write(path, content, append, expect),
            ),
            _tool(
                "memory_status",
                f"The search index of this memory: per collection files, chunks, stale files, last indexed, "
                f"model, size. Covers: {scope}",
                status_args,
                lambda: tools.status(),
            ),
        ],
    )


def serve(settings) -> None:
    """Serve over stdin/stdout until the client closes the connection."""
    tools = MemoryTools(settings)
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
