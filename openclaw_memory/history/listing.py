"""``history PATH``: the versions of one memory file kept in the history, newest first."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PathRefused
from ..files.read import resolve_memory_path
from ..fsutil.safeopen import NotRegularFile
from .store import HistoryStore
from .versions import Entry


@dataclass(frozen=True)
class VersionHistory:
    path: str
    current: str | None  # the version the file holds now; None when it does not exist
    entries: tuple[Entry, ...]  # newest first
    available: frozenset[str]  # versions whose bytes are still stored

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "currentVersion": self.current,
            "versions": [
                e.to_json(available=e.version in self.available, current=e.version == self.current and i == 0)
                for i, e in enumerate(self.entries)
            ],
        }


def file_history(settings, path: str) -> VersionHistory:
    """List the versions of ``path``; the file as it is now is recorded first (a sighting)."""
    resolved = resolve_memory_path(path, str(settings.workspace), settings.extra_paths)
    store = HistoryStore.for_settings(settings)
    with store.lock():
        store.check_log(resolved.abs_path, resolved.display)  # before the sighting would set it aside
        try:
            snapshot = store.observe_file(resolved.abs_path, resolved.display)
        except NotRegularFile as exc:
            raise PathRefused(f"refused: {resolved.display}: {exc.strerror}") from None
        except PermissionError:
            raise PathRefused(f"cannot read {resolved.display}: permission denied") from None
        entries = tuple(reversed(store.entries(resolved.abs_path)))
        available = frozenset(v for v in {e.version for e in entries} if store.objects.has(v))
    return VersionHistory(resolved.display, snapshot.version if snapshot else None, entries, available)
