"""``watchdog snapshot``: record the workspace state; the newest snapshot is the baseline.

Every file under the workspace (not only memory files) except ignored ones is
recorded with its type, stat and xxh3-128 content hash. Hashes of the previous
baseline are reused for entries whose stat still matches and that were not racy,
so a snapshot of an unchanged tree costs a stat per file.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, NamedTuple

from ..fsutil.fsclock import guard_ns
from ..settings import Settings
from ..wire import key
from .compare import Delta, compare_workspace, record_observation, rules_of
from .content import keep_contents, observe_entry
from .gitstate import workspace_head
from .ignore import workspace_patterns
from .observe import KIND_DIR, KIND_FILE
from .store import HASHED, RACY, SnapshotDamaged, SnapshotStore, Table, validate_label


@dataclass(frozen=True)
class SnapshotInfo:
    """What a snapshot recorded."""

    label: str
    path: Path = key("file")
    taken_at: str = key()
    entries: int = key()
    rehashed: int = key()  # entries read now (the rest reused the previous baseline's hash)
    racy: int = key()  # entries whose timestamps were too close to the scan; rehashed at every verify
    unhashed: int = key()  # entries recorded without a hash (unreadable, or changing while hashed)
    kept: int = key(default=0)  # memory files whose content the snapshot keeps (restorable)
    git_head: str | None = key(omit=lambda s: s.git_head is None, default=None)  # HEAD of the workspace's git work tree
    seal_ns: int = key(hidden=True, default=0)
    guard_ns: int = key(hidden=True, default=0)
    warnings: tuple[str, ...] = key(omit=lambda s: not s.warnings, default=())

    JSON_DERIVED: ClassVar = ("guard_ms",)

    @property
    def guard_ms(self) -> float:
        return self.guard_ns / 1e6


class Left(NamedTuple):
    """What a repair left at a path: the version (content hash, hex) and, where known, its bytes."""

    version: str
    data: bytes | None


def timestamp_label(prefix: str = "") -> str:
    """A label from the UTC clock, sortable and valid: ``2026-01-31T12-00-00.123456Z``."""
    now = dt.datetime.now(dt.UTC)
    return prefix + now.strftime("%Y-%m-%dT%H-%M-%S.%fZ")


def new_table(settings: Settings, label: str, patterns: list[str]) -> Table:
    taken_at = dt.datetime.now(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    table = Table.empty(label, str(settings.workspace), taken_at, 0, guard_ns(settings.workspace), patterns)
    table.git_head = workspace_head(settings.workspace)
    return table


def save_table(settings: Settings, store: SnapshotStore, table: Table, delta: Delta,
               files: Mapping[str, tuple[str, int]]) -> SnapshotInfo:
    """Seal ``table`` (the wall clock at the end of the scan) and store it, with the memory files'
    content ``files`` (:func:`.content.keep_contents`), as the baseline."""
    table.seal_ns = time.time_ns()
    path = store.save(table, settings.watchdog.keep, files, settings.watchdog.max_bytes)
    flags = table.flags
    return SnapshotInfo(
        label=table.label,
        path=path,
        taken_at=table.taken_at,
        entries=len(table),
        rehashed=delta.rehashed,
        racy=sum(1 for f in flags if f & RACY),
        unhashed=sum(1 for f in flags if not f & HASHED),
        kept=len(files),
        git_head=table.git_head,
        seal_ns=table.seal_ns,
        guard_ns=table.guard_ns,
        warnings=tuple(delta.warnings),
    )


def take_snapshot(settings: Settings, label: str | None = None) -> SnapshotInfo:
    """Record the workspace now under ``label`` (default: a UTC timestamp) and make it the baseline."""
    label = validate_label(label) if label is not None else timestamp_label()
    store = SnapshotStore(settings.data_dir)
    patterns = workspace_patterns(settings.workspace)
    notes: list[str] = []
    try:
        previous = store.baseline()
    except SnapshotDamaged as exc:
        previous = None  # hash everything afresh rather than trust it
        notes.append(exc.message)
    table = new_table(settings, label, patterns)
    rules = rules_of(settings, patterns)
    delta = compare_workspace(settings.workspace, rules, previous, table, table.guard_ns)
    delta.warnings[:0] = notes
    files, not_kept = keep_contents(settings, table)
    delta.warnings += not_kept
    return save_table(settings, store, table, delta, files)


def refresh_baseline(settings: Settings, rel_paths: list[str], started_from: Mapping[str, str | None] | None = None,
                     left: Mapping[str, Left | None] | None = None, since: list[str] | None = None) -> list[str]:
    """Re-record exactly ``rel_paths`` in the current baseline (dropping those gone or now folders).

    ``doctor --fix`` calls this after a repair so the next ``doctor`` does not report
    its own changes. Paths not yet in the baseline are added (when not ignored).
    Without a baseline there is nothing to refresh.

    ``started_from`` gives the hash (None: absent) each file held when the repair began.
    When one of them is not what the baseline recorded, it was changed behind the
    agent's back before the repair: refreshing would hide that change, so nothing is
    refreshed and those paths are returned.

    ``left`` gives what the repair itself left at some of the paths (None: it removed the path).
    Only that is taken into the baseline: a path that holds something else now was changed by
    someone else since the repair (a save while doctor was paused, or before an interrupted repair
    was resumed), and recording it as it is now would hide that change. Such a path gets the
    repair's version, its stat one no file has (and racy), so every verify hashes it and reports the
    change; a path the repair removed and someone made again gets no entry (it is new). Each such
    path is added to ``since``.
    """
    store = SnapshotStore(settings.data_dir)
    wanted = dict.fromkeys(rel_paths)
    # One transaction: a snapshot saved meanwhile is never overwritten by this older baseline's copy.
    with store.saving():
        base = store.baseline()
        if base is None:
            return []
        rules = rules_of(settings, base.ignore)
        moved = [rel for rel, version in (started_from or {}).items()
                 if not rules.ignores_path(rel) and not _recorded_as(base, rel, version)]
        if moved:
            return moved
        table = Table.empty(base.label, base.workspace, base.taken_at, base.seal_ns, base.guard_ns, base.ignore)
        table.git_head = base.git_head
        for i, rel in enumerate(base.paths):
            if rel not in wanted:
                table.copy_row(base, i)
        delta = Delta()
        for rel in wanted:
            if rules.ignores_path(rel):
                continue
            obs = observe_entry(settings.workspace, rel)
            there = obs is not None and not obs.gone and obs.kind != KIND_DIR
            if left is not None and rel in left:
                mine = left[rel]
                now = obs.digest.hex() if there and obs is not None and obs.kind == KIND_FILE and obs.digest else None
                if mine is None or now != mine.version:
                    if mine is not None:
                        table.append(rel, KIND_FILE, _never_seen(len(mine.data) if mine.data is not None else 0),
                                     bytes.fromhex(mine.version), racy=True)
                    if there or mine is not None:
                        if since is not None:
                            since.append(rel)
                    continue
            if not there or obs is None:
                continue
            record_observation(table, rel, obs, base.guard_ns, delta)
        files = {rel: kept for rel, kept in store.files(base.label).items() if rel not in wanted}
        files.update(keep_contents(settings, table, list(wanted))[0])
        store.save(table, settings.watchdog.keep, files, settings.watchdog.max_bytes)
    return []


def _never_seen(size: int) -> os.stat_result:
    """A regular file's stat that no file on disk has (inode 0, timestamps 0): an entry recorded with
    it is never vouched for by a stat, so it is hashed at every look."""
    return os.stat_result((stat.S_IFREG | 0o600, 0, 0, 1, 0, 0, size, 0, 0, 0),
                          {"st_atime_ns": 0, "st_mtime_ns": 0, "st_ctime_ns": 0})


def _recorded_as(base: Table, rel: str, version: str | None) -> bool:
    """Whether the baseline holds ``rel`` at ``version`` (None: holds no entry for it)."""
    i = base.index.get(rel)
    if i is None or version is None:
        return i is None and version is None
    digest = base.digest(i)
    return digest is not None and chr(base.kinds[i]) == KIND_FILE and digest.hex() == version
