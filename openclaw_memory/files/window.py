"""A ``memory_get`` window cut from a file's bytes as they stream past, holding only the window.

The rules (OpenClaw's, :mod:`.read`): lines end at ``\\n`` (a final one starts no line); the
window is ``count`` lines from ``from_line``, and ends early at the first line that takes the
joined text past ``max_chars`` UTF-16 code units: that line is dropped, or cut when it is the
first ("hard cut", never inside a surrogate pair). A line is looked at for its first
``4 * (max_chars + 2)`` bytes, enough to decide every cut; invalid UTF-8 in the text shown is
shown as U+FFFD and warned of (bytes the window passed over, a dropped line's, are not).

What is held: the bytes of the lines shown (a budget's worth), the first line's prefix when it
is hard cut, one block, and in the end the text; the lines skipped and the rest of the file only
pass by. The window's first line is measured whole as it passes (:class:`LineLength`): a hard cut
says how many code units that line has (``line_chars``), the budget that shows it whole. A
window of a 200 MB note costs its window, a whole read its bytes and its text (it held each line
as a string, the list of them, their join and the text with its notice: 1.3 GB).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .jstext import truncate_utf16_safe, utf16_len

if TYPE_CHECKING:
    from collections.abc import Callable

NOTICE_NEXT = "[More content available. Use from={next} to continue.]"
NOTICE_CUT_EXTRA = "[More content available. Requested excerpt exceeded the default maxChars budget.]"
NOTICE_CUT = NOTICE_CUT_EXTRA[:-1] + " If you need the full raw line, use read on the source file.]"

# A budget beyond any file (99999999999999999999999) must not overflow a size.
_MAX_BUDGET = 1 << 40
_REPLACEMENT = b"\xef\xbf\xbd"  # U+FFFD written in the file: shown as itself, no invalid byte


@dataclass(frozen=True)
class Window:
    text: str  # the lines shown, joined, with the notice when the window is cut short
    lines: int
    truncated: bool
    next_from: int | None
    bad_utf8: bool  # invalid UTF-8 in the text shown
    # A hard cut: the UTF-16 code units of the whole first line (a ``max_chars`` that shows it whole).
    line_chars: int | None = None


class LineLength:
    """The UTF-16 code units of one line as its bytes stream past (the line ends at ``\n``, a CR
    before it counts, as OpenClaw splits lines): its text decoded a block at a time, never held."""

    def __init__(self) -> None:
        self.units = 0
        self.ended = False
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, block, pos: int = 0) -> None:
        """The bytes of ``block`` from ``pos`` that belong to the line (to its newline, if there)."""
        if self.ended:
            return
        newline = block.find(b"\n", pos)
        self.units += utf16_len(self._decoder.decode(memoryview(block)[pos : len(block) if newline < 0 else newline]))
        if newline >= 0:
            self.end()

    def end(self) -> int:
        """The line's length once its newline (or the file's end) is reached."""
        if not self.ended:
            self.units += utf16_len(self._decoder.decode(b"", final=True))
            self.ended = True
        return self.units


class WindowScan:
    """Fed a file's blocks in order (:meth:`feed`), then :meth:`end`: its window."""

    def __init__(self, from_line: int, count: int, max_chars: int) -> None:
        self.from_line, self.count, self.budget = from_line, count, max_chars
        self.prefix = 4 * (min(max_chars, _MAX_BUDGET) + 2)  # a line's bytes looked at
        self.skip = from_line - 1  # newlines still to pass before the window
        self.kept = bytearray()  # the window's bytes so far: lines joined by their newlines
        self.started = False  # the window has a first line
        self.newlines = 0  # newlines in ``kept``: each starts a line
        self.held = False  # a newline seen last: it starts a line only if a byte follows
        self.line_start = 0  # where the last line started in ``kept``
        self.units = 0  # UTF-16 code units of ``kept`` decoded so far
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.more = False  # a line follows the window (ended by ``count``)
        self.awaiting_more = False  # ended by ``count`` at a block's end: the next block says
        # The line past the budget (its index is ``newlines``): dropped, or when it is the first,
        # cut from its prefix, still to be taken.
        self.crossed = False
        self.room = 0
        self.cut = False  # the crossing line was longer than its prefix
        self.done = False  # the window is known: the rest of the file only passes by
        self.first_line = LineLength()  # the window's first line, measured whole

    def feed(self, block: bytes | bytearray) -> None:
        if not block:
            return
        if self.awaiting_more:
            self.more, self.awaiting_more = True, False
            return
        if self.done:
            self.first_line.feed(block)  # (a hard cut's line, past its prefix)
            return
        pos = 0
        if self.skip:
            found = block.count(b"\n")
            if found < self.skip:
                self.skip -= found
                return
            pos = nth_newline(block, 0, self.skip) + 1
            self.skip = 0
            if pos == len(block):
                return
        self.first_line.feed(block, pos)
        if self.crossed:
            self._take_crossing_line(block, pos)
            return
        self.started = True
        if self.held:
            self.held = False
            if self._take(b"\n"):
                self._crossed_at(block, pos, line_ends=False)
                return
        end = nth_newline(block, pos, self.count - self.newlines)  # the newline ending the window's last line
        stop = len(block) if end < 0 else end
        if end < 0 and block[-1] == 0x0A:
            stop, self.held = stop - 1, True
        view = memoryview(block)
        while pos < stop:
            # Every 3 bytes are at least a code unit: no more than the budget's worth is taken.
            step = min(stop, pos + 3 * (self.budget - self.units) + 8)
            if self._take(view[pos:step]):
                line_ends, self.held = step == stop and (end >= 0 or self.held), False
                self._crossed_at(block, step, line_ends)
                return
            pos = step
        if end >= 0:
            self._end_window()
            if not self.crossed:
                self.more = end + 1 < len(block)
                self.awaiting_more = not self.more

    def end(self, notice: Callable[[int | None], str]) -> Window:
        """The window once the file has ended; ``notice(next_from)`` words a cut."""
        if not self.done and self.started and not self.crossed:
            self._end_window()
        if self.crossed:
            return self._crossed_window(notice)
        lines = self.newlines + 1 if self.started else 0
        next_from = self.from_line + lines if self.more else None
        return self._shown(lines, self.more, next_from, notice(next_from) if self.more and self.kept else None, False)

    def _take(self, piece) -> bool:
        """Add ``piece`` to the window; True when it took the window past its budget (``kept`` then
        holds the lines before the crossing line, whose start ``line_start`` says)."""
        start = len(self.kept)
        self.kept += piece
        return self._count(self.decoder.decode(piece), start)

    def _count(self, text: str, start: int) -> bool:
        units = utf16_len(text)
        if self.units + units <= self.budget:
            self.units += units
            if found := text.count("\n"):
                self.newlines += found
                self.line_start = self.kept.rfind(b"\n", start) + 1
            return False
        at = _crossing(text, self.budget - self.units)
        if found := text.count("\n", 0, at + 1):  # the crossing unit is in a line that starts in ``text``
            self.newlines += found
            self.line_start = nth_newline(self.kept, start, found) + 1
        self.crossed = True
        self.room = self.prefix
        return True

    def _end_window(self) -> None:
        """The window's last line has ended: what the decoder still holds (a cut sequence) counts."""
        self._count(self.decoder.decode(b"", final=True), len(self.kept))
        if self.crossed:
            self._crossing_line_known(line_ends=True)
        self.done = True

    def _crossed_at(self, block, pos: int, line_ends: bool) -> None:
        """The budget was passed in what ``kept`` took of ``block`` (up to ``pos``)."""
        self._crossing_line_known(line_ends)
        if not self.done:
            self._take_crossing_line(block, pos)

    def _crossing_line_known(self, line_ends: bool) -> None:
        """``kept`` ends in (part of) the crossing line and maybe lines after it: drop that line, or
        keep its prefix when it is the first, and drop what follows."""
        start = self.line_start
        if self.newlines:  # the lines before it fit: the window is known
            del self.kept[start - 1 :]
            self.done = True
            return
        newline = self.kept.find(b"\n", start)
        end = len(self.kept) if newline < 0 else newline
        del self.kept[min(end, self.prefix) :]
        self.room -= len(self.kept)
        self.cut = self.room <= 0
        self.done = self.cut or line_ends or newline >= 0

    def _take_crossing_line(self, block, pos: int) -> None:
        """Take what of the first line's next piece is within its prefix."""
        newline = block.find(b"\n", pos)
        end = len(block) if newline < 0 else newline
        piece = memoryview(block)[pos:end][: self.room]
        self.room -= len(piece)
        self.cut = self.room <= 0
        self.kept += piece
        self.done = self.cut or newline >= 0

    def _crossed_window(self, notice: Callable[[int | None], str]) -> Window:
        if self.newlines:  # the lines before the crossing one fit: that one is dropped
            next_from = self.from_line + self.newlines
            return self._shown(self.newlines, True, next_from, notice(next_from) if self.kept else None, False)
        # The first line alone is past the budget: cut (the first ``max_chars + 1`` characters
        # of its prefix decided it), never with a next line to read. A sequence its prefix cut
        # is held back, not shown as U+FFFD.
        line = codecs.getincrementaldecoder("utf-8")("replace").decode(self.kept, final=not self.cut)
        text = truncate_utf16_safe(line[: self.budget + 1], self.budget)
        # What is shown is the file's own text exactly when its bytes begin the line's: each
        # U+FFFD standing for invalid bytes encodes to bytes the file does not hold there.
        bad = not self.kept.startswith(text.encode("utf-8"))
        return Window(f"{text}\n\n{notice(None)}", 1, True, None, bad, self.first_line.end())

    def _shown(self, lines: int, truncated: bool, next_from: int | None, notice: str | None, bad: bool) -> Window:
        """The window's text, decoded once from its bytes with the notice already after them."""
        if notice is not None:
            self.kept += b"\n\n" + notice.encode()
        text = self.kept.decode("utf-8", errors="replace")
        # Each U+FFFD the decoder wrote stands for invalid bytes, or for a U+FFFD in the file.
        bad = bad or text.count("\ufffd") != self.kept.count(_REPLACEMENT)
        self.kept = bytearray()
        return Window(text, lines, truncated, next_from, bad)


def _crossing(text: str, room: int) -> int:
    """The index of the character of ``text`` that takes it past ``room`` UTF-16 code units."""
    if utf16_len(text) == len(text):  # no astral character: a code unit each
        return room
    low, high = 0, len(text) - 1
    while low < high:
        middle = (low + high) // 2
        if utf16_len(text[: middle + 1]) > room:
            high = middle
        else:
            low = middle + 1
    return low


def nth_newline(data, start: int, n: int) -> int:
    """The index of the ``n``-th (1-based) newline of ``data`` from ``start``; -1 when there are fewer."""
    if data.count(b"\n", start) < n:
        return -1
    low, high = start, len(data) - 1  # the answer: the least ``i`` with ``n`` newlines in ``data[start:i + 1]``
    while low < high:
        middle = (low + high) // 2
        if data.count(b"\n", start, middle + 1) >= n:
            high = middle
        else:
            low = middle + 1
    return low
