"""``mv`` and ``rm`` of a memory file: guarded like a write, journaled, never losing a byte.

Both run under the workspace's write lock, on paths resolved as ``write`` resolves them (one
folder at a time from the allowed root's descriptor), after the guard's check of what this
session read (:func:`~.stale.check_write`, the same rules and hints as a replacing write).

A move: the file's bytes are stored in the history first; the intent is committed
(:mod:`.fileops`); ``mv --force`` archives the file it replaces as ``rm`` does; the rename
(:func:`~..fsutil.move.safe_move`: a link that never replaces, or across file systems a verified
copy whose source goes only as the bytes copied) is the step that decides; then one transaction
hands the source's history and read records to the destination, logs the move as a version
(origin ``move``) and drops the intent. A removal: the bytes are stored, the intent committed, the
file unlinked only as those bytes (:func:`~..fsutil.move.remove_if_holds`), then one transaction
logs the removal (origin ``remove``: the version log never drops it and the object store never
evicts its bytes) and drops the intent.

A process killed anywhere leaves the intent, and :func:`finish_pending` (``doctor --fix``, or the
next ``mv`` or ``rm``) looks at the files: past the deciding step it finishes (the source's
leftover name goes only as the bytes moved, the history is recorded), before it undoes (a name
taken aside gets it back, a half copy goes); the bytes were in the history all along.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .. import faults
from ..database import enc
from ..errors import (
    MemoryToolError,
    PathRefused,
    UsageError,
    WriteBlocked,
    finished_first,
    is_no_space,
    os_error,
    printable,
    shell_word,
    shown,
)
from ..files.paths import CANONICAL_ROOT, USER_ROOT, absolute_path, display_path
from ..files.read import ResolvedPath, alike_words, look_alike_there, refuse_new_not_utf8, resolve_memory_path
from ..fsutil.atomic import acl_narrowed_mode, leftover_kind
from ..fsutil.move import (
    DestinationRefused,
    SourceKept,
    StickyRefused,
    asides_of,
    check_file_may_move,
    check_may_lose_name,
    check_names_may_change,
    give_back,
    remove_if_holds,
    safe_move,
    same_file,
    unlink_other_name,
)
from ..fsutil.safeopen import Folder, FolderSwapped, NotRegularFile
from ..wire import key
from .failures import FailedAt, HistoryFailed, in_history, not_a_folder_on, translated, where_written
from .fileops import (
    IMPORT_OP,
    LINKS_STEP,
    MOVE_OP,
    REMOVE_OP,
    FileOp,
    UnreadableIntent,
    clear_intent,
    describe,
    read_intent,
    write_intent,
)
from .guard import IndexUpdate, refuse_dream_twin, refuse_look_alike_at
from .placing import kept_stat, logged_in, make_folder, open_current, refuse_read_only, remove_made_folders, resolve_writable
from .stale import check_write
from .states import ReadRecords
from .store import FileVersion, HistoryStore, check_prefix, snapshot_fd
from .versions import EXTERNAL_EDIT, MOVE, REMOVE, FileMode, short

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..settings import Settings

# The root files OpenClaw loads into every new session: moving or removing one asks for --force.
STARTUP_FILES = (CANONICAL_ROOT, USER_ROOT)


@dataclass(frozen=True)
class LinkLeft:
    """A link to the moved file that ``--update-links`` did not rewrite, and why."""

    source: str  # the memory file it is written in (as it is after the move)
    line: int
    text: str  # as written
    why: str

    @property
    def failed(self) -> bool:
        """Left because its file's write failed (the disk full), not by a rule; it crosses the
        service's socket as its text, so its text says it."""
        return self.why.startswith(WRITE_FAILED)


# How LinkLeft.why begins for a link whose file's rewrite failed: `mv` exits 1 for it, where a link
# left on purpose (ambiguous, changed meanwhile) exits 0.
WRITE_FAILED = "its rewrite failed: "


@dataclass(frozen=True)
class MoveResult:
    """A move: ``source`` is where the file was (links naming it point at nothing now, unless
    ``--update-links`` rewrote them: ``links_updated``), ``path`` where it is."""

    path: str
    source: str = key("from")
    version: str = key()
    size: int = key()
    how: str = key()  # "rename", or "copy" across file systems (verified, then the source removed)
    replaced: str | None = key(omit=lambda r: r.replaced is None, default=None)  # archived from the destination (--force)
    index: IndexUpdate | None = None
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())
    # --update-links: the files whose links to the moved file were rewritten, and the links left as they are
    links_updated: tuple[str, ...] = key(omit=lambda r: not r.links_updated and not r.links_not_updated, default=())
    links_not_updated: tuple[LinkLeft, ...] = key(omit=lambda r: not r.links_updated and not r.links_not_updated,
                                                  default=())


@dataclass(frozen=True)
class RemoveResult:
    """A removal: the file's ``version`` is in the history (``restore PATH --last`` brings it back)."""

    path: str
    version: str = key()
    size: int = key()
    index: IndexUpdate | None = None
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())


# -- move ------------------------------------------------------------------------------------------


