"""Repairs of the root memory file: merge a split root, migrate a legacy-only root.

Every step is journaled (and fsynced) before it runs; at every instant each byte
of both files is at its original path, in the archive, or merged into
``MEMORY.md``. :mod:`.recovery` finishes or rolls back a repair that was killed.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from .. import faults
from ..errors import MemoryToolError, is_no_space
from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT, REPAIR_ROOT_MEMORY
from ..files.root import RootEntry, detect_root_memory_files
from ..fsutil.atomic import atomic_write_bytes, write_temp_beside
from ..fsutil.hashing import hash_bytes, hash_open_file
from ..fsutil.move import SourceKept, link_noreplace, safe_move, unlink_other_name
from ..fsutil.safeopen import Folder
from ..history.placing import ReadOnlyRefused, read_only_note, read_only_refusal, refuse_read_only, swap_name
from ..history.store import HistoryStore
from ..history.swap import Swap
from ..history.versions import DOCTOR_FIX, EXTERNAL_EDIT, FileMode
from ..settings import Settings
from .aftercare import finalize, record_in_history, refresh_watchdog
from .archive import ArchiveRefused, StampDir, archive_rel, make_stamp_dir, new_stamp
from .journal import JournalRecord, clear_journal, journal_pending, step, write_journal
from .merge import (
    MAX_ROOT_BYTES,
    MIGRATE_NOTE,
    TOO_LARGE,
    already_merged,
    archive_shown,
    legacy_block,
    merge_changed_paths,
    merge_detail,
    merge_note,
    merged_bytes,
    merged_mode,
)
from .model import Finding, Repair, RepairSpec
from .place import hash_or_none, identical_twins, place_no_replace, read_within, read_within_mode, same_file

if TYPE_CHECKING:
    from ..watchdog.snapshot import Left

SPLIT_PATHS = (CANONICAL_ROOT, LEGACY_ROOT)


class _CanonicalChanged(Exception):
    """MEMORY.md changed between our read and our write: merging now could drop that edit (``held``:
    another program holds it open for writing, so what it writes after the merge would be lost)."""

    def __init__(self, stamp_dir: StampDir, held: bool = False):
        super().__init__()
        self.stamp_dir = stamp_dir  # the archive folder made for this merge, still empty
        self.held = held


def _regular(entry: RootEntry) -> bool:
    return entry.exists and entry.is_file and not entry.is_symlink


def _write_canonical(root: Folder, data: bytes, mode: int | None = None) -> None:
    """Replace MEMORY.md: its owner kept, its mode too unless ``mode`` is given, set on the temp file
    before it takes the name (never a chmod after: no instant where the new text has the old mode)."""
    atomic_write_bytes(CANONICAL_ROOT, data, mode, dir_fd=root.fd)


def _place_merged(settings: Settings, root: Folder, stamp_dir: StampDir, merged: bytes, perms: int, kept: FileMode,
                  checked: str) -> str:
    """Put ``merged`` in place of MEMORY.md, which held the version ``checked`` when compared, by exchange
    (:class:`~..history.swap.Swap`, as a guarded write does): what the exchange takes off the name is
    checked, and a save an editor or agent made since the compare is put back and logged in the history,
    the merge stopped (_CanonicalChanged); a rename there unlinked it. A MEMORY.md another program holds
    open for writing is left as it is (its later writes would land in the file taken off). Where the
    file system cannot exchange, a rename follows the compare, nothing between. Returns what the report
    says of a MEMORY.md with other names (hard links): they keep its text before the merge ("" if none)."""
    tmp = swap_name(root, write_temp_beside(CANONICAL_ROOT, merged, perms, dir_fd=root.fd, owner=(kept.uid, kept.gid)))
    swap = Swap(root, tmp, CANONICAL_ROOT, kept)  # a chmod of MEMORY.md since its look stops the merge too
    recorded = {checked}  # (logged before the merge: record_in_history) what the leftover may be to go
    try:
        if not swap.lease_target():
            raise _CanonicalChanged(stamp_dir, held=True)
        faults.reach("merge:checked")
        swapped = swap.exchange(checked)
        if swapped and swap.opened_for_writing():  # opened since the lease: it keeps its file
            swap.put_back()
            raise _CanonicalChanged(stamp_dir, held=True)
        if swapped is None:
            swap.rename()
        elif not swapped:
            store = HistoryStore.for_settings(settings)
            abs_path = os.path.join(str(settings.workspace), CANONICAL_ROOT)
            with store.lock():  # every version displaced, before any is removed
                for taken in swap.taken:
                    store.observe(abs_path, CANONICAL_ROOT, taken.version, fd=taken.fd)
            recorded |= {taken.version.version for taken in swap.taken}
            raise _CanonicalChanged(stamp_dir)
        os.fsync(root.fd)
    finally:
        swap.remove_leftover(recorded)  # what is not ours or logged stays, for doctor's leftovers check
        swap.close()
    # Replaced, never written in place: a second name of MEMORY.md keeps its old text, said as a write says it.
    return f"; {swap.split.note(CANONICAL_ROOT, 'merge')}" if swap.split is not None else ""


def _mode_for_merge(root: Folder, canonical: FileMode, legacy: FileMode) -> int:
    """MEMORY.md's mode once it holds memory.md's text (:func:`.merge.merged_mode`), from memory.md's mode
    when it was read and as it is now, whichever is the more private (a ``chmod`` since narrows it too)."""
    perms = merged_mode(canonical, legacy)
    try:
        now = FileMode.of(root.lstat(LEGACY_ROOT))
    except OSError:
        return perms  # gone or replaced since: the archive step finds that out
    return merged_mode(canonical._replace(mode=perms), now)


def _failure(exc: OSError | MemoryToolError, settings: Settings) -> str:
    """The detail of a repair stopped by an OS error (disk full, read-only file system): undo at once if possible."""
    from .recovery import resume  # recovery builds on this module

    # A failure of the state database (its journal) comes worded already: a full disk, a busy file.
    what = exc.message if isinstance(exc, MemoryToolError) else describe_os_error(exc, settings)
    if not journal_pending(settings.data_dir):
        return what if "nothing was changed" in what else f"{what}; nothing changed"
    undo = resume(settings)
    if undo.status in ("rolled-back", "completed"):
        return f"{what}; {undo.status}: {undo.detail}"
    return f"{what}; every byte is still reachable and the journal lets the next `doctor --fix` complete or roll back this repair"


def describe_os_error(exc: OSError, settings: Settings) -> str:
    """What stopped a repair, and where: a full disk is named as such, in the workspace or the state dir."""
    name = os.fspath(exc.filename) if exc.filename else ""
    in_state = name.startswith(str(settings.data_dir))
    where = f"the state dir ({settings.data_dir})" if in_state else f"the workspace ({settings.workspace})"
    if is_no_space(exc):
        return f"the disk is full: no space left to write in {where}"
    return f"{exc.strerror or exc} (in {where}{': ' + name if name else ''})"


BUSY = "an interrupted repair is pending (see interrupted-repair); it must be completed or rolled back first"


def merge_split_root(settings: Settings, finding: Finding) -> Repair:
    """Merge ``memory.md`` into ``MEMORY.md`` (unless identical, empty or merged already), then archive it."""
    ws = str(settings.workspace)
    if journal_pending(settings.data_dir):
        return Repair("split-root", "merge", "failed", BUSY, SPLIT_PATHS)
    roots = detect_root_memory_files(ws)
    if not (_regular(roots.canonical) and _regular(roots.legacy)):
        return Repair("split-root", "merge", "failed", "MEMORY.md and memory.md are no longer both regular files; nothing changed", SPLIT_PATHS)
    too_large = any(e.target_size is not None and e.target_size > MAX_ROOT_BYTES for e in (roots.canonical, roots.legacy))
    if too_large and not identical_twins(ws):  # identical twins are archived, whatever their size
        canon, legacy = os.path.join(ws, CANONICAL_ROOT), os.path.join(ws, LEGACY_ROOT)
        return Repair("split-root", "merge", "failed",
                      f"{TOO_LARGE}\n- canonical: {canon}\n- legacy: {legacy}\n(limit {MAX_ROOT_BYTES} bytes; nothing changed)",
                      SPLIT_PATHS)
    try:
        root = Folder.under(ws)
    except OSError as exc:
        return Repair("split-root", "merge", "failed", f"cannot open the workspace ({exc.strerror or exc}); nothing changed", SPLIT_PATHS)
    # Agent writes (write, restore, MCP) wait while the merge reads, rewrites and archives:
    # one landing between its check and its rename would be overwritten.
    with root:
        try:
            with HistoryStore.for_settings(settings).write_lock():
                if same_file(root, LEGACY_ROOT, CANONICAL_ROOT):
                    return _drop_second_name(settings, root)
                record_in_history(settings, [CANONICAL_ROOT], EXTERNAL_EDIT)  # the version the merge replaces, restorable
                return _merge(settings, root, large_ok=too_large)
        except MemoryToolError as exc:  # the lock: another write held it too long, or the state dir
            return Repair("split-root", "merge", "failed", f"{exc.message}; nothing changed", SPLIT_PATHS)


def _drop_second_name(settings: Settings, root: Folder) -> Repair:
    """memory.md is a second name (hard link) of MEMORY.md's file: that name goes, only while it still
    names that file (:func:`~..fsutil.move.unlink_other_name`, checked as the object removed); nothing
    is lost, whatever the file holds. Archiving it, as identical twins are, made a third name in the
    archive: MEMORY.md stayed hard-linked, which OpenClaw's guarded read refuses (``prompt-file-hardlinked``).
    No journal: at every instant the bytes are MEMORY.md's, and a kill between the private name and its
    unlink leaves ``.memory.md.aside-<hex>``, which the interrupted-repair check names and gives back."""
    try:
        version = hash_or_none(root, CANONICAL_ROOT)
        faults.reach("merge:second-name")
        unlink_other_name(root.fd, LEGACY_ROOT, root.fd, CANONICAL_ROOT)
        root.fsync()
    except SourceKept as exc:
        where = "it is still memory.md" if exc.kept_at == LEGACY_ROOT else f"it is kept at {exc.kept_at}"
        return Repair("split-root", "unlink", "failed", f"memory.md was a hard link of MEMORY.md, but a file was saved "
                      f"under one of the two names meanwhile, so memory.md was not removed: {where} — run `doctor --fix` "
                      "again to merge it", tuple(dict.fromkeys((*SPLIT_PATHS, exc.kept_at))))
    except OSError as exc:
        return Repair("split-root", "unlink", "failed", f"{describe_os_error(exc, settings)}; nothing changed", SPLIT_PATHS)
    from ..watchdog.checkpoint import append_checkpoint  # (as finalize: only once a repair is done)

    note = "removed memory.md, a second name (hard link) of MEMORY.md's file; MEMORY.md unchanged"
    left: dict[str, Left | None] = {LEGACY_ROOT: None}  # a memory.md saved since is someone else's
    record_in_history(settings, [LEGACY_ROOT], DOCTOR_FIX, left)
    extra = refresh_watchdog(settings, [LEGACY_ROOT], {LEGACY_ROOT: version, CANONICAL_ROOT: version}, left)
    try:
        append_checkpoint(settings.data_dir, f"- {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M:%SZ')} doctor --fix: {note}",
                          settings.agent)
    except (MemoryToolError, OSError) as exc:
        extra += f"; the checkpoint line could not be written ({exc.message if isinstance(exc, MemoryToolError) else exc})"
    return Repair("split-root", "unlink", "done", f"{note} (no archive: nothing is lost, and an archived link kept "
                  f"MEMORY.md hard-linked, which the prompt refuses){extra}", SPLIT_PATHS)


def _merge(settings: Settings, root: Folder, large_ok: bool = False) -> Repair:
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    try:
        # A file over the limit is never held whole: only identical twins (by streamed hash) go on then.
        read_canonical, canonical_hash, _, canonical_mode = read_within_mode(root, CANONICAL_ROOT, MAX_ROOT_BYTES)
        legacy_bytes, legacy_hash, legacy_size, legacy_mode = read_within_mode(root, LEGACY_ROOT, MAX_ROOT_BYTES)
    except OSError as exc:
        return Repair("split-root", "merge", "failed", f"cannot read the root files ({exc.strerror or exc}); nothing changed", SPLIT_PATHS)
    if read_canonical is None or legacy_bytes is None:
        if not (large_ok and canonical_hash == legacy_hash):  # grew since the check above, or no longer identical
            canon, legacy = os.path.join(ws, CANONICAL_ROOT), os.path.join(ws, LEGACY_ROOT)
            return Repair("split-root", "merge", "failed",
                          f"{TOO_LARGE}\n- canonical: {canon}\n- legacy: {legacy}\n(limit {MAX_ROOT_BYTES} bytes; nothing changed)",
                          SPLIT_PATHS)
        block, lossy, earlier, mode = b"", False, None, "identical"
    else:
        block, lossy = legacy_block(legacy_bytes)
        earlier = None
        if not legacy_bytes:
            mode = "empty"
        elif legacy_bytes == read_canonical:
            mode = "identical"
        else:
            earlier = already_merged(read_canonical, block)
            mode = "already-merged" if earlier else "append"
    # As a write of it is refused (archiving memory.md alone moves it): the mode of what was read.
    if mode == "append" and (read_only := read_only_note(CANONICAL_ROOT, canonical_mode, root)) is not None:
        return Repair("split-root", "merge", "failed", read_only_refusal([read_only], "changed"), SPLIT_PATHS)
    # What MEMORY.md is put back to if a merge is undone; identical twins never change it (not read when large).
    canonical = read_canonical if read_canonical is not None else b""
    state = JournalRecord(
        "merge", "begin", started=time.time(), legacy_hash=legacy_hash, mode=mode, earlier=earlier,
        legacy_size=legacy_size, canonical_hash=canonical_hash, lossy=lossy,
    )
    action = "merge" if mode == "append" else "archive"
    stamp_dir = None
    restore_mode: int | None = None  # MEMORY.md's mode before the merge, where the merge narrowed it
    split = ""  # what the report says of MEMORY.md's other names, where it had some
    try:
        while stamp_dir is None:
            stamp = new_stamp(ws)
            rel = archive_rel(stamp)
            state = write_journal(data_dir, replace(state, step="begin", archive=rel))
            faults.reach("merge:begin")
            try:
                stamp_dir = make_stamp_dir(ws, stamp)
            except FileExistsError:
                continue  # another process took this stamp: take a new one
        faults.reach("merge:archive-dir")
        if mode == "append":
            new = merged_bytes(canonical, block, archive_shown(ws, rel))
            state = step(data_dir, replace(state, merged_hash=hash_bytes(new)), "write-canonical")
            faults.reach("merge:write-canonical")
            again, _, _, canonical_mode = read_within_mode(root, CANONICAL_ROOT, MAX_ROOT_BYTES)
            if again != canonical:
                raise _CanonicalChanged(stamp_dir)
            refuse_read_only(canonical_mode, CANONICAL_ROOT, "changed", root)  # made so since the first look
            perms = _mode_for_merge(root, canonical_mode, legacy_mode)
            split = _place_merged(settings, root, stamp_dir, new, perms, canonical_mode, canonical_hash)
            if perms != canonical_mode.mode:
                restore_mode = canonical_mode.mode
                state = replace(state, canonical_mode=canonical_mode.mode, merged_mode=perms)
            faults.reach("merge:canonical-written")
        state = step(data_dir, state, "archive")
        faults.reach("merge:archive")
        try:
            how = safe_move(root.fd, LEGACY_ROOT, stamp_dir.folder.fd, LEGACY_ROOT)
        except SourceKept as exc:
            return _said(_source_kept(settings, root, stamp_dir, canonical, new if mode == "append" else None, exc,
                                      restore_mode), split)
        faults.reach("merge:archived")
        if hash_or_none(stamp_dir.folder, LEGACY_ROOT) != state.legacy_hash:
            # memory.md was edited after it was read: its new text is only in the archive.
            return _said(_undo_merge(settings, root, stamp_dir, canonical, new if mode == "append" else None, restore_mode),
                         split)
    except ArchiveRefused as exc:
        clear_journal(data_dir)
        return Repair("split-root", action, "failed", f"{exc.strerror}; nothing changed", SPLIT_PATHS)
    except ReadOnlyRefused as exc:
        if stamp_dir is not None:  # still empty: the archive step comes after the write
            stamp_dir.remove_if_empty()
        clear_journal(data_dir)
        return Repair("split-root", action, "failed", exc.message, SPLIT_PATHS)
    except _CanonicalChanged as exc:
        exc.stamp_dir.remove_if_empty()
        clear_journal(data_dir)
        if exc.held:
            return Repair("split-root", action, "failed", "MEMORY.md is held open for writing by another program, which could "
                          "still write to it; doctor changed nothing — close it there and run `doctor --fix` again", SPLIT_PATHS)
        return Repair("split-root", action, "failed", "MEMORY.md changed under the repair (someone else wrote it); doctor changed nothing — run `doctor --fix` again", SPLIT_PATHS)
    except (OSError, MemoryToolError) as exc:
        return Repair("split-root", action, "failed", _failure(exc, settings), SPLIT_PATHS)
    finally:
        if stamp_dir is not None:
            stamp_dir.close()
    extra = finalize(settings, state, merge_changed_paths(state, rel), merge_note(state), new if mode == "append" else None)
    return Repair("split-root", action, "done", merge_detail(state, how) + split + extra, (*SPLIT_PATHS, rel))


def _said(repair: Repair, split: str) -> Repair:
    """A merge undone after MEMORY.md was replaced: put back as a new file, its other names split off all the same."""
    return replace(repair, detail=repair.detail + split)


def _undo_merge(settings: Settings, root: Folder, stamp_dir: StampDir, canonical: bytes, merged: bytes | None,
                restore_mode: int | None = None) -> Repair:
    """Put memory.md back from the archive and MEMORY.md back to its bytes before the merge."""
    action = "archive" if merged is None else "merge"
    try:
        safe_move(stamp_dir.folder.fd, LEGACY_ROOT, root.fd, LEGACY_ROOT)
    except FileExistsError:
        clear_journal(settings.data_dir)
        return Repair("split-root", action, "failed",
                      f"memory.md changed while the repair ran and was then created again; its changed text is kept at "
                      f"{archive_rel(stamp_dir.name)} — merge it by hand", SPLIT_PATHS)
    note = _put_canonical_back(root, canonical, merged, restore_mode)
    stamp_dir.remove_if_empty()
    clear_journal(settings.data_dir)
    return Repair("split-root", action, "failed",
                  f"memory.md changed under the repair (someone else wrote it); it was put back{note} — run `doctor --fix` again",
                  SPLIT_PATHS)


def _put_canonical_back(root: Folder, canonical: bytes, merged: bytes | None, restore_mode: int | None = None) -> str:
    """Undo the merge in MEMORY.md unless it changed since (then it keeps the merged text, and the mode
    the merge gave it): a note for the detail. ``restore_mode``: its mode before a merge that narrowed it."""
    if merged is None:
        return ""
    if read_within(root, CANONICAL_ROOT, len(merged))[0] == merged:
        _write_canonical(root, canonical, restore_mode)
        return ""
    return " (MEMORY.md was changed since the merge too, so it keeps the merged text)"


def _source_kept(settings: Settings, root: Folder, stamp_dir: StampDir, canonical: bytes, merged: bytes | None,
                 exc: SourceKept, restore_mode: int | None = None) -> Repair:
    """The cross-device move kept memory.md (edited, replaced or held open while it was copied): the
    repair stops there. MEMORY.md gets its bytes before the merge back, so the next `doctor --fix`
    merges memory.md as it is now, once; the copy in the archive is kept, never deleted."""
    action = "archive" if merged is None else "merge"
    note = _put_canonical_back(root, canonical, merged, restore_mode)
    rel = archive_rel(stamp_dir.name)
    clear_journal(settings.data_dir)
    if exc.kept_at == LEGACY_ROOT:
        where = "it is still memory.md"
    else:  # a new memory.md was made meanwhile; the interrupted-repair check reports this name
        where = f"a new memory.md was made meanwhile, so it is kept at {exc.kept_at}"
    merged_note = f"; MEMORY.md was put back as it was before the merge{note}" if merged is not None else ""
    again = "close it there and run `doctor --fix` again" if exc.reason == "open" else "run `doctor --fix` again"
    return Repair("split-root", action, "failed",
                  f"memory.md {SourceKept.WORDS[exc.reason]}, so it was not removed: {where}{merged_note}; "
                  f"what reached the archive before that is kept at {rel} — {again}",
                  tuple(dict.fromkeys((*SPLIT_PATHS, rel, exc.kept_at))))


def migrate_legacy_root(settings: Settings, finding: Finding) -> Repair:
    """Rename ``memory.md`` to ``MEMORY.md`` in two steps, through a journaled temporary name.

    One direct rename is a no-op (or refused) on some case-insensitive file
    systems; going through a different name is correct on all of them.
    """
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    if journal_pending(data_dir):
        return Repair("legacy-root", "migrate", "failed", BUSY, SPLIT_PATHS)
    roots = detect_root_memory_files(ws)
    if roots.canonical.exists or not _regular(roots.legacy):
        return Repair("legacy-root", "migrate", "failed", "the root files changed since the check; nothing changed", SPLIT_PATHS)
    temp_name = f".{LEGACY_ROOT}.migrate-{os.urandom(4).hex()}.tmp"
    try:
        with Folder.under(ws) as root:
            fd, _ = root.open_regular(LEGACY_ROOT)
            try:
                legacy_hash = hash_open_file(fd)
            finally:
                os.close(fd)
            state = write_journal(data_dir, JournalRecord("migrate", "to-temp", started=time.time(), legacy_hash=legacy_hash, temp=temp_name))
            faults.reach("migrate:begin")
            os.rename(LEGACY_ROOT, temp_name, src_dir_fd=root.fd, dst_dir_fd=root.fd)
            root.fsync()
            state = step(data_dir, state, "to-canonical")
            faults.reach("migrate:at-temp")
            try:
                place_no_replace(root, temp_name, CANONICAL_ROOT, "migrate")
            except SourceKept as exc:
                return _migration_overtaken(settings, root, exc.kept_at)
            except FileExistsError:
                os.rename(temp_name, LEGACY_ROOT, src_dir_fd=root.fd, dst_dir_fd=root.fd)
                root.fsync()
                clear_journal(data_dir)
                return Repair("legacy-root", "migrate", "failed", "MEMORY.md appeared while the repair ran; memory.md was put back — run `doctor --fix` again to merge", SPLIT_PATHS)
            root.fsync()
            faults.reach("migrate:renamed")
    except (OSError, MemoryToolError) as exc:
        return Repair("legacy-root", "migrate", "failed", _failure(exc, settings), SPLIT_PATHS)
    extra = finalize(settings, state, [LEGACY_ROOT, CANONICAL_ROOT], MIGRATE_NOTE)
    return Repair("legacy-root", "migrate", "done", f"{MIGRATE_NOTE}, through the temporary name {temp_name}{extra}", SPLIT_PATHS)


def _migration_overtaken(settings: Settings, root: Folder, kept_at: str) -> Repair:
    """A save (an editor's, an agent's) took MEMORY.md's name between the migration's link and its unlink
    of the temporary name, which is then memory.md's text's last name (``kept_at``): it is memory.md again
    (a split root, which the run merges next), and the save is logged as what it is, an outside edit.
    Unchecked, the unlink took that text with it, and the save was logged as doctor's own version."""
    try:
        link_noreplace(root.fd, kept_at, root.fd, LEGACY_ROOT, verified=True)
        where = "memory.md was put back"
    except FileExistsError:  # a new memory.md too: the temporary name keeps it (interrupted-repair names it)
        where = f"a new memory.md was made meanwhile too, so memory.md's text is kept at {kept_at} — merge it by hand"
    except SourceKept:  # linked, then our temporary name was taken: memory.md holds the text
        where = "memory.md was put back"
    root.fsync()
    clear_journal(settings.data_dir)
    record_in_history(settings, [CANONICAL_ROOT], EXTERNAL_EDIT)
    return Repair("legacy-root", "migrate", "failed",
                  f"MEMORY.md was saved by another program while memory.md was renamed to it; that save is kept and "
                  f"{where} — run `doctor --fix` again to merge", SPLIT_PATHS)


REPAIRS = {
    "split-root": RepairSpec(
        action="merge",
        describe=lambda f: f"merge memory.md into MEMORY.md (skipped when identical or empty) and archive it in {REPAIR_ROOT_MEMORY}/"
                           " (a hard link of MEMORY.md loses that name instead)",
        apply=merge_split_root,
    ),
    "legacy-root": RepairSpec(
        action="migrate",
        describe=lambda f: "rename memory.md to MEMORY.md (two-step rename, safe on case-insensitive file systems)",
        apply=migrate_legacy_root,
    ),
}
