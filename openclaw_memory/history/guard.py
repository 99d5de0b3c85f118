"""The guarded write and the restore: compare-and-swap on the version the agent last read.

Under the history lock: hash the file as it is, record that version in the history
(so what is about to be replaced can always be restored), check the guard rules,
write the new bytes to a temp file beside the target and fsync it, store the new
version and the idempotency key, hash the target once more and, only if it still
holds the version checked, exchange the temp file with it (:mod:`.swap`); then log the
new version and fsync the folder. A new file is created with ``link``, which fails if
anything appeared at that name meanwhile.

The file's folder is opened once, one component at a time from the allowed root's
descriptor, and every open, temp file, rename and unlink goes through it: a folder
swapped for a symlink meanwhile cannot send the write outside (PathChanged).
Everything that can run out of space happens before the swap, or is undone with it, so
a full disk stops the write with the file unchanged and no temp file left.

Nothing but a hash separates the last check from the exchange, and the exchange keeps
what it displaced: an outside editor that saves exactly then has its save recorded in
the history and put back, and the write is tried again on it (a daily-note append) or
blocked. Where the file system cannot exchange, a rename follows the check at once;
a save landing in that window (no commit in it) is overwritten.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import re
import stat
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

import xxhash

from .. import faults
from ..errors import DiskFull, MemoryToolError, PathRefused, UsageError, WriteBlocked, disk_full, os_error
from ..files.jstext import text_faults_of
from ..files.paths import DREAMS, LEGACY_DREAMS, is_daily_note
from ..files.read import ResolvedPath, path_changed
from ..files.root import resolve_dream_diary
from ..fsutil.atomic import LEFTOVER_AGE_S, leftover_kind, temp_stem, unlink_quietly
from ..fsutil.move import remove_if_holds
from ..fsutil.safeopen import Folder
from ..fsutil.safeopen import FolderSwapped as _Swapped
from ..types import WriteAction
from ..wire import key
from .objects import pread_blocks
from .placing import (
    Raced,
    create_new,
    current_version,
    held_open,
    kept_stat,
    make_folder,
    open_current,
    recorded_mode,
    refuse_read_only,
    remove_made_folders,
    resolve_writable,
    swap_name,
    temp_from_blocks,
)
from .states import WRITE, ReadRecords, Window
from .store import FileVersion, HistoryStore, check_prefix, snapshot_fd
from .swap import Swap
from .versions import AGENT_WRITE, EXTERNAL_EDIT, RESTORE, Entry, FileMode, short

APPEND: WriteAction = "append"
if TYPE_CHECKING:
    from ..index.results import SyncSummary
    from ..settings import Settings

REPLACE: WriteAction = "replace"
RESTORED: WriteAction = "restore"
# A daily-note append that loses a race to another append is simply tried again.
_APPEND_TRIES = 5


@dataclass(frozen=True)
class IndexUpdate:
    """What happened to the search index after a write.

    ``updated``: the index now holds the write. Otherwise ``reason`` says why not; ``failed`` is
    True only when an update was tried and failed (the file is written either way, and
    ``openclaw-memory index`` catches up).
    """

    updated: bool
    reason: str | None = None
    failed: bool = False
    sync: SyncSummary | None = None


@dataclass(frozen=True)
class Replay:
    """A write whose idempotency key was seen again: nothing was written; this is the first one's result."""

    key: str
    first_time: float


@dataclass(frozen=True)
class WriteResult:
    path: str
    abs_path: str
    action: WriteAction
    version: str
    previous: str | None = key("previousVersion")  # the version replaced; None when the file was created
    size: int = key()
    created: bool = key()
    changed: bool = True  # False when the file already held these bytes (a restore to its version, the same content)
    index: IndexUpdate | None = None  # set by the API after the write
    # The write happened; something after it did not (see _commit).
    warnings: tuple[str, ...] = key(omit=lambda w: not w.warnings, default=())
    # Set when this is an earlier write's result, replayed.
    replay: Replay | None = key(omit=lambda w: w.replay is None, default=None)

    JSON_DERIVED: ClassVar = ("replayed",)

    @property
    def replayed(self) -> bool | None:
        return True if self.replay is not None else None


