"""Paged reads of one memory file: OpenClaw's ``memory_get``, to the letter.

A window of ``lines`` lines from ``from`` (1-based), fitted to ``max_chars`` UTF-16
code units (JavaScript's ``length``, as OpenClaw counts): the first line always, then
whole lines while they fit; a first line still too long is cut ("hard cut"), never
inside a surrogate pair (:mod:`.window`). The file streams past once, through one
descriptor: each block is hashed and given to the window, which keeps only its lines.

The result also carries the whole file's version (xxh3_128 of its bytes): the hash of the
very bytes the window was cut from, taken only when ``fstat`` shows the file the same before
and after, so the version recorded for a read is the version the window came from.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import xxhash

from .. import faults
from ..errors import BadValue, PathChanged, PathRefused, ThroughALink, cut, printable, shown, workspace_gone
from ..fsutil.hashing import BLOCK
from ..fsutil.safeopen import Folder, NotRegularFile, as_scanned, open_folder
from ..fsutil.safeopen import FolderSwapped as _Swapped
from ..wire import key
from .jstext import js_trim, not_utf8
from .paths import LEGACY_ROOT, PATH_MAX, REPAIR_DIR, ExtraPath, absolute_path, display_path, file_kind, is_memory_path
from .window import NOTICE_CUT, NOTICE_CUT_EXTRA, NOTICE_NEXT, WindowScan


@dataclass(frozen=True)
class ReadResult:
    """OpenClaw's ``memory_get`` keys (``truncated``/``nextFrom`` only when they apply), plus the
    version the window came from and any warnings."""

    text: str
    path: str
    from_line: int | None = key("from", omit=lambda r: r.missing, default=None)
    lines: int | None = key(omit=lambda r: r.missing, default=None)
    truncated: bool = key(omit=lambda r: not r.truncated, default=False)
    next_from: int | None = key(omit=lambda r: r.next_from is None, default=None)
    # A hard cut (the first line alone past ``max_chars``: truncated, no ``nextFrom``): that line's
    # length in UTF-16 code units, the ``max_chars`` that shows it whole. Not OpenClaw's: there the
    # line can only be read whole with another tool.
    line_chars: int | None = key(omit=lambda r: r.line_chars is None, default=None)
    status: Literal["ok", "not_found"] = "ok"
    abs_path: str = key(hidden=True, default="")
    warnings: tuple[str, ...] = key(omit=lambda r: not r.warnings, default=())
    # The whole file's content hash when the window was read; None when the file is missing or
    # kept changing during the read.
    version: str | None = key(omit=lambda r: r.version is None, default=None)
    size: int | None = key(hidden=True, default=None)  # for the read record, in this process

    @property
    def missing(self) -> bool:
        return self.status == "not_found"


@dataclass(frozen=True)
class ResolvedPath:
    abs_path: str
    display: str
    root: str  # the allowed root (workspace or extra path) every open starts from
    parts: tuple[str, ...] = ()  # the components below ``root``, the file's name last
    # Under the workspace's memory paths (not an extra path): only then does a hard cut
    # suggest reading the raw file (OpenClaw's ``suggestReadFallback``).
    in_workspace: bool = True

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else os.path.basename(self.abs_path)

    def folder(self, *, create: bool = False, mode: int = 0o755) -> Folder:
        """The file's folder, opened one component at a time from the root's descriptor.

        Raises PathChanged when a folder on the way is a symlink or not a folder
        (swapped since :func:`resolve_memory_path` checked it), FileNotFoundError
        when one is missing (without ``create``). With ``create``, each folder made is
        made with ``mode`` (less the umask) at its ``mkdir``.
        """
        try:
            if create and self.in_workspace:
                return self._made_in_workspace(mode)
            return Folder.under(self.root, self.parts[:-1], create=create, mode=mode)
        except _Swapped as exc:
            raise path_changed(self, exc) from None

    def _made_in_workspace(self, mode: int) -> Folder:
        """The file's folder made below the workspace, never the workspace itself: a session or a
        service outlives the folder it was started for (moved away, removed), and the first write
        made a new, empty workspace at its old path, where the agent's memory is not."""
        try:
            return Folder.under(self.root, self.parts[:-1], create=True, create_root=False, mode=mode)
        except FileNotFoundError as exc:
            if exc.filename != self.root:
                raise  # a folder below it removed while it was made
            raise workspace_gone(self.root, "; nothing was written") from None