def move_memory_file(settings: Settings, src: str, dst: str, *, force: bool = False,
                     expect: str | None = None, links: list | None = None) -> MoveResult:
    """Move the memory file ``src`` to ``dst`` (see the module docstring). ``force`` replaces a file
    at ``dst`` (archived as ``rm`` archives) and allows moving a startup root file. ``links``: the
    backlinks to rewrite after it (:mod:`openclaw_memory.links.pending`), kept in its intent,
    which then stays at :data:`~.fileops.LINKS_STEP` once the move is recorded."""
    workspace = str(settings.workspace)
    known = logged_in(settings)  # a name with white space around it that the history knows is kept as given
    source = resolve_memory_path(src, workspace, settings.extra_paths, known=known)
    dst = _into_folder(source.display, dst, workspace, settings.extra_paths)
    target = resolve_writable(dst, workspace, settings.extra_paths, known=known)
    if source.abs_path == target.abs_path:
        # Named as given: "memory/a.md " is memory/a.md (OpenClaw trims the spaces around a path, as
        # resolve does), which "memory/a.md and memory/a.md" did not show.
        if src == dst:
            raise UsageError(f"{source.display} is both the source and the destination; nothing was moved")
        trimmed = " (spaces around a path are trimmed, as OpenClaw trims them)" if (src.strip(), dst.strip()) != (src, dst) else ""
        raise UsageError(f"{shown(src)} and {shown(dst)} both name {source.display}{trimmed}; nothing was moved")
    refuse_new_not_utf8(target, f"nothing was moved: {source.display} is unchanged")
    refuse_dream_twin(target, workspace)
    refuse_startup_file(source, workspace, force, "moving")
    expected = check_prefix(expect, "expect") if expect is not None else None
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.write_lock():
        earlier = finish_pending(settings)
        with finished_first(earlier):
            result = translated(store, source, "moved",
                                lambda: _move(settings, store, records, source, target, force, expected, links))
    return replace(result, warnings=(earlier, *result.warnings)) if earlier else result


def _into_folder(source: str, dst: str, workspace: str, extra_paths=()) -> str:
    """``mv NOTE FOLDER/``, or ``mv NOTE FOLDER`` of a folder of the memory that is there, names
    ``FOLDER/<the note's name>``, as mv(1) has it (``mv MEMORY.md memory/`` was refused: "memory is
    not a memory path"). The folder is looked at from its allowed root's descriptor (the workspace's,
    or an extra path's as configured, a link above it followed as every path's is), one name at a time
    below it; the name made is resolved as any destination is. ``FOLDER/`` named as a note (``*.md``)
    and not a folder there is refused, as mv(1) refuses it ("Not a directory"): it made a folder
    ``final.md`` that write and read then refused as one."""
    folder = dst.strip()
    slash = folder.endswith("/")
    if not slash and (not folder or folder.lower().endswith(".md")):
        return dst
    into = f"{folder.rstrip('/')}/{source.rsplit('/', 1)[-1]}"
    if _is_folder(folder.rstrip("/"), workspace, extra_paths):
        return into
    if not slash:
        return dst  # not a folder there: the destination is the name given
    named = folder.rstrip("/")
    if named.lower().endswith(".md"):
        raise PathRefused(
            f"refused: {printable(named)}/ names a folder, and {printable(named)} is not one: mv makes a new folder only "
            f"for a name not ending in .md (a folder {printable(named)} is no note write or read takes); give "
            f"{printable(named)} to rename the note to it; nothing was moved: {printable(source)} is unchanged")
    return into


def _is_folder(folder: str, workspace: str, extra_paths) -> bool:
    """Whether ``folder`` is a folder there, looked at from the allowed root holding it (the
    workspace, an extra path; each as configured or as its links resolve), one name at a time below
    it, never following a link there. It walked from ``/`` and refused a link at every folder, one
    above the root too (macOS's ``/tmp``): ``mv NOTE EXTRA`` was refused, ``mv NOTE EXTRA/`` not."""
    absolute = absolute_path(folder, workspace)
    for root in (workspace, *(str(extra) for extra in extra_paths)):
        for spelled in dict.fromkeys((root, os.path.realpath(root))):
            if absolute != spelled and not absolute.startswith(spelled.rstrip("/") + "/"):
                continue
            parts = [p for p in os.path.relpath(absolute, spelled).split("/") if p not in ("", ".")]
            try:
                Folder.under(spelled, parts, create=False, create_root=False).close()
            except (OSError, ValueError):
                continue
            return True
    return False


