"""Whether a ``watch`` runs for an agent: a lock file it holds for as long as it runs.

A second ``watch`` for the same agent refuses to start; a writer can leave the index update
to the running watch (``running_watch``). The kernel drops the lock when the process dies.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import xxhash

from ..errors import LockTimeout, UsageError
from ..fsutil.lock import FileLock, lock_holder
from ..index.collections import sanitize

if TYPE_CHECKING:
    from ..settings import Settings


def presence_path(settings: Settings) -> str:
    key = xxhash.xxh3_64_hexdigest(settings.agent.encode("utf-8"))[:8]
    return os.path.join(str(settings.data_dir), "watch", f"watch-{sanitize(settings.agent)}-{key}.lock")


def hold_presence(settings: Settings) -> FileLock:
    """Take the agent's watch lock; raises UsageError naming the pid of a watch already running."""
    lock = FileLock(presence_path(settings), timeout=0, what=f"watch for agent {settings.agent}")
    try:
        lock.acquire()
    except LockTimeout:
        raise UsageError(
            f"a watch for agent {settings.agent} is already running in this workspace (pid {lock.holder_pid()}); "
            "it keeps the index up to date: no second one is needed"
        ) from None
    return lock


def running_watch(settings: Settings) -> str | None:
    """The pid of the watch running for ``settings.agent`` in this workspace, or None."""
    return lock_holder(presence_path(settings))
