"""The ``pattern`` of an extra memory path, matched as OpenClaw matches it.

OpenClaw filters an extra folder with Node's ``path.posix.matchesGlob`` (minimatch:
no negation, no comments, case-sensitive, dot files only by a literal dot). This
is that matcher for the syntax it documents: ``*``, ``?``, ``**`` as a whole
segment (at the end, one part or more), ``[...]`` classes (``!``/``^`` negation,
POSIX ``[:alpha:]`` names as Unicode categories), ``{a,b}`` and ``{1..3}`` braces,
and the ``@( ) ?( ) *( ) +( ) !( )`` extglobs.
"""

from __future__ import annotations

import functools
import re

# minimatch's POSIX classes: Unicode general categories (its regex runs with the u flag), a
# third item True where minimatch matches the characters NOT in them ([:graph:]); [:print:] is
# \p{C} there, and so here.
_POSIX_CLASSES = {
    "alnum": (("L", "Nl", "Nd"), False), "alpha": (("L", "Nl"), False), "ascii": ("\\x00-\\x7f", False),
    "blank": (("Zs", "\t"), False), "cntrl": (("Cc",), False), "digit": (("Nd",), False),
    "graph": (("Z", "C"), True), "lower": (("Ll",), False), "print": (("C",), False), "punct": (("P",), False),
    "space": (("Z", "\t", "\r", "\n", "\v", "\f"), False), "upper": (("Lu",), False),
    "word": (("L", "Nl", "Nd", "Pc"), False), "xdigit": ("A-Fa-f0-9", False),
}
_CONTROL_ESCAPES = {"\t": "\\t", "\r": "\\r", "\n": "\\n", "\v": "\\v", "\f": "\\f"}


@functools.cache
def _categories(names: tuple[str, ...]) -> str:
    """A regex class body of every code point whose Unicode category is (or starts with) one of
    ``names`` (Python's re has no \\p{...}); built once per class, when a pattern uses it."""
    import sys
    import unicodedata

    out: list[str] = []
    start = None
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and unicodedata.category(chr(cp)).startswith(names)
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append(f"\\U{start:08x}" if start == cp - 1 else f"\\U{start:08x}-\\U{cp - 1:08x}")
            start = None
    return "".join(out)


def _posix_class(name: str) -> tuple[str, bool]:
    """(class body, negated) of a POSIX class as minimatch reads it."""
    spec, negated = _POSIX_CLASSES[name]
    if isinstance(spec, str):
        return spec, negated
    categories = tuple(c for c in spec if c not in _CONTROL_ESCAPES)
    return _categories(categories) + "".join(_CONTROL_ESCAPES[c] for c in spec if c in _CONTROL_ESCAPES), negated


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
    negs = ""  # classes minimatch matches by what they leave out ([:graph:])
    first = True
    while j < len(segment):
        ch = segment[j]
        if ch == "]" and not first:
            ranges = (f"[^{items}]" if negate else f"[{items}]") if items else ""
            outside = (f"[{negs}]" if negate else f"[^{negs}]") if negs else ""
            return (f"(?:{ranges}|{outside})" if ranges and outside else ranges or outside or "(?!)"), j + 1
        first = False
        if ch == "[" and segment.startswith("[:", j):
            end = segment.find(":]", j + 2)
            if end > 0 and segment[j + 2:end] in _POSIX_CLASSES:
                body, negated = _posix_class(segment[j + 2:end])
                if negated:
                    negs += body
                else:
                    items += body
                j = end + 2
                continue
        if ch in "\\^]-[&~|" and not (ch == "-" and items and j + 1 < len(segment) and segment[j + 1] != "]"):
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
        if ch in "@?*+!" and i + 1 < len(segment) and segment[i + 1] == "(":
            close = _matching_paren(segment, i + 1)
            if close is not None:
                alts = "|".join(_segment_regex(a) for a in _split_top_level(segment[i + 2:close], "|", "(", ")"))
                if ch == "!":
                    # minimatch: anything but an alternative followed by the rest of the segment
                    # ('!(a)' takes 'a.md', not 'a'); '!()' must take something.
                    rest = _segment_regex(segment[close + 1:])
                    out += f"(?:(?!(?:{alts}){rest}\\Z)[^/]*?)" if alts else "[^/]+?"
                else:
                    quant = {"@": "", "?": "?", "*": "*", "+": "+"}[ch]
                    out += f"(?:{alts}){quant}"
                i = close + 1
                continue
        if ch == "*":
            out += "[^/]*"
            # '**' inside a segment is one '*', but a '*' that opens '*( )' is that extglob.
            while i + 1 < len(segment) and segment[i + 1] == "*" and not segment.startswith("(", i + 2):
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


def _dot_allowed(segment: str) -> bool:
    """Whether the segment may match a name starting with a dot: when it starts with one, and (a
    quirk of minimatch, whose no-dot guard looks at the regex's first character) when it starts
    with an @( ) ?( ) *( ) +( ) extglob: '*(x)*.md' takes '.a.md', '*.md' does not."""
    if segment.startswith("."):
        return True
    return segment[:1] in "@?*+" and segment[1:2] == "(" and _matching_paren(segment, 1) is not None


def _simplified(parts: list[str]) -> list[str]:
    """minimatch's own rewriting of a pattern's parts (optimizationLevel 2, as Node runs it):
    an empty or '.' part inside is dropped ('x//a.md', 'x/./a.md' are 'x/a.md'), and a part
    followed by '..' goes with it ('x/../a.md' is 'a.md'), until nothing changes."""
    parts = list(parts)
    changed = True
    while changed:
        changed = False
        i = 1
        while i < len(parts) - 1:
            if parts[i] in (".", "") and not (i == 1 and parts[0] == ""):
                del parts[i]
                changed = True
            else:
                i += 1
        if parts[:1] == ["."] and len(parts) == 2 and parts[1] in (".", ""):
            parts.pop()
            changed = True
        i = 1
        while i < len(parts):
            if parts[i] == ".." and parts[i - 1] not in ("", ".", "..", "**"):
                del parts[i - 1:i + 1]
                changed = True
                i = max(i - 2, 1)
            else:
                i += 1
    return parts or [""]


@functools.lru_cache(maxsize=256)
def _compile(pattern: str) -> tuple[tuple[_Segment, ...], ...]:
    """Each brace alternative as a list of segments: ``GLOBSTAR`` or (regex, dot-allowed)."""
    compiled = []
    for alt in expand_braces(pattern):
        segments: list[_Segment] = []
        for seg in _simplified(alt.split("/")):
            if seg == "**":
                if not segments or segments[-1] is not _GLOBSTAR:
                    segments.append(_GLOBSTAR)
            else:
                segments.append((re.compile(_segment_regex(seg) + r"\Z", re.DOTALL), _dot_allowed(seg)))
        compiled.append(tuple(segments))
    return tuple(compiled)


def _match(segments: tuple[_Segment, ...], parts: list[str]) -> bool:
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if isinstance(head, _Globstar):
        # A ** that ends the pattern takes at least one part: 'sub/**' is what is below sub, not sub.
        for k in range(0 if rest else 1, len(parts) + 1):
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