def _move(settings: Settings, store: HistoryStore, records: ReadRecords, source: ResolvedPath, target: ResolvedPath,
          force: bool, expected: str | None, links: list | None) -> MoveResult:
    src_folder, fd, current = open_current(source)
    dst_folder: Folder | None = None
    existed: int | None = None
    op: FileOp | None = None
    appeared = False  # the link found a file at the destination
    replacing = False  # --force archiving the destination's note: a SourceKept then is the destination's
    try:
        if current is None or fd is None or src_folder is None:
            raise UsageError(f"{source.display} does not exist; nothing was moved{_missing_hint(source)}")
        with in_history():
            store.observe(source.abs_path, source.display, current, fd=fd)
        check_write(store, source, current, records, expected, False, None, fd)
        mode = kept_stat(fd)
        check_file_may_move(fd)
        seen = os.fstat(fd)  # the file the guard checked: the rename (by name) must move this one
        os.close(fd)
        fd = None
        check_names_may_change(src_folder.fd)
        check_may_lose_name(src_folder.fd, source.name, seen)  # another user's note in a sticky folder: before --force archives
        _refuse_look_alike(source, target)
        try:
            dst_folder, existed = make_folder(target, mode)
            # A name goes there only when --force archives one, or a copy's temporary name goes.
            check_names_may_change(dst_folder.fd, removing=force or os.fstat(dst_folder.fd).st_dev != os.fstat(src_folder.fd).st_dev)
        except NotADirectoryError:  # (translated named the source: "memory/a.md: a folder on its path is a file")
            raise PathRefused(f"refused: {target.display}: {not_a_folder_on(target)}; nothing was moved: "
                              f"{source.display} is unchanged") from None
        except OSError as exc:  # named as the destination's (translated names the source's folder)
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            raise os_error(exc, where_written(target),
                           f"nothing was moved: {source.display} is unchanged") from None
        replaced, replaced_mode = _replaced(store, dst_folder, target, force, records)
        with in_history():
            op = write_intent(settings.data_dir, FileOp(
                MOVE_OP, "begin", source.abs_path, source.display, current.version, current.size, target.abs_path,
                target.display, replaced.version if replaced else None, replaced.size if replaced else None,
                mark=store.last_id(), agent=records.agent, session=records.session, mode=_bits(mode),
                replaced_mode=_bits(replaced_mode), links=links, made_from=existed))
        faults.reach("mv:journaled")
        if replaced is not None:
            try:
                replacing = True
                op = _archive_replaced(store, dst_folder, target, op)
                replacing = False
            except NotRegularFile as swapped:
                raise _swapped_note(swapped, target.display, "replaced", f"nothing was moved: {source.display} is unchanged") from None
        if faults.reach("mv:source-refused"):  # (a refusal no check sees first: an ACL)
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        try:
            how = safe_move(src_folder.fd, source.name, dst_folder.fd, target.name, expect=seen)
        except FileExistsError:
            appeared = True
            raise
        existed = None  # the destination's folders hold the file now
        faults.reach("mv:renamed")
    except BaseException as exc:
        if op is not None and dst_folder is not None and isinstance(exc, SourceKept) and not replacing:
            # The source stays (written to, saved anew under its name, or held open by a writer that would
            # go on writing to it): the copy (or the link) at the destination goes, as the bytes moved,
            # and the move is blocked as a write is. (A save under its name left the move "done", the
            # destination holding the version before it, the save at the old name: two notes, one stale.)
            with contextlib.suppress(OSError):
                remove_if_holds(dst_folder.fd, target.name, op.version)
        if op is not None and _settle(settings, store, op):  # the rename had happened after all: finished
            assert current is not None
            return MoveResult(target.display, source.display, current.version, current.size, "rename", op.replaced)
        if existed is not None:
            remove_made_folders(target, existed)
        # A forced move stopped after it archived the destination's file: the undo leaves it archived,
        # which "nothing was moved" alone did not say (the note there was gone without a word).
        archived = (f"; the file that was at {target.display} is archived: `openclaw-memory restore {shell_word(target.display)} "
                    "--last` brings it back") if op is not None and op.step == "replaced" else ""
        if isinstance(exc, SourceKept) and replacing:
            # The note --force was archiving changed (written to, saved anew, held open): it stays, and
            # the move is blocked naming it (it named the source, which nothing had touched).
            raise _kept_blocks(exc, target.display, "moved", records, f": {source.display} is unchanged",
                               words=_REPLACED_WORDS) from None
        if isinstance(exc, SourceKept):
            raise _kept_blocks(exc, source.display, "moved", records, archived) from None
        if isinstance(exc, NotRegularFile) and exc.filename == source.name:
            raise _swapped_note(exc, source.display, "moved", f"nothing was moved{archived}") from None
        if appeared:
            raise UsageError(f"{target.display} appeared while {source.display} was being moved; nothing was "
                             f"moved{archived}") from None
        unchanged = f"nothing was moved: {source.display} is unchanged{archived}"
        if is_no_space(exc) or isinstance(exc, DestinationRefused):
            # Only the destination takes new blocks (its folders, the name, a copy across file systems;
            # the history's failures are HistoryFailed), and only its folder refuses a copy's temporary
            # name: translated named the source's folder.
            raise FailedAt(exc, where_written(target), unchanged) from None
        if archived and isinstance(exc, OSError) and not isinstance(exc, (FolderSwapped, NotADirectoryError)):
            raise FailedAt(exc, where_written(source), unchanged) from None
        raise
    finally:
        if fd is not None:
            os.close(fd)
        for folder in (src_folder, dst_folder):
            if folder is not None:
                folder.close()
    notes = _record_or_note(store, op, "moved")
    return MoveResult(target.display, source.display, current.version, current.size, how, op.replaced, warnings=notes)


def refuse_startup_file(resolved: ResolvedPath, workspace: str, force: bool, doing: str) -> None:
    if force or resolved.root != workspace or resolved.display not in STARTUP_FILES:
        return
    raise UsageError(
        f"{doing} {resolved.display} takes it out of the agent's startup: OpenClaw loads {resolved.display} into every new "
        f"session, and without it the agent starts with no {'long-term memory' if resolved.display == CANONICAL_ROOT else 'profile'}; "
        "pass --force to do it anyway (its bytes stay in the history)"
    )


