"""Finish or roll back a repair that was interrupted (SIGKILL, power loss, disk full).

The journal says what was being done; the files say how far it got. Recovery
trusts the files: the legacy bytes are recognised by their hash, a finished
merge by its marker (which names the archive), so nothing is merged twice.
"""

from __future__ import annotations

import os
import stat

from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT
from ..fsutil.atomic import fsync_dir
from ..fsutil.move import safe_move
from ..settings import Settings
from .aftercare import finalize
from .journal import CorruptJournal, clear_journal, read_journal
from .merge import has_merge_marker
from .model import Finding, Repair, RepairSpec
from .place import hash_or_none, place_no_replace, read_regular, same_file
from .repair_root import MIGRATE_NOTE, merge_changed_paths, merge_detail, merge_note

ID = "interrupted-repair"


def describe_journal(state: dict) -> str:
    """One sentence on what the interrupted repair was doing."""
    what = (
        f"merge of memory.md into MEMORY.md (archive {state.get('archive')})"
        if state["kind"] == "merge"
        else f"rename of memory.md to MEMORY.md (through {state.get('temp')})"
    )
    return f"{what}, interrupted at step '{state.get('step')}' (pid {state.get('pid')})"


def resume(settings: Settings, finding: Finding | None = None) -> Repair:
    """Complete or roll back the journaled repair."""
    data_dir = settings.data_dir
    try:
        state = read_journal(data_dir)
    except CorruptJournal:
        from .repair_state import recover_without_journal

        return recover_without_journal(settings)
    if state is None:
        return Repair(ID, "resume", "completed", "the interrupted repair was already finished by another run", ())
    try:
        if state["kind"] == "merge":
            return _resume_merge(settings, state)
        return _resume_migrate(settings, state)
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        return Repair(ID, "resume", "failed", f"{exc.strerror or exc}{where}; the journal is kept, every byte is still reachable: fix the cause and run `doctor --fix` again", ())


def _entries(ws: str) -> set[str]:
    return set(os.listdir(ws))


def _remove_partial_copies(folder: str) -> None:
    """Drop half-written EXDEV copies (``.memory.md.<hex>.tmp``) in our own archive folder."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(f".{LEGACY_ROOT}.") and name.endswith(".tmp"):
            path = os.path.join(folder, name)
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
    fsync_dir(folder)


def _rmdir_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        return  # not empty (someone put a file there) or already gone: leave it
    fsync_dir(os.path.dirname(folder))


def _resume_merge(settings: Settings, state: dict) -> Repair:
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    rel = state["archive"]
    archive = os.path.join(ws, rel)
    archive_dir = os.path.dirname(archive)
    legacy = os.path.join(ws, LEGACY_ROOT)
    canon = os.path.join(ws, CANONICAL_ROOT)
    paths = (CANONICAL_ROOT, LEGACY_ROOT, rel)
    where = f"resumed the {'merge' if state['mode'] == 'append' else 'archive'} interrupted at step '{state.get('step')}'"

    entries = _entries(ws)
    legacy_here = LEGACY_ROOT in entries and hash_or_none(legacy) == state["legacy_hash"]
    archive_ok = hash_or_none(archive) == state["legacy_hash"]
    merged = state["mode"] != "append"
    if not merged and CANONICAL_ROOT in entries:
        try:
            merged = has_merge_marker(read_regular(canon), rel)
        except OSError:
            merged = False
    if legacy_here or archive_ok:
        _remove_partial_copies(archive_dir)

    how = "rename"
    if archive_ok and legacy_here:
        if merged:
            how = "copy"
            os.unlink(legacy)  # the verified copy is in the archive (cross-device move)
            fsync_dir(ws)
        else:
            os.unlink(archive)
            _rmdir_if_empty(archive_dir)
            clear_journal(data_dir)
            return Repair(ID, "resume", "rolled-back", f"{where}: nothing was merged yet; removed the extra archive copy, memory.md is in place", paths)
    elif legacy_here:
        if not merged:
            _rmdir_if_empty(archive_dir)
            clear_journal(data_dir)
            return Repair(ID, "resume", "rolled-back", f"{where}: nothing was merged or moved yet; MEMORY.md and memory.md are as they were", paths)
        os.makedirs(archive_dir, exist_ok=True)
        how = safe_move(legacy, archive)
        detail = merge_detail(state, how)
        extra = finalize(settings, state, merge_changed_paths(state), merge_note(state))
        again = "MEMORY.md already held the merge, so it was not merged again; " if state["mode"] == "append" else ""
        return Repair(ID, "resume", "completed", f"{where}: {again}{detail}{extra}", paths)
    elif not archive_ok:
        _rmdir_if_empty(archive_dir)
        clear_journal(data_dir)
        if LEGACY_ROOT in entries:
            return Repair(
                ID, "resume", "rolled-back",
                f"{where}: memory.md was changed by someone else since; the interrupted repair was abandoned"
                + (f" (MEMORY.md keeps the earlier text under the marker for {rel})" if merged else "")
                + " and memory.md is left for a fresh repair",
                paths,
            )
        return Repair(
            ID, "resume", "failed",
            f"{where}: memory.md was removed by someone else and the archive does not hold it"
            + (f"; MEMORY.md holds its text under the marker for {rel}" if merged else ""),
            paths,
        )
    detail = merge_detail(state, how)
    extra = finalize(settings, state, merge_changed_paths(state), merge_note(state))
    return Repair(ID, "resume", "completed", f"{where}: {detail}{extra}", paths)


def _resume_migrate(settings: Settings, state: dict) -> Repair:
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    temp_name = state["temp"]
    temp = os.path.join(ws, temp_name)
    canon = os.path.join(ws, CANONICAL_ROOT)
    legacy = os.path.join(ws, LEGACY_ROOT)
    paths = (LEGACY_ROOT, CANONICAL_ROOT, temp_name)
    where = f"resumed the rename interrupted at step '{state.get('step')}'"

    entries = _entries(ws)
    has_temp, has_canon, has_legacy = temp_name in entries, CANONICAL_ROOT in entries, LEGACY_ROOT in entries
    if has_temp and has_canon and not same_file(temp, canon):
        if has_legacy:
            return Repair(ID, "resume", "failed", f"MEMORY.md and memory.md both appeared meanwhile; the renamed file's bytes are at {temp_name} — merge them by hand", paths)
        os.rename(temp, legacy)
        fsync_dir(ws)
        clear_journal(data_dir)
        return Repair(ID, "resume", "rolled-back", f"{where}: MEMORY.md appeared meanwhile, so memory.md was put back (a split root, which doctor --fix merges)", paths)
    if has_temp and has_canon:
        os.unlink(temp)  # both names are the same file: the rename had finished but for this unlink
        fsync_dir(ws)
    elif has_temp:
        place_no_replace(temp, canon, "migrate")
        fsync_dir(ws)
    elif has_legacy:
        clear_journal(data_dir)
        return Repair(ID, "resume", "rolled-back", f"{where}: memory.md had not been moved yet; nothing changed", paths)
    elif not has_canon:
        clear_journal(data_dir)
        return Repair(ID, "resume", "failed", f"{where}: neither memory.md, MEMORY.md nor {temp_name} exists any more (removed by someone else)", paths)
    extra = finalize(settings, state, [LEGACY_ROOT, CANONICAL_ROOT], MIGRATE_NOTE)
    return Repair(ID, "resume", "completed", f"{where}: {MIGRATE_NOTE}{extra}", paths)


REPAIRS = {
    ID: RepairSpec(
        action="resume",
        describe=lambda f: "complete or roll back the interrupted repair",
        apply=resume,
    ),
}
