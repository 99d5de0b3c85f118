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


class StateDamaged(MemoryToolError):
    """A file openclaw-memory keeps in the state dir is damaged; ``doctor --fix`` repairs it."""

    exit_code = 1


class IndexDamaged(StateDamaged):
    """An index shard cannot be loaded or does not hold what its manifest says."""


class DiskFull(MemoryToolError):
    """No space left where this command had to write; it changed nothing."""

    exit_code = 1