def _refuse_look_alike(source: ResolvedPath, target: ResolvedPath) -> None:
    """A move to a name that looks like one its folder holds (the same under NFC, other code points)
    is refused as a write making it is (:func:`.guard.refuse_look_alike`); not a rename of the file
    to another form of its own name (an NFD name made NFC), where the look-alike is the source."""
    import unicodedata

    if source.root == target.root and source.parts[:-1] == target.parts[:-1] and (
            unicodedata.normalize("NFC", source.name) == unicodedata.normalize("NFC", target.name)):
        return
    refuse_look_alike_at(target, "moved")


def _replaced(store: HistoryStore, folder: Folder, target: ResolvedPath, force: bool,
              records: ReadRecords) -> tuple[FileVersion | None, FileMode | None]:
    """What is at the destination now: nothing (None), or a file ``--force`` may replace, its bytes
    stored in the history first, and its mode. Anything else is refused, and so is a file the reader
    has not read as it is now, as ``rm`` refuses it (a forced move replaced what it never saw)."""
    try:
        st = folder.lstat(target.name)
    except FileNotFoundError:
        return None, None
    if stat.S_ISDIR(st.st_mode):
        raise PathRefused(f"refused: {target.display} is a folder; give the destination's file name (a .md path)")
    if not stat.S_ISREG(st.st_mode):
        kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
        raise PathRefused(f"refused: {target.display} is {kind}, which memory never replaces; nothing was moved")
    if not force:
        raise UsageError(f"{target.display} exists; nothing was moved (--force replaces it, archived as `rm` archives: "
                         f"`openclaw-memory restore {shell_word(target.display)} --last` brings it back)")
    try:
        fd, _ = folder.open_regular(target.name)
    except PermissionError:  # (it said "cannot write in the workspace (…/memory)" of a folder anyone may write in)
        raise PathRefused(f"cannot read {target.display}: permission denied, so --force cannot archive it; "
                          "nothing was moved") from None
    try:
        found = snapshot_fd(fd)
        mode = kept_stat(fd)
        refuse_read_only(mode, target.display, "moved", folder)
        with in_history(), store.lock():
            store.observe(target.abs_path, target.display, found, fd=fd)
        check_write(store, target, found, records, None, False, None, fd)
    finally:
        os.close(fd)
    _refuse_unarchived(store, target, found, "moved")
    return found, mode


def _archive_replaced(store: HistoryStore, folder: Folder, target: ResolvedPath, op: FileOp) -> FileOp:
    """``mv --force``: the destination goes as ``rm`` removes it, before the source takes its name;
    the intent at its next step (a failure after it settles by that one: by the step before, the
    removal was logged twice)."""
    assert op.replaced is not None and op.replaced_size is not None
    remove_if_holds(folder.fd, target.name, op.replaced)
    faults.reach("mv:replaced-removed")
    with in_history(), store.lock():
        store.record(target.abs_path, target.display, op.replaced, op.replaced_size, REMOVE, op.agent or None,
                     mode=_mode(op.replaced_mode))
        return write_intent(store.data_dir, replace(op, step="replaced"))


def _record_move(store: HistoryStore, op: FileOp) -> None:
    """One transaction: the source's history (its note's: :meth:`VersionLog.note_since`) and read
    records are the destination's, the move is logged there as a version, the intent goes."""
    assert op.target is not None and op.target_display is not None
    src, dst = enc(op.path), enc(op.target)
    with store.lock() as conn:
        # A watch that saw the file arrive before this step logged it as an outside edit: it is the move.
        conn.execute("DELETE FROM versions WHERE path = ? AND id > ? AND version = ? AND origin = ?",
                     (dst, op.mark, op.version, EXTERNAL_EDIT))
        # The note's own entries go, not those of notes removed from its name before (restore --last's).
        since = store.log.note_since(op.path)
        arrival = store.last_id() + 1
        conn.execute("UPDATE versions SET path = ?, arrived_by = ? WHERE path = ? AND (id > ? OR arrived_by > ?)",
                     (dst, arrival, src, since, since))
        store.record(op.target, op.target_display, op.version, op.size, MOVE, op.agent or None, mode=_mode(op.mode),
                     moved_from=op.display)
        conn.execute("DELETE FROM reads WHERE path = ?", (dst,))  # of a file --force replaced: another file's
        conn.execute("UPDATE reads SET path = ? WHERE path = ?", (dst, src))
        if op.links:  # the rewrites follow: the intent stays until the last (links.pending)
            write_intent(store.data_dir, replace(op, step=LINKS_STEP))
        else:
            clear_intent(store.data_dir)


# -- remove ----------------------------------------------------------------------------------------


def remove_memory_file(settings: Settings, path: str, *, force: bool = False, expect: str | None = None,
                       read_only_ok: Callable[[FileMode], bool] | None = None) -> RemoveResult:
    """Remove the memory file ``path`` into the history (see the module docstring); ``force`` allows
    a startup root file. A read-only note is refused (ReadOnlyRefused) unless ``read_only_ok`` lets
    its mode go (a rollback's move, or its undo)."""
    workspace = str(settings.workspace)
    resolved = resolve_memory_path(path, workspace, settings.extra_paths, known=logged_in(settings))
    refuse_startup_file(resolved, workspace, force, "removing")
    expected = check_prefix(expect, "expect") if expect is not None else None
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.write_lock():
        earlier = finish_pending(settings)
        with finished_first(earlier):
            result = translated(store, resolved, "removed",
                                lambda: _remove(settings, store, records, resolved, expected, read_only_ok))
    return replace(result, warnings=(earlier, *result.warnings)) if earlier else result


