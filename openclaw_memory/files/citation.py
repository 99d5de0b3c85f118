"""Citations as search prints them (``memory/notes.md#L10-L24``), read back into a line window.

``read`` and MCP ``memory_get`` both accept a citation where a path goes, so an agent can open
exactly the passage a search result names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UsageError, cut

# DOTALL: a file name may hold a newline; fullmatch: "$" would also match before a final one. A
# lowercase l is taken too (#l10-l24: typed by hand, never another file: a memory file ends .md).
_CITATION = re.compile(r"(?P<path>.+)#[Ll](?P<start>[0-9]+)(?:-[Ll](?P<end>[0-9]+))?", re.DOTALL)
# A note's path with any other fragment (a heading, #H, as `links` shows [[a#H]]): no memory file
# (its name does not end .md), so it was refused as "not a Markdown (.md) memory file".
_FRAGMENT = re.compile(r"(?P<path>.+\.md)#(?P<fragment>.*)", re.DOTALL)


@dataclass(frozen=True)
class Citation:
    path: str
    from_line: int
    lines: int


def parse_citation(text: str) -> Citation | None:
    """``PATH#L10-L24`` (or ``PATH#L10``) as a path and a window; None when ``text`` is a plain path.

    A range that runs backwards is refused, naming the order that works (it is no path either); so
    is a note's path with another fragment, naming the note.
    """
    m = _CITATION.fullmatch(text)
    if not m:
        other = _FRAGMENT.fullmatch(text)
        if other is not None and not text.endswith(".md"):  # (memory/a.md#b.md is a file's name)
            note = cut(other.group("path"), 200)
            raise UsageError(f"{cut(text, 200)}: only a line citation ({note}#L10-L24) can be read; read {note} for "
                             "the whole note")
        return None
    path = m.group("path")
    said = cut(text, 200)
    digits = max(len(m.group("start")), len(m.group("end") or ""))
    if digits > _MAX_DIGITS:  # Python reads no longer number (a ValueError, answered as a crash)
        raise UsageError(f"{said}: a citation's line number of {digits:,} digits is past any file")
    start = int(m.group("start"))
    end = int(m.group("end") or start)
    if min(start, end) < 1:
        raise UsageError(f"{said}: a citation's lines are counted from 1 ({cut(path, 200)}#L1-L{max(end, 1)})")
    if end < start:
        raise UsageError(f"{said}: a citation's lines run from the first to the last ({cut(path, 200)}#L{end}-L{start})")
    if end > MAX_LINE:  # as memory_get's `from` refuses it: no JSON reader holds the number whole
        raise UsageError(f"{said}: a citation's line number must be a positive integer (at most {MAX_LINE}), not {cut(str(end), 60)}")
    return Citation(path, start, end - start + 1)


# The last line number a citation names: JavaScript's Number.MAX_SAFE_INTEGER, the most memory_get's
# `from` takes (OpenClaw's schema); past it, the window answered ``from`` as a number no JSON reader
# holds whole.
MAX_LINE = 2**53 - 1
# A line number no file reaches, and short of the 4,300 digits Python turns into an int (or back).
_MAX_DIGITS = 1000

