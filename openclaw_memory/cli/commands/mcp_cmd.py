"""``openclaw-memory mcp``: serve the memory tools over the Model Context Protocol (stdio, or HTTP)."""


from ...extras import require


def run_mcp(settings, serve: bool = False, http: str | None = None) -> int:
    require("mcp")
    if http is not None:
        from .serve_cmd import run_serve

        return run_serve(settings, live_sync=True, http=http)
    from ...mcp.server import serve as serve_stdio

    serve_stdio(settings, start_service=serve)
    return 0
