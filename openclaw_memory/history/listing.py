"""``history PATH``: the versions of one memory file kept in the history, newest first."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import PathRefused, os_error
from ..files.read import open_resolved, resolve_memory_path
from .store import HistoryStore, snapshot_fd
from .versions import Entry

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class VersionHistory:
    path: str
    current: str | None  # the version the file holds now; None when it does not exist
    entries: tuple[Entry, ...]  # newest first
    available: frozenset[str]  # versions whose bytes are still stored
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "currentVersion": self.current,
            "versions": [
                e.to_json(available=e.version in self.available, current=e.version == self.current and i == 0)
                for i, e in enumerate(self.entries)
            ],
        }


def file_history(settings: Settings, path: str) -> VersionHistory:
    """List the versions of ``path``; the file as it is now is recorded first (a sighting)."""
    resolved = resolve_memory_path(path, str(settings.workspace), settings.extra_paths)
    store = HistoryStore.for_settings(settings)
    warnings: tuple[str, ...] = ()
    with store.lock():
        store.check_log(resolved.abs_path, resolved.display)  # before the sighting would set it aside
        opened = open_resolved(resolved)
        snapshot = None
        if opened is not None:
            fd = opened[0]
            try:
                snapshot = snapshot_fd(fd)
                store.observe(resolved.abs_path, resolved.display, snapshot, fd=fd)
            except OSError as exc:
                if snapshot is None:
                    raise PathRefused(f"cannot read {resolved.display}: {exc.strerror or exc}") from None
                # The listing is still true; only this sighting is not kept (a full state dir).
                warnings = (f"the version {resolved.display} holds now is not recorded in the history: "
                            f"{os_error(exc, f'the state dir ({store.root})', 'the history is unchanged').message}",)
            finally:
                os.close(fd)
        entries = tuple(reversed(store.entries(resolved.abs_path)))
        available = frozenset(v for v in {e.version for e in entries} if store.objects.has(v))
    return VersionHistory(resolved.display, snapshot.version if snapshot else None, entries, available, warnings)
