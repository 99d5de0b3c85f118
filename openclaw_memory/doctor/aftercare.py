"""What follows every finished repair: watchdog baseline, checkpoint line, journal cleared.

The baseline is refreshed for exactly the paths the repair changed, so the next
``doctor`` is clean while any other change since the snapshot still shows; the
checkpoint line tells the next agent session what doctor did.
"""

from __future__ import annotations

import datetime as dt

from .. import faults
from ..errors import MemoryToolError
from ..settings import Settings
from .journal import JournalRecord, clear_journal, step

CHECKPOINT_DONE = "checkpoint-written"


def refresh_watchdog(settings: Settings, rel_paths: list[str], started_from: dict[str, str | None]) -> str:
    """Update the watchdog baseline for ``rel_paths`` when one exists; return a note for the report."""
    from ..watchdog.store import has_baseline

    if not has_baseline(settings):
        return ""
    from ..watchdog.snapshot import refresh_baseline
    try:
        moved = refresh_baseline(settings, rel_paths, started_from)
    except (MemoryToolError, OSError) as exc:
        message = exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        return f"; the watchdog baseline could not be updated ({message}): `watchdog verify` will list these paths"
    if moved:
        return (f"; the watchdog baseline was left as it was: {', '.join(moved)} had changed since the snapshot before "
                "the repair, so `watchdog verify` lists that change along with the repair's")
    return "; watchdog baseline updated for " + ", ".join(rel_paths)


def _started_from(state: JournalRecord) -> dict[str, str | None]:
    """What the root files held when the repair began, as far as the journal knows."""
    from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT

    start: dict[str, str | None] = {}
    if state.legacy_hash is not None:
        start[LEGACY_ROOT] = state.legacy_hash
    if state.kind == "migrate":
        start[CANONICAL_ROOT] = None
    elif state.canonical_hash is not None:
        start[CANONICAL_ROOT] = state.canonical_hash
    return start


def record_in_history(settings: Settings, rel_paths: list[str], origin: str) -> None:
    """Log what the memory files among ``rel_paths`` hold now, as ``origin``, in the version history
    (before a repair: the version it replaces; after: the repair's own, not an outside edit)."""
    import os

    from ..files.paths import is_memory_path
    from ..history.store import HistoryStore

    store = HistoryStore.for_settings(settings)
    try:
        with store.lock():
            for rel in rel_paths:
                if is_memory_path(rel):
                    store.observe_file(os.path.join(str(settings.workspace), rel), rel, origin)
    except (MemoryToolError, OSError):
        pass  # the history is a record, not the repair: the next sighting logs the file


def finalize(settings: Settings, state: JournalRecord, rel_paths: list[str], note: str) -> str:
    """Run the after-repair steps recorded in ``state`` that have not run yet; clear the journal."""
    from ..watchdog.checkpoint import append_checkpoint

    data_dir = settings.data_dir
    extra = ""
    try:
        if state.step != CHECKPOINT_DONE:
            from ..history.versions import DOCTOR_FIX

            record_in_history(settings, rel_paths, DOCTOR_FIX)
            faults.reach("finalize:baseline")
            extra = refresh_watchdog(settings, rel_paths, _started_from(state))
            faults.reach("finalize:checkpoint")
            when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            append_checkpoint(data_dir, f"- {when} doctor --fix: {note}")
            step(data_dir, state, CHECKPOINT_DONE)
        faults.reach("finalize:clear")
        clear_journal(data_dir)
    except (MemoryToolError, OSError) as exc:
        reason = exc.message if isinstance(exc, MemoryToolError) else exc.strerror or str(exc)
        return f"{extra}; recording the repair failed ({reason}): the next `doctor --fix` finishes that"
    return extra
