"""The intent of a move or a removal of a memory file (or of an import), on disk before its first step.

One row of the state database's ``file_ops`` table, committed (synced) before the move's rename
or the removal's unlink, moved on at each later step and dropped in the same transaction as the
history records the outcome; a move that rewrites links (``mv --update-links``) is moved on to
:data:`LINKS_STEP` there instead, and dropped after its last rewrite (:mod:`openclaw_memory.links.pending`). Every mover holds the workspace's write lock, so there is at most one:
a row found while nobody holds the lock is an operation that was killed, which
:func:`~.moves.finish_pending` (``doctor --fix``, or the next ``mv``/``rm``) finishes or undoes.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace
from typing import Literal

from ..database import Database

MOVE_OP: Literal["move"] = "move"
REMOVE_OP: Literal["remove"] = "remove"
# An `import` (archive.importer): ``path`` is the archive, run again to finish it.
IMPORT_OP: Literal["import"] = "import"
# A move the history has recorded, whose links (FileOp.links) are not all rewritten yet.
LINKS_STEP = "links"


class UnreadableIntent(ValueError):
    """The row exists but is not an intent this version understands."""


@dataclass(frozen=True)
class FileOp:
    """What a killed ``mv``, ``rm`` or ``import`` was doing."""

    op: Literal["move", "remove", "import"]
    step: str
    path: str  # absolute: the file moved or removed
    display: str
    version: str  # the bytes it held, stored in the history before the first step
    size: int
    target: str | None = None  # a move's destination, absolute
    target_display: str | None = None
    replaced: str | None = None  # the version of a file `mv --force` replaced at the destination (archived)
    replaced_size: int | None = None
    mark: int = 0  # the largest history row id when it began: later rows of the file were logged meanwhile
    # The file's permission bits, uid and gid (versions.FileMode), and the replaced file's: logged with the
    # move or the removal, what a restore of a removed file gives back (None: a record made before they were kept).
    mode: tuple[int, int, int] | None = None
    replaced_mode: tuple[int, int, int] | None = None
    agent: str = ""
    session: str = ""
    # mv --update-links: the backlinks to rewrite after the move, as links.pending writes them (None: no rewrite).
    links: list | None = None
    # How many of a move's destination folders existed before it (it made the rest): an undone move removes
    # those it made, when empty (None: a record made before this was kept).
    made_from: int | None = None
    force: bool = False  # an import's --force
    # An import's: what each file it writes held when it began, by absolute path (its version; None: no file; "":
    # written since an earlier run it finishes began): the run that finishes it leaves a file holding another
    # (written since) as it is (None: not yet looked).
    seen: dict[str, str | None] | None = None
    pid: int = 0
    started: float = 0.0


def read_intent(data_dir) -> FileOp | None:
    row = Database(data_dir).one("SELECT record FROM file_ops WHERE id = 1")
    if row is None:
        return None
    try:
        data = json.loads(row[0])
        return FileOp(**{k: v for k, v in data.items() if k in FileOp.__dataclass_fields__})
    except (ValueError, TypeError):
        raise UnreadableIntent(f"the record of an interrupted move or removal is not readable: {row[0][:200]!r}") from None


def write_intent(data_dir, op: FileOp) -> FileOp:
    """Record ``op`` durably (its own transaction, or the caller's)."""
    op = replace(op, pid=os.getpid(), started=op.started or time.time())
    with Database(data_dir).transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO file_ops VALUES (1, ?)", (json.dumps(asdict(op), sort_keys=True),))
    return op


def clear_intent(data_dir) -> None:
    with Database(data_dir).transaction() as conn:
        conn.execute("DELETE FROM file_ops WHERE id = 1")


def describe(op: FileOp) -> str:
    """One sentence: what it was doing and how far it got."""
    if op.op == IMPORT_OP:
        return f"import of {op.display}{' --force' if op.force else ''} (pid {op.pid})"
    what = (f"move of {op.display} to {op.target_display}" if op.op == MOVE_OP else f"removal of {op.display}")
    if op.step == LINKS_STEP:
        return (f"{what} (version {op.version[:12]}), moved but interrupted before its links naming {op.display} "
                f"were all rewritten (pid {op.pid})")
    return f"{what} (version {op.version[:12]}), interrupted at step '{op.step}' (pid {op.pid})"
