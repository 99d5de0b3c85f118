"""``rollback --to SNAPSHOT|TIME``: every memory file back as it was at that moment, as one journaled operation.

Under the workspace's write lock: an interrupted rollback (and ``mv``/``rm``) is finished first;
then every memory file is hashed and seen by the history (what it holds now is stored and logged
when new, so nothing is lost), each file's fate is worked out (:mod:`.plan`), and the files this
session has not read as they are now block it (exit 3) unless ``force``. The intent naming every
step is committed (:mod:`.journal`); then each step: a file to rewrite or bring back is restored as
``restore`` restores (the new version logged with origin ``restore``), a file made since is
archived as ``rm`` archives (:func:`~..history.moves.remove_memory_file`); the intent goes last.

A step acts only on a file that still holds what the rollback found (or is already done): a file
changed meanwhile is left as it is, and named. That rule makes a step safe to run again, so a
rollback killed anywhere is finished by running its steps again (:func:`recover_pending`:
``doctor --fix`` or the next ``rollback``). The rollback is recorded like any restore: ``undo``
names the moment just before it began, to which a second ``rollback`` goes back.
"""

from __future__ import annotations

import os
import shlex
import stat
import time
from dataclasses import dataclass, replace

from .. import faults
from ..errors import MemoryToolError, PathRefused, UsageError, WriteBlocked, finished_first
from ..fsutil.move import sticky_keeper
from ..fsutil.private import identity
from ..fsutil.safeopen import Folder, FolderSwapped, parts_under, root_spellings
from ..history.guard import IndexUpdate, WriteResult, restore_file_version, restored_over
from ..history.moves import STARTUP_FILES, finish_pending, refuse_startup_file, remove_memory_file
from ..history.placing import (
    ReadOnlyRefused,
    TakenOver,
    TakeOverRefused,
    kept_stat,
    refuse_each_read_only,
    refuse_each_taking_over,
    resolve_writable,
    snapshot_mode,
    taking_over,
    taking_over_words,
)
from ..history.stale import read_here
from ..history.states import ReadRecords
from ..history.store import HistoryStore
from ..history.swap import Split
from ..history.versions import REMOVE, RESTORE
from ..links.pending import finish_pending_rewrites
from ..settings import Settings, command_line
from ..types import typed_moment
from ..wire import key
from .journal import Intent, Step, UnreadableRollback, clear_intent, describe, read_intent, write_intent
from .plan import (
    ARCHIVE,
    REWRITE,
    UNCHANGED,
    Fate,
    Moment,
    current_version,
    iso_moment,
    moment_of,
    plan,
    read_only_ok,
    read_only_refused,
)

# The undo moment is this far after the last entry the rollback's first look logged, and every
# step's entry after it: both sides of it are apart even once printed to the microsecond.
_GAP_S = 5e-6


@dataclass(frozen=True)
class RollbackFile:
    """One memory file's fate: ``rewrite``, ``archive``, ``bring-back`` or ``unchanged``."""

    path: str
    fate: str
    version: str | None = key()  # what it holds after (None: archived, or absent)
    previous: str | None = key("previousVersion")  # what it held before (None: absent)
    unread: bool = key(omit=lambda f: not f.unread, default=False)  # this session has not read it as it is (blocks without --force)
    # This user may not write it in place (chmod u-w; another user's): refuses the rollback (a dry
    # run's), or was made so while the rollback ran and is left as it is.
    read_only: bool = key(omit=lambda f: not f.read_only, default=False)
    changed: bool = key(omit=lambda f: not f.changed, default=False)  # changed meanwhile: left as it is
    # Held open for writing by another program when its step came (a logger): left as it is.
    held_open: bool = key("heldOpen", omit=lambda f: not f.held_open, default=False)


@dataclass(frozen=True)
class RollbackResult:
    """A rollback (or with ``dry_run`` what it would do): each file's fate, and how to undo it."""

    to: str
    moment: str  # the snapshot's label, or the time (ISO 8601, UTC)
    snapshot: bool
    dry_run: bool
    files: tuple[RollbackFile, ...]
    undo: str | None = key(omit=lambda r: r.undo is None, default=None)  # `rollback --to UNDO` undoes it
    index: IndexUpdate | None = None
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())

    @property
    def changed_paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files if f.fate != UNCHANGED and not (f.changed or f.read_only or f.held_open))


