"""The durable record of a rebuild of the state database by ``doctor --fix`` (:func:`.repair.rebuild`).

``state.db.rebuild`` in the data dir, written (fsynced) before the rebuild makes anything and
removed last, says where the rebuild works (its scratch folder) and, once the new database is
complete, where the damaged files go. While it is there no command opens the state database
(:meth:`.connection.Database.unusable`): one that did would read or write the damaged file about
to be replaced, or a half-made one. Plain ``doctor`` names it, as a rebuild in progress (its
process holds the write lock) or one that was interrupted, and ``doctor --fix`` finishes it.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass

MARKER = "state.db.rebuild"
SCRATCH_PREFIX = ".rebuild-"  # the scratch folder of a rebuild, in the data dir


@dataclass(frozen=True)
class Rebuilding:
    pid: int | None
    scratch: str | None  # the scratch folder's name in the data dir
    aside: str | None  # where the damaged files go, relative to the data dir: set once the new one is complete
    counts: dict[str, int]
    lost: dict[str, str]


def marker_path(data_dir: str | os.PathLike[str]) -> str:
    return os.path.join(os.fspath(data_dir), MARKER)


def read_marker(data_dir: str | os.PathLike[str]) -> Rebuilding | None:
    """The record of a rebuild, or None when there is none. A record that does not read (cut
    short, garbled) is a rebuild that was interrupted before its new database was complete."""
    path = marker_path(data_dir)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):  # (a FIFO would block the read for ever)
            return Rebuilding(None, None, None, {}, {})
        with open(path, "rb") as fh:
            raw = fh.read(1 << 20)
    except FileNotFoundError:
        return None
    except OSError:  # (a data dir closed to this user: no record it can see; the state database's own check says why)
        return Rebuilding(None, None, None, {}, {}) if os.path.lexists(path) else None
    try:
        found = json.loads(raw)
        scratch, aside = found.get("scratch"), found.get("aside")
        fine = (isinstance(scratch, str) and scratch.startswith(SCRATCH_PREFIX) and "/" not in scratch
                and (aside is None or (isinstance(aside, str) and not os.path.isabs(aside) and ".." not in aside.split("/"))))
        if not fine:
            raise ValueError(scratch)
        pid = found.get("pid") if isinstance(found.get("pid"), int) else None
        counts = {str(k): int(v) for k, v in (found.get("counts") or {}).items()}
        lost = {str(k): str(v) for k, v in (found.get("lost") or {}).items()}
    except (ValueError, TypeError, AttributeError):
        return Rebuilding(None, None, None, {}, {})
    return Rebuilding(pid, scratch, aside, counts, lost)


def write_marker(data_dir: str | os.PathLike[str], record: Rebuilding) -> None:
    """Write the record in one step (a crash leaves the old one or the new one), fsynced."""
    from ..fsutil.atomic import atomic_write_bytes

    data = {"pid": record.pid, "scratch": record.scratch, "aside": record.aside, "counts": record.counts,
            "lost": record.lost}
    atomic_write_bytes(marker_path(data_dir), json.dumps(data, sort_keys=True).encode(), 0o600)


def rebuilding_words(data_dir: str | os.PathLike[str]) -> str | None:
    """What a rebuild's record says, for a command or doctor: one in progress (the process named
    in it holds the data dir's write lock) or one that was interrupted; None when there is none."""
    record = read_marker(data_dir)
    if record is None:
        return None
    from ..fsutil.lock import lock_holder

    path = marker_path(data_dir)
    holder = lock_holder(os.path.join(os.fspath(data_dir), "write.lock"))
    if record.pid is not None and holder == str(record.pid):
        return f"doctor --fix (pid {record.pid}) is rebuilding the state database right now ({path} records it)"
    stage = ("its new database was complete and was being put in place" if record.aside
             else "its new database was not complete yet; the damaged one is still in place")
    return f"a rebuild of the state database by doctor --fix was interrupted ({path} records it: {stage})"
