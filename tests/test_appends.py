"""What an append adds at the end of a note (``history.appends``): its text on its own lines, every
line break made the note's own, without a piece of text per line."""

from __future__ import annotations

import os
import re
import tempfile
import tracemalloc
from types import SimpleNamespace

from hypothesis import given, settings
from hypothesis import strategies as st

from openclaw_memory.history import appends
from openclaw_memory.history.appends import appended, in_ending

# Texts of breaks of every kind, side by side in every order (a CR before a CRLF, an LF after a CR).
TEXTS = st.lists(st.sampled_from([b"a", b"bc", b"\xc3\xa9", b"\r", b"\n", b"\r\n", b"\n\r", b"\r\r"]), max_size=24).map(b"".join)
ENDINGS = st.sampled_from([b"\n", b"\r\n", b"\r"])
BREAK = re.compile(rb"\r\n|\r|\n")  # how the text's breaks were read: in_ending is its substitution


def regex_appended(fd: int | None, current, added: bytes) -> bytes:
    """``appended`` as it was made, with the substitution of every break by a regular expression."""
    ending = appends._last_line_ending(fd, current.size) if fd is not None and current is not None and current.size else None
    if ending is None:
        first = BREAK.search(added)
        ending = first.group() if first else b"\n"
    added = BREAK.sub(ending, added)
    ended = fd is None or current is None or current.size == 0 or os.pread(fd, 1, current.size - 1) in (b"\n", b"\r")
    return (b"" if ended else ending) + added + (b"" if added.endswith(ending) else ending)


@settings(max_examples=500, deadline=None)
@given(TEXTS, ENDINGS)
def test_a_text_in_the_notes_ending_is_the_substitution_of_each_break(text, ending):
    assert in_ending(text, ending) == BREAK.sub(ending, text)


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS)
def test_an_append_adds_what_the_substitution_of_each_break_added(note, added):
    """Any note (none, empty, ended by any break or by none) and any text: the same bytes."""
    assert appended(None, None, added) == regex_appended(None, None, added)
    fd, path = tempfile.mkstemp()
    try:
        os.write(fd, note)
        current = SimpleNamespace(size=len(note))
        assert appended(fd, current, added) == regex_appended(fd, current, added)
    finally:
        os.close(fd)
        os.unlink(path)


def test_a_large_append_holds_its_text_a_few_times_not_a_piece_per_line(tmp_path):
    """Each line break of the text was a piece of a list that ``re.sub`` joined: 4 MB of short lines
    took 90 times their size (an MCP append of 40 MB peaked at 3.5 GB). A text already in the note's
    ending is taken as it is; another is converted by whole-text replaces."""
    lf = b"a\n" * 2_000_000
    for note, text, copies in ((b"x\n", lf, 0), (b"x\n", lf.replace(b"\n", b"\r\n"), 1), (b"x\r\n", lf, 2),
                               (b"x\r", lf, 1), (b"x", lf, 1)):
        (tmp_path / "note.md").write_bytes(note)
        fd = os.open(tmp_path / "note.md", os.O_RDONLY)
        tracemalloc.start()
        try:
            added = appended(fd, SimpleNamespace(size=len(note)), text)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            os.close(fd)
        assert added.count(b"a") == 2_000_000 and added.endswith(b"\r" if note == b"x\r" else b"\n")
        assert peak <= copies * len(text) + (1 << 20), (note, len(text), peak)
