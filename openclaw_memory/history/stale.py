"""The stale-read guard: whether a reader (an agent's session) may replace, append to, move or
remove a memory file, from its record of what it read (:mod:`.states`) and the ``expect`` it gives;
and what such a write leaves the reader having seen."""

from __future__ import annotations

import contextlib
import contextvars
import os

import xxhash

from ..errors import WriteBlocked
from ..files.jstext import text_faults_of
from ..files.read import ResolvedPath
from .states import ReadRecords, Window
from .store import FileVersion
from .versions import Entry, short


def check_write(store, resolved, current: FileVersion | None, records: ReadRecords, expected: str | None,
                daily_append: bool, latest_before: Entry | None, fd: int | None, *, replacing: bool = False,
                budget: int | None = None) -> None:
    """Refuse a write (a move, a removal) ``records``' reader may not make to ``resolved``, which holds
    ``current``: WriteBlocked naming why. ``expected`` (``expect``) must name the version the reader
    last read, unless the running code read it itself (:func:`read_here`); ``replacing``: the whole
    content is replaced, which needs a read of every line (``budget``: the reader's default
    ``max_chars``, which a refusal names a larger one than when the first line unread is longer)."""
    shown = resolved.display
    if expected is not None and any(version.startswith(expected) for version in _READ_HERE.get()):
        if current is None:
            raise WriteBlocked.because(f"{shown} does not exist, so it is not at version {expected}.", path=shown)
        if not current.version.startswith(expected):
            raise WriteBlocked.because(f"{shown} changed after it was read (read {expected}, now {short(current.version)}).",
                                       path=shown)
        return
    seen, agent, session = records.get(resolved.abs_path), records.agent, records.session
    who = {"path": shown, "agent": agent, "session": session}
    if expected is not None and (seen is None or not seen.version.startswith(expected)):
        # A version learnt anywhere but from a read (a refusal, `history`, another session) is no
        # read: the guard would let a write replace what the reader never saw.
        if current is None:
            raise WriteBlocked.because(f"{shown} does not exist, so it is not at version {expected}.", path=shown)
        if seen is not None and seen.version == current.version:
            raise WriteBlocked.because(f"{shown} is at the version {{reader}} read ({short(seen.version)}), not {expected}",
                                       step="expect_read", **who)
        raise WriteBlocked.because(f"{shown} is at a version {{reader}} has not read", step="read_first", **who)
    if current is None or fd is None:  # open_current gives both or neither
        if seen is not None:
            raise WriteBlocked.because(f"{shown} was deleted since {{reader}} read it.", **who)
        return
    if daily_append and expected is None:
        base = seen if seen is not None else latest_before
        if base is None:
            raise WriteBlocked.because(f"{{reader}} has not read {shown}", step="read_first_append", **who)
        if not has_prefix(fd, current, base.version, base.size):
            raise WriteBlocked.because(
                f"{shown} shrank or was rewritten since {{reader}} last saw it "
                f"(version {short(base.version)} is no longer the start of the file).", **who,
            )
        return
    if seen is None:
        raise WriteBlocked.because(f"{shown} exists and {{reader}} has not read it", step="read_first", **who)
    if seen.version != current.version:
        raise WriteBlocked.because(
            f"{shown} changed since {{reader}} last read it (read {short(seen.version)}, now {short(current.version)}).", **who,
        )
    if replacing and seen.seen_from is not None:
        problem, rest = _unread_lines(shown, seen.seen_from, seen.seen_to, line_count(fd, current.size))
        chars = _line_chars(fd, current.size, rest)
        raise WriteBlocked.because(problem, step="read_rest", rest=f"{rest}:{chars}" if budget is not None and chars > budget
                                   else str(rest), **who)
    if replacing and (bad := text_faults_of(fd)[0]) is not None:
        # Every read shows such bytes as U+FFFD: content made from a read (text + a new line) wrote
        # U+FFFD over each of them, bytes the reader never saw (only the history kept them).
        raise WriteBlocked.because(
            f"{shown} holds bytes that are not valid UTF-8 (first invalid byte at offset {bad}), which reads show as "
            "U+FFFD, so {reader} has not read them, and the new content would replace them", step="not_utf8", **who,
        )


def seen_after_append(records: ReadRecords, resolved: ResolvedPath, current: FileVersion | None, fd: int | None) -> Window:
    """The lines of the file before an append that the writer has seen (what it appended it wrote):
    what its record says of the version appended to; of an older version the file grew from (a
    daily note), at most that version's lines; with no read at all, none (a later replace of it needs
    a read of them)."""
    if current is None or fd is None:
        return None  # created: the writer wrote every line
    seen = records.get(resolved.abs_path)
    if seen is not None and seen.version == current.version:
        return seen.window
    if seen is None:
        return 1, 0
    lines = line_count(fd, seen.size)  # the file grew from the version read: its start is that version
    # (seen_to None: every line read; 0: none, as an unread append records)
    return seen.seen_from or 1, min(lines if seen.seen_to is None else seen.seen_to, lines)


def _unread_lines(shown: str, first: int, last: int | None, total: int) -> tuple[str, int]:
    """What a window read left unread, and the line where the rest starts (the refusal's step names
    the read of it in its front-end's words: ``from=N``, ``--from N``)."""
    last = total if last is None else min(last, total)
    seen = (f"none of the {total} lines" if last < first else f"line {first} of the {total} lines" if last == first
            else f"lines {first}-{last} of the {total} lines")
    rest = 1 if first > 1 else last + 1
    return f"{{reader}} read {seen} of {shown}, so replacing its content would drop lines it has not read: read the rest", rest


def _line_chars(fd: int, size: int, number: int) -> int:
    """The length of line ``number`` in UTF-16 code units, as ``read`` counts it against its budget
    (a line cut short by a read's budget is shown whole by a budget of its length)."""
    from ..files.window import LineLength, nth_newline

    line, skip, offset = LineLength(), number - 1, 0
    while offset < size and not line.ended:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            break
        offset += len(block)
        pos = 0
        if skip:
            found = block.count(b"\n")
            if found < skip:
                skip -= found
                continue
            pos, skip = nth_newline(block, 0, skip) + 1, 0
        line.feed(block, pos)
    return line.end()


def line_count(fd: int, size: int) -> int:
    """Lines as ``read`` numbers them: a last line without its newline counts."""
    count, offset, last = 0, 0, b"\n"
    while offset < size:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            break
        count += block.count(b"\n")
        offset, last = offset + len(block), block[-1:]
    return count + (last != b"\n")


@contextlib.contextmanager
def read_here(version: str | None):
    """Around a write whose ``expect`` the running code read from the file itself (a link rewrite, a
    rollback's step), with no read by the agent's session behind it: the compare-and-swap alone.
    None: nothing to vouch for (a file found missing)."""
    token = _READ_HERE.set(_READ_HERE.get() | ({version} if version is not None else set()))
    try:
        yield
    finally:
        _READ_HERE.reset(token)


# The versions :func:`read_here` vouches for, in this thread's current call.
_READ_HERE: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("read_here", default=frozenset())


def has_prefix(fd: int, current: FileVersion, version: str, size: int) -> bool:
    if size > current.size:
        return False
    digest = xxhash.xxh3_128()
    offset = 0
    while offset < size:
        block = os.pread(fd, min(1 << 20, size - offset), offset)
        if not block:
            return False
        digest.update(block)
        offset += len(block)
    return digest.hexdigest() == version
