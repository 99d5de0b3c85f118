"""``read --diff``: what changed in a file since this agent last read (or wrote) it.

It counts as a read (the version now is recorded for the agent) and always diffs the
whole file. Modes: ``diff`` (a unified diff labelled with short versions; a byte that is not
UTF-8 shown as ``\\xNN`` and each backslash of its text as ``\\\\``, with a warning),
``unchanged``, ``full`` (no earlier version to compare with: never read, or its bytes
were evicted; the ordinary paged read follows) and ``missing``.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import xxhash

from ..errors import printable
from ..files.jstext import decode_lossy
from ..files.read import ReadResult, check_window_args, open_resolved, read_window_bytes, resolve_memory_path
from ..types import DiffMode
from ..wire import key
from .states import READ, ReadRecords, shown_lines
from .store import FileVersion, HistoryStore
from .versions import short

if TYPE_CHECKING:
    from ..settings import Settings

DIFF: DiffMode = "diff"
UNCHANGED: DiffMode = "unchanged"
FULL: DiffMode = "full"
MISSING: DiffMode = "missing"
NO_NEWLINE = "\\ No newline at end of file\n"


@dataclass(frozen=True)
class DiffRead:
    mode: DiffMode
    path: str
    version: str | None  # the file now; None when missing
    previous: str | None = key("previousVersion")  # what this agent last read or wrote
    diff: str = key(omit=lambda d: d.mode != DIFF, default="")
    read: ReadResult | None = key(flatten=True, default=None)  # the paged read, in mode ``full``
    reason: str | None = key(omit=lambda d: d.reason is None, default=None)  # why mode ``full``
    warnings: tuple[str, ...] = key(omit=lambda d: not d.warnings, default=())

    JSON_DERIVED: ClassVar = ("from_version", "to_version")

    @property
    def from_version(self) -> str | None:
        return self.previous if self.mode == DIFF else None

    @property
    def to_version(self) -> str | None:
        return self.version if self.mode == DIFF else None


def read_diff(settings: Settings, path: str, *, from_line: int = 1, lines: int | None = None, max_chars: int | None = None) -> DiffRead:
    """Diff the file against the version ``settings.agent`` last read; record the version now as read.

    ``from_line``/``lines``/``max_chars`` shape only the fallback read (mode ``full``).
    """
    lines = settings.read.default_lines if lines is None else lines
    max_chars = settings.read.max_chars if max_chars is None else max_chars
    check_window_args(from_line, lines, max_chars)
    resolved = resolve_memory_path(path, str(settings.workspace), settings.extra_paths)
    data = _read_whole(resolved)
    store = HistoryStore.for_settings(settings)
    records = ReadRecords.for_settings(store, settings)
    with store.lock():
        seen = records.get(resolved.abs_path)
        previous = seen.version if seen else None
        if data is None:
            records.forget(resolved.abs_path)
            return DiffRead(MISSING, resolved.display, None, previous)
        snapshot = FileVersion(xxhash.xxh3_128_hexdigest(data), len(data))
        store.observe(resolved.abs_path, resolved.display, snapshot, data=data)
        old = None
        if previous is not None and previous != snapshot.version:
            old = store.objects.read_bytes(previous)
        window = None
        if previous != snapshot.version and old is None:  # no diff to show: the window is what is read
            window = read_window_bytes(data, resolved, from_line=from_line, lines=lines, max_chars=max_chars,
                                       version=snapshot.version)
        # What the session has seen of the file: the window, or with a diff (or nothing new) the lines
        # its earlier reads showed, and the changes (a replace after a window read stays refused).
        shown = shown_lines(window) if window is not None else seen.window if seen is not None else None
        records.put(resolved.abs_path, snapshot, READ, shown)
    if previous == snapshot.version:
        return DiffRead(UNCHANGED, resolved.display, snapshot.version, previous)
    if window is not None:
        reason = (
            f"agent '{settings.agent}' has not read this file before" if previous is None
            else f"version {short(previous)} is no longer in the version store"
        )
        return DiffRead(FULL, resolved.display, snapshot.version, previous, read=window, reason=reason, warnings=window.warnings)
    assert old is not None and previous is not None  # (no window: a diff to show); this only narrows
    text, bad = unified_diff(old, data, resolved.display, previous, snapshot.version)
    warnings = (_not_utf8(resolved.display, only=decode_lossy(old)[0] == decode_lossy(data)[0]),) if bad else ()
    return DiffRead(DIFF, resolved.display, snapshot.version, previous, diff=text, warnings=warnings)


def unified_diff(old: bytes, new: bytes, path: str, old_version: str, new_version: str) -> tuple[str, bool]:
    """A unified diff (3 lines of context) with git's marker for a missing final newline, and whether
    either side holds bytes that are not UTF-8: each shown as ``\\xNN``, so that a change to one
    shows (as U+FFFD, a read's way, every such byte was alike: ``100\\xa3`` edited to ``100\\xa5``
    gave an empty diff, and the read was recorded as done). With such bytes on either side, each
    backslash of the text is shown doubled, on both sides: the four characters ``\\xa3`` typed as
    text are ``\\\\xa3``, never the byte's ``\\xa3`` (the one edited to the other gave an empty diff)."""
    bad = not (_is_utf8(old) and _is_utf8(new))
    out = []
    for line in difflib.unified_diff(
        lines_of(_escaped(old, bad)), lines_of(_escaped(new, bad)),
        # The name as every message shows it: a newline in it split each header in two, and its
        # control characters reached the terminal.
        fromfile=f"a/{printable(path)} (version {short(old_version)})", tofile=f"b/{printable(path)} (version {short(new_version)})",
    ):
        out.append(line if line.endswith("\n") else line + "\n" + NO_NEWLINE)
    return "".join(out), bad


_INVALID = re.compile("[\udc80-\udcff]")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _escaped(data: bytes, escape: bool) -> str:
    """UTF-8 text; with ``escape``, each backslash doubled and each invalid byte as ``\\xNN``."""
    if not escape:
        return data.decode("utf-8")
    text = data.decode("utf-8", errors="surrogateescape").replace("\\", "\\\\")
    return _INVALID.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)


def _not_utf8(name: str, *, only: bool) -> str:
    """The warning of a diff with bytes that are not UTF-8; ``only``: its changes are all to such
    bytes, which a read shows alike."""
    also = "; the only changes are to such bytes, which a read shows alike" if only else ""
    return (f"{name} is not valid UTF-8; its invalid bytes are shown as \\xNN in the diff, and each backslash of its "
            f"text as \\\\ (a read shows each such byte as U+FFFD and a backslash as it is){also}")


def lines_of(text: str) -> list[str]:
    """``text``'s lines as ``read`` numbers them, each with its line end: a line ends at ``\\n`` alone
    (``str.splitlines`` also breaks at ``\\r``, a form feed, U+2028 ...: the hunks' line numbers were
    not ``read``'s, and each such break got git's "No newline at end of file" marker)."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _read_whole(resolved) -> bytes | None:
    opened = open_resolved(resolved)
    if opened is None:
        return None
    with os.fdopen(opened[0], "rb") as fh:
        return fh.read()
