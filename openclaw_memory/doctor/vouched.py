"""What the state database vouches for of each Markdown file of doctor's scan: read once, in one
query, and shared by the UTF-8 check and the link check.

A file's sighting (``observations``: the one change rule) *holds* when it was not racy and its
change key is the file's as scanned. Where it holds, what the index found of the bytes it hashed
as text (``text_checks``, same hash) holds too, and so do the links the link table parsed
(``link_files``) when that row is not racy and has the sighting's change key: both are of the
same bytes. That is every file of a workspace whose index is current, so the query's rows are
compared with the scan as sets (in C, no record built and no Python comparison per file): only
what is left over, a few files nearly always, is looked at one by one (each check reading its
own table whole and comparing it row by row in Python cost more: docs/doctor.md, *Cost*).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..bulk import gc_paused
from ..database import Database

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings

TextFound = tuple[int | None, int | None]  # offsets of the first invalid UTF-8 byte and of the first NUL
CLEAN: TextFound = (None, None)

# One row per sighting that holds for *some* stat: its key, what was found of its bytes as text,
# and whether the link table's row is of the same bytes (1; 0 or NULL: it is not, or there is none).
_QUERY = (
    "SELECT o.path, o.size, o.mtime_ns, o.ctime_ns, o.inode, o.mode, t.bad, t.nul, "
    "l.racy = 0 AND (l.size, l.mtime_ns, l.ctime_ns, l.inode, l.mode) = (o.size, o.mtime_ns, o.ctime_ns, o.inode, o.mode) "
    "FROM observations o JOIN text_checks t ON t.path = o.path AND t.hash = o.hash "
    "LEFT JOIN link_files l ON l.path = o.path WHERE o.racy = 0"
)


class Vouched:
    """What the checks must look at themselves: every file not named here has a sighting that
    holds, clean text and a link row that holds."""

    def __init__(self, text: dict[str, TextFound | None], link_suspects: set[str]):
        self.text = text  # files whose text is not vouched clean: what was found of it (None: nothing, read it)
        self.link_suspects = link_suspects  # files whose link row may not hold (the link table compares them)

    @classmethod
    def read(cls, settings: Settings, files: Iterable[MemoryFile]) -> Vouched:
        """``files``' (a scan's Markdown files) from the state database (raises MemoryToolError
        where it cannot be read)."""
        with gc_paused():  # a key and a row a note, none in a cycle
            return cls._read(settings, files)

    @classmethod
    def _read(cls, settings: Settings, files: Iterable[MemoryFile]) -> Vouched:
        # The row each file has when everything holds: its path as stored and its change key (the
        # fields of database.observations.change_key, in its order), clean text (NULL, NULL) and
        # a link row of the same bytes (1). Built inline: a call per file is most of the cost.
        expected = {(f.abs_path.encode("utf-8", "surrogateescape"), f.size, f.mtime_ns, f.ctime_ns, f.inode, f.mode,
                     None, None, 1): f.abs_path for f in files}
        rows = Database(settings.data_dir).rows(_QUERY)
        left = expected.keys() - rows
        text: dict[str, TextFound | None] = {}
        suspects: set[str] = set()
        if left:
            held = {row[:6]: row for row in rows if row[6:] != (None, None, 1)}  # rows that hold, not everything
            for key in left:
                path, row = expected[key], held.get(key[:6])
                if row is None:  # the sighting does not hold (changed, new, racy, never checked): look at both
                    text[path] = None
                    suspects.add(path)
                    continue
                if row[6:8] != CLEAN:
                    text[path] = (row[6], row[7])
                if row[8] != 1:
                    suspects.add(path)
        return cls(text, suspects)
