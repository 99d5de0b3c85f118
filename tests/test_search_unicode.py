"""One word in any Unicode form (NFC, NFD) or without its Latin accents is one term, for notes and
queries alike, as in OpenClaw's memory FTS (SQLite FTS5, ``tokenize='unicode61'``, whose default
removes Latin diacritics): ``café``, ``cafe`` and ``cafe`` with a combining accent find the same
notes. Other scripts keep their marks (``ά``, ``й``, ``が``), as unicode61 does. The folding is
checked against SQLite's own unicode61 tokenizer, character by character and on generated text."""

from __future__ import annotations

import sqlite3
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import indexed_notes, settings_for, write
from openclaw_memory.index import terms
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.terms import CJK_RUN, fold, keyword_terms, query_terms

NFC_NOTE = "# Notes\n\nMet Zoë at the café in Malmö.\n"
NFD_NOTE = unicodedata.normalize("NFD", "# Other\n\nMet Zoë at the café in Malmö.\n")


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.fixture
def index(workspace, state_dir):
    return indexed_notes(workspace, state_dir, {
        "memory/nfc.md": NFC_NOTE,
        "memory/nfd.md": NFD_NOTE,
        "memory/greek.md": "# Trip\n\nΤο ταξίδι στην Αθήνα.\n",
        "memory/kana.md": "# 学校\n\nがっこうへ行く。\n",
        "memory/other.md": "# Plain\n\nUnrelated text about roofs.\n",
    })


def found(index: MemoryIndex, query: str) -> set[str]:
    return {r.path for r in index.search(query, mode="text").results}


@pytest.mark.parametrize("query", ["café", nfd("café"), "cafe", "CAFÉ", "Zoë", nfd("Zoë"), "zoe", "Malmo", nfd("Malmö")])
def test_a_word_in_either_unicode_form_or_without_its_accent_finds_both_notes(index, query):
    """``café`` found only the NFC note; ``cafe`` and the NFD ``café`` only the NFD one (its
    combining accent was a word break)."""
    assert found(index, query) == {"memory/nfc.md", "memory/nfd.md"}
    assert index.search(query, mode="text").terms == (fold(query.split()[0]),)


def test_other_scripts_keep_their_marks_in_either_form(index):
    """As unicode61: only Latin accents go; a Greek tonos or a Japanese dakuten makes another word."""
    assert found(index, "Αθήνα") == found(index, nfd("Αθήνα")) == {"memory/greek.md"}
    assert found(index, "Αθηνα") == set()
    assert found(index, nfd("がっこう")) == {"memory/kana.md"}
    assert "がっ" in keyword_terms(nfd("がっこう")) and "かっ" not in keyword_terms(nfd("がっこう"))


def test_a_match_is_highlighted_whole_in_either_form(index):
    """The terminal's highlight (``term_spans``) finds ``café`` for ``cafe``, with its combining accent."""
    answer = index.search("cafe zoe", mode="text")
    for line in ("Met Zoë at the café in Malmö.", nfd("Met Zoë at the café in Malmö."), "İİ at the café"):
        spans = answer.term_spans(line)
        assert [fold(line[a:b]) for a, b in spans][-1] == "cafe", (line, spans)
        assert all(not unicodedata.combining(line[b]) for a, b in spans if b < len(line))
    shown = nfd("Zoë: café")
    assert [shown[a:b] for a, b in answer.term_spans(shown)] == [nfd("Zoë"), nfd("café")]


def test_an_index_cut_before_folding_is_cut_again_with_its_vectors(workspace, state_dir, monkeypatch):
    import openclaw_memory.index.chunking as chunking
    import openclaw_memory.index.sync as sync

    write(workspace / "memory" / "nfc.md", NFC_NOTE)
    with monkeypatch.context() as old:  # the rules before: lowercased only
        old.setattr(chunking, "CHUNKER_VERSION", chunking.CHUNKER_VERSION - 1)
        old.setattr(sync, "TERMS_VERSION", 2)
        old.setattr(terms, "fold", str.lower)
        MemoryIndex(settings_for(workspace, state_dir)).sync()
    index = MemoryIndex(settings_for(workspace, state_dir))
    assert not index.search("cafe", mode="text", sync=False).results
    summary = index.sync()
    assert summary.chunks_embedded == 0 and summary.chunks_reused > 0, summary  # no text embedded again
    assert [r.path for r in index.search("cafe", mode="text", sync=False).results] == ["memory/nfc.md"]


