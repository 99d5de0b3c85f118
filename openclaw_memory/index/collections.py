"""Agent-scoped collection names, as OpenClaw spells them, kept stable in a registry.

Per agent: ``memory-root-<agent>`` (``MEMORY.md`` and the dream diary),
``memory-dir-<agent>`` (``memory/**/*.md``) and ``custom-<n>-<agent>`` for each
extra path (n = 1-based position in the de-duplicated extra list when the path is
first seen). Names live in the state database's ``collections`` table so that removing
an extra path never renames the others, and two agent ids that sanitize alike
(``A b`` and ``a-b``) get ``-2``, ``-3`` instead of sharing a collection.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..database import Database, dec, enc
from ..errors import printable
from ..files.paths import CANONICAL_ROOT, DREAMS, LEGACY_DREAMS, MEMORY_DIR, PATH_MAX, USER_ROOT
from ..fsutil.safeopen import as_scanned
from ..wire import key as wire_key

if TYPE_CHECKING:
    from ..settings import Settings

ROOT, DIR, CUSTOM = "root", "dir", "custom"
ROOT_PATTERN = f"{CANONICAL_ROOT}, {USER_ROOT}, {DREAMS} ({LEGACY_DREAMS})"
TREE_PATTERN = "**/*.md"


def sanitize(value: str) -> str:
    """Lowercase; each run of characters other than ``[a-z0-9]`` becomes ``-``; trimmed; never empty."""
    text = re.sub(r"[^a-z0-9]+", "-", value.lower()).strip("-")
    return text or "collection"


def scoped_name(base: str, agent: str) -> str:
    return f"{sanitize(base)}-{sanitize(agent)}"


@dataclass(frozen=True)
class Collection:
    """One user-facing collection: a named set of memory files of one agent."""

    name: str
    kind: str  # root | dir | custom
    agent: str
    root: str  # folder (or single file, for a file extra path) the collection covers
    pattern: str
    recursive: bool

    def owns(self, file) -> bool:
        """Whether a scanned ``MemoryFile`` belongs to this collection (the scanner already de-duplicated)."""
        if self.kind == ROOT:
            return file.source == "root"
        if self.kind == DIR:
            return file.source == "memory"
        return file.source == "extra" and (
            file.abs_path == self.root or file.abs_path.startswith(self.root.rstrip(os.sep) + os.sep)
        )


def assign_files(collections: list[Collection], files, left: list | None = None) -> dict[str, list]:
    """Group the scanner's Markdown files by collection name (first owning collection wins).

    A file whose name is not UTF-8, larger than ``MAX_INDEXED_BYTES`` or unreadable, is left out (see
    :func:`unindexable`; put in ``left`` when given); such a file is still listed, read and written by
    every other command."""
    groups: dict[str, list] = {c.name: [] for c in collections}
    for f in files:
        if f.kind != "markdown":
            continue
        if _left_out(f) is not None:
            if left is not None:
                left.append(f)
            continue
        for c in collections:
            if c.owns(f):
                groups[c.name].append(f)
                break
    return groups


# A memory file past this is not indexed (chunking and embedding hold a file whole: a 52 MB file
# took minutes without a word of progress and 3 GB of memory); split it to index it.
MAX_INDEXED_BYTES = 16 << 20


@dataclass(frozen=True)
class LeftOut:
    """A Markdown memory file the index leaves out (a name or size it cannot take, a file it may not
    read), and why (``split it``, ``rename it``...)."""

    path: str
    reason: str
    folder: bool = wire_key(omit=lambda s: not s.folder, default=False)  # a folder the scan could not read

    def __str__(self) -> str:  # as shown to a user
        return f"{printable(self.path)} ({self.reason})"


# Left-out notes a sync's or a search's notes name at most: every search carries them (a shared folder of
# 300 notes another user keeps private was 28 KB on each answer to the model); `status` lists them all.
NAMED = 5


def some_named(names: list[str]) -> str:
    shown = "; ".join(names[:NAMED])
    return shown if len(names) <= NAMED else f"{shown}; and {len(names) - NAMED} more (`openclaw-memory status` lists them)"


def unindexable(files) -> list[str]:
    """The Markdown files the index leaves out, each as shown to a user with the reason."""
    return [str(left) for left in left_out(files)]


def left_out(files) -> list[LeftOut]:
    return [LeftOut(f.path, reason) for f in files if f.kind == "markdown" and (reason := _left_out(f)) is not None]


def unreadable_folders(scan) -> list[LeftOut]:
    """The folders a scan could not read (``ScanResult.warnings``): the notes in them are missing from
    the scan, so from the index, as doctor's ``unreadable-folder`` says."""
    return [LeftOut(s.path, f"a folder this user cannot read: {s.reason.split(':', 1)[-1].strip()}; "
                            "the notes in it are not indexed", folder=True)
            for s in scan.skipped if s.reason.startswith("unreadable") and not lost_and_found(s.path)]


def lost_and_found(path: str) -> bool:
    """A file system's own folder (an extra path on a disk of its own holds one, root's): no one's
    notes, named by `files` alone, not on every search (review)."""
    return path.rstrip("/").rsplit("/", 1)[-1] == "lost+found"


