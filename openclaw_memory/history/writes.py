"""Writes as the memory makes them: guarded (:mod:`.guard`) and idempotent (:mod:`.idempotency`);
``after`` brings what depends on the file up to date (the memory's index: :mod:`openclaw_memory.memory.writes`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from .. import faults, signals
from ..errors import MemoryToolError, UsageError, finished_first, shown

if TYPE_CHECKING:
    from ..files.read import ResolvedPath
    from ..settings import Settings
    from .guard import WriteResult

WRITE_TOOLS = ("write", "memory_write")  # who made a write (its default idempotency key names it)


def write(settings: Settings, path: str, content: bytes | str | None = None, append: bytes | str | None = None,
          expect: str | None = None, idempotency_key: str | None = None, tool: str = "write",
          after: Callable[[WriteResult], WriteResult] = lambda result: result, replace_unread: bool = False) -> WriteResult:
    """The guarded write, made idempotent: a write with the key of an earlier one of the session
    (default ``<agent>.<tool>.<hash of session, path, mode and content>``) made less than 24 hours
    ago writes nothing and returns that first result (``replayed``) while the file still holds what
    it made and, for the default key, the session has not gone on since (:func:`_went_on_since`),
    when that write put it there; where it never did (killed before its exchange) and someone else
    made the same bytes, nothing is written and the answer says so, claiming nothing
    (:func:`~.replay.finish_replayed`); a key the session reuses for another write is refused."""
    from ..files.read import refuse_unnamable
    from .guard import checked_text, write_memory_file
    from .idempotency import IdempotencyStore, binding, check_key, default_key, describe
    from .placing import logged_in, resolve_writable
    from .replay import finish_replayed, still_holds
    from .store import FileVersion, HistoryStore

    refuse_unnamable(path)  # before the key is made of it, and of the tool and the text:
    if tool not in WRITE_TOOLS:
        raise UsageError(f"a write is made by the tool {' or '.join(WRITE_TOOLS)}, not {shown(tool)}")
    data, added = checked_text(content, append)  # a refused write never finds an earlier one's key
    mode, body = ("append", added) if added is not None else ("replace", data or b"")
    # The key and its binding name the file, not the spelling: a retry giving the absPath a write
    # answered, ./memory/a.md or a trailing space is the same write (it was appended again, and
    # with an explicit key refused as differing "in its path"). The common spelling is the display
    # path itself, so its keys are those earlier releases recorded.
    # once: the write uses it
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    named = resolved.display
    bound = binding(settings.agent, settings.session, named, mode, body)
    if idempotency_key is None:
        key = default_key(settings.agent, tool, named, mode, body, settings.session)
    else:
        key = check_key(idempotency_key)
    keys = IdempotencyStore(settings.data_dir, settings.agent, settings.session)
    with HistoryStore.for_settings(settings).write_lock(), finishing_first(settings, resolved) as first_done:
        faults.reach("write:locked")  # nothing made yet: a Ctrl-C here cancels the write
        found = keys.get(key)
        if found is not None:
            first, first_bound = found
            if first_bound is not None and first_bound != bound:
                raise UsageError(
                    f"the idempotency key {key!r} was first used for {describe(first_bound, bound)}; a key stands "
                    "for one write: give this write a new key (nothing was written)"
                )
            if (still_holds(settings, path, FileVersion(first.version, first.size), at_start=mode == "append")
                    and not (idempotency_key is None and _went_on_since(settings, path, first))):
                # The first one may have been killed once its version was in place, before logging
                # it: the retry finishes it (its history entry, the session's record, its leftovers).
                # Or killed before, and someone else made the same bytes since: nothing is claimed.
                return first_done(finish_replayed(settings, path, first))
            # The file no longer holds what that write made (restored or edited since), or this
            # session read or wrote it since, so the same text again is a new entry: write it again.
        when = time.time()

        def record_first(to_be: WriteResult) -> None:
            # In the same step as the write: before the rename, with the version it will make. A
            # crash after the rename leaves the key, and the retry finds the file at that version.
            signals.committed()  # from here a Ctrl-C does not cancel the write (the CLI's: said once it is made)
            keys.put(key, to_be, when, bound)
            faults.reach("write:key-recorded")  # recorded, the new content not renamed into place yet

        result = first_done(write_memory_file(settings, path, content=data, append=added, expect=expect,
                                              before_swap=record_first, replace_unread=replace_unread, resolved=resolved))
        faults.reach("write:swapped")
    keys.prune()
    result = after(result)
    try:
        keys.put(key, result, when, bound)  # a later replay shows what the index update did
    except MemoryToolError:
        pass  # the key recorded before the rename stands
    return result


@contextmanager
def finishing_first(settings: Settings, resolved: ResolvedPath) -> Iterator[Callable[[WriteResult], WriteResult]]:
    """Around a write or a restore of ``resolved``, under the write lock: a move or removal of it a
    killed process left is finished first (:func:`~.moves.finish_pending_at`), so what they log
    follows its entries; yields what adds what that finish did to their result's warnings, and an
    error they raise says it too."""
    from .moves import finish_pending_at

    earlier = finish_pending_at(settings, resolved.abs_path)
    with finished_first(earlier):
        yield lambda result: replace(result, warnings=(earlier, *result.warnings)) if earlier else result


def _went_on_since(settings: Settings, path: str, first: WriteResult) -> bool:
    """Whether this agent's session read or wrote ``path`` after the write ``first`` answers: then
    the same text again is a new entry, not a retry ("- fed the cat" in the morning and the evening).

    A retry is the same call sent again because its answer never came: the session has not seen
    the file since. A read recorded after that write (one that could show it: not of the version
    the write replaced, a read sent beside the write) or a write of another version by this session
    means it went on, and asks for the text again knowing what the file holds. Only for the default
    key: an explicit key is the caller's word that this is the same write, whatever it did between.
    Only an append can get here so: a replacement that still holds is one nothing wrote after."""
    from .placing import logged_in, resolve_writable
    from .states import READ, ReadRecords
    from .store import HistoryStore
    from .versions import AGENT_WRITE

    assert first.replay is not None
    since = first.replay.first_time
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    store = HistoryStore.for_settings(settings)
    seen = ReadRecords.for_settings(store, settings).get(resolved.abs_path)
    if seen is not None and seen.how == READ and seen.time > since and seen.version != first.previous:
        return True
    return any(e.origin == AGENT_WRITE and e.agent == settings.agent and e.session == settings.session
               and e.time > since and e.version != first.version
               for e in store.entries(resolved.abs_path))


def restore(settings: Settings, path: str, version: str | None = None, *, last: bool = False,
            after: Callable[[WriteResult], WriteResult] = lambda result: result) -> WriteResult:
    """Put back ``version`` of ``path``, or with ``last`` the version ``rm`` last archived."""
    from .guard import IndexUpdate, restore_file_version

    if (version is None) == (not last):
        raise UsageError("give the version to restore, or --last for the version `rm` last removed (not both)")
    from .placing import logged_in, resolve_writable
    from .store import HistoryStore

    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    with HistoryStore.for_settings(settings).write_lock(), finishing_first(settings, resolved) as first_done:
        if last:  # (after the finish: an rm killed past its unlink said "no removal is recorded")
            from .moves import last_removed

            version = last_removed(settings, path)
        assert version is not None
        result = first_done(restore_file_version(settings, path, version, resolved=resolved))
    if not result.changed:
        return replace(result, index=IndexUpdate(False, "nothing changed"))
    return after(result)