def write_memory_file(settings: Settings, path: str, *, content: bytes | None = None, append: str | bytes | None = None,
                      expect: str | None = None, before_swap: Callable[[WriteResult], None] | None = None,
                      replace_unread: bool = False) -> WriteResult:
    """Replace (``content``) or append to (``append``) a memory file, guarded for ``settings.agent``.

    ``expect``: the version the agent's session last read (or one :func:`read_here` vouches for).
    ``replace_unread``: replace the content though the session read only a window of the file.

    ``before_swap`` is given the result the write will have, just before the last check of the
    file and the swap (an error it raises stops the write, changing nothing).
    Raises WriteBlocked (exit 3) when the agent's view of the file is out of date,
    PathRefused for anything that is not a memory path (or whose folder was swapped
    while in use), DiskFull when there is no space to write: then nothing was changed.
    """
    if (content is None) == (append is None):
        raise UsageError("give exactly one of: text to append, or the new content")
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths)
    refuse_dream_twin(resolved, str(settings.workspace))
    expected = check_prefix(expect, "expect") if expect is not None else None
    # surrogateescape gives back the exact bytes of a command-line argument that was not UTF-8.
    added = append.encode("utf-8", "surrogateescape") if isinstance(append, str) else append
    if added is not None and not added.strip(b"\n"):
        raise UsageError("nothing to append: the text is empty")
    daily_append = added is not None and is_daily_note(resolved.display)
    tries = _APPEND_TRIES if daily_append and expected is None else 1
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.write_lock():
        for _ in range(tries):
            try:
                return translated(store, resolved, "written", lambda: _write_once(
                    store, records, resolved, content, added, expected, daily_append, before_swap, replace_unread,
                    settings.read.max_chars))
            except Raced:
                continue
    raise WriteBlocked.because(f"{resolved.display} changed while it was being written; nothing was written.",
                               path=resolved.display)


def still_holds(settings: Settings, path: str, made: FileVersion, *, at_start: bool = False) -> bool:
    """Whether the memory file ``path`` holds what a write made: exactly, or with ``at_start`` as its
    first bytes (an append that others have appended after since)."""
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths)
    folder, fd, current = open_current(resolved)
    try:
        if current is None or fd is None:
            return False
        return current.version == made.version or (at_start and _has_prefix(fd, current, made.version, made.size))
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
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths)
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
                            else _seen_after_append(records, resolved, before, fd))
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


def restore_file_version(settings: Settings, path: str, version: str, *, stored: bool = False,
                         read_only_ok: Callable[[FileMode], bool] | None = None) -> WriteResult:
    """Put back the bytes of an earlier version (a unique prefix of at least 8 hex characters).

    The version the file holds now is recorded first, so the restore can be undone. ``stored``:
    ``version`` is a whole version the object store holds though the path's history may not list it
    (what a watchdog snapshot kept: a rollback to it). A read-only note is refused
    (ReadOnlyRefused) unless ``read_only_ok`` lets its mode go (a rollback's undo).
    """
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths)
    check_prefix(version)
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.write_lock():
        try:
            return translated(store, resolved, "restored", lambda: _restore_once(store, records, resolved, version, stored, read_only_ok))
        except Raced:
            raise WriteBlocked.because(f"{resolved.display} changed while it was being restored; nothing was written.",
                                       path=resolved.display, step="history") from None


def refuse_dream_twin(resolved: ResolvedPath, workspace: str) -> None:
    """The dream diary is ``DREAMS.md``, or ``dreams.md`` while ``DREAMS.md`` is absent: the scan
    skips the twin and every other letter case (``Dreams.md``, which OpenClaw reads as the diary),
    so a write there made a file nothing lists, indexes or searches."""
    if resolved.root != workspace or resolved.display.lower() != LEGACY_DREAMS or resolved.display == DREAMS:
        return
    if resolved.display != LEGACY_DREAMS:
        raise PathRefused(
            f"refused: {resolved.display} is not the dream diary's name (the scan lists {DREAMS}, or {LEGACY_DREAMS} "
            f"without it, and skips every other letter case); write to {DREAMS}, the dream diary"
        )
    try:
        with resolved.folder() as folder:
            names = set(os.listdir(folder.fd))
    except (OSError, PathRefused):
        return  # the write's own open reports what is wrong with the folder
    diary, _ = resolve_dream_diary(workspace, names)  # the scan's choice: a DREAMS.md that is a link is none
    if diary is not None and diary.name == DREAMS:
        raise PathRefused(
            f"refused: {DREAMS} exists, so {LEGACY_DREAMS} is not memory (the scan skips it as a legacy twin); "
            f"write to {DREAMS}, the dream diary"
        )


