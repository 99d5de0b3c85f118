"""Damaged state files are set aside, never deleted: ``<data dir>/damaged/<stamp>/<same path>``.

What openclaw-memory keeps in the state dir (history logs, read records, snapshots,
the collection registry, the checkpoint) may be the only trace of something; a
repair that cannot read such a file moves it out of the way under ``damaged/``,
keeping its path relative to the data dir, so a person can still look at it.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

DAMAGED_DIR = "damaged"


def damaged_dir(data_dir: Path) -> Path:
    return Path(data_dir) / DAMAGED_DIR


def set_aside(data_dir: Path, path: str | os.PathLike[str]) -> Path | None:
    """Move ``path`` (inside ``data_dir``) under ``damaged/<stamp>/``; None when it was already gone."""
    data_dir = Path(data_dir)
    rel = os.path.relpath(os.fspath(path), data_dir)
    if rel.startswith(".."):
        raise ValueError(f"{path} is not inside {data_dir}")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H-%M-%S.%fZ")
    target = damaged_dir(data_dir) / stamp / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.rename(path, target)
    except FileNotFoundError:
        return None
    return target
