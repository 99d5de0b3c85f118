"""Checks of what memory files hold: extra paths, UTF-8, and the startup-prompt caps."""

from __future__ import annotations

import errno
import os
import stat

from ..files.jstext import text_faults_of
from ..fsutil.safeopen import (
    Folder,
    FolderSwapped,
    NotRegularFile,
    open_regular_in_roots,
    open_regular_nofollow,
    parts_under,
    root_spellings,
)
from .model import CheckContext, Finding, symlink_target
from .vouched import CLEAN


def _extra_finding(ctx: CheckContext, extra: str) -> Finding | None:
    shown = ctx.rel(extra)

    def unreadable(reason: str) -> Finding:
        return Finding(
            "extra-path-unreadable", "warning",
            f"Extra memory path {extra} cannot be read ({reason}); the notes in it are missing from the scan.",
            False, (shown,),
        )

    try:
        st = os.lstat(extra)
    except (FileNotFoundError, NotADirectoryError):
        return Finding(
            "extra-path-missing", "warning",
            f"Extra memory path {extra} does not exist. Create it, or remove it from the configuration "
            "(openclaw.json memory.search.extraPaths, openclaw-memory.toml extra_paths, $OPENCLAW_MEMORY_EXTRA_PATHS or --extra).",
            False, (shown,),
        )
    except OSError as exc:
        return unreadable(exc.strerror or str(exc))
    if stat.S_ISLNK(st.st_mode):
        return Finding(
            "extra-path-symlink", "warning",
            f"Extra memory path {extra} is a symlink{symlink_target(extra)}; symlinked extra paths are ignored "
            "(a link could pull files from anywhere into memory). Give the real path instead.",
            False, (shown,),
        )
    try:
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(extra) as it:
                next(it, None)
        elif stat.S_ISREG(st.st_mode):
            fd, _ = open_regular_nofollow(extra)
            os.close(fd)
        else:
            return unreadable("not a regular file or folder: FIFOs, sockets and devices are never opened")
    except OSError as exc:
        return unreadable(exc.strerror or str(exc))
    return None


def check_extra_paths(ctx: CheckContext) -> list[Finding]:
    return [f for f in (_extra_finding(ctx, extra) for extra in ctx.settings.extra_paths) if f is not None]


def text_faults(path: str, roots: tuple[str, ...]) -> tuple[int | None, int | None]:
    """Byte offsets of the first invalid UTF-8 sequence and of the first NUL byte (None: none);
    streamed, never the whole file at once.

    The file is opened from the descriptor of its allowed root (``roots``), never through a swapped folder.
    """
    fd, _ = open_regular_in_roots(roots, path)
    return _faults(fd)


def _faults(fd: int) -> tuple[int | None, int | None]:
    """``text_faults`` of an open file, closed after."""
    try:
        return text_faults_of(fd)
    finally:
        os.close(fd)


class _FolderWalk:
    """Files opened one folder at a time: each folder once, from its root's descriptor (one
    component at a time, never through a swapped folder), each file by name from it. The scan
    lists a folder's files together, so a workspace's notes cost one open each, not a
    resolution of their whole path each (47% of doctor at 30,000 notes, bench/scale.py)."""

    def __init__(self, roots: tuple[str, ...]):
        self._roots = root_spellings(roots)
        self._folder: tuple[str, Folder | OSError] | None = None

    def open(self, abs_path: str) -> int:
        parent, name = os.path.split(abs_path)
        if self._folder is None or self._folder[0] != parent:
            self.close()
            self._folder = (parent, self._open_folder(parent, abs_path))
        folder = self._folder[1]
        if isinstance(folder, OSError):
            raise folder
        fd, _ = folder.open_regular(name)
        return fd

    def _open_folder(self, parent: str, abs_path: str) -> Folder | OSError:
        for root in self._roots:
            if abs_path == root:
                base = os.path.dirname(root)
                return self._under(base, parts_under(base, parent))
            if abs_path.startswith(root.rstrip(os.sep) + os.sep):
                return self._under(root, parts_under(root, parent))
        return NotRegularFile(0, "not inside the workspace or an extra path", abs_path)

    @staticmethod
    def _under(root: str, parts: tuple[str, ...]) -> Folder | OSError:
        try:
            return Folder.under(root, parts)
        except OSError as exc:
            return exc  # every file of the folder meets the same answer

    def close(self) -> None:
        if self._folder is not None and isinstance(self._folder[1], Folder):
            self._folder[1].close()
        self._folder = None


