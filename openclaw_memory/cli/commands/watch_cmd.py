"""``openclaw-memory watch``: the workspace's service with live sync on, printing each applied change."""

import typer


def register(app) -> None:
    from ..context import settings_from
    from .serve_cmd import run_serve

    @app.command("watch")
    def watch(
        ctx: typer.Context,
        json_out: bool = typer.Option(False, "--json", help="One JSON object per line per applied change."),
        poll: bool = typer.Option(False, "--poll", help="Poll the folders instead of using inotify (network file systems)."),
    ) -> int:
        """Keep the search index up to date while memory files change, and serve the CLI and MCP (Ctrl-C or SIGTERM stops)."""
        return run_serve(settings_from(ctx), live_sync=True, poll=poll, json_out=json_out, watch_lines=True)
