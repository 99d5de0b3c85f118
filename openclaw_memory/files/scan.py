"""List exactly the memory files of a workspace, in OpenClaw's order.

Order: the root files (``MEMORY.md``, ``USER.md``, then the dream diary), then the
``memory/`` tree, then each extra path in turn; within the tree and each extra folder
the full paths are sorted as JavaScript sorts strings (UTF-16 code units), so
``memory/a-b.md`` comes before ``memory/a.md`` and ``memory/a/z.md``. The same real
path is listed once (first occurrence kept). Nothing here opens a file, so a FIFO,
socket or device can never block the scan.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, replace
from operator import attrgetter
from time import time_ns
from typing import TYPE_CHECKING

from ..bulk import gc_paused
from ..errors import OutOfFiles, cut, is_out_of_files, printable
from ..fsutil.fsclock import WIDEST_GUARD_NS
from ..fsutil.safeopen import DIR_FLAGS, FolderSwapped, as_scanned, open_root
from ..wire import key
from .jstext import sort_utf16
from .paths import (
    CANONICAL_ROOT,
    DREAMS,
    LEGACY_DREAMS,
    LEGACY_ROOT,
    MEMORY_DIR,
    REPAIR_DIR,
    USER_ROOT,
    ExtraPath,
    display_path,
    file_kind,
)
from .root import resolve_dream_diary

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from ..settings import Settings


# A folder at the workspace root named like the legacy root file: OpenClaw passes over the path
# memory.md whatever it is, so nothing below it is memory, through an extra path either.
LEGACY_NAMED_FOLDER = "named like the legacy root file but not a file, so never memory: move what it holds under memory/"
FOLDER_NOT_FILE = "a folder, not a file"  # a root file's name (USER.md) on a folder: doctor names it


@dataclass(frozen=True)
class MemoryFile:
    path: str  # relative to the workspace with "/" (``../notes/a.md`` outside it), as OpenClaw shows it
    abs_path: str
    source: str  # "root" | "memory" | "extra"
    kind: str  # "markdown" | "image" | "audio"
    size: int
    mtime_ns: int = key(hidden=True, default=0)
    ctime_ns: int = key(hidden=True, default=0)
    inode: int = key(hidden=True, default=0)
    mode: int = key(hidden=True, default=0)  # with the size, times and inode: what the change rule compares (database.observations)


_new = object.__new__


def _memory_file(path: str, abs_path: str, source: str, kind: str, st: os.stat_result) -> MemoryFile:
    """``MemoryFile(path, abs_path, source, kind, size, mtime_ns, ctime_ns, inode, mode)`` of ``st``,
    made for the scan's hot path: a frozen dataclass's ``__init__`` sets each field through
    ``object.__setattr__``; filling the new instance's ``__dict__`` in field order makes the same
    object (equal, same hash and repr) in a third of the time. ``test_scan_walk`` checks it against
    the constructor field by field, so a field added to MemoryFile cannot be missed here."""
    f = _new(MemoryFile)
    d = f.__dict__
    d["path"] = path
    d["abs_path"] = abs_path
    d["source"] = source
    d["kind"] = kind
    d["size"] = st.st_size
    d["mtime_ns"] = st.st_mtime_ns
    d["ctime_ns"] = st.st_ctime_ns
    d["inode"] = st.st_ino
    d["mode"] = st.st_mode
    return f


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class ScanResult:
    workspace: str
    agent: str
    # Tuples, as the result is frozen: a scan is cached and shared (ScanCache), so a caller must not
    # be able to change what the next caller is given.
    files: tuple[MemoryFile, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    # Every folder listed, with (inode, mtime) taken before listing it: see ScanCache.
    folders: tuple[tuple[str, int, int], ...] = key(hidden=True, default=())

    @property
    def warnings(self) -> list[str]:
        """Problems a user must hear about even without ``--json`` (unreadable folders)."""
        return [f"cannot read {s.path}: {s.reason}" for s in self.skipped if s.reason.startswith("unreadable")]

    def suggesting(self, program: str) -> ScanResult:
        """This listing with each command a skip reason names (``doctor --fix``) run as ``program``
        (the caller's ``settings.command_line``): run as printed, it acts on this workspace."""
        return replace(self, skipped=tuple(worded_skips(self.skipped, program)))


def worded_skips(skipped: Sequence[Skipped], program: str) -> list[Skipped]:
    from ..errors import suggested

    return [replace(s, reason=suggested(s.reason, program)) for s in skipped]


class _Collector:
    def __init__(self, workspace: str, multimodal: bool | tuple[str, ...]):
        self.workspace = workspace
        self.multimodal = multimodal
        self.files: list[MemoryFile] = []
        self.skipped: list[Skipped] = []
        self._seen_real: set[str] = set()  # the real paths of files[:_seen_upto]: see listed()
        self._seen_upto = 0
        self._seen_dirs: set[tuple[int, int]] = set()
        self.folders: list[tuple[str, int, int]] = []
        self._legacy_root = os.path.join(workspace, LEGACY_ROOT)
        self._repair_root = os.path.join(workspace, REPAIR_DIR)

    def note_folder(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError:
            st = None
        self.folders.append((path, st.st_ino if st else 0, st.st_mtime_ns if st else 0))

    def skip(self, abs_path: str, reason: str) -> None:
        shown = display_path(abs_path, self.workspace)
        if not any(s.path == shown for s in self.skipped):
            self.skipped.append(Skipped(shown, reason))

    def listed(self) -> set[str]:
        """The real paths of the files listed so far, for the rule that a real path is listed once.

        Brought up to date only when asked (a file listed, a walk begun): one walk never meets
        the same path twice (each folder is walked once, its names are unique), so the walk's
        hot path looks up only what was listed inside its root before it began, and a workspace
        without extra paths never builds the set of its notes at all.
        """
        files = self.files
        if self._seen_upto < len(files):
            self._seen_real.update([f.abs_path for f in files[self._seen_upto:]])
            self._seen_upto = len(files)
        return self._seen_real

    def add(self, abs_path: str, source: str, kind: str, st: os.stat_result, shown: str | None = None) -> None:
        if abs_path in self.listed():
            return
        if shown is None:
            shown = display_path(abs_path, self.workspace)
        self.files.append(_memory_file(shown, abs_path, source, kind, st))

    def consider_file(self, abs_path: str, name: str, source: str, multimodal: bool | tuple[str, ...], st: os.stat_result | None = None) -> None:
        kind = file_kind(name, multimodal)
        if kind is None:
            return
        if abs_path == self._legacy_root:
            self.skip(abs_path, "legacy root memory.md is never memory (run `openclaw-memory doctor --fix`)")
            return
        if st is None:
            try:
                st = os.lstat(abs_path)
            except FileNotFoundError:
                return  # vanished mid-scan: it is simply not there any more
        if stat.S_ISLNK(st.st_mode):
            self.skip(abs_path, "symlink (ignored)")
        elif stat.S_ISDIR(st.st_mode):
            self.skip(abs_path, FOLDER_NOT_FILE)
        elif not stat.S_ISREG(st.st_mode):
            self.skip(abs_path, "not a regular file (FIFO, socket or device; never opened)")
        else:  # media of any size: OpenClaw lists it; its limit (maxFileBytes) is for embedding it
            self.add(abs_path, source, kind, st)

    def sort_from(self, start: int) -> None:
        """Put the files listed since ``start`` (one source) in OpenClaw's order: full paths, UTF-16.

        Also ends the source's walk: the next source walks its folders again (the same
        folder under two patterns lists the files of both), its files de-duplicated.
        """
        listed = self.files[start:]
        sort_utf16(listed, _ABS_PATH)
        self.files[start:] = listed
        self._seen_upto = min(self._seen_upto, start)  # files[start:] reordered: listed() adds them again
        self._seen_dirs.clear()

    def walk(self, root: str, source: str, multimodal: bool | tuple[str, ...], shown_prefix: str | None = None,
             admits: Callable[[str], bool] | None = None) -> None:
        """Depth-first, symlinks never followed; ``admits`` (an extra path's pattern) filters files.

        Each folder is opened from its parent's descriptor (``O_NOFOLLOW``), so a folder
        swapped for a symlink while we walk is never listed: nothing outside the root
        shows up as memory. ``shown_prefix`` is how ``root`` is displayed, plus "/": a
        listed file's path is that prefix plus its name (the scan's hot path). The walk keeps
        its own stack (a chain of folders thousands deep is walked like any other), holding
        open the descriptors of the folders on the current path only, HELD_FOLDERS of them at most
        (and its root's): deeper, those furthest up are let go and opened again on the way back
        (:meth:`_climb`, :meth:`_reopen`), each the very folder listed, never through a symlink.

        The common entry, a regular ``*.md`` file where no pattern filters, is listed in the loop
        itself (at 30,000 notes the Python around each note's stat was most of the scan): by
        ``_visit``'s checks in their order it is not a symlink, not a folder, and is listed
        unless it is the legacy root file; its path can repeat only a file listed before this
        walk inside its root (none, for the memory folder: then nothing is looked up). Every
        other entry goes through ``_visit``. ``test_scan_walk`` checks that both ways
        list the same on generated trees.
        """
        if shown_prefix is None:
            shown_prefix = "" if root == self.workspace else display_path(root, self.workspace) + "/"
        files = self.files
        inside = root + os.sep
        listed_before = {p for p in self.listed() if p.startswith(inside)}
        legacy_root = self._legacy_root
        stack: list[_Folder] = []
        folder = self._open(root, shown_prefix, None)
        if folder is not None:
            stack.append(folder)
        try:
            while stack:
                top = stack[-1]
                if top.fd < 0 and not self._reopen(stack):
                    continue  # it, or a folder above it, is not what was listed any more: dropped from the stack
                prefix, shown = top.prefix, top.shown_prefix
                for entry in top.entries:  # an iterator: after a sub-folder, it goes on where it was
                    name = entry.name
                    if admits is None and name.endswith(".md") and entry.is_file(follow_symlinks=False):
                        path = prefix + name
                        if path != legacy_root:
                            if not listed_before or path not in listed_before:
                                try:
                                    st = entry.stat(follow_symlinks=False)
                                except FileNotFoundError:
                                    continue  # vanished mid-scan
                                files.append(_memory_file(shown + name, path, source, "markdown", st))
                            continue
                    child = self._visit(top, entry, source, multimodal, admits)
                    if child is not None:
                        stack.append(child)
                        if len(stack) > HELD_FOLDERS + 1:
                            stack[-HELD_FOLDERS - 1].let_go()
                        break
                else:
                    below = stack.pop().fd
                    if stack and stack[-1].fd < 0:
                        try:
                            self._climb(stack[-1], below)
                        finally:
                            os.close(below)
                    else:
                        os.close(below)
        finally:
            for open_folder in stack:
                if open_folder.fd >= 0:
                    os.close(open_folder.fd)

    def _open(self, root: str, shown_prefix: str, parent_fd: int | None) -> _Folder | None:
        """The folder ``root``, opened and listed; None (reported) when it cannot be, or was seen."""
        try:
            fd = os.open(os.path.basename(root), DIR_FLAGS, dir_fd=parent_fd) if parent_fd is not None else open_root(root)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._refused(root, exc)
            return None
        try:
            st = os.fstat(fd)
            key = _key(st)
            if key in self._seen_dirs:
                os.close(fd)
                return None
            self._seen_dirs.add(key)
            self.folders.append((root, st.st_ino, st.st_mtime_ns))
            with os.scandir(fd) as it:
                entries = sorted(it, key=_NAME)
        except OSError as exc:
            os.close(fd)
            self._refused(root, exc)
            return None
        return _Folder(fd, key, root + os.sep, shown_prefix, iter(entries))

    def _refused(self, root: str, exc: OSError) -> None:
        """Report the folder ``root`` that could not be opened or listed; out of descriptors, raise:
        that is no folder unreadable, and a folder skipped would have its notes taken out of the index."""
        if is_out_of_files(exc):
            raise OutOfFiles(f"cannot list {cut(printable(display_path(root, self.workspace)), 100)}") from None
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) or isinstance(exc, FolderSwapped):
            self.skip(root, "symlink (ignored)")
        else:
            self.skip(root, f"unreadable: {exc.strerror or exc}")

    def _climb(self, folder: _Folder, child_fd: int) -> None:
        """Open again ``folder``, let go on the way down (:meth:`_Folder.let_go`), as the walk comes
        back to it from the sub-folder whose descriptor is ``child_fd``: its ``..``, never a link, when
        that is the very folder listed (device and inode), as a descriptor held all along would be.
        Else it stays let go, for :meth:`_reopen` (that sub-folder was moved, say)."""
        try:
            fd = os.open("..", DIR_FLAGS, dir_fd=child_fd)
        except OSError as exc:
            if is_out_of_files(exc):
                self._refused(folder.prefix[:-1], exc)
            return
        if _key(os.fstat(fd)) != folder.key:
            os.close(fd)
            return
        self._list_again(folder, fd)

    def _reopen(self, stack: list[_Folder]) -> bool:
        """Open again the top of ``stack``, let go on the way down and not climbed back to: one name at
        a time from the nearest folder above it still held, as the walk opened it (``O_NOFOLLOW``), each
        the very folder listed then (device and inode). False when a folder on the way is not what was
        listed: it and the folders below it are dropped from the stack, the rest of their entries not
        listed (a symlink swapped in is reported as the walk reports one; a folder gone, or another in
        its place, is not there any more, as one gone before it was opened)."""
        target = len(stack) - 1
        held = target - 1
        while stack[held].fd < 0:
            held -= 1
        fd = stack[held].fd
        for depth in range(held + 1, target + 1):
            path = stack[depth].prefix[:-1]
            try:
                opened = os.open(os.path.basename(path), DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                opened, failed = -1, exc
            if fd != stack[held].fd:
                os.close(fd)  # only the way down: the walk climbs back to each from the target
            if opened >= 0 and _key(os.fstat(opened)) != stack[depth].key:
                os.close(opened)
                opened, failed = -1, FileNotFoundError(errno.ENOENT, "another folder by that name", path)
            if opened < 0:
                if not isinstance(failed, FileNotFoundError):
                    self._refused(path, failed)
                del stack[depth:]
                return False
            fd = opened
        if not self._list_again(stack[target], fd):
            del stack[target:]
            return False
        return True

    def _list_again(self, folder: _Folder, fd: int) -> bool:
        """Hold ``fd`` as ``folder``'s descriptor again, its entries not visited yet listed from it;
        False (reported, ``fd`` closed) when they cannot be."""
        try:
            with os.scandir(fd) as it:
                folder.entries = iter(sorted((e for e in it if e.name in folder.names), key=_NAME))
        except OSError as exc:
            os.close(fd)
            self._refused(folder.prefix[:-1], exc)
            return False
        folder.fd = fd
        return True

    def _visit(self, folder: _Folder, entry: os.DirEntry, source: str, multimodal: bool | tuple[str, ...],
               admits: Callable[[str], bool] | None) -> _Folder | None:
        """List or skip one entry of ``folder``; a sub-folder to walk next is returned, opened."""
        name = entry.name
        path = folder.prefix + name
        try:
            if entry.is_symlink():
                if _emacs_lock(folder.fd, name):
                    return None  # not a note: Emacs's mark on one being edited
                if name.endswith(".md") or file_kind(name, multimodal) or _leads_to_folder(entry):
                    self.skip(path, "symlink (ignored)")
                return None
            if entry.is_dir(follow_symlinks=False):
                if name == REPAIR_DIR:
                    self.skip(path, "repair archive (never memory)")
                elif path == self._legacy_root:  # an extra path holding the workspace: OpenClaw never enters it
                    self.skip(path, LEGACY_NAMED_FOLDER)
                elif path != self._repair_root:
                    # Below the workspace, reached from an extra path above it ('..'), paths are the
                    # workspace's own again: notes/n.md, as OpenClaw shows them, not ../ws/notes/n.md.
                    shown = "" if path == self.workspace else folder.shown_prefix + name + "/"
                    return self._open(path, shown, folder.fd)
                return None
            if admits is not None and not admits(path):
                return None
            if name.endswith(".md") and entry.is_file(follow_symlinks=False) and path != self._legacy_root:
                self.add(path, source, "markdown", entry.stat(follow_symlinks=False), folder.shown_prefix + name)
            elif file_kind(name, multimodal) is not None:
                self.consider_file(path, name, source, multimodal, entry.stat(follow_symlinks=False))
        except FileNotFoundError:
            pass  # vanished mid-scan
        return None


# How many folder descriptors one walk holds at most besides its root's (and one more while it
# lists a folder: scandir takes its own). Past this depth it lets go of those furthest up and opens
# each again as it climbs back to it (_Collector._climb), so that no depth of folders runs out of
# descriptors: a default `ulimit -n` is 1024, and the index and the state database hold their own.
HELD_FOLDERS = 16


@dataclass
class _Folder:
    """A folder on the walk's current path: its descriptor, kept open while its entries are visited
    (-1 when let go: see HELD_FOLDERS)."""

    fd: int
    key: tuple[int, int]  # its device and inode when it was listed
    prefix: str  # its path plus the separator
    shown_prefix: str
    entries: Iterator[os.DirEntry]  # those not visited yet, by name
    names: frozenset[str] = frozenset()  # when let go, the names of its entries not visited yet

    def let_go(self) -> None:
        """Close its descriptor, keeping the names of the entries not visited yet: each entry
        stats through the descriptor its folder was listed from, so they are listed again when the
        folder is opened again."""
        if self.fd >= 0:
            self.names = frozenset(e.name for e in self.entries)
            self.entries = iter(())
            os.close(self.fd)
            self.fd = -1


_ABS_PATH = attrgetter("abs_path")
_NAME = attrgetter("name")


def _key(st: os.stat_result) -> tuple[int, int]:
    """What tells one folder from another: its device and inode."""
    return st.st_dev, st.st_ino


def _emacs_lock(folder_fd: int, name: str) -> bool:
    """Whether a link is the lock Emacs keeps beside a file with unsaved changes: ``.#NAME`` leading
    to ``user@host.pid[:boot]``, a name that is no path (a link a person made is still reported)."""
    if not name.startswith(".#"):
        return False
    try:
        target = os.readlink(name, dir_fd=folder_fd)
    except OSError:
        return False
    return "@" in target and "/" not in target


def _leads_to_folder(entry: os.DirEntry) -> bool:
    """Whether a symlink points at a folder, or cannot be followed at all (a loop: ``a -> a``,
    ``a -> b -> a``): both are reported as skipped symlinks, never walked."""
    try:
        return entry.is_dir()
    except OSError:
        return True


def scan_memory_files(
    workspace: str | os.PathLike[str],
    *,
    extra_paths: tuple[str | ExtraPath, ...] | list[str | ExtraPath] = (),
    multimodal: bool | tuple[str, ...] = False,
    agent: str = "main",
) -> ScanResult:
    """List the memory files of ``workspace`` (already resolved) with what was skipped and why."""
    ws = os.fspath(workspace)
    with gc_paused():  # its MemoryFile objects form no cycle (see bulk)
        try:
            return _scan(ws, extra_paths, multimodal, agent)
        except OSError as exc:
            if is_out_of_files(exc):  # (the workspace's own listing: each folder's says which, _refused)
                raise OutOfFiles(f"cannot list the memory files of {printable(ws)}") from None
            raise


def _scan(ws: str, extra_paths: Iterable[str | ExtraPath], multimodal: bool | tuple[str, ...], agent: str) -> ScanResult:
    c = _Collector(ws, multimodal)
    c.note_folder(ws)
    entries = set(os.listdir(ws))

    for name in (CANONICAL_ROOT, USER_ROOT):
        if name in entries:
            c.consider_file(os.path.join(ws, name), name, "root", False)
    diary, passed_over = resolve_dream_diary(ws, entries)
    if diary is not None:
        c.consider_file(diary.path, diary.name, "root", False)
    for entry in passed_over:  # a write refuses the file ones (history.guard.refuse_dream_twin)
        reason = ("symlink (ignored)" if entry.is_symlink else "not a regular file" if not entry.is_file else
                  "legacy dream diary twin of DREAMS.md (ignored)" if entry.name == LEGACY_DREAMS else
                  f"a dream diary in another letter case (ignored: name it {DREAMS})")
        c.skip(entry.path, reason)
    if LEGACY_ROOT in entries:
        legacy = os.path.join(ws, LEGACY_ROOT)
        try:
            regular = stat.S_ISREG(os.stat(legacy).st_mode)
        except OSError:
            regular = False
        c.skip(legacy, "legacy root memory.md is never memory (run `openclaw-memory doctor --fix`)" if regular else
               LEGACY_NAMED_FOLDER)
    if REPAIR_DIR in entries:
        c.skip(os.path.join(ws, REPAIR_DIR), "repair archive (never memory)")

    if MEMORY_DIR in entries:
        memory_dir = os.path.join(ws, MEMORY_DIR)
        try:
            st = os.lstat(memory_dir)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISLNK(st.st_mode):
            c.skip(memory_dir, "symlink (ignored)")
        elif st is not None and stat.S_ISDIR(st.st_mode):
            start = len(c.files)
            c.walk(memory_dir, "memory", multimodal=False, shown_prefix=MEMORY_DIR + "/")
            c.sort_from(start)

    for given in extra_paths:
        extra = given if isinstance(given, ExtraPath) else ExtraPath(given)  # a plain path: no pattern
        start = len(c.files)
        c.note_folder(os.path.dirname(extra))  # where a missing extra path would appear
        _scan_extra(c, extra, multimodal)
        c.sort_from(start)
    return ScanResult(ws, agent, tuple(c.files), tuple(c.skipped), tuple(c.folders))


def _scan_extra(c: _Collector, extra: ExtraPath, multimodal: bool | tuple[str, ...]) -> None:
    try:
        st = os.lstat(extra)
    except FileNotFoundError:
        c.skip(extra, "extra path missing")
        return
    except OSError as exc:
        c.skip(extra, f"unreadable: {exc.strerror or exc}")
        return
    if stat.S_ISLNK(st.st_mode):
        c.skip(extra, "symlink (ignored)")
        return
    # Parent folders may be symlinks (/tmp on macOS); the extra root itself is not.
    real = as_scanned(extra)
    if _inside(real, c._repair_root):
        c.skip(real, "repair archive (never memory)")
    elif real == c._legacy_root and stat.S_ISDIR(st.st_mode):
        c.skip(real, LEGACY_NAMED_FOLDER)
    elif stat.S_ISDIR(st.st_mode):
        pattern = extra.pattern
        c.walk(real, "extra", multimodal, admits=ExtraPath(real, pattern).admits if pattern else None)
    else:
        c.consider_file(real, os.path.basename(real), "extra", multimodal, st)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + os.sep)


# Files whose stat one check of a ScanCache compares (in rotation): about 1 ms, the whole of a
# workspace of up to this many files. Measured at 30,000 notes (bench/scale.py): checking every
# file was 95% of a search through the service (90 ms); folders alone cannot see an edit in place.
FILES_PER_CHECK = 1024


class ScanCache:
    """The last scan of one settings, reused while nothing it looked at has changed.

    For a long-lived process (the service, an MCP server, a library caller) that checks for
    stale files on every search: creating, removing or renaming an entry changes its folder's
    mtime, and an edit changes the file's size or mtime. Each check stats every folder the scan
    listed, and the files in rotation, ``FILES_PER_CHECK`` at a time (a workspace of up to that
    many files: all of them, every check). A file is compared by the change rule's key (size,
    ns mtime, ns ctime, inode, mode: ``database.observations``), so a same-size rewrite that keeps
    the mtime (``touch -r``, ``cp -p``, ``rsync -t``) is seen as `status` sees it. So an entry
    created, removed or renamed is seen by the next check; an edit in place by the next check
    after a watch tells of it (``changed()``: the service's watch does for every event), else
    within ``ceil(files / FILES_PER_CHECK)`` checks. Every stat is the one the scan took before
    listing, so a change made during the scan is seen by a later check. A scan that could not
    read a folder is never reused (making it readable changes nothing a stat here sees), nor one
    that is *racy*: a folder's mtime or a file's ctime within the widest timestamp guard (2 s,
    ``fsutil.fsclock``) of the scan's start, so that a change in the same clock tick, which
    leaves every stat as it was (a 1-second clock: ext2, ext3, ext4 with 128-byte inodes), is
    found by walking again.
    """

    def __init__(self, settings: Settings, *, files_per_check: int = FILES_PER_CHECK):
        self.settings = settings
        self.files_per_check = files_per_check
        self._last: ScanResult | None = None
        self._next = 0  # where the rotation through the last scan's files goes on

    def changed(self) -> None:
        """Something may have changed (a watch's event): the next ``scan()`` walks again."""
        self._last = None

    def scan(self) -> ScanResult:
        last = self._last
        if last is not None and _folders_unchanged(last) and self._files_unchanged(last):
            return last
        started_ns = time_ns()
        result = scan_workspace(self.settings)
        self._last = None if result.warnings or _racy(result, started_ns) else result
        self._next = 0
        return result

    def _files_unchanged(self, result: ScanResult) -> bool:
        files = result.files
        if len(files) <= self.files_per_check:
            return _files_unchanged(files)
        start = self._next
        turn = files[start:start + self.files_per_check]
        turn += files[:self.files_per_check - len(turn)]
        self._next = (start + self.files_per_check) % len(files)
        return _files_unchanged(turn)


def _folders_unchanged(result: ScanResult) -> bool:
    for path, ino, mtime_ns in result.folders:
        try:
            st = os.stat(path)
        except OSError:
            if ino:
                return False
            continue
        if st.st_ino != ino or st.st_mtime_ns != mtime_ns:
            return False
    return True


def _racy(result: ScanResult, started_ns: int) -> bool:
    """Whether a folder or file of the scan changed so close to ``started_ns`` that a change in the
    same clock tick would leave its stat as the scan saw it (a file by its ctime, which no program
    sets: a future mtime does not make a scan racy for ever)."""
    since = started_ns - WIDEST_GUARD_NS
    return any(mtime_ns >= since for _path, _ino, mtime_ns in result.folders) or \
        any(f.ctime_ns >= since for f in result.files)


def _files_unchanged(files: Sequence[MemoryFile]) -> bool:
    for f in files:
        try:
            st = os.lstat(f.abs_path)
        except OSError:
            return False
        if (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode) != (f.size, f.mtime_ns, f.ctime_ns, f.inode, f.mode):
            return False  # the change rule's key (database.observations.change_key), as `status` compares it
    return True


def scan_paths(settings: Settings, paths: Iterable[str]) -> list[MemoryFile] | None:
    """Of ``paths`` (workspace-relative, as a write names its file), the memory files exactly as
    :func:`scan_workspace` would list them, found without listing any folder: each folder on the
    way opened from its parent's descriptor as the walk opens it (``O_NOFOLLOW``), the file's own
    entry lstat'ed. A path that is not memory or not there now is left out. None when a path is
    one only the whole scan can place (anything but ``MEMORY.md``, ``USER.md`` and
    ``memory/**/*.md``: the dream diary has a twin to choose, an extra path a pattern and real
    paths)."""
    ws = os.fspath(settings.workspace)
    found = []
    root_entries: set[str] | None = None
    for rel in dict.fromkeys(paths):
        parts = rel.split("/")
        if rel in (CANONICAL_ROOT, USER_ROOT):
            if root_entries is None:
                root_entries = set(os.listdir(ws))  # the scan asks for exactly these names
            if rel not in root_entries:
                continue
            source = "root"
        elif len(parts) > 1 and parts[0] == MEMORY_DIR and rel.endswith(".md") and not {"", ".", ".."} & set(parts):
            if REPAIR_DIR in parts:
                continue  # a repair archive: never memory
            source = "memory"
        else:
            return None
        memory_file = _lstat_listed(ws, parts, source, rel)
        if memory_file is not None:
            found.append(memory_file)
    return found


def _lstat_listed(ws: str, parts: list[str], source: str, rel: str) -> MemoryFile | None:
    """The file ``ws/parts...`` as the walk lists it (a regular file, every folder above it a real,
    readable folder), or None where the walk would not list it."""
    fds: list[int] = []
    try:
        fds.append(os.open(ws, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))  # as the scan's listdir: links followed
        for name in parts[:-1]:
            fds.append(os.open(name, DIR_FLAGS, dir_fd=fds[-1]))
        st = os.stat(parts[-1], dir_fd=fds[-1], follow_symlinks=False)
    except OSError as exc:  # missing, a symlink or not a folder on the way, unreadable: not listed
        if is_out_of_files(exc):  # a limit, not a file gone: "not listed" would take it out of the index
            raise OutOfFiles(f"cannot open {printable(rel)}") from None
        return None
    finally:
        for fd in fds:
            os.close(fd)
    if not stat.S_ISREG(st.st_mode):
        return None
    abs_path = os.path.join(ws, *parts)
    return MemoryFile(rel, abs_path, source, "markdown", st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode)


def scan_workspace(settings: Settings, *, multimodal: bool | None = None) -> ScanResult:
    """The memory files ``settings`` names (workspace, extra paths, agent); the one entry point
    every part of the package scans through. ``multimodal`` overrides the setting (``False`` for
    parts that only handle text)."""
    return scan_memory_files(
        settings.workspace,
        extra_paths=settings.extra_paths,
        multimodal=settings.media if multimodal is None else multimodal,
        agent=settings.agent,
    )
