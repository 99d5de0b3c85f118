"""Writes, restores, moves and removals as the memory makes them: the file (:mod:`openclaw_memory.history.writes`),
then the agent's index brought up to date; declared in :class:`~openclaw_memory.memory.base.Memory`."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING

from ..errors import LockTimeout, MemoryToolError, describe_os_error, finished_first
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
    from ..links.pending import finish_pending_rewrites, moved_links_said

    with HistoryStore.for_settings(memory.settings).write_lock():
        earlier = finish_pending_rewrites(memory.settings)  # what a killed mv (links and all), rm or import left, first
        with finished_first(earlier[1] if earlier else None):
            result = remove_memory_file(memory.settings, path, force=force, expect=expect)
    # A link that named the note and names another now (a note of its name elsewhere) is said;
    # worked out with the lock let go, as a move's are (links.pending.move says why that is safe).
    shifted = moved_links_said(memory.settings, result.path, None)
    warnings = (*((earlier[1],) if earlier else ()), *result.warnings, *shifted)
    return replace(result, warnings=warnings, index=index_update(memory, update_index=update_index, paths=(result.path,)))


def restore_all(memory: LocalMemory, to: str, dry_run: bool = False, force: bool = False,
                update_index: bool = True) -> RollbackResult:
    from ..rollback.apply import rollback

    result = rollback(memory.settings, to, dry_run=dry_run, force=force)
    if dry_run:
        return result
    return replace(result, index=index_update(memory, update_index=update_index, paths=result.changed_paths))


def after_write(memory: LocalMemory, result: WriteResult, *, update_index: bool,
                progress: ProgressCallback | None = None) -> WriteResult:
    """The index brought up to date, and the result told what the write did to the startup prompt
    (what the write's idempotency key keeps: a replay says it again)."""
    if capped := startup_cap_warnings(memory.settings, result):
        result = replace(result, warnings=(*result.warnings, *capped))
    return replace(result, index=index_update(memory, update_index=update_index, progress=progress, paths=(result.path,)))


def startup_cap_warnings(settings: Settings, result: WriteResult) -> tuple[str, ...]:
    """What a write (or restore) that left its file at ``result.size`` bytes does to the startup prompt OpenClaw gives
    the next session, where the file is one the prompt loads (:mod:`openclaw_memory.prompt`, whose
    rules these are): ``MEMORY.md`` or ``USER.md`` past the 2 MiB its loader reads is unreadable
    there (`[UNREADABLE: ...]` in its place, as `prompt` and doctor's prompt-file-too-large say),
    past its characters (bootstrapMaxChars, USER.md's own cap) cut; a daily note of the days the
    prelude quotes past startupContext.maxFileBytes is left out. The agent was told none of it."""
    from ..files.paths import MEMORY_DIR
    from ..prompt.bootstrap import USER_MAX_CHARS, file_limit, trim_bootstrap_content
    from ..prompt.loader import MAX_BOOTSTRAP_BYTES, MEMORY_FILES, UNREADABLE
    from ..prompt.loader import _read_text as read_bootstrap_text  # as the prompt reads it
    from ..prompt.startup import date_stamps

    name, size = result.path, result.size
    if result.abs_path != os.path.join(settings.workspace, name):  # another root's file (an extra path)
        return ()
    if name in MEMORY_FILES:
        if size > MAX_BOOTSTRAP_BYTES:
            return (f"{name} is now {size:,} bytes, over the {MAX_BOOTSTRAP_BYTES:,} bytes (2 MiB) OpenClaw reads of a "
                    f"startup file: from the next session on the agent sees `{UNREADABLE}` in its place, none of its "
                    "text (`openclaw-memory doctor`: prompt-file-too-large); move older details into notes under "
                    "memory/ (they stay searchable) until it is under 2 MiB",)
        limit = file_limit(name, settings.prompt.file_chars)
        if size <= limit:  # a UTF-16 unit takes a byte at least: no need to read it
            return ()
        got = read_bootstrap_text(str(settings.workspace), name)
        if not isinstance(got, tuple) or not trim_bootstrap_content(got[0], name, limit)[1]:
            return ()
        cap = (f"{name}'s own cap" if limit == USER_MAX_CHARS and limit < settings.prompt.file_chars
               else "bootstrapMaxChars, [prompt] file_chars")
        return (f"{name} is now over the {limit:,} characters OpenClaw puts of it into a session's startup prompt "
                f"({cap}): from the next session on the agent sees it truncated, its start and end around "
                f"`[...truncated, read {name} for full content...]` (not unreadable: the rest is read with "
                "memory_get); move details into notes under memory/ to keep it whole",)
    startup = settings.prompt.startup
    folder, _, note = name.partition("/")
    if (folder != MEMORY_DIR or "/" in note or not note.endswith(".md") or size <= startup.max_file_bytes
            or not startup.enabled):
        return ()
    stamps = date_stamps(dt.datetime.now(dt.UTC), startup.daily_memory_days, startup.user_timezone)
    if not any(note == f"{stamp}.md" or note.startswith(f"{stamp}-") for stamp in stamps):
        return ()
    return (f"{name} is now {size:,} bytes, over startupContext.maxFileBytes ({startup.max_file_bytes:,}): OpenClaw "
            "leaves it out of the daily notes a new session starts with (it stays searchable); write further notes "
            "of the day to a note of their own (memory/YYYY-MM-DD-<topic>.md)",)


def index_update(memory: LocalMemory, *, update_index: bool, progress: ProgressCallback | None = None,
                 paths: tuple[str, ...] | None = None) -> IndexUpdate:
    """The agent's index brought up to date after a change of its files, when it has one, unless a
    running watch does that. With ``paths`` (the files changed, workspace-relative) only those, at
    a cost that does not grow with the memory (other stale files are the next ``index``'s or
    search's); without, every stale file of the agent. A moved file's chunks keep their vectors:
    the sync looks each up by its chunk hash before embedding."""
    from ..history.guard import IndexUpdate
    from ..index.operations import index_written
    from ..signals import Interrupted, Stopping
    from ..watch.presence import running_watch
    from .local import held_by_the_service

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
    except LockTimeout as exc:  # the running service's hold is said as search says it, not "try again"
        said = (held_by_the_service(settings, exc, made=True) or exc).message
        return IndexUpdate(False, f"index not updated: {said}", failed=True)
    except (MemoryToolError, OSError) as exc:  # (an OSError: what is at the index's folders is not a folder)
        said = exc.message if isinstance(exc, MemoryToolError) else describe_os_error(exc)
        return IndexUpdate(False, f"index not updated: {said}", failed=True)
    except Stopping as exc:  # the service was asked to stop, or Ctrl-C: the change is made, and its result is the answer
        why = "stopped by Ctrl-C" if isinstance(exc, Interrupted) else "the memory service is stopping"
        return IndexUpdate(False, f"index not updated: {why}; the next `openclaw-memory index` or search catches up",
                           failed=True)
    return IndexUpdate(True, sync=summary)


def _has_index(settings: Settings) -> bool:
    from ..index.collections import resolve_collections
    from ..index.manifest import manifest_serial

    return any(manifest_serial(settings.data_dir, c.name) is not None for c in resolve_collections(settings))
