"""Notes deleted by hand, logged as removed once a look at the whole workspace finds them gone.

A note removed outside the product (a shell's `rm`, a file manager, a `mv` away) left no entry: the
history still named its last version as present, so a rollback to a moment after the deletion, even
one after `state` had said "deleted", brought the note back (or, for a shell `mv a c` followed by the
agent's `mv b a`, rewrote `a` with the text it had before). A look at every memory file (`state`,
the plan of a rollback), or at the note's own name (`history PATH`), logs a removal for each path the
history holds as present that is gone, in a folder that holds something (a disk not mounted leaves
an empty folder), dated when it was found: the history then says what the workspace held from that moment, and the note's
last bytes are kept as a removed note's (`restore PATH --last` brings it back).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..database import dec
from ..errors import PathRefused, UsageError
from ..fsutil.lock import on_nearest_there
from .placing import resolve_writable
from .versions import REMOVE

if TYPE_CHECKING:
    from ..settings import Settings
    from .store import HistoryStore


def see_removals(settings: Settings, store: HistoryStore, present: set[str]) -> None:
    """Log a removal for each path under the workspace or an extra path whose last entry is not one,
    that is not in ``present`` (the absolute paths a scan just listed) and is not there now. A path
    that cannot be looked at (no permission, a symlink or a folder at its name) is not taken for gone."""
    rows = store.db.rows("SELECT path, display, version, size, origin FROM versions "
                         "WHERE id IN (SELECT MAX(id) FROM versions GROUP BY path)")
    roots = (str(settings.workspace), *settings.extra_paths)
    for raw, display, version, size, origin in rows:
        path = dec(raw)
        if origin == REMOVE or path in present or not in_roots(path, roots) or not folder_holds_something(path):
            continue
        try:
            resolve_writable(path, str(settings.workspace), settings.extra_paths)
        except (PathRefused, UsageError):
            continue  # something else is at the path, or it is no memory path now
        if _gone(store, path):
            with store.lock():
                store.record(path, dec(display), version, size, REMOVE, None)


def see_removal(store: HistoryStore, abs_path: str, display: str) -> None:
    """Log a removal of ``abs_path``, found gone (its name resolved as a memory path's, in a folder that
    is there, and nothing at it), where its latest entry holds it as present: `history PATH` of a note
    deleted by hand is a look at it (not in a folder that holds nothing: :func:`folder_holds_something`)."""
    if not folder_holds_something(abs_path):
        return
    with store.lock():
        latest = store.log.latest(abs_path)
        if latest is not None and latest.origin != REMOVE:
            store.record(abs_path, display, latest.version, latest.size, REMOVE, None)


def _gone(store: HistoryStore, abs_path: str) -> bool:
    try:
        fd, _ = store.open_file(abs_path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False  # there, of a shape or mode that cannot be read: not gone
    os.close(fd)
    return False


def folder_holds_something(path: str) -> bool:
    """Whether the nearest folder there on ``path``'s way (its own, else the first one above it that is
    there) holds any entry. A disk not mounted leaves its mount point an empty folder (an extra path, a
    `memory/` mounted from elsewhere): every note there was logged removed, and once the disk was back
    a rollback to a moment after archived them. A note whose nearest folder holds nothing is not known
    to be removed (a person who emptied it by hand has it logged once something is in it again, or a
    rollback's plan brings it back: the safe side)."""
    def holds_something(folder: str) -> bool:
        with os.scandir(folder) as entries:
            return next(entries, None) is not None

    return on_nearest_there(os.path.dirname(path), holds_something)


def in_roots(path: str, roots: tuple[str, ...]) -> bool:
    """Whether ``path`` is a file of one of ``roots``: below it, or the root itself (an extra path
    that names one file: moved away or deleted, it was left out, so a rollback archived its note's
    new name and said nothing of the old)."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)