def path_changed(resolved: ResolvedPath, exc: OSError, outcome: str = "nothing was read or written") -> PathChanged:
    where = display_path(exc.filename, resolved.root) if exc.filename else resolved.display
    return PathChanged(
        f"refused: {resolved.display}: the path changed while in use ({where} is now a symlink or not a folder); "
        f"{outcome}. Memory never follows symlinks; check the folder and try again."
    )


def open_resolved(resolved: ResolvedPath, through_a_file: Literal["missing", "refused"] = "missing",
                  ) -> tuple[int, os.stat_result] | None:
    """``(fd, fstat)`` of the memory file through its folder's descriptor; None when it does not exist.

    Refusals (a symlink, FIFO, socket, a swapped folder, no permission) are PathRefused; so is a path
    through a file or a FIFO (``notes/n.md/x.md``) with ``through_a_file="refused"``, as OpenClaw's
    memory_get refuses it (the walk names the part in the way; a missing folder is only missing).
    """
    try:
        with resolved.folder() as folder:
            return folder.open_regular(resolved.name)
    except NotADirectoryError as exc:
        if through_a_file == "refused":
            part = os.path.basename(exc.filename or "") or "a part of it"
            raise PathRefused(f"refused: {resolved.display} goes through {part}, which is not a folder") from None
        return None
    except FileNotFoundError:
        return None
    except NotRegularFile as exc:
        raise PathRefused(f"refused: {resolved.display}: {exc.strerror}") from None
    except PermissionError:
        raise PathRefused(f"cannot read {resolved.display}: permission denied") from None
    except OSError as exc:
        raise PathRefused(f"cannot open {resolved.display}: {exc.strerror or exc}") from None


def refuse_unnamable(path: str) -> None:
    """PathRefused for a path no file name can hold: a NUL, or a lone UTF-16 surrogate other than
    the ``\\udc80``-``\\udcff`` that stand for the bytes of a name that is not UTF-8 (an MCP
    client or a socket request can send ``"\\ud800.md"``; a command line cannot)."""
    if "\x00" in path:
        raise PathRefused(f"refused: {shown(path)} contains a NUL character, which no file name can hold")
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        char = f"U+{ord(path[exc.start]):04X}"
        raise PathRefused(f"refused: {shown(path)} contains {char}, a lone surrogate, which no file name can hold") from None


def refuse_new_not_utf8(resolved: ResolvedPath, outcome: str) -> None:
    """PathRefused for a new file (a write creating it, a move's destination) whose name is not UTF-8
    (its bytes come as surrogate escapes): the index keeps paths as UTF-8 text and never takes it,
    and doctor says to rename it. A file already so named stays addressable by the same escapes."""
    try:
        resolved.display.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = resolved.display.encode("utf-8", "surrogateescape")[len(resolved.display[: exc.start].encode("utf-8"))]
        raise PathRefused(
            f"refused: {printable(resolved.display)}: its name is not UTF-8 (the byte 0x{byte:02X}), and the index never "
            f"takes a file so named (it keeps paths as UTF-8 text): {outcome}. Give the name in UTF-8"
        ) from None


