"""The intent journal: what a repair is about to do, on disk before it does it.

One row of the state database (``journal``), written in its own transaction (synced to disk
before it returns) before every step, so a doctor killed at any point leaves a record that the
next ``doctor --fix`` uses to complete or roll back the interrupted repair.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Literal

from ..database import Database, database_path
from ..fsutil.lock import FileLock
from ..fsutil.lock import lock_holder as probe_holder

VERSION = 1
# The name a journal that cannot be read is set aside under (in the data dir's damaged/).
FILE_NAME = "doctor-journal.json"


class CorruptJournal(ValueError):
    """The journal exists but cannot be read as a journal."""


def journal_place(data_dir: Path) -> str:
    """Where the journal lives, as findings name it."""
    return f"{database_path(data_dir)} (table journal)"


def journal_pending(data_dir: Path) -> bool:
    """True while a repair record exists, readable or not."""
    return Database(data_dir).one("SELECT 1 FROM journal WHERE id = 1") is not None


def raw_journal(data_dir: Path) -> bytes | None:
    """The record's bytes as stored (what a damaged journal's set-aside file keeps)."""
    row = Database(data_dir).one("SELECT record FROM journal WHERE id = 1")
    if row is None:
        return None
    return row[0] if isinstance(row[0], bytes) else str(row[0]).encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class JournalRecord:
    """What an interrupted repair was doing: shared by the repair that writes it and the
    recovery that completes or rolls it back."""

    kind: Literal["merge", "migrate"]
    step: str
    started: float = 0.0
    legacy_hash: str | None = None  # the legacy file's bytes, to recognise them wherever they are now
    # merge
    mode: str | None = None  # "append" | "identical" | "empty" | "already-merged"
    archive: str | None = None  # workspace-relative archive path
    earlier: str | None = None  # the archive of an earlier merge that already holds the text
    legacy_size: int | None = None
    canonical_hash: str | None = None
    merged_hash: str | None = None  # the hash of the merged text, what MEMORY.md holds once the merge wrote it
    lossy: bool = False  # the legacy text was not valid UTF-8
    # MEMORY.md's permission bits before and after the merge, when the merge narrowed them (merge.merged_mode)
    canonical_mode: int | None = None
    merged_mode: int | None = None
    # migrate (a two-step rename)
    temp: str | None = None  # the temporary name the bytes sit at between the steps
    # written with every step
    pid: int | None = None
    updated: float | None = None

    def to_json(self) -> dict:
        return {**{f.name: getattr(self, f.name) for f in fields(self)}, "version": VERSION}

    @classmethod
    def from_json(cls, data: dict) -> JournalRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


def read_journal(data_dir: Path) -> JournalRecord | None:
    """The pending repair record, or None. Reads only: plain ``doctor`` calls this."""
    raw = raw_journal(data_dir)
    if raw is None:
        return None
    where = journal_place(data_dir)
    try:
        state = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CorruptJournal(f"the journal in {where} is not valid JSON") from None
    if not isinstance(state, dict) or state.get("kind") not in ("merge", "migrate") or not isinstance(state.get("step"), str):
        raise CorruptJournal(f"the journal in {where} is not one this version understands")
    try:
        return JournalRecord.from_json(state)
    except TypeError:
        raise CorruptJournal(f"the journal in {where} is not one this version understands") from None


def write_journal(data_dir: Path, record: JournalRecord) -> JournalRecord:
    """Record ``record`` durably (committed) and return it as written."""
    record = replace(record, pid=os.getpid(), updated=time.time())
    text = json.dumps(record.to_json(), indent=2, sort_keys=True)
    with Database(data_dir).transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO journal VALUES (1, ?)", (text,))
    return record


def step(data_dir: Path, record: JournalRecord, name: str) -> JournalRecord:
    """Move the journal to step ``name`` before that step starts."""
    return write_journal(data_dir, replace(record, step=name))


def clear_journal(data_dir: Path) -> None:
    """The repair is finished: drop the record, durably."""
    with Database(data_dir).transaction() as conn:
        conn.execute("DELETE FROM journal WHERE id = 1")


LOCK_NAME = "doctor.lock"
LOCK_TIMEOUT_S = 5.0


def lock_path(data_dir: Path) -> Path:
    return Path(data_dir) / LOCK_NAME


def doctor_lock(data_dir: Path, workspace: str) -> FileLock:
    return FileLock(str(lock_path(data_dir)), timeout=LOCK_TIMEOUT_S, what=f"workspace {workspace} (doctor --fix)")


def lock_holder(data_dir: Path) -> str | None:
    """The pid of another running ``doctor --fix`` on this workspace, else None; writes nothing."""
    holder = probe_holder(str(lock_path(data_dir)))
    return None if holder == str(os.getpid()) else holder  # our own --fix run holds it