# What befell the note `mv --force` was archiving at the destination, when it stayed (SourceKept's reasons).
_REPLACED_WORDS = {
    "changed": "changed while it was being archived to be replaced (someone wrote to it)",
    "replaced": "was replaced while it was being archived to be replaced (a new file was saved under its name)",
    "open": "is held open by another process, which could still write to it, so it was not archived to be replaced",
}


def _kept_blocks(kept: SourceKept, shown: str, done: str, records: ReadRecords, also: str = "",
                 words: dict[str, str] = SourceKept.WORDS) -> WriteBlocked:
    """A move or removal whose source stayed (written to, saved anew, held open) is blocked as a write
    is; so is a forced move whose destination's note stayed (``words``: said of it)."""
    return WriteBlocked.because(f"{shown} {words[kept.reason]}; nothing was {done}{also}.", path=shown,
                                step="held_open" if kept.reason == "open" else "read_again", agent=records.agent,
                                session=records.session)


def _remove(settings: Settings, store: HistoryStore, records: ReadRecords, resolved: ResolvedPath,
            expected: str | None, read_only_ok: Callable[[FileMode], bool] | None) -> RemoveResult:
    folder, fd, current = open_current(resolved)
    op: FileOp | None = None
    try:
        if current is None or fd is None or folder is None:
            raise UsageError(f"{resolved.display} does not exist; nothing was removed{_missing_hint(resolved)}")
        with in_history():
            store.observe(resolved.abs_path, resolved.display, current, fd=fd)
        check_write(store, resolved, current, records, expected, False, None, fd)
        _refuse_unarchived(store, resolved, current, "removed")
        mode = kept_stat(fd)
        # Unlike the shell's `rm`, nothing can ask, and --force is for the startup files.
        refuse_read_only(mode, resolved.display, "removed", folder, read_only_ok)
        os.close(fd)
        fd = None
        with in_history():
            op = write_intent(settings.data_dir, FileOp(
                REMOVE_OP, "begin", resolved.abs_path, resolved.display, current.version, current.size,
                mark=store.last_id(), agent=records.agent, session=records.session, mode=_bits(mode)))
        faults.reach("rm:journaled")
        remove_if_holds(folder.fd, resolved.name, current.version)
        # Said at once: a note at its name after a kill from here on is a new one (_recover_remove),
        # never the one removed, saved since.
        op = write_intent(settings.data_dir, replace(op, step=UNLINKED_STEP))
        faults.reach("rm:unlinked")
    except BaseException as exc:
        if op is not None and isinstance(exc, SourceKept) and exc.kept_at == resolved.name:
            # Given back its name, changed or held open: nothing was removed, whatever it holds now.
            # (Settling it would read "not the bytes archived" as "unlinked": the removal was logged
            # and said done while the file, with the edit, was still there.)
            clear_intent(settings.data_dir)
        elif op is not None and _settle(settings, store, op):
            return RemoveResult(resolved.display, op.version, op.size)
        if isinstance(exc, SourceKept):
            raise _kept_blocks(exc, resolved.display, "removed", records) from None
        if isinstance(exc, NotRegularFile):
            raise _swapped_note(exc, resolved.display, "removed", "nothing was removed") from None
        raise
    finally:
        if fd is not None:
            os.close(fd)
        if folder is not None:
            folder.close()
    notes = _record_or_note(store, op, "removed")
    return RemoveResult(resolved.display, current.version, current.size, warnings=notes)


def _swapped_note(exc: NotRegularFile, display: str, done: str, outcome: str) -> PathRefused:
    """The note's name held something else once the guard had checked it (a symlink, a FIFO): refused
    as a symlink named at the start is, naming the note (it said "cannot write in the workspace
    (.../memory): is a symlink", exit 1, as though the folder were the trouble)."""
    what = "a symlink" if exc.strerror == "is a symlink" else "not a regular file"
    return PathRefused(f"refused: {display} became {what} while it was being {done} (memory never follows or moves "
                       f"symlinks); {outcome}")


def _record_remove(store: HistoryStore, op: FileOp) -> None:
    """One transaction: the removal is logged (pinning its bytes), the remover's read record and the intent go."""
    with store.lock() as conn:
        store.record(op.path, op.display, op.version, op.size, REMOVE, op.agent or None, mode=_mode(op.mode))
        # Others keep theirs: a session that read the file is told it was deleted before it writes the name again.
        conn.execute("DELETE FROM reads WHERE agent = ? AND session = ? AND path = ?", (enc(op.agent), enc(op.session), enc(op.path)))
        clear_intent(store.data_dir)


def last_removed(settings: Settings, path: str) -> str:
    """The version ``rm`` last archived of ``path`` (``restore PATH --last``)."""
    resolved = resolve_writable(path, str(settings.workspace), settings.extra_paths, known=logged_in(settings))
    store = HistoryStore.for_settings(settings)
    for entry in reversed(store.entries(resolved.abs_path)):
        if entry.origin == REMOVE:
            return entry.version
    alike = _removed_look_alike(store, resolved, str(settings.workspace))
    if alike is not None:
        raise UsageError(f"no removal of {resolved.display} is recorded for this workspace ({settings.workspace}), so --last "
                         f"has nothing to restore; one of {alike_words(alike, resolved.display)} is: `openclaw-memory "
                         f"restore {shell_word(alike)} --last` brings it back")
    # Not "never removed": the history of a workspace moved or renamed stays under its old path.
    raise UsageError(f"no removal of {resolved.display} is recorded for this workspace ({settings.workspace}), so --last "
                     f"has nothing to restore (see `openclaw-memory history {shell_word(resolved.display)}`; a workspace "
                     "moved or renamed leaves its earlier history under its old path, which `openclaw-memory doctor` names)")


