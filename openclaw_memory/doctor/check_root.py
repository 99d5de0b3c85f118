"""Checks of the root memory file and the ``memory/`` folder (what the scanner ignores, and why)."""

from __future__ import annotations

import os
import stat

from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT, MEMORY_DIR, shorten_home
from ..files.root import RootEntry
from ..files.scan import FOLDER_NOT_FILE
from ..fsutil.safeopen import Folder
from ..history.placing import ReadOnlyNote, read_only_details, read_only_note
from ..history.versions import FileMode
from ..prompt.loader import MAX_BOOTSTRAP_BYTES
from .merge import MAX_ROOT_BYTES
from .model import CheckContext, Finding, symlink_target
from .place import identical_twins

FIX_LINE = 'Run "openclaw-memory doctor --fix" to merge the legacy file into MEMORY.md with a backup.'


def split_root_message(canonical: RootEntry, legacy: RootEntry) -> list[str]:
    """OpenClaw's split-root warning, line by line."""
    def size(entry: RootEntry) -> str:
        return f"{entry.target_size} bytes" if entry.target_size is not None else "size unknown"

    return [
        "Split root durable memory files detected:",
        f"- canonical: {shorten_home(canonical.path)} ({size(canonical)})",
        f"- legacy: {shorten_home(legacy.path)} ({size(legacy)})",
        "OpenClaw uses MEMORY.md as the canonical durable memory file.",
        "Dreaming writes durable promotions to MEMORY.md, so older facts in memory.md can be shadowed.",
    ]


def _regular(entry: RootEntry) -> bool:
    return entry.exists and entry.is_file and not entry.is_symlink


def _read_only_canonical(workspace: str, legacy: RootEntry) -> ReadOnlyNote | None:
    """MEMORY.md, when this user may not write it and the merge would (memory.md neither empty nor
    its twin, which are archived alone: a move)."""
    if legacy.target_size == 0 or identical_twins(workspace):
        return None
    try:
        with Folder.under(workspace) as root:
            return read_only_note(CANONICAL_ROOT, FileMode.of(root.lstat(CANONICAL_ROOT)), root)
    except OSError:
        return None


def _kind(entry: RootEntry) -> str:
    return "a symlink" if entry.is_symlink else "not a regular file"


def check_root_files(ctx: CheckContext) -> list[Finding]:
    roots = ctx.roots
    canonical, legacy = roots.canonical, roots.legacy
    findings: list[Finding] = []
    if canonical.exists and canonical.is_symlink:
        findings.append(Finding(
            "memory-md-symlink", "warning",
            f"{canonical.path} is a symlink{symlink_target(canonical.path)}. OpenClaw and openclaw-memory ignore a "
            "symlinked MEMORY.md: its text is never loaded at startup, indexed or searched.\n"
            "Replace the link with a regular file holding the text.",
            False, (CANONICAL_ROOT,),
        ))
    elif canonical.exists and not canonical.is_file:
        findings.append(Finding(
            "memory-md-not-file", "warning",
            f"{canonical.path} is not a regular file (a folder, FIFO or device), so it is ignored. Replace it with a regular file.",
            False, (CANONICAL_ROOT,),
        ))
    if findings and legacy.exists and not (roots.split or roots.legacy_only):
        # MEMORY.md is there but unusable, which hides memory.md from the other checks.
        first = findings[0]
        findings[0] = Finding(
            first.id, first.severity,
            f"{first.message}\n{shorten_home(legacy.path)} (the legacy root file) is never loaded either; once MEMORY.md "
            "is a regular file (or moved away), `openclaw-memory doctor --fix` merges memory.md into it (or renames it).",
            first.fixable, (CANONICAL_ROOT, LEGACY_ROOT),
        )
    if roots.split:
        lines = split_root_message(canonical, legacy)
        fixable = _regular(canonical) and _regular(legacy)
        too_large = [e for e in (canonical, legacy) if (e.target_size or 0) > MAX_ROOT_BYTES]
        hint = ""
        if fixable and too_large and identical_twins(ctx.workspace):
            hint = 'Run "openclaw-memory doctor --fix" to archive memory.md (identical to MEMORY.md) with a backup.'
            lines.append(hint)
        elif fixable and too_large:
            fixable = False
            names = " and ".join(f"{e.name} ({e.target_size:,} bytes)" for e in too_large)
            lines += [
                f"{names} {'is' if len(too_large) == 1 else 'are'} over the {MAX_ROOT_BYTES >> 20} MiB OpenClaw reads safely, "
                "so doctor --fix will not merge the two (OpenClaw's doctor refuses too). Merge by hand: copy what memory.md "
                "still holds that MEMORY.md lacks into MEMORY.md (or into notes under memory/), then move memory.md out "
                f"of the workspace, e.g. `mv {shorten_home(legacy.path)} ~/memory.md.bak`: the file keeps every byte.",
            ]
        elif fixable and (read_only := _read_only_canonical(ctx.workspace, legacy)) is not None:
            fixable = False  # --fix would refuse, as a write of it is refused
            lines.append(f"{CANONICAL_ROOT} is read-only {read_only_details(read_only)}, so doctor --fix will not merge "
                         f"memory.md into it: let writes through first (`chmod u+w {CANONICAL_ROOT}`, by its owner), then "
                         'run "openclaw-memory doctor --fix".')
        elif fixable:
            hint = FIX_LINE
            lines.append(hint)  # (the line OpenClaw's warning has there: tests/conformance/test_doctor.py)
            merged = (canonical.target_size or 0) + (legacy.target_size or 0)
            if merged > MAX_BOOTSTRAP_BYTES and not identical_twins(ctx.workspace):
                # OpenClaw's merge too; the fix then left a MEMORY.md the next session reads as unreadable.
                lines.append(f"Merged, MEMORY.md would be about {merged:,} bytes, over the {MAX_BOOTSTRAP_BYTES:,} OpenClaw loads "
                             "at startup: the next session would see [UNREADABLE: File exceeds 2097152 bytes] in its place. "
                             "Move older facts of either file into notes under memory/ first, or merge by hand.")
        else:
            bad = canonical if not _regular(canonical) else legacy
            lines.append(f"{bad.name} is {_kind(bad)}, so doctor --fix will not merge automatically: merge the text by hand.")
        findings.append(Finding("split-root", "warning", "\n".join(lines), fixable, (CANONICAL_ROOT, LEGACY_ROOT), hint))
    elif roots.legacy_only:
        fixable = _regular(legacy)
        message = (
            f"Legacy root memory file detected: {shorten_home(legacy.path)} ({legacy.target_size} bytes).\n"
            "OpenClaw uses MEMORY.md as the canonical durable memory file; memory.md at the root is never loaded at "
            "startup or indexed.\n"
        )
        hint = 'Run "openclaw-memory doctor --fix" to rename it to MEMORY.md.' if fixable else ""
        message += hint or (
            f"memory.md is {_kind(legacy)}, so doctor --fix will not rename it: replace it with a regular MEMORY.md by hand."
        )
        findings.append(Finding("legacy-root", "warning", message, fixable, (LEGACY_ROOT,), hint))
    elif legacy.exists and not legacy.target_is_file and not findings:
        what, todo = (("a symlink that leads to no file", "Remove the link.") if legacy.is_symlink else
                      ("a folder, FIFO or device, not a file", "Move what it holds under memory/ (or into MEMORY.md), then remove it."))
        findings.append(Finding(
            "legacy-root-not-file", "warning",
            f"{shorten_home(legacy.path)} is {what}: OpenClaw reads memory.md only as a file, so nothing in it is ever "
            f"loaded at startup, indexed or searched.\n{todo}", False, (LEGACY_ROOT,),
        ))
    return findings


