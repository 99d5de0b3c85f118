"""The one place that chooses how an agent's memory is served: here, or by the workspace's service."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..settings import Settings
    from .base import Memory


def _stderr(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")
    sys.stderr.flush()


def open_memory(settings: Settings, *, notice: Callable[[str], None] = _stderr, start_service: bool = False,
                in_process: bool = False, shard_idle_s: float | None = None) -> Memory:
    """The agent's memory: the workspace's service when one may answer, else this process.

    ``notice`` hears, in one line each, why the service could not answer (then this process
    does) and that another process holds a lock this one waits for. ``start_service`` starts the
    service in the background first when none runs (``mcp --serve``); ``in_process`` never asks it.
    Like qdrant-client's constructor, the choice is made here once; the memory only delegates.
    ``shard_idle_s``: how long the index's shards stay open here after a call (default
    ``index.pool.IN_PROCESS_SHARD_IDLE_S``: a warm search does not reopen them); 0 closes them after
    every call, for a process of one call (the CLI) or one that runs beside others (an MCP server).
    """
    from ..fsutil.private import check_data_dir
    from ..index.pool import IN_PROCESS_SHARD_IDLE_S, IndexPool
    from ..service_files import service_disabled, service_may_run, unreachable_service
    from .local import LocalMemory

    def on_wait(what: str, pid: str) -> None:
        if pid == str(os.getpid()):
            return  # another call of this same process (an MCP session's parallel writes): no news
        holder = f" (pid {pid})" if pid.isdigit() else ""
        notice(f"{what} is in use by another openclaw-memory process{holder}; waiting")

    check_data_dir(settings.state_dir, settings.data_dir)  # before its socket is trusted or a file written in it
    idle = IN_PROCESS_SHARD_IDLE_S if shard_idle_s is None else shard_idle_s
    def share_as() -> str:
        """Shared with every other memory of this process on these settings (the service's key, and
        the ranking openclaw.json gives the index): two memories of one workspace read one index,
        never wait for each other's shard locks."""
        from .protocol import settings_key

        return f"{settings_key(settings)} {json.dumps(settings.openclaw_hybrid, sort_keys=True, default=str)}"

    pool = IndexPool(on_wait=on_wait, shard_idle_s=idle, janitor=True, share_as=share_as)
    if start_service and not in_process:
        from .launch import ensure_service

        ensure_service(settings, notice=notice)
    if in_process or not service_may_run(settings):
        orphan = None if in_process or service_disabled() else unreachable_service(settings)
        if orphan is not None:  # a service runs that nothing can reach: say so, not silently in-process
            from .client import unreachable_note

            notice(unreachable_note(settings, orphan))
        return LocalMemory(settings, pool)
    from .remote import ServiceMemory

    return ServiceMemory.connect(settings, pool, notice)
