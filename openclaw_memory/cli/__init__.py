"""The command-line interface, a thin layer over the :class:`~openclaw_memory.memory.Memory` door."""

from __future__ import annotations

import sys


def run() -> None:
    """The console script. Loading the CLI's modules takes a good part of a second; a Ctrl-C then
    was a traceback (the process killed by the signal). It is the line, and the exit status 130,
    of a Ctrl-C at any later moment (:func:`.main.main`), words written here without loading the
    modules that word it: ``{"error": "interrupted"}`` on stdout with ``--json``."""
    try:
        from .main import run as run_command
    except KeyboardInterrupt:
        args = sys.argv[1:]
        if "--json" in (args[: args.index("--")] if "--" in args else args):
            sys.stdout.write('{\n  "error": "interrupted"\n}\n')
        else:
            sys.stderr.write("error: interrupted\n")
        sys.exit(130)
    run_command()
