"""What a snapshot keeps of each memory file: its bytes, as an object of the history's store.

The snapshot's hash of a file is the object's name (both xxh3_128), so a file already stored (by
an earlier snapshot, or by the history) costs a row of ``snapshot_files`` and no read; a changed
one is read once more from its folder's descriptor and stored only when its bytes still hash to
what the scan recorded (a file changing meanwhile is not kept, and the snapshot says so).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..database import Database
from ..errors import UsageError, printable
from ..files.paths import LEGACY_ROOT, file_kind, is_memory_path
from ..fsutil.safeopen import FILE_FLAGS, Folder
from ..history.objects import ObjectStore
from ..settings import Settings
from .observe import KIND_FILE, Observation, observe
from .store import SnapshotStore, Table


def entry_folder(workspace: Path, rel: str) -> tuple[Folder, str] | None:
    """The folder of a workspace-relative ``rel`` (opened one real folder at a time, no symlinks) and its name."""
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise UsageError(f"not a workspace-relative path: {rel!r}")
    try:
        return Folder.under(workspace, parts[:-1]), parts[-1]
    except OSError:
        return None


def observe_entry(workspace: Path, rel: str) -> Observation | None:
    """What the watchdog sees at a workspace-relative ``rel`` (:func:`~.observe.observe`, from its
    folder as :func:`entry_folder` opens it); None where that folder cannot be reached."""
    found = entry_folder(workspace, rel)
    if found is None:
        return None
    folder, name = found
    with folder:
        return observe(name, dir_fd=folder.fd)


def is_memory_file(rel: str, multimodal: bool | tuple[str, ...]) -> bool:
    """A memory file as the scan finds them: a root file by its exact name, or one under ``memory/``
    (the first test is the cheap one: a snapshot asks it of every entry of the workspace)."""
    if rel.startswith("memory/"):
        return file_kind(rel.rsplit("/", 1)[-1], multimodal) is not None
    if "/" in rel:
        return False
    return (is_memory_path(rel) or rel == LEGACY_ROOT) and file_kind(rel, multimodal) is not None


def keep_contents(settings: Settings, table: Table, paths: list[str] | None = None) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """Store the bytes of each memory file of ``table`` (or only of ``paths``) not stored yet.

    Returns (path -> (version, size) for each file kept, a note per memory file not kept).
    """
    db = Database(settings.data_dir)
    objects = ObjectStore(db, settings.watchdog.max_bytes)
    # What the baseline keeps is stored for sure (pinned: no eviction removes it): no query for those.
    pinned = {v for (v,) in db.rows("SELECT DISTINCT version FROM snapshot_files WHERE label = "
                                     "(SELECT label FROM snapshots ORDER BY seq DESC LIMIT 1)")}
    kept: dict[str, tuple[str, int]] = {}
    notes: list[str] = []
    rows = range(len(table)) if paths is None else [table.index[p] for p in paths if p in table.index]
    # The new objects in one transaction: one sync to disk, not one per file; a full disk says, as
    # a save does, that no snapshot was saved and the baseline is unchanged.
    with SnapshotStore(settings.data_dir).saving():
        _keep_rows(settings, table, rows, objects, pinned, kept, notes)
    return kept, notes


def _keep_rows(settings: Settings, table: Table, rows, objects: ObjectStore, pinned: set[str],
               kept: dict[str, tuple[str, int]], notes: list[str]) -> None:
    for i in rows:
        rel = table.paths[i]
        if chr(table.kinds[i]) != KIND_FILE or not is_memory_file(rel, settings.media):
            continue
        digest = table.digest(i)
        if digest is None:
            continue  # unreadable or changing while hashed: the snapshot counts it as unhashed already
        version, size = digest.hex(), table.size[i]
        if version not in pinned and not objects.has(version):
            if not objects.fits(size):
                notes.append(f"{printable(rel)} ({size} bytes) is too large for the snapshot to keep its content "
                             f"(over [watchdog] max_bytes / 8); its hash is recorded")
                continue
            if not _store(objects, settings.workspace, rel, version):
                notes.append(f"{printable(rel)} changed while the snapshot was taken: its content was not kept")
                continue
        kept[rel] = (version, size)


def _store(objects: ObjectStore, workspace: Path, rel: str, version: str) -> bool:
    found = entry_folder(workspace, rel)
    if found is None:
        return False
    folder, name = found
    with folder:
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=folder.fd)
        except OSError:
            return False
        try:
            return objects.put_fd(fd, version) is not None
        except OSError:  # replaced meanwhile by something pread cannot read (a FIFO)
            return False
        finally:
            os.close(fd)
