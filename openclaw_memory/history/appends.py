"""What an append adds at the end of a memory file: its text on its own lines, in the note's own
line ending."""

from __future__ import annotations

import os
import re

from .store import FileVersion


def appended(fd: int | None, current: FileVersion | None, added: bytes) -> bytes:
    """What an append adds at the end of the file: ``added`` on its own line(s), ended by a line
    break, in the note's own line ending (the file's last one, :func:`_last_line_ending`: CRLF in a
    note whose last line ends so, a lone CR in a CR-only note, its text's own line breaks too), after
    one when the file does not end with a line break."""
    if fd is None or current is None or current.size == 0:
        return added + (b"" if added.endswith(b"\n") else b"\n")
    ending = _last_line_ending(fd, current.size)
    if ending == b"\r\n":
        added = _LONE_LF.sub(b"\r\n", added)
    elif ending == b"\r":
        added = _LF_BREAK.sub(b"\r", added)
    separator = b"" if os.pread(fd, 1, current.size - 1) in (b"\n", b"\r") else ending
    return separator + added + (b"" if added.endswith(ending[-1:]) else ending)


_LONE_LF = re.compile(rb"(?<!\r)\n")
_LF_BREAK = re.compile(rb"\r?\n")


def _last_line_ending(fd: int, size: int) -> bytes:
    """The kind of the file's last line break: ``\r\n``, ``\n`` or a lone ``\r`` (a CR-only note,
    as classic Mac OS saved it); ``\n`` for a file with none."""
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        block = os.pread(fd, end - start, start)
        at = max(block.rfind(b"\n"), block.rfind(b"\r"))
        if at >= 0:
            if block[at:at + 1] == b"\r":  # the last break: no LF after it, so a lone CR
                return b"\r"
            return b"\r\n" if start + at > 0 and os.pread(fd, 1, start + at - 1) == b"\r" else b"\n"
        end = start
    return b"\n"
