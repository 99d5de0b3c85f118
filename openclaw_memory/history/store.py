"""The version store: objects and per-path logs behind one lock, and "observe a file".

Layout under ``<data_dir>/history/``: ``objects/`` (content-addressed, compressed),
``logs/`` (one version log per path), ``reads/`` (what each agent read or wrote,
see :mod:`.states`) and ``lock``. Every change to any of them happens while the
lock is held, so concurrent reads, writes and restores of one workspace never
interleave their check-then-act steps.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, NamedTuple

from ..errors import StateDamaged, UsageError
from ..fsutil.hashing import hash_open_file
from ..fsutil.lock import FileLock
from ..fsutil.safeopen import open_regular_in_roots
from ..settings import HistorySettings
from .objects import ObjectStore
from .versions import EXTERNAL_EDIT, Entry, VersionLog, short

if TYPE_CHECKING:
    from ..settings import Settings

LOCK_TIMEOUT_S = 10.0
MIN_PREFIX = 8
_HEX = re.compile(r"^[0-9a-f]+$")


class FileVersion(NamedTuple):
    """A file's version as hashed from one open file."""

    version: str
    size: int


class HistoryStore:
    """One workspace's version history (shared by all agents)."""

    def __init__(self, data_dir, config: HistorySettings | None = None, roots: tuple[str, ...] = ()):
        self.config = config or HistorySettings()  # [history]: keep_per_path, max_bytes (checked by settings)
        # The allowed roots (workspace, extra paths): a file is only ever opened from one of them.
        self.roots = tuple(os.fspath(r) for r in roots)
        self.root = os.path.join(os.fspath(data_dir), "history")
        self.objects = ObjectStore(os.path.join(self.root, "objects"), self.config.max_bytes)
        self.log = VersionLog(os.path.join(self.root, "logs"))

    @classmethod
    def for_settings(cls, settings: Settings) -> HistoryStore:
        return cls(settings.data_dir, settings.history, (str(settings.workspace), *settings.extra_paths))

    def lock(self) -> FileLock:
        return FileLock(os.path.join(self.root, "lock"), timeout=LOCK_TIMEOUT_S, what="the memory files of this workspace (a write or history update)")

    def record(self, abs_path: str, display: str, version: str, size: int, origin: str, agent: str | None) -> Entry:
        """Log a version of ``abs_path`` (store its bytes first, when they fit), then apply the limits."""
        entry = Entry(version, time.time(), size, origin, agent)
        dropped = self.log.append(abs_path, display, entry, self.config.keep_per_path)
        if dropped:
            unreferenced = {e.version for e in dropped} - self.log.all_versions()
            self.objects.remove(unreferenced)
        self.objects.evict(keep=frozenset({version}))
        return entry

    def observe(self, abs_path: str, display: str, snapshot: FileVersion, *, fd: int | None = None, data: bytes | None = None,
                origin: str = EXTERNAL_EDIT) -> Entry | None:
        """A sighting of ``snapshot``: keep its bytes (from ``fd`` or ``data``) and log it when new.

        A version that differs from the path's latest entry is logged with ``origin`` (by default
        an outside edit; the first sighting of a file too). Bytes that no longer hash to the
        version (the file moved on) are not stored; the entry then shows as unavailable.
        """
        stored = False
        if self.objects.fits(snapshot.size) and not self.objects.touch(snapshot.version):
            if data is not None:
                stored = self.objects.put_bytes(data, snapshot.version) is not None
            elif fd is not None:
                stored = self.objects.put_fd(fd, snapshot.version) is not None
            else:
                stored = self._store_from_path(abs_path, snapshot.version)
        latest = self.log.latest(abs_path)
        if latest is not None and latest.version == snapshot.version:
            if stored:
                self.objects.evict(keep=frozenset({snapshot.version}))
            return None
        return self.record(abs_path, display, snapshot.version, snapshot.size, origin, None)

    def observe_file(self, abs_path: str, display: str, origin: str = EXTERNAL_EDIT) -> FileVersion | None:
        """Hash the file as it is now and record the sighting; None when it does not exist.

        Raises NotRegularFile (a symlink, FIFO...), FolderSwapped (a folder on the way was
        swapped) and PermissionError for the caller to word.
        """
        try:
            fd, _ = self.open_file(abs_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            snapshot = snapshot_fd(fd)
            self.observe(abs_path, display, snapshot, fd=fd, origin=origin)
        finally:
            os.close(fd)
        return snapshot

    def entries(self, abs_path: str) -> list[Entry]:
        return self.log.entries(abs_path)

    def check_log(self, abs_path: str, display: str) -> None:
        """Raise StateDamaged, naming ``display``, when the path's history log cannot be read."""
        log = self.log.log_path(abs_path)
        reason = self.log.damage(log)
        if reason is not None:
            raise StateDamaged(
                f"the history of {display} ({log}) is damaged ({reason}); "
                "`openclaw-memory doctor --fix` sets it aside and starts a new log"
            )

    def resolve_prefix(self, abs_path: str, display: str, prefix: str, also: tuple[str, ...] = ()) -> str:
        """The one version of ``abs_path`` (its history, plus ``also``) that starts with ``prefix``."""
        wanted = check_prefix(prefix)
        also_known = {v for v in also if v}
        try:
            known = {e.version for e in self.entries(abs_path)} | also_known
        except StateDamaged:
            if not any(v.startswith(wanted) for v in also_known):
                raise
            known = also_known  # the version asked for is the file's own: no need of the log
        matches = sorted(v for v in known if v.startswith(wanted))
        if not matches:
            raise UsageError(f"no version of {display} starts with {wanted} (see `openclaw-memory history {display}`)")
        if len(matches) > 1:
            raise UsageError(
                f"version prefix {wanted} is ambiguous for {display}: it matches "
                + ", ".join(short(v) for v in matches) + "; give more characters"
            )
        return matches[0]

    def open_file(self, abs_path: str) -> tuple[int, os.stat_result]:
        """Open a memory file from the descriptor of the allowed root that holds it, never by its whole path."""
        return open_regular_in_roots(self.roots, abs_path)

    def _store_from_path(self, abs_path: str, version: str) -> bool:
        try:
            fd, _ = self.open_file(abs_path)
        except OSError:
            return False
        try:
            return self.objects.put_fd(fd, version) is not None
        finally:
            os.close(fd)


def check_prefix(prefix: str) -> str:
    """A version prefix as given to ``--expect`` or ``restore``: at least 8 hex characters."""
    wanted = (prefix or "").strip().lower()
    if len(wanted) < MIN_PREFIX or len(wanted) > 32 or not _HEX.match(wanted):
        raise UsageError(
            f"a version is {MIN_PREFIX} to 32 hexadecimal characters (a prefix of the xxh3_128 hash "
            f"shown by `state --json` or `history`), not {prefix!r}"
        )
    return wanted


def snapshot_fd(fd: int) -> FileVersion:
    """Hash the whole file open on ``fd`` from its start (streamed)."""
    os.lseek(fd, 0, os.SEEK_SET)
    version = hash_open_file(fd)
    return FileVersion(version, os.lseek(fd, 0, os.SEEK_CUR))
