"""The ``openclaw-memory`` entry point: argv in, exit status out.

Errors the product raises map to exit codes here, in one place: a user mistake is
a message on stderr (and ``{"error": ...}`` on stdout with ``--json``), never a traceback.
"""

from __future__ import annotations

import errno
import gc
import os
import sys
from collections.abc import Callable
from pathlib import Path

from ..errors import PROGRAM, BadValue, MemoryToolError, StateDirError, describe_os_error
from ..signals import interrupt_once, noted_from_the_start, stop_signals
from .output import UNICODE_ESCAPE, GuardedStdout, delivered, error, hints_run_as, none_to_take_back, utf8_stream
from .parse import CommandLineError, Parsed, parse
from .spec import Command


def main(argv: list[str] | None = None) -> int:
    none_to_take_back()
    hints_run_as(PROGRAM)  # (until the settings are known: one process may run many commands, the tests' cli)
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in (args[: args.index("--")] if "--" in args else args)  # after --, it is an argument
    command = None  # the command run, whose flags name the values an error is about
    try:
        parsed = parse(args)
        command = parsed.command
        if parsed.action == "version":
            from .. import __version__

            sys.stdout.write(f"openclaw-memory {__version__}\n")
            return 0
        if parsed.action == "help":
            sys.stdout.write(parsed.help)
            return 0
        release = _stop_signals_noted(parsed)
        try:
            return run_parsed(parsed)
        finally:
            release()
    except MemoryToolError as exc:
        error(_worded(exc, command, args), as_json, below=exc.help_line if isinstance(exc, CommandLineError) else "")
        return exc.exit_code
    except ModuleNotFoundError as exc:
        from ..extras import missing_extra

        missing = missing_extra(exc)
        if missing is None:
            raise
        error(missing.message, as_json)
        return missing.exit_code
    except KeyboardInterrupt:  # (a second one is ignored: signals.interrupt_once, for the whole process)
        error("interrupted", as_json)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a failure no layer below worded (the layers word the ones they expect)
        error(_os_worded(exc), as_json)
        return 1


# The commands that run until a signal stops them: ``serve --stop`` excepted, and ``mcp --serve``,
# which may wait up to a minute for the service it starts (a SIGTERM there would wait with it).
_LONG_RUNNING = frozenset({"serve", "watch", "mcp"})


def _stop_signals_noted(parsed: Parsed) -> Callable[[], None]:
    """A long-running command's SIGTERM and SIGHUP noted from its command line parsed on, until its
    own handlers take them over (signals.noted_from_the_start); the function that puts back the
    rest. Not SIGINT: a Ctrl-C before the start is "interrupted" at once (exit 130, nothing made)."""
    command = parsed.command
    if command is None or command.name not in _LONG_RUNNING or parsed.values.get("stop") or parsed.values.get("serve"):
        return lambda: None
    return noted_from_the_start(*(sig for sig in stop_signals() if sig.name != "SIGINT"))


def _os_worded(exc: OSError) -> str:
    """An OSError no layer worded; a relative path in a folder removed under the shell named nothing
    ("No such file or directory")."""
    if exc.filename is None and exc.errno == errno.ENOENT:
        try:
            os.getcwd()
        except FileNotFoundError:
            return ("the current folder no longer exists (removed while the shell was in it), so no relative path "
                    "can be found from it: cd to a folder that exists, or give absolute paths")
    return describe_os_error(exc)


def _worded(exc: MemoryToolError, command: Command | None, args: list[str]) -> str:
    """The error in the command line's words: a bad value named by the flag that gave it, as it was
    typed (`--max-results 0`, OpenClaw's spelling, was refused as `--limit`)."""
    if isinstance(exc, BadValue) and command is not None:
        flags = next((o.flags for o in command.opts if o.dest == exc.name), None)
        if flags is not None:
            typed = [f for f in flags if any(a == f or a.startswith(f + "=") for a in args)]
            return exc.worded_as((typed or flags)[0])
    return exc.message


def run_parsed(parsed: Parsed) -> int:
    """Resolve the settings and call the command's handler."""
    from ..settings import Overrides, command_line, resolve_settings

    if parsed.command is None:
        raise ValueError(f"a {parsed.action!r} command line names no command to run")
    if not parsed.command.needs_settings:  # (completion: the same whatever the workspace)
        result = parsed.command.handler(None, **parsed.values)
        return result if isinstance(result, int) else 0
    given = parsed.settings
    try:
        settings = resolve_settings(
            Overrides(
                workspace=given.get("workspace"),  # (given empty: refused, not taken as not given)
                agent=given.get("agent"),
                state_dir=given.get("state_dir"),
                extra=tuple(given.get("extra") or ()),
                multimodal=given.get("multimodal"),
                qdrant_url=given.get("qdrant_url"),
                session=given.get("session"),
            )
        )
    except PermissionError as exc:
        raise _state_dir_closed(exc, _state_dir_meant(given.get("state_dir"))) or exc from None
    from ..memory import private_umask

    hints_run_as(command_line(settings))
    from ..settings.agents import workspace_hint

    if (hint := workspace_hint(settings)) is not None:  # `-w ws/memory`: found no memory, said nothing
        from .output import warn

        warn(hint)
    try:
        with private_umask():  # every file the command makes in the state dir is owner-only, the engine's too
            result = parsed.command.handler(settings, **parsed.values)
    except MemoryToolError as exc:  # a command it bids the user run acts on this command's workspace and agent
        exc.suggesting(command_line(settings))
        raise
    except PermissionError as exc:
        raise _state_dir_closed(exc, settings.state_dir) or exc from None
    return result if isinstance(result, int) else 0


