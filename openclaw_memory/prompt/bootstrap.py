"""The root memory files in the startup prompt, capped exactly as OpenClaw's bootstrap loader caps them.

OpenClaw (``buildBootstrapContextFiles``) injects each bootstrap file with trailing
white space removed, cut to a per-file cap (``bootstrapMaxChars``, 20,000; ``USER.md``
at most 4,000) as 75% head and 25% tail around a marker, within a total budget
(``bootstrapTotalMaxChars``, 60,000) spent in order; a file left empty is not
injected. Lengths are UTF-16 code units. This module is that algorithm, line for line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..files.jstext import js_trim_end, slice_utf16_safe, truncate_utf16_safe, utf16_len

USER_FILE = "USER.md"
USER_MAX_CHARS = 4_000
MIN_FILE_BUDGET_CHARS = 64
HEAD_RATIO = 0.75
TAIL_RATIO = 0.25
MIN_TRIMMED_CONTENT_CHARS = 16
NEAR_LIMIT_RATIO = 0.85


@dataclass(frozen=True)
class Injected:
    """One bootstrap file as the agent sees it."""

    name: str
    raw_chars: int  # UTF-16 length of the text without trailing white space
    content: str  # what is injected
    limit: int  # the per-file cap that applied to it
    causes: tuple[str, ...] = ()  # "per-file-limit", "total-limit" when cut

    @property
    def injected_chars(self) -> int:
        return utf16_len(self.content)

    @property
    def truncated(self) -> bool:
        return self.injected_chars < self.raw_chars


def file_limit(name: str, max_chars: int) -> int:
    return min(max_chars, USER_MAX_CHARS) if name.lower() == USER_FILE.lower() else max_chars


def trim_bootstrap_content(content: str, name: str, max_chars: int) -> tuple[str, bool]:
    """OpenClaw's ``trimBootstrapContent`` (for every file but ``AGENTS.md``, which this product never injects)."""
    trimmed = js_trim_end(content)
    length = utf16_len(trimmed)
    if length <= max_chars:
        return trimmed, False

    def full_marker(head: int, tail: int) -> str:
        return "\n".join(["", f"[...truncated, read {name} for full content...]",
                          f"…(truncated {name}: kept {head}+{tail} chars of {length})…", ""])

    def compact_marker(head: int, tail: int) -> str:
        return f"[…truncated {head}+{tail}/{length}]"

    def separators(head: int, tail: int, marker: str) -> int:
        return (int(head > 0) + int(tail > 0)) if "\n" in marker else 0

    probe = full_marker(0, 0)
    template = full_marker if max_chars - utf16_len(probe) - separators(1, 1, probe) >= MIN_TRIMMED_CONTENT_CHARS else compact_marker
    head = tail = 0
    marker = template(head, tail)
    for _ in range(3):
        budget = max(0, max_chars - utf16_len(marker) - separators(head, tail, marker))
        next_head = math.floor(budget * HEAD_RATIO)
        next_tail = math.floor(budget * TAIL_RATIO)
        next_marker = template(next_head, next_tail)
        if next_head == head and next_tail == tail and utf16_len(next_marker) == utf16_len(marker):
            break
        head, tail, marker = next_head, next_tail, next_marker
    rendered = head + tail + utf16_len(marker) + separators(head, tail, marker)
    while rendered > max_chars and (tail > 0 or head > 0):
        overflow = rendered - max_chars
        if tail > 0:
            tail = max(0, tail - overflow)
        else:
            head = max(0, head - overflow)
        marker = template(head, tail)
        rendered = head + tail + utf16_len(marker) + separators(head, tail, marker)
    if head == 0 and tail == 0 and length > 0:
        single = template(1, 0)
        if 1 + utf16_len(single) + separators(1, 0, single) <= max_chars:
            head, marker = 1, single
    head_text = slice_utf16_safe(trimmed, 0, head)
    tail_text = slice_utf16_safe(trimmed, -tail) if tail > 0 else ""
    joiner = "\n" if "\n" in marker else ""
    out = joiner.join(part for part in (head_text, marker, tail_text) if part)
    return (truncate_utf16_safe(out, max_chars) if utf16_len(out) > max_chars else out), True


def cut_causes(raw: int, injected: int, limit: int, remaining: int) -> tuple[str, ...]:
    """Why a file lost text (OpenClaw's ``analyzeBootstrapBudget``): over its own cap, and/or over
    what was left of the total when its turn came."""
    if injected >= raw:
        return ()
    causes = ("per-file-limit",) if raw > limit else ()
    return causes + (("total-limit",) if remaining < limit and raw > remaining else ())


