"""What follows every finished repair: watchdog baseline, checkpoint line, journal cleared.

The baseline is refreshed for exactly the paths the repair changed, so the next
``doctor`` is clean while any other change since the snapshot still shows; the
checkpoint line tells the next agent session what doctor did.

Only what the repair itself left at each path (:class:`Left`) is the repair's: a save someone made
since (an editor's, while doctor was paused or before an interrupted repair was resumed) is logged
in the history as an outside edit, after the repair's own version, and the baseline keeps the
repair's version, so `watchdog verify` and doctor go on reporting that save.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from .. import faults
from ..errors import MemoryToolError
from ..settings import Settings
from .journal import JournalRecord, clear_journal, step

if TYPE_CHECKING:
    from ..watchdog.snapshot import Left

CHECKPOINT_DONE = "checkpoint-written"


def refresh_watchdog(settings: Settings, rel_paths: list[str], started_from: dict[str, str | None],
                     left: Mapping[str, Left | None] | None = None) -> str:
    """Update the watchdog baseline for ``rel_paths`` when one exists; return a note for the report.
    ``left``: what the repair left at some of them (:func:`~..watchdog.snapshot.refresh_baseline`)."""
    from ..watchdog.store import has_baseline

    if not has_baseline(settings):
        return ""
    from ..watchdog.snapshot import refresh_baseline
    since: list[str] = []
    try:
        moved = refresh_baseline(settings, rel_paths, started_from, left, since)
    except (MemoryToolError, OSError) as exc:
        message = exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        return f"; the watchdog baseline could not be updated ({message}): `watchdog verify` will list these paths"
    if moved:
        return (f"; the watchdog baseline was left as it was: {', '.join(moved)} had changed since the snapshot before "
                "the repair, so `watchdog verify` lists that change along with the repair's")
    note = "; watchdog baseline updated for " + ", ".join(rel_paths)
    if since:
        note += (f" ({', '.join(since)} as the repair left {'it' if len(since) == 1 else 'them'}: changed since by "
                 "someone else, which `watchdog verify` lists and the history logs as an outside edit)")
    return note


def inside_workspace(workspace: str, paths: Iterable[str]) -> list[str]:
    """The workspace-relative form of each of ``paths`` (absolute) inside the workspace, sorted, once
    each: a repair's paths for :func:`held_now` and :func:`refresh_watchdog` (an extra path's are
    outside the watchdog's baseline; a name like ``..x`` is inside)."""
    rels = (os.path.relpath(p, workspace) for p in paths)
    return sorted({r for r in rels if r != os.curdir and r != os.pardir and not r.startswith(os.pardir + os.sep)})


def held_now(settings: Settings, rel_paths: list[str]) -> dict[str, str | None]:
    """What each workspace-relative path holds, as the watchdog hashes it (None: no regular file there):
    a repair's ``started_from`` (:func:`refresh_watchdog`), taken before it runs. Empty without a baseline."""
    from ..watchdog.content import observe_entry
    from ..watchdog.observe import KIND_FILE
    from ..watchdog.store import has_baseline

    if not has_baseline(settings):
        return {}
    held: dict[str, str | None] = {}
    for rel in rel_paths:
        obs = observe_entry(settings.workspace, rel)
        there = obs is not None and not obs.gone and obs.kind == KIND_FILE
        held[rel] = obs.digest.hex() if there and obs is not None and obs.digest is not None else None
    return held


def left_by(settings: Settings, state: JournalRecord, merged: bytes | None = None) -> dict[str, Left | None]:
    """What the journaled repair ``state`` left at each path it changed (None: it removed the path),
    as far as it is known: ``merged``, the merge's text where the caller still holds it, or the
    text made again from what the merge read (MEMORY.md's earlier version in the history, memory.md
    in the archive), checked against the journal's hash of it."""
    from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT
    from ..watchdog.snapshot import Left

    left: dict[str, Left | None] = {LEGACY_ROOT: None}
    legacy = state.legacy_hash
    if state.kind == "migrate":
        if legacy is not None:
            left[CANONICAL_ROOT] = Left(legacy, _stored(settings, legacy))
        return left
    if legacy is not None and isinstance(state.archive, str):
        left[state.archive] = Left(legacy, None)
    if state.mode == "append":
        if merged is None:
            merged = _merged_again(settings, state)
        from ..fsutil.hashing import hash_bytes

        version = state.merged_hash or (hash_bytes(merged) if merged is not None else None)
        if version is not None:
            left[CANONICAL_ROOT] = Left(version, merged if merged is not None and hash_bytes(merged) == version else None)
    return left


