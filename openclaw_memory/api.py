"""The memory's operations on files and history, computed in this process.

:class:`~openclaw_memory.memory.local.LocalMemory` calls these (agents and plugins use
:func:`openclaw_memory.open_memory` instead). Every function takes resolved
:class:`~openclaw_memory.settings.Settings` and returns plain data classes; nothing here prints.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .errors import DiskFull, MemoryToolError, UsageError, is_no_space
from .files.read import ReadResult, read_memory_file
from .files.scan import ScanResult, scan_workspace
from .settings import Settings

if TYPE_CHECKING:
    from .history.diff import DiffRead
    from .history.guard import WriteResult
    from .history.listing import VersionHistory
    from .history.report import StateReport
    from .index.sync import ProgressCallback, SyncSummary
    from .prompt import PromptSection


def list_memory_files(settings: Settings) -> ScanResult:
    """The workspace's memory files in OpenClaw's order, with what was skipped and why."""
    return scan_workspace(settings)


def read_memory(
    settings: Settings,
    path: str,
    *,
    from_line: int = 1,
    lines: int | None = None,
    max_chars: int | None = None,
) -> ReadResult:
    """A paged read of one memory file (``memory_get``).

    The whole file's version is recorded as read by ``settings.agent`` (the
    stale-write guard and ``read --diff`` compare against it); reading a missing
    file clears the record, so the agent may then create it.
    """
    from .history.states import record_read
    from .history.store import FileVersion

    result = read_memory_file(
        path,
        str(settings.workspace),
        extra_paths=settings.extra_paths,
        from_line=from_line,
        lines=settings.read.default_lines if lines is None else lines,
        max_chars=settings.read.max_chars if max_chars is None else max_chars,
    )
    version: FileVersion | None = None  # recorded as None: the agent found the file missing
    if not result.missing:
        if result.version is None or result.size is None:
            return result  # changed during the read: nothing reliable to record
        version = FileVersion(result.version, result.size)
    try:
        record_read(settings, result.abs_path, result.path, version)
    except (MemoryToolError, OSError) as exc:
        # The read itself succeeded (a state dir that is full, read-only, busy or damaged only costs
        # the record): without one the guard makes the agent read again before writing.
        reason = (
            f"the disk is full in the state dir ({settings.data_dir})" if isinstance(exc, DiskFull) or is_no_space(exc)
            else exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        )
        return dataclasses.replace(result, warnings=result.warnings + (f"read not recorded for the write guard: {reason}",))
    return result


def read_memory_diff(
    settings: Settings,
    path: str,
    *,
    from_line: int = 1,
    lines: int | None = None,
    max_chars: int | None = None,
) -> DiffRead:
    """What changed since ``settings.agent`` last read the file (a unified diff); counts as a read.

    ``mode`` is ``diff``, ``unchanged``, ``full`` (no earlier version to compare: the
    paged read shaped by ``from_line``/``lines``/``max_chars`` instead) or ``missing``.
    """
    from .history.diff import read_diff

    return read_diff(settings, path, from_line=from_line, lines=lines, max_chars=max_chars)


def write_memory(
    settings: Settings,
    path: str,
    *,
    content: bytes | str | None = None,
    append: bytes | str | None = None,
    expect: str | None = None,
    update_index: bool = True,
    idempotency_key: str | None = None,
    tool: str = "write",
    sync: Callable[[], SyncSummary] | None = None,
    progress: ProgressCallback | None = None,
    index_kept_by: Callable[[Settings], str | None] | None = None,
) -> WriteResult:
    """Write a memory file, guarded: blocked (WriteBlocked, exit 3) when it changed since this agent read it.

    Give ``content`` (the whole new file) or ``append`` (text added on its own line).
    ``expect`` (a version prefix of at least 8 hex characters) makes it a strict
    compare-and-swap on that version. When an index exists for the agent it is
    updated afterwards (skip with ``update_index=False``; ``sync`` runs the update in an index
    the caller keeps open; ``index_kept_by`` names who else keeps it up to date, when someone does:
    then the update is left to them).

    A write with the ``idempotency_key`` of an earlier one (default
    ``<agent>.<tool>.<hash of session, path, mode and content>``) made less than 24 hours ago
    writes nothing and returns that first result (``replayed``) while the file still holds what it
    made: a retry is harmless. A key reused for another write is refused (UsageError).
    """
    from .history.guard import current_file_version, write_memory_file
    from .history.idempotency import IdempotencyStore, binding, check_key, default_key, describe, reach
    from .history.store import HistoryStore

    data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
    added = append.encode("utf-8", "surrogateescape") if isinstance(append, str) else append
    mode, body = ("append", added or b"") if added is not None else ("replace", data or b"")
    bound = binding(settings.agent, settings.session, path, mode, body)
    if idempotency_key is None:
        key = default_key(settings.agent, tool, path, mode, body, settings.session)
    else:
        key = check_key(idempotency_key)
    keys = IdempotencyStore(settings.data_dir)
    with HistoryStore.for_settings(settings).write_lock():
        found = keys.get(key)
        if found is not None:
            first, first_bound = found
            if first_bound is not None and first_bound != bound:
                raise UsageError(
                    f"the idempotency key {key!r} was first used for {describe(first_bound, bound)}; a key stands "
                    "for one write: give this write a new key (nothing was written)"
                )
            if current_file_version(settings, path) == first.version:
                return first
            # The file no longer holds what that write made (restored or edited since): write it again.
        when = time.time()

        def record_first(to_be: WriteResult) -> None:
            # In the same step as the write: before the rename, with the version it will make. A
            # crash after the rename leaves the key, and the retry finds the file at that version.
            keys.put(key, to_be, when, bound)
            reach("key-recorded")

        result = write_memory_file(settings, path, content=data, append=append, expect=expect, before_swap=record_first)
        reach("swapped")
    keys.prune()
    result = _after_write(settings, result, update_index, sync, progress, index_kept_by)
    try:
        keys.put(key, result, when, bound)  # a later replay shows what the index update did
    except MemoryToolError:
        pass  # the key recorded before the rename stands
    return result


def restore(settings: Settings, path: str, version: str, *, update_index: bool = True,
            sync: Callable[[], SyncSummary] | None = None,
            index_kept_by: Callable[[Settings], str | None] | None = None) -> WriteResult:
    """Restore an earlier version of a memory file (unique prefix, at least 8 hex characters), atomically.

    The current version is recorded in the history first, so the restore can be undone.
    ``sync`` and ``index_kept_by`` as for :func:`write_memory`.
    """
    from .history.guard import restore_file_version

    result = restore_file_version(settings, path, version)
    if not result.changed:
        from .history.guard import IndexUpdate

        return dataclasses.replace(result, index=IndexUpdate(False, "nothing changed"))
    return _after_write(settings, result, update_index, sync, index_kept_by=index_kept_by)


def file_history(settings: Settings, path: str) -> VersionHistory:
    """Every version of a memory file kept in the history, newest first (the file now is recorded first)."""
    from .history.listing import file_history as listing

    return listing(settings, path)


def file_states(settings: Settings) -> StateReport:
    """The state of every memory file for ``settings.agent``: read_fresh, read_stale, discovered_unread, written_unread."""
    from .history.report import file_states as compute

    return compute(settings)


def _after_write(settings: Settings, result: WriteResult, update_index: bool,
                 sync: Callable[[], SyncSummary] | None = None, progress: ProgressCallback | None = None,
                 index_kept_by: Callable[[Settings], str | None] | None = None) -> WriteResult:
    """Bring the agent's index up to date after a write, when it has one.

    ``sync`` runs the update in an index the caller keeps open (the MCP server's); by default a
    :class:`~openclaw_memory.index.api.MemoryIndex` is opened for it, reporting to ``progress``
    (every stale file of the agent is brought up to date, not only the one written).
    """
    from .history.guard import IndexUpdate

    def done(update: IndexUpdate) -> WriteResult:
        return dataclasses.replace(result, index=update)

    if not update_index:
        return done(IndexUpdate(False, "skipped (--no-index)"))
    keeper = index_kept_by(settings) if index_kept_by is not None else None
    if keeper is not None:
        return done(IndexUpdate(False, keeper))
    from .index.collections import resolve_collections
    from .index.manifest import load_manifest

    if not any(load_manifest(settings.data_dir, c.name) is not None for c in resolve_collections(settings)):
        return done(IndexUpdate(False, f"no index for agent {settings.agent}"))
    try:
        if sync is not None:
            summary = sync()
        else:
            from .index.api import MemoryIndex

            with MemoryIndex(settings) as index:
                summary = index.sync(progress=progress)
    except MemoryToolError as exc:
        return done(IndexUpdate(False, f"index not updated: {exc.message}", failed=True))
    return done(IndexUpdate(True, sync=summary))


def build_prompt(settings: Settings, *, today: dt.date | None = None, consume: bool = True) -> PromptSection:
    """The startup-prompt memory section; a pending watchdog checkpoint is included once, then consumed."""
    from .prompt import build_prompt_section
    from .watchdog.checkpoint import consume_checkpoint, read_checkpoint

    unread = None
    try:
        pending = read_checkpoint(settings.data_dir)
    except MemoryToolError as exc:  # the memory files still make a prompt; the news waits for the repair
        pending, unread = None, f"the pending watchdog checkpoint cannot be read: {exc.message}"
    checkpoint = pending.text if pending is not None else None
    section = build_prompt_section(
        list_memory_files(settings),
        today=today,
        file_cap=settings.prompt.file_chars,
        total_cap=settings.prompt.total_chars,
        startup=settings.prompt.startup,
        checkpoint=checkpoint,
    )
    if unread is not None:
        section.warnings.append(unread)
    if pending is not None and consume:
        consume_checkpoint(settings.data_dir, pending.last)
    return section