def clamp_to_budget(content: str, budget: int) -> str:
    if budget <= 0:
        return ""
    if utf16_len(content) <= budget:
        return content
    if budget <= 3:
        return truncate_utf16_safe(content, budget)
    return truncate_utf16_safe(content, budget - 1) + "…"


def build_bootstrap(files: list[tuple[str, str]], max_chars: int, total_max_chars: int) -> tuple[list[Injected], list[str]]:
    """The injected files (in order) and OpenClaw's warnings, from ``(name, text)`` pairs."""
    remaining = max(1, math.floor(total_max_chars))
    result: list[Injected] = []
    warnings: list[str] = []
    for name, text in files:
        if remaining <= 0:
            break
        if remaining < MIN_FILE_BUDGET_CHARS:
            warnings.append(f"remaining bootstrap budget is {remaining} chars (<{MIN_FILE_BUDGET_CHARS}); skipping additional bootstrap files")
            break
        limit = file_limit(name, max_chars)
        file_max = max(1, min(limit, remaining))
        trimmed, cut = trim_bootstrap_content(text, name, file_max)
        within = clamp_to_budget(trimmed, remaining)
        if not within:
            continue
        raw = utf16_len(js_trim_end(text))
        if cut or utf16_len(within) < utf16_len(trimmed):
            warnings.append(f"workspace bootstrap file {name} is {raw} chars (limit {file_max}); truncating in injected context")
        result.append(Injected(name, raw, within, limit, cut_causes(raw, utf16_len(within), limit, remaining)))
        remaining = max(0, remaining - utf16_len(within))
    return result, warnings


def _int(value: int) -> str:
    return f"{max(0, math.floor(value)):,}"


def _percent(numerator: int, denominator: int) -> str:
    if denominator <= 0:
        return "0%"
    # JavaScript's Math.round: halves round up.
    return f"{min(100, max(0, math.floor(numerator / denominator * 100 + 0.5)))}%"


def budget_report(injected: list[Injected], raw: dict[str, int], max_chars: int, total_max_chars: int) -> list[str] | None:
    """OpenClaw doctor's "Bootstrap file size" note for these files, or None when nothing is near a limit.

    ``raw`` holds every loaded file's raw length, also those that were not injected at all.
    """
    by_name = {f.name: f for f in injected}
    rows = []
    remaining = total_max_chars  # OpenClaw's analyzeBootstrapBudget: the budget left before each file
    for name, raw_chars in raw.items():
        f = by_name.get(name)
        injected_chars = f.injected_chars if f else 0
        limit = file_limit(name, max_chars)
        causes = cut_causes(raw_chars, injected_chars, limit, remaining)
        remaining = max(0, remaining - injected_chars)
        rows.append((name, raw_chars, injected_chars, limit, causes))
    truncated = [r for r in rows if r[2] < r[1]]
    near = [r for r in rows if r[1] >= math.ceil(r[3] * NEAR_LIMIT_RATIO)]
    total_injected = sum(r[2] for r in rows)
    total_near = total_injected >= math.ceil(total_max_chars * NEAR_LIMIT_RATIO)
    if not truncated and not near and not total_near:
        return None
    lines: list[str] = []
    if truncated:
        lines.append("Workspace bootstrap files exceed limits and will be truncated:")
        for name, raw_chars, injected_chars, _limit, causes in truncated:
            words = ", ".join("max/file" if c == "per-file-limit" else "max/total" for c in causes) or "unknown"
            lines.append(f"- {name}: {_int(raw_chars)} raw / {_int(injected_chars)} injected "
                         f"({_percent(raw_chars - injected_chars, raw_chars)} truncated; {words})")
    else:
        lines.append("Workspace bootstrap files are near configured limits:")
    for name, raw_chars, injected_chars, limit, _causes in near:
        if injected_chars >= raw_chars:
            lines.append(f"- {name}: {_int(raw_chars)} chars ({_percent(raw_chars, limit)} of max/file {_int(limit)})")
    lines.append(f"Total bootstrap injected chars: {_int(total_injected)} ({_percent(total_injected, total_max_chars)} of max/total {_int(total_max_chars)}).")
    lines.append(f"Total bootstrap raw chars (before truncation): {_int(sum(r[1] for r in rows))}.")
    return lines
