"""The MCP server: the agent's memory as four tools over stdio (official ``mcp`` SDK, 2.x).

- ``memory_search`` (query, maxResults, minScore): the JSON of ``search --json``;
- ``memory_get`` (path, from, lines): the JSON of ``read --json`` plus ``version`` (a read, recorded
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

import dataclasses
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
        f"Memory of agent '{settings.agent}' in workspace {settings.workspace}: MEMORY.md (and the dream "
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

    def search(self, query: str, max_results: int, min_score: float, collection=None, paths=None, since=None, until=None) -> dict:
        from ..index.filters import SearchFilters, parse_day

        filters = SearchFilters(
            collections=tuple(collection or ()),
            paths=tuple(paths or ()),
            since=parse_day(since, "since") if since else None,
            until=parse_day(until, "until") if until else None,
        )
        with self._lock, short_session(self.index):
            result = self.index.search(query, limit=max_results, min_score=min_score, filters=filters).to_json()
        if not result["results"]:
            result["message"] = f"Nothing in this memory matches (no file scored {min_score:g} or more)."
        return result

    def get(self, path: str, from_line: int, lines: int | None) -> dict:
        from ..files.citation import parse_citation

        citation = parse_citation(path)
        if citation is not None:  # a memory_search citation: its lines, unless from/lines say otherwise
            path = citation.path
            from_line = citation.from_line if from_line == 1 else from_line
            lines = citation.lines if lines is None else lines
        result = api.read_memory(self.settings, path, from_line=from_line, lines=lines)
        out = result.to_json()
        if not result.missing and result.version is not None:
            out["version"] = result.version
        return out

    def write(self, path: str, content: str | None, append: str | None, expect: str | None) -> dict:
        from ..watch.presence import running_watch

        result = api.write_memory(self.settings, path, content=content, append=append, expect=expect, update_index=False)
        pid = running_watch(self.settings)
        if pid is not None:
            index = {"updated": False, "reason": f"the running watch (pid {pid}) updates it"}
        else:
            index = self._update_index()
        return dataclasses.replace(result, index=index).to_json()

    def _update_index(self) -> dict:
        from ..index.collections import resolve_collections
        from ..index.manifest import load_manifest

        if not any(load_manifest(self.settings.data_dir, c.name) is not None for c in resolve_collections(self.settings)):
            return {"updated": False, "reason": f"no index for agent {self.settings.agent}"}
        try:
            with self._lock, short_session(self.index):
                summary = self.index.sync()
        except MemoryToolError as exc:
            return {"updated": False, "reason": f"index not updated: {exc.message}"}
        return {"updated": True, **summary.to_json()}

    def status(self) -> dict:
        with self._lock, short_session(self.index):
            return self.index.status().to_json()

    def close(self) -> None:
        self.index.close()


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

    from ..index.search import DEFAULT_MIN_SCORE

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
        from_line: int = Field(1, alias="from", ge=1, description="First line to return (1-based).")
        lines: Optional[int] = Field(None, ge=1, description="How many lines (default 120).")

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
                "{results: [{path, startLine, endLine, score, snippet, source, citation, alsoIn?}], mode, stale, "
                "message?}: one result per file, its best passage; message says so when nothing matched. "
                "Pass a citation to memory_get to read the passage.",
                search_args,
                lambda query, maxResults, minScore, collection, paths, since, until: tools.search(
                    query, maxResults, minScore, collection, paths, since, until
                ),
            ),
            _tool(
                "memory_get",
                f"Read lines of one memory file (a window: from, lines). Readable: {scope} Returns "
                "{text, path, from, lines, truncated?, nextFrom?, version}; version is the whole file's "
                "content hash, recorded as read (memory_write checks it).",
                get_args,
                lambda path, lines, **kw: tools.get(path, kw["from"], lines),
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