def _missing_hint(resolved: ResolvedPath) -> str:
    """What ends "PATH does not exist; nothing was moved/removed": where a file is there whose name (or
    a folder's on its way) is PATH's in other Unicode code points (the same under NFC: ``café.md``
    typed as one é, the file named in NFD, as macOS names files), that file, each spelling also
    escaped (the two print alike, and `files` lists the one there as PATH looks); else where to look."""
    alike = look_alike_there(resolved)
    if alike is None:
        return " (see `openclaw-memory files`)"
    return f": {alike_words(alike, resolved.display)} is there; give its exact name, as this message gives it"


def _removed_look_alike(store: HistoryStore, resolved: ResolvedPath, workspace: str) -> str | None:
    """The path (as shown) of a file whose removal the history holds, named as ``resolved`` is in
    other code points (the same under NFC); None when there is none."""
    import unicodedata

    wanted = unicodedata.normalize("NFC", resolved.abs_path)
    for path in store.log.paths():
        if path != resolved.abs_path and unicodedata.normalize("NFC", path) == wanted and any(
                entry.origin == REMOVE for entry in store.entries(path)):
            return display_path(path, workspace)
    return None


# -- shared steps ----------------------------------------------------------------------------------


def _refuse_unarchived(store: HistoryStore, resolved: ResolvedPath, found: FileVersion, outcome: str) -> None:
    if not store.objects.has(found.version):
        raise MemoryToolError(
            f"{resolved.display} cannot be archived in the history ({found.size} bytes; one file may take at most "
            f"[history] max_bytes / 8, {store.objects.max_bytes // 8} bytes): nothing was {outcome}"
        )


def _bits(mode: FileMode | None) -> tuple[int, int, int] | None:
    """What a move's or removal's record keeps of a file's mode: its permission bits and owner, the
    group bits narrowed to the POSIX ACL's ``group::`` entry within its mask where the file had an
    ACL (:func:`~openclaw_memory.fsutil.atomic.acl_narrowed_mode`; ``kept_stat`` read it). The
    history keeps no ACL: a note brought back from this record (``restore --last``, a rollback's
    bring-back) got the mask as its group's bits, readable by its group where the ACL let one named
    user read it; now it gives no one more than the ACL did (the named user loses access)."""
    if mode is None:
        return None
    bits, uid, gid = mode.bits
    return acl_narrowed_mode(bits, mode.xattrs), uid, gid


def _mode(recorded) -> FileMode | None:
    """A mode as the intent keeps it (a JSON list once read back)."""
    return FileMode(*recorded) if recorded is not None else None


def _record_or_note(store: HistoryStore, op: FileOp, done: str) -> tuple[str, ...]:
    """The last step; a failure leaves the intent, which ``doctor --fix`` finishes (the file is done)."""
    try:
        with in_history():
            (_record_move if op.op == MOVE_OP else _record_remove)(store, op)
    except (HistoryFailed, MemoryToolError) as exc:
        why = exc.error.strerror if isinstance(exc, HistoryFailed) else exc.message
        return (f"{op.display} was {done}, but the history could not record it ({why}): "
                "`openclaw-memory doctor --fix` finishes it",)
    return ()


def _settle(settings: Settings, store: HistoryStore, op: FileOp) -> bool:
    """A live step failed after the intent was recorded: finish or undo now, as doctor would. True
    when the operation turned out done; False when it was undone (or is left to doctor)."""
    try:
        return _recover(settings, store, op)[0]
    except (OSError, MemoryToolError):
        return False  # the intent stays: doctor names it


# -- recovery --------------------------------------------------------------------------------------


def pending(settings: Settings) -> FileOp | None:
    """The move or removal a killed process left (read only: plain doctor). UnreadableIntent when damaged."""
    return read_intent(settings.data_dir)


def finish_pending(settings: Settings) -> str | None:
    """Finish or undo the move or removal a killed process left, before another begins (the caller
    holds the write lock); a sentence on what was done, None when there was none. One that cannot
    be finished now stops the new one (its record must not be replaced)."""
    done = finish_pending_op(settings)
    return done[1] if done is not None else None


def finish_pending_at(settings: Settings, abs_path: str) -> str | None:
    """:func:`finish_pending` where the killed move or removal named ``abs_path`` (as its source or
    its destination), before a write or a restore of that path (the caller holds the write lock):
    what they log then follows the removal's or move's entries, as their files followed its steps (a
    removal killed after its unlink, then a restore by version and a write, had its ``remove``
    logged by doctor --fix after both, and the write's bytes logged again as an outside edit). An
    intent of another path, or an import's, is left to its own finish."""
    try:
        op = read_intent(settings.data_dir)
    except UnreadableIntent:
        return None  # (dropped by the next mv, rm or doctor --fix, which say so)
    if op is None or op.op == IMPORT_OP or op.step == LINKS_STEP or abs_path not in (op.path, op.target):
        return None
    return finish_pending(settings)


