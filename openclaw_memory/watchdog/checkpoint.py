"""The pending checkpoint: what changed while the agent was away.

Breaks found by ``watchdog heartbeat`` and repairs made by ``doctor --fix`` each add a section,
a row of the state database's ``checkpoint`` table; ``prompt`` shows the unconsumed ones once,
under one heading, then marks them consumed (kept, never deleted) so the next session does not
see the same news twice.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import NamedTuple

from ..database import Database

HEADING = "# ⚠️ Workspace Changes Detected"


class Pending(NamedTuple):
    text: str  # the heading and every unconsumed section, as ``prompt`` shows them
    last: int  # the newest section's id: what ``consume_checkpoint`` marks up to


def render(sections: list[str]) -> str:
    """The checkpoint as the agent reads it: the heading, then each section between blank lines."""
    return HEADING + "\n" + "".join(f"\n{s}\n" for s in sections)


def append_checkpoint(data_dir: Path, section: str) -> Path:
    """Add ``section`` to the pending checkpoint; returns where it is kept (the state database)."""
    db = Database(data_dir)
    with db.transaction() as conn:
        conn.execute("INSERT INTO checkpoint (time, section) VALUES (?, ?)", (time.time(), section.rstrip("\n")))
    return Path(db.path)


def read_checkpoint(data_dir: Path) -> Pending | None:
    """The unconsumed sections, or None when there are none."""
    # Read as bytes: a section that is not UTF-8 still shows, its bad bytes replaced.
    rows = Database(data_dir).rows("SELECT id, CAST(section AS BLOB) FROM checkpoint WHERE consumed IS NULL ORDER BY id")
    if not rows:
        return None
    return Pending(render([bytes(r[1]).decode("utf-8", "replace") for r in rows]), rows[-1][0])


def pending_checkpoint(data_dir: Path) -> str | None:
    pending = read_checkpoint(data_dir)
    return pending.text if pending is not None else None


def consume_checkpoint(data_dir: Path, upto: int | None = None) -> int:
    """Mark the unconsumed sections (up to id ``upto``: those shown) consumed; returns how many."""
    with Database(data_dir).transaction() as conn:
        return conn.execute("UPDATE checkpoint SET consumed = ? WHERE consumed IS NULL AND id <= ?",
                            (time.time(), upto if upto is not None else 2**63 - 1)).rowcount
