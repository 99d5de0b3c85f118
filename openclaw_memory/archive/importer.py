"""``import FILE``: an exported memory into this workspace, checked whole before anything is written.

1. **Check** (nothing written, the state dir not even opened): the archive is read from its start
   against its manifest (:mod:`.members`: every member's type, name, size and hash), each file's
   place here is resolved as a write resolves it (:mod:`.places`), and a memory file that exists
   here is refused unless ``force``. Any refusal is one line and nothing was written.
2. **Stage**, under the workspace's write lock and in one transaction of the state database: the
   archive is read again (it must be the one checked: its manifest, and every hash again); each
   file's bytes go to a fsynced temp file beside its place, given the archive's permission bits
   first (never more open than a file here, or the history here, had them, nor than this user's
   umask leaves a new file: :func:`_mode_for`),
   each stored version into the history's
   object store (each file's own version too: every version logged has its bytes), and each file ``force`` replaces is recorded in the history first (a sighting, as a
   write records the version it replaces). A failure rolls the transaction back and removes the
   temp files and the folders made for them.
3. **Place** each file as the guarded write does: a new one linked into place (which fails if a
   file appeared meanwhile), a replaced one exchanged with the version recorded (kept and put back
   when another save landed: :class:`~openclaw_memory.history.swap.Swap`).
4. **Log** the history: each path's versions with their own time, origin, agent and session, each
   under the name it had then, a move with its source, after what the path's log holds here (a
   version already logged at that time with that origin is not logged twice: importing the same
   archive again adds nothing), each with the moment it arrived here: a rollback to a moment before
   the import puts back what this workspace held then. A file placed where this history knew another
   version is logged again at that moment (a ``restore``): its listed time is when it arrived.

Killed at any step (nothing is lost, so there is nothing to undo), the files here are each as
they were or as the archive has them, what ``force`` replaced is in the history, and importing the
same archive again (with ``force`` when it replaced files) finishes: a file holding the archive's
bytes is no conflict, and a version logged already is not logged twice. So the intent (the
archive, ``force``) is journaled before the staging (:func:`_journal`) and dropped after the log:
plain doctor names a killed import, and ``doctor --fix`` (or the next ``mv``, ``rm`` or
``rollback``) runs it again (:func:`finish_import`). A killed run's temp files hold only the
archive's bytes, which the history holds: the import that finishes it removes them for the files it
places (:func:`_sweep_killed`), as the next write of that file, or ``doctor --fix``, does. A file
written since the killed run began is left as it is, named, its archive version logged in its
history (:func:`_written_since`: the intent keeps the history's last row id at the start, ``mark``,
and what each file held when the killed run looked, ``seen``); one the killed run placed holds the
archive's bytes and counts as imported.

The index is not touched: the next ``index`` or ``search`` finds the new files and embeds them.
Read records are not made: the importing agent reads a file before it writes it, as for any file
it did not write.
"""

from __future__ import annotations

import bisect
import os
import shlex
import stat
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .. import faults
from ..database import Database, enc
from ..errors import (
    DiskFull,
    ImportConflict,
    ImportRefused,
    MemoryToolError,
    PathRefused,
    UsageError,
    finished_first,
    is_no_space,
    os_error,
    shell_word,
    workspace_gone,
)
from ..files.paths import DREAMS, LEGACY_DREAMS, display_path
from ..files.read import path_changed
from ..fsutil.atomic import folder_owner, unlink_quietly
from ..fsutil.safeopen import Folder, FolderSwapped, open_folder
from ..history.failures import FailedAt, translated
from ..history.fileops import IMPORT_OP, FileOp, UnreadableIntent, clear_intent, describe, read_intent, write_intent
from ..history.guard import refuse_look_alike_at
from ..history.leftovers import sweep_leftovers
from ..history.moves import finish_pending
from ..history.objects import pread_blocks
from ..history.placing import (
    Raced,
    ReadOnlyNote,
    TakenOver,
    create_new,
    current_version,
    held_open,
    kept_stat,
    new_file_mode,
    open_current,
    read_only_note,
    recorded_mode,
    refuse_each_read_only,
    refuse_each_taking_over,
    remove_made_folders,
    swap_name,
    taking_over,
    temp_from_blocks,
)
from ..history.store import FileVersion, HistoryStore
from ..history.swap import Swap
from ..history.versions import EXTERNAL_EDIT, REMOVE, RESTORE, Entry, FileMode, short
from ..wire import key
from .manifest import PERMISSIONS, ArchiveManifest, FileRecord, Member, PathHistory, Refusal, Version
from .members import walk
from .places import NoPlaceHere, match_roots, resolve_place

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..files.read import ResolvedPath
    from ..settings import Settings


@dataclass(frozen=True)
class ImportResult:
    archive: str
    agent: str  # the agent whose memory was exported
    files: tuple[str, ...] = key()  # the memory files the archive held, as `files` shows them here
    replaced: tuple[str, ...] = key()  # of those, the ones that replaced a file here (its content is in the history)
    versions: int = key()  # history entries logged here
    skipped: tuple[str, ...] = key(omit=lambda r: not r.skipped, default=())  # histories left out (see below)
    # Files an interrupted import would have replaced, written since it began: left as they are (the archive's
    # version of each is in the history).
    left: tuple[str, ...] = key(omit=lambda r: not r.left, default=())
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())


@dataclass
class _Target:
    record: FileRecord
    member: Member
    resolved: ResolvedPath
    current: FileVersion | None = None  # what the file here holds (checked again under the lock)
    kept: FileMode | None = None  # its mode and owner, from the same look: a replaced file keeps them
    read_only: ReadOnlyNote | None = None  # from the same look, when this user may not write it in place
    folder: Folder | None = None
    existed: int | None = None  # folders of its path there were, when staging made the rest
    tmp: str | None = None
    placed: bool = False
    mode: FileMode | None = None  # the permission bits and owner staging gave its new bytes
    left: bool = False  # written since the interrupted import this run finishes began: left as it is


