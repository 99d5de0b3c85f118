"""Finish or roll back a repair that was interrupted (SIGKILL, power loss, disk full).

The journal says what was being done; the files say how far it got. Recovery
trusts the files: the legacy bytes are recognised by their hash, a finished
merge by its marker (which names the archive), so nothing is merged twice.
"""

from __future__ import annotations

import os
import stat

from ..errors import MemoryToolError
from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT, REPAIR_ROOT_MEMORY
from ..fsutil.move import SourceKept, give_back, remove_if_holds, safe_move, unlink_other_name
from ..fsutil.safeopen import Folder
from ..settings import Settings
from .aftercare import finalize
from .archive import ARCHIVE_PARTS, ArchiveRefused
from .journal import CorruptJournal, JournalRecord, clear_journal, read_journal
from .merge import MIGRATE_NOTE, archive_shown, marker, merge_changed_paths, merge_detail, merge_note
from .model import Finding, Repair, RepairSpec
from .place import folder_or_none, hash_or_none, holds_bytes, place_no_replace, same_file

ID = "interrupted-repair"


def describe_journal(state: JournalRecord) -> str:
    """One sentence on what the interrupted repair was doing."""
    what = (
        f"merge of memory.md into MEMORY.md (archive {state.archive})"
        if state.kind == "merge"
        else f"rename of memory.md to MEMORY.md (through {state.temp})"
    )
    return f"{what}, interrupted at step '{state.step}' (pid {state.pid})"


def resume(settings: Settings, finding: Finding | None = None) -> Repair:
    """Complete or roll back the journaled repair."""
    data_dir = settings.data_dir
    try:
        state = read_journal(data_dir)
    except CorruptJournal:
        from .repair_state import recover_without_journal

        return recover_without_journal(settings)
    if state is None:
        from .repair_state import recover_without_journal, stranded_temps

        if stranded_temps(str(settings.workspace)):  # its journal is gone: the files say what to do
            return recover_without_journal(settings)
        return Repair(ID, "resume", "completed", "the interrupted repair was already finished by another run", ())
    try:
        with Folder.under(str(settings.workspace)) as root:
            if state.kind == "merge":
                return _resume_merge(settings, state, root)
            return _resume_migrate(settings, state, root)
    except MemoryToolError as exc:  # the state database (its journal): worded already
        return Repair(ID, "resume", "failed", f"{exc.message}; the journal is kept, every byte is still reachable: fix the cause "
                      "and run `doctor --fix` again", ())
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        return Repair(ID, "resume", "failed", f"{exc.strerror or exc}{where}; the journal is kept, every byte is still reachable: fix the cause and run `doctor --fix` again", ())


def _entries(root: Folder) -> set[str]:
    return set(os.listdir(root.fd))


def _remove_unplaced_merge(root: Folder, marker_bytes: bytes) -> None:
    """Drop the merged text of a merge killed before it took MEMORY.md's name (``.MEMORY.md.<hex>.swp``
    beside it, holding this merge's marker, while MEMORY.md does not): every byte of it is in
    MEMORY.md and memory.md (or the archive) still."""
    for name in os.listdir(root.fd):
        if name.startswith(f".{CANONICAL_ROOT}.") and name.endswith((".swp", ".tmp")):
            try:
                if holds_bytes(root, name, marker_bytes):
                    root.unlink(name, missing_ok=True)
            except OSError:
                pass  # (not a regular file, gone meanwhile: doctor's leftovers check names what stays)


def _remove_partial_copies(folder: Folder | None) -> None:
    """Drop half-written EXDEV copies (``.memory.md.<hex>.tmp``) in our own archive folder."""
    if folder is None:
        return
    for name in os.listdir(folder.fd):
        if name.startswith(f".{LEGACY_ROOT}.") and name.endswith(".tmp"):
            if stat.S_ISREG(folder.lstat(name).st_mode):
                folder.unlink(name, missing_ok=True)
    folder.fsync()


def _rmdir_if_empty(ws: str, archive_parts: tuple[str, ...]) -> None:
    parent = folder_or_none(ws, archive_parts[:-1])
    if parent is None:
        return
    with parent:
        try:
            os.rmdir(archive_parts[-1], dir_fd=parent.fd)
        except OSError:
            return  # not empty (someone put a file there) or already gone: leave it
        parent.fsync()


def _archive_parts(rel: object) -> tuple[str, tuple[str, ...]]:
    """The journal's archive path and its stamp folder's components; only ever a folder of our archive.

    ``rel`` is typed ``object``: the journal is read from disk, so it may hold anything.
    """
    parts = tuple(rel.split("/")) if isinstance(rel, str) else ()
    if not isinstance(rel, str) or len(parts) != 4 or parts[:2] != ARCHIVE_PARTS or parts[3] != LEGACY_ROOT or parts[2] in ("", ".", ".."):
        raise ArchiveRefused(0, f"the journal names an archive outside {REPAIR_ROOT_MEMORY}/: {rel!r}", str(rel))
    return rel, parts[:3]


