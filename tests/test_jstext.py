"""Text measured, cut, trimmed and sorted as OpenClaw (JavaScript) does; extra-path globs as minimatch."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openclaw_memory.files.glob import expand_braces, matches_glob
from openclaw_memory.files.jstext import js_trim, js_trim_end, slice_utf16_safe, truncate_utf16_safe, utf16_len, utf16_sort_key


def test_utf16_length_and_surrogate_safe_cuts():
    assert utf16_len("a😀") == 3 and utf16_len("\U00010348\uffff") == 3
    assert truncate_utf16_safe("ab😀cd", 3) == "ab"  # never half a pair
    assert truncate_utf16_safe("ab😀cd", 4) == "ab😀"
    assert slice_utf16_safe("ab😀cd", -3) == "cd"  # the tail does not start inside the pair
    assert slice_utf16_safe("ab😀cd", -4) == "😀cd"


def test_javascript_trim_is_not_pythons_strip():
    assert js_trim("\ufeff\u3000 a \u2028") == "a"
    assert js_trim_end("a\x1c") == "a\x1c"  # Python's strip would remove U+001C; JavaScript keeps it
    assert js_trim("\x85a") == "\x85a"


def test_sort_by_utf16_units():
    names = ["memory/\ufb01.md", "memory/😀.md", "memory/a.md", "memory/a-b.md", "memory/a/z.md"]
    assert sorted(names, key=utf16_sort_key) == ["memory/a-b.md", "memory/a.md", "memory/a/z.md", "memory/😀.md", "memory/\ufb01.md"]


@pytest.mark.parametrize("path, pattern, expected", [
    ("a.md", "*.md", True), ("sub/a.md", "*.md", False), ("sub/a.md", "**/*.md", True), ("a.md", "**/*.md", True),
    (".h.md", "*.md", False), (".h/a.md", "**/*.md", False), (".h/a.md", ".h/*.md", True),
    ("a1.md", "{a,b}*.md", True), ("c1.md", "{a,b}*.md", False), ("b.md", "[ab].md", True), ("a.md", "[!a].md", False),
    ("x3.md", "x{1..3}.md", True), ("a.md", "@(a|b).md", True), ("ab.md", "+(a|b).md", True), ("A.md", "[[:upper:]].md", True),
])
def test_patterns(path, pattern, expected):
    assert matches_glob(path, pattern) is expected


# What minimatch (Node's path.matchesGlob, as OpenClaw 2026.9.6 runs it) answers, where this matcher
# answered otherwise: the negative extglob, a trailing ** (one part or more), POSIX classes over
# Unicode, the pattern's own simplification, '**(' and an extglob's hold on dot files.
@pytest.mark.parametrize("path, pattern, expected", [
    ("a.md", "!(a)", True), ("a", "!(a)", False), ("b.md", "!(a).md", True), ("a.md", "!(a).md", False),
    ("aa.md", "a[ab]!(a)", True), ("b.md", "b!(a)[^a]", True),
    ("sub", "sub/**", False), ("sub/a.md", "sub/**", True), ("x.md", "*.md/**", False),
    ("é.md", "[[:alpha:]]*", True), ("1.md", "[[:alpha:]]*", False), ("٣.md", "[[:digit:]].md", True),
    ("x/a.md", "x//a.md", True), ("x/a.md", "x/./a.md", True), ("a.md", "x/../a.md", True), ("x/a.md", "**/./a.md", True),
    ("b.md", "**(x)[^a]", True), ("a", "**(x)[^a]", False),
    (".a.md", "*(x)*.md", True), (".a.md", "?(a|b)*", True), (".a.md", "*.md", False), (".a.md", "!(x)*", False),
])
def test_patterns_as_minimatch_answers(path, pattern, expected):
    assert matches_glob(path, pattern) is expected


def test_brace_expansion():
    assert expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert expand_braces("{x}") == ["{x}"]


def _units(text: str) -> list[str]:
    """The reference: one item per UTF-16 code unit, astral characters as their two surrogates."""
    return list(utf16_sort_key(text))


def _joined(units: list[str]) -> str:
    return "".join(units).encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


@given(st.text(alphabet=st.sampled_from(["a", " ", "é", "绿", "🎉", "𝄞", "\ud800", "\udc80", "\uffff"]), max_size=14),
       st.integers(-16, 16), st.one_of(st.none(), st.integers(-16, 16)))
def test_utf16_slices_match_a_per_unit_reference(text, start, end):
    units = _units(text)
    assert utf16_len(text) == len(units)
    n = len(units)
    frm = max(n + start, 0) if start < 0 else min(start, n)
    to = n if end is None else (max(n + end, 0) if end < 0 else min(end, n))
    if to <= frm:
        assert slice_utf16_safe(text, start, end) == ""
        return
    if max(text, default="a") < "\U00010000":  # one unit per character: a plain slice
        assert slice_utf16_safe(text, start, end) == text[frm:to]
        return
    if 0 < frm < n and "\udc00" <= units[frm] <= "\udfff" and "\ud800" <= units[frm - 1] <= "\udbff":
        frm += 1  # a cut never leaves half a pair
    if 0 < to < n and "\ud800" <= units[to - 1] <= "\udbff" and "\udc00" <= units[to] <= "\udfff":
        to -= 1
    assert slice_utf16_safe(text, start, end) == (_joined(units[frm:to]) if to > frm else "")
