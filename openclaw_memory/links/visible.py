"""Which of a note's text is read for links, a line at a time: code and HTML comments hold none.

CommonMark's structure, as far as links need it:

- a fenced code block (```` ``` ```` or ``~~~``, at most 3 spaces in; in a block quote too, where
  it ends with the quote);
- an indented code block: a line 4 columns (a tab to the next multiple of 4) past the list item
  holding it, or past the margin, that continues no paragraph (it follows a blank line, a heading,
  a fence, a thematic break or another code line). An indented line in a paragraph continues it,
  and a list item's later paragraphs are indented to its content, not code: a list item is what
  the chunker takes for one (:data:`openclaw_memory.index.blocks.LIST_ITEM`);
- an inline code span: a run of N backticks to the next run of exactly N on its line;
- an HTML comment ``<!-- ... -->`` (``<!-->`` and ``<!--->`` are whole ones). One that opens a line
  (at most 3 spaces in, after a block quote's ``>`` or a list item's marker) runs to the first
  ``-->``, blank lines and all, or to the end of its block quote or list item, or of the note. One
  opened inside a line runs to the first ``-->`` within its paragraph; where the paragraph ends
  first, it was text, and so were the links after it. A code span and a comment are read left to
  right, the one opened first holding the other (`` `<!--` `` is code); what follows a comment's
  ``-->`` on its line is text (CommonMark hands the rest of a line that opens with one to HTML:
  here the links a person wrote there still count, and move with the note).

A paragraph is what the note's other lines are: it ends at a blank line or at a line that starts a
block (a heading, a fence, a comment, a list item, a thematic break, a block quote's change), and a
line that starts none continues it, without the paragraph's ``>`` or indentation too (CommonMark's
lazy line). A fence ends with its closing fence or its block quote, not with a list item holding
it, as before list items were read.

Every step is linear in the line: a note may hold a line of megabytes.
"""

from __future__ import annotations

import bisect
import re
from typing import NamedTuple

from ..index.blocks import LIST_ITEM, SETEXT

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_BREAK = re.compile(r" {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$")
_EMPTY_ITEM = re.compile(r"\ufeff?([-*+]|\d{1,3}[.)])[ \t]*$")  # a list item with nothing after its marker (yet)
_MARKERS = frozenset("-*+0123456789\ufeff")  # what a list item's line starts with
_BLOCK, _INLINE = 1, 2  # an open comment: one that opened a line, one opened inside a paragraph


class VisibleLine(NamedTuple):
    """What of one line (or of a piece of one) is read for links."""

    visible: str | None  # the line, its code spans and comments blanked (positions hold); None: code
    maybe: str | None  # a comment opened in a paragraph is open at its end: the line as it reads if that is text
    heading: str | None  # an ATX heading's text
    closed: bool  # the comment a paragraph held open before it closed in it: what ``maybe`` gave is no link
    ended: bool  # that paragraph ended before it: the comment was text, and what ``maybe`` gave is links
    starts: bool = False  # a paragraph starts at it (a link reference definition may stand there, not inside one)


_CODE = VisibleLine(None, None, None, False, False)
_CODE_ENDED = VisibleLine(None, None, None, False, True)  # ...after a paragraph that held a comment open ended


