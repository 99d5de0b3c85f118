"""Reads as an agent makes them (``memory_get``): a window of the file, and the whole file's
version recorded as read by the session, with the lines the window showed, which the write guard
and ``read --diff`` compare with; declared in :class:`~openclaw_memory.memory.base.Memory`."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import BadValue, DiskFull, MemoryToolError, is_no_space, no_inode_left

if TYPE_CHECKING:
    from ..files.read import ReadResult
    from ..settings import Settings
    from .diff import DiffRead


def read(settings: Settings, path: str, from_line: float | None = None, lines: float | None = None,
         max_chars: float | None = None, clamp: bool = False) -> ReadResult:
    from ..files.read import clamp_window_args, read_memory_file
    from .states import READ, record_read, shown_lines
    from .store import FileVersion

    path, from_line, lines = _cited(path, from_line, lines)
    if clamp:
        from_line, lines, max_chars = clamp_window_args(from_line, lines, max_chars, default_lines=settings.read.default_lines,
                                                        default_max_chars=settings.read.max_chars)
    result = read_memory_file(
        path, str(settings.workspace), extra_paths=settings.extra_paths,
        from_line=1 if from_line is None else _whole("from_line", from_line),
        lines=settings.read.default_lines if lines is None else _whole("lines", lines),
        max_chars=settings.read.max_chars if max_chars is None else _whole("max_chars", max_chars),
    )
    # The whole file's version is recorded as read (the write guard and ``read --diff`` compare
    # against it), with the lines shown (a replace after a window would drop the others); a missing
    # file is recorded as None, so the agent may then create it.
    version: FileVersion | None = None
    if not result.missing:
        if result.version is None or result.size is None:
            # Changed during every pass of the read: no version the window is cut from, nothing to
            # record. Said, or the next write is told it never read the note.
            return replace(result, warnings=result.warnings + (
                f"{result.path} changed while it was read (rewritten in place by another program), so this read has "
                "no version and was not recorded for the write guard: read it again before writing it",))
        version = FileVersion(result.version, result.size)
    try:
        before = record_read(settings, result.abs_path, result.path, version, shown_lines(result))
    except (MemoryToolError, OSError) as exc:
        # The read itself succeeded (a state dir that is full, read-only, busy or damaged only costs
        # the record): without one the guard makes the agent read again before writing.
        full = "no inode is left on the file system of" if no_inode_left(settings.data_dir) else "the disk is full in"
        reason = (
            f"{full} the state dir ({settings.data_dir})" if isinstance(exc, DiskFull) or is_no_space(exc)
            else exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
        )
        return replace(result, warnings=result.warnings + (f"read not recorded for the write guard: {reason}",))
    if (before is not None and before.how == READ and before.seen_from is not None and version is not None
            and before.version != version.version and (result.from_line or 1) > 1):
        # Paging on (nextFrom) across a save: the window is of the new version, whose lines above it
        # may be other lines than those shown before (it repeated some and skipped others, unsaid).
        shown = f"lines {before.seen_from}-{before.seen_to}" if before.seen_to is not None else f"from line {before.seen_from}"
        return replace(result, warnings=result.warnings + (
            f"{result.path} changed since this session read {shown} of it: this window is of the new version, and the "
            "lines before it may differ from those shown then; read it again from line 1 (from=1)",))
    return result


def _whole(name: str, value: float) -> int:
    """A window value as a count of lines or characters: a fraction, NaN or infinity is refused, as
    the command line refuses ``--from 1.5`` (``int()`` floored 1.5 without a word, and raised a bare
    ValueError on NaN). ``clamp`` takes them as OpenClaw's reader does instead."""
    if isinstance(value, float) and not value.is_integer():
        raise BadValue(name, f"must be a whole number, not {value!r}")
    return int(value)


def read_diff(settings: Settings, path: str, from_line: int | None = None, lines: int | None = None,
              max_chars: int | None = None) -> DiffRead:
    from .diff import read_diff as diff_since_read

    path, start, count = _cited(path, from_line, lines)
    return diff_since_read(settings, path, from_line=1 if start is None else int(start),
                           lines=None if count is None else int(count), max_chars=max_chars)


def _cited(path: str, from_line: float | None, lines: float | None) -> tuple[str, float | None, float | None]:
    """A search citation (``memory/a.md#L10-L24``) as its path and lines, unless the window is given."""
    from ..files.citation import parse_citation

    citation = parse_citation(path)
    if citation is None:
        return path, from_line, lines
    return (citation.path, citation.from_line if from_line is None else from_line,
            citation.lines if lines is None else lines)
