"""What ``watch`` watches: folders, never single files (an atomic save replaces a file's inode).

- the workspace root, not recursively: only ``MEMORY.md``, the dream diary and ``memory/`` matter there;
- ``memory/`` and every extra folder, recursively;
- a single-file extra path through its parent folder, not recursively;
- an extra path that is not there (yet, or any more) through its nearest existing folder, for the
  one name that leads to it.

Targets are recomputed after every batch: when ``memory/`` (or an extra folder) appears, is
replaced or vanishes, the watcher re-arms.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..files.paths import CANONICAL_ROOT, DREAMS, LEGACY_DREAMS, MEMORY_DIR, USER_ROOT
from ..fsutil.safeopen import as_scanned

if TYPE_CHECKING:
    from ..settings import Settings

ROOT_NAMES = frozenset({CANONICAL_ROOT, USER_ROOT, DREAMS, LEGACY_DREAMS, MEMORY_DIR})

# Names editors write around a save (vim's 4913 probe and swap files, JetBrains' safe-write
# temporaries, backups ending in ~, Emacs lock files, our own atomic-write temporaries). Their
# events are noise: the save itself also touches the real name, which is what gets synced. Not
# so a folder, or a name gone (a folder moved out is one event on its name): those are synced.
_EDITOR_NOISE = re.compile(r"^\d+$|___jb_(tmp|old|bak)___$|~$|\.sw[a-p]$|^\.#|^#.*#$|\.tmp$")


@dataclass(frozen=True)
class Target:
    path: str
    recursive: bool
    names: frozenset[str] | None  # for a flat folder: the only names that matter; None: any
    key: tuple[int, int]  # (st_dev, st_ino): a folder replaced by a new one needs a new watch


@dataclass(frozen=True)
class Targets:
    flat: tuple[Target, ...]
    recursive: tuple[Target, ...]

    @property
    def identity(self) -> tuple:
        return tuple((t.path, t.recursive, t.names, t.key) for t in self.flat + self.recursive)

    def paths(self) -> list[str]:
        return [t.path for t in self.flat + self.recursive]

    def names_a_watched_folder(self, paths) -> bool:
        """Whether ``paths`` (those added or removed) name a recursively watched folder itself: removed
        and made again, it needs a new watch even when the new folder got the old one's inode number
        (ext4 reuses it)."""
        folders = {t.path for t in self.recursive}
        return not folders.isdisjoint(paths)

    def relevant(self, path: str) -> bool:
        """Whether an event on ``path`` can change what is indexed (a hint, verified by the sync)."""
        name = os.path.basename(path)
        if _EDITOR_NOISE.search(name) and _not_a_folder(path):
            return False
        for t in self.recursive:
            if path == t.path or path.startswith(t.path + os.sep):
                return True
        parent = os.path.dirname(path)
        for t in self.flat:
            if parent == t.path and (t.names is None or name in t.names):
                return True
        return False


def _not_a_folder(path: str) -> bool:
    """Whether ``path`` is there and no folder: a folder of notes named ``2025`` or ``x.tmp`` moved in
    is no editor's temporary, and one gone may have been a folder (moved out: its only event)."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _real_dir(path: str) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _out_of_reach(path: str) -> bool:
    """Whether ``path`` cannot be looked at: not the same as missing, or as something other than a
    folder there (those are waited for from above)."""
    from ..fsutil.safeopen import out_of_reach

    return out_of_reach(path) is True


def watch_targets(settings: Settings) -> Targets:
    """The folders to watch for ``settings`` as they are now (a missing one through the nearest folder above it)."""
    ws = str(settings.workspace)
    flat: dict[str, set[str]] = {}
    keys: dict[str, tuple[int, int]] = {}
    recursive: list[str] = []
    waiting: dict[str, set[str]] = {}  # folders watched for the name of a file or a missing extra path

    ws_key = _real_dir(ws)
    if ws_key is not None:
        flat[ws] = set(ROOT_NAMES)
        keys[ws] = ws_key
    memory_dir = os.path.join(ws, MEMORY_DIR)
    key = _real_dir(memory_dir)  # a symlinked memory/ is never memory (the scanner skips it)
    if key is not None:
        recursive.append(memory_dir)
        keys[memory_dir] = key
    for extra in settings.extra_paths:
        root = as_scanned(extra)
        key = _real_dir(root)
        if key is not None:
            recursive.append(root)
            keys[root] = key
            continue
        # A file, or a path not there (yet, or any more): its nearest existing folder, for the name
        # that leads to it (that name appearing is the event that re-arms the watchers on it). Only
        # through what is missing: an extra path there but out of reach (under another user's home)
        # is not watched through a folder the user never named, nor through one it may not list.
        child, parent = root, os.path.dirname(root)
        if _out_of_reach(root):
            continue
        while (parent_key := _real_dir(parent)) is None and parent != child and not _out_of_reach(parent):
            child, parent = parent, os.path.dirname(parent)
        if parent_key is not None and os.access(parent, os.R_OK | os.X_OK):
            waiting[parent] = waiting.get(parent, set()) | {os.path.basename(child)}
            keys[parent] = parent_key
    # A folder inside another recursive one is already covered.
    recursive = sorted(set(recursive))
    kept = [p for p in recursive if not any(p != q and p.startswith(q + os.sep) for q in recursive)]
    for parent, names in waiting.items():
        if not any(parent == q or parent.startswith(q + os.sep) for q in kept):
            flat.setdefault(parent, set()).update(names)
    return Targets(
        flat=tuple(Target(p, False, frozenset(n), keys[p]) for p, n in sorted(flat.items())),
        recursive=tuple(Target(p, True, None, keys[p]) for p in kept),
    )


def unreadable_folders(targets: Targets) -> tuple[str, ...]:
    """The folders under the recursive targets that cannot be listed (each folder listed once)."""
    denied: list[str] = []

    def note(exc: OSError) -> None:
        if isinstance(exc, PermissionError) and exc.filename:
            denied.append(os.fsdecode(exc.filename))

    for t in targets.recursive:
        for _folder, _subfolders, _files in os.walk(t.path, onerror=note):
            pass
    return tuple(denied)
