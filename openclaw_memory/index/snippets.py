"""The matching passage of a chunk: at most 700 characters around its best lines.

OpenClaw users saw the start of the file instead of the passage that matched
(#47730). Here the snippet is a window of whole lines inside the chunk, centred
on the line with the most query-term hits, grown line by line on both sides
while it fits; a single line longer than the budget is cut around its first hit.
"""

from __future__ import annotations

import re

from .terms import hit_count

MAX_SNIPPET = 700


def make_snippet(body: str, patterns: list[re.Pattern], limit: int = MAX_SNIPPET) -> str:
    lines = body.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return ""
    hits = [hit_count(line.lower(), patterns) for line in lines]
    best = max(range(len(lines)), key=lambda i: (hits[i], -i)) if any(hits) else _first_text_line(lines)
    if len(lines[best]) > limit:
        return _cut_line(lines[best], patterns, limit)
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
    return "\n".join(lines[lo : hi + 1]).strip("\n")


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
