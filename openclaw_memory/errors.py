"""Typed exceptions whose messages are written for the user.

Every error the product raises on purpose derives from :class:`MemoryToolError`
and carries the exit status the CLI maps it to, so the mapping lives in one place.
"""

from __future__ import annotations


class MemoryToolError(Exception):
    """Base class: a failure the user can act on; never shown as a traceback."""

    exit_code = 1

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UsageError(MemoryToolError):
    """Bad flags, arguments or settings."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file cannot be parsed or holds a value of the wrong type."""


class WorkspaceError(UsageError):
    """The workspace is missing, not a folder, or unreadable."""


class PathRefused(UsageError):
    """A path is not a memory path, not Markdown, a symlink, or escapes the workspace."""


class StateDirError(UsageError):
    """The state dir (or something this project keeps in it) cannot be created or written."""


class LockTimeout(MemoryToolError):
    """Another process holds the lock this command needs."""

    exit_code = 2


class WriteBlocked(MemoryToolError):
    """A guarded write was refused because the file changed since the agent read it."""

    exit_code = 3


class IndexMissing(MemoryToolError):
    """A search or status needs an index that has not been built yet."""

    exit_code = 1


class MissingExtra(MemoryToolError):
    """A command needs an optional part of the package that is not installed."""

    exit_code = 1


class PathChanged(PathRefused):
    """A folder on a memory path was swapped (for a symlink, say) while the command used it."""


class DiskFull(MemoryToolError):
    """No space left (or quota exceeded) where the command had to write; it changed nothing."""

    exit_code = 1


_NO_SPACE = (28, 122)  # ENOSPC, EDQUOT


def is_no_space(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in _NO_SPACE


def disk_full(exc: OSError, where: str, outcome: str = "nothing was changed") -> DiskFull:
    """The message for a write that ran out of space in ``where`` (a folder the user can find)."""
    what = "the disk quota is exceeded" if exc.errno == 122 else "the disk is full"
    return DiskFull(f"{what}: no space left to write in {where}; {outcome}. Free some space and try again.")


def os_error(exc: OSError, where: str, outcome: str = "nothing was changed") -> MemoryToolError:
    """A typed error for an OS failure (disk full, read-only, I/O error...) while writing ``where``."""
    if is_no_space(exc):
        return disk_full(exc, where, outcome)
    reason = exc.strerror or str(exc)
    return MemoryToolError(f"cannot write in {where}: {reason}; {outcome}.")


def describe_os_error(exc: OSError) -> str:
    """One line for an OS failure that reached the command line unworded (never a traceback)."""
    where = f" ({exc.filename})" if exc.filename else ""
    if is_no_space(exc):
        return f"the disk is full{where}: free some space and run the command again"
    return f"{exc.strerror or exc}{where}"


class StateDamaged(MemoryToolError):
    """A file openclaw-memory keeps in the state dir is damaged; ``doctor --fix`` repairs it."""

    exit_code = 1


class IndexDamaged(StateDamaged):
    """An index shard cannot be loaded or does not hold what its manifest says."""