class VisibleText:
    """The state a note's lines carry from one to the next: an open fence, comment, paragraph, list items."""

    def __init__(self) -> None:
        self._fence: str | None = None  # the open fence's marker (``` or ~~~; closed by one at least as long)
        self._fence_depth = 0  # how many block quotes (``>``) hold the open fence
        self._comment = 0  # _BLOCK or _INLINE while a comment is open
        self._comment_depth = 0  # how many block quotes hold an open _BLOCK comment
        self._comment_indent = 0  # the content column of the list item holding it (0: none)
        self._paragraph = False  # the last line was a paragraph's: an indented line continues it
        self._depth = 0  # how many block quotes hold the paragraph and the list items
        self._items: list[int] = []  # the open list items' content columns, outermost (and least) first
        self._empty_item = False  # the last line was a list item with nothing after its marker
        self._outer: list[list[int]] = []  # the list items around each block quote, outermost first
        self._code = False  # the line fed last holds no link: nor does the rest of it, in pieces

    def feed(self, line: str, continued: bool = False) -> VisibleLine:
        """The next line of the note (``continued``: the next piece of the line fed last)."""
        if continued:
            return _CODE if self._code else self._inline(line, self._paragraph)
        self._code = True
        if self._fence is not None:
            depth, body = _unquoted(line, self._fence_depth)
            if depth == self._fence_depth:
                self._fenced(body)
                return _CODE
            self._fence = None  # the block quote that held the fence ended, and the fence with it
        if self._comment == _BLOCK:
            depth, body = _unquoted(line, self._comment_depth)
            inside = body.lstrip(" \t")
            if depth == self._comment_depth and (not inside.strip("\r") or _indent(body, inside) >= self._comment_indent):
                self._code = False
                self._paragraph = _text_after_comment(line)
                return self._inline(line, self._paragraph)
            self._comment = 0  # so does a comment's, and the list item that held one
        depth, body = _unquoted(line, None)
        block = body.removesuffix("\r")
        rest = block.lstrip(" \t")
        indent = _indent(block, rest)
        empty_item, self._empty_item = self._empty_item, False
        starts = self._paragraph and self._starts(block, rest, indent, depth)
        ended = False
        # A ``>`` indented less than the list item holding the block quote is another quote, outside it.
        outside = bool(depth and self._depth and self._outer[0]) and len(line) - len(line.lstrip(" ")) < self._outer[0][-1]
        if outside or (depth != self._depth and not (self._paragraph and depth < self._depth and rest and not starts)):
            ended = self._end_paragraph()
            if outside:
                self._quote(line, 0)
            self._quote(line, depth)
        if not rest:
            if empty_item and self._items:  # an item's content cannot start after a blank line: it ended empty
                self._items.pop()
            return _CODE_ENDED if self._end_paragraph() or ended else _CODE
        if self._paragraph and not starts:  # a line of the paragraph (lazy too)
            self._code = False
            return self._inline(line, True, ended)
        return self._block(line, body, rest, indent, depth, ended)

    def _block(self, line: str, body: str, rest: str, indent: int, depth: int, ended: bool) -> VisibleLine:
        """A line that continues no paragraph (``rest``: from its first non-blank, ``indent`` columns
        in, inside ``depth`` block quotes): code, a fence, a heading, a list item, a comment, a paragraph."""
        block = body.removesuffix("\r")
        # A setext underline is one in the paragraph's list item (a lazy ``-`` starts an item).
        underline = self._paragraph and rest[0] in "=-" and SETEXT.match(block) is not None \
            and not (self._items and indent < self._items[-1])
        ended = self._end_paragraph() or ended
        while self._items and self._items[-1] > indent:
            self._items.pop()
        inner = indent - (self._items[-1] if self._items else 0)
        if inner >= 4 or (rest[0] in "`~" and self._opens_fence(body, depth)):
            return _CODE_ENDED if ended else _CODE
        heading = _heading(line) if rest[0] == "#" else None
        if underline or (rest[0] == "#" and _heading(block) is not None) or (rest[0] in "-*_" and _BREAK.match(block)):
            self._paragraph = self._code = False
            return self._inline(line, False, ended, heading)
        at = len(line) - len(body) + len(block) - len(rest)  # where ``rest`` starts in the line
        item = _item(rest)
        if item is not None:
            marker, content = item
            if content == len(rest) or content - marker > 4:  # empty, or its first block indented code
                self._items.append(indent + marker + 1)
                self._paragraph, self._empty_item = False, content == len(rest)
                return _CODE_ENDED if ended else _CODE
            self._items.append(indent + content)
            at += content
        opening = at if line.startswith("<!--", at) else -1  # a comment opening the line (or its list item)
        self._paragraph = opening < 0 or _text_after_comment(line[opening + 2:])
        self._code = False
        return self._inline(line, self._paragraph, ended, heading, opening, starts=opening < 0)

    def _quote(self, line: str, depth: int) -> None:
        """Go into or out of block quotes, to ``depth``: a quote whose ``>`` is indented to a list
        item's content is inside the item, which is open again after the quote."""
        if depth > self._depth:
            _, inside = _unquoted(line, self._depth)
            marker = len(inside) - len(inside.lstrip(" "))
            self._outer.append(self._items[:bisect.bisect_right(self._items, marker)])
            self._outer.extend([] for _ in range(depth - self._depth - 1))
            self._items = []
        else:
            self._items = self._outer[depth]
            del self._outer[depth:]
        self._depth = depth

    def _starts(self, block: str, rest: str, indent: int, depth: int) -> bool:
        """Whether a line starts a block, so ends a paragraph before it, or is its setext underline
        (one without the paragraph's ``>`` or list item indentation is its lazy text)."""
        quoted = depth >= self._depth  # a line without the paragraph's ``>`` is in none of the list items in it
        inner = indent - (_within(self._items, indent) if quoted else 0)
        if not rest or inner >= 4:
            return False
        first = rest[0]
        lazy = not quoted or bool(self._items and indent < self._items[-1])
        return ((first in "`~" and _FENCE.match(block) is not None and _opening(block))
                or (first == "#" and _heading(block) is not None)
                or rest.startswith("<!--")
                or (first in "-*_" and _BREAK.match(block) is not None)
                or (first in "=-" and not lazy and SETEXT.match(block) is not None)
                or _interrupting_item(rest, lazy))

    def _end_paragraph(self) -> bool:
        """End the paragraph: whether a comment it held open was text."""
        self._paragraph = False
        if self._comment == _INLINE:
            self._comment = 0
            return True
        return False

    def _opens_fence(self, body: str, depth: int) -> bool:
        opened = _FENCE.match(body)
        if opened is None or not _opening(body):
            return False
        self._fence, self._fence_depth = opened.group(1), depth
        return True

    def _fenced(self, body: str) -> None:
        """Close the open fence when ``body`` (inside its block quotes) does."""
        assert self._fence is not None
        closing = _FENCE.match(body)
        if closing is not None and closing.group(1)[0] == self._fence[0] and len(closing.group(1)) >= len(self._fence) \
                and not closing.group(2).strip():
            self._fence = None

    def _inline(self, line: str, paragraph: bool, ended: bool = False, heading: str | None = None,
                opening: int = -1, *, starts: bool = False) -> VisibleLine:
        """The line read inline: its code spans and comments blanked, a comment it opens or closes
        kept track of (``opening``: where one opening the line starts, a block of its own)."""
        carried = self._comment
        visible, closed, open_at = _hidden(line, carried != 0)
        if closed:
            self._comment = 0
        if open_at is not None and self._comment == 0:  # opened in this line
            if open_at == opening:
                self._comment, self._comment_depth = _BLOCK, self._depth
                self._comment_indent = self._items[-1] if self._items else 0
            elif paragraph:
                self._comment = _INLINE
            else:  # a heading's: no paragraph to close it in, so it was text
                visible = visible[:open_at] + without_code_spans(line[open_at:])
        maybe = None
        if self._comment == _INLINE and open_at is not None:
            maybe = visible[:open_at] + without_code_spans(line[open_at:])
        return VisibleLine(visible, maybe, heading, carried == _INLINE and closed, ended, starts)