def check_memory_dir(ctx: CheckContext) -> list[Finding]:
    path = os.path.join(ctx.workspace, MEMORY_DIR)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(st.st_mode):
        return [Finding(
            "memory-dir-symlink", "warning",
            f"{path} is a symlink{symlink_target(path)}. OpenClaw and openclaw-memory ignore a symlinked memory/ folder: "
            "none of the notes in it are loaded, indexed or searched.\n"
            "Replace the link with a real folder (move the notes into the workspace), or list the target as an extra path.",
            False, (MEMORY_DIR,),
        )]
    if not stat.S_ISDIR(st.st_mode):
        return [Finding(
            "memory-dir-not-folder", "warning",
            f"{path} is not a folder, so there are no memory notes. Rename it and create a memory/ folder.",
            False, (MEMORY_DIR,),
        )]
    return []


def check_skipped_entries(ctx: CheckContext) -> list[Finding]:
    """Symlinked notes, notes that are no regular file and unreadable folders the scanner passed
    over (extra roots are checked elsewhere)."""
    extras = {ctx.rel(p) for p in ctx.settings.extra_paths}
    links = [s.path for s in ctx.scan.skipped if s.reason.startswith("symlink") and s.path not in extras and s.path not in (CANONICAL_ROOT, MEMORY_DIR)]
    unreadable = [s for s in ctx.scan.skipped if s.reason.startswith("unreadable") and s.path not in extras]
    # (MEMORY.md has findings of its own: check_root_files; a folder under memory/ is walked)
    special = [s.path for s in ctx.scan.skipped if (s.reason.startswith("not a regular file") or s.reason == FOLDER_NOT_FILE)
               and s.path not in extras and s.path != CANONICAL_ROOT]
    findings: list[Finding] = []
    if special:  # (a FIFO named like a note, a folder named USER.md: `files` listed it as skipped, doctor said nothing)
        findings.append(Finding(
            "memory-file-not-regular", "warning",
            "These memory entries are not regular files (a folder named like a file, a FIFO, a socket or a device): "
            "never opened, so never "
            "loaded, indexed or searched:\n" + "\n".join(f"- {p}" for p in special)
            + "\nRemove each, or replace it with a note.",
            False, tuple(special),
        ))
    if links:
        findings.append(Finding(
            "memory-file-symlink", "warning",
            "These memory entries are symlinks; OpenClaw and openclaw-memory ignore them (their text is never loaded, "
            "indexed or searched):\n" + "\n".join(f"- {p}" for p in links) + "\nReplace each link with a regular file or folder.",
            False, tuple(links),
        ))
    # A dreams.md beside DREAMS.md, or a diary in another letter case: `files` named it, doctor said
    # "No problems found." while its text was never listed, loaded or searched.
    twins = [s.path for s in ctx.scan.skipped if s.reason.startswith(("legacy dream diary twin", "a dream diary in another"))]
    if twins:
        findings.append(Finding(
            "dream-diary-twin", "warning",
            "These dream diaries are passed over: the workspace's DREAMS.md (or dreams.md) is its diary, and their text "
            "is never listed, loaded or searched:\n" + "\n".join(f"- {p}" for p in twins)
            + "\nMove what they hold into the diary by hand (`openclaw-memory read` shows each), then remove them.",
            False, tuple(twins),
        ))
    for s in unreadable:
        findings.append(Finding(
            "unreadable-folder", "warning",
            f"Cannot read {s.path} ({s.reason.split(':', 1)[-1].strip()}); the memory notes inside are missing from the scan.",
            False, (s.path,),
        ))
    return findings


CHECKS = [check_root_files, check_memory_dir, check_skipped_entries]