def resolve_memory_path(path: str, workspace: str, extra_paths=(), *, aliased: bool = False,
                        known: Callable[[str], bool] | None = None) -> ResolvedPath:
    """Map a user-given path to a memory file, refusing anything that is not one (OpenClaw's rules).

    White space around the path is trimmed unless the path as given names a memory file
    (:func:`_as_named`; ``known``: also one the history has logged); relative paths are taken from the workspace
    (not the current folder), ``..`` included, so ``../notes/a.md`` names a file of an
    extra folder beside the workspace; ``~`` is not expanded (a name, as OpenClaw reads it). Inside an extra folder the
    folder must exist and its ``pattern`` (when it has one) must match.
    """
    raw = _as_named(path or "", workspace, extra_paths, known)
    if not raw:
        raise PathRefused("no path given")
    refuse_unnamable(raw)
    if "\\" in raw:
        # A name as `files` lists it, a byte that is not UTF-8 shown as \xNN: say how to type the byte.
        # (not with a \uXXXX too: bash would type that character in the locale's bytes, another name)
        byte = re.search(r"\\x[0-9a-fA-F]{2}", raw) if not re.search(r"\\[uU][0-9a-fA-F]{4}", raw) else None
        quoted = raw.replace("'", "\\'")  # (in bash's $'...', a quote is \')
        typed = f" ({byte[0]} in a listing is a byte of the name: in bash, $'{quoted}')" if byte else ""
        raise PathRefused(f"refused: {raw} contains a backslash; memory paths use '/'{typed}")
    absolute = absolute_path(raw, workspace)
    if len(os.fsencode(absolute)) >= PATH_MAX:
        raise PathRefused(f"refused: the path is longer than the system allows ({len(os.fsencode(absolute))} bytes; at most {PATH_MAX - 1})")
    shown = display_path(absolute, workspace)
    rel = os.path.relpath(absolute, workspace)
    if absolute == os.path.join(workspace, LEGACY_ROOT):  # also when an extra path holds the workspace
        raise PathRefused(
            "refused: memory.md is the legacy root file, not memory; "
            "MEMORY.md is canonical (run `openclaw-memory doctor --fix` to merge it)"
        )
    in_workspace = rel != os.curdir and not rel.startswith(os.pardir) and is_memory_path(rel)
    root, scanned = (workspace, workspace) if in_workspace else _allowed_extra(absolute, extra_paths)
    if root is None and not aliased and (alias := _through_alias(absolute, workspace, extra_paths)) is not None:
        return resolve_memory_path(alias, workspace, extra_paths, aliased=True)
    if root is None or scanned is None:
        if (kind := _media(absolute, extra_paths)) is not None:
            raise PathRefused(f"refused: {raw if os.path.isabs(raw) or not shown else shown} is {kind}, which read does not "
                              "show: it reads Markdown (.md) memory files only (as OpenClaw's memory_get: 'path is not an "
                              "allowed Markdown memory file'); with --multimodal, files lists it and search finds it")
        if not absolute.endswith(".md") and _under_extra(absolute, extra_paths):  # the cause is its extension
            _refuse_citation(raw)
            raise PathRefused(f"refused: {raw if os.path.isabs(raw) or not shown else shown} is not a Markdown (.md) "
                              "memory file (as OpenClaw's memory_get: 'path is not an allowed Markdown memory file')")
        # `~` is a name as OpenClaw reads it (a folder `~` of an extra path `.` is read); said when it meant home.
        tilde = "; '~' is not expanded: give the path relative to the workspace or absolute" if raw.startswith("~") else ""
        _refuse_citation(raw)
        if absolute.endswith(".md") and (pattern := _pattern_leaving_out(absolute, extra_paths)) is not None:
            raise PathRefused(  # not "no configured extra path": the one it is in takes other names
                f"refused: {raw if os.path.isabs(raw) or not shown else shown} is not a memory path: it is in the "
                f"extra path {pattern[0]}, whose pattern {pattern[1]} leaves it out")
        raise PathRefused(  # named as typed: an absolute path shown relative to the workspace reads as another
            f"refused: {raw if os.path.isabs(raw) or not shown else shown} is not a memory path "
            f"(MEMORY.md, USER.md, DREAMS.md, memory/**/*.md or a file in an existing configured extra path){tilde}"
        )
    if scanned != root:
        # One name a file: the scanner's (``files``, search, the index, the watch's history), so a
        # write through a linked folder's name guards and records the same file as every other.
        absolute = scanned if absolute == root else os.path.join(scanned, os.path.relpath(absolute, root))
        root, shown = scanned, display_path(absolute, workspace)
    if not absolute.endswith(".md") and not (root == absolute and not in_workspace):
        kind = _media(absolute, (root,))
        _refuse_citation(raw)
        raise PathRefused(f"refused: {shown} is {kind}, which read does not show: it reads Markdown (.md) memory files only"
                          if kind else f"refused: {shown} is not a Markdown (.md) memory file")
    rel_parts = os.path.relpath(absolute, root).split(os.sep) if absolute != root else []
    # Also through an extra path naming the workspace's archive folder (files lists nothing there).
    if REPAIR_DIR in rel_parts or _inside(absolute, os.path.join(workspace, REPAIR_DIR)):
        raise PathRefused(f"refused: {shown} is inside a {REPAIR_DIR} archive, which is never memory")
    try:
        _refuse_symlinks(root, rel_parts, absolute, shown)
    except PathRefused:  # a link: one of the workspace's names (its folder an extra path holds) is no link to refuse
        # Named from its root's other name once (``aliased``): a link below an extra path named through a
        # linked folder led back to the same path, and to a RecursionError.
        if in_workspace or aliased or (alias := _through_alias(absolute, workspace, extra_paths)) is None:
            raise
        return resolve_memory_path(alias, workspace, extra_paths, aliased=True)
    if not rel_parts:  # an extra path that is the file itself: opened from its folder
        root, rel_parts = os.path.dirname(root), [os.path.basename(root)]
    return ResolvedPath(absolute, shown, root, tuple(rel_parts), in_workspace)


