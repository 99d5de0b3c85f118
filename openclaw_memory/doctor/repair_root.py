"""Repairs of the root memory file: merge a split root, migrate a legacy-only root.

Every step is journaled (and fsynced) before it runs; at every instant each byte
of both files is at its original path, in the archive, or merged into
``MEMORY.md``. :mod:`.recovery` finishes or rolls back a repair that was killed.
"""

from __future__ import annotations

import os
import time

from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT, REPAIR_ROOT_MEMORY
from ..files.root import RootEntry, detect_root_memory_files
from ..fsutil.atomic import atomic_write_bytes, fsync_dir
from ..fsutil.hashing import hash_bytes, hash_file
from ..fsutil.move import safe_move
from ..settings import Settings
from . import hooks
from .aftercare import finalize
from .archive import ArchiveRefused, archive_rel, make_stamp_dir, new_stamp
from .journal import clear_journal, journal_pending, step, write_journal
from .merge import HEADING, MAX_ROOT_BYTES, TOO_LARGE, already_merged, archive_shown, legacy_block, merged_bytes
from .model import Finding, Repair, RepairSpec
from .place import place_no_replace, read_regular

SPLIT_PATHS = (CANONICAL_ROOT, LEGACY_ROOT)


class _CanonicalChanged(Exception):
    """MEMORY.md changed between our read and our write: merging now could drop that edit."""


def _regular(entry: RootEntry) -> bool:
    return entry.exists and entry.is_file and not entry.is_symlink


def merge_note(state: dict) -> str:
    """The line the checkpoint gets for a finished merge."""
    rel = state["archive"]
    if state["mode"] == "append":
        return f"merged memory.md into MEMORY.md; archive at {rel}"
    return f"archived memory.md ({_mode_words(state)}) at {rel}; MEMORY.md unchanged"


def merge_changed_paths(state: dict) -> list[str]:
    """Workspace-relative paths a merge changes (for the watchdog baseline)."""
    paths = [CANONICAL_ROOT] if state["mode"] == "append" else []
    return paths + [LEGACY_ROOT, state["archive"]]


def _mode_words(state: dict) -> str:
    return {
        "identical": "same bytes as MEMORY.md",
        "empty": "it was empty",
        "already-merged": f"MEMORY.md already holds its text from an earlier merge, archive {state.get('earlier')}",
    }.get(state["mode"], state["mode"])


def merge_detail(state: dict, how: str) -> str:
    rel = state["archive"]
    if state["mode"] == "append":
        text = f"merged memory.md ({state['legacy_size']} bytes) into MEMORY.md under \"{HEADING}\"; archived the original at {rel}"
    else:
        text = f"archived memory.md at {rel} without merging ({_mode_words(state)}); MEMORY.md unchanged"
    if state.get("lossy") and state["mode"] == "append":
        text += "; memory.md was not valid UTF-8: it was merged with U+FFFD in place of the invalid bytes and its raw bytes are kept in the archive"
    if how == "copy":
        text += "; the archive is on another file system: copied, fsynced and hash-verified before the original was removed"
    return text


def _write_canonical(path: str, data: bytes) -> None:
    st = os.lstat(path)
    atomic_write_bytes(path, data)
    if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(path, st.st_uid, st.st_gid, follow_symlinks=False)
        except PermissionError:
            pass  # not root: the file was ours to begin with


def _failure(exc: OSError, settings: Settings) -> str:
    """The detail of a repair stopped by an OS error (disk full, read-only file system): undo at once if possible."""
    from .recovery import resume  # recovery builds on this module

    what = f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    if not journal_pending(settings.data_dir):
        return f"{what}; nothing changed"
    undo = resume(settings)
    if undo.status in ("rolled-back", "completed"):
        return f"{what}; {undo.status}: {undo.detail}"
    return f"{what}; every byte is still reachable and the journal lets the next `doctor --fix` complete or roll back this repair"


BUSY = "an interrupted repair is pending (see interrupted-repair); it must be completed or rolled back first"


