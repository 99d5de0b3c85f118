"""Writes and restores as the memory makes them: the file (:mod:`openclaw_memory.history.writes`),
then the agent's index brought up to date; declared in :class:`~openclaw_memory.memory.base.Memory`."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from ..errors import MemoryToolError
from ..history import writes

if TYPE_CHECKING:
    from ..history.guard import WriteResult
    from ..settings import Settings
    from ..types import ProgressCallback
    from .local import LocalMemory


def write(memory: LocalMemory, path: str, content: bytes | str | None = None, append: bytes | str | None = None,
          expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
          tool: str = "write", progress: ProgressCallback | None = None) -> WriteResult:
    return writes.write(memory.settings, path, content, append, expect, idempotency_key, tool,
                        after=partial(after_write, memory, update_index=update_index, progress=progress))


def restore(memory: LocalMemory, path: str, version: str, update_index: bool = True) -> WriteResult:
    return writes.restore(memory.settings, path, version, after=partial(after_write, memory, update_index=update_index))


def after_write(memory: LocalMemory, result: WriteResult, *, update_index: bool,
                progress: ProgressCallback | None = None) -> WriteResult:
    """The agent's index brought up to date after a write, when it has one (every stale file of
    the agent, not only the one written), unless a running watch does that."""
    from ..history.guard import IndexUpdate
    from ..watch.presence import running_watch

    def done(update: IndexUpdate) -> WriteResult:
        return replace(result, index=update)

    settings = memory.settings
    if not update_index:
        return done(IndexUpdate(False, "skipped (--no-index)"))
    watcher = running_watch(settings)
    if watcher is not None:  # it has the model loaded and picks the write up within a second
        return done(IndexUpdate(False, f"the running watch (pid {watcher}) updates it"))
    if not _has_index(settings):
        return done(IndexUpdate(False, f"no index for agent {settings.agent}"))
    try:
        summary = memory.index(progress=progress)
    except MemoryToolError as exc:
        return done(IndexUpdate(False, f"index not updated: {exc.message}", failed=True))
    return done(IndexUpdate(True, sync=summary))


def _has_index(settings: Settings) -> bool:
    from ..index.collections import resolve_collections
    from ..index.manifest import manifest_serial

    return any(manifest_serial(settings.data_dir, c.name) is not None for c in resolve_collections(settings))