# -- against SQLite's unicode61 (OpenClaw's tokenizer) ---------------------------------------------

# Capital letters newer than SQLite's case tables (Unicode 6.1): unicode61 leaves them as they are,
# Python lowercases them (a deliberate difference: the word is the same word).
NEWER_CAPITALS = {0x37F, *range(0x528, 0x530)}
SCRIPTS = [*range(0x30, 0x3A), *range(0x41, 0x5B), *range(0x61, 0x7B), *range(0xC0, 0x250),  # Latin
           *range(0x1E00, 0x1F00), *range(0x370, 0x400), *range(0x1F00, 0x2000),  # Greek
           *range(0x400, 0x530)]  # Cyrillic
LETTERS = [chr(c) for c in SCRIPTS if c not in NEWER_CAPITALS and unicodedata.category(chr(c))[0] in "LN"]
MARKS = [chr(c) for c in range(0x300, 0x370)]  # combining marks: diacritics (removed) or not (word breaks)
CJK = [chr(c) for c in (*range(0x3041, 0x3097), *range(0x30A1, 0x30FB), *range(0x4E00, 0x4E80), *range(0xAC00, 0xAD00))]


@pytest.fixture(scope="module")
def unicode61():
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')")
    except sqlite3.OperationalError:
        pytest.skip("this sqlite3 has no FTS5")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")

    def tokens(text: str) -> list[str]:
        db.execute("DELETE FROM t")
        db.execute("INSERT INTO t VALUES (?)", (text,))
        return [row[0] for row in db.execute("SELECT term FROM v ORDER BY doc, col, offset")]

    yield tokens
    db.close()


def as_terms(tokens: list[str]) -> list[str]:
    """unicode61's tokens as ``query_terms`` gives them: a CJK run by its bigrams, after the words."""
    words = [t for t in tokens if not CJK_RUN.fullmatch(t)]
    grams = [g for t in tokens if CJK_RUN.fullmatch(t) for g in ([t] if len(t) == 1 else [t[i:i + 2] for i in range(len(t) - 1)])]
    return list(dict.fromkeys(words + grams))


def test_every_letter_and_mark_folds_as_unicode61_folds_it(unicode61):
    for ch in LETTERS + MARKS:
        text = unicodedata.normalize("NFC", f"x{ch}x {ch}")
        assert query_terms(text) == as_terms(unicode61(text)), (hex(ord(ch)), unicodedata.name(ch, "?"))


def words(alphabet: list[str]) -> st.SearchStrategy[str]:
    return st.text(st.sampled_from(alphabet), min_size=1, max_size=8)


LATIN_WORD = st.builds(lambda w, marks: "".join(c + m for c, m in zip(w, marks)), words(LETTERS),
                       st.lists(st.sampled_from(["", "", "", *MARKS[:0x32]]), min_size=8, max_size=8))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LATIN_WORD, words(CJK)), min_size=1, max_size=6))
@example(["0", "\u03a1\u0313"])  # Ρ and a psili: composed only once lowercased (ῤ), fold was not idempotent (CI)
def test_terms_agree_with_unicode61_in_either_form(unicode61, parts):
    text = " ".join(parts)
    composed = unicodedata.normalize("NFC", text)
    assert query_terms(text) == query_terms(composed) == query_terms(nfd(composed)) == as_terms(unicode61(composed))
    # The stored terms: those of unicode61's words, whatever form the note was written in.
    assert keyword_terms(text) == keyword_terms(nfd(composed)) == keyword_terms(" ".join(unicode61(composed)))
    assert fold(fold(text)) == fold(text)
