"""The typer application: the settings callback and the registered commands.

Commands parse flags, call the API and render (rich for people, ``--json`` for
programs). The entry point with the error-to-exit-code mapping is :mod:`.main`.
"""

from __future__ import annotations

from typing import Optional

import typer

HELP = """Find, read, index and search an AI agent's Markdown memory (MEMORY.md, memory/**/*.md, extra paths).

Settings flags (-w/--workspace, --agent, --state-dir, --extra, --multimodal, --qdrant-url) may be given
before or after the command."""

app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)


@app.callback()
def settings_callback(
    ctx: typer.Context,
    workspace: Optional[str] = typer.Option(None, "--workspace", "-w", help="Agent workspace (else $OPENCLAW_WORKSPACE, config, current folder)."),
    agent: Optional[str] = typer.Option(None, "--agent", help="Agent id (default: main)."),
    state_dir: Optional[str] = typer.Option(None, "--state-dir", help="State folder (else $OPENCLAW_STATE_DIR, else ~/.openclaw)."),
    extra: list[str] = typer.Option([], "--extra", help="Extra memory path (repeatable; adds to config and $OPENCLAW_MEMORY_EXTRA_PATHS)."),
    multimodal: Optional[bool] = typer.Option(None, "--multimodal/--no-multimodal", help="List images and audio in extra paths."),
    qdrant_url: Optional[str] = typer.Option(None, "--qdrant-url", help="Use a Qdrant server for the index (else $OPENCLAW_MEMORY_QDRANT_URL, toml \\[index] url)."),
) -> None:
    from ..settings import Overrides

    ctx.obj = Overrides(
        workspace=workspace or None,
        agent=agent or None,
        state_dir=state_dir or None,
        extra=tuple(extra),
        multimodal=multimodal,
        qdrant_url=qdrant_url or None,
    )


def _register_commands() -> None:
    from .commands import doctor_cmd, files_cmd, history_cmd, index_cmd, mcp_cmd, migrate_cmd, prompt_cmd, read_cmd, serve_cmd, watch_cmd, watchdog_cmd, write_cmd

    for module in (files_cmd, read_cmd, prompt_cmd, doctor_cmd, index_cmd, watchdog_cmd, write_cmd, history_cmd, migrate_cmd, serve_cmd, watch_cmd, mcp_cmd):
        module.register(app)


_register_commands()
