"""The snippet of a line longer than the snippet limit is a piece of it cut around its hit: both
ends of the cut fall between graphemes (UAX #29), as the chunker cuts an over-long line. A cut
that backed off only over combining marks opened a snippet of flags with a lone regional indicator
(every flag after it misread: 🇩🇪🇫🇷 read as 🇪🇫 ...) and a line of families with a bare ZWJ."""

from __future__ import annotations

import pytest
import regex

from conftest import write
from openclaw_memory.index.snippets import MAX_SNIPPET, make_passage
from openclaw_memory.index.terms import query_terms, term_patterns

GRAPHEME = regex.compile(r"\X", regex.DOTALL)

UNITS = {
    "flags": "\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7",  # 🇩🇪🇫🇷: regional indicators, paired from the run's start
    "one flag": "\U0001f1ef\U0001f1f5",  # 🇯🇵
    "family": "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466",  # 👨‍👩‍👧‍👦: ZWJ joins
    "skin tone": "\U0001f44d\U0001f3fd",  # 👍🏽: an emoji modifier
    "rainbow flag": "\U0001f3f3\ufe0f\u200d\U0001f308",  # 🏳️‍🌈: a variation selector and a ZWJ
    "scotland": "\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",  # 🏴󠁧󠁢󠁳󠁣󠁴󠁿: tag characters
    "ideographic variant": "\u845b\U000e0100",  # 葛󠄀: a variation selector of the supplement
    "marks": "e\u0301\u0302",
    "hangul jamo": "\u1100\u1161\u11a8",  # 각, decomposed
}


@pytest.mark.parametrize("unit", list(UNITS.values()), ids=list(UNITS))
def test_an_over_long_line_is_cut_between_graphemes_at_both_ends(unit):
    patterns = term_patterns(query_terms("numbat"))
    # Padding on either side of the hit moves the window's start and end through every position
    # inside a grapheme of the text around it.
    run = unit * (MAX_SNIPPET // len(unit))  # longer than half the window on either side
    for before in range(len(unit) + 1):
        for after in range(len(unit) + 1):
            line = run + "x" * before + " numbat " + "y" * after + run
            passage = make_passage(line, 7, patterns)
            start = line.index(passage.text)
            end = start + len(passage.text)
            bounds = {0} | {m.end() for m in GRAPHEME.finditer(line)}
            assert start in bounds and end in bounds, (before, after, ascii(passage.text[:4]), ascii(passage.text[-4:]))
            assert "numbat" in passage.text and len(passage.text) <= MAX_SNIPPET
            assert (passage.start_line, passage.end_line) == (7, 7)


def test_a_window_inside_one_grapheme_longer_than_it_is_cut_between_code_points():
    chain = "\u200d".join(["\U0001f469"] * 400)  # one grapheme of 799 code points
    passage = make_passage(chain + " numbat", 1, term_patterns(query_terms("numbat")))
    assert passage.text and len(passage.text) <= MAX_SNIPPET and passage.text in chain + " numbat"


def test_a_search_hit_in_a_line_of_flags_is_shown_with_whole_flags(workspace, cli):
    flags = "\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"
    write(workspace / "memory" / "trips.md", f"# Trips\n\n{flags * 300} numbat {'🇯🇵' * 300}\n\n{family * 300} wombat {family * 300}\n")
    assert cli("index").returncode == 0
    lines = (workspace / "memory" / "trips.md").read_text().split("\n")
    for query in ("numbat", "wombat"):
        hit = cli("search", query, "--json", "--limit", "1").json()["results"][0]
        line = lines[hit["startLine"] - 1]
        start = line.index(hit["snippet"])
        bounds = {0} | {m.end() for m in GRAPHEME.finditer(line)}
        assert start in bounds and start + len(hit["snippet"]) in bounds, (query, ascii(hit["snippet"][:4]))
