"""``openclaw-memory read``: a paged read of one memory file (``memory_get``)."""

from __future__ import annotations

import sys
from contextlib import closing
from typing import TYPE_CHECKING

from ...errors import shell_word
from ...memory import open_memory
from ..output import for_stdout, given_path, if_lost, no_controls, printable, reported, say, warn

if TYPE_CHECKING:
    from ...settings import Settings

_PIECE = 1 << 20  # characters of a text written at a time: each escape and encoding of it is one piece's


def run_read(settings: Settings, path: str, from_line: int | None, lines: int | None, max_chars: int | None,
             json_out: bool, diff: bool = False) -> int:
    """``path`` may be a search citation: its lines, unless --from/--lines say otherwise."""
    if diff:
        return _run_diff(settings, path, from_line, lines, max_chars, json_out)
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, path):
        result = memory.read(path, from_line=from_line, lines=lines, max_chars=max_chars)
    _unread_if_lost(settings, result.path, result.version)
    if not reported(result, json_out):
        if result.text or result.lines:  # (a blank line is a line: its text is "")
            _show(result.path, result.text)
            if result.line_chars is not None:  # a hard cut: OpenClaw's notice names no read that shows the line
                _whole_line(settings, result.path, result.from_line or 1, result.line_chars)
        elif result.missing and not result.warnings:  # (a warning said so already, naming a look-alike there)
            warn(f"{printable(result.path)} does not exist")
        elif result.lines == 0:  # nothing printed, and nothing said why: a --from past the end looked like an empty note
            start = result.from_line or 1
            say(f"{printable(result.path)}: " + (f"it ends before line {start}: no line to show\n" if start > 1
                                                              else "the file is empty\n"))
    return 1 if result.missing else 0  # the JSON keeps OpenClaw's not_found shape; the status says it too


def _whole_line(settings: Settings, path: str, start: int, chars: int) -> None:
    """Where a line cut short by the budget is read whole (the rest of the file follows it: the
    read of it says from where)."""

    from ...settings import command_line

    say(f"{printable(path)}: line {start} is {chars} characters long, past --max-chars: "
                     f"{command_line(settings)} read {shell_word(path)} --from {start} --max-chars {chars} "
                     "shows it whole\n")


def _unread_if_lost(settings: Settings, path: str, version: str | None) -> None:
    """The read is recorded for the write guard; should its text never reach the reader (stdout on a
    full disk), it is taken back, so a write asks for a read first (as a memory_get lost on its way)."""
    if version is None:
        return

    def forget() -> None:
        with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
            memory.forget_read(path, version)

    if_lost(forget)


def _show(path: str, text: str) -> None:
    """The text for a person: a binary file (NUL bytes) or any text bound for a terminal has its control
    characters shown as ``\\xNN`` instead of sent raw (``--json`` gives the exact text). Written a piece
    at a time: the text with its final newline, then encoded whole, was two more copies of it (a whole
    read of a 200 MB note). Each line it holds is printed with its newline, the last one too: the text
    is its lines joined, so a window ending in a blank line ends in "\n" (`a\n\n` was shown as `a`,
    and a window of one blank line was no output at all)."""
    binary = "\x00" in text
    if binary:
        warn(f"{printable(path)} is not text (it holds NUL bytes): control characters are shown escaped; --json gives the exact text")
    for at in range(0, len(text), _PIECE):
        piece = text[at : at + _PIECE]
        sys.stdout.write(no_controls(piece) if binary else for_stdout(piece))
    sys.stdout.write("\n")


def _run_diff(settings: Settings, path: str, from_line: int | None, lines: int | None, max_chars: int | None,
              json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, path):
        result = memory.read_diff(path, from_line=from_line, lines=lines, max_chars=max_chars)
    _unread_if_lost(settings, result.path, result.version)
    missing = 1 if result.mode == "missing" else 0  # as a plain read of it exits (it was 0 with --diff)
    if reported(result, json_out):
        return missing
    if result.mode == "diff":
        sys.stdout.write(for_stdout(result.diff))
    elif result.mode == "unchanged":
        say(f"{printable(result.path)}: unchanged since your last read (version {(result.version or '')[:12]})\n")
    elif result.mode == "full":
        say(f"{printable(result.path)}: no earlier version to compare with ({result.reason}); the file follows\n")
        if result.read is not None and (result.read.text or result.read.lines):
            _show(result.path, result.read.text)
    else:
        warn(f"{printable(result.path)} does not exist")
    return missing