def translated(store, resolved: ResolvedPath, done: str, operation):
    """Run a write step, turning the OS failures a user can meet into typed errors.

    Everything that can fail runs before the file is replaced (see :func:`_commit`),
    so each of these messages can truthfully say the file was not changed.
    """
    unchanged = f"nothing was {done}: {resolved.display} is unchanged"
    try:
        return operation()
    except _Swapped as exc:
        raise path_changed(resolved, exc, f"nothing was {done}") from None
    except NotADirectoryError:
        raise PathRefused(f"refused: {resolved.display}: a folder on its path is a file; nothing was {done}") from None
    except HistoryFailed as failed:
        raise os_error(failed.error, f"the state dir ({store.data_dir})", unchanged) from None
    except FailedAt as failed:  # named by the step that knew where (before the DiskFull below took it for the state dir's)
        raise os_error(failed.error, failed.where, failed.outcome) from None
    except DiskFull:
        raise disk_full(OSError(errno.ENOSPC, "No space left on device"), f"the state dir ({store.data_dir})", unchanged) from None
    except OSError as exc:
        raise os_error(exc, where_written(resolved), unchanged) from None


def where_written(resolved: ResolvedPath) -> str:
    """Where a failing step wrote, for its message: an extra path is named as one (a note of a shared
    extra path another user owns read "cannot write in the workspace (/srv/shared)")."""
    return f"{'the workspace' if resolved.in_workspace else 'the extra path'} ({os.path.dirname(resolved.abs_path)})"


class FailedAt(Exception):
    """An OS error of a step that knows where it happened and what it left (a move's destination)."""

    def __init__(self, error: OSError, where: str, outcome: str):
        super().__init__(error)
        self.error, self.where, self.outcome = error, where, outcome


class HistoryFailed(Exception):
    """An OS error in the history (state dir), told apart from one in the workspace for the message."""

    def __init__(self, error: OSError):
        super().__init__(error)
        self.error = error


@contextlib.contextmanager
def in_history():
    """Around history steps: their OS errors become HistoryFailed (the state dir, not the workspace)."""
    try:
        yield
    except _Swapped:
        raise
    except OSError as exc:
        raise HistoryFailed(exc) from None


def not_stored_why(store: HistoryStore, abs_path: str, version: str) -> str:
    """Why the version store lacks ``version`` of ``abs_path``, as far as can be known.

    A version too large to keep was never stored. A rebuild of the damaged state database (``doctor
    --fix``: the damaged file set aside under ``damaged/<stamp>/``, its unreadable bytes dropped)
    after the version was logged may have taken it; a version a removal, a snapshot or a rollback
    names is never evicted, so then the rebuild did. Eviction is named only where it can have been."""
    try:
        entries = [e for e in store.entries(abs_path) if e.version == version]
        pinned = store.objects.pinned(version)
    except (MemoryToolError, OSError):
        entries, pinned = [], False
    if entries and not store.objects.fits(entries[-1].size):
        return (f"at {entries[-1].size} bytes it is larger than the history keeps of one version (an eighth of [history] "
                "max_bytes), so its bytes were never stored")
    evicted = "evicted from the version store to stay within [history] max_bytes"
    rebuilt = _rebuilt_since(store, min((e.time for e in entries), default=None))
    if rebuilt is None:
        if pinned:  # (a version a removal or a snapshot names is never evicted)
            return ("its bytes are gone from the state database, which never evicts a version that a removal or a "
                    "snapshot names (`openclaw-memory doctor` checks the state database)")
        return evicted
    when, aside = rebuilt
    lost = (f"its bytes were lost with the damaged state database that `openclaw-memory doctor --fix` rebuilt on {when} "
            f"(they no longer read back; the damaged file is kept at {aside})")
    if pinned:
        return lost
    return f"{lost}, or they were {evicted} before that"