def _as_named(path: str, workspace: str, extra_paths, known: Callable[[str], bool] | None) -> str:
    """``path`` trimmed as OpenClaw trims it (an agent's stray newline or space), or exactly as given
    where that names a note of an extra path whose name starts or ends with white space, as ``files``,
    search, citations and the history name it (``" top.md"``): one that exists, or one ``known`` says
    the history has logged (given the name as the scanner names it; a removed note a write, mv, rm,
    restore or history names). Trimmed, ``" top.md"`` named ``top.md``, another note, which ``rm``
    removed. A name neither is gets the trim: a new note is never made with white space around its
    name (``"\\nMEMORY.md"`` made a note of that name, not a write of ``MEMORY.md``). (The
    workspace's own memory paths never start or end with white space.)"""
    trimmed = js_trim(path)
    if trimmed == path or not trimmed:
        return trimmed
    absolute = absolute_path(path, workspace)
    if _allowed_extra(absolute, extra_paths)[0] is None:
        return trimmed
    return path if os.path.lexists(absolute) or (known is not None and known(as_scanned(absolute))) else trimmed


# A search citation (memory/a.md#L3-L9, MEMORY.md#L1): lines of a note, given where a file goes.
_CITED = re.compile(r"(?P<path>.+\.md)#[Ll][0-9]+(?:-[Ll][0-9]+)?", re.DOTALL)


def _refuse_citation(raw: str) -> None:
    """Refuse a search citation given where only a file goes (write, mv, rm, history, links: read and
    memory_get take one) naming the file to give: it was "not a Markdown (.md) memory file" (a
    folder's note) or "not a memory path" (MEMORY.md#L1), which the note it cites is."""
    cited = _CITED.fullmatch(raw)
    if cited is not None:
        note = cited.group("path")
        raise PathRefused(f"refused: {raw} is a search citation, which names lines of {note}; give the file: {note}")


