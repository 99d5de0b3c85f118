"""The intent journal: what a repair is about to do, on disk before it does it.

One JSON file in the workspace's data dir, replaced atomically and fsynced
before every step, so a doctor killed at any point leaves a record that the next
``doctor --fix`` uses to complete or roll back the interrupted repair.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

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


def read_journal(data_dir: Path) -> dict | None:
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
    except (UnicodeDecodeError, ValueError):
        raise CorruptJournal(f"{path} is not valid JSON") from None
    if not isinstance(state, dict) or state.get("kind") not in ("merge", "migrate"):
        raise CorruptJournal(f"{path} is not a doctor journal this version understands")
    return state


def write_journal(data_dir: Path, state: dict) -> dict:
    """Record ``state`` durably (file and folder fsynced) and return it."""
    os.makedirs(data_dir, exist_ok=True)
    state = {**state, "version": VERSION, "pid": os.getpid(), "updated": time.time()}
    path = journal_path(data_dir)
    try:
        atomic_write_bytes(path, json.dumps(state, indent=2, sort_keys=True).encode("utf-8"), 0o600)
    except OSError as exc:
        if exc.filename is None:  # a failed write() names no file: say it was the journal (state dir)
            exc.filename = str(path)
        raise
    return state


def step(data_dir: Path, state: dict, name: str) -> dict:
    """Move the journal to step ``name`` before that step starts."""
    return write_journal(data_dir, {**state, "step": name})


def clear_journal(data_dir: Path) -> None:
    """The repair is finished: drop the record, durably."""
    try:
        os.unlink(journal_path(data_dir))
    except FileNotFoundError:
        return
    fsync_dir(data_dir)
