"""``history PATH``: the versions of one memory file kept in the history, newest first."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import DiskFull, PathRefused, StateDirError, ThroughALink
from ..files.read import open_resolved
from ..wire import key
from .placing import logged_in, resolve_writable
from .removals import see_removal
from .store import HistoryStore, snapshot_fd
from .versions import Entry, iso_time

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class ListedVersion:
    version: str
    time: str  # iso_time
    size: int
    origin: str  # one of versions.ORIGINS
    agent: str | None  # who wrote or restored it; None for an outside edit
    available: bool  # its bytes are still stored (restore can bring it back)
    current: bool  # the file holds it now (the entry logged last only)

    JSON_DERIVED: ClassVar = ("hash",)

    @property
    def hash(self) -> str:
        """``version`` again, under the name the issue gave it."""
        return self.version


@dataclass(frozen=True)
class VersionHistory:
    path: str
    current: str | None = key("currentVersion")  # the version the file holds now; None when it does not exist
    versions: tuple[ListedVersion, ...] = key()  # newest first
    warnings: tuple[str, ...] = key(omit=lambda h: not h.warnings, default=())


def _listed(logged: list[Entry], current: str | None, available: frozenset[str]) -> tuple[ListedVersion, ...]:
    """Newest first by time, as `log` lists them (the logged order among equal times): an import logs
    the archive's versions, with their own earlier times, after what the path's log held here. The
    current one is the last logged (a sighting of the file now), wherever its time puts it."""
    order = sorted(range(len(logged)), key=lambda i: (logged[i].time, i), reverse=True)
    last = len(logged) - 1
    return tuple(ListedVersion(e.version, iso_time(e.time), e.size, e.origin, e.agent, e.version in available,
                               e.version == current and i == last) for i in order for e in (logged[i],))


def file_history(settings: Settings, path: str) -> VersionHistory:
    """List the versions of ``path``; the file as it is now is recorded first (a sighting)."""
    store = HistoryStore.for_settings(settings)
    try:
        resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    except ThroughALink as refused:
        return _recorded_only(store, refused.abs_path, refused.display, refused)
    warnings: tuple[str, ...] = ()
    try:
        opened = open_resolved(resolved)
    except PathRefused as refused:  # a folder, a FIFO, a file it may not read: there now
        return _recorded_only(store, resolved.abs_path, resolved.display, refused)
    snapshot = None
    if opened is not None:
        fd = opened[0]
        try:
            snapshot = snapshot_fd(fd)
            with store.lock():
                store.observe(resolved.abs_path, resolved.display, snapshot, fd=fd)
        except OSError as exc:
            raise PathRefused(f"cannot read {resolved.display}: {exc.strerror or exc}") from None
        except (DiskFull, StateDirError) as exc:
            # The listing is still true; only this sighting is not kept (a full state dir).
            warnings = (f"the version {resolved.display} holds now is not recorded in the history: {exc.message}",)
        finally:
            os.close(fd)
    else:
        try:
            see_removal(store, resolved.abs_path, resolved.display)  # deleted by hand: found gone now
        except (DiskFull, StateDirError) as exc:
            warnings = (f"the removal of {resolved.display} is not recorded in the history: {exc.message}",)
    entries = store.entries(resolved.abs_path)
    if snapshot is not None and any(e.version == snapshot.version for e in entries):
        warnings = ()  # recorded already (a read-only state dir refused only the sighting's time)
    return _history(store, entries, resolved.display, snapshot.version if snapshot else None, warnings)


def _history(store: HistoryStore, entries: list[Entry], display: str, current: str | None,
             warnings: tuple[str, ...]) -> VersionHistory:
    available = frozenset(v for v in {e.version for e in entries} if store.objects.has(v))
    return VersionHistory(display, current, _listed(entries, current, available), warnings)


def _recorded_only(store: HistoryStore, abs_path: str, display: str, refused: PathRefused) -> VersionHistory:
    """The versions recorded of a memory file whose name now holds what is not read (a folder, a
    symlink, a FIFO): listed from the history alone, nothing read there (the refusal stands where
    nothing is recorded). A note replaced so was found by `log` only."""
    entries = store.entries(abs_path)
    if not entries:
        raise refused
    said = refused.message.removeprefix("refused: ")
    return _history(store, entries, display, None, (f"nothing was read at {display} ({said}): its recorded versions are listed",))
