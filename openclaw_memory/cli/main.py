"""The ``openclaw-memory`` entry point: argv in, exit status out.

Errors the product raises map to exit codes here, in one place: a user mistake is
a message on stderr (and ``{"error": ...}`` on stdout with ``--json``), never a traceback.
"""

from __future__ import annotations

import importlib
import sys

from ..errors import MemoryToolError
from .output import error
from .parse import Parsed, parse


def run_parsed(parsed: Parsed) -> int:
    """Resolve the settings and call the command's handler (the typer app calls this too)."""
    from ..settings import Overrides, resolve_settings

    given = parsed.settings
    settings = resolve_settings(
        Overrides(
            workspace=given.get("workspace") or None,
            agent=given.get("agent") or None,
            state_dir=given.get("state_dir") or None,
            extra=tuple(given.get("extra") or ()),
            multimodal=given.get("multimodal"),
            qdrant_url=given.get("qdrant_url") or None,
            session=given.get("session") or None,
        )
    )
    module, function = parsed.command.handler.split(":")
    handler = getattr(importlib.import_module(f".commands.{module}", __package__), function)
    result = handler(settings, **parsed.values)
    return result if isinstance(result, int) else 0


def _show_help(words: tuple[str, ...]) -> int:
    from .app import app

    try:
        app(args=[*words, "--help"], prog_name="openclaw-memory", standalone_mode=False)
    except Exception:  # click ends help with an exit it raises as an exception
        pass
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    try:
        parsed = parse(args)
        if parsed.action == "version":
            from .. import __version__

            sys.stdout.write(f"openclaw-memory {__version__}\n")
            return 0
        if parsed.action == "help":
            return _show_help(parsed.words)
        return run_parsed(parsed)
    except MemoryToolError as exc:
        error(exc.message, as_json)
        return exc.exit_code
    except ModuleNotFoundError as exc:
        from ..extras import missing_extra

        missing = missing_extra(exc)
        if missing is None:
            raise
        error(missing.message, as_json)
        return missing.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0


def run() -> None:
    sys.exit(main())
