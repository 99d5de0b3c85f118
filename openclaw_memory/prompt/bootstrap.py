"""The startup files in the startup prompt, capped exactly as OpenClaw's bootstrap loader caps them.

OpenClaw (``buildBootstrapContextFiles``) injects each bootstrap file (``AGENTS.md``, ``SOUL.md``,
``IDENTITY.md``, ``USER.md``, ``BOOTSTRAP.md``, ``MEMORY.md``, in that order) with trailing
white space removed, cut to a per-file cap (``bootstrapMaxChars``, 20,000; ``USER.md``
at most 4,000) as 75% head and 25% tail around a marker (``AGENTS.md``: head, a digest of its
policy lines, tail), within a total budget (``bootstrapTotalMaxChars``, 60,000) spent in order;
a missing file costs its ``[MISSING] Expected at: <path>`` line, a file left empty is not
injected, and once less than 64 characters are left no further file is. Lengths are UTF-16
code units. This module is that algorithm, line for line; :func:`prompt_text` is what OpenClaw's
system prompt then makes of an injected file (``sanitizeContextFileContentForPrompt``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..files.jstext import JS_WHITESPACE, js_collapse, js_trim_end, slice_utf16_safe, truncate_utf16_safe, utf16_len

AGENTS_FILE = "AGENTS.md"
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
    missing: bool = False  # not there: ``content`` is OpenClaw's ``[MISSING] Expected at: <path>``

    @property
    def injected_chars(self) -> int:
        return utf16_len(self.content)

    @property
    def truncated(self) -> bool:
        return self.injected_chars < self.raw_chars


def file_limit(name: str, max_chars: int) -> int:
    return min(max_chars, USER_MAX_CHARS) if name.lower() == USER_FILE.lower() else max_chars


@dataclass(frozen=True)
class Missing:
    """A startup file that is not there, at ``path`` (absolute, as OpenClaw names it)."""

    path: str

    @property
    def marker(self) -> str:
        return f"[MISSING] Expected at: {self.path}"


# OpenClaw's AGENTS.md cut (trimAgentsBootstrapContent): 45% head, 15% tail, and up to 35% of the
# cap for a digest of its policy-like lines (headings, list items, lines naming a rule).
_WS = re.escape(JS_WHITESPACE)
# Its patterns are JavaScript's /\b(?:...)\b|(?:...)/iu: there case folding is Unicode's simple one, under
# which only ſ (U+017F, to s) and K (U+212A, the Kelvin sign, to k) fold to an ASCII letter, and those
# two are word characters for \b as well (nothing else beyond ASCII is). So: ASCII case folding, each
# s and k of a keyword matching ſ and K too, \b as lookarounds on that word-character set.
_JS_IU_WORD = "A-Za-z0-9_\u017f\u212a"


def _js_iu_words(*words: str) -> str:
    body = "|".join(re.sub("[sS]", "[sſ]", re.sub("[kK]", "[kK]", re.escape(w))) for w in words)
    return rf"(?<![{_JS_IU_WORD}])(?:{body})(?![{_JS_IU_WORD}])"


_HIGH_WORDS = ("AGENTS.md", "scoped", "required", "must", "never", "do not", "before subtree", "read scoped")
_DIGEST_CANDIDATE = re.compile(
    _js_iu_words(*_HIGH_WORDS, "owner", "security", "secret", "credential", "test", "validation", "command", "commit",
                 "push", "github", "pr") + "|(?:🔴|禁止|嚴禁|不得|絕不|絕對不|切勿|必須|務必|一律|紅線)",
    re.IGNORECASE | re.ASCII)
_DIGEST_HIGH_PRIORITY = re.compile(
    _js_iu_words(*_HIGH_WORDS, "security", "secret", "credential") + "|(?:🔴|禁止|嚴禁|不得|絕不|絕對不|切勿)",
    re.IGNORECASE | re.ASCII)
_DIGEST_LIST_LINE = re.compile(rf"^(?:#{{1,6}}|[{_WS}]*[-*+]|[{_WS}]*[0-9]+[.)])[{_WS}]+[^{_WS}]")
_FENCE = re.compile(rf"^[{_WS}]*(?:`{{3,}}|~{{3,}})")


def _digest_line(line: str) -> str:
    normalized = js_collapse(line)
    return normalized if utf16_len(normalized) <= 240 else truncate_utf16_safe(normalized, 239) + "…"


def _digest(candidates: list[tuple[str, bool]], budget: int) -> tuple[str, int]:
    if budget <= 0:
        return "", 0
    selected: set[int] = set()
    used = 0
    for high in (True, False):
        for i, (text, priority) in enumerate(candidates):
            if (high and not priority) or i in selected:
                continue
            sep = 1 if selected else 0
            if used + sep + utf16_len(text) <= budget:
                selected.add(i)
                used += sep + utf16_len(text)
    return "\n".join(text for i, (text, _p) in enumerate(candidates) if i in selected), max(0, len(candidates) - len(selected))


def trim_agents_content(trimmed: str, max_chars: int) -> str:
    """OpenClaw's ``trimAgentsBootstrapContent``: ``AGENTS.md`` (without trailing white space) over its cap."""
    length = utf16_len(trimmed)
    head = math.floor(max_chars * 0.45)
    tail = math.floor(max_chars * 0.15)
    digest_budget = math.floor(max_chars * 0.35)
    candidates: list[tuple[str, bool]] = []
    if digest_budget > 0:
        prose: str | None = None
        for source in re.split(r"\r?\n", trimmed):
            line = _digest_line(source)
            if not line:
                prose = None
            elif _FENCE.match(line):
                prose = None
            elif _DIGEST_LIST_LINE.match(line) or _DIGEST_CANDIDATE.search(line):
                candidates.append((line if prose is None else f"{prose}\n{line}", bool(_DIGEST_HIGH_PRIORITY.search(line))))
                prose = None
            else:
                prose = line
    digest, omitted = _digest(candidates, digest_budget)

    def render() -> str:
        parts = [
            slice_utf16_safe(trimmed, 0, head),
            f"[...truncated, read {AGENTS_FILE} for full content...]",
            "[Policy digest from AGENTS.md]" if digest else "",
            digest,
            f"[...{omitted} more policy lines omitted...]" if omitted > 0 else "",
            f"…(truncated {AGENTS_FILE}: kept {head}+policy {utf16_len(digest)}+{tail} chars of {length})…",
            slice_utf16_safe(trimmed, -tail) if tail > 0 else "",
        ]
        return "\n".join(p for p in parts if p)

    rendered = render()
    while utf16_len(rendered) > max_chars and (tail > 0 or head > 1 or digest_budget > 0):
        overflow = utf16_len(rendered) - max_chars
        if tail > 0:
            tail = max(0, tail - overflow)
        elif head > 1:
            head = max(1, head - overflow)
        else:
            digest_budget = max(0, digest_budget - overflow)
            digest, omitted = _digest(candidates, digest_budget)
        rendered = render()
    return truncate_utf16_safe(rendered, max_chars) if utf16_len(rendered) > max_chars else rendered