def _left_out(f) -> str | None:
    if (f.size <= MAX_INDEXED_BYTES and f.mode & 0o444 == 0o444 and f.path.isascii() and "\\" not in f.path
            and len(f.abs_path) < PATH_MAX):
        return None  # most files (each is asked twice per sync, once per stale check): one test
    if not _utf8(f.path):
        return "its name is not UTF-8: rename it"  # the engine keeps paths as UTF-8 text
    if (length := len(os.fsencode(f.abs_path))) >= PATH_MAX:
        # The scan reaches it one folder at a time, but no command takes its path (the system's
        # limit): every result of it would be a citation that no read gives back.
        return f"its path is longer than the system allows ({length} bytes; at most {PATH_MAX - 1}): shorten its folders"
    if "\\" in f.path:
        # `read` and `memory_get` refuse it (OpenClaw checks one name and opens another): every
        # result of it would be a citation that no read gives back.
        return "its name has a backslash, which no memory path may hold: rename it"
    if f.size > MAX_INDEXED_BYTES:
        return f"{f.size / (1 << 20):.1f} MiB, over the {MAX_INDEXED_BYTES >> 20} MiB an indexed file may have: split it"
    if f.mode & 0o444 != 0o444 and not os.access(f.abs_path, os.R_OK, follow_symlinks=False):
        # Asked only of a file some users may not read: every search checks this for every file.
        # Not a removed file (its chunks go) nor a stale one (no index run can read it): named instead.
        return "permission denied: it is indexed again once it can be read"
    return None


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # surrogate-escaped bytes of a name that is not UTF-8
        return False
    return True


def _load_registry(data_dir: Path) -> list[dict]:
    rows = Database(data_dir).rows("SELECT name, agent, kind, key, n FROM collections ORDER BY rowid")
    return [{"name": name, "agent": dec(agent), "kind": kind, "key": dec(key), "n": n} for name, agent, kind, key, n in rows]


def _wanted(settings: Settings) -> list[tuple[str, str, str, str, bool, int]]:
    """(kind, key, root, pattern, recursive, position) for every collection the agent should have."""
    ws = str(settings.workspace)
    wanted = [
        (ROOT, ws, ws, ROOT_PATTERN, False, 0),
        (DIR, os.path.join(ws, MEMORY_DIR), os.path.join(ws, MEMORY_DIR), TREE_PATTERN, True, 0),
    ]
    # One collection per extra folder: the same folder under two patterns is one collection.
    for position, extra in enumerate(dict.fromkeys(str(e) for e in settings.extra_paths), start=1):
        root = as_scanned(extra)
        is_file = os.path.isfile(root) and not os.path.isdir(root)
        pattern = os.path.basename(root) if is_file else TREE_PATTERN
        wanted.append((CUSTOM, extra, root, pattern, not is_file, position))
    return wanted


def resolve_collections(settings: Settings, *, register: bool = False) -> list[Collection]:
    """The agent's collections in scan order; ``register=True`` records new names (the indexer does)."""
    entries = _load_registry(settings.data_dir)
    result, added = _allocate(entries, settings.agent, _wanted(settings))
    if register and added:
        with Database(settings.data_dir).transaction() as conn:
            # Read again inside the transaction: another agent may have registered names meanwhile.
            entries = _load_registry(settings.data_dir)
            result, added = _allocate(entries, settings.agent, _wanted(settings))
            conn.executemany("INSERT INTO collections VALUES (?, ?, ?, ?, ?)",
                             [(e["name"], enc(e["agent"]), e["kind"], enc(e["key"]), e["n"]) for e in added])
    return result


def registered_names(data_dir: Path) -> dict[str, dict]:
    """Every registered collection name (all agents) with its registry entry."""
    return {e["name"]: e for e in _load_registry(data_dir)}


def _allocate(entries: list[dict], agent: str, wanted) -> tuple[list[Collection], list[dict]]:
    taken = {e["name"] for e in entries}
    by_key = {(e["agent"], e["kind"], e["key"]): e for e in entries}
    used_numbers = {e.get("n") for e in entries if e["agent"] == agent and e["kind"] == CUSTOM}
    added: list[dict] = []
    result: list[Collection] = []
    for kind, key, root, pattern, recursive, position in wanted:
        entry = by_key.get((agent, kind, key))
        if entry is None:
            n = None
            if kind == CUSTOM:
                n = position
                while n in used_numbers:
                    n += 1
                used_numbers.add(n)
                base = f"custom-{n}"
            else:
                base = "memory-root" if kind == ROOT else "memory-dir"
            name = _unique(scoped_name(base, agent), taken)
            taken.add(name)
            entry = {"name": name, "agent": agent, "kind": kind, "key": key, "n": n}
            added.append(entry)
        result.append(Collection(entry["name"], kind, agent, root, pattern, recursive))
    return result, added


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    i = 2
    while f"{name}-{i}" in taken:
        i += 1
    return f"{name}-{i}"