def rollback(settings: Settings, to: str, *, dry_run: bool = False, force: bool = False) -> RollbackResult:
    """Put every memory file back as it was at ``to`` (see the module docstring)."""
    moment = moment_of(settings, to)
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    notes: list[str] = []
    finished: list[str] = []  # what this run finished first: an error after it says so too
    with store.write_lock():
        if not dry_run:
            moved = finish_pending_rewrites(settings)  # an interrupted move's (links and all) or removal's first
            finished += [moved[1]] if moved else []
            finished += [earlier] if (earlier := recover_pending(settings)) else []
        else:
            notes += _waiting(settings)
        with finished_first(*finished):
            left, files, undo = _roll_back(settings, store, records, to, moment, dry_run, force, notes)
        if undo is None:
            return RollbackResult(to, moment.shown, moment.snapshot is not None, True, tuple(files), warnings=tuple(notes))
    files = [f if f.path not in left else replace(f, changed=left[f.path] not in (READ_ONLY, HELD_OPEN, STICKY, TAKEN),
                                                  read_only=left[f.path] in (READ_ONLY, STICKY, TAKEN),
                                                  held_open=left[f.path] == HELD_OPEN)
             for f in files]
    notes += [f"{path} {_SAID[why]}: left as it is (what it held is in the history){_THEN.get(why, '')}"
              for path, why in left.items()]
    return RollbackResult(to, moment.shown, moment.snapshot is not None, False, tuple(files), undo,
                          warnings=(*finished, *notes))


def _roll_back(settings: Settings, store: HistoryStore, records: ReadRecords, to: str, moment: Moment, dry_run: bool,
               force: bool, notes: list[str]) -> tuple[dict[str, str], list[RollbackFile], str | None]:
    """Plan, check and run the steps (the caller holds the write lock): the files left, each file's
    fate, the undo moment (None: a dry run, nothing done)."""
    fates, skipped = plan(settings, store, moment, record=not dry_run)
    notes += skipped
    unread = {f.resolved.abs_path for f in fates if f.fate in (REWRITE, ARCHIVE) and not _read_as_is(records, f)}
    read_only = read_only_refused(store, fates)
    files = [RollbackFile(f.resolved.display, f.fate, f.after.version, f.before.version if f.before else None,
                          f.resolved.abs_path in unread, f.resolved.abs_path in read_only) for f in fates]
    startup = _startup_files_archived(settings, fates, moment)
    kept = _sticky_notes(fates)
    taken = _taken_over_notes(store, fates)
    if dry_run:
        notes += [startup] if startup else []  # (its "pass --force" says what the rollback asks)
        notes += [f"the rollback would be refused: {kept}; nothing would be rolled back"] if kept else []
        notes += [f"the rollback would be refused: {taking_over_words(taken, 'a rollback')}; nothing would be rolled back"
                  ] if taken else []
        return {}, files, None
    # Refused whole, before any step: a rollback that stopped at the first of them was half made.
    refuse_each_read_only((read_only.get(f.resolved.abs_path) for f in fates), "rolled back")
    if kept:
        raise PathRefused(f"refused: {kept}; nothing was rolled back")
    refuse_each_taking_over(taken, "a rollback", "rolled back")
    if startup and not force:
        raise UsageError(f"refused: {startup}; nothing was changed")
    if unread and not force:
        names = [f.resolved.display for f in fates if f.resolved.abs_path in unread]
        listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        raise WriteBlocked.because(
            f"the rollback to {moment.shown} would replace {len(names)} file{'s' if len(names) != 1 else ''} {{reader}} "
            f"has not read as {'it is' if len(names) == 1 else 'they are'} now ({listed}); nothing was changed",
            path=names[0], step="rollback", agent=records.agent, session=records.session)
    undo = _undo_moment()
    steps = tuple(Step(f.resolved.abs_path, f.resolved.display, f.before.version if f.before else None,
                       f.after.version, f.after.size, f.after.mode) for f in fates if f.fate != UNCHANGED)
    intent = write_intent(settings.data_dir, Intent(to, moment.shown, undo, steps, agent=records.agent,
                                                    session=records.session))
    faults.reach("rollback:journaled")
    left = _run_steps(settings, intent, notes)
    faults.reach("rollback:applied")
    clear_intent(settings.data_dir)
    return left, files, undo