def merge_split_root(settings: Settings, finding: Finding) -> Repair:
    """Merge ``memory.md`` into ``MEMORY.md`` (unless identical, empty or merged already), then archive it."""
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    if journal_pending(data_dir):
        return Repair("split-root", "merge", "failed", BUSY, SPLIT_PATHS)
    canon = os.path.join(ws, CANONICAL_ROOT)
    legacy = os.path.join(ws, LEGACY_ROOT)
    roots = detect_root_memory_files(ws)
    if not (_regular(roots.canonical) and _regular(roots.legacy)):
        return Repair("split-root", "merge", "failed", "MEMORY.md and memory.md are no longer both regular files; nothing changed", SPLIT_PATHS)
    if any(e.target_size is not None and e.target_size > MAX_ROOT_BYTES for e in (roots.canonical, roots.legacy)):
        return Repair("split-root", "merge", "failed",
                      f"{TOO_LARGE}\n- canonical: {canon}\n- legacy: {legacy}\n(limit {MAX_ROOT_BYTES} bytes; nothing changed)",
                      SPLIT_PATHS)
    try:
        canonical = read_regular(canon)
        legacy_bytes = read_regular(legacy)
    except OSError as exc:
        return Repair("split-root", "merge", "failed", f"cannot read the root files ({exc.strerror or exc}); nothing changed", SPLIT_PATHS)
    if max(len(canonical), len(legacy_bytes)) > MAX_ROOT_BYTES:  # grew since the check above
        return Repair("split-root", "merge", "failed",
                      f"{TOO_LARGE}\n- canonical: {canon}\n- legacy: {legacy}\n(limit {MAX_ROOT_BYTES} bytes; nothing changed)",
                      SPLIT_PATHS)

    block, lossy = legacy_block(legacy_bytes)
    earlier = None
    if not legacy_bytes:
        mode = "empty"
    elif legacy_bytes == canonical:
        mode = "identical"
    else:
        earlier = already_merged(canonical, block)
        mode = "already-merged" if earlier else "append"
    state = {
        "kind": "merge",
        "mode": mode,
        "earlier": earlier,
        "started": time.time(),
        "legacy_hash": hash_bytes(legacy_bytes),
        "legacy_size": len(legacy_bytes),
        "canonical_hash": hash_bytes(canonical),
        "lossy": lossy,
    }
    action = "merge" if mode == "append" else "archive"
    stamp_dir = None
    try:
        while stamp_dir is None:
            stamp = new_stamp(ws)
            state = write_journal(data_dir, {**state, "step": "begin", "archive": archive_rel(stamp)})
            hooks.reach("merge:begin")
            try:
                stamp_dir = make_stamp_dir(ws, stamp)
            except FileExistsError:
                continue  # another process took this stamp: take a new one
        hooks.reach("merge:archive-dir")
        rel = state["archive"]
        if mode == "append":
            new = merged_bytes(canonical, block, archive_shown(ws, rel))
            state = step(data_dir, state, "write-canonical")
            hooks.reach("merge:write-canonical")
            if read_regular(canon) != canonical:
                raise _CanonicalChanged()
            _write_canonical(canon, new)
            hooks.reach("merge:canonical-written")
        state = step(data_dir, state, "archive")
        hooks.reach("merge:archive")
        how = safe_move(legacy, os.path.join(ws, rel), on_step=lambda name: hooks.reach(f"move:{name}"))
        hooks.reach("merge:archived")
    except ArchiveRefused as exc:
        clear_journal(data_dir)
        return Repair("split-root", action, "failed", f"{exc.strerror}; nothing changed", SPLIT_PATHS)
    except _CanonicalChanged:
        os.rmdir(stamp_dir)
        clear_journal(data_dir)
        return Repair("split-root", action, "failed", "MEMORY.md changed under the repair (someone else wrote it); doctor changed nothing — run `doctor --fix` again", SPLIT_PATHS)
    except OSError as exc:
        return Repair("split-root", action, "failed", _failure(exc, settings), SPLIT_PATHS)
    extra = finalize(settings, state, merge_changed_paths(state), merge_note(state))
    return Repair("split-root", action, "done", merge_detail(state, how) + extra, (*SPLIT_PATHS, rel))


MIGRATE_NOTE = "renamed the legacy root memory.md to MEMORY.md (the canonical name)"


def migrate_legacy_root(settings: Settings, finding: Finding) -> Repair:
    """Rename ``memory.md`` to ``MEMORY.md`` in two steps, through a journaled temporary name.

    One direct rename is a no-op (or refused) on some case-insensitive file
    systems; going through a different name is correct on all of them.
    """
    ws = str(settings.workspace)
    data_dir = settings.data_dir
    if journal_pending(data_dir):
        return Repair("legacy-root", "migrate", "failed", BUSY, SPLIT_PATHS)
    canon = os.path.join(ws, CANONICAL_ROOT)
    legacy = os.path.join(ws, LEGACY_ROOT)
    roots = detect_root_memory_files(ws)
    if roots.canonical.exists or not _regular(roots.legacy):
        return Repair("legacy-root", "migrate", "failed", "the root files changed since the check; nothing changed", SPLIT_PATHS)
    temp_name = f".{LEGACY_ROOT}.migrate-{os.urandom(4).hex()}.tmp"
    temp = os.path.join(ws, temp_name)
    try:
        state = write_journal(data_dir, {
            "kind": "migrate", "step": "to-temp", "temp": temp_name,
            "legacy_hash": hash_file(legacy), "started": time.time(),
        })
        hooks.reach("migrate:begin")
        os.rename(legacy, temp)
        fsync_dir(ws)
        state = step(data_dir, state, "to-canonical")
        hooks.reach("migrate:at-temp")
        try:
            place_no_replace(temp, canon, "migrate")
        except FileExistsError:
            os.rename(temp, legacy)
            fsync_dir(ws)
            clear_journal(data_dir)
            return Repair("legacy-root", "migrate", "failed", "MEMORY.md appeared while the repair ran; memory.md was put back — run `doctor --fix` again to merge", SPLIT_PATHS)
        fsync_dir(ws)
        hooks.reach("migrate:renamed")
    except OSError as exc:
        return Repair("legacy-root", "migrate", "failed", _failure(exc, settings), SPLIT_PATHS)
    extra = finalize(settings, state, [LEGACY_ROOT, CANONICAL_ROOT], MIGRATE_NOTE)
    return Repair("legacy-root", "migrate", "done", f"{MIGRATE_NOTE}, through the temporary name {temp_name}{extra}", SPLIT_PATHS)


REPAIRS = {
    "split-root": RepairSpec(
        action="merge",
        describe=lambda f: f"merge memory.md into MEMORY.md (skipped when identical or empty) and archive it in {REPAIR_ROOT_MEMORY}/",
        apply=merge_split_root,
    ),
    "legacy-root": RepairSpec(
        action="migrate",
        describe=lambda f: "rename memory.md to MEMORY.md (two-step rename, safe on case-insensitive file systems)",
        apply=migrate_legacy_root,
    ),
}