def check_utf8(ctx: CheckContext) -> list[Finding]:
    """Each Markdown memory file's bytes as text. A file whose stat is that of a sighting (the one
    change rule) whose bytes a reader checked (the index records it as it reads) is not opened:
    what was found of them holds (``CheckContext.vouched``). Any other is read, streamed."""
    findings: list[Finding] = []
    vouched = ctx.vouched
    attention = vouched.text if vouched is not None else None  # None: nothing vouched for, every file read
    walk = _FolderWalk((str(ctx.settings.workspace), *ctx.settings.extra_paths))
    try:
        for f in ctx.scan.files:
            if f.kind != "markdown":
                continue
            found = attention.get(f.abs_path, CLEAN) if attention is not None else None
            if found != CLEAN:  # what the reader found: nothing, for nearly every file
                findings += _utf8_findings(f, walk, found)
    finally:
        walk.close()
    return findings


def _utf8_findings(f, walk: _FolderWalk, vouched: tuple[int | None, int | None] | None = None) -> list[Finding]:
    """``f``'s findings: from what a reader found of its bytes (``vouched``: the offsets of the
    first invalid byte and NUL), else from reading it."""
    try:
        bad, nul = vouched if vouched is not None else _faults(walk.open(f.abs_path))
    except (FileNotFoundError, NotADirectoryError, NotRegularFile, FolderSwapped):
        return []  # vanished or replaced since the scan: not a memory file any more
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EPERM, errno.EIO):
            raise
        return [Finding(
            "memory-file-unreadable", "warning",
            f"Cannot read {f.path} ({exc.strerror}); it is missing from the prompt and the index.",
            False, (f.path,),
        )]
    findings: list[Finding] = []
    if bad is not None:
        findings.append(Finding(
            "not-utf8", "warning",
            f"{f.path} is not valid UTF-8 (first invalid byte at offset {bad}); readers show U+FFFD in place "
            "of the invalid bytes. Re-save it as UTF-8.",
            False, (f.path,),
        ))
    if nul is not None:
        findings.append(Finding(
            "memory-file-not-text", "warning",
            f"{f.path} holds a NUL byte (first at offset {nul}): the search index leaves it out as binary, "
            "so nothing in it is found. If it is a note, remove the NUL bytes (`openclaw-memory history` "
            "keeps every earlier version).",
            False, (f.path,),
        ))
    return findings


def check_prompt_caps(ctx: CheckContext) -> list[Finding]:
    """What the startup prompt cuts today of USER.md and MEMORY.md (after OpenClaw's other startup
    files, AGENTS.md, SOUL.md, IDENTITY.md, BOOTSTRAP.md, took their share of the total), and OpenClaw's
    bootstrap budget report over all of them (raw vs injected characters per file, the totals, its
    tips); the daily notes' own cuts are no finding."""
    limits = ctx.settings.prompt
    section = ctx.prompt
    findings: list[Finding] = []
    for cut in section.truncated:
        if cut.reason == "file-cap":
            findings.append(Finding(
                "prompt-file-cap", "warning",
                f"{cut.path} is {cut.original_chars:,} characters, over its startup cap "
                f"(bootstrapMaxChars {limits.file_chars:,}; USER.md at most 4,000): at the start of a session only "
                "its head (75%) and tail (25%) are loaded and the middle is cut. Move older details into memory/ "
                "notes (they stay searchable) or raise the cap.",
                False, (cut.path,),
            ))
        elif cut.reason == "total-cap":
            others = [f for f in section.other_files if f["injectedChars"]]
            took = (f" ({', '.join(f['path'] for f in others)} took {section.other_startup_chars:,} of them first)"
                    if others else "")
            fate = (f"{cut.path} is left out at the start of a session" if not cut.kept_chars
                    else f"{cut.path} is cut to {cut.kept_chars:,} of {cut.original_chars:,} characters at the start of a session")
            findings.append(Finding(
                "prompt-total-cap", "warning",
                f"The startup files reach the total cap of {limits.total_chars:,} characters (bootstrapTotalMaxChars)"
                f"{took}: {fate}.",
                False, (cut.path,),
            ))
    if section.budget:
        findings.append(Finding("bootstrap-budget", "info", "\n".join(section.budget), False, section.budget_files))
    return findings


CHECKS = [check_extra_paths, check_utf8, check_prompt_caps]