def _sticky_notes(fates: list[Fate]) -> str | None:
    """The notes a rollback would replace or archive that are another user's in a sticky folder
    (``/tmp``, a team's 1777 folder), which only their owner may, each with why (the rollback is
    refused whole: it stopped at one, part of it done, and neither the next rollback nor doctor --fix
    could finish that step); None when there is none."""
    kept = [(f.resolved.display, why) for f in fates
            if f.fate in (REWRITE, ARCHIVE) and f.before is not None and (why := _sticky_now(f.resolved)) is not None]
    return "; ".join(f"{shown} {why}" for shown, why in kept) if kept else None


def _sticky_now(resolved) -> str | None:
    """Why the note at ``resolved`` may not be replaced or removed by this user (:func:`sticky_keeper`),
    looked up by name now; None when it may, or nothing is there."""
    try:
        with resolved.folder() as folder:
            return sticky_keeper(folder.fd, folder.lstat(resolved.name))
    except (OSError, PathRefused, FolderSwapped):
        return None


def _taken_over_notes(store: HistoryStore, fates: list[Fate]) -> list[TakenOver]:
    """The notes of other users a rollback would restore over by files of this user's that their
    owners could no longer write (:func:`~..history.placing.taking_over`), with the mode each step's
    restore gives its version (:func:`~..history.guard.restored_over`), looked up by name now: the
    rollback is refused whole, as a restore of one is. Archiving one is no takeover (the note goes
    to the history, as ``rm`` of a note in a shared folder); one in a sticky folder is refused as such."""
    found = []
    for f in fates:
        if f.fate != REWRITE or f.before is None or f.after.version is None or _sticky_now(f.resolved) is not None:
            continue
        try:
            with f.resolved.folder() as folder:
                fd, _ = folder.open_regular(f.resolved.name)
                try:
                    there = kept_stat(fd)
                finally:
                    os.close(fd)
                if there is not None:
                    mode = restored_over(store, f.resolved, f.after.version, there).mode
                    found.append(taking_over(f.resolved.display, there, mode, folder.fd))
        except (OSError, PathRefused, FolderSwapped):
            continue  # (gone or swapped since the plan: its step says so)
    return [n for n in found if n is not None]


def _startup_files_archived(settings: Settings, fates: list[Fate], moment: Moment) -> str | None:
    """What archiving ``MEMORY.md`` or ``USER.md`` (not there at the moment) does to the agent's
    startup, in ``rm``'s words (which asks for --force as the rollback does), or None. A moment
    before the history began (a mistyped year) archived both, without a word."""
    workspace = str(settings.workspace)
    archived = [f.resolved for f in fates if f.fate == ARCHIVE]
    names = [r.display for r in archived if r.root == workspace and r.display in STARTUP_FILES]
    for resolved in archived:
        try:
            refuse_startup_file(resolved, workspace, False, "archiving")
        except UsageError as exc:
            return (f"the rollback to {moment.shown} would archive {' and '.join(names)} (not there then): "
                    f"{exc.message}")
    return None


def _waiting(settings: Settings) -> list[str]:
    """What a dry run says of an interrupted rollback it does not finish."""
    try:
        waiting = pending(settings)
    except UnreadableRollback:  # (a dry run said it as a traceback)
        return ["an unreadable record of an interrupted rollback is waiting: the rollback (or `openclaw-memory doctor "
                "--fix`) drops it first; every byte is in the files or the history"]
    if waiting is None:
        return []
    return [f"an interrupted {describe(waiting)} is waiting: the files are shown as they are now, before it is "
            "finished (the rollback, or `openclaw-memory doctor --fix`, finishes it first)"]


