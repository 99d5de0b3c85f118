"""The per-workspace doctor lock, and a probe that reads it without taking it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..fsutil.lock import FileLock

LOCK_NAME = "doctor.lock"
LOCK_TIMEOUT_S = 5.0


def lock_path(data_dir: Path) -> Path:
    return Path(data_dir) / LOCK_NAME


def doctor_lock(data_dir: Path, workspace: str) -> FileLock:
    return FileLock(str(lock_path(data_dir)), timeout=LOCK_TIMEOUT_S, what=f"workspace {workspace} (doctor --fix)")


def lock_holder(data_dir: Path) -> str | None:
    """The pid of another running ``doctor --fix`` on this workspace, else None; writes nothing."""
    path = lock_path(data_dir)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            return None if holder == str(os.getpid()) else holder  # our own --fix run holds it
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
