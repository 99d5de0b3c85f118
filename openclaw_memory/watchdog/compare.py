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
from ..errors import WorkspaceError
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
    stack: list[tuple[str, _Held | None, str, bool, bool]] = [("", None, os.fspath(workspace), False, False)]
    kept = rules.kept
    while stack:
        rel, parent, name, partial, spared = stack.pop()
        try:
            if parent is None:
                fd = os.open(name, DIR_FLAGS)
            else:
                try:
                    fd = os.open(name, DIR_FLAGS, dir_fd=parent.fd)
                finally:
                    parent.release()
        except OSError as exc:
            if not rel:
                raise WorkspaceError(f"cannot list the workspace {name}: {exc.strerror}") from None
            reason = "it was replaced by a symlink or a file while being checked" if exc.errno in (errno.ELOOP, errno.ENOTDIR) else (exc.strerror or str(exc))
            unreadable.append((rel, reason))
            continue
        held = _Held(fd)
        try:
            listing = os.scandir(fd)
        except OSError as exc:
            held.release()
            unreadable.append((rel, exc.strerror or str(exc)))
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
                            stack.append((folder, held, name, way, spared))
                        elif not partial and rules.spares(folder):
                            held.waiting += 1
                            stack.append((folder, held, name, False, True))
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
                unreadable.append((rel, exc.strerror or str(exc)))
            finally:
                held.release()
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


class _Held:
    """A folder's descriptor, open while its listing runs or a subfolder still waits to be opened from it."""

    __slots__ = ("fd", "waiting")

    def __init__(self, fd: int):
        self.fd = fd
        self.waiting = 1  # the listing itself

    def release(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            os.close(self.fd)


def _record_new(record: Table, rel: str, dir_fd: int, name: str, st, guard_ns: int, delta: Delta) -> bool:
    """Hash and record an entry; False when it vanished meanwhile."""
    obs = observe(name, st, dir_fd=dir_fd)
    delta.rehashed += 1
    if obs.gone or obs.kind == KIND_DIR:
        return not obs.gone
    record_observation(record, rel, obs, guard_ns, delta)
    return True


def _compare(base: Table, i: int, rel: str, dir_fd: int, name: str, st, record: Table | None, guard_ns: int,
             delta: Delta, seen: bytearray) -> None:
    """Rehash a baseline entry whose stat no longer vouches for it and report a real change."""
    obs = observe(name, st, dir_fd=dir_fd)
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