def _through_alias(absolute: str, workspace: str, extra_paths=()) -> str | None:
    """``absolute`` named from a memory root's own path (the workspace's, an extra folder's) when a
    folder above it, outside that root, is the root under another name (``-w ~/agent`` where
    ``~/agent`` is a link, and a path given as ``~/agent/memory/a.md``; macOS's ``/tmp``, a link to
    ``/private/tmp``); else None. Only the part above the root is followed: what is below it is
    resolved from the root's descriptor as every path is, a link there refused. OpenClaw reads such a
    path (it resolves both sides' links)."""
    roots: dict[tuple[int, int], str] = {}
    for root in (workspace, *extra_paths):
        try:
            if stat.S_ISLNK(os.lstat(root).st_mode):
                continue  # a symlinked extra path is no root (the scan ignores it): its target's name is
            st = os.stat(root)
        except (OSError, ValueError):
            continue
        if stat.S_ISDIR(st.st_mode):
            roots.setdefault((st.st_dev, st.st_ino), str(root))
    head, rest = absolute, ""
    while (parent := os.path.dirname(head)) != head:
        head, rest = parent, os.path.join(os.path.basename(head), rest) if rest else os.path.basename(head)
        try:
            st = os.stat(head)
        except OSError:
            continue
        root = roots.get((st.st_dev, st.st_ino))
        if root is not None and not _inside(head, root):
            alias = os.path.join(root, rest)
            return alias if alias != absolute and _admitted(alias, workspace, extra_paths) else None
    return None


def _admitted(absolute: str, workspace: str, extra_paths) -> bool:
    """Whether ``absolute`` is a memory path of the workspace or of an extra path (what is below
    its root not yet looked at)."""
    rel = os.path.relpath(absolute, workspace)
    return (rel != os.curdir and not rel.startswith(os.pardir) and is_memory_path(rel)) \
        or _allowed_extra(absolute, extra_paths)[0] is not None


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _media(absolute: str, roots) -> str | None:
    """What ``absolute`` is, "an image file" or "an audio file" (by OpenClaw's extensions), when it lies in
    one of ``roots`` (the extra paths, whose media ``files --multimodal`` lists), else None: `read` of
    a file `files` listed was refused as "not a memory path (... or a file in an existing configured
    extra path)", which it is."""
    kind = file_kind(os.path.basename(absolute), True)
    if kind not in ("image", "audio"):
        return None
    if not any(absolute == os.fspath(r) or _inside(absolute, os.fspath(r)) for r in roots):
        return None
    return f"an {kind} file"


def _pattern_leaving_out(absolute: str, extra_paths) -> tuple[str, str] | None:
    """The existing extra folder ``absolute`` lies below and the pattern of it that does not match
    it, as given; None where there is none."""
    for given in extra_paths:
        if isinstance(given, ExtraPath) and given.pattern and not given.admits(absolute) and _inside(absolute, given) \
                and absolute != given and os.path.isdir(given):
            return str(given), given.pattern
    return None


def _under_extra(absolute: str, extra_paths) -> bool:
    """Whether ``absolute`` lies below an existing configured extra folder (as given or as the scanner
    names it), or is an existing extra path that is no folder."""
    for given in extra_paths:
        for extra in dict.fromkeys((os.fspath(given), os.fspath(as_scanned(given)))):
            if _inside(absolute, extra) and os.path.exists(extra) and not (absolute == extra and os.path.isdir(extra)):
                return True
    return False


def _allowed_extra(absolute: str, extra_paths) -> tuple[str | None, str | None]:
    """The extra path that admits ``absolute`` (the extra file itself, or a ``.md`` file below an
    existing extra folder whose pattern matches), and that path as the scanner names it; (None,
    None) where none does. A missing extra folder admits nothing. Each extra path is also taken as
    the scanner names it (its folders' links resolved: ``files``, search and the index give that
    path), so a path this product printed is one it reads."""
    for given in extra_paths:
        spelled = as_scanned(given)
        for extra in (given,) if spelled == given else (given, ExtraPath(spelled, given.pattern if isinstance(given, ExtraPath) else None)):
            if (root := _admitting(absolute, extra)) is not None:
                return root, spelled
    return None, None