def _rebuilt_since(store: HistoryStore, since: float | None) -> tuple[str, str] | None:
    """The first rebuild of the state database since ``since`` (None: the latest of all): when (UTC)
    and where the damaged file was set aside; None when there was none."""
    import datetime as dt

    from ..fsutil.setaside import DAMAGED_DIR

    folder = os.path.join(os.path.dirname(store.db.path), DAMAGED_DIR)
    name = os.path.basename(store.db.path)
    try:
        stamps = os.listdir(folder)
    except OSError:
        return None
    found: list[tuple[float, str]] = []
    for stamp in stamps:
        try:
            at = dt.datetime.strptime(stamp, "%Y-%m-%dT%H-%M-%S.%fZ").replace(tzinfo=dt.UTC)
        except ValueError:
            continue
        aside = os.path.join(folder, stamp, name)
        if os.path.lexists(aside) and (since is None or at.timestamp() >= since):
            found.append((at.timestamp(), aside))
    if not found:
        return None
    at_s, aside = min(found) if since is not None else max(found)
    return dt.datetime.fromtimestamp(at_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"), aside


def _restore_once(store, records, resolved: ResolvedPath, version: str, stored: bool = False,
                  read_only_ok: Callable[[FileMode], bool] | None = None) -> WriteResult:
    folder, fd, current = open_current(resolved)
    existed: int | None = None  # as in _write_once
    try:
        if current is not None:
            with in_history():
                store.observe(resolved.abs_path, resolved.display, current, fd=fd)
        wanted = version if stored else store.resolve_prefix(resolved.abs_path, resolved.display, version)
        if current is not None and current.version == wanted:
            with in_history():
                records.put(resolved.abs_path, current, WRITE)
            return WriteResult(resolved.display, resolved.abs_path, RESTORED, wanted, wanted, current.size, False, changed=False)
        blocks = store.objects.blocks(wanted)
        if blocks is None:
            raise MemoryToolError(f"version {short(wanted)} of {resolved.display} is no longer stored: "
                                  f"{not_stored_why(store, resolved.abs_path, wanted)}")
        if current is not None:
            # The restore said that version "can be brought back", and it was gone.
            refuse_unkept(store, resolved, current, "restored")
        # Brought back where none is (a removed note): with the mode and owner the history saw last.
        kept = kept_stat(fd) if fd is not None else recorded_mode(store, resolved)
        if fd is not None:  # (a removed note comes back with its recorded mode: nothing is replaced)
            refuse_read_only(kept, resolved.display, "restored", folder, read_only_ok)
            os.close(fd)
            fd = None
        if folder is None:
            folder, existed = make_folder(resolved)
        damaged = MemoryToolError(f"the stored copy of version {short(wanted)} is damaged; {resolved.display} was not changed")
        try:
            tmp, new, _ = temp_from_blocks(folder, resolved, blocks, kept)
        except zlib.error:
            raise damaged from None
        if new.version != wanted:
            unlink_quietly(tmp, dir_fd=folder.fd)
            raise damaged
        return _commit(store, records, resolved, folder, current, tmp, new, RESTORED)
    except BaseException:
        if existed is not None:
            remove_made_folders(resolved, existed)
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()


def refuse_unkept(store: HistoryStore, resolved: ResolvedPath, current: FileVersion, outcome: str) -> None:
    """Refuse to replace what ``current`` holds when no history would keep it (one version may take an
    eighth of ``[history] max_bytes``): its bytes would be gone for good, as `rm`, `mv --force` and
    `rollback` refuse too. A write with --replace-unread replaced a 35 MB note so, right after the
    refusal before it had said "the history keeps every version"."""
    if not store.objects.fits(current.size):
        raise MemoryToolError(
            f"{resolved.display} cannot be kept in the history before it is replaced ({current.size} bytes; one file "
            f"may take at most [history] max_bytes / 8, {store.objects.max_bytes // 8} bytes): nothing was {outcome}; "
            "append to it, split it, or raise [history] max_bytes"
        )


def _write_once(store, records, resolved: ResolvedPath, content, added, expected, daily_append,
                before_swap: Callable[[WriteResult], None] | None = None, replace_unread: bool = False,
                budget: int | None = None) -> WriteResult:
    latest_before = store.log.latest(resolved.abs_path)
    folder, fd, current = open_current(resolved)
    existed: int | None = None  # how many of the file's folders there were, when this write made the rest
    try:
        if current is not None:
            if added is None:  # (an append keeps every byte the file holds)
                refuse_unkept(store, resolved, current, "written")
            # The version about to be replaced goes into the history first.
            with in_history():
                store.observe(resolved.abs_path, resolved.display, current, fd=fd)
        check_write(store, resolved, current, records, expected, daily_append, latest_before, fd,
                    replacing=added is None and not replace_unread, budget=budget)
        kept = kept_stat(fd)
        refuse_read_only(kept, resolved.display, "written", folder)
        if folder is None:
            folder, existed = make_folder(resolved)
        sweep_leftovers(store, resolved, folder)
        if added is None:
            tmp, new, _ = temp_from_blocks(folder, resolved, [content], kept)
        else:
            copied = pread_blocks(fd) if fd is not None else iter(())
            tail = _appended(fd, current, added)
            tmp, new, prefix = temp_from_blocks(folder, resolved, copied, kept, tail)
            if current is not None and prefix != current.version:
                unlink_quietly(tmp, dir_fd=folder.fd)
                raise Raced()
        return _commit(store, records, resolved, folder, current, tmp, new, APPEND if added is not None else REPLACE,
                       before_swap, None if added is None else _seen_after_append(records, resolved, current, fd))
    except BaseException:
        if existed is not None:
            remove_made_folders(resolved, existed)
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()


def sweep_leftovers(store: HistoryStore, resolved: ResolvedPath, folder: Folder) -> None:
    """Remove what earlier writes of this file that were killed left beside it (the caller holds the
    write lock, as every writer does, so none of them is in progress): a write does it first, and
    ``doctor --fix`` (:mod:`~..doctor.check_leftovers`).

    A temp file (``.NAME.<hex>.tmp``) holds only what such a write would have written, never a byte
    the file had: removed at once as bytes the history holds (the new version a write stores before
    its swap, an import's staged file), else once ten minutes old (another tool's temp file by that
    name is that old at least). A swap file (``.NAME.<hex>.swp``, see :func:`_commit`) may hold the version an exchange
    took off the file: removed once its bytes are in the history, after recording them there as an
    outside edit when they are not (a write killed between its exchange and the check of what it
    displaced), and only as those bytes while no other program holds it open
    (:func:`~..fsutil.move.remove_if_holds`); one too big for the history stays."""
    prefix = f"{temp_stem(resolved.name)}."
    try:
        # Only the names of this file's leftovers looked at in Python: a daily-notes folder of
        # 30,000 entries cost a write 34 ms parsing each name (the listing itself is the kernel's).
        entries = [entry for entry in os.listdir(folder.fd) if entry.startswith(prefix)]
    except OSError:
        return
    for entry in entries:
        kind = leftover_kind(entry, resolved.name)
        if kind is None:
            continue
        try:
            if kind == "tmp":
                st = folder.lstat(entry)
                if stat.S_ISREG(st.st_mode) and time.time() - st.st_mtime > LEFTOVER_AGE_S:
                    folder.unlink(entry)
                elif (version := stored_version(store, folder, entry)) is not None:
                    remove_if_holds(folder.fd, entry, version)
            elif (version := _in_history_now(store, resolved, folder, entry)) is not None:
                # Only as those bytes, and not while a program holds it open (it would write to an unlinked file).
                remove_if_holds(folder.fd, entry, version)
        except (OSError, MemoryToolError):
            continue


def stored_version(store: HistoryStore, folder: Folder, name: str) -> str | None:
    """The version of the regular file ``name`` in ``folder`` when the history holds its bytes; else None."""
    fd, _ = folder.open_regular(name)
    try:
        found = snapshot_fd(fd)
    finally:
        os.close(fd)
    return found.version if store.objects.has(found.version) else None


def _in_history_now(store: HistoryStore, resolved: ResolvedPath, folder: Folder, name: str) -> str | None:
    """The version of the file ``name`` in ``folder`` when the history holds its bytes (recorded here
    if need be); None when it cannot."""
    fd, _ = folder.open_regular(name)
    try:
        found = snapshot_fd(fd)
        if store.objects.has(found.version):
            return found.version
        if not store.objects.fits(found.size):
            return None
        with store.lock():
            store.observe(resolved.abs_path, resolved.display, found, fd=fd)
        return found.version if store.objects.has(found.version) else None
    finally:
        os.close(fd)


def check_write(store, resolved, current: FileVersion | None, records: ReadRecords, expected: str | None,
                daily_append: bool, latest_before: Entry | None, fd: int | None, *, replacing: bool = False,
                budget: int | None = None) -> None:
    """Refuse a write (a move, a removal) ``records``' reader may not make to ``resolved``, which holds
    ``current``: WriteBlocked naming why. ``expected`` (``expect``) must name the version the reader
    last read, unless the running code read it itself (:func:`read_here`); ``replacing``: the whole
    content is replaced, which needs a read of every line (``budget``: the reader's default
    ``max_chars``, which a refusal names a larger one than when the first line unread is longer)."""
    shown = resolved.display
    if expected is not None and any(version.startswith(expected) for version in _READ_HERE.get()):
        if current is None:
            raise WriteBlocked.because(f"{shown} does not exist, so it is not at version {expected}.", path=shown)
        if not current.version.startswith(expected):
            raise WriteBlocked.because(f"{shown} changed after it was read (read {expected}, now {short(current.version)}).",
                                       path=shown)
        return
    seen, agent, session = records.get(resolved.abs_path), records.agent, records.session
    who = {"path": shown, "agent": agent, "session": session}
    if expected is not None and (seen is None or not seen.version.startswith(expected)):
        # A version learnt anywhere but from a read (a refusal, `history`, another session) is no
        # read: the guard would let a write replace what the reader never saw.
        if current is None:
            raise WriteBlocked.because(f"{shown} does not exist, so it is not at version {expected}.", path=shown)
        if seen is not None and seen.version == current.version:
            raise WriteBlocked.because(f"{shown} is at the version {{reader}} read ({short(seen.version)}), not {expected}",
                                       step="expect_read", **who)
        raise WriteBlocked.because(f"{shown} is at a version {{reader}} has not read", step="read_first", **who)
    if current is None or fd is None:  # open_current gives both or neither
        if seen is not None:
            raise WriteBlocked.because(f"{shown} was deleted since {{reader}} read it.", **who)
        return
    if daily_append and expected is None:
        base = seen if seen is not None else latest_before
        if base is None:
            raise WriteBlocked.because(f"{{reader}} has not read {shown}", step="read_first_append", **who)
        if not _has_prefix(fd, current, base.version, base.size):
            raise WriteBlocked.because(
                f"{shown} shrank or was rewritten since {{reader}} last saw it "
                f"(version {short(base.version)} is no longer the start of the file).", **who,
            )
        return
    if seen is None:
        raise WriteBlocked.because(f"{shown} exists and {{reader}} has not read it", step="read_first", **who)
    if seen.version != current.version:
        raise WriteBlocked.because(
            f"{shown} changed since {{reader}} last read it (read {short(seen.version)}, now {short(current.version)}).", **who,
        )
    if replacing and seen.seen_from is not None:
        problem, rest = _unread_lines(shown, seen.seen_from, seen.seen_to, _line_count(fd, current.size))
        chars = _line_chars(fd, current.size, rest)
        raise WriteBlocked.because(problem, step="read_rest", rest=f"{rest}:{chars}" if budget is not None and chars > budget
                                   else str(rest), **who)
    if replacing and (bad := text_faults_of(fd)[0]) is not None:
        # Every read shows such bytes as U+FFFD: content made from a read (text + a new line) wrote
        # U+FFFD over each of them, bytes the reader never saw (only the history kept them).
        raise WriteBlocked.because(
            f"{shown} holds bytes that are not valid UTF-8 (first invalid byte at offset {bad}), which reads show as "
            "U+FFFD, so {reader} has not read them, and the new content would replace them", step="not_utf8", **who,
        )


def _seen_after_append(records: ReadRecords, resolved: ResolvedPath, current: FileVersion | None, fd: int | None) -> Window:
    """The lines of the file before an append that the writer has seen (what it appended it wrote):
    what its record says of the version appended to; of an older version the file grew from (a
    daily note), at most that version's lines; with no read at all, none (a later replace of it needs
    a read of them)."""
    if current is None or fd is None:
        return None  # created: the writer wrote every line
    seen = records.get(resolved.abs_path)
    if seen is not None and seen.version == current.version:
        return seen.window
    if seen is None:
        return 1, 0
    lines = _line_count(fd, seen.size)  # the file grew from the version read: its start is that version
    # (seen_to None: every line read; 0: none, as an unread append records)
    return seen.seen_from or 1, min(lines if seen.seen_to is None else seen.seen_to, lines)


def _unread_lines(shown: str, first: int, last: int | None, total: int) -> tuple[str, int]:
    """What a window read left unread, and the line where the rest starts (the refusal's step names
    the read of it in its front-end's words: ``from=N``, ``--from N``)."""
    last = total if last is None else min(last, total)
    seen = (f"none of the {total} lines" if last < first else f"line {first} of the {total} lines" if last == first
            else f"lines {first}-{last} of the {total} lines")
    rest = 1 if first > 1 else last + 1
    return f"{{reader}} read {seen} of {shown}, so replacing its content would drop lines it has not read: read the rest", rest


def _line_chars(fd: int, size: int, number: int) -> int:
    """The length of line ``number`` in UTF-16 code units, as ``read`` counts it against its budget
    (a line cut short by a read's budget is shown whole by a budget of its length)."""
    from ..files.window import LineLength, nth_newline

    line, skip, offset = LineLength(), number - 1, 0
    while offset < size and not line.ended:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            break
        offset += len(block)
        pos = 0
        if skip:
            found = block.count(b"\n")
            if found < skip:
                skip -= found
                continue
            pos, skip = nth_newline(block, 0, skip) + 1, 0
        line.feed(block, pos)
    return line.end()


def _line_count(fd: int, size: int) -> int:
    """Lines as ``read`` numbers them: a last line without its newline counts."""
    count, offset, last = 0, 0, b"\n"
    while offset < size:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            break
        count += block.count(b"\n")
        offset, last = offset + len(block), block[-1:]
    return count + (last != b"\n")


@contextlib.contextmanager
def read_here(version: str | None):
    """Around a write whose ``expect`` the running code read from the file itself (a link rewrite, a
    rollback's step), with no read by the agent's session behind it: the compare-and-swap alone.
    None: nothing to vouch for (a file found missing)."""
    token = _READ_HERE.set(_READ_HERE.get() | ({version} if version is not None else set()))
    try:
        yield
    finally:
        _READ_HERE.reset(token)


# The versions :func:`read_here` vouches for, in this thread's current call.
_READ_HERE: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("read_here", default=frozenset())


def _has_prefix(fd: int, current: FileVersion, version: str, size: int) -> bool:
    if size > current.size:
        return False
    digest = xxhash.xxh3_128()
    offset = 0
    while offset < size:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            return False
        digest.update(block)
        offset += len(block)
    return digest.hexdigest() == version


def _appended(fd: int | None, current: FileVersion | None, added: bytes) -> bytes:
    """What an append adds at the end of the file: ``added`` on its own line(s), ended by a line
    break, in the note's own line ending (the file's last one, :func:`_last_line_ending`: CRLF in a
    note whose last line ends so, a lone CR in a CR-only note, its text's own line breaks too), after
    one when the file does not end with a line break."""
    if fd is None or current is None or current.size == 0:
        return added + (b"" if added.endswith(b"\n") else b"\n")
    ending = _last_line_ending(fd, current.size)
    if ending == b"\r\n":
        added = _LONE_LF.sub(b"\r\n", added)
    elif ending == b"\r":
        added = _LF_BREAK.sub(b"\r", added)
    separator = b"" if os.pread(fd, 1, current.size - 1) in (b"\n", b"\r") else ending
    return separator + added + (b"" if added.endswith(ending[-1:]) else ending)


_LONE_LF = re.compile(rb"(?<!\r)\n")
_LF_BREAK = re.compile(rb"\r?\n")


def _last_line_ending(fd: int, size: int) -> bytes:
    """The kind of the file's last line break: ``\r\n``, ``\n`` or a lone ``\r`` (a CR-only note,
    as classic Mac OS saved it); ``\n`` for a file with none."""
    end = size
    while end > 0:
        start = max(0, end - (1 << 16))
        block = os.pread(fd, end - start, start)
        at = max(block.rfind(b"\n"), block.rfind(b"\r"))
        if at >= 0:
            if block[at:at + 1] == b"\r":  # the last break: no LF after it, so a lone CR
                return b"\r"
            return b"\r\n" if start + at > 0 and os.pread(fd, 1, start + at - 1) == b"\r" else b"\n"
        end = start
    return b"\n"


def _commit(store: HistoryStore, records: ReadRecords, resolved: ResolvedPath, folder: Folder,
            current: FileVersion | None, tmp: str, new: FileVersion, action: WriteAction,
            before_swap: Callable[[WriteResult], None] | None = None, seen: Window = None) -> WriteResult:
    """Store the new version, re-check the target, swap the temp file in, then log the new version.

    Every commit that can come before the check does (the new version's bytes, ``before_swap``'s
    idempotency key), so a disk-full state dir stops the write with the file unchanged, and nothing
    but a hash separates the check from the swap. The swap keeps what it displaces (:mod:`.swap`):
    a save that landed after the check is recorded in the history and put back, and the write is
    raced (tried again on the new version, or blocked). The agent-write entry is logged only once
    the new version is in place, so the history never lists a version the file never held.
    """
    target = resolved.abs_path
    result = WriteResult(
        resolved.display, target, action, new.version,
        current.version if current else None, new.size, created=current is None,
        changed=current is None or current.version != new.version,
    )
    swap: Swap | None = None
    swapped: bool | None = None
    recorded: set[str] = set()  # the versions displaced by the swap that the history holds now
    try:
        made = FileMode.of(folder.lstat(tmp))  # logged with the version: what a removal's restore gives back
        if store.objects.fits(new.size) and not store.objects.touch(new.version):  # a restore's are stored already
            fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0), dir_fd=folder.fd)
            try:
                with in_history():
                    store.objects.put_fd(fd, new.version)
            finally:
                os.close(fd)
        if before_swap is not None:
            before_swap(result)
        if current is None:
            create_new(folder, tmp, resolved.name)
        else:
            # From here on the temp file may hold a displaced version: named apart from a bare temp file.
            tmp = swap_name(folder, tmp)
            swap = Swap(folder, tmp, resolved.name)
            if not swap.lease_target():
                raise held_open(resolved)
            if current_version(folder, resolved.name) != current.version:
                raise Raced()
            faults.reach("write:checked")
            swapped = swap.exchange(current.version)
            if swapped and swap.opened_for_writing():  # a writer opened it since the lease: it keeps its file
                swap.put_back()
                swapped = False
                raise held_open(resolved)
            if swapped is None:  # this file system cannot exchange: the check and a rename, nothing between
                os.replace(tmp, resolved.name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
            elif not swapped:
                with in_history(), store.lock():  # every version displaced, before any is removed
                    for taken in swap.taken:
                        store.observe(target, resolved.display, taken.version, fd=taken.fd)
                recorded = {taken.version.version for taken in swap.taken}
                raise Raced()
    except BaseException:
        if swap is None:
            unlink_quietly(tmp, dir_fd=folder.fd)
        else:  # the new file, or a displaced version the history holds; anything else stays for the sweep
            swap.remove_leftover(recorded)
            swap.close()
        raise
    notes = []
    try:
        with in_history(), store.lock():
            store.record(target, resolved.display, new.version, new.size,
                         RESTORE if action == RESTORED else AGENT_WRITE, records.agent, records.session, made)
    except (HistoryFailed, MemoryToolError) as exc:
        if swap is not None and swapped:  # undone: the history and the file agree that nothing was written
            try:
                swap.put_back()
            finally:
                swap.remove_leftover({current.version} if current else set())
                swap.close()
            raise
        # A rename or a creation cannot be undone without a window of its own: the write stands, and
        # the history lists this version as an edit once it sees it.
        why = exc.error.strerror if isinstance(exc, HistoryFailed) else exc.message
        notes.append(f"{resolved.display} was {'restored' if action == RESTORED else 'written'}, but the history "
                     f"could not record this version ({why}): it is listed as an outside edit once seen")
    if swap is not None:
        swap.remove_leftover({current.version} if current else set())
        swap.close()
    try:
        folder.fsync()
    except OSError as exc:
        notes.append(f"the folder of {resolved.display} could not be synced to disk ({exc.strerror or exc})")
    try:
        records.put(target, new, WRITE, seen)
    except (OSError, MemoryToolError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        notes.append(
            f"{resolved.display} was {'restored' if action == RESTORED else 'written'}, but agent "
            f"'{records.agent}''s record of it could not be saved ({why}): read it before the next write"
        )
    return replace(result, warnings=tuple(notes)) if notes else result

