"""What a rollback is to do: the memory files as they were at a moment, against the files now.

The moment is a watchdog snapshot (by label: the content each memory file of the workspace had,
which the snapshot keeps) or a time (ISO 8601: each path's version the history logged last at or
before it; a ``remove`` entry, or no entry yet, means the file did not exist then). Each file's
fate follows: ``rewrite`` (it holds other bytes now), ``archive`` (made since), ``bring-back``
(removed since), ``unchanged``. A moment whose content is not all stored is refused whole: a
snapshot taken before snapshots kept content, a file the snapshot could not keep that changed
since (one as the snapshot saw it is unchanged), a version the history evicted or whose entry
retention dropped.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import stat
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ..database import dec
from ..errors import MemoryToolError, PathRefused, UsageError, shown
from ..files.paths import absolute_path, display_path
from ..files.read import ResolvedPath
from ..files.scan import scan_workspace
from ..fsutil.fsclock import guard_ns
from ..fsutil.safeopen import Folder
from ..history.placing import ReadOnlyNote, read_only_now, resolve_writable
from ..history.removals import in_roots, see_removals
from ..history.store import FileVersion, HistoryStore, snapshot_fd
from ..history.versions import EXTERNAL_EDIT, MOVE, REMOVE, RESTORE, FileMode, iso_time, micros, short
from ..types import DAY, no_such_moment, typed_moment
from ..watchdog.compare import rules_for
from ..watchdog.content import is_memory_file, observe_entry
from ..watchdog.observe import KIND_FILE
from ..watchdog.store import SnapshotStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..settings import Settings

REWRITE, ARCHIVE, BRING_BACK, UNCHANGED = "rewrite", "archive", "bring-back", "unchanged"


class Moment(NamedTuple):
    snapshot: str | None  # the label, when the moment is a snapshot
    when: float | None  # seconds since the epoch, when it is a time
    shown: str  # the label, or the time as ISO 8601 UTC


class Aim(NamedTuple):
    """What a path is to hold: its version and size at the moment."""

    version: str | None  # None: the file did not exist at the moment
    size: int
    mode: int | None = None  # its st_mode then, where a watchdog snapshot saw it (the history may know none)


@dataclass(frozen=True)
class Fate:
    resolved: ResolvedPath
    fate: str
    before: FileVersion | None  # what it holds now
    after: Aim


def moment_of(settings: Settings, to: str) -> Moment:
    """``to`` as a snapshot's label (looked up first: a label made before labels that read as a time
    were refused keeps its snapshot, and :func:`plan` says so) or a time (:func:`time_meant`)."""
    given = (to or "").strip()
    if given and given in {e.label for e in SnapshotStore(settings.data_dir).entries()}:
        return Moment(given, None, given)
    try:
        seconds = typed_moment(given)
    except ValueError:
        why = no_such_moment(given)  # a day the calendar has not, a time of none, a leap second: why
        if why:
            raise UsageError(f"{shown(to)} {why}; nothing was changed") from None
        raise UsageError(f"{shown(to)} is neither a watchdog snapshot's label nor a time (ISO 8601, such as "
                         "2026-12-05T09:30:00Z or 2026-12-05); see `openclaw-memory log` for times") from None
    now = time.time()
    if seconds > now:
        # What the history has not seen yet (a note written by hand) has no entry by then: the plan,
        # made before the rollback's first look logs it, took it for made since and archived it.
        raise UsageError(f"{shown(to)} is in the future (now is {iso_moment(now)}): a rollback goes back to a "
                         "moment that has passed; nothing was changed (see `openclaw-memory log` for times)")
    try:
        when, shown_as = time_meant(given)
    except (OverflowError, ValueError):  # before 0001-01-01 in UTC (a date east of UTC on the calendar's first day)
        raise UsageError(f"{shown(to)} lies before 0001-01-01T00:00:00Z, the first moment a time can name; "
                         "nothing was changed (see `openclaw-memory log` for times)") from None
    if when > now:
        # The unit given has not ended yet (this minute): up to now. Later, the rollback's first look logs
        # what the files hold now, which the moment would take for what they held then.
        when, shown_as = now, iso_moment(now)
    return Moment(None, when, shown_as)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)
# How long a time lasts as written, in microseconds, by the clock's fields given: an hour, a minute, a second.
_UNIT_US = {1: 3_600_000_000, 2: 60_000_000, 3: 1_000_000}


def time_meant(given: str) -> tuple[float, str]:
    """The moment a time (:data:`~..types.MOMENT`) means, as the latest entry time it includes, and
    that moment shown (ISO 8601 UTC, to the microsecond). A time means the end of the unit it is
    written to: ``12:00:00.123`` everything logged up to ``12:00:00.123999...``, ``12:00`` up to
    ``12:00:59.999999...`` (each entry's time taken to the microsecond, as every time is shown), so a
    time ``log`` or ``history`` prints (to the millisecond, cut) includes its own entry and none
    printed later. A date alone is its start, ``00:00:00.000000`` (as it was read before). No offset is UTC.
    ValueError or OverflowError for a time no datetime holds."""
    clock = re.fullmatch(DAY + r"(?:[Tt ]([0-9:.]+).*)?", given)
    written = dt.datetime.fromisoformat(given.upper())
    start = written if written.tzinfo is not None else written.replace(tzinfo=dt.UTC)
    start_us = (start - _EPOCH) // _MICROSECOND
    if clock is None or clock[1] is None:
        unit_us = 1  # a date alone: its first microsecond
    else:
        fields, _, fraction = clock[1].partition(".")
        unit_us = 10 ** max(6 - len(fraction), 0) if fraction else _UNIT_US[fields.count(":") + 1]
    end_us = start_us + unit_us  # the first microsecond after it
    return _last_before(end_us), (_EPOCH + (end_us - 1) * _MICROSECOND).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _last_before(end_us: int) -> float:
    """The latest time (a float, as entries' times are) whose microsecond (:func:`micros`) is before ``end_us``."""
    when = end_us / 1_000_000
    while micros(when) >= end_us:
        when = math.nextafter(when, -math.inf)
    while micros(later := math.nextafter(when, math.inf)) < end_us:
        when = later
    return when


def iso_moment(seconds: float) -> str:
    """Microsecond precision, UTC (a rollback's undo moment must fall between two log entries)."""
    return (_EPOCH + micros(seconds) * _MICROSECOND).isoformat(timespec="microseconds").replace("+00:00", "Z")


def plan(settings: Settings, store: HistoryStore, moment: Moment, *, record: bool) -> tuple[list[Fate], list[str]]:
    """Every memory file's fate, and a note per path left out. With ``record`` each file's bytes
    now are seen by the history (stored, logged when new: nothing it holds now can be lost)."""
    workspace, extra = str(settings.workspace), settings.extra_paths
    files = scan_workspace(settings, multimodal=False).files
    if record:
        see_removals(settings, store, {f.abs_path for f in files})
    named_then: set[str] = set()  # for a time: every path the history named at or before it
    unsure: dict[str, str] = {}  # for a time: a path whose content then is unknown, and why
    seen_after: set[str] = set()  # for a time: every path the history named (after it, where not in named_then)
    vouched: set[str] = set()  # for a time: the paths first seen after it whose sighting's dates put them before it
    before_ns = 0.0  # for a time: a ctime no later than this is surely before it
    if moment.snapshot is not None:
        targets, notes = _snapshot_targets(settings, moment.snapshot)
        notes[:0] = _label_also_a_time(moment.snapshot)
        rules = rules_for(settings.workspace, settings.state_dir, SnapshotStore(settings.data_dir).load(moment.snapshot).ignore)
        now = [f.abs_path for f in files if f.source != "extra" and not rules.ignores_path(f.path)]
        notes += _not_covered(settings, moment.snapshot, [f.abs_path for f in files if f.source != "extra" and f.abs_path not in now],
                              [f.abs_path for f in files if f.source == "extra"])
    else:
        assert moment.when is not None
        # A status change is dated by the file system's coarse clock, which may lag the history's by
        # up to its granularity: a ctime that close to the moment cannot tell before from after.
        before_ns = moment.when * 1e9 - guard_ns(workspace, *extra)
        targets, named_then, unsure, seen_after, vouched = _history_targets(settings, store, moment.when, before_ns)
        notes = []
        now = [f.abs_path for f in files]
    fates: list[Fate] = []
    stranded: dict[str, str] = {}  # a version a name held then that cannot be written now: by version, that name
    came_with: dict[str, FolderChanged] = {}  # for a time: first seen after it, held since, a folder on its path changed
    for abs_path in sorted(set(now) | set(targets) | set(unsure)):
        try:
            resolved = resolve_writable(abs_path, workspace, extra)
            before = current_version(store, resolved, record)
        except (PathRefused, UsageError) as exc:
            # Left out, as every shape a rollback does not replace is (a symlink, a folder, a FIFO at the
            # note's name): a folder there refused the whole rollback, its --dry-run too. Named as
            # every other note is, from the workspace.
            shown_path = display_path(abs_path, workspace)
            notes.append(f"{shown_path} left as it is: {exc}")
            if (aim := targets.get(abs_path)) is not None and aim.version is not None:
                stranded[aim.version] = shown_path
            continue
        after = targets.get(abs_path, Aim(None, 0))
        if (moment.when is not None and after.version is None and before is not None and abs_path not in named_then
                and _held_since(resolved, before_ns)):
            if (folder_changed := _folder_changed_since(resolved, workspace, before_ns)) is not None:
                # Its bytes are as they were before the moment, but a folder on its path changed since:
                # renaming a folder (`mv memory/p memory/q`) leaves each file's ctime as it was, and the
                # note was taken to have been at memory/q/ then, while memory/p/ came back beside it.
                came_with[abs_path] = folder_changed
                fates.append(Fate(resolved, UNCHANGED, before, Aim(before.version, before.size)))
                continue
            # The history first saw it after the moment (a note written by hand, no watch running),
            # but it has held these bytes since before: it existed then, it was not made since.
            after = Aim(before.version, before.size)
        elif moment.when is not None and after.version is None and abs_path not in named_then and (
                abs_path in unsure or (before is not None and abs_path not in seen_after)):
            # What it held at the moment is unknown (first seen after it, changed by then, or not seen
            # before now at all, its ctime after the moment): made since, or a note written by hand and
            # changed since. It is left as it is, said: archiving it on a guess took a person's note away.
            why = unsure.get(abs_path) or f"the history had not seen it before, and it changed {_changed(resolved)}"
            notes.append(f"{resolved.display} left as it is: what it held at {moment.shown} is unknown ({why})")
            fates.append(Fate(resolved, UNCHANGED, before, Aim(before.version, before.size) if before else Aim(None, 0)))
            continue
        elif (abs_path in vouched and before is not None and before.version == after.version
              and (folder_changed := _folder_changed_since(resolved, workspace, before_ns)) is not None):
            came_with[abs_path] = folder_changed  # as above: a folder renamed before its first sighting
        elif moment.when is not None and before is None and after.version is not None and _gone_since(resolved, before_ns):
            # The history last saw it before the moment, and it was deleted by hand, unseen: its
            # folder has not changed since before the moment, so it was gone by then already.
            after = Aim(None, 0)
        if before is None and after.version is not None and _file_on_the_way(resolved):
            # Nothing can be brought back there: planned, its step failed after the intent was
            # journaled, and every later rollback (and doctor --fix) failed on it again.
            notes.append(f"{resolved.display} left as it is: a folder on its path is a file, so it cannot be brought back")
            stranded[after.version] = resolved.display
            continue
        if before is not None or after.version is not None:
            # A name the history knows that held nothing then and holds nothing now (a note moved on,
            # a→b→c: a and b) is no memory file of either: listed, it was counted "unchanged".
            fates.append(Fate(resolved, _fate(before, after), before, after))
    notes += _moved_with_a_folder(fates, came_with, moment.shown)
    for i, f in enumerate(fates):
        if f.fate == ARCHIVE and f.before is not None and f.before.version in stranded:
            # Moved here from a name that cannot be written now (an extra path naming one file, gone
            # since; a folder on its path a file now): archived, the note left the memory altogether.
            notes.append(f"{f.resolved.display} left as it is: at the moment its bytes were at "
                         f"{stranded[f.before.version]}, where they cannot be brought back now")
            fates[i] = Fate(f.resolved, UNCHANGED, f.before, Aim(f.before.version, f.before.size))
    missing = [f for f in fates if f.after.version is not None and f.fate != UNCHANGED and not store.objects.has(f.after.version)]
    if missing:
        raise MemoryToolError(f"cannot roll back to {moment.shown}: the history no longer holds "
                              + ", ".join(f"{f.resolved.display} as it was then (version {short(f.after.version)})" for f in missing[:5])
                              + (f" and {len(missing) - 5} more" if len(missing) > 5 else "") + "; nothing was changed")
    too_big = [f for f in fates if f.fate in (REWRITE, ARCHIVE) and f.before and not store.objects.fits(f.before.size)]
    if too_big:
        raise MemoryToolError(f"cannot roll back to {moment.shown}: {', '.join(f.resolved.display for f in too_big)} "
                              f"cannot be kept in the history (one file may take at most [history] max_bytes / 8, "
                              f"{store.objects.max_bytes // 8} bytes) before it is replaced; nothing was changed")
    return fates, notes


def read_only_refused(store: HistoryStore, fates: list[Fate]) -> dict[str, ReadOnlyNote]:
    """The files a rollback would replace or archive that this user may not write in place
    (:func:`~..history.placing.is_read_only`), by absolute path, but those :func:`read_only_ok`
    lets go: a rollback to them is refused whole."""
    moved_back = {f.after.version for f in fates if f.fate == BRING_BACK}
    found: dict[str, ReadOnlyNote] = {}
    for f in fates:
        if f.fate not in (REWRITE, ARCHIVE) or f.before is None or (note := read_only_now(f.resolved)) is None:
            continue
        if not read_only_ok(store, f.resolved, f.before.version, f.fate == ARCHIVE and f.before.version in moved_back)(note.kept):
            found[f.resolved.abs_path] = note
    return found


def read_only_ok(store: HistoryStore, resolved: ResolvedPath, version: str, moved: bool) -> Callable[[FileMode], bool]:
    """Which modes of a read-only note holding ``version`` a rollback's step may replace or archive
    all the same. Any, when the step is half of a move (``moved``: the same rollback brings these
    bytes back at another path), as ``mv`` moves a read-only note. Otherwise only the mode the
    product itself gave it, when it brought the note back and nothing changed it since: its latest
    entry is a restore of this version, logged with this mode (its history's, not the user's word),
    which is what ``rollback --to UNDO`` of that rollback archives again. A note the user made
    read-only after that, or ever before a write, is refused."""
    if moved:
        return lambda kept: True
    latest = store.log.latest(resolved.abs_path)
    logged = store.log.latest_mode(resolved.abs_path) if latest is not None and latest.origin == RESTORE else None
    if logged is None or latest is None or latest.version != version:
        return lambda kept: False
    return lambda kept: (kept.mode & 0o777, kept.uid, kept.gid) == (logged.mode & 0o777, logged.uid, logged.gid)


def _held_since(resolved: ResolvedPath, before_ns: float) -> bool:
    """Whether the file has held its bytes at its name since before ``before_ns``: its status-change time
    (ctime) is no later. Every write, truncation, rename and link of the file moves its ctime, and no
    utime call sets it back (a ``touch -d`` or an archive's date set the mtime alone). Asked after the
    file was hashed: a change in between moves the ctime past ``before_ns``, so the hash is then never
    taken for what the file held at the moment."""
    try:
        with resolved.folder() as folder:
            seen = folder.lstat(resolved.name)
    except OSError:
        return False
    return stat.S_ISREG(seen.st_mode) and seen.st_ctime_ns <= before_ns


class FolderChanged(NamedTuple):
    said: str  # the deepest folder on the path changed since, and when
    renamed: bool  # one's status changed since but not its names (its mtime is before): renamed or moved


def _folder_changed_since(resolved: ResolvedPath, workspace: str, before_ns: float) -> FolderChanged | None:
    """Whether a folder between the file's root and the file has a ctime later than ``before_ns`` (made,
    renamed or moved since, or a name in it added, removed or renamed); None when none has. Each is
    looked at from the descriptor of the folder holding it, from the root."""
    said, renamed = None, False
    for i in range(len(resolved.parts) - 1):
        try:
            with Folder.under(resolved.root, resolved.parts[:i]) as holding:
                seen = holding.lstat(resolved.parts[i])
        except OSError:
            return None  # (the file was just read through it: swapped since, the step finds it)
        if seen.st_ctime_ns > before_ns:
            shown_folder = display_path(os.path.join(resolved.root, *resolved.parts[:i + 1]), workspace)
            said = f"{shown_folder} was made, renamed or changed at {iso_time(seen.st_ctime_ns / 1e9)}"
            if seen.st_mtime_ns <= before_ns:
                said, renamed = f"{shown_folder} was renamed or moved at {iso_time(seen.st_ctime_ns / 1e9)}", True
    return None if said is None else FolderChanged(said, renamed)


def _moved_with_a_folder(fates: list[Fate], came_with: dict[str, FolderChanged], moment: str) -> list[str]:
    """Each file of ``came_with`` (first seen after the moment, its bytes as before it, but a folder on
    its path changed since) archived where a folder on its path was renamed since and the rollback
    brings its bytes back under its name in another folder (the undo of that rename), said. Otherwise
    it is left as it is (held since before, as its ctime says), said where a folder on its path was
    renamed or its bytes come back elsewhere (a folder whose names changed since, a note written beside
    it, says nothing of it: archived on that guess, a person's note would leave)."""
    back_at = {(f.after.version, f.resolved.name): f.resolved for f in fates if f.fate == BRING_BACK}
    said = []
    for i, f in enumerate(fates):
        if (why := came_with.get(f.resolved.abs_path)) is None or f.before is None:
            continue
        back = back_at.get((f.before.version, f.resolved.name))
        there = back.display if back is not None else None
        if back is not None and why.renamed and _folder_gone(back):
            fates[i] = Fate(f.resolved, ARCHIVE, f.before, Aim(None, 0))
            said.append(f"{f.resolved.display} archived: it was not there at {moment} ({why.said}), and {there}, "
                        "which held its bytes then, is brought back")
        elif there is not None or why.renamed:
            also = f"; {there}, which held its bytes then, is brought back" if there is not None else ""
            said.append(f"{f.resolved.display} left as it is: what it held at {moment} is unknown ({why.said}{also})")
    return said


def _folder_gone(resolved: ResolvedPath) -> bool:
    """Whether the folder ``resolved`` is brought back into is not there now: the other half of a
    rename (``mv memory/p memory/q``). A folder whose status alone changed since (a chmod of memory/)
    is still there, and a note beside it with the same bytes is a person's own: left, not archived."""
    try:
        with resolved.folder():
            return False
    except FileNotFoundError:
        return True
    except OSError:
        return False


def _changed(resolved: ResolvedPath) -> str:
    """When the file's bytes or status last changed, said (its mtime or ctime, the later)."""
    try:
        with resolved.folder() as folder:
            seen = folder.lstat(resolved.name)
    except OSError:
        return "since"
    return f"at {iso_time(max(seen.st_mtime_ns, seen.st_ctime_ns) / 1e9)}"


def _gone_since(resolved: ResolvedPath, before_ns: float) -> bool:
    """Whether the file, absent now, was absent at ``before_ns`` too: its folder's ctime is no later (an
    unlink or a rename out of a folder moves the folder's ctime). A missing folder cannot tell."""
    try:
        with resolved.folder() as folder:
            return os.fstat(folder.fd).st_ctime_ns <= before_ns
    except OSError:
        return False


def _file_on_the_way(resolved: ResolvedPath) -> bool:
    """Whether a folder of the path is a file (a missing folder is made when the file comes back)."""
    try:
        resolved.folder().close()
    except NotADirectoryError:
        return True
    except OSError:
        return False
    return False


def _fate(before: FileVersion | None, after: Aim) -> str:
    now = before.version if before is not None else None
    if now == after.version:
        return UNCHANGED
    if now is None:
        return BRING_BACK
    return ARCHIVE if after.version is None else REWRITE


def current_version(store: HistoryStore, resolved: ResolvedPath, record: bool) -> FileVersion | None:
    """What the file holds now (None: absent); with ``record`` seen by the history too."""
    try:
        if record:
            return store.observe_file(resolved.abs_path, resolved.display)
        try:
            fd, _ = store.open_file(resolved.abs_path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            return snapshot_fd(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # a symlink, a FIFO, no permission, a folder swapped: not a file a rollback replaces
        raise PathRefused(f"cannot read {resolved.display} ({exc.strerror or exc}): a rollback replaces only the regular "
                          "files it reads") from None


def _not_covered(settings: Settings, label: str, ignored: list[str], extra: list[str]) -> list[str]:
    """What ``rollback --to LABEL`` leaves out, said (it was left out silently: `0 of 0 memory files would
    change`, exit 0, with every note edited since): the workspace's memory files the snapshot's ignore
    rules left out (its .openclaw-memoryignore when it was taken, or the defaults of an earlier release,
    which left out memory/node_modules/a.md and the like: that was blamed on an ignore file there was
    none of), and the extra paths' files, which no snapshot covers. One line for each, naming the first
    five; a rollback to a time covers them."""
    said = []
    for paths, why in ((ignored, "its ignore rules left {it} out when the snapshot was taken (.openclaw-memoryignore, or "
                                 "the built-in defaults of an earlier release: *.tmp, *.log, .git/, __pycache__/, "
                                 "node_modules/)"),
                       (extra, "no watchdog snapshot covers an extra path's files")):
        if paths:
            names = [display_path(p, str(settings.workspace)) for p in sorted(paths)]
            they, it = ("it is", "it") if len(names) == 1 else ("they are", "them")
            listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            said.append(f"{listed} left as {they}: snapshot {label} does not cover {it} ({why.format(it=it)}); "
                        f"give --to a time to roll {it} back too (see `openclaw-memory log`)")
    return said


def _label_also_a_time(label: str) -> list[str]:
    """What ``rollback --to LABEL`` says when the label also reads as a time (a snapshot labelled so
    before ``watchdog snapshot`` refused such labels): the snapshot was taken, and how to ask for the time."""
    try:
        when = time_meant(label)[1]
    except (ValueError, OverflowError):
        return []
    return [f"{label} is taken as the watchdog snapshot of that label, not as the time {when} it also reads as; "
            f"for that time, give --to {when}"]


def _snapshot_targets(settings: Settings, label: str) -> tuple[dict[str, Aim], list[str]]:
    """What the snapshot kept of each workspace memory file, by absolute path. A file whose bytes it
    did not keep (too large, changing while it was taken) and which is now as the snapshot recorded
    it is its own aim (unchanged: nothing to put back); one that is not refuses the rollback whole."""
    snapshots = SnapshotStore(settings.data_dir)
    table = snapshots.load(label)
    kept = snapshots.files(label)
    memory = [rel for i, rel in enumerate(table.paths) if chr(table.kinds[i]) == KIND_FILE and is_memory_file(rel, False)]
    if memory and not kept:
        raise MemoryToolError(f"snapshot {label} was taken before snapshots kept the files' content (it holds their hashes "
                              "only): it cannot be restored; give a time instead (see `openclaw-memory log`)")
    aims = {rel: Aim(version, size, table.mode[i] if (i := table.index.get(rel)) is not None else None)
            for rel, (version, size) in kept.items() if is_memory_file(rel, False)}
    lost = []
    for rel in memory:
        if rel in kept:
            continue
        i = table.index[rel]
        if (recorded := table.digest(i)) is not None and _holds_now(settings, rel, recorded):
            aims[rel] = Aim(recorded.hex(), table.size[i], table.mode[i])
        else:
            lost.append(rel)
    if lost:
        # It said "give a time instead": a time rollback puts back only the versions the history
        # holds, and a file too large for the snapshot to keep is most often too large for it too.
        it, they = ("it", "it has") if len(lost) == 1 else ("them", "they have")
        raise MemoryToolError(f"snapshot {label} did not keep the bytes of {', '.join(lost[:5])}"
                              f"{f' and {len(lost) - 5} more' if len(lost) > 5 else ''} (too large to keep, or changing "
                              f"while it was taken), and {they} changed since: the rollback cannot put {it} back; a "
                              "rollback to a time puts back only the versions the history holds (see `openclaw-memory "
                              "log`); nothing was changed")
    workspace = settings.workspace
    return {os.path.join(workspace, rel): aim for rel, aim in aims.items()}, []


def _holds_now(settings: Settings, rel: str, recorded: bytes) -> bool:
    """Whether the workspace file ``rel`` is a regular file holding the bytes the snapshot hashed as
    ``recorded`` (looked at as the snapshot looked: from its folder's descriptor, never through a
    symlink, hashed in blocks)."""
    seen = observe_entry(settings.workspace, rel)
    return seen is not None and seen.kind == KIND_FILE and seen.digest == recorded


def _history_targets(settings: Settings, store: HistoryStore, when: float,
                     before_ns: float) -> tuple[dict[str, Aim], set[str], dict[str, str], set[str], set[str]]:
    """Each memory file's version at ``when``, by absolute path (None: removed, or not made yet), the
    paths an entry at or before ``when`` named, those whose content then is unknown (and why),
    every path an entry named, and those a sighting after ``when`` vouched for (below). A path whose
    entries at that time retention has dropped is refused.

    A name the history first saw after ``when``, by a sighting (a first ``read`` of a note written by
    hand), held those bytes at ``when`` when the sighting's stat says so: its ctime (which every write,
    rename, link and ``touch`` moves) and mtime no later than ``before_ns``, ``when`` less the file
    system's timestamp granularity. They are its version then (the note was not made since: archived,
    the agent's later change, removal or move took a person's note away). A sighting dated later, or
    with no stat logged (before schema 13), cannot tell: that name, and each name of the same file's
    history the moment would empty, is ``unsure``. A name with entries at or before ``when`` whose
    first entry after it is such a sighting, so dated, held its bytes then too (an editor's save over
    the agent's version, a note written again by hand after a removal), whatever the replay says. A name whose first entry is the product's own (a
    write, a restore, a move, an import) was made since. The names vouched for so are returned too:
    a folder renamed since leaves its files' ctimes as they were, which :func:`plan` looks at.

    A moved file's entries are kept under the path it has now, each with the name it had when it
    was logged (``display``), so a path's entries up to ``when`` are replayed in order, by name: an
    entry puts its version at its name, a removal empties its name, and a move takes the file from
    the name it logged as its source (``moved_from``) to the one it names (a forced move's replaced
    file was logged as removed just before). A path's history may hold several files' entries,
    interleaved: a move onto a name (forced, or used before) adds the mover's to those already
    there, so a move empties its source alone (it emptied every other name: a file whose entries a
    later move brought in was taken for gone; and then every name holding its bytes: a copy of the
    note under a second name was taken for moved too, which a move logged before schema 9, naming
    no source, still does). Where two histories name one path, the one holding a file there wins."""
    rows = store.db.rows("SELECT path, display, version, time, size, origin, previous, moved_from, "
                         "COALESCE(arrived, time), arrived, mtime_ns, ctime_ns FROM versions ORDER BY path, id")
    by_path: dict[bytes, list[tuple]] = {}
    for row in rows:
        by_path.setdefault(row[0], []).append(row[1:])
    workspace = str(settings.workspace)
    roots = (workspace, *settings.extra_paths)
    targets: dict[str, Aim] = {}
    named_then: set[str] = set()
    seen_after: set[str] = set()
    vouched: set[str] = set()
    histories: list[tuple[str, dict[str, Aim], list[tuple]]] = []
    unknown: list[str] = []
    def memory_now(path: str) -> bool:  # not under an extra path no longer configured
        return in_roots(path, roots)

    for raw, entries in by_path.items():
        path = dec(raw)
        # In time order (logged order among equal times): an import logs the archive's versions with
        # their own, earlier times after what the path's log held here. An imported entry counts only
        # from the moment it arrived: before the import this workspace held what its own entries say
        # (a note the import brought was not here, another workspace's version of a note was not it).
        at = sorted((e for e in entries if e[2] <= when and e[7] <= when), key=lambda e: e[2])
        if not at and entries[0][5] is not None and memory_now(path):  # a version before its oldest entry kept: dropped
            unknown.append(path)
        named: dict[str, Aim] = {path: Aim(None, 0)}
        for display, version, _, size, origin, _, moved_from, *_ in at:
            name = _named(dec(display), path, workspace)
            if origin == MOVE and moved_from is not None:  # the file leaves the name it moved from
                named[_named(dec(moved_from), path, workspace)] = Aim(None, 0)
            elif origin == MOVE:  # logged before moves named their source: every name holding what it moved
                named = {n: Aim(None, 0) if aim.version == version else aim for n, aim in named.items()}
            named[name] = Aim(None, 0) if origin == REMOVE else Aim(version, size)
            named_then.add(name)
        histories.append((path, named, entries))
    # Each name's first entry (by the time it arrived here), whichever history holds it: the names
    # the moment does not name were first seen after it.
    first: dict[str, tuple] = {}
    later: dict[str, tuple[str, tuple]] = {}  # each name's first entry after the moment, and its history
    for path, _, entries in histories:
        for entry in entries:
            name = _named(dec(entry[0]), path, workspace)
            if name not in first or entry[7] < first[name][7]:
                first[name] = entry
            if (entry[2] > when or entry[7] > when) and (name not in later or entry[7] < later[name][1][7]):
                later[name] = (path, entry)
    unsure: dict[str, str] = {}
    for path, named, entries in histories:
        names = {_named(dec(e[0]), path, workspace) for e in entries}
        doubted = []
        for name in sorted(names - named_then):
            _, version, _, size, origin, _, _, seen, arrived, mtime_ns, ctime_ns = first[name]
            if origin != EXTERNAL_EDIT or arrived is not None:
                continue  # the product made it since (a write, a restore, a move, an import)
            if mtime_ns is not None and ctime_ns is not None and max(mtime_ns, ctime_ns) <= before_ns:
                named[name] = Aim(version, size)  # those bytes, unchanged since before the moment
                named_then.add(name)
                vouched.add(name)
                continue
            changed = ("no date of its last change is logged" if mtime_ns is None or ctime_ns is None
                       else f"changed at {iso_time(max(mtime_ns, ctime_ns) / 1e9)}")
            unsure[name] = f"the history first saw it at {iso_time(seen)}, {changed}"
            doubted.append(name)
        for name in sorted(names & named_then):
            # A name the history knew before the moment, first seen after it changed by hand (an
            # editor's save, a note written again after a removal): a sighting whose dates are
            # before the moment says it held those bytes then, whatever the last entry before it says.
            if name not in later or later[name][0] != path:
                continue
            _, version, _, size, origin, _, _, _, arrived, mtime_ns, ctime_ns = later[name][1]
            if (origin == EXTERNAL_EDIT and arrived is None and mtime_ns is not None and ctime_ns is not None
                    and max(mtime_ns, ctime_ns) <= before_ns):
                named[name] = Aim(version, size)
                vouched.add(name)
        for name in names | set(named):
            if doubted and name not in unsure and named.get(name, Aim(None, 0)).version is None:
                # Where that note's bytes went since (a move, a forced move): emptied on a guess, they
                # would leave the workspace too.
                unsure[name] = (f"it holds what {display_path(doubted[0], workspace)} held since, whose content at "
                                "the moment is unknown")
        seen_after |= names
        for name, aim in named.items():
            if memory_now(name) and (aim.version is not None or name not in targets):
                targets[name] = aim
    if unknown:
        raise MemoryToolError(f"cannot roll back to {iso_time(when)}: the history no longer knows what "
                              f"{', '.join(os.path.relpath(p, settings.workspace) for p in unknown[:5])} held then "
                              "(retention dropped those entries: [history] keep_per_path); nothing was changed")
    return targets, named_then, {n: why for n, why in unsure.items() if memory_now(n)}, seen_after, vouched


def _named(display: str, path: str, workspace: str) -> str:
    """The absolute path of the name an entry of ``path``'s history was logged under."""
    if display == display_path(path, workspace):
        return path
    return absolute_path(display, workspace)
