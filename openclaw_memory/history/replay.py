"""A write whose idempotency key was seen again (:mod:`.idempotency`): whether the file still holds
what the first write made, and the answer once what that write left undone is done, or, where it
never put its version in place, the answer that someone else made the same bytes."""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import MemoryToolError
from ..files.read import ResolvedPath
from ..fsutil.atomic import leftover_kind, temp_stem
from ..fsutil.safeopen import Folder
from .failures import HistoryFailed, in_history
from .guard import APPEND, WriteResult
from .leftovers import sweep_leftovers
from .placing import logged_in, open_current, resolve_writable
from .stale import has_prefix, seen_after_append
from .states import WRITE, ReadRecords
from .store import FileVersion, HistoryStore, snapshot_fd
from .versions import AGENT_WRITE, EXTERNAL_EDIT, RESTORE, FileMode, short

if TYPE_CHECKING:
    from ..settings import Settings


def still_holds(settings: Settings, path: str, made: FileVersion, *, at_start: bool = False) -> bool:
    """Whether the memory file ``path`` holds what a write made: exactly, or with ``at_start`` as its
    first bytes (an append that others have appended after since)."""
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    folder, fd, current = open_current(resolved)
    try:
        if current is None or fd is None:
            return False
        return current.version == made.version or (at_start and has_prefix(fd, current, made.version, made.size))
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()


