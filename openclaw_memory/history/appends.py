"""What an append adds at the end of a memory file: its text on its own lines, in the note's own
line ending."""

from __future__ import annotations

import os
import re

from .store import FileVersion

_BREAK = re.compile(rb"\r\n|\r|\n")


def appended(fd: int | None, current: FileVersion | None, added: bytes) -> bytes:
    """What an append adds at the end of the file: ``added`` on its own line(s), ended by a line
    break, after one when the file does not end with a line break, every break in the note's own
    line ending: the kind of the file's last line break (:func:`_last_line_ending`: CRLF in a note
    whose last line ends so, a lone CR in a CR-only note, LF in an LF note), each ``\\r\\n``, ``\\r``
    and ``\\n`` of the text made that one (``two\\r\\nthree`` was appended to an LF note as it came,
    and a text ending in ``\\r`` ended the note in CRLF, every later append with it). A note with no
    line break yet (new, empty, one unended line) takes the text's first, else LF."""
    ending = _last_line_ending(fd, current.size) if fd is not None and current is not None and current.size else None
    if ending is None:
        first = _BREAK.search(added)
        ending = first.group() if first else b"\n"
    added = in_ending(added, ending)
    ended = fd is None or current is None or current.size == 0 or os.pread(fd, 1, current.size - 1) in (b"\n", b"\r")
    head, tail = b"" if ended else ending, b"" if added.endswith(ending) else ending
    return b"".join((head, added, tail)) if head or tail else added  # (one copy at most: the text may be large)


def in_ending(text: bytes, ending: bytes) -> bytes:
    """``text`` with each of its line breaks (``\r\n``, else a lone ``\r`` or ``\n``, as ``_BREAK`` reads
    them) made ``ending``: ``_BREAK.sub(ending, text)``, without its piece of text per line (40 MB of
    short lines took 3.5 GB). The text itself when it has no other break, else a few whole-text
    replaces: every ``\r\n`` first, so that its ``\r`` is never taken for a lone one."""
    if ending == b"\r\n":
        crlf = text.count(b"\r\n")
        if text.count(b"\r") == crlf == text.count(b"\n"):
            return text
        return text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").replace(b"\n", b"\r\n")
    other = b"\r" if ending == b"\n" else b"\n"
    if other not in text:
        return text
    return text.replace(b"\r\n", ending).replace(other, ending)


def _last_line_ending(fd: int, size: int) -> bytes | None:
    """The kind of the file's last line break: ``\\r\\n``, ``\\n`` or a lone ``\\r`` (a CR-only note,
    as classic Mac OS saved it); None for a file with none."""
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
    return None
