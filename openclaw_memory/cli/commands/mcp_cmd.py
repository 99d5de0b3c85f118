"""``openclaw-memory mcp``: serve the memory tools over the Model Context Protocol (stdio)."""

from ...extras import require


def run_mcp(settings) -> int:
    require("mcp")
    from ...mcp.server import serve

    serve(settings)
    return 0