def _admitting(absolute: str, extra: str) -> str | None:
    is_file_entry = absolute == extra and absolute.endswith(".md")
    in_folder = absolute.endswith(".md") and _inside(absolute, extra) and (
        not isinstance(extra, ExtraPath) or extra.admits(absolute)
    )
    if not is_file_entry and not in_folder:
        return None
    try:
        st = os.lstat(extra)
    except OSError:
        return None
    if stat.S_ISDIR(st.st_mode) and in_folder and absolute != extra:
        return extra
    if stat.S_ISREG(st.st_mode) and is_file_entry:
        return extra
    return None


def _refuse_symlinks(root: str, rel_parts: list[str], absolute: str, shown: str) -> None:
    """Refuse a symlink at the allowed root or any component below it (``absolute``: the file
    they lead to). Missing parts are fine."""
    current = root
    for part in [""] + rel_parts:
        current = os.path.join(current, part) if part else current
        try:
            st = os.lstat(current)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise PathRefused(f"refused: cannot inspect {shown}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise ThroughALink(f"refused: {shown} goes through a symlink ({current}); memory never follows symlinks",
                               absolute, shown)


def clamp_window_args(from_line, lines, max_chars, *, default_lines: int, default_max_chars: int) -> tuple[int, int, int]:
    """OpenClaw's ``memory_get`` window: each value floored, below 1 raised to 1, missing or not
    a finite number replaced by the default (``resolveIntegerOption``)."""
    import math

    def finite(value) -> bool:
        try:
            return math.isfinite(value)
        except OverflowError:  # an integer past any float: JavaScript reads it as Infinity
            return False

    def one(value, default: int) -> int:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and finite(value)
        return max(1, math.floor(value if ok else default))

    return one(from_line, 1), one(lines, default_lines), one(max_chars, default_max_chars)


def check_window_args(from_line: int, lines: int, max_chars: int) -> None:
    """BadValue for a window value out of range, named by its parameter (each front-end words it:
    ``--from`` on the command line, ``from`` for a tool); not a refused path."""
    from .citation import MAX_LINE

    for name, value in (("from_line", from_line), ("lines", lines), ("max_chars", max_chars)):
        if not isinstance(value, int) or value < 1:
            raise BadValue(name, f"must be at least 1 (got {value})")
        if name == "from_line" and value > MAX_LINE:  # as a citation's and memory_get's: no JSON reader holds it whole
            raise BadValue(name, f"must be a positive integer (at most {MAX_LINE}), not {cut(str(value), 60)}")


def read_window_bytes(data: bytes, resolved: ResolvedPath, *, from_line: int = 1, lines: int = 120,
                      max_chars: int = 12_000, version: str | None = None) -> ReadResult:
    """The window :func:`read_memory_file` would return, cut from bytes already read whole."""
    check_window_args(from_line, lines, max_chars)
    scan = WindowScan(from_line, lines, max_chars)
    for at in range(0, len(data), BLOCK):
        scan.feed(data[at : at + BLOCK])
    return replace(_result(scan, from_line, resolved), version=version, size=len(data))


def read_memory_file(
    path: str,
    workspace: str,
    *,
    extra_paths=(),
    from_line: int = 1,
    lines: int = 120,
    max_chars: int = 12_000,
) -> ReadResult:
    """Read a window of a memory file with OpenClaw's ``memory_get`` semantics."""
    check_window_args(from_line, lines, max_chars)
    resolved = resolve_memory_path(path, workspace, extra_paths)
    opened = open_resolved(resolved, through_a_file="refused")
    if opened is None:
        # A note there named in the other Unicode form (NFD, as macOS names files) prints alike: said,
        # to the agent too (OpenClaw's not_found shape, with a warning).
        alike = look_alike_there(resolved)
        warnings = (f"{resolved.display} does not exist; {alike_words(alike, resolved.display)} is there: "
                    "read it by its exact name, as this message gives it",) if alike else ()
        return ReadResult("", resolved.display, status="not_found", abs_path=resolved.abs_path, warnings=warnings)
    try:
        scan, version, size = _scan_versioned(opened[0], from_line, lines, max_chars)
    finally:
        os.close(opened[0])
    return replace(_result(scan, from_line, resolved), version=version, size=size)