def _within(items: list[int], indent: int) -> int:
    """The content column of the innermost of ``items`` (increasing) a line ``indent`` in is inside (0: none)."""
    k = bisect.bisect_right(items, indent)
    return items[k - 1] if k else 0


def _item(rest: str) -> tuple[int, int] | None:
    """Where a list item's marker ends in ``rest`` (a line from its first non-blank), and where its
    content starts (``len(rest)``: an empty item), or None when it starts none."""
    if rest[:1] not in _MARKERS:
        return None
    item = LIST_ITEM.match(rest)
    if item is not None:
        return item.end(1), item.end() - 1
    empty = _EMPTY_ITEM.match(rest)
    return (empty.end(1), len(rest)) if empty is not None else None


def _interrupting_item(rest: str, lazy: bool) -> bool:
    """Whether a list item starts at ``rest`` where it would end a paragraph: one interrupting the
    paragraph's own text is not empty, and an ordered one starts at 1 (``10. ...`` after text is
    its text); one without the paragraph's ``>`` or indentation starts whatever it is."""
    item = _item(rest)
    if item is None:
        return False
    marker = rest[:item[0]]
    return lazy or (item[1] < len(rest) and (not marker[0].isdigit() or marker[:-1].lstrip("0") == "1"))


def _opening(body: str) -> bool:
    """Whether a fence marker at the start of ``body`` opens one: ``` followed by a backtick is a code span."""
    opened = _FENCE.match(body)
    return opened is not None and not (opened.group(1)[0] == "`" and "`" in opened.group(2))


