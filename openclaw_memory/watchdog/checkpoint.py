"""The pending checkpoint: what changed while the agent was away.

Breaks found by ``watchdog heartbeat`` and repairs made by ``doctor --fix`` append
sections under one heading; ``prompt`` shows the file once, then moves it to
``consumed/`` so the next session does not see the same news twice.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..fsutil.atomic import atomic_write_bytes

HEADING = "# ⚠️ Workspace Changes Detected"


def checkpoint_path(data_dir: Path) -> Path:
    return data_dir / "checkpoint.md"


def append_checkpoint(data_dir: Path, section: str) -> Path:
    """Add ``section`` to the pending checkpoint (creating it under the heading); nothing is overwritten."""
    path = checkpoint_path(data_dir)
    os.makedirs(data_dir, exist_ok=True)
    try:
        current = path.read_bytes()  # kept byte for byte, even damaged (doctor reports that)
    except FileNotFoundError:
        current = (HEADING + "\n").encode("utf-8")
    if not current.endswith(b"\n"):
        current += b"\n"
    atomic_write_bytes(path, current + b"\n" + section.rstrip("\n").encode("utf-8") + b"\n")
    return path


def pending_checkpoint(data_dir: Path) -> str | None:
    try:
        return checkpoint_path(data_dir).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None


def consume_checkpoint(data_dir: Path) -> Path | None:
    """Move the pending checkpoint to ``consumed/`` (kept, never deleted)."""
    path = checkpoint_path(data_dir)
    if not path.exists():
        return None
    consumed = data_dir / "consumed"
    consumed.mkdir(parents=True, exist_ok=True)
    target = consumed / f"checkpoint-{time.strftime('%Y%m%dT%H%M%S')}-{time.time_ns() % 1_000_000_000:09d}.md"
    os.replace(path, target)
    return target