@dataclass
class _Plan:
    targets: dict[str, _Target] = field(default_factory=dict)  # by member name
    histories: list[tuple[PathHistory, ResolvedPath]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    beside: set[str] = field(default_factory=set)  # paths whose removed note's history goes beside the note here
    notes: tuple[str, ...] = ()  # how extra paths were matched, where it is not by path or one name
    left_out: list[str] = field(default_factory=list)  # each history skipped, and why
    roots: dict[str, str] = field(default_factory=dict)  # each of the archive's roots -> its folder here
    previous_named: bool = True  # each version names its path's previous one (format 2; format 1 none)
    archived: set[str] = field(default_factory=set)  # every version the archive's histories hold


def import_archive(settings: Settings, archive: str, *, force: bool = False, finishing: bool = False) -> ImportResult:
    """``finishing``: run again to finish a killed import (:func:`finish_import`): a file here that is
    not the archive's is no conflict before the lock, where what was written since it began is told."""
    if not finishing and Database(settings.data_dir).exists():  # (said first: this archive's conflicts were said instead)
        _another_import_waits(settings, os.path.abspath(archive))
    fd = _open_archive(archive)
    try:
        try:
            manifest = walk(fd)
            plan = _plan(settings, manifest, force or finishing, f"import {shlex.quote(archive)}{' --force' if force else ''}")
        except Refusal as exc:
            raise ImportRefused(archive, exc.problem, exc.member) from None
        store = HistoryStore.for_settings(settings)
        with store.write_lock():
            finished, op, earlier = _journal(settings, store, archive, force)
            try:
                with finished_first(finished):
                    result = _import(store, fd, archive, manifest, plan, force, settings, op, earlier)
            except MemoryToolError as exc:
                _clear_after(settings, exc)  # refused or stopped, and it says so: nothing is left to finish
                raise
            left = _cleared(settings)
            warnings = tuple(w for w in (finished, left) if w)
            return replace(result, warnings=(*warnings, *result.warnings)) if warnings else result
    finally:
        os.close(fd)


def _cleared(settings: Settings) -> str | None:
    """The import's record removed; what is left when it cannot be (the state dir's disk is full):
    the record stays, and doctor names the import as interrupted."""
    try:
        clear_intent(settings.data_dir)
    except MemoryToolError as exc:
        why = f"the disk of the state dir ({settings.data_dir}) is full" if isinstance(exc, DiskFull) else exc.message
        return (f"the import's record could not be cleared ({why}): `openclaw-memory doctor` names the import as "
                "interrupted, and `openclaw-memory doctor --fix` runs it again once that is resolved")
    return None


def _clear_after(settings: Settings, failure: MemoryToolError) -> None:
    """The record removed after ``failure``, which stays the error said: a full disk that refuses
    the removal too is added to it, never said instead of it (its "nothing was changed" after the
    files were placed was false)."""
    left = _cleared(settings)
    if left is not None:
        failure.message = f"{failure.message}; {left}"
        failure.args = (failure.message,)


def _another_import_waits(settings: Settings, path: str) -> FileOp | None:
    """The record of an interrupted operation (None: none, or one that cannot be read, which
    finish_pending drops); refused when it is another archive's import, which comes first."""
    try:
        earlier = read_intent(settings.data_dir)
    except UnreadableIntent:
        return None
    if earlier is not None and earlier.op == IMPORT_OP and earlier.path != path:
        raise UsageError(f"an interrupted import of {earlier.display} is waiting: run `openclaw-memory import "
                         f"{shlex.quote(earlier.display)}{' --force' if earlier.force else ''}` again first, or `openclaw-memory "
                         "doctor --fix`; nothing was imported")
    return earlier


def _journal(settings: Settings, store: HistoryStore, archive: str, force: bool) -> tuple[str | None, FileOp, FileOp | None]:
    """The intent, before anything is staged (the move's row: one mover at a time holds the write
    lock). A killed import leaves it: plain doctor names it, and ``doctor --fix`` (or the next ``mv``,
    ``rm`` or ``rollback``) runs it again (:func:`finish_import`). An earlier move's is finished first;
    an earlier import's is this one's when it is the same archive (run again, as the message says).
    What finishing the earlier one did, said (None when there was none), the intent written, and the
    earlier import's it finishes (None when this run is no rerun): that one's ``mark``, ``started``
    and ``seen`` are kept, what files written since it began are told by."""
    path = os.path.abspath(archive)
    earlier = _another_import_waits(settings, path)
    finished = finish_pending(settings) if earlier is None or earlier.op != IMPORT_OP else None
    rerun = earlier if earlier is not None and earlier.op == IMPORT_OP else None
    op = FileOp(IMPORT_OP, "begin", path, archive, "", 0, force=force, agent=settings.agent,
                session=settings.session or "")
    op = replace(op, mark=rerun.mark, started=rerun.started, seen=rerun.seen) if rerun else replace(op, mark=store.last_id())
    return finished, write_intent(settings.data_dir, op), rerun


def _written_since(store: HistoryStore, target: _Target, earlier: FileOp, archived: set[str]) -> bool:
    """Whether the file of ``target`` was written since the import ``earlier`` began (this run finishes
    it): it holds neither the archive's version nor what it held then, or the history logged
    another of its versions since (``mark``), neither the archive's (the killed run's log) nor the
    one it held (the killed run's sighting). Where the killed run did not get to look (``seen``), any
    version logged since (the killed run logged none)."""
    here = target.current.version if target.current is not None else None
    if here == target.member.hash:
        return False  # placed by the killed run, or holding the archive's bytes anyway
    path = target.resolved.abs_path
    rows = store.db.rows("SELECT version, origin FROM versions WHERE path = ? AND id > ?", (enc(path), earlier.mark))
    if earlier.seen is None or path not in earlier.seen:
        return bool(rows)
    was = earlier.seen[path]
    if here != was:
        return True
    return any(origin == REMOVE or (version != was and version not in archived) for version, origin in rows)


def finish_import(settings: Settings, op: FileOp) -> tuple[bool, str]:
    """Run a killed import again (the caller holds the write lock): (finished, what was done). One
    that cannot run now (the archive gone, a file changed here since without --force) is dropped,
    saying so: every file is as it was or as the archive has it, what it replaced is in the history,
    and what the killed run staged or placed is kept (:func:`_keep_staged`), said where."""
    as_it = settings.as_recorded(op.agent, op.session)
    try:
        result = import_archive(as_it, op.path, force=op.force, finishing=True)
    except MemoryToolError as exc:
        kept = _keep_staged(as_it, op)
        _clear_after(settings, exc)
        again = f"openclaw-memory import {shell_word(op.path)}{' --force' if op.force else ''}"
        back = "" if os.path.lexists(op.path) else " (the archive back where it was)"
        return False, (f"the interrupted {describe(op)} could not be run again ({exc.message}), so it was dropped "
                       f"unfinished: each file is as it was or as the archive has it, and what it replaced is in the "
                       f"history{kept}; `{again}` finishes it once that is resolved{back}")
    left = "".join(f"; {w}" for w in result.warnings if " was written since the interrupted import began" in w)
    return True, (f"finished the interrupted {describe(op)}: {len(result.files) - len(result.left)} file(s) imported, "
                  f"{result.versions} version(s) logged{left}")


def _keep_staged(settings: Settings, op: FileOp) -> str:
    """What the killed run of an import that cannot run again staged or placed, kept before its
    record is dropped (nothing else would reach it: the bytes were in the history's object store,
    which no version entry names until the log, the import's last step). A note it placed (it holds
    bytes the import stored, which no entry names, and not what it held when the import began) is
    logged as the import's, restored by its agent (it was an unattributed outside edit); the staged
    temp file of each note not placed yet (``.NAME.<hex>.tmp``: the archive's bytes) is set aside
    under ``.openclaw-repair/leftovers/<stamp>/``, with the note's own name where it is free, as
    doctor sets aside a leftover the history lacks (:func:`~..history.leftovers.sweep_leftovers`). What
    was done, said (empty when nothing)."""
    from ..files.paths import REPAIR_DIR, archive_stamp
    from ..files.read import resolve_memory_path
    from ..history.leftovers import logged, set_aside_under

    store = HistoryStore.for_settings(settings)
    workspace = str(settings.workspace)
    aside = f"{REPAIR_DIR}/leftovers/{archive_stamp()}"
    placed: list[str] = []
    moved: list[str] = []
    failed: list[str] = []
    for path, was in sorted((op.seen or {}).items()):
        try:
            resolved = resolve_memory_path(path, workspace, settings.extra_paths)
        except MemoryToolError:
            continue  # (an extra path not given now: its leftovers are doctor's when it is)
        try:
            current, kept, _ = _version_here(resolved)
            if (current is not None and was != "" and current.version != was and store.objects.has(current.version)
                    and not logged(store, current.version)):
                with store.lock():
                    store.record(path, resolved.display, current.version, current.size, RESTORE, settings.agent,
                                 settings.session, kept)
                placed.append(resolved.display)
        except (OSError, MemoryToolError) as exc:
            failed.append(f"{resolved.display} (its history: {exc.message if isinstance(exc, MemoryToolError) else exc})")

        def keep(folder: Folder, name: str, seen: os.stat_result, note: ResolvedPath = resolved) -> None:
            where, why = set_aside_under(workspace, aside, folder, name, seen, note.name)
            if where is not None:
                moved.append(f"{note.display} as {where}")
            else:
                failed.append(f"{os.path.join(os.path.dirname(note.display), name)} ({why})")

        try:
            with resolved.folder() as folder:
                sweep_leftovers(store, resolved, folder, keep)
        except (OSError, MemoryToolError, FolderSwapped):
            continue  # no folder there (nothing was staged in it), or swapped: doctor --fix looks again
    said = ""
    if placed:
        said += (f"; {', '.join(placed)} {'was' if len(placed) == 1 else 'were'} placed before the interruption, "
                 "as the archive has it, and logged now as restored by the import")
    if moved:
        said += (f"; the staged notes not placed yet are kept, set aside (nothing lost): {', '.join(moved)} "
                 "(copy one into place to have it now)")
    if failed:
        said += f"; left where they are: {', '.join(failed)}"
    return said


def _open_archive(path: str) -> int:
    """FILE, open for reading: missing, a folder, unreadable or not a plain file is one line, exit 2."""
    if not path or not path.strip():
        raise UsageError("no archive file given")
    if path == "-":  # a shell's "standard input", as export refuses it for its output
        raise UsageError("import reads a file, not standard input: give the archive's file name (./- for a file named -)")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UsageError(f"cannot import {path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"cannot import {path}: it is a folder; give the archive file export wrote") from None
    except OSError as exc:
        raise UsageError(f"cannot import {path}: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode) or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "a folder; give the archive file export wrote" if stat.S_ISDIR(st.st_mode) else "not a plain file"
        raise UsageError(f"cannot import {path}: it is {kind}")
    try:
        os.pread(fd, 1, 0)
    except OSError as exc:
        os.close(fd)
        raise UsageError(f"cannot import {path}: {exc.strerror or exc}") from None
    return fd


def _plan(settings: Settings, manifest: ArchiveManifest, force: bool, again: str) -> _Plan:
    """Where each file and history goes here, read only; ImportConflict for files that exist here.
    ``again``: the import's arguments, for the command a refusal of its extra paths gives."""
    plan = _Plan(previous_named=manifest.format_version >= 2,
                 archived={v.version for history in manifest.history for v in history.versions})
    places: dict[str, str] = {}
    roots, plan.notes = match_roots(settings, manifest.roots, {record.root for record in manifest.files}, again)
    plan.roots = roots
    for record in manifest.files:
        resolved = resolve_place(settings, roots, record.root, record.path)
        if resolved.abs_path in places:
            raise Refusal(f"two of its files land on {resolved.display} here", record.member)
        places[resolved.abs_path] = record.member
        plan.targets[record.member] = _Target(record, manifest.member(record.member), resolved,
                                              _version_here(resolved)[0])
    _refuse_overlaps(plan, str(settings.workspace))
    for t in plan.targets.values():
        if t.current is None:  # a note made here: never beside one whose name looks the same (NFC)
            refuse_look_alike_at(t.resolved, "imported")
    conflicts = [t.resolved.display for t in plan.targets.values() if _replaces(t)]
    if conflicts and not force:
        raise ImportConflict(tuple(conflicts))
    for history in manifest.history:
        try:
            resolved = resolve_place(settings, roots, history.root, history.path)
        except NoPlaceHere as exc:  # an extra path not configured here, a path no memory path here (AGENTS.md)
            plan.skipped.append(history.path or history.root)
            plan.left_out.append(f"the history of {history.path or history.root} was not imported: {exc.why}")
            continue
        member = places.get(resolved.abs_path)
        try:
            here = _version_here(resolved)[0] if member is None else None
        except PathRefused:
            here = None  # no file can be there now; its history is still this path's
        if here is not None:
            if history.versions and history.versions[-1].origin == REMOVE:
                # A note removed from that name: its entries go beside the note here, as a name keeps
                # those of the notes removed from it (`restore PATH --last` brings it back; it was
                # left out, and the archive's `rm` could not be undone here).
                plan.histories.append((history, resolved))
                plan.beside.add(resolved.abs_path)
                continue
            # A moved file's history (its last entry not a removal): whose its entries are, the note's
            # here or the one moved away, cannot be told.
            plan.skipped.append(resolved.display)
            plan.left_out.append(f"the history of {resolved.display} was not imported: a file of that name is here, "
                                 "and the archive's entries (of a file moved or deleted there) cannot be told from its own")
            continue
        plan.histories.append((history, resolved))
    return plan


def _refuse_overlaps(plan: _Plan, workspace: str) -> None:
    """Files of the archive that cannot all be memory here, whatever this workspace holds: one whose
    place is a folder of another's (``memory/a.md`` and ``memory/a.md/b.md``: the second failed its
    placing as "changed while it was imported", exit 1, bidding a run again that could never
    finish), or the dream diary and its legacy twin (the scan lists one and skips the other)."""
    by_place = {t.resolved.abs_path: t for t in plan.targets.values()}
    places = sorted(by_place)
    for place in places:  # a path below `place` sorts after `place + "/"`, before any other name
        below = places[min(bisect.bisect_left(places, place + "/"), len(places) - 1)]
        if below.startswith(place + "/"):
            raise Refusal(f"its files {by_place[place].resolved.display} and {by_place[below].resolved.display} cannot "
                          "both be here: the one is a folder of the other", by_place[below].record.member)
    dreams = [by_place.get(os.path.join(workspace, name)) for name in (DREAMS, LEGACY_DREAMS)]
    if dreams[0] is not None and dreams[1] is not None:
        raise Refusal(f"it holds both {DREAMS} and {LEGACY_DREAMS}: the scan lists {DREAMS} as the dream diary and "
                      f"skips {LEGACY_DREAMS}", dreams[1].record.member)


def _version_here(resolved: ResolvedPath, keep: HistoryStore | None = None,
                  ) -> tuple[FileVersion | None, FileMode | None, ReadOnlyNote | None]:
    """What the file here holds, its mode and owner, and whether it is read-only: one look at one open file.

    ``keep``: a look whose version is logged (a sighting's, as :meth:`HistoryStore.observe` does):
    its bytes go to that history first, read from the file hashed (a version logged without them was
    lost at the next edit, shown as evicted, and a rollback to a moment that held it refused). Bytes
    that no longer hash to it (the file written in place meanwhile) are no version to log: None, as
    when there is no file (the next sighting logs what it holds then)."""
    try:
        folder, fd, current = open_current(resolved)
    except NotADirectoryError:  # as `write` refuses it (it was "not a folder (PATH)", exit 1, the file unnamed)
        raise PathRefused(f"refused: {resolved.display} cannot be imported here: a folder on its path is a file; "
                          "nothing was written") from None
    except PathRefused as exc:  # the import's own words (it was "refused: memory/x.md: not a regular file" alone)
        if exc.message.startswith("cannot read"):
            raise
        raise PathRefused(f"refused: {resolved.display} cannot be imported here: {_what_is_there(resolved)}; "
                          "nothing was written") from None
    try:
        if (keep is not None and current is not None and fd is not None and keep.objects.fits(current.size)
                and keep.objects.put_fd(fd, current.version) is None):
            current = None
        kept = kept_stat(fd)
        return current, kept, read_only_note(resolved.display, kept, folder)
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()


def _what_is_there(resolved: ResolvedPath) -> str:
    """What is at ``resolved`` in a note's place, for the import's refusal (a folder, a FIFO, a
    socket, a device, a symbolic link)."""
    try:
        mode = os.lstat(resolved.abs_path).st_mode
    except OSError:
        return "it is not a regular file"
    kind = ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a symbolic link" if stat.S_ISLNK(mode)
            else "not a regular file")
    return f"{kind} is there, not a memory file (move it away to import the file)"


def _import(store: HistoryStore, fd: int, path: str, manifest: ArchiveManifest, plan: _Plan, force: bool,
            settings: Settings, op: FileOp, earlier: FileOp | None) -> ImportResult:
    targets = plan.targets
    archived = _archived_versions(plan)
    for target in targets.values():  # again, under the lock: what the staging records and places against
        target.current, target.kept, target.read_only = _version_here(target.resolved)
        # A killed import without --force replaced nothing: a file holding other bytes now came since.
        target.left = earlier is not None and (_written_since(store, target, earlier, archived.get(
            target.resolved.abs_path, set())) or (not earlier.force and _replaces(target)))
        if _replaces(target) and not force:
            raise ImportConflict((target.resolved.display,))
    if op.seen is None:  # what each file held when this import began, before anything is staged or logged
        write_intent(settings.data_dir, replace(op, seen={
            t.resolved.abs_path: "" if t.left else t.current.version if t.current is not None else None
            for t in targets.values()}))
    # Those --force would replace, refused whole naming each, as a write of one is.
    refuse_each_read_only((t.read_only for t in targets.values() if _replaces(t)), "written")
    # And other users' notes whose owners could no longer write the file of this user's put in their place.
    refuse_each_taking_over((_taken_over(store, t) for t in targets.values() if _replaces(t)), "an import", "written")
    try:
        try:
            with store.lock():
                modes = {(d.root, d.path): d.mode for d in manifest.folders}
                walk(fd, lambda member, blocks: _stage(store, targets, modes, member, blocks), expected=manifest)
                for target in targets.values():
                    if _replaces(target):
                        kept = store.observe_file(target.resolved.abs_path, target.resolved.display)
                        if kept is not None and not store.objects.has(kept.version):
                            raise UsageError(f"refused: {target.resolved.display} ({kept.size:,} bytes) is too big for the "
                                             "history ([history] max_bytes / 8), so --force could not keep what it holds; "
                                             "nothing was written")
        except Refusal as exc:
            raise ImportRefused(path, exc.problem, exc.member) from None
        except FailedAt as failed:
            raise os_error(failed.error, failed.where, failed.outcome) from None
        except OSError as exc:
            raise os_error(exc, "the workspace or the state dir", "nothing was written") from None
        faults.reach("import:staged")
        stopped = _place_all(store, targets)
    finally:
        _clean(targets)
    added = _log(store, plan, stopped, settings)
    _sweep_killed(store, targets)  # after the log: a leftover goes only as bytes a version names
    placed = [t for t in targets.values() if t.placed]
    left = [t for t in targets.values() if t.left]
    if stopped is not None:
        raise MemoryToolError(
            f"import stopped: {stopped}; {len(placed)} of {len(targets)} files were imported before it, with their "
            "history, and the others are unchanged: run import again with --force to finish")
    return ImportResult(
        os.path.abspath(path), manifest.agent, tuple(t.resolved.display for t in targets.values()),
        tuple(t.resolved.display for t in placed if _replaces(t)), added, tuple(plan.skipped),
        left=tuple(t.resolved.display for t in left),
        warnings=(*plan.notes, *plan.left_out, *(f"{t.resolved.display} was written since the interrupted import began: left as it is; "
                                 f"its archive version ({short(t.member.hash)}) is in the history" for t in left)))


def _archived_versions(plan: _Plan) -> dict[str, set[str]]:
    """The versions the archive gives each path here (its stored history, its file)."""
    versions: dict[str, set[str]] = {}
    for history, resolved in plan.histories:
        versions.setdefault(resolved.abs_path, set()).update(v.version for v in history.versions)
    for target in plan.targets.values():
        versions.setdefault(target.resolved.abs_path, set()).add(target.member.hash)
    return versions


def _taken_over(store: HistoryStore, target: _Target) -> TakenOver | None:
    """The note here, another user's, when the file of this user's the import puts in its place (with
    the bits :func:`_mode_for` gives it) is one its owner could no longer write (:func:`taking_over`)."""
    try:
        with target.resolved.folder() as folder:
            return taking_over(target.resolved.display, target.kept, _mode_for(store, target).mode, folder.fd)
    except (OSError, PathRefused):
        return None  # (its folder gone or swapped since the look: staging says so)


def _replaces(target: _Target) -> bool:
    return not target.left and target.current is not None and target.current.version != target.member.hash


def _store(store: HistoryStore, member: Member, blocks: Iterator[bytes]) -> None:
    """A member's bytes into the history's object store, checked against its hash."""
    try:
        store.objects.put_blocks(blocks, expected=member.hash)
    except OSError as exc:
        if is_no_space(exc):
            raise FailedAt(exc, f"the state dir ({store.data_dir})", "nothing was written") from None
        raise


def _stage(store: HistoryStore, targets: dict[str, _Target], modes: dict[tuple[str, str], int], member: Member,
           blocks: Iterator[bytes]) -> None:
    """One member: a stored version into the object store, a file's bytes to a temp file beside its place."""
    if member.name.startswith("objects/"):
        if store.objects.fits(member.size):
            _store(store, member, blocks)
        return
    # The file's version is logged (as the import's, or as the archive's version of a file left as
    # it is): its bytes go to the history too, as a write's do, when they fit. An archive whose history
    # had not kept them (evicted there, or past its own limit) lists no object of them: the next
    # edit here lost them, `history` showing the version imported as evicted.
    keep = store.objects.fits(member.size) and not store.objects.has(member.hash)
    target = targets[member.name]
    if target.left or (target.current is not None and target.current.version == member.hash):
        # Written since the interrupted import began (its archive version goes to the history only),
        # or the file here holds these bytes already.
        if keep:
            _store(store, member, blocks)
        return
    try:
        _stage_file(store, target, modes, blocks)
    except OSError as exc:
        if is_no_space(exc):  # named (it was "the workspace or the state dir", no folder)
            raise FailedAt(exc, f"the workspace ({os.path.dirname(target.resolved.abs_path)})", "nothing was written") from None
        raise
    if keep:  # read back from the temp file staged (its blocks are read once)
        assert target.folder is not None and target.tmp is not None
        fd = os.open(target.tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=target.folder.fd)
        try:
            _store(store, member, pread_blocks(fd))
        finally:
            os.close(fd)


def _stage_file(store: HistoryStore, target: _Target, modes: dict[tuple[str, str], int], blocks: Iterator[bytes]) -> None:
    if target.folder is None:
        try:
            target.folder = target.resolved.folder()
        except FileNotFoundError:
            target.folder, target.existed = _make_folder(target, modes)
    target.mode = _mode_for(store, target)
    target.tmp, _, _ = temp_from_blocks(target.folder, target.resolved, blocks, target.mode)


def _make_folder(target: _Target, modes: dict[tuple[str, str], int]) -> tuple[Folder, int]:
    """The file's folder and how many of its folders existed already (as :func:`make_folder`), each
    folder it makes given the bits the archive lists for it (``folders``) at its ``mkdir``: a private
    ``memory/priv/`` is not made with the umask's ``0755``, its file names visible to every user.
    The owner keeps ``rwx`` (the import writes its files there); a folder the archive does not list
    (an older export's) gets ``0755`` less the umask, as a write makes one; a folder that exists is
    left as it is."""
    resolved = target.resolved
    dirs = resolved.parts[:-1]
    try:
        # The workspace itself is never made (a session outlives its folder); an extra path is, as a write makes it.
        folder = Folder.under(resolved.root, create=not resolved.in_workspace)
    except FileNotFoundError as exc:
        if resolved.in_workspace and exc.filename == resolved.root:
            raise workspace_gone(resolved.root, "; nothing was written") from None
        raise
    except FolderSwapped as exc:
        raise path_changed(resolved, exc, "nothing was written") from None
    existed, made = 0, False
    try:
        for depth in range(1, len(dirs) + 1):
            part = dirs[depth - 1]
            try:
                fd = open_folder(folder.path, (part,), root_fd=folder.fd)
            except FileNotFoundError:
                mode = modes.get((target.record.root, "/".join(dirs[:depth])))
                fd = open_folder(folder.path, (part,), create=True, root_fd=folder.fd,
                                 mode=0o755 if mode is None else (mode & PERMISSIONS) | 0o700)
                made = True
            if not made:
                existed = depth
            folder.close()
            folder = Folder(fd, os.path.join(folder.path, part))
        return folder, existed
    except BaseException as exc:
        folder.close()
        remove_made_folders(resolved, existed)
        if isinstance(exc, FolderSwapped):
            raise path_changed(resolved, exc, "nothing was written") from None
        raise


def _mode_for(store: HistoryStore, target: _Target) -> FileMode:
    """The permission bits and owner of a file the import writes: the archive's bits (a ``0600`` note
    of the exporting machine stays private here: it came ``0644``, readable by every user), never
    more open than what is here says either: a file here keeps its owner and narrows its bits to
    those it has (the look that found its version), one brought back where none is (removed here)
    to those this history saw last, and a new one to what this user's umask leaves, as a write
    makes one (:func:`new_bits`), owned as a write's new note is (:func:`folder_owner`). The owner always keeps read and write. Given to the temp file
    before the rename that names it: no moment holds the bytes more open."""
    archived = target.record.mode & PERMISSIONS
    here = target.kept if target.current is not None else None
    if here is None:
        here = recorded_mode(store, target.resolved)
    if here is None:
        # Root importing into a user's workspace: the folder's owner's, as a write's new note (root's
        # note was one the user's own agent was refused writing: "read-only (owned by uid 0)").
        owner = folder_owner(target.folder.fd) if target.folder is not None else None
        return FileMode(new_bits(archived), *(owner or (os.geteuid(), os.getegid())))
    return here._replace(mode=here.mode & (archived | OWNER_RW))


OWNER_RW = 0o600


def new_bits(archived: int) -> int:
    """The bits a file new here gets from the archive's: those the importing user's umask leaves of
    them (``new_file_mode``, as a write's new file), never execute, set-id or sticky, and always
    read and write for its owner (a ``0666`` note stays ``0600`` under umask ``077``: it arrived
    writable by every user; ``0000`` one its owner could not read)."""
    return (archived & new_file_mode()) | OWNER_RW


def _place_all(store: HistoryStore, targets: dict[str, _Target]) -> str | None:
    """Put each staged file in place; the reason it stopped, or None when every one is in place."""
    for target in targets.values():
        if target.left:
            continue
        if target.tmp is None:
            target.placed = True  # the file here held the archive's bytes already
            continue
        assert target.folder is not None
        try:
            translated(store, target.resolved, "imported", lambda t=target: _place(t))
        except Raced:
            return f"{target.resolved.display} changed while it was imported (it keeps what it holds)"
        except MemoryToolError as exc:
            return exc.message
        target.placed = True
        faults.reach("import:placed")
    return None


def _place(target: _Target) -> None:
    """As the guarded write's commit places its file (history.guard._commit): a new file linked where
    nothing is, a replaced one exchanged with the version the history just recorded."""
    folder, name, tmp = target.folder, target.resolved.name, target.tmp
    assert folder is not None and tmp is not None
    if target.current is None:
        create_new(folder, tmp, name)
        target.tmp = None
        return
    tmp = target.tmp = swap_name(folder, tmp)
    assert target.kept is not None  # (read with its version: what the staged file's mode was made from)
    swap = Swap(folder, tmp, name, target.kept)
    try:
        if not swap.lease_target():
            raise held_open(target.resolved)
        if current_version(folder, name) != target.current.version:
            raise Raced()
        swapped = swap.exchange(target.current.version)
        if swapped and swap.opened_for_writing():
            swap.put_back()
            raise held_open(target.resolved)
        if swapped is None:  # no exchange on this file system: the check, then a rename
            os.replace(tmp, name, src_dir_fd=folder.fd, dst_dir_fd=folder.fd)
        elif not swapped:  # another save landed: put back; this file is not imported
            raise Raced()
        # What is left at the temp name: the replaced version, recorded, or our own file.
        swap.remove_leftover({target.current.version})
        target.tmp = None
    finally:
        swap.close()


def _sweep_killed(store: HistoryStore, targets: dict[str, _Target]) -> None:
    """What killed runs left beside each file placed (an import killed after its staging left each
    file's temp copy, ``.NAME.<hex>.tmp``; the run that finished it said it succeeded and left them,
    full copies, for doctor to name): removed as a write of the file removes them
    (:func:`~..history.leftovers.sweep_leftovers`: this import holds the write lock, so no writer's
    is in progress; a temp file goes at once when the history holds its bytes, as it holds every
    version the archive stored, a swap file once its bytes are in the history). Run after the log:
    a temp file goes only as bytes a version entry names, and the log names the archive's (its
    folder opened again: :func:`_clean` closed the staging's)."""
    for target in targets.values():
        if not target.placed and not target.left:  # (a file left as it is: its archive version is logged)
            continue
        try:
            with target.resolved.folder() as folder:
                sweep_leftovers(store, target.resolved, folder)
        except (OSError, MemoryToolError, FolderSwapped):
            continue  # its folder gone or swapped meanwhile: the next write of the file, or doctor --fix, sweeps


def _clean(targets: dict[str, _Target]) -> None:
    """Temp files of files not placed (a swap's leftover that is not ours stays for the next write's sweep)
    and the folders made for them; every folder closed."""
    for target in targets.values():
        folder = target.folder
        if folder is None:
            continue
        if target.tmp is not None and target.tmp.endswith(".tmp"):
            unlink_quietly(target.tmp, dir_fd=folder.fd)
        folder.close()
        if not target.placed and target.existed is not None:
            remove_made_folders(target.resolved, target.existed)


def _log(store: HistoryStore, plan: _Plan, stopped: str | None, settings: Settings) -> int:
    """Each path's versions, after what its log holds here, skipping those it holds already, each as
    the archive's history logged it (:func:`_log_history`); the versions of a file that was not
    placed wait for the import that places it."""
    agent, session = settings.agent, settings.session
    not_placed = {t.resolved.abs_path for t in plan.targets.values() if not t.placed and not t.left}
    # Each version's bits are logged as a file made here from it gets them (a removed 0600 note that
    # `restore --last` brings back comes back 0600; a 0666 one 0666 less this user's umask, never
    # more: new_bits), the version a file was given here with its bits, with the owner the file here
    # has, or the one a file made here gets.
    owners = {t.resolved.abs_path: (t.mode or t.kept) for t in plan.targets.values()}
    given = {t.resolved.abs_path: t.member.hash for t in plan.targets.values()}
    added = 0
    arrived = time.time()  # the archive's versions are this workspace's from now on, not from their own times
    try:
        with store.lock(), store.evicting_once():
            # An entry this log holds already is not logged again, whichever path's history holds it now
            # (an export imported back after `mv c e`: c's versions, logged again under c.md, said c.md
            # held them until the import; after `mv a c`, a's said c.md held them before the move).
            logged = store.log.logged()
            # The paths this workspace's history knew before the import logs anything.
            known = {t.resolved.abs_path for t in plan.targets.values() if store.log.latest(t.resolved.abs_path)}
            for history, resolved in plan.histories:
                if resolved.abs_path in not_placed:
                    continue
                beside = resolved.abs_path in plan.beside
                since, last = (store.log.note_since(resolved.abs_path), store.last_id()) if beside else (0, 0)
                owner = owners.get(resolved.abs_path)

                def mode_of(v: Version, owner: FileMode | None = owner, path: str = resolved.abs_path) -> FileMode | None:
                    bits = (owner.mode if owner is not None and given.get(path) == v.version
                            else None if v.mode is None else new_bits(v.mode & PERMISSIONS))
                    return None if bits is None else FileMode(
                        bits, *((owner.uid, owner.gid) if owner else (os.geteuid(), os.getegid())))

                new = _log_history(store, history, resolved, logged, mode_of, arrived, plan, str(settings.workspace))
                added += new
                if beside and new:
                    added += _keep_the_note_here(store, resolved, since, last)
            for target in plan.targets.values():
                if target.left:
                    added += _log_left(store, target, arrived)
                    continue
                path = target.resolved.abs_path
                latest = store.log.latest_in_time(path)
                made = target.current is None or target.current.version != target.member.hash
                if target.placed and ((made and path in known) or latest is None
                                      or latest.version != target.member.hash or latest.origin == REMOVE):
                    # The import put the archive's version where this history knew another (--force
                    # replaced it, or a note of that name was removed here), or its history does not
                    # end with what it holds now (as a rollback replays it, by time): logged by an
                    # earlier import, or here, before what --force replaced, or a removal here since
                    # the export. The file holds the archive's version from now on, as a restore
                    # puts one back, listed at the moment it did: the archive's own entry of it is
                    # dated the exporting side's time, and a rollback to that time (which `history`
                    # printed for the current version) put back what this workspace held then.
                    store.record(path, target.resolved.display, target.member.hash,
                                 target.member.size, RESTORE, agent, session, target.mode or target.kept)
                    added += 1
    except (OSError, MemoryToolError) as exc:
        full = isinstance(exc, DiskFull) or is_no_space(exc)
        why = (f"the disk of the state dir ({store.data_dir}) is full" if full
               else exc.message if isinstance(exc, MemoryToolError) else exc.strerror or str(exc))
        raise MemoryToolError(f"the files were imported{' in part' if stopped else ''}, but their history could not be "
                              f"logged ({why}): {'free some space, then ' if full else ''}run import again with --force "
                              "to log it") from None
    return added



def _log_history(store: HistoryStore, history: PathHistory, resolved: ResolvedPath, logged: set[tuple[str, float, str]],
                 mode_of: Callable[[Version], FileMode | None], arrived: float, plan: _Plan, workspace: str) -> int:
    """The archive's entries of one path not in ``logged``, each as its history logged it: under the
    name it had then (a moved file's earlier entries), a move with its source, counted against the
    version its path logged before it there, and an entry a move brought marked as arrived by that
    move here (what the next move of the note takes along: :meth:`VersionLog.note_since`). Each was
    logged under the file's name now, a move from that name to itself: `log` rewrote where things
    were. How many entries were logged."""

    def here(place: tuple[str, str] | None) -> str | None:
        base = None if place is None else plan.roots.get(place[0])
        if place is None or base is None:  # (an extra path matching none here: the path's own name)
            return None
        return display_path(os.path.normpath(os.path.join(base, *place[1].split("/"))) if place[1] else base, workspace)

    ids: dict[int, int] = {}  # the archive's index of each entry logged now -> its id here
    for index, v in enumerate(history.versions):
        if (v.version, v.time, v.origin) in logged:
            continue
        store.record_entry(resolved.abs_path, here(v.name) or resolved.display,
                           Entry(v.version, v.time, v.size, v.origin, v.agent, v.session), mode_of(v),
                           moved_from=here(v.moved_from), arrived=arrived)
        ids[index] = store.last_id()
    with store.lock() as conn:
        for index, entry_id in ids.items():
            v = history.versions[index]
            # The version logged before it there, not here: the entries of several notes of one name
            # (a removed one's, a moved one's) are listed in the order they were logged, and each is
            # counted against its own note's, as `log` counts it there. Not where the archive names
            # none (format 1: each was counted against nothing, as the one logged here first is), nor
            # one neither the archive nor this history holds (the exporting side's retention dropped
            # it: a rollback to before the import said the history no longer knew what the note held).
            arrival = None if v.arrived_by is None else min(
                (i for k, i in ids.items() if k >= v.arrived_by), default=store.last_id() + 1)
            if plan.previous_named:
                previous = v.previous if v.previous is None or v.previous in plan.archived or conn.execute(
                    "SELECT 1 FROM versions WHERE version = ? LIMIT 1", (v.previous,)).fetchone() else None
                conn.execute("UPDATE versions SET previous = ? WHERE id = ?", (previous, entry_id))
            conn.execute("UPDATE versions SET arrived_by = COALESCE(?, arrived_by) WHERE id = ?", (arrival, entry_id))
    return len(ids)


def _keep_the_note_here(store: HistoryStore, resolved: ResolvedPath, since: int, last: int) -> int:
    """After a removed note's entries were logged beside the note here (ids after ``last``), the note
    here keeps its own: a move takes along the entries after the name's last removal (``since`` was
    it before), or brought by a move after it (:meth:`VersionLog.note_since`), so they are marked as
    arrived after the removal logged now; and its history ends, by time and as logged, with what it
    holds (a rollback to now replayed the archive's removal, later dated, and archived it). How many
    entries were logged."""
    path = resolved.abs_path
    with store.lock() as conn:
        arrival = store.last_id() + 1
        conn.execute("UPDATE versions SET arrived_by = ? WHERE path = ? AND id <= ? AND (id > ? OR arrived_by > ?)",
                     (arrival, enc(path), last, since, since))
    try:
        current, kept, _ = _version_here(resolved, keep=store)
    except PathRefused:
        return 0  # no file there now (it changed since the plan): its history stays as logged
    ends = (store.log.latest_in_time(path), store.log.latest(path))
    if current is not None and any(e is None or e.version != current.version or e.origin == REMOVE for e in ends):
        store.record(path, resolved.display, current.version, current.size, EXTERNAL_EDIT, None, None, kept)
        return 1
    return 0


def _log_left(store: HistoryStore, target: _Target, arrived: float) -> int:
    """A file left as it is (written since the interrupted import began): the archive's version of it
    in its history (after its stored versions, logged as any path's), the history still ending with
    what the file holds. How many entries were logged."""
    path, display, added = target.resolved.abs_path, target.resolved.display, 0
    if target.member.hash not in {e.version for e in store.log.entries(path)}:
        store.record_entry(path, display, Entry(target.member.hash, arrived, target.member.size, RESTORE, None, None),
                           arrived=arrived)
        added += 1
    try:  # looked at again: the file may have been written since the look before the staging
        current, kept, _ = _version_here(target.resolved, keep=store)
    except PathRefused:
        return added  # no file there now: its history stays as logged
    # By time (what a rollback to now replays last) and as logged (what the history shows as current):
    # the archive's entries were logged after the write, some maybe with later times (another clock).
    ends = (store.log.latest_in_time(path), store.log.latest(path))
    if current is not None and any(e is None or e.version != current.version or e.origin == REMOVE for e in ends):
        store.record(path, display, current.version, current.size, EXTERNAL_EDIT, None, None, kept)
        added += 1
    return added
