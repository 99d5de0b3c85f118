"""The pending checkpoint: what changed while the agent was away.

Breaks found by ``watchdog heartbeat`` and repairs made by ``doctor --fix`` each add a section,
a row of the state database's ``checkpoint`` table; ``prompt`` shows the unconsumed ones once,
under one heading, then marks them consumed (kept, never deleted) so the next session does not
see the same news twice. The state database is the workspace's, which agents may share: a section
names the agent whose command wrote it, and only that agent's prompt shows and consumes it (the
heartbeat promises it to ``--agent X prompt``). A section with no agent (written before schema 16)
goes to the next prompt of any agent.
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


def append_checkpoint(data_dir: Path, section: str, agent: str | None = None) -> Path:
    """Add ``section`` to the pending checkpoint of ``agent`` (None: of whichever agent's prompt comes
    first); returns where it is kept (the state database)."""
    db = Database(data_dir)
    with db.transaction() as conn:
        conn.execute("INSERT INTO checkpoint (time, section, agent) VALUES (?, ?, ?)",
                     (time.time(), section.rstrip("\n"), agent))
    return Path(db.path)


# The sections one agent is owed: its own and those no agent was named for. None: every section.
_FOR_AGENT = " AND (agent IS NULL OR agent = ?)"


def read_checkpoint(data_dir: Path, agent: str | None = None) -> Pending | None:
    """The unconsumed sections ``agent`` is owed (None: every agent's), or None when there are none."""
    # Read as bytes: a section that is not UTF-8 still shows, its bad bytes replaced.
    sql = "SELECT id, CAST(section AS BLOB) FROM checkpoint WHERE consumed IS NULL"
    rows = Database(data_dir).rows(sql + (_FOR_AGENT if agent is not None else "") + " ORDER BY id",
                                   (agent,) if agent is not None else ())
    if not rows:
        return None
    return Pending(render([bytes(r[1]).decode("utf-8", "replace") for r in rows]), rows[-1][0])


def pending_checkpoint(data_dir: Path, agent: str | None = None) -> str | None:
    pending = read_checkpoint(data_dir, agent)
    return pending.text if pending is not None else None


def consume_checkpoint(data_dir: Path, upto: int | None = None, agent: str | None = None) -> int:
    """Mark the unconsumed sections ``agent`` is owed (None: every agent's) consumed, up to id ``upto``
    (those shown); returns how many."""
    sql = "UPDATE checkpoint SET consumed = ? WHERE consumed IS NULL AND id <= ?"
    args: tuple = (time.time(), upto if upto is not None else 2**63 - 1)
    if agent is not None:
        sql, args = sql + _FOR_AGENT, (*args, agent)
    with Database(data_dir).transaction() as conn:
        return conn.execute(sql, args).rowcount
