"""The root memory file, found by exact directory entry (never by ``stat``).

On a case-insensitive file system ``stat("MEMORY.md")`` also finds ``memory.md``;
listing the folder and matching names exactly is the only way to tell them apart.
"""

from __future__ import annotations

import os
import shlex
import stat
from dataclasses import dataclass

from .paths import CANONICAL_ROOT, DREAMS, LEGACY_DREAMS, LEGACY_ROOT, MEMORY_DIR, USER_ROOT


@dataclass(frozen=True)
class RootEntry:
    """One exact directory entry at the workspace root."""

    name: str
    path: str
    exists: bool
    is_symlink: bool = False
    is_file: bool = False
    size: int | None = None
    # What ``stat`` (following a symlink) finds: OpenClaw's doctor counts a symlinked root
    # file that points at a file as present, with its target's size.
    target_is_file: bool = False
    target_size: int | None = None


@dataclass(frozen=True)
class RootMemoryFiles:
    """What sits at the root: the canonical and legacy memory files, as directory entries."""

    canonical: RootEntry
    legacy: RootEntry

    @property
    def split(self) -> bool:
        """OpenClaw's split root: both names are files (through a symlink too); a folder named
        ``memory.md`` is not a legacy file."""
        return self.canonical.target_is_file and self.legacy.target_is_file

    @property
    def legacy_only(self) -> bool:
        return self.legacy.target_is_file and not self.canonical.exists


def workspace_entries(workspace: str | os.PathLike[str]) -> set[str]:
    return set(os.listdir(workspace))


def _entry(workspace: str, name: str, entries: set[str]) -> RootEntry:
    path = os.path.join(workspace, name)
    if name not in entries:
        return RootEntry(name, path, exists=False)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return RootEntry(name, path, exists=False)
    target: os.stat_result | None = st
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.stat(path)
        except OSError:
            target = None
    target_is_file = target is not None and stat.S_ISREG(target.st_mode)
    return RootEntry(
        name,
        path,
        exists=True,
        is_symlink=stat.S_ISLNK(st.st_mode),
        is_file=stat.S_ISREG(st.st_mode),
        size=st.st_size,
        target_is_file=target_is_file,
        target_size=target.st_size if target is not None and target_is_file else None,
    )


def detect_root_memory_files(workspace: str | os.PathLike[str]) -> RootMemoryFiles:
    ws = os.fspath(workspace)
    entries = workspace_entries(ws)
    return RootMemoryFiles(_entry(ws, CANONICAL_ROOT, entries), _entry(ws, LEGACY_ROOT, entries))


def resolve_dream_diary(workspace: str, entries: set[str]) -> tuple[RootEntry | None, list[RootEntry]]:
    """The dream diary (``DREAMS.md``, else legacy ``dreams.md``, each a regular file) and the entries
    passed over: the other of the two, and the name in any other letter case (``Dreams.md``, which
    OpenClaw reads as the diary; the scan skips it and a write there is refused)."""
    candidates = [_entry(workspace, name, entries) for name in (DREAMS, LEGACY_DREAMS)]
    chosen = next((e for e in candidates if e.exists and e.is_file), None)
    passed_over = [e for e in candidates if e.exists and e is not chosen]
    passed_over += [_entry(workspace, name, entries) for name in sorted(entries)
                    if name.lower() == LEGACY_DREAMS and name not in (DREAMS, LEGACY_DREAMS)]
    return chosen, passed_over


# A workspace given as its own notes folder (``-w ws/memory``): every command then found no memory
# (doctor: "Memory system not found ... Install the memory system", files: "No memory files"), and
# nothing said the workspace was one folder up.
# OpenClaw's other workspace files (docs/concepts/agent-workspace.md; TOOLS.md and HEARTBEAT.md of
# earlier releases): a folder holding one is an agent's workspace, whatever its name.
WORKSPACE_FILES = ("AGENTS.md", "SOUL.md", "IDENTITY.md", "BOOT.md", "BOOTSTRAP.md", "TOOLS.md", "HEARTBEAT.md")


def notes_folder_hint(workspace: str) -> str | None:
    """The warning for a workspace named ``memory`` that holds no memory system of its own (no
    MEMORY.md, USER.md or memory/ folder) while its parent holds MEMORY.md or USER.md, or it holds
    notes itself (.md files): it is the parent's memory/ folder. None otherwise."""
    workspace = os.path.normpath(workspace)
    if os.path.basename(workspace) != MEMORY_DIR:
        return None
    if any(os.path.lexists(os.path.join(workspace, name)) for name in (CANONICAL_ROOT, USER_ROOT, MEMORY_DIR, *WORKSPACE_FILES)):
        return None  # a workspace of its own (one named memory), not a notes folder
    parent = os.path.dirname(workspace)
    root = next((name for name in (CANONICAL_ROOT, USER_ROOT) if os.path.isfile(os.path.join(parent, name))), None)
    if root is not None:
        return (f"{workspace} is the {MEMORY_DIR}/ folder of the workspace {parent}, which holds {root}: "
                f"give -w {shlex.quote(parent)} (the folder that holds {MEMORY_DIR}/)")
    try:
        notes = any(e.name.endswith(".md") and e.is_file() for e in os.scandir(workspace))
    except OSError:
        return None
    if not notes:
        return None
    return (f"{workspace} holds notes but no {CANONICAL_ROOT}: it looks like the {MEMORY_DIR}/ folder of the "
            f"workspace {parent}; give -w {shlex.quote(parent)} (the folder that holds {MEMORY_DIR}/)")
