"""The ``openclaw-memory`` entry point: argv in, exit status out.

Errors the product raises map to exit codes here, in one place: a user mistake is
a message on stderr (and ``{"error": ...}`` on stdout with ``--json``), never a traceback.
"""

from __future__ import annotations

import sys

from ..errors import MemoryToolError, describe_os_error
from .argv import hoist_settings_flags
from .output import error


def main(argv: list[str] | None = None) -> int:
    args = hoist_settings_flags(list(sys.argv[1:] if argv is None else argv))
    as_json = "--json" in args
    try:
        from .fast import parse_fast, run_fast

        fast = parse_fast(args)
        if fast is not None:
            return run_fast(fast)
        from .app import app

        result = app(args=args, prog_name="openclaw-memory", standalone_mode=False)
    except MemoryToolError as exc:
        error(exc.message, as_json)
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a failure no layer below worded (the layers word the ones they expect)
        error(describe_os_error(exc), as_json)
        return 1
    except Exception as exc:  # click's own usage errors and aborts
        return _click_exit(exc, as_json)
    return result if isinstance(result, int) else 0


def _click_exit(exc: Exception, as_json: bool) -> int:
    import typer
    from typer._click.exceptions import ClickException

    if isinstance(exc, ClickException):
        if as_json:
            error(exc.format_message(), True)
        else:
            exc.show()
        return exc.exit_code
    if isinstance(exc, typer.Abort):
        sys.stderr.write("aborted\n")
        return 1
    raise exc


def run() -> None:
    sys.exit(main())