def _state_dir_meant(flag: str | None) -> Path | None:
    """The state dir the settings would have named (--state-dir, OPENCLAW_STATE_DIR, ~/.openclaw)."""
    from ..settings._places import default_state_dir, expand, openclaw_env

    try:
        given = flag or openclaw_env("OPENCLAW_STATE_DIR", os.environ)
        return Path(os.path.realpath(expand(given, os.environ) if given else default_state_dir(os.environ)))
    except (MemoryToolError, OSError, ValueError):
        return None


def _state_dir_closed(exc: PermissionError, state_dir: Path | None) -> StateDirError | None:
    """A file of the state dir (or the state dir itself) this user may not read: the state dir's
    error, exit 2, naming it and what to do. It was the bare OSError's line, ``Permission denied
    (/.../st/openclaw.json)``, exit 1."""
    if state_dir is None or not exc.filename:
        return None
    path = Path(os.path.abspath(os.fsdecode(exc.filename)))
    if path != state_dir and state_dir not in path.parents:
        return None
    from ..errors import closed_on_the_way

    # The folder that shuts this user out (index/ at mode 000 is not the state dir itself).
    todo = closed_on_the_way(str(path)) or (f"make it readable and writable by this user (its owner: `chmod u+rwx "
                                            f"{state_dir}`)")
    if "give another state dir" not in todo:  # (another user's folder: closed_on_the_way says it)
        todo += ", or give another state dir (--state-dir DIR or OPENCLAW_STATE_DIR)"
    return StateDirError(
        f"the state dir {state_dir} cannot be read by this user (uid {os.geteuid()}): {exc.strerror or exc} ({path}); {todo}")


UTF8_REEXEC = "OPENCLAW_MEMORY_UTF8_REEXEC"  # set for the process started again in UTF-8 mode: its streams' encodings


def utf8_file_names() -> None:
    """File names decoded as UTF-8, whatever the locale: where Python's file system encoding is not
    UTF-8 (a Latin-1 locale, ``LANG=C`` with ``PYTHONUTF8=0 PYTHONCOERCECLOCALE=0``), the process
    starts again, once, as the same interpreter with ``-X utf8`` and the same arguments (stdin,
    stdout, stderr and every inheritable descriptor kept). A note's name was decoded with the
    locale: ``memory/café.md`` was ``memory/cafÃ©.md`` there (indexed again under that name, its
    links broken, its history split), and an ASCII locale dropped it. The streams keep the
    locale's encoding (what the terminal shows), passed on in :data:`UTF8_REEXEC`, which also
    keeps the new process from starting again. Costs one call where the encoding is UTF-8."""
    if sys.getfilesystemencoding() == "utf-8":
        if UTF8_REEXEC in os.environ:
            _locale_streams(os.environ.pop(UTF8_REEXEC))
        return
    if UTF8_REEXEC in os.environ or not getattr(sys, "orig_argv", None) or not sys.executable:
        return  # started again already (and still not UTF-8: never a loop), or no command line to start again
    os.environ[UTF8_REEXEC] = ",".join(
        f"{getattr(stream, 'encoding', '') or ''}:{getattr(stream, 'errors', '') or ''}" for stream in (sys.stdin, sys.stdout, sys.stderr))
    # PYTHONUTF8 too: the processes it starts (the service, the index's probe of a shard) inherit it.
    was = os.environ.get("PYTHONUTF8")
    os.environ["PYTHONUTF8"] = "1"
    try:
        os.execv(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]])
    except OSError:  # cannot start again: go on with the locale's names
        os.environ.pop(UTF8_REEXEC, None)
        if was is None:
            os.environ.pop("PYTHONUTF8", None)
        else:
            os.environ["PYTHONUTF8"] = was


def _locale_streams(said: str) -> None:
    """stdin, stdout and stderr in the encodings (and error handlers) the process had before it started
    again in UTF-8 mode (which makes them UTF-8): a Latin-1 terminal still gets Latin-1."""
    for name, given in zip(("stdin", "stdout", "stderr"), said.split(","), strict=False):
        encoding, _, errors = given.partition(":")
        stream = getattr(sys, name)
        if encoding and stream is not None and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(encoding=encoding, errors=errors or "strict")
            except (LookupError, ValueError, OSError):
                pass




def run() -> None:
    utf8_file_names()
    interrupt_once()
    # What is loaded by now (the package, the parser, the command modules) lives as long as the
    # process: kept out of every collection, the one at exit included (a light command's CPU time
    # drops by about a seventh, bench/startup.py).
    gc.freeze()
    _fill_closed_streams()
    _escape_what_streams_cannot_hold()
    sys.stdout = GuardedStdout(sys.stdout)  # (a lost output is one error, wherever it fails)
    sys.exit(delivered(main()))


def _fill_closed_streams() -> None:
    """A stream closed by the caller (``>&-``) reads and writes the null device: the command still
    runs (a write still writes), its words go nowhere. Taken first, so that no file this process
    opens (the state database, a lock) gets descriptor 1 or 2 and a stray write lands in it."""
    from .output import CLOSED_STREAMS

    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: this one
            CLOSED_STREAMS.add(name)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", encoding="utf-8", errors="surrogateescape", closefd=False))


def _escape_what_streams_cannot_hold() -> None:
    """A character stdout's or stderr's encoding cannot hold (a Latin-1 or ASCII locale,
    ``PYTHONIOENCODING=ascii``: a note's ``é``) is written as its escape (``\\u00e9``), not a
    UnicodeEncodeError traceback; JSON is all ASCII there (``output.print_json``). Never ``\\xe9``:
    that is how a listing shows a byte of a name that is not UTF-8, another file."""
    for stream in (sys.stdout, sys.stderr):
        if not utf8_stream(stream) and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=UNICODE_ESCAPE)