def finish_pending_op(settings: Settings) -> tuple[bool, str] | None:
    """:func:`finish_pending`, saying whether it finished (True) or undid (False) the operation."""
    try:
        return recover_pending(settings)
    except (MemoryToolError, OSError) as exc:
        why = exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        op = read_intent(settings.data_dir)
        raise MemoryToolError(f"an interrupted {describe(op) if op else 'move or removal'} could not be finished ({why}); "
                              "nothing else was moved or removed: fix that and run `openclaw-memory doctor --fix`") from None


def recover_pending(settings: Settings) -> tuple[bool, str] | None:
    """:func:`finish_pending`, saying whether it finished (True) or undid (False) the operation."""
    try:
        op = read_intent(settings.data_dir)
    except UnreadableIntent:
        clear_intent(settings.data_dir)  # nothing in it can be acted on; every byte is in the files or the history
        return False, "an unreadable record of an interrupted move or removal was dropped (its bytes are in the history)"
    if op is None:
        return None
    return _recover(settings, HistoryStore.for_settings(settings), op)


def _recover(settings: Settings, store: HistoryStore, op: FileOp) -> tuple[bool, str]:
    """(finished, what was done): the files say how far ``op`` got."""
    if op.op == IMPORT_OP:  # finished by running it again (archive.importer.finish_import), never dropped here
        raise MemoryToolError(f"it is finished by `openclaw-memory import {shell_word(op.display)}{' --force' if op.force else ''}` "
                              "again, or by `openclaw-memory doctor --fix`")
    if op.step == LINKS_STEP:  # moved and recorded; what is left is the rewrites', never to be dropped here
        raise MemoryToolError("the links naming its old path are not all rewritten: `openclaw-memory doctor --fix` "
                              "rewrites them")
    workspace, extra = str(settings.workspace), settings.extra_paths
    source, refused = _resolve_for_recovery(op.path, op.display, workspace, extra)
    if op.op == REMOVE_OP:
        if refused is not None:
            return _drop(store, op, refused, "nothing was removed")
        return _recover_remove(store, op, source)
    assert op.target is not None
    target, target_refused = _resolve_for_recovery(op.target, op.target_display or op.target, workspace, extra)
    if refused is not None and not (target_refused is None and _holds(_folder_or_none(target), target.name, op.version)):
        return _drop(store, op, refused, "nothing was moved")
    if target_refused is not None:  # nothing of ours can be at the destination: the source is given back
        return _recover_move(store, op, source, target, dst_refused=True)
    return _recover_move(store, op, source, target, src_refused=refused is not None)


def _resolve_for_recovery(path: str, display: str, workspace: str, extra) -> tuple[ResolvedPath, str | None]:
    """``path`` resolved, or, where its name now holds what memory never touches (a symlink swapped in
    for the note, a folder), its name in its folder and why it is refused: the operation can then be
    neither finished nor undone there, and its record is dropped (it blocked every later mv, rm and
    doctor --fix until the user removed the symlink)."""
    try:
        return resolve_writable(path, workspace, extra), None
    except PathRefused as exc:
        try:
            kind = os.lstat(path).st_mode
        except OSError:
            raise exc from None
        if stat.S_ISREG(kind):  # refused for another reason (an extra path not given now): the record waits
            raise
        return ResolvedPath(path, display, os.path.dirname(path),
                            (os.path.basename(path),), False), exc.message


def _drop(store: HistoryStore, op: FileOp, refused: str, outcome: str) -> tuple[bool, str]:
    clear_intent(store.data_dir)
    return False, (f"dropped the {describe(op)}: it cannot go on ({refused}); {outcome} by it, and version "
                   f"{short(op.version)} is in the history")


