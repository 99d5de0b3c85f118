"""The per-workspace doctor lock, and a probe that reads it without taking it."""

from __future__ import annotations

import os
from pathlib import Path

from ..fsutil.lock import FileLock
from ..fsutil.lock import lock_holder as probe_holder

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
