"""The intent of a rollback: every step named, on disk before the first file changes.

One row of the state database's ``rollback_ops`` table, committed (synced) before the first step
and dropped once every step is done. Each step names a file, the version it held when the
rollback began (``before``, in the history already; None: absent) and the one it is to hold
(``after``, an object of the store; None: archived as ``rm`` archives). The versions the steps
name are pinned while the row exists (``history.objects``, ``watchdog.store``): no eviction or
snapshot pruning takes the bytes a step needs. The rollback holds the workspace's write lock, so
a row found while nobody holds it is a rollback that was killed, which :func:`~.apply.recover_pending`
(``doctor --fix``, or the next ``rollback``) finishes: a step's outcome is read off the file itself.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, replace

from ..database import Database


class UnreadableRollback(ValueError):
    """The row exists but is not an intent this version understands."""


@dataclass(frozen=True)
class Step:
    """One file's part of the rollback."""

    path: str  # absolute
    display: str
    before: str | None  # what it held when the rollback began (None: absent)
    after: str | None  # what it is to hold (None: archived)
    size: int = 0  # the size of ``after``
    mode: int | None = None  # the st_mode a watchdog snapshot saw ``after`` with: what a bring-back gives no more than


@dataclass(frozen=True)
class Intent:
    """What a rollback set out to do."""

    to: str  # as given: a snapshot's label or a time
    moment: str  # the snapshot's label, or the time in ISO form
    undo: str  # the moment just before it began: `rollback --to UNDO` undoes it
    steps: tuple[Step, ...] = ()
    pins: tuple[str, ...] = ()  # every version the steps name (the SQL pins read this key)
    agent: str = ""
    session: str = ""
    pid: int = 0
    started: float = 0.0


def read_intent(data_dir) -> Intent | None:
    row = Database(data_dir).one("SELECT record FROM rollback_ops WHERE id = 1")
    if row is None:
        return None
    try:
        data = json.loads(row[0])
        steps = tuple(Step(**s) for s in data.pop("steps"))
        data = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in Intent.__dataclass_fields__}
        intent = Intent(**{**data, "steps": steps})
        if not _well_typed(intent):  # (a number for a path was a traceback in the step that read it)
            raise TypeError(intent)
        return intent
    except (ValueError, TypeError, KeyError, AttributeError):
        raise UnreadableRollback(f"the record of an interrupted rollback is not readable: {row[0][:200]!r}") from None


def _well_typed(intent: Intent) -> bool:
    """Whether every field holds what this version writes there (a record damaged, or written by
    hand, may hold anything JSON does)."""
    def text(*values) -> bool:
        return all(isinstance(v, str) for v in values)

    def number(value, kinds: tuple[type, ...] = (int,)) -> bool:
        return isinstance(value, kinds) and not isinstance(value, bool)

    return (text(intent.to, intent.moment, intent.undo, intent.agent, intent.session, *intent.pins)
            and isinstance(intent.pins, tuple) and number(intent.pid) and number(intent.started, (int, float))
            and all(text(s.path, s.display) and all(v is None or text(v) for v in (s.before, s.after)) and number(s.size)
                    and (s.mode is None or number(s.mode)) for s in intent.steps))


def write_intent(data_dir, intent: Intent) -> Intent:
    """Record ``intent`` durably (its own transaction), pinning every version its steps name."""
    pins = sorted({v for s in intent.steps for v in (s.before, s.after) if v is not None})
    intent = replace(intent, pins=tuple(pins), pid=os.getpid(), started=intent.started or time.time())
    with Database(data_dir).transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO rollback_ops VALUES (1, ?)", (json.dumps(asdict(intent), sort_keys=True),))
    return intent


def clear_intent(data_dir) -> None:
    with Database(data_dir).transaction() as conn:
        conn.execute("DELETE FROM rollback_ops WHERE id = 1")


def describe(intent: Intent) -> str:
    return (f"rollback to {intent.moment} ({len(intent.steps)} file{'s' if len(intent.steps) != 1 else ''} to change; "
            f"pid {intent.pid})")
