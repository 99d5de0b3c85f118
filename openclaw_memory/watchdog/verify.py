"""``watchdog verify``: what changed in the workspace since the baseline. Writes nothing.

``break_count`` counts changed and deleted entries; new files are low risk and
only listed. The ignore rules are the ones stored with the baseline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import ClassVar

from ..database.observations import ChangeStat
from ..errors import UsageError
from ..settings import Settings
from ..wire import key
from .compare import Changed, Delta, compare_workspace, rules_of
from .gitstate import GitChanges, memory_git_changes
from .store import SnapshotStore, Table


class NoBaseline(UsageError):
    """``verify`` needs a snapshot to compare with."""


@dataclass(frozen=True)
class VerifyResult:
    """The delta between the baseline and the workspace now (workspace-relative paths)."""

    baseline: str
    changed: tuple[Changed, ...]
    deleted: tuple[str, ...]
    new: tuple[str, ...]
    warnings: tuple[str, ...] = key(omit=lambda v: not v.warnings, default=())
    entries: int = 0  # entries looked at now
    rehashed: int = 0  # of which read and hashed (stat differed, or racy at snapshot time)
    # The memory files with uncommitted changes, or ignored, in each root that is in a git work tree.
    git: tuple[GitChanges, ...] = key(omit=lambda v: not v.git, default=())

    JSON_DERIVED: ClassVar = ("break_count",)

    @property
    def break_count(self) -> int:
        return len(self.changed) + len(self.deleted)


def no_baseline_message(settings: Settings) -> str:
    return (
        f"no watchdog baseline for {settings.workspace} yet: "
        "run `openclaw-memory watchdog snapshot` first"
    )


def result_from(base: Table, delta: Delta) -> VerifyResult:
    return VerifyResult(
        baseline=base.label,
        changed=tuple(delta.changed),
        deleted=tuple(delta.deleted),
        new=tuple(delta.new),
        warnings=tuple(delta.warnings),
        entries=delta.entries,
        rehashed=delta.rehashed,
    )


def verify_workspace(settings: Settings, seen_stats: Mapping[str, ChangeStat] | None = None) -> VerifyResult:
    """Compare the workspace with the latest snapshot; raises NoBaseline when there is none.
    ``seen_stats``: stats of workspace files the caller's own walk just took (compare_workspace)."""
    store = SnapshotStore(settings.data_dir)
    # No state database: no baseline, said without opening one, which would create it (160 KB and
    # its folders, for any folder given as the workspace): verify writes nothing.
    base = store.baseline() if os.path.lexists(store.path) else None
    if base is None:
        raise NoBaseline(no_baseline_message(settings))
    rules = rules_of(settings, base.ignore)
    delta = compare_workspace(settings.workspace, rules, base, None, base.guard_ns, seen_stats)
    git, notes = memory_git_changes(settings)
    return replace(result_from(base, delta), git=git, warnings=(*delta.warnings, *notes))
