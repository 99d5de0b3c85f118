"""Rendering helpers shared by the commands: JSON to stdout, messages to stderr."""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import (
    ESCAPED_IN,
    PROGRAM,
    SURROGATE,
    MemoryToolError,
    PathRefused,
    bytes_shown,
    escaped,
    one_line,
    printable,
    suggested,
)

# The standard streams the caller closed (``cmd <&-``): the entry point puts the null device in
# their place, so that nothing this process opens takes their descriptors; ``write --stdin`` must not
# take that for content given.
CLOSED_STREAMS: set[str] = set()


def _unicode_escaped(exc: UnicodeError) -> tuple[str, int]:
    """A character a stream cannot hold as ``\\uXXXX`` (``\\UXXXXXXXX`` past the BMP): Python's
    ``backslashreplace`` writes ``\\xe9`` for ``é``, the way a listing shows the byte 0xE9 of a name
    that is not UTF-8, which names another file."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start:exc.end]
    return "".join(f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}" for c in text), exc.end


UNICODE_ESCAPE = "openclaw-memory-unicode-escape"
codecs.register_error(UNICODE_ESCAPE, _unicode_escaped)


def utf8_stream(stream) -> bool:
    """Whether ``stream`` writes UTF-8 (one whose encoding is not named is taken to)."""
    encoding = getattr(stream, "encoding", None)
    try:
        return encoding is None or codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def print_json(data, *, one_line: bool = False) -> None:
    """``data`` as JSON on stdout. A long string of its top level (a whole note's text) is written a
    piece at a time: the document, then with its final newline, then encoded, was three more copies
    of it (a whole read of a 200 MB note)."""
    indent = None if one_line else 2
    marker = f"\x00{os.urandom(8).hex()}:"  # stands in for a long string: no note holds it
    long: list[str] = []

    def stand_in(value):
        if isinstance(value, str) and len(value) > _PIECE:
            long.append(value)
            return f"{marker}{len(long) - 1}"
        return value

    shown = {key: stand_in(value) for key, value in data.items()} if isinstance(data, dict) else data
    ascii_only = not utf8_stream(sys.stdout)
    text = json.dumps(shown, ensure_ascii=ascii_only, indent=indent)
    if not ascii_only and (SURROGATE.search(text) or any(SURROGATE.search(value) for value in long)):
        # A file name that is not UTF-8 (surrogate-escaped): \udcXX escapes keep the JSON valid
        # UTF-8 and give the exact name back to a JSON reader.
        ascii_only = True
        text = json.dumps(shown, ensure_ascii=True, indent=indent)
    for i, value in enumerate(long):
        before, _, text = text.partition(json.dumps(f"{marker}{i}"))
        sys.stdout.write(before + '"')
        for at in range(0, len(value), _PIECE):  # a string's escapes are a character's each
            sys.stdout.write(json.dumps(value[at : at + _PIECE], ensure_ascii=ascii_only)[1:-1])
        sys.stdout.write('"')
    sys.stdout.write(text + "\n")


_PIECE = 1 << 20  # characters of a long text written at a time


def reported(result, json_out: bool, warnings: Iterable[str] | None = None) -> bool:
    """Warn ``warnings`` (default: the result's own), then print the result's JSON when asked:
    True when it was printed (the command has nothing more to show)."""
    for message in result.warnings if warnings is None else warnings:
        warn(message)
    if json_out:
        from ..memory import to_json

        print_json(to_json(result))
    return json_out


def no_controls(text: str) -> str:
    """A note's text with its control characters (but tab and line ends) and undecodable bytes shown
    as ``\\xNN``: a file's text must not drive the terminal it is printed on."""
    return ESCAPED_IN["text"].sub(escaped, bytes_shown(text))


def for_message(text: str) -> str:
    """A message (an error, a warning, a finding) as :func:`no_controls` shows a text, and the bidi
    controls of the names it quotes escaped too (they reordered the line)."""
    return ESCAPED_IN["message"].sub(escaped, bytes_shown(text))


def for_stdout(text: str) -> str:
    """A note's text bound for stdout: on a terminal its control characters (but tab and line ends)
    shown as ``\\xNN``, so that a note's escape sequences never drive it; a pipe gets it exact."""
    return no_controls(text) if sys.stdout.isatty() else text


@contextmanager
def given_path(workspace: Path, path: str) -> Iterator[None]:
    """A memory path given on the command line is relative to the workspace: refused, the message
    says so when the current folder is another one (`cd ~/agent/memory && read 2025-11-30.md` was
    "not a memory path" and no more)."""
    try:
        yield
    except PathRefused as exc:
        hint = _relative_to_workspace(workspace, path)
        if hint is None:
            raise
        raise PathRefused(f"{exc.message}; {hint}") from None


def _relative_to_workspace(workspace: Path, path: str) -> str | None:
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:  # the current folder was removed
        return None
    if os.path.isabs(path) or here == str(workspace):
        return None
    typed = os.path.join(here, re.sub(r"#L\d+(-L\d+)?$", "", path))
    meant = os.path.relpath(typed, workspace)
    if meant.split(os.sep)[0] == os.pardir:  # the current folder is outside the workspace: said when the file is there
        return f"paths are relative to the workspace ({printable(str(workspace))}), not the current folder" if os.path.exists(
            typed) else None
    return f"paths are relative to the workspace ({printable(str(workspace))}), not the current folder: {printable(meant)}"


# How a command a warning or an error line names is run: ``openclaw-memory`` and the settings flags of
# the command being run (run_parsed sets it from settings.command_line), so that a notice a layer
# below worded ("the next `openclaw-memory index` resumes ...") acts, run as printed, on the same
# workspace and agent.
_PROGRAM = [PROGRAM]


def hints_run_as(program: str) -> None:
    """Name ``program`` in each command a warning or an error line bids the user run (errors.suggested)."""
    _PROGRAM[0] = program


def say(text: str) -> None:
    """``text`` on stderr, as is (a notice, a progress or a start line), guarded as :func:`warn` is: a
    reader gone away (``2>&1 | head -1``) loses the words, never the command's work."""
    _said(sys.stderr, lambda: sys.stderr.write(text))


def warn(message: str) -> None:
    _said(sys.stderr, lambda: sys.stderr.write(f"warning: {for_message(suggested(message, _PROGRAM[0]))}\n"))


def error(message: str, as_json: bool, *, below: str = "") -> None:
    """``message`` on stderr (and as ``{"error": ...}`` on stdout with ``--json``, one line as the
    message is: a program reads it as it reads a JSON-lines command's); ``below``: a line for the
    terminal only (where to get help)."""
    message = suggested(message, _PROGRAM[0])
    if as_json:
        _said(sys.stdout, lambda: print_json({"error": message}, one_line=True))
    line = one_line(message)
    _said(sys.stderr, lambda: sys.stderr.write(f"error: {line}\n" + (f"{below}\n" if below else "")))


def _said(stream, say) -> None:
    """``say()`` on ``stream``, and out at once: a message whose reader went away (``2>&1 | head -1``)
    or whose file cannot take it (a full disk) is lost, not a second error (a BrokenPipeError or
    OSError traceback in place of the exit status it reports)."""
    try:
        say()
        stream.flush()
    except (OSError, OutputLost):
        silence(stream)


def silence(stream) -> None:
    """Send what is still to be written to ``stream`` to the null device: its reader went away (``|
    head -1``, ``| true``), and the flush at exit would fail again (``Exception ignored ...
    BrokenPipeError``, exit status 120)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError):  # not a file (a test's in-memory stream): nothing to silence
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


class OutputLost(MemoryToolError):
    """stdout could not take the command's words (a full disk, an I/O error). Its own error, worded
    once, never "run it again": what a write, mv or rm did is done (rerun, it fails)."""

    def __init__(self, exc: OSError):
        from ..errors import is_no_space

        super().__init__(f"the output was not written: {'the disk is full' if is_no_space(exc) else exc.strerror or exc}")


_ON_LOST: list[Callable[[], None]] = []  # what a command takes back should its output never reach its reader


def if_lost(undo: Callable[[], None]) -> None:
    """Run ``undo`` should stdout not take this command's words (:class:`OutputLost`, wherever it
    fails, at exit too; a reader gone before the end; no stdout at all, ``>&-``): a read recorded for
    the write guard whose text never reached the reader."""
    if "stdout" in CLOSED_STREAMS:
        undo()
        return
    _ON_LOST.append(undo)


def none_to_take_back() -> None:
    """A command line starts with nothing to take back (one process may run several: the tests', a
    library's)."""
    _ON_LOST.clear()


def _take_back() -> None:
    while _ON_LOST:
        try:
            _ON_LOST.pop()()
        except Exception:  # noqa: BLE001 - the lost output is the error said; a read left recorded is the old rule
            pass


class GuardedStdout:
    """``sys.stdout`` for a command line: a write or flush it cannot take raises :class:`OutputLost`
    (what is left to write silenced), wherever it fails: in the command (an unbuffered stdout, an
    output past the buffer) as at exit. A reader gone (``| head -1``) stays a BrokenPipeError (what
    :func:`if_lost` registered is taken back too: the reader did not get it all)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._guarded(self._stream.write, text)

    def flush(self) -> None:
        self._guarded(self._stream.flush)

    def _guarded(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            _take_back()  # the reader went away before the end (`| head`): it did not see it all
            raise
        except OSError as exc:
            silence(self._stream)
            _take_back()
            raise OutputLost(exc) from None

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def delivered(code: int) -> int:
    """``code``, once what the command wrote is out: stdout and stderr flushed, a stream whose reader
    went away silenced (its words are lost; the command's status stands). A stdout that cannot
    take them (:class:`OutputLost`) is said on stderr, and the command fails (it was an
    'Exception ignored ... OSError' traceback at exit, status 120)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:
            if stream is sys.stdout:
                _take_back()
            silence(stream)
        except OutputLost as exc:
            _said(sys.stderr, lambda exc=exc: sys.stderr.write(f"error: {exc.message}\n"))
            code = code or 1
        except OSError:
            silence(stream)
    return code


def draws(stream) -> bool:
    """Whether ``stream`` is a terminal that moves its cursor (a progress bar): a TTY whose TERM is
    not ``dumb`` (Emacs' shell, some CI logs), where a bar shows nothing at all."""
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def coloured(stream) -> bool:
    """Whether ``stream`` takes colour: a terminal that :func:`draws`, unless ``NO_COLOR`` is set to
    anything but the empty string (no-color.org)."""
    return draws(stream) and not os.environ.get("NO_COLOR")


def stderr_console():
    from rich.console import Console

    return Console(stderr=True)

