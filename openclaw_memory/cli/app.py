"""The ``openclaw-memory`` command line: a thin layer over the Python API.

Commands parse flags, call the API and render (rich for people, ``--json`` for
programs). Errors the product raises map to exit codes here, in one place.
"""

from __future__ import annotations

import sys
from typing import Optional

import typer

from ..errors import MemoryToolError
from .argv import hoist_settings_flags
from .output import error

HELP = """Find, read, index and search an AI agent's Markdown memory (MEMORY.md, memory/**/*.md, extra paths).

Settings flags (-w/--workspace, --agent, --state-dir, --extra, --multimodal) may be given
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
) -> None:
    from ..settings import Overrides

    ctx.obj = Overrides(
        workspace=workspace or None,
        agent=agent or None,
        state_dir=state_dir or None,
        extra=tuple(extra),
        multimodal=multimodal,
    )


def _register_commands() -> None:
    from .commands import files_cmd, prompt_cmd, read_cmd

    for module in (files_cmd, read_cmd, prompt_cmd):
        module.register(app)


_register_commands()


def main(argv: list[str] | None = None) -> int:
    args = hoist_settings_flags(list(sys.argv[1:] if argv is None else argv))
    as_json = "--json" in args
    try:
        result = app(args=args, prog_name="openclaw-memory", standalone_mode=False)
    except MemoryToolError as exc:
        error(exc.message, as_json)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except Exception as exc:  # click's own usage errors and aborts
        return _click_exit(exc, as_json)
    return result if isinstance(result, int) else 0


def _click_exit(exc: Exception, as_json: bool) -> int:
    from typer._click import exceptions as click_exc

    if isinstance(exc, click_exc.ClickException):
        if as_json:
            error(exc.format_message(), True)
        else:
            exc.show()
        return exc.exit_code
    if isinstance(exc, click_exc.Abort):
        sys.stderr.write("aborted\n")
        return 1
    raise exc


def run() -> None:
    sys.exit(main())