def _read_as_is(records: ReadRecords, f: Fate) -> bool:
    seen = records.get(f.resolved.abs_path)
    return seen is not None and f.before is not None and seen.version == f.before.version


def _undo_moment() -> str:
    """The moment just before the first step: after every entry logged so far, before any step's."""
    undo = iso_moment(time.time() + _GAP_S)
    after = typed_moment(undo) + _GAP_S
    while time.time() <= after:  # a few microseconds: the steps' entries come after the moment printed
        time.sleep(_GAP_S)
    return undo


# Why a step left its file as it is: what it held changed meanwhile, or the version it is to hold
# is no longer stored (its bytes went with a damaged state database, which a rollback finished
# after the repair meets: trying it again would fail every time).
# A file held open for writing by another program (HELD_OPEN) is left too, as a write leaves it; a
# note that became a symlink or the like (NOT_FILE), or whose path goes through one now (THROUGH_LINK),
# is one memory never writes.
# Another user's note in a sticky folder since the plan (STICKY: chown'd, by root) is one this user
# may not replace or remove: left, or the rollback's record waited for a finish that never came.
# Another user's note its restore would take from its owner since the plan (TAKEN: chown'd, its
# mode narrowed): left, as a restore of it is refused.
CHANGED, GONE, READ_ONLY, NOT_FILE = "changed", "gone", "read-only", "not-a-file"
HELD_OPEN, THROUGH_LINK, STICKY, TAKEN = "held-open", "through-link", "sticky", "taken-over"
_SAID = {CHANGED: "changed while the rollback ran", GONE: "is to be a version no longer stored (lost with a damaged state database)",
         READ_ONLY: "was made read-only while the rollback ran (`chmod u+w` it, then roll back again)",
         NOT_FILE: "became a symlink or something else memory never replaces while the rollback ran",
         THROUGH_LINK: "goes through a symlink now (a folder on its path was made one while the rollback ran)",
         HELD_OPEN: "is held open for writing by another program, which could still write to it",
         STICKY: "became another user's, in a sticky folder where only its owner may replace or remove it, while the rollback ran",
         TAKEN: "is another user's, which they could no longer write with a file of this user's in its place (its owner or "
                "mode changed while the rollback ran)"}
_THEN = {HELD_OPEN: "; roll back again once that program has closed it"}
_SINCE = {CHANGED: "changed since", GONE: "its version then no longer stored (lost with a damaged state database)",
          READ_ONLY: "made read-only since: `chmod u+w` it, then roll back again",
          NOT_FILE: "a symlink or something else memory never replaces since",
          THROUGH_LINK: "a folder on its path is a symlink since",
          HELD_OPEN: "held open for writing by another program: roll back again once that program has closed it",
          STICKY: "another user's since, in a sticky folder where only its owner may replace or remove it",
          TAKEN: "another user's since, which they could no longer write with a file of this user's in its place"}


def _run_steps(settings: Settings, intent: Intent, said: list[str]) -> dict[str, str]:
    """Each step in order (see :func:`_step`); the files left as they are, and why (CHANGED, GONE).
    What a step's restore warns of (a version holding a NUL, which search leaves out) goes to ``said``;
    its hard-link warning once the steps after it are done (:func:`_unless_archived`)."""
    left: dict[str, str] = {}
    held: list[tuple[Split, str, tuple[str, ...]]] = []
    brought_back = {step.after for step in intent.steps if step.before is None}
    for i, step in enumerate(intent.steps, 1):
        try:
            why = _step(settings, step, step.after is None and step.before in brought_back, said,
                        intent.steps[i:], held)
            if why is not None:
                left[step.display] = why
        except MemoryToolError as exc:
            stopped = MemoryToolError(f"the rollback to {intent.moment} stopped at {step.display} ({exc.message}); {i - 1} "
                                      f"of {len(intent.steps)} files done, and every byte is in the files or the history: "
                                      "`openclaw-memory doctor --fix` (or the next `rollback`) finishes it")
            stopped.exit_code = exc.exit_code  # blocked (3) stays blocked
            raise stopped from None
        faults.reach(f"rollback:step:{i}")
    for split, note, names in held:
        archived = [name for name in names if name not in left]
        if len(archived) < split.links - 1:  # a name outside the rollback, or one it left, keeps the old text
            said.append(note + (f", but for {', '.join(archived)}, which this rollback archived" if archived else ""))
    return left


