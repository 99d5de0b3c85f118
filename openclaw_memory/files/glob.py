"""The ``pattern`` of an extra memory path, matched as OpenClaw matches it.

OpenClaw filters an extra folder with Node's ``path.posix.matchesGlob`` (minimatch:
no negation, no comments, case-sensitive, dot files only by a literal dot). This
is that matcher for the syntax it documents: ``*``, ``?``, ``**`` as a whole
segment, ``[...]`` classes (``!``/``^`` negation, POSIX ``[:alpha:]`` names),
``{a,b}`` and ``{1..3}`` braces, and the ``@( ) ?( ) *( ) +( )`` extglobs.
"""

from __future__ import annotations

import functools
import re

_POSIX_CLASSES = {
    "alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "ascii": "\\x00-\\x7f", "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "\\x21-\\x7e", "lower": "a-z",
    "print": "\\x20-\\x7e", "punct": "!-/:-@\\[-`{-~", "space": " \\t\\r\\n\\v\\f",
    "upper": "A-Z", "word": "\\w", "xdigit": "A-Fa-f0-9",
}
_RANGE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")


def expand_braces(pattern: str) -> list[str]:
    """Brace expansion as minimatch does it (``a{b,c}d`` -> ``abd``, ``acd``)."""
    depth = 0
    start = -1
    for i, ch in enumerate(pattern):
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                body = pattern[start + 1:i]
                pre, post = pattern[:start], pattern[i + 1:]
                options = _brace_options(body)
                if options is None:
                    # Not a set: keep the braces literally, expand what follows.
                    return [pre + "{" + body + "}" + rest for rest in expand_braces(post)]
                out: list[str] = []
                for option in options:
                    for rest in expand_braces(post):
                        out.extend(expand_braces(pre + option + rest))
                return out
    return [pattern]


def _brace_options(body: str) -> list[str] | None:
    m = _RANGE.match(body)
    if m:
        a, b, step = m.group(1), m.group(2), m.group(3)
        if a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
            x, y = int(a), int(b)
            inc = abs(int(step)) if step else 1
            inc = inc or 1
            seq = range(x, y + 1, inc) if x <= y else range(x, y - 1, -inc)
            width = max(len(a), len(b)) if (a.lstrip("-").startswith("0") and len(a.lstrip("-")) > 1) or (
                b.lstrip("-").startswith("0") and len(b.lstrip("-")) > 1) else 0
            return [str(n).zfill(width) if width else str(n) for n in seq]
        if not a.isdigit() and not b.isdigit():
            x, y = ord(a), ord(b)
            seq = range(x, y + 1) if x <= y else range(x, y - 1, -1)
            return [chr(c) for c in seq]
        return None
    parts = _split_top_level(body, ",", "{", "}")
    return parts if len(parts) > 1 else None


def _class(segment: str, i: int) -> tuple[str, int] | None:
    """Translate the class starting at ``segment[i] == '['``; None when it does not close."""
    j = i + 1
    negate = j < len(segment) and segment[j] in "!^"
    if negate:
        j += 1
    items = ""
    first = True
    while j < len(segment):
        ch = segment[j]
        if ch == "]" and not first:
            body = items
            return (f"[^{body}]" if negate else f"[{body}]"), j + 1
        first = False
        if ch == "[" and segment.startswith("[:", j):
            end = segment.find(":]", j + 2)
            if end > 0 and segment[j + 2:end] in _POSIX_CLASSES:
                items += _POSIX_CLASSES[segment[j + 2:end]]
                j = end + 2
                continue
        if ch in "\\^]-" and not (ch == "-" and items and j + 1 < len(segment) and segment[j + 1] != "]"):
            items += "\\" + ch
        else:
            items += ch
        j += 1
    return None


def _segment_regex(segment: str) -> str:
    out = ""
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch in "@?*+!" and i + 1 < len(segment) and segment[i + 1] == "(" and ch != "!":
            close = _matching_paren(segment, i + 1)
            if close is not None:
                alts = "|".join(_segment_regex(a) for a in _split_top_level(segment[i + 2:close], "|", "(", ")"))
                quant = {"@": "", "?": "?", "*": "*", "+": "+"}[ch]
                out += f"(?:{alts}){quant}"
                i = close + 1
                continue
        if ch == "*":
            out += "[^/]*"
            while i + 1 < len(segment) and segment[i + 1] == "*":
                i += 1
        elif ch == "?":
            out += "[^/]"
        elif ch == "[":
            translated = _class(segment, i)
            if translated is None:
                out += re.escape(ch)
            else:
                out += translated[0]
                i = translated[1]
                continue
        else:
            out += re.escape(ch)
        i += 1
    return out


def _matching_paren(text: str, open_at: int) -> int | None:
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return None


def _split_top_level(body: str, sep: str, opening: str, closing: str) -> list[str]:
    """``body`` cut at each ``sep`` outside nested ``opening``/``closing`` pairs."""
    parts: list[str] = []
    depth = 0
    current = ""
    for ch in body:
        if ch == opening:
            depth += 1
        elif ch == closing:
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return parts


class _Globstar:
    """``**``: any number of folders (none starting with a dot)."""


_GLOBSTAR = _Globstar()
_Segment = _Globstar | tuple["re.Pattern[str]", bool]


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> tuple[tuple[_Segment, ...], ...]:
    """Each brace alternative as a list of segments: ``GLOBSTAR`` or (regex, dot-allowed)."""
    compiled = []
    for alt in expand_braces(pattern):
        segments: list[_Segment] = []
        for seg in alt.split("/"):
            if seg == "**":
                if not segments or segments[-1] is not _GLOBSTAR:
                    segments.append(_GLOBSTAR)
            else:
                segments.append((re.compile(_segment_regex(seg) + r"\Z", re.DOTALL), seg.startswith(".")))
        compiled.append(tuple(segments))
    return tuple(compiled)


def _match(segments: tuple[_Segment, ...], parts: list[str]) -> bool:
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if isinstance(head, _Globstar):
        for k in range(len(parts) + 1):
            if any(p.startswith(".") for p in parts[:k]):
                break
            if _match(rest, parts[k:]):
                return True
        return False
    if not parts:
        return False
    regex, literal_dot = head
    part = parts[0]
    if part.startswith(".") and not literal_dot:
        return False
    return bool(regex.match(part)) and _match(rest, parts[1:])


def matches_glob(relative: str, pattern: str) -> bool:
    """True when the ``/``-separated ``relative`` path matches ``pattern``."""
    parts = relative.split("/")
    return any(_match(segments, parts) for segments in _compile(pattern))
