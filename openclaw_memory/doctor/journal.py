"""The intent journal: what a repair is about to do, on disk before it does it.

One JSON file in the workspace's data dir, replaced atomically and fsynced
before every step, so a doctor killed at any point leaves a record that the next
``doctor --fix`` uses to complete or roll back the interrupted repair.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Literal

from ..fsutil.atomic import atomic_write_bytes, fsync_dir

JOURNAL_NAME = "doctor-journal.json"
VERSION = 1


class CorruptJournal(ValueError):
    """The journal file exists but cannot be read as a journal."""


def journal_path(data_dir: Path) -> Path:
    return Path(data_dir) / JOURNAL_NAME


def journal_pending(data_dir: Path) -> bool:
    """True while a repair record exists, readable or not."""
    return os.path.lexists(journal_path(data_dir))


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
    lossy: bool = False  # the legacy text was not valid UTF-8
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
    path = journal_path(data_dir)
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise CorruptJournal(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        state = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise CorruptJournal(f"{path} is not valid JSON") from None
    if not isinstance(state, dict) or state.get("kind") not in ("merge", "migrate") or not isinstance(state.get("step"), str):
        raise CorruptJournal(f"{path} is not a doctor journal this version understands")
    try:
        return JournalRecord.from_json(state)
    except TypeError:
        raise CorruptJournal(f"{path} is not a doctor journal this version understands") from None


def write_journal(data_dir: Path, record: JournalRecord) -> JournalRecord:
    """Record ``record`` durably (file and folder fsynced) and return it as written."""
    os.makedirs(data_dir, exist_ok=True)
    record = replace(record, pid=os.getpid(), updated=time.time())
    path = journal_path(data_dir)
    try:
        atomic_write_bytes(path, json.dumps(record.to_json(), indent=2, sort_keys=True).encode("utf-8"), 0o600)
    except OSError as exc:
        if exc.filename is None:  # a failed write() names no file: say it was the journal (state dir)
            exc.filename = str(path)
        raise
    return record


def step(data_dir: Path, record: JournalRecord, name: str) -> JournalRecord:
    """Move the journal to step ``name`` before that step starts."""
    return write_journal(data_dir, replace(record, step=name))


def clear_journal(data_dir: Path) -> None:
    """The repair is finished: drop the record, durably."""
    try:
        os.unlink(journal_path(data_dir))
    except FileNotFoundError:
        return
    fsync_dir(data_dir)
