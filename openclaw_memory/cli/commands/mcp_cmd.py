"""``openclaw-memory mcp``: serve the memory tools over the Model Context Protocol (stdio, or HTTP)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...extras import require

if TYPE_CHECKING:
    from ...settings import Settings


def run_mcp(settings: Settings, serve: bool = False, http: str | None = None) -> int:
    require("mcp")
    if http is not None:
        from .serve_cmd import run_serve

        return run_serve(settings, live_sync=True, http=http)
    from ...mcp.server import serve as serve_stdio

    serve_stdio(settings, start_service=serve)
    return 0