def _resume_merge(settings: Settings, state: JournalRecord, root: Folder) -> Repair:
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    rel, parts = _archive_parts(state.archive)
    paths = (CANONICAL_ROOT, LEGACY_ROOT, rel)
    where = f"resumed the {'merge' if state.mode == 'append' else 'archive'} interrupted at step '{state.step}'"

    archive_dir = folder_or_none(ws, parts)
    # A journal without the legacy hash recognises no file: hash_or_none's None (missing,
    # not a regular file) must not count as a match.
    known = state.legacy_hash
    kept = ""
    try:
        give_back(root.fd, LEGACY_ROOT)  # a move's source left at .memory.md.aside-<hex>
        if archive_dir is not None:
            give_back(archive_dir.fd, LEGACY_ROOT)  # the source of a move back (an undone merge) is in the archive
        entries = _entries(root)
        legacy_here = known is not None and LEGACY_ROOT in entries and hash_or_none(root, LEGACY_ROOT) == known
        # The archive folder when it holds the legacy bytes (hash_or_none(None, ...) is None).
        holding = archive_dir if known is not None and hash_or_none(archive_dir, LEGACY_ROOT) == known else None
        merged = state.mode != "append"
        if not merged and CANONICAL_ROOT in entries:
            try:
                merged = holds_bytes(root, CANONICAL_ROOT, marker(archive_shown(ws, rel)).encode("utf-8"))
            except OSError:
                merged = False
        if state.mode == "append" and not merged:
            _remove_unplaced_merge(root, marker(archive_shown(ws, rel)).encode("utf-8"))
        if legacy_here or holding is not None:
            _remove_partial_copies(archive_dir)

        how = "rename"
        if holding is not None and legacy_here and known is not None:  # (legacy_here implies a known hash)
            if merged:
                try:  # the verified copy is in the archive (cross-device move); memory.md goes only as that copy
                    remove_if_holds(root.fd, LEGACY_ROOT, known)
                    how = "copy"
                except SourceKept as exc:
                    kept = f"; memory.md {exc.WORDS[exc.reason]}, so it was kept (at {exc.kept_at}) for a new merge"
            else:
                holding.unlink(LEGACY_ROOT)
                holding.close()
                _rmdir_if_empty(ws, parts)
                clear_journal(data_dir)
                return Repair(ID, "resume", "rolled-back", f"{where}: nothing was merged yet; removed the extra archive copy, memory.md is in place", paths)
        elif legacy_here:
            if not merged:
                if archive_dir is not None:
                    archive_dir.close()
                _rmdir_if_empty(ws, parts)
                clear_journal(data_dir)
                return Repair(ID, "resume", "rolled-back", f"{where}: nothing was merged or moved yet; MEMORY.md and memory.md are as they were", paths)
            if archive_dir is None:
                archive_dir = Folder.under(ws, parts, create=True)
            how = safe_move(root.fd, LEGACY_ROOT, archive_dir.fd, LEGACY_ROOT)
            detail = merge_detail(state, how)
            extra = finalize(settings, state, merge_changed_paths(state, rel), merge_note(state))
            again = "MEMORY.md already held the merge, so it was not merged again; " if state.mode == "append" else ""
            return Repair(ID, "resume", "completed", f"{where}: {again}{detail}{extra}", paths)
        elif holding is None:
            if archive_dir is not None:
                archive_dir.close()
            _rmdir_if_empty(ws, parts)
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
    finally:
        if archive_dir is not None:
            archive_dir.close()
    detail = merge_detail(state, how)
    extra = finalize(settings, state, merge_changed_paths(state, rel), merge_note(state))
    return Repair(ID, "resume", "completed", f"{where}: {detail}{kept}{extra}", paths)


def _resume_migrate(settings: Settings, state: JournalRecord, root: Folder) -> Repair:
    data_dir = settings.data_dir
    temp_name = state.temp
    where = f"resumed the rename interrupted at step '{state.step}'"
    if not isinstance(temp_name, str) or "/" in temp_name or temp_name in ("", ".", ".."):
        # Not a name in the workspace root, so not one of the paths the repair touched.
        return Repair(ID, "resume", "failed", f"the journal names a temporary file that is not in the workspace root: {temp_name!r}",
                      (LEGACY_ROOT, CANONICAL_ROOT))
    paths = (LEGACY_ROOT, CANONICAL_ROOT, temp_name)

    entries = _entries(root)
    has_temp, has_canon, has_legacy = temp_name in entries, CANONICAL_ROOT in entries, LEGACY_ROOT in entries

    def put_back() -> Repair:  # MEMORY.md is another file: the renamed one's bytes go back to memory.md
        if LEGACY_ROOT in _entries(root):
            return Repair(ID, "resume", "failed", f"MEMORY.md and memory.md both appeared meanwhile; the renamed file's bytes are at {temp_name} — merge them by hand", paths)
        os.rename(temp_name, LEGACY_ROOT, src_dir_fd=root.fd, dst_dir_fd=root.fd)
        root.fsync()
        clear_journal(data_dir)
        return Repair(ID, "resume", "rolled-back", f"{where}: MEMORY.md appeared meanwhile, so memory.md was put back (a split root, which doctor --fix merges)", paths)

    if has_temp and has_canon and not same_file(root, temp_name, CANONICAL_ROOT):
        return put_back()
    if has_temp and has_canon:
        # Both names are the same file: the rename had finished but for this unlink, made only while
        # they still are (an editor's save over MEMORY.md since the look left the temp name the bytes' last).
        try:
            unlink_other_name(root.fd, temp_name, root.fd, CANONICAL_ROOT)
        except SourceKept:
            return put_back()
        root.fsync()
    elif has_temp:
        place_no_replace(root, temp_name, CANONICAL_ROOT, "migrate")
        root.fsync()
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
