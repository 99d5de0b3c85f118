"""The units a Markdown text is made of, as a search passage cuts them: headings, list items with
their continuation lines, paragraphs, table rows, chat-log turns, fenced code blocks (:func:`entries`).
The chunker (:mod:`.chunking`) uses the same fences and turns; the snippets (:mod:`.snippets`) cut
passages along these entries."""

from __future__ import annotations

import re
from dataclasses import dataclass


def line_pattern(pattern: str) -> re.Pattern[str]:
    """A pattern of one Markdown line from its start, which takes a byte order mark before what it
    reads (U+FEFF: a file an older Notepad saved as UTF-8 starts with one, as does each part of files
    joined with `cat`; without it the file's first heading, list item, chat turn or fence was none).
    The mark stays in the lines, which are the file's as ``read`` gives them. Every line pattern of
    the block grammar is made here, so none can miss it (front matter: ``chunking._unmarked``)."""
    return re.compile("^\ufeff?" + pattern)


FENCE = line_pattern(r"[ \t]*(`{3,}|~{3,})(.*)$")
SETEXT = line_pattern(r" {0,3}(=+|-+)[ \t]*$")
# A list item's first line, as CommonMark starts one (at most 3 spaces in, its marker the group):
# the chunker's one chunk per item, and the link parser's list items (whose indented lines are
# their paragraphs, not code: links.visible).
LIST_ITEM = line_pattern(r" {0,3}([-*+]|\d{1,3}[.)])[ \t]+\S")


def fence_end(lines: list[str], i: int, marker: str) -> int:
    """The line that closes the fence opened at ``i`` with ``marker``."""
    for k in range(i + 1, len(lines)):
        m = FENCE.match(lines[k])
        if m and m.group(1)[0] == marker[0] and len(m.group(1)) >= len(marker) and not m.group(2).strip():
            return k
    return len(lines) - 1  # an unclosed fence runs to the end of the file (CommonMark)


HEADING = "heading"
ITEM = "item"
PARAGRAPH = "paragraph"
ROW = "row"
TURN = "turn"
CODE = "code"
# Whatever starts an entry other than a paragraph, by kind: a fence, an ATX heading, a table row, a list item.
_BLOCK_START = line_pattern(
    r"(?:(?P<fence>[ \t]*(?:`{3,}|~{3,}))|(?P<atx> {0,3}#{1,6}(?:[ \t]|$))|(?P<row>[ \t]*\|)"
    r"|(?P<item>[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S))"
)


def block_start(line: str) -> str | None:
    """What ``line`` starts, when it starts an entry other than a paragraph: ``fence``, ``atx`` (a
    heading), ``row`` or ``item``; else None."""
    m = _BLOCK_START.match(line)
    return m.lastgroup if m else None