def _unless_archived(restored: WriteResult, later: tuple[Step, ...], held: list[tuple[Split, str, tuple[str, ...]]]
                     ) -> list[str]:
    """What a step's restore warns of, less its hard-link warning where other names of the file it
    replaced are ones a later step archives (by device and inode, looked at now; an earlier step's
    archive unlinked its name before the restore counted the names): those do not keep the old text,
    they go. That warning goes to ``held`` with them, said once the steps are done only while a name
    outside the rollback, or one a step left as it is, keeps the old text (and naming those archived)."""
    split = restored.split
    if split is None:
        return list(restored.warnings)
    names = tuple(step.display for step in later if step.after is None and identity(step.path) == (split.dev, split.ino))
    if not names:
        return list(restored.warnings)
    note = split.note(restored.path, "restore")
    held.append((split, note, names))
    return [warning for warning in restored.warnings if warning != note]


def _sweep(store: HistoryStore, resolved) -> None:
    """What the killed process's write of ``resolved`` left beside it (its temp or swap file), as a write does."""
    from ..history.leftovers import sweep_leftovers

    try:
        with resolved.folder() as folder:
            sweep_leftovers(store, resolved, folder)
    except OSError:
        pass  # (the folder gone or closed: doctor names what stays)


def _step(settings: Settings, step: Step, moved: bool, said: list[str], later: tuple[Step, ...],
          held: list[tuple[Split, str, tuple[str, ...]]]) -> str | None:
    """Bring one file to ``step.after``: done already (the history told, if it was not), done now
    (None), or left as it is, and why: it holds neither what the rollback found nor what it puts
    (CHANGED), what it puts is no longer stored (GONE), or it was made read-only since the plan
    (READ_ONLY: the file the step opened says so). ``moved``: an archive whose bytes another step
    brings back at another path. ``later``: the steps after it, ``held``: see :func:`_unless_archived`."""
    store = HistoryStore.for_settings(settings)
    try:
        resolved = resolve_writable(step.path, str(settings.workspace), settings.extra_paths)
        now = current_version(store, resolved, record=False)
    except PathRefused:
        if (kind := _not_a_file(settings, step.path)) is not None:
            return kind
        raise
    version = now.version if now is not None else None
    latest = store.log.latest(resolved.abs_path)
    if version == step.after:
        if step.after is not None and (latest is None or latest.version != step.after):
            with store.lock():  # killed between the exchange and the log entry
                store.record(resolved.abs_path, resolved.display, step.after, step.size, RESTORE, settings.agent, settings.session)
            _sweep(store, resolved)  # and its swap file beside it (the bytes it took off, in the history)
        elif step.after is None and step.before is not None and latest is not None and latest.origin != REMOVE:
            with store.lock():  # gone, and not logged as removed: its bytes stay pinned as a removal's
                store.record(resolved.abs_path, resolved.display, step.before, latest.size, REMOVE, settings.agent, settings.session)
        return None
    if version != step.before:
        return CHANGED
    ok = read_only_ok(store, resolved, version, moved) if version is not None else None
    try:
        if step.after is None:
            with read_here(version):  # the rollback's own look at the file, just above
                remove_memory_file(settings, resolved.display, force=True, expect=version, read_only_ok=ok)
        elif not store.objects.has(step.after):
            return GONE
        else:
            # Brought back, with no bit the snapshot saw it without (its history may have logged none).
            with snapshot_mode(resolved.abs_path, step.mode):
                restored = restore_file_version(settings, resolved.display, step.after, stored=True, read_only_ok=ok)
            said.extend(_unless_archived(restored, later, held))
    except ReadOnlyRefused:
        return READ_ONLY  # made read-only after the rollback was planned (chmod takes no lock): the user's word, as an edit is
    except TakeOverRefused:
        return TAKEN  # given to another user, or its mode changed, after the plan: theirs, as a read-only note is the user's
    except PathRefused:
        if (kind := _not_a_file(settings, step.path)) is not None:
            return kind  # swapped for a symlink after the look above: the step refused it by name
        if _sticky_now(resolved) is not None:
            return STICKY
        raise
    except WriteBlocked as exc:
        # Saved between the look above and the step: kept, as a file changed before it is (the whole
        # rollback stopped there, half done, until doctor --fix). Held open for writing by another
        # program: left as a write leaves it, said in restore's words (it was called "changed").
        return HELD_OPEN if exc.step == "held_open" else CHANGED
    except MemoryToolError:
        if _sticky_now(resolved) is not None:
            return STICKY  # (it stopped there, "Operation not permitted", and no finish could ever pass it)
        raise
    return None


