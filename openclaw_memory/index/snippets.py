"""The matching passage of a chunk: at most 700 characters around its best lines.

OpenClaw users saw the start of the file instead of the passage that matched
(#47730). Here the snippet is a window of whole lines inside the chunk, centred
on the line with the most query-term hits, grown line by line on both sides
while it fits; a single line longer than the budget is cut around its first hit.
A window that would open inside a fenced code block starts at the fence's line
instead (a window deep inside a long block is shown after the block's fence
line, and cited from it), so the snippet never shows code without its fence. The
passage knows its exact lines: the citation names them, and reading the citation
gives them back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .terms import hit_count

MAX_SNIPPET = 700
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


@dataclass(frozen=True)
class Passage:
    text: str
    start_line: int  # 1-based, inclusive, in the file
    end_line: int


def make_passage(
    body: str, first_line: int, patterns: list[re.Pattern], limit: int = MAX_SNIPPET, fence: str = "", fence_line: int = 0
) -> Passage:
    """The snippet of a chunk whose text ``body`` starts at file line ``first_line``, with its lines.

    ``fence``/``fence_line``: the opening fence (text, file line) of the code block the chunk
    starts inside, when it does.
    """
    lines = body.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return Passage("", first_line, first_line)
    if fence and 0 < fence_line < first_line:
        # The block's fence is before the chunk: it goes in front, as context for the window.
        lo, hi, text = _window([fence, *lines], patterns, limit, first=1)
        return Passage(text, fence_line if lo == 0 else first_line + lo - 1, first_line + hi - 1)
    lo, hi, text = _window(lines, patterns, limit)
    return Passage(text, first_line + lo, first_line + hi)


def _fence_openers(lines: list[str]) -> list[int | None]:
    """Per line, the index of the fence line that opened the code block it is inside (None: outside)."""
    out: list[int | None] = []
    opener: int | None = None
    marker = ""
    for i, line in enumerate(lines):
        m = _FENCE.match(line)
        if opener is None:
            out.append(None)
            if m:
                opener, marker = i, m.group(1)
        else:
            if m and m.group(1)[0] == marker[0] and len(m.group(1)) >= len(marker) and not line.strip()[len(m.group(1)):].strip():
                out.append(opener)
                opener = None
            else:
                out.append(opener)
    return out


def _window(lines: list[str], patterns: list[re.Pattern], limit: int, first: int = 0) -> tuple[int, int, str]:
    """(first index, last index, text) of the window; ``first``: lines before it are context only."""
    hits = [hit_count(line.lower(), patterns) if i >= first else 0 for i, line in enumerate(lines)]
    best = max(range(first, len(lines)), key=lambda i: (hits[i], -i)) if any(hits) else _first_text_line(lines[first:]) + first
    if len(lines[best]) > limit:
        return best, best, _cut_line(lines[best], patterns, limit)
    lo = hi = best
    size = len(lines[best])
    grew = True
    while grew:
        grew = False
        # Prefer the side with more hits, then below (the text that follows a heading).
        sides = sorted(
            [s for s in ("up", "down") if (s == "up" and lo > 0) or (s == "down" and hi < len(lines) - 1)],
            key=lambda s: -(hits[lo - 1] if s == "up" else hits[hi + 1]),
        )
        for side in sides:
            i = lo - 1 if side == "up" else hi + 1
            if size + 1 + len(lines[i]) > limit:
                continue
            size += 1 + len(lines[i])
            lo, hi = (i, hi) if side == "up" else (lo, i)
            grew = True
    opener = _fence_openers(lines)[lo]
    if opener is not None:
        if sum(len(line) + 1 for line in lines[opener : hi + 1]) - 1 <= limit:
            lo = opener
        else:
            # Deep inside a long code block: its fence line, then the window; cited from the fence.
            size = len(lines[opener]) + 1 + sum(len(line) + 1 for line in lines[lo : hi + 1]) - 1
            while hi > max(lo, best) and size > limit:
                size -= len(lines[hi]) + 1
                hi -= 1
            while lo < best and size > limit:
                size -= len(lines[lo]) + 1
                lo += 1
            return opener, hi, "\n".join([lines[opener], *lines[lo : hi + 1]])
    return lo, hi, "\n".join(lines[lo : hi + 1])


def _first_text_line(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if line.strip():
            return i
    return 0


def _cut_line(line: str, patterns: list[re.Pattern], limit: int) -> str:
    lowered = line.lower()
    starts = [m.start() for p in patterns for m in [p.search(lowered)] if m]
    centre = min(starts) if starts else 0
    start = max(0, min(centre - limit // 2, len(line) - limit))
    end = start + limit
    # Never split a surrogate pair or a combining mark from its base character.
    while start > 0 and _is_mark(line[start]):
        start -= 1
    while end < len(line) and _is_mark(line[end]) and end - start > 1:
        end -= 1
    return line[start:end]


def _is_mark(ch: str) -> bool:
    import unicodedata

    return unicodedata.category(ch) in ("Mn", "Mc", "Me") or "\udc00" <= ch <= "\udfff"