def trim_bootstrap_content(content: str, name: str, max_chars: int) -> tuple[str, bool]:
    """OpenClaw's ``trimBootstrapContent``."""
    trimmed = js_trim_end(content)
    length = utf16_len(trimmed)
    if length <= max_chars:
        return trimmed, False
    if name.lower() == AGENTS_FILE.lower():
        return trim_agents_content(trimmed, max_chars), True

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


def build_bootstrap(files: list[tuple[str, str | Missing]], max_chars: int,
                    total_max_chars: int) -> tuple[list[Injected], list[str]]:
    """The injected files (in order) and OpenClaw's warnings, from ``(name, text)`` pairs
    (``(name, Missing(path))`` for a file that is not there)."""
    remaining = max(1, math.floor(total_max_chars))
    result: list[Injected] = []
    warnings: list[str] = []
    for name, text in files:
        if remaining <= 0:
            break
        if isinstance(text, Missing):
            marker = clamp_to_budget(text.marker, remaining)
            if not marker:
                break
            remaining = max(0, remaining - utf16_len(marker))
            result.append(Injected(name, 0, marker, file_limit(name, max_chars), missing=True))
            continue
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


@dataclass(frozen=True)
class BudgetRow:
    """One startup file in OpenClaw's ``analyzeBootstrapBudget`` (a missing one is in none)."""

    name: str
    raw_chars: int
    injected_chars: int
    limit: int
    causes: tuple[str, ...]