def _not_a_file(settings: Settings, path: str) -> str | None:
    """Whether ``path`` names something a rollback never replaces: a symlink, a folder, a FIFO at its
    name (NOT_FILE), or a folder on its way that is a symlink or no folder now (THROUGH_LINK); None
    where a regular file is there, or nothing. Its step is left, as one changed since is (the rollback
    stopped there, its record refusing every later rollback and doctor --fix until the user removed
    it). Its bytes then are in the history. Walked from the root's descriptor, each folder opened
    without following a link: an ``lstat`` of the path followed a folder's link to the file it
    reached, a regular one, and the step's refusal was raised again, a rollback no finish ended."""
    roots = [str(settings.workspace), *(str(p) for p in settings.extra_paths)]
    for root in root_spellings(roots):
        parts: tuple[str, ...]
        if path == root:  # an extra path naming one file: opened from its own folder
            root, parts = os.path.dirname(root), (os.path.basename(root),)
        elif path.startswith(root.rstrip(os.sep) + os.sep):
            parts = parts_under(root, path)
        else:
            continue
        try:
            with Folder.under(root, parts[:-1]) as folder:
                return None if stat.S_ISREG(folder.lstat(parts[-1]).st_mode) else NOT_FILE
        except (FolderSwapped, NotADirectoryError):
            return THROUGH_LINK
        except OSError:
            return None
    return None


# -- recovery --------------------------------------------------------------------------------------


def pending(settings: Settings) -> Intent | None:
    """The rollback a killed process left (read only: plain doctor). UnreadableRollback when damaged."""
    return read_intent(settings.data_dir)


def recover_pending(settings: Settings) -> str | None:
    """Finish the rollback a killed process left (the caller holds the write lock): a sentence on
    what was done, None when there was none. Its steps run again as the live run runs them."""
    try:
        intent = read_intent(settings.data_dir)
    except UnreadableRollback:
        clear_intent(settings.data_dir)  # nothing in it can be acted on; every byte is in the files or the history
        return "an unreadable record of an interrupted rollback was dropped (every byte is in the files or the history)"
    if intent is None:
        return None
    finish_pending(settings)  # a removal the rollback was making when it was killed, first
    said: list[str] = []
    left = _run_steps(settings.as_recorded(intent.agent, intent.session), intent, said)
    clear_intent(settings.data_dir)
    also = "".join(f"; {warning}" for warning in said)
    # The killed process never printed its `To undo:` line: the moment its record names is said here,
    # with the settings flags of the command finishing it (a service's own where one finishes it), as
    # the plain rollback's: no front-end words it (errors.suggested finds a command opening a quote).
    undo = f". To undo: {command_line(settings)} rollback --to {shlex.quote(intent.undo)}"
    if not left:
        return f"finished the interrupted {describe(intent)}: every memory file is as it was at {intent.moment}{also}{undo}"
    # Never "every memory file" when some were left (it said so, then named one left as it was).
    kept = ", ".join(f"{path} ({_SINCE[why]}; left as it is)" for path, why in left.items())
    return (f"finished the interrupted {describe(intent)}: memory files are as they were at {intent.moment} except: "
            f"{kept}{also}{undo}")

