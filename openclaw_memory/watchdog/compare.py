"""One pass over the workspace against a baseline: the delta, and optionally a new snapshot.

The same pass serves ``verify`` (delta only, nothing hashed but suspects, nothing
written), ``snapshot`` (a new table reusing the baseline's hashes where the stat
still matches) and ``heartbeat`` (both at once, so no change can slip between the
verify and the snapshot that replaces the baseline).

An entry is trusted without reading it only when its stat tuple (mode, size,
mtime_ns, ctime_ns, inode) equals the baseline's and it was not racy when
recorded. Otherwise it is rehashed and compared by type and content hash, so a
chmod alone or a rewrite with the same bytes is not a change.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..database.observations import ChangeStat, is_racy
from ..errors import OutOfFiles, WorkspaceError, is_out_of_files, printable
from ..files.scan import HELD_FOLDERS
from ..fsutil.safeopen import DIR_FLAGS
from .ignore import IgnoreRules, compile_rules, excluded_state_dirs, is_memory_kind
from .observe import KIND_DIR, Observation, observe
from .store import HASHED, RACY, Table

if TYPE_CHECKING:
    from ..settings import Settings


@dataclass(frozen=True)
class Changed:
    """A baseline entry whose content or type differs now (hashes in hex; None: none could be taken)."""

    path: str
    old_hash: str | None
    new_hash: str | None


@dataclass
class Delta:
    changed: list[Changed] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rehashed: int = 0
    entries: int = 0


def _hex(digest: bytes | None) -> str | None:
    return digest.hex() if digest is not None else None


def rules_for(workspace: Path, state_dir: Path, patterns: list[str], nested: frozenset[str] = frozenset(),
              kept: frozenset[str] = frozenset()) -> IgnoreRules:
    """The rules of a walk of ``workspace``: ``patterns``, the state dir inside it, and ``nested``:
    workspace-relative folders left out whatever the patterns say (other agents' workspaces), but for
    the paths ``kept`` in them (this agent's memory paths)."""
    return compile_rules(patterns, excluded_state_dirs(workspace, state_dir) | nested, kept)


def rules_of(settings: Settings, patterns: list[str]) -> IgnoreRules:
    """:func:`rules_for` the settings' workspace, the workspaces of the other agents openclaw.json
    configures inside it left out (OpenClaw's ``<agents.defaults.workspace>/<agent id>``): those agents'
    memory, which OpenClaw keeps apart; walked, another agent's note was a break of this one's. This
    agent's memory paths stay watched wherever they lie (an extra path that is such a workspace)."""
    from ..settings.agents import nested_workspaces

    nested = nested_workspaces(settings)
    return rules_for(settings.workspace, settings.state_dir, patterns, nested.left_out, nested.kept)


def record_observation(table: Table, rel: str, obs: Observation, guard_ns: int, delta: Delta) -> None:
    """Add ``obs`` to ``table``; the caller has checked it is not gone."""
    st = obs.st
    if st is None:
        raise ValueError(f"{rel} vanished while observed: there is nothing to record")
    racy = is_racy(st.st_mtime_ns, st.st_ctime_ns, obs.observed_ns, guard_ns)
    table.append(rel, obs.kind, st, obs.digest, racy)
    if obs.problem:
        delta.warnings.append(f"{rel}: {obs.problem}; recorded without a hash and rechecked every time")


def compare_workspace(
    workspace: Path,
    rules: IgnoreRules,
    base: Table | None,
    record: Table | None,
    guard_ns: int,
    seen_stats: Mapping[str, ChangeStat] | None = None,
) -> Delta:
    """Walk ``workspace`` once, comparing with ``base`` and filling ``record`` when given.

    Without ``base`` every entry is new. Without ``record`` nothing is hashed
    except entries whose stat no longer vouches for them. Symlinks are entries,
    never followed; folders are walked (unless ignored) but are not entries.

    ``seen_stats`` (workspace-relative path -> stat): what another walk of the same look took
    of some entries (doctor's scan of the memory files). An entry listed there whose stat
    equals the baseline's, hashed and not racy, is unchanged without being stat'ed again:
    at 30,000 notes the second ``lstat`` of every note was most of doctor's watchdog check.
    Any other entry is stat'ed here, as without it.
    """
    delta = Delta()
    if base is None:
        base = Table.empty("", "", "", 0, 0, [])
        report_new = False
    else:
        report_new = True
    # Lists hand back stored int objects; array indexing would allocate one per lookup.
    b_paths, b_flags = base.paths, base.flags
    b_mtime, b_ctime, b_size, b_ino, b_mode = (
        base.mtime.tolist(), base.ctime.tolist(), base.size.tolist(), base.ino.tolist(), base.mode.tolist()
    )
    count = len(b_paths)
    seen = bytearray(count)
    index: dict[str, int] | None = None
    # An unchanged tree lists in the order it was recorded: follow the baseline row by
    # row and build the path index only when the order breaks.
    cursor = 0
    i: int | None  # the entry's baseline row
    changed, new, warnings = delta.changed, delta.new, delta.warnings
    ignores_file, ignores_dir = rules.ignores_file, rules.ignores_dir
    suffixes = rules.file_suffixes_only
    entries = 0
    known = seen_stats or {}
    dirs: set[str] = set()
    unreadable: list[tuple[str, str]] = []
    # Each folder is opened from its parent's descriptor (O_NOFOLLOW): a folder swapped
    # for a symlink after it was listed is refused, never followed outside the workspace.
    # A folder's flags: it is excluded (or in an excluded one) and walked only for the kept paths in it;
    # it is (or is in) a folder under memory/ only the defaults ignore, walked only for its memory files.
    try:
        root_fd = os.open(workspace, DIR_FLAGS)
    except OSError as exc:
        if is_out_of_files(exc):
            raise OutOfFiles(f"cannot list the workspace {printable(os.fspath(workspace))}") from None
        raise WorkspaceError(f"cannot list the workspace {workspace}: {exc.strerror}") from None
    folders = _Folders(_Held(root_fd, None, "", "", os.fstat(root_fd)))
    stack: list[tuple[_Held, bool, bool]] = [(folders.root, False, False)]
    kept = rules.kept
    try:
        while stack:
            held, partial, spared = stack.pop()
            rel = held.rel
            if held is not folders.root:
                parent = held.parent
                assert parent is not None
                try:
                    try:
                        fd = os.open(held.name, DIR_FLAGS, dir_fd=folders.fd_of(parent))
                    finally:
                        folders.release(parent)
                except OSError as exc:
                    _unlisted(unreadable, rel, exc)
                    continue
                folders.hold(held, fd)
            fd = held.fd
            try:
                listing = os.scandir(fd)
            except OSError as exc:
                folders.release(held)
                _unlisted(unreadable, rel, exc)
                continue
            with listing:
                try:
                    for entry in listing:
                        name = entry.name
                        path = rel + name
                        try:
                            is_dir = entry.is_dir(follow_symlinks=False)
                        except OSError:
                            is_dir = False
                        if is_dir:
                            dirs.add(path)
                            folder = path + "/"
                            if partial or (kept and ignores_dir(folder)):
                                way = _way_through(rules, folder, partial)
                            else:
                                way = None if ignores_dir(folder) else False
                            if way is not None:
                                held.waiting += 1
                                stack.append((_Held(-1, held, folder, name), way, spared))
                            elif not partial and rules.spares(folder):
                                held.waiting += 1
                                stack.append((_Held(-1, held, folder, name), False, True))
                            continue
                        if partial and path not in kept:
                            continue  # in another agent's workspace, not one of this agent's memory paths
                        if spared and not is_memory_kind(name):
                            continue  # what the defaults leave out, but for the memory files
                        if suffixes is not None:
                            if name.endswith(suffixes):
                                continue
                        elif ignores_file(path, name):
                            continue
                        entries += 1
                        if cursor < count and b_paths[cursor] == path:
                            i = cursor
                            cursor += 1
                        else:
                            if index is None:
                                index = base.index
                            i = index.get(path)
                            if i is not None:
                                cursor = i + 1
                        if (
                            i is not None
                            and (k := known.get(path)) is not None
                            and b_mtime[i] == k.mtime_ns
                            and b_ctime[i] == k.ctime_ns
                            and b_size[i] == k.size
                            and b_ino[i] == k.inode
                            and b_mode[i] == k.mode
                            and b_flags[i] & (HASHED | RACY) == HASHED
                        ):
                            seen[i] = 1
                            if record is not None:
                                record.copy_row(base, i)
                            continue
                        try:
                            st = entry.stat(follow_symlinks=False)
                        except FileNotFoundError:
                            continue  # gone since the listing: deleted if the baseline had it
                        except OSError as exc:
                            if i is not None:
                                seen[i] = 1
                                changed.append(Changed(path, _hex(base.digest(i)), None))
                            warnings.append(f"{path}: cannot stat: {exc.strerror}")
                            continue
                        if i is None:
                            if report_new:
                                new.append(path)
                            if record is not None:
                                _record_new(record, path, fd, name, st, guard_ns, delta)
                            continue
                        seen[i] = 1
                        flags = b_flags[i]
                        if (
                            b_mtime[i] == st.st_mtime_ns
                            and b_ctime[i] == st.st_ctime_ns
                            and b_size[i] == st.st_size
                            and b_ino[i] == st.st_ino
                            and b_mode[i] == st.st_mode
                            and not flags & RACY
                        ):
                            if flags & HASHED:
                                if record is not None:
                                    record.copy_row(base, i)
                            elif record is None:
                                warnings.append(
                                    f"{path}: could not be hashed at the snapshot; its stat is unchanged "
                                    "but its content is not verified"
                                )
                            else:
                                # Unchanged stat says "not modified since", but nothing vouches for
                                # the content: a new snapshot tries to hash it again.
                                if not _record_new(record, path, fd, name, st, guard_ns, delta):
                                    seen[i] = 0
                            continue
                        _compare(base, i, path, fd, name, st, record, guard_ns, delta, seen)
                except OSError as exc:  # the folder vanished or failed while being listed
                    _unlisted(unreadable, rel, exc)
                finally:
                    folders.release(held)
    finally:
        folders.close()
    delta.entries = entries
    for rel, reason in unreadable:
        warnings.append(f"{rel or '.'}: cannot list this folder ({reason}); its files were not checked")
    left_out = tuple(rules.excluded_dirs)
    i = seen.find(0)
    while i != -1:
        path = b_paths[i]
        unlisted = next((why for folder, why in unreadable if path.startswith(folder)), None)
        if left_out and rules.left_out(path):
            pass  # in a folder left out whatever the patterns say (another agent's workspace, configured since)
        elif path in dirs:  # a file (or link) of the baseline is a folder now
            changed.append(Changed(path, _hex(base.digest(i)), None))
        elif unlisted is None:
            delta.deleted.append(path)
        else:
            changed.append(Changed(path, _hex(base.digest(i)), None))
            if record is not None and b_flags[i] & HASHED:
                record.copy_row(base, i)  # not seen, not known to be gone: keep what we knew
        i = seen.find(0, i + 1)
    changed.sort(key=lambda c: c.path)
    delta.deleted.sort()
    new.sort()
    return delta


def _way_through(rules: IgnoreRules, folder: str, partial: bool) -> bool | None:
    """How the walk takes ``folder``, in a folder walked for its kept paths (``partial``) or one the
    rules ignore: None, not at all; True, for the kept paths in it; False, all of it."""
    if not partial and folder not in rules.excluded_dirs:
        return None  # ignored by the patterns
    if rules.patterns_ignore_dir(folder):
        return None
    if partial and folder in rules.kept:
        return False
    return True if rules.through(folder) else None


def _unlisted(unreadable: list[tuple[str, str]], rel: str, exc: OSError) -> None:
    """Note the folder ``rel`` as one that could not be listed; out of descriptors, raise: that is a
    limit, not a folder unreadable, and a walk that skipped it would take its files for gone (a
    snapshot recorded without them, which a rollback to it archives)."""
    if is_out_of_files(exc):
        raise OutOfFiles(f"cannot list {printable(rel)}") from None
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        unreadable.append((rel, "it was replaced by a symlink or a file while being checked"))
    else:
        unreadable.append((rel, exc.strerror or str(exc)))


class _Held:
    """A folder of the walk: its descriptor, open while its listing runs or a subfolder still waits to
    be opened from it (``waiting``); -1 before it is opened, after, and while let go (see _Folders)."""

    __slots__ = ("fd", "waiting", "parent", "rel", "name", "key")

    def __init__(self, fd: int, parent: _Held | None, rel: str, name: str, st: os.stat_result | None = None):
        self.fd = fd
        self.waiting = 1  # the listing itself
        self.parent = parent
        self.rel = rel  # workspace-relative, with its "/" ("" for the workspace)
        self.name = name
        self.key = (st.st_dev, st.st_ino) if st is not None else (0, 0)  # the folder listed: device and inode


class _Folders:
    """The descriptors of one walk's folders: its root's all along, HELD_FOLDERS others at most (the
    scan's bound, files.scan). The walk lists a folder whole and then goes into its subfolders last
    found first, so a chain whose every level has other subfolders waiting would hold one per level:
    past the bound, the one opened longest ago (furthest up) is let go, and opened again when a
    subfolder of it comes up (:meth:`fd_of`)."""

    def __init__(self, root: _Held):
        self.root = root
        self.open: dict[_Held, None] = {}  # the held ones but the root, oldest first

    def hold(self, held: _Held, fd: int) -> None:
        """Hold ``fd``, just opened, as ``held``'s descriptor (from here :meth:`close` closes it)."""
        held.fd = fd
        self.open[held] = None
        st = os.fstat(fd)
        held.key = (st.st_dev, st.st_ino)
        if len(self.open) > HELD_FOLDERS:
            self._let_go(next(iter(self.open)))

    def release(self, held: _Held) -> None:
        """One use of ``held`` done (its listing, or a subfolder opened): at the last, close it."""
        held.waiting -= 1
        if held.waiting == 0 and held is not self.root:
            self._let_go(held)

    def _let_go(self, held: _Held) -> None:
        if held.fd >= 0:
            del self.open[held]
            os.close(held.fd)
            held.fd = -1

    def fd_of(self, held: _Held) -> int:
        """``held``'s descriptor, opened again if it was let go: one name at a time from the nearest
        folder above it still held, each O_NOFOLLOW and the very folder listed (device and inode),
        the folders on the way that still have subfolders waiting held again. An OSError when one
        is not there any more, or is another folder now."""
        way: list[_Held] = []
        while held.fd < 0:
            way.append(held)
            assert held.parent is not None  # the root is held all along
            held = held.parent
        fd, passing = held.fd, False  # passing: fd is a folder done with, open only to go through
        for folder in reversed(way):
            try:
                opened = os.open(folder.name, DIR_FLAGS, dir_fd=fd)
            finally:
                if passing:
                    os.close(fd)
            st = os.fstat(opened)
            if (st.st_dev, st.st_ino) != folder.key:
                os.close(opened)
                raise FileNotFoundError(errno.ENOENT, "it was replaced by another folder while being checked")
            passing = folder.waiting == 0
            if not passing:
                self.hold(folder, opened)
            fd = opened
        return fd

    def close(self) -> None:
        for held in (*self.open, self.root):
            if held.fd >= 0:
                os.close(held.fd)
                held.fd = -1


def _observe(rel: str, dir_fd: int, name: str, st) -> Observation:
    """:func:`.observe.observe`, out of descriptors said of ``rel`` (the path the user knows)."""
    try:
        return observe(name, st, dir_fd=dir_fd)
    except OutOfFiles:
        raise OutOfFiles(f"cannot read {printable(rel)}") from None


def _record_new(record: Table, rel: str, dir_fd: int, name: str, st, guard_ns: int, delta: Delta) -> bool:
    """Hash and record an entry; False when it vanished meanwhile."""
    obs = _observe(rel, dir_fd, name, st)
    delta.rehashed += 1
    if obs.gone or obs.kind == KIND_DIR:
        return not obs.gone
    record_observation(record, rel, obs, guard_ns, delta)
    return True


def _compare(base: Table, i: int, rel: str, dir_fd: int, name: str, st, record: Table | None, guard_ns: int,
             delta: Delta, seen: bytearray) -> None:
    """Rehash a baseline entry whose stat no longer vouches for it and report a real change."""
    obs = _observe(rel, dir_fd, name, st)
    delta.rehashed += 1
    if obs.gone:
        seen[i] = 0
        return
    old = base.digest(i)
    if obs.kind != chr(base.kinds[i]) or obs.digest is None or old is None or obs.digest != old:
        delta.changed.append(Changed(rel, _hex(old), _hex(obs.digest)))
        if obs.problem:
            delta.warnings.append(f"{rel}: {obs.problem}")
    if record is not None and obs.kind != KIND_DIR:
        record_observation(record, rel, obs, guard_ns, delta)