def _text_after_comment(text: str) -> bool:
    """Whether ``text`` holds anything but blanks after its first ``-->`` (a paragraph starts there)."""
    end = text.find("-->")
    return end >= 0 and bool(text[end + 3:].strip(" \t\r"))


def _indent(text: str, rest: str) -> int:
    """The columns ``text``'s leading spaces and tabs (before ``rest``) take, a tab to the next multiple of 4."""
    lead = len(text) - len(rest)
    if not lead or "\t" not in text[:lead]:
        return lead
    column = 0
    for char in text[:lead]:
        column = column + 4 - column % 4 if char == "\t" else column + 1
    return column



def _unquoted(line: str, most: int | None) -> tuple[int, str]:
    """How many block quote markers (``>``, each after at most 3 spaces, an optional space after
    it) open ``line``, at most ``most`` of them, and the line after them: a fence inside a block
    quote is a fence too, and its code no link. Linear in the line (a line of a million ``>``)."""
    if ">" not in line[:4]:
        return 0, line
    depth, at, end = 0, 0, len(line)
    while most is None or depth < most:
        marker = at
        while marker < end and marker - at <= 3 and line[marker] == " ":
            marker += 1
        if marker - at > 3 or marker == end or line[marker] != ">":
            break
        depth, at = depth + 1, marker + 1
        if at < end and line[at] in " \t":
            at += 1
    return depth, line[at:] if at else line


def _heading(line: str) -> str | None:
    """An ATX heading's text (``## The plan ##`` -> ``The plan``), or None when ``line`` is none."""
    text = line.lstrip(" ")
    if len(line) - len(text) > 3:
        return None
    level = len(text) - len(text.lstrip("#"))
    rest = text[level:]
    if not 1 <= level <= 6 or (rest and rest[0] not in " \t"):
        return None
    rest = rest.strip(" \t")
    closing = rest.rstrip("#")
    if closing != rest and (not closing or closing[-1] in " \t"):
        rest = closing.rstrip(" \t")
    return rest


def _hidden(line: str, commented: bool) -> tuple[str, bool, int | None]:
    """``line`` with its code spans and comments blanked (``commented``: it starts inside one),
    whether that comment closed in it, and where a comment open at its end starts (0: the one it
    started in). "" for a line all comment."""
    closed, at = False, 0
    if commented:
        end = line.find("-->")
        if end < 0:
            return "", False, 0
        closed, at = True, end + 3
    opener = line.find("<!--", at)
    if opener < 0 and "[" not in line and ".md" not in line:
        return line, closed, None  # nothing to blank: no link is found in it either way
    if opener < 0:
        return (" " * at + without_code_spans(line[at:]) if at else without_code_spans(line)), closed, None
    out = list(line)
    blank(out, 0, at)
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line, at)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    i = 0
    while True:
        while i < len(runs) and runs[i][0] < at:
            i += 1
        if 0 <= opener < at:
            opener = line.find("<!--", at)
        tick = runs[i][0] if i < len(runs) else -1
        if opener < 0 and tick < 0:
            return "".join(out), closed, None
        if tick >= 0 and (opener < 0 or tick < opener):  # a code span may open first, and hold a <!--
            same = by_length[runs[i][1] - tick]
            k = bisect.bisect_right(same, i)
            if k == len(same):
                i += 1  # no run as long after it: text
                continue
            blank(out, tick, runs[same[k]][1])
            at, i = runs[same[k]][1], same[k] + 1
            continue
        end = line.find("-->", opener + 2)  # <!--> and <!---> are whole comments
        if end < 0:
            blank(out, opener, len(line))
            return "".join(out), closed, opener
        blank(out, opener, end + 3)
        at = end + 3


def without_code_spans(line: str) -> str:
    """``line`` with every inline code span blanked (same length, so positions hold): a run of N
    backticks opens a span that the next run of exactly N closes; an unmatched run is text."""
    if "`" not in line:
        return line
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for i, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(i)
    out = list(line)
    i = 0
    while i < len(runs):
        start, end = runs[i]
        same = by_length[end - start]
        k = bisect.bisect_right(same, i)
        if k == len(same):
            i += 1
            continue
        close = same[k]
        blank(out, start, runs[close][1])
        i = close + 1
    return "".join(out)


def blank(chars: list[str], start: int, end: int) -> None:
    """Blank ``chars[start:end]`` (a line as a list), its length kept."""
    chars[start:end] = " " * (end - start)