def _stored(settings: Settings, version: str) -> bytes | None:
    """The bytes of ``version`` where the history's store (or a snapshot's) keeps them."""
    from ..history.store import HistoryStore

    try:
        return HistoryStore.for_settings(settings).objects.read_bytes(version, use=False)
    except (MemoryToolError, OSError):
        return None


def _merged_again(settings: Settings, state: JournalRecord) -> bytes | None:
    """The merge's text as it wrote it, made again from its inputs, each checked by its hash."""
    from ..files.paths import LEGACY_ROOT
    from ..fsutil.hashing import hash_bytes
    from ..fsutil.safeopen import Folder
    from .merge import MAX_ROOT_BYTES, archive_shown, legacy_block, merged_bytes
    from .place import read_within

    if state.canonical_hash is None or state.legacy_hash is None or not isinstance(state.archive, str):
        return None
    canonical = _stored(settings, state.canonical_hash)
    legacy = _stored(settings, state.legacy_hash)
    if legacy is None:
        try:
            with Folder.under(str(settings.workspace), state.archive.split("/")[:-1]) as folder:
                legacy = read_within(folder, LEGACY_ROOT, MAX_ROOT_BYTES)[0]
        except OSError:
            legacy = None
    if canonical is None or legacy is None or hash_bytes(legacy) != state.legacy_hash:
        return None
    return merged_bytes(canonical, legacy_block(legacy)[0], archive_shown(str(settings.workspace), state.archive))


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


def record_in_history(settings: Settings, rel_paths: list[str], origin: str,
                      left: Mapping[str, Left | None] | None = None) -> None:
    """Log what the memory files among ``rel_paths`` hold now, as ``origin``, in the version history
    (before a repair: the version it replaces; after: the repair's own, not an outside edit).

    ``left``: what the repair left at some of those paths (None: it removed the file). A file that
    holds something else now was saved by someone else since: the repair's version is logged first
    as ``origin`` (where its bytes are known), then what the file holds, as an outside edit."""
    from ..files.paths import is_memory_path
    from ..history.store import FileVersion, HistoryStore, snapshot_fd
    from ..history.versions import EXTERNAL_EDIT

    store = HistoryStore.for_settings(settings)
    try:
        with store.lock():
            for rel in rel_paths:
                if not is_memory_path(rel):
                    continue
                abs_path = os.path.join(str(settings.workspace), rel)
                if left is None or rel not in left:
                    store.observe_file(abs_path, rel, origin)
                    continue
                mine = left[rel]
                try:
                    fd: int | None = store.open_file(abs_path)[0]
                except (FileNotFoundError, NotADirectoryError):
                    fd = None
                try:
                    now = snapshot_fd(fd) if fd is not None else None
                    if mine is not None and mine.data is not None and (now is None or now.version != mine.version):
                        store.observe(abs_path, rel, FileVersion(mine.version, len(mine.data)), data=mine.data, origin=origin)
                    if now is not None and fd is not None:
                        ours = mine is not None and now.version == mine.version
                        store.observe(abs_path, rel, now, fd=fd, origin=origin if ours else EXTERNAL_EDIT)
                finally:
                    if fd is not None:
                        os.close(fd)
    except (MemoryToolError, OSError):
        pass  # the history is a record, not the repair: the next sighting logs the file


def finalize(settings: Settings, state: JournalRecord, rel_paths: list[str], note: str, merged: bytes | None = None) -> str:
    """Run the after-repair steps recorded in ``state`` that have not run yet; clear the journal.
    ``merged``: the text a merge wrote to MEMORY.md, where the caller holds it (:func:`left_by`)."""
    from ..watchdog.checkpoint import append_checkpoint

    data_dir = settings.data_dir
    extra = ""
    try:
        if state.step != CHECKPOINT_DONE:
            from ..history.versions import DOCTOR_FIX

            left = left_by(settings, state, merged)
            record_in_history(settings, rel_paths, DOCTOR_FIX, left)
            faults.reach("finalize:baseline")
            extra = refresh_watchdog(settings, rel_paths, _started_from(state), left)
            faults.reach("finalize:checkpoint")
            when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
            append_checkpoint(data_dir, f"- {when} doctor --fix: {note}", settings.agent)
            step(data_dir, state, CHECKPOINT_DONE)
        faults.reach("finalize:clear")
        clear_journal(data_dir)
    except (MemoryToolError, OSError) as exc:
        reason = exc.message if isinstance(exc, MemoryToolError) else exc.strerror or str(exc)
        return f"{extra}; recording the repair failed ({reason}): the next `doctor --fix` finishes that"
    return extra