def finish_replayed(settings: Settings, path: str, first: WriteResult) -> WriteResult:
    """A replay's answer (``first``, whose version the file still holds: whole, or as its start),
    once what the first write did after putting that version in place is done, as far as it is not:
    a write killed right after its exchange logged nothing, kept no record and left its swap file.
    The caller holds the write lock.

    The version is this write's only on evidence that this write put it there: the history logs it
    as this agent's and session's write (the first write finished), or the swap file its exchange
    left beside the file holds the version it replaced (:func:`_left_by_exchange`: killed right
    after the exchange). Then a version still unlogged is logged as this agent's and session's write
    (a sighting since, which logged it as an outside edit, is relabelled: it was this write), the
    session's record is of it (unless the session read or wrote the file since), and the leftovers
    beside the file are swept; what cannot be recorded is said in the answer's warnings, as a write
    says it. Without such evidence the first write never put it there (killed before its exchange,
    ``write:key-recorded``) and someone else made the same bytes: :func:`_made_by_another`."""
    assert first.replay is not None
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    since = first.replay.first_time
    made = FileVersion(first.version, first.size)
    notes: list[str] = []
    folder, fd, current = open_current(resolved)
    try:
        if fd is None or current is None:
            if folder is not None:
                sweep_leftovers(store, resolved, folder)
            return first
        try:
            with in_history():
                later = [e for e in store.entries(resolved.abs_path) if e.time >= since and e.version == first.version]
        except (HistoryFailed, MemoryToolError):
            later = []
        own = any(e.origin in (AGENT_WRITE, RESTORE) and e.agent == records.agent
                  and (e.session or "") == records.session for e in later)
        others = [e for e in later if e.origin in (AGENT_WRITE, RESTORE)]  # never relabelled: another's write
        # Looked at before the sweep, which takes the swap file away.
        placed = own or (not others and folder is not None and _left_by_exchange(store, resolved, folder, first))
        if folder is not None:
            sweep_leftovers(store, resolved, folder)
        if not first.changed:
            pass  # the first write found the file holding its bytes already: it made no version to claim
        elif not placed:
            return _made_by_another(store, resolved, first, current, fd)
        elif not own:
            try:
                with in_history(), store.lock():
                    sighted = next((e for e in later if e.origin == EXTERNAL_EDIT and e.agent is None), None)
                    if sighted is not None:
                        store.log.claim(resolved.abs_path, sighted, AGENT_WRITE, records.agent, records.session)
                    elif current.version == first.version:
                        store.record(resolved.abs_path, resolved.display, first.version, first.size, AGENT_WRITE,
                                     records.agent, records.session, FileMode.of(os.fstat(fd)))
            except (HistoryFailed, MemoryToolError) as exc:
                why = exc.error.strerror if isinstance(exc, HistoryFailed) else exc.message
                notes.append(f"the history could not record this version of {resolved.display} as this write ({why})")
        try:
            seen = records.get(resolved.abs_path)
            if seen is None or (seen.version != first.version and seen.time <= since):
                before = FileVersion(first.previous, 0) if first.previous is not None else None
                records.put(resolved.abs_path, made, WRITE, None if first.action != APPEND
                            else seen_after_append(records, resolved, before, fd))
        except (OSError, MemoryToolError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            notes.append(f"agent '{records.agent}''s record of {resolved.display} could not be saved ({why}): read it "
                         "before the next write")
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()
    return replace(first, warnings=first.warnings + tuple(notes)) if notes else first


def _left_by_exchange(store: HistoryStore, resolved: ResolvedPath, folder: Folder, first: WriteResult) -> bool:
    """Whether a swap file beside the file (``.NAME.<hex>.swp``) holds what the exchange of ``first``
    took off the file: what a write killed right after its exchange (``write:exchanged``) leaves
    there, the only trace that it put its version in place. Every write sweeps such files before its
    own, so one left now was left by a write since the first one began: its own, when it holds the
    version the first write replaced, or a save an editor made in that instant (bytes no write
    stored: a write stores its new bytes before it names them ``.swp``). A person's edit leaves
    none, another agent's finished write removes its own, and a write killed before its exchange
    leaves there the new bytes it stored, or a ``.tmp``."""
    if first.previous is None:  # a creation has no exchange: nothing beside the file tells it was this one
        return False
    stem = f"{temp_stem(resolved.name)}."
    try:
        names = [name for name in os.listdir(folder.fd)
                 if name.startswith(stem) and leftover_kind(name, resolved.name) == "swp"]
    except OSError:
        return False
    for name in names:
        try:
            fd, _ = folder.open_regular(name)
        except OSError:
            continue
        try:
            held = snapshot_fd(fd).version
            if held == first.previous or (held != first.version and not store.objects.has(held)):
                return True
        except (OSError, MemoryToolError):
            continue
        finally:
            os.close(fd)
    return False


def _made_by_another(store: HistoryStore, resolved: ResolvedPath, first: WriteResult, current: FileVersion,
                     fd: int) -> WriteResult:
    """The answer to a retry whose first write never put its version in place (killed before its
    exchange), where someone else made the same bytes since: nothing is written (the file already
    holds this text: a second copy is what an agent retrying does not want), nothing is logged as
    this agent's, and the answer says so, naming who the history says made that version. The
    file's version is logged as an outside edit when nothing logged it yet (a person's edit), as a
    read would; the session's record is left as it is (it has not read what the other one wrote)."""
    since = first.replay.first_time if first.replay is not None else 0.0
    try:
        with in_history(), store.lock():
            store.observe(resolved.abs_path, resolved.display, current, fd=fd)
            logged = [e for e in store.entries(resolved.abs_path) if e.version == first.version and e.time >= since]
    except (HistoryFailed, MemoryToolError):
        logged = []
    writers = [e for e in logged if e.origin in (AGENT_WRITE, RESTORE)]
    if writers:
        e = writers[0]
        who = (f"agent '{e.agent}''s {'write' if e.origin == AGENT_WRITE else 'restore'}"
               + (f" (session {e.session})" if e.session else ""))
    elif logged:
        who = f"{'an outside edit' if logged[0].origin == EXTERNAL_EDIT else logged[0].origin} (not an agent's write)"
    else:
        who = "no one's write (the history has not logged it)"
    text, done = ("this text", "appended to") if first.action == APPEND else ("this content", "written to")
    said = (f"{resolved.display} already holds {text}, but as {who}, not as a write of this session: the earlier write "
            f"with the same idempotency key left no sign that it put version {short(first.version)} in place; nothing "
            f"was {done} {resolved.display} now, and nothing was logged as this agent's write")
    return WriteResult(resolved.display, resolved.abs_path, first.action, current.version, current.version, current.size,
                       created=False, changed=False, warnings=(said,))
