"""The agent's index lock: held by whoever syncs the agent's index (an `index` run, the service's
sync), and asked who holds it by what only reports (status, doctor, search): a module of its own, so
that those do not import the sync machinery (index.sync: 26 ms of a plain doctor's start)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from ..fsutil.lock import FileLock, lock_holder
from .collections import sanitize

if TYPE_CHECKING:
    from ..settings import Settings


def agent_lock(settings: Settings, timeout: float) -> FileLock:
    key = hashlib.sha256(settings.agent.encode()).hexdigest()[:8]
    path = settings.data_dir / "index" / "locks" / f"sync-{sanitize(settings.agent)}-{key}.lock"
    return FileLock(str(path), timeout=timeout, what=f"the index of agent {settings.agent}")


def index_builder(settings: Settings) -> str | None:
    """The pid of the process syncing this agent's index right now (an `index` run, the service's
    sync: it holds the agent's index lock), else None; takes nothing. What tells a run going on
    from a killed one, whose dirty mark is the same (search, status, doctor)."""
    return lock_holder(agent_lock(settings, 0).path)
