"""Writes, restores, moves and removals as the memory makes them: the file (:mod:`openclaw_memory.history.writes`),
then the agent's index brought up to date; declared in :class:`~openclaw_memory.memory.base.Memory`."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from ..errors import MemoryToolError, describe_os_error, finished_first
from ..history import writes

if TYPE_CHECKING:
    from ..history.guard import IndexUpdate, WriteResult
    from ..history.moves import MoveResult, RemoveResult
    from ..rollback.apply import RollbackResult
    from ..settings import Settings
    from ..types import ProgressCallback
    from .local import LocalMemory


def write(memory: LocalMemory, path: str, content: bytes | str | None = None, append: bytes | str | None = None,
          expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
          tool: str = "write", progress: ProgressCallback | None = None, replace_unread: bool = False) -> WriteResult:
    return writes.write(memory.settings, path, content, append, expect, idempotency_key, tool,
                        after=partial(after_write, memory, update_index=update_index, progress=progress),
                        replace_unread=replace_unread)


def restore(memory: LocalMemory, path: str, version: str | None = None, last: bool = False,
            update_index: bool = True) -> WriteResult:
    return writes.restore(memory.settings, path, version, last=last,
                          after=partial(after_write, memory, update_index=update_index))


def move(memory: LocalMemory, source: str, destination: str, force: bool = False, expect: str | None = None,
         update_index: bool = True, update_links: bool = False) -> MoveResult:
    from ..history import moves
    from ..links import pending

    # With --update-links, the move and its rewrites are one journaled operation (links.pending).
    result = pending.move(memory.settings, source, destination, update_links,
                          lambda links: moves.move_memory_file(memory.settings, source, destination, force=force,
                                                               expect=expect, links=links))
    paths = (result.source, result.path, *(p for p in result.links_updated if p != result.path))
    return replace(result, index=index_update(memory, update_index=update_index, paths=paths))


def remove(memory: LocalMemory, path: str, force: bool = False, expect: str | None = None,
           update_index: bool = True) -> RemoveResult:
    from ..history.moves import remove_memory_file
    from ..history.store import HistoryStore
    from ..links.pending import finish_pending_rewrites

    with HistoryStore.for_settings(memory.settings).write_lock():
        earlier = finish_pending_rewrites(memory.settings)  # what a killed mv (links and all), rm or import left, first
        with finished_first(earlier[1] if earlier else None):
            result = remove_memory_file(memory.settings, path, force=force, expect=expect)
    if earlier:
        result = replace(result, warnings=(earlier[1], *result.warnings))
    return replace(result, index=index_update(memory, update_index=update_index, paths=(result.path,)))


def restore_all(memory: LocalMemory, to: str, dry_run: bool = False, force: bool = False,
                update_index: bool = True) -> RollbackResult:
    from ..rollback.apply import rollback

    result = rollback(memory.settings, to, dry_run=dry_run, force=force)
    if dry_run:
        return result
    return replace(result, index=index_update(memory, update_index=update_index, paths=result.changed_paths))


def after_write(memory: LocalMemory, result: WriteResult, *, update_index: bool,
                progress: ProgressCallback | None = None) -> WriteResult:
    return replace(result, index=index_update(memory, update_index=update_index, progress=progress, paths=(result.path,)))


def index_update(memory: LocalMemory, *, update_index: bool, progress: ProgressCallback | None = None,
                 paths: tuple[str, ...] | None = None) -> IndexUpdate:
    """The agent's index brought up to date after a change of its files, when it has one, unless a
    running watch does that. With ``paths`` (the files changed, workspace-relative) only those, at
    a cost that does not grow with the memory (other stale files are the next ``index``'s or
    search's); without, every stale file of the agent. A moved file's chunks keep their vectors:
    the sync looks each up by its chunk hash before embedding."""
    from ..history.guard import IndexUpdate
    from ..index.operations import index_written
    from ..index.pool import Stopping
    from ..watch.presence import running_watch

    settings = memory.settings
    if not update_index:
        return IndexUpdate(False, "skipped (--no-index)")
    watcher = running_watch(settings)
    if watcher is not None:  # it has the model loaded and picks the change up within a second
        return IndexUpdate(False, f"the running watch (pid {watcher}) updates it")
    try:  # the files are changed by now: what stops the update is said as such, never as the change's failure
        if not _has_index(settings):
            return IndexUpdate(False, f"no index for agent {settings.agent}")
        summary = memory.index(progress=progress) if paths is None else index_written(memory, paths, progress)
    except (MemoryToolError, OSError) as exc:  # (an OSError: what is at the index's folders is not a folder)
        said = exc.message if isinstance(exc, MemoryToolError) else describe_os_error(exc)
        return IndexUpdate(False, f"index not updated: {said}", failed=True)
    except Stopping:  # the service was asked to stop: the change is made, and its result is the answer
        return IndexUpdate(False, "index not updated: the memory service is stopping; the next `openclaw-memory index` "
                                  "or search catches up", failed=True)
    return IndexUpdate(True, sync=summary)


def _has_index(settings: Settings) -> bool:
    from ..index.collections import resolve_collections
    from ..index.manifest import manifest_serial

    return any(manifest_serial(settings.data_dir, c.name) is not None for c in resolve_collections(settings))
