"""``openclaw-memory mcp``: serve the memory tools over the Model Context Protocol (stdio)."""

import typer


def register(app) -> None:
    from ..context import settings_from

    @app.command("mcp")
    def mcp(ctx: typer.Context) -> int:
        """Serve memory_search, memory_get, memory_write and memory_status over MCP on stdin/stdout."""
        from ...mcp.server import serve

        serve(settings_from(ctx))
        return 0