def budget_rows(startup: list[tuple[str, int, Injected | None, bool]], max_chars: int, total_max_chars: int) -> list[BudgetRow]:
    """OpenClaw's ``analyzeBootstrapBudget`` of the startup files.

    ``startup`` holds every loaded startup file in order, as ``(name, raw chars, injected or None,
    missing)``: also those not injected at all; a missing one (raw 0) is injected as its marker,
    which takes budget but counts in no total.
    """
    rows = []
    remaining = total_max_chars  # the budget left before each file
    for name, raw_chars, f, missing in startup:
        injected_chars = f.injected_chars if f else 0
        limit = file_limit(name, max_chars)
        available, remaining = remaining, max(0, remaining - injected_chars)
        if not missing:
            rows.append(BudgetRow(name, raw_chars, injected_chars, limit, cut_causes(raw_chars, injected_chars, limit, available)))
    return rows


def budget_report(analyzed: list[BudgetRow], total_max_chars: int) -> list[str] | None:
    """OpenClaw doctor's "Bootstrap file size" note (``noteBootstrapFileSize``) for the startup files
    as :func:`budget_rows` analyzed them, or None when nothing is near a limit."""
    rows = [(r.name, r.raw_chars, r.injected_chars, r.limit, r.causes) for r in analyzed]
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

    def fixed_user_cap(row: tuple) -> bool:
        return bool(row[0].lower() == USER_FILE.lower() and row[3] == USER_MAX_CHARS)

    user_cap = any(fixed_user_cap(r) and "per-file-limit" in r[4] for r in truncated) or any(fixed_user_cap(r) for r in near)
    per_file_tip = (any("per-file-limit" in r[4] and not fixed_user_cap(r) for r in truncated)
                    or any(not fixed_user_cap(r) for r in near))
    total_tip = any("total-limit" in r[4] for r in truncated) or total_near
    if per_file_tip or total_tip or user_cap:
        lines.append("")
    if user_cap:
        lines.append(f"USER.md has a fixed {USER_MAX_CHARS:,}-character bootstrap cap; keep it compact.")
    if per_file_tip:
        lines.append("- Tip: tune `agents.entries.*.bootstrapMaxChars` for this agent, or `agents.defaults.bootstrapMaxChars` "
                     "as fallback, for per-file limits.")
    if total_tip:
        lines.append("- Tip: tune `agents.entries.*.bootstrapTotalMaxChars` for this agent, or "
                     "`agents.defaults.bootstrapTotalMaxChars` as fallback, for total-budget limits.")
    return lines


# What OpenClaw's system prompt does to an injected file's text (sanitizeContextFileContentForPrompt),
# after the caps: its default heartbeat prompt, quoted in a file, is deleted, then runs of three or
# more line feeds become two.
_HEARTBEAT_BLOCK = re.compile(
    r"Default heartbeat prompt:\r?\n`(?:Read HEARTBEAT\.md if it exists|Follow the heartbeat monitor scratch context "
    r"when provided\.)[^`\r\n]*HEARTBEAT_OK\.`")
_LINE_FEEDS = re.compile(r"\n{3,}")


def prompt_text(content: str) -> str:
    """An injected file's text as OpenClaw's model reads it in the system prompt."""
    return _LINE_FEEDS.sub("\n\n", _HEARTBEAT_BLOCK.sub("", content))