def _recover_move(store: HistoryStore, op: FileOp, source: ResolvedPath, target: ResolvedPath, *,
                  src_refused: bool = False, dst_refused: bool = False) -> tuple[bool, str]:
    """``src_refused``: the source's name holds what memory never touches (its leftovers stay there);
    ``dst_refused``: the destination's does (the move is undone, nothing there is touched)."""
    what = describe(op)
    src_folder = None if src_refused else _folder_or_none(source)
    dst_folder = None if dst_refused else _folder_or_none(target)
    try:
        if op.replaced is not None and op.step == "begin" and dst_folder is not None:
            # Killed while --force archived the destination's file, between taking it aside and its unlink:
            # it gets its name back (it was left at .NAME.aside-<hex>, its removal logged, nothing named it).
            give_back(dst_folder.fd, target.name)
        if op.replaced is not None and op.step == "begin" and not dst_refused and not _exists(dst_folder, target.name):
            with store.lock():  # it was removed (archived) just before the kill
                store.record(target.abs_path, target.display, op.replaced, op.replaced_size or 0, REMOVE, op.agent or None,
                             mode=_mode(op.replaced_mode))
        replaced = (f"; the file it replaced at {target.display} is archived (`openclaw-memory restore "
                    f"{shell_word(target.display)} --last`)") if (op.replaced is not None and not _holds(dst_folder, target.name, op.replaced)
                                                   and (op.step == "replaced" or not dst_refused)) else ""
        if src_folder is not None and dst_folder is not None and same_file(src_folder.fd, source.name, dst_folder.fd,
                                                                         target.name):
            # Killed between the link and the unlink: one file with two names, whatever it holds now (an
            # edit in place since changed both). Past the deciding step: the old name goes, nothing is lost.
            try:
                unlink_other_name(src_folder.fd, source.name, dst_folder.fd, target.name)
            except StickyRefused as kept:
                # Neither name may go (another user's note, in a sticky folder, by now): the record is
                # dropped, the file at both names, nothing lost. It stopped every later mv, rm and doctor --fix.
                return _drop(store, op, f"{source.display} {kept.why}",
                             f"{source.display} and {target.display} are left as two names of one file, of which its "
                             "owner may remove one; nothing was moved")
            src_folder.fsync()
            _record_move(store, op)
            _log_edit_since(store, dst_folder, target, op)
            return True, f"finished the {what}: {target.display} holds it{replaced}"
        if _holds(dst_folder, target.name, op.version):
            if src_folder is not None:
                for name in [*asides_of(os.listdir(src_folder.fd), source.name), source.name]:
                    if _holds(src_folder, name, op.version):
                        try:
                            remove_if_holds(src_folder.fd, name, op.version)  # the bytes are at the destination
                        except SourceKept:
                            continue  # changed or open meanwhile: kept, and reported as a file of its own
            _record_move(store, op)
            return True, f"finished the {what}: {target.display} holds it{replaced}"
        if src_folder is not None:
            give_back(src_folder.fd, source.name)
            if dst_folder is not None and _holds(src_folder, source.name, op.version):
                for name in os.listdir(dst_folder.fd):  # a copy across file systems cut short
                    if leftover_kind(name, target.name) == "tmp":
                        dst_folder.unlink(name, missing_ok=True)
        clear_intent(store.data_dir)
        if op.made_from is not None:  # the folders the move made for the destination, when empty
            remove_made_folders(target, op.made_from)
        where = (f"{source.display} is where it was" if _holds(src_folder, source.name, op.version)
                 else f"its bytes are in the history as version {short(op.version)} of {source.display}")
        return False, f"undid the {what}: {where}{replaced}"
    finally:
        for folder in (src_folder, dst_folder):
            if folder is not None:
                folder.close()


def _log_edit_since(store: HistoryStore, folder: Folder, target: ResolvedPath, op: FileOp) -> None:
    """What the moved file holds when it is not what was moved (edited in place after the kill):
    logged as an outside edit after the move."""
    fd, _ = folder.open_regular(target.name)
    try:
        found = snapshot_fd(fd)
        if found.version != op.version:
            with in_history(), store.lock():
                store.observe(target.abs_path, target.display, found, fd=fd)
    finally:
        os.close(fd)


UNLINKED_STEP = "unlinked"  # a removal's journal once the file is gone from its name


def _recover_remove(store: HistoryStore, op: FileOp, resolved: ResolvedPath) -> tuple[bool, str]:
    what = describe(op)
    folder = _folder_or_none(resolved)
    try:
        if folder is not None:
            give_back(folder.fd, resolved.name)
        if op.step != UNLINKED_STEP and _holds(folder, resolved.name, op.version):
            clear_intent(store.data_dir)
            return False, f"undid the {what}: {resolved.display} is where it was"
        if op.step == UNLINKED_STEP:  # removed: what is at its name now was made after it
            _record_remove(store, op)
            made = _saved_since(store, folder, resolved)
            return True, (f"finished the {what}: its bytes are in the history "
                          f"(`openclaw-memory restore {shell_word(resolved.display)} --last` brings it back)"
                          + (f"; the note made at its name since (version {short(made)}) is left as it is" if made else ""))
        saved = _saved_since(store, folder, resolved)
        if saved is not None:
            # A note at its name holding other bytes is not the file the removal meant: an editor saved
            # it (a new file renamed over the name) or wrote to it after the kill, before the unlink.
            # Finishing logged a removal at the fix's moment that never happened, and a rollback to just
            # after it archived the note.
            clear_intent(store.data_dir)
            return False, (f"dropped the {what}: {resolved.display} was saved since (it holds version {short(saved)}), "
                           f"so it is left as it is and nothing was removed; version {short(op.version)} is in the history")
        _record_remove(store, op)
        return True, (f"finished the {what}: its bytes are in the history "
                      f"(`openclaw-memory restore {shell_word(resolved.display)} --last` brings it back)")
    finally:
        if folder is not None:
            folder.close()


def _saved_since(store: HistoryStore, folder: Folder | None, resolved: ResolvedPath) -> str | None:
    """The version a regular file at ``resolved``'s name holds, logged as an outside edit (when new);
    None when no such file is there."""
    if folder is None:
        return None
    try:
        fd, _ = folder.open_regular(resolved.name)
    except (FileNotFoundError, NotRegularFile, PermissionError):
        return None
    try:
        found = snapshot_fd(fd)
        with in_history(), store.lock():
            store.observe(resolved.abs_path, resolved.display, found, fd=fd)
        return found.version
    finally:
        os.close(fd)


def _folder_or_none(resolved: ResolvedPath) -> Folder | None:
    try:
        return resolved.folder()
    except (FileNotFoundError, NotADirectoryError):
        return None


def _exists(folder: Folder | None, name: str) -> bool:
    if folder is None:
        return False
    try:
        folder.lstat(name)
    except FileNotFoundError:
        return False
    return True


def _holds(folder: Folder | None, name: str, version: str) -> bool:
    if folder is None:
        return False
    try:
        fd, _ = folder.open_regular(name)
    except (FileNotFoundError, NotRegularFile, PermissionError):
        return False
    try:
        return snapshot_fd(fd).version == version
    finally:
        os.close(fd)
