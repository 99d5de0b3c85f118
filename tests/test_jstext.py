"""Text measured, cut, trimmed and sorted as OpenClaw (JavaScript) does; extra-path globs as minimatch."""

from __future__ import annotations

import pytest

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


def test_brace_expansion():
    assert expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert expand_braces("{x}") == ["{x}"]