# A file rewritten in place while we read it: retry this often, then report no version.
_VERSION_TRIES = 3


def _stat_key(fd: int) -> tuple[int, int, int]:
    st = os.fstat(fd)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _scan_versioned(fd: int, from_line: int, lines: int, max_chars: int) -> tuple[WindowScan, str | None, int | None]:
    """The window and the whole file's (version, size), from one pass over the open file.

    The version hashes the bytes the window is cut from; if size, mtime or ctime moved during
    the pass, those bytes may be a mix no version of the file ever held, so try again. A file
    that never holds still gets its window with no version: nothing is recorded for it.
    """
    buffer = bytearray(BLOCK)
    for attempt in range(1, _VERSION_TRIES + 1):
        before = _stat_key(fd)
        os.lseek(fd, 0, os.SEEK_SET)
        scan = WindowScan(from_line, lines, max_chars)
        digest = xxhash.xxh3_128()
        size = 0
        while n := os.readv(fd, [buffer]):
            block = buffer if n == BLOCK else buffer[:n]
            digest.update(block)
            size += n
            scan.feed(block)
        faults.reach(f"read:scanned:{attempt}")
        if _stat_key(fd) == before:
            return scan, digest.hexdigest(), size
    return scan, None, None


def _result(scan: WindowScan, from_line: int, resolved: ResolvedPath) -> ReadResult:
    def notice(next_from: int | None) -> str:
        if next_from is not None:
            return NOTICE_NEXT.format(next=next_from)
        return NOTICE_CUT if resolved.in_workspace else NOTICE_CUT_EXTRA

    window = scan.end(notice)
    warnings = (not_utf8(resolved.display),) if window.bad_utf8 else ()
    return ReadResult(window.text, resolved.display, from_line, window.lines, window.truncated, window.next_from,
                      window.line_chars, abs_path=resolved.abs_path, warnings=warnings)


def look_alike_there(resolved: ResolvedPath) -> str | None:
    """The path (as shown) of the regular file there whose name, or a folder's on its way, is
    ``resolved``'s in other code points, looked up from its root's descriptor one name at a time
    (never through a link); None when there is none."""
    import unicodedata

    parts, changed = list(resolved.parts), False
    try:
        folder = Folder.under(resolved.root, (), create_root=False)
    except (OSError, ValueError):
        return None
    try:
        for depth, part in enumerate(parts):
            try:
                names = [part] if _there(folder, part) else sorted(
                    name for name in os.listdir(folder.fd)
                    if name != part and unicodedata.normalize("NFC", name) == unicodedata.normalize("NFC", part))
                if not names:
                    return None
                parts[depth], changed = names[0], changed or names[0] != part
                if depth == len(parts) - 1:
                    if not changed or not stat.S_ISREG(folder.lstat(parts[depth]).st_mode):
                        return None
                    break
                below = Folder(open_folder(folder.path, (parts[depth],), root_fd=folder.fd),
                               os.path.join(folder.path, parts[depth]))
            except (OSError, ValueError):
                return None
            folder.close()
            folder = below
    finally:
        folder.close()
    shown = resolved.display.split("/")
    at = len(shown) - len(parts)
    return "/".join([*shown[:at], *parts]) if at >= 0 else None


def _there(folder: Folder, name: str) -> bool:
    try:
        folder.lstat(name)
    except FileNotFoundError:
        return False
    return True


def alike_words(there: str, mine: str) -> str:
    """``there`` (escaped), named as ``mine`` (escaped) is but in other code points, and its form."""
    import unicodedata

    def escaped(name: str) -> str:
        return name.encode("ascii", "backslashreplace").decode("ascii")

    form = (" (decomposed: NFD, as macOS names files)" if unicodedata.is_normalized("NFD", there)
            and not unicodedata.is_normalized("NFC", there) else " (composed: NFC)")
    return (f"{there} ({escaped(there)}), named as {mine} ({escaped(mine)}) is but with its letters written in other "
            f"Unicode code points{form},")