_ROW_RULE = line_pattern(r"[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
# A chat-log turn: after a quote or list marker (_LEAD), a bracketed stamp, or a short speaker name
# and a colon after an optional date and time (_STAMP): "[09:14] Sam: ...", "Sam: ...", "**Sam**
# (09:14): ...", "**Sam:** ..." (the emphasis closed before or after the colon), "12/05/2023, 13:56
# - Sam: ..." (a phone's chat export). _SPEAKER reads the name after the same lead and stamp.
_LEAD = r"[ \t]*(?:>[ \t]?)*(?:[-*][ \t]+)?"
_STAMP = r"(?:(?:\d{1,4}[./-]\d{1,2}[./-]\d{1,4},?[ \t]+)?\(?\d{1,2}:\d{2}(?::\d{2})?\)?(?:[ \t]*[aApP]\.?[mM]\.?)?[ \t]*[-–]?[ \t]*)?"
TURN_LINE = line_pattern(
    _LEAD + r"(?:\[[^\]\n]{1,40}\][ \t]*\S"
    r"|" + _STAMP + r"(?:\*\*?|__)?[\w][\w .'’-]{0,30}?(?:\*\*?|__)?"
    r"(?:[ \t]*\([^)\n]{1,20}\))?[ \t]*:(?:\*\*?|__)?[ \t]+\S)"
)


@dataclass(frozen=True)
class TextEntry:
    """One unit of a Markdown text: a heading, a list item with its continuation lines, a
    paragraph, a table row, a chat-log turn or a fenced code block (0-based lines, inclusive)."""

    first: int
    last: int
    kind: str
    depth: int = 0  # a list item's indentation (a nested item is deeper than its parent)


def entries(lines: list[str], in_fence: bool = False) -> list[TextEntry]:
    """The entries of ``lines`` (a chunk's body, or a whole file), in order; blank lines belong to none.

    ``in_fence``: the lines start inside a fenced code block (the chunk was cut inside one), so
    they are code up to its closing fence. A paragraph whose lines mostly start like chat-log
    turns (``[09:14] Sam: ...``, ``Sam: ...``) is one entry per turn; a table is one per row.
    """
    out: list[TextEntry] = []
    n = len(lines)
    i = 0
    if in_fence:
        end = next((k for k in range(n) if FENCE.match(lines[k])), n - 1)
        out.append(TextEntry(0, end, CODE))
        i = end + 1
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        start = _BLOCK_START.match(line)
        kind = start.lastgroup if start else None
        if kind == "fence":
            m = FENCE.match(line)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                end = fence_end(lines, i, m.group(1))
                out.append(TextEntry(i, end, CODE))
                i = end + 1
                continue
            kind = None  # ```like this``` inline: text
        if kind == "atx" or kind == "row":
            out.append(TextEntry(i, i, HEADING if kind == "atx" else ROW))
            i += 1
            continue
        if kind == "item":
            depth = len(line) - len(line.lstrip())
            end = i
            while end + 1 < n and _continues(lines[end + 1], depth):
                end += 1
            out.append(TextEntry(i, end, ITEM, depth))
            i = end + 1
            continue
        # A paragraph: up to a blank line or a line that starts something else.
        end = i
        while end + 1 < n and lines[end + 1].strip() and not _BLOCK_START.match(lines[end + 1]):
            end += 1
        if end == i and end + 1 < n and SETEXT.match(lines[end + 1]):
            out.append(TextEntry(i, end + 1, HEADING))  # a setext heading: its title and its underline
            i = end + 2
            continue
        out.extend(_paragraph(lines, i, end))
        i = end + 1
    return _spaced_turns(lines, out)


def _spaced_turns(lines: list[str], found: list[TextEntry]) -> list[TextEntry]:
    """A log written with a blank line after each turn (so that Markdown shows each as a paragraph)
    is as much a chat log as one turn a line: a run of at least ``_SPACED_RUN`` paragraphs that each
    start like a turn, among which the speakers repeat (at most half as many names as turns), is
    one turn per paragraph. Runs of labels (``Note:``, ``Cause:``, ``Fix:``) stay paragraphs."""
    starts = [e.kind == PARAGRAPH and bool(TURN_LINE.match(lines[e.first])) for e in found]
    if sum(starts) < _SPACED_RUN:
        return found
    out = list(found)
    k = 0
    while k < len(found):
        end = k
        while end < len(found) and starts[end]:
            end += 1
        run = found[k:end]
        if len(run) >= _SPACED_RUN and 2 * len({_speaker(lines[e.first]) for e in run}) <= len(run):
            out[k:end] = [TextEntry(e.first, e.last, TURN) for e in run]
        k = max(end, k + 1)
    return out


_SPACED_RUN = 4
# A turn's head, its stamp and speaker up to the text ("[09:14] Sam: ", "**Sam:** "): what two
# copies of one remark made in two sessions do not share.
TURN_HEAD = line_pattern(
    _LEAD + r"(?:\[[^\]\n]{1,40}\][ \t]*)?" + _STAMP + r"(?:\*\*?|__)?[\w][\w .'’-]{0,30}?(?:\*\*?|__)?"
    r"(?:[ \t]*\([^)\n]{1,20}\))?[ \t]*:(?:\*\*?|__)?[ \t]+"
)
# A turn of fewer words than this after its head ("Sam: No idea", "Lena: Which one?") says nothing
# to be found by alone: it has no chunk of its own (``chunking.turn_chunks``: as one, its speaker's
# name and a question's shape ranked it above the turn that answers, docs/search.md), and its head
# is part of what it says (``snippets.said``).
TURN_MIN_WORDS = 3
WORD = re.compile(r"\w+(?:['’]\w+)*")  # a word, a contraction one word ("I'm")


def word_count(text: str) -> int:
    """How many words ``text`` holds. CJK is written without spaces: a run of it is as many words
    as its bigrams, as the keyword terms read it (``terms.keyword_terms``), at least one (``我不知道``
    three, as "I don't know"; ``好的`` one)."""
    # Here, not at the top: index.terms compiles its patterns as it is imported (18 ms), and the
    # line patterns above serve links.visible in every plain doctor and links command.
    from .terms import CJK_RUN

    runs = CJK_RUN.findall(text)
    return len(WORD.findall(CJK_RUN.sub(" ", text))) + sum(max(1, len(run) - 1) for run in runs)


def turn_text(line: str) -> str:
    """``line`` after its turn head, if it has one."""
    head = TURN_HEAD.match(line)
    return line[head.end():] if head else line


_SPEAKER = line_pattern(_LEAD + r"(?:\[[^\]\n]*\][ \t]*)?" + _STAMP + r"[*_]*([^:(*_\n]*)")


def _speaker(line: str) -> str:
    m = _SPEAKER.match(line)
    return m.group(1).strip().lower() if m else ""


def _continues(line: str, depth: int) -> bool:
    """Whether ``line`` continues the list item above it (indented past its marker, or lazy text)."""
    if not line.strip() or _starts_block(line):
        return False
    return not TURN_LINE.match(line) or len(line) - len(line.lstrip()) > depth


def _starts_block(line: str) -> bool:
    return bool(_BLOCK_START.match(line))


def _paragraph(lines: list[str], first: int, last: int) -> list[TextEntry]:
    """A paragraph, or one entry per turn when it reads as a chat log (most lines start a turn)."""
    if last == first or not TURN_LINE.match(lines[first]):
        return [TextEntry(first, last, PARAGRAPH)]
    turns = [k for k in range(first, last + 1) if TURN_LINE.match(lines[k])]
    if len(turns) < 2 or 2 * len(turns) < last - first + 1:
        return [TextEntry(first, last, PARAGRAPH)]
    bounds = [*turns, last + 1]
    return [TextEntry(a, b - 1, TURN) for a, b in zip(bounds, bounds[1:])]


def is_table_rule(line: str) -> bool:
    """The ``|---|---|`` line under a table's header."""
    return bool(_ROW_RULE.match(line))
