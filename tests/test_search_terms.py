"""The keyword half's term rules, end to end with the hash embedder (keyword mode, so that only the
terms decide): word forms (``-ful``, ``-hood``), hyphenated words written together, and a
misspelled query word read as the word a note holds."""

from __future__ import annotations

import pytest

from conftest import indexed_notes, settings_for, write
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.terms import (
    TermFinder,
    answer_kind_terms,
    keyword_terms,
    number_fixes,
    spelling_fixes,
    stem,
)


@pytest.fixture
def index(workspace, state_dir):
    return indexed_notes(workspace, state_dir, {
        "memory/work.md": "# Work\n\nIt was a stressful week: the launch slipped twice.\n",
        "memory/family.md": "# Family\n\nShe spent her childhood on a farm near Lyon.\n",
        "memory/clinic.md": "# Health\n\nThe annual check-up is booked at the clinic.\n",
        "memory/dentist.md": "# Teeth\n\nA dental checkup every spring.\n",
        "memory/events.md": "# Events\n\nWe went to the summer festival in Lisbon.\n",
        "memory/other.md": "# Other\n\nThe garden needs water on Sundays.\n",
        "memory/kitchen.md": "# Kitchen\n\nI baked a rhubarb crumble for the neighbours.\n",
        "memory/gifts.md": "# Gifts\n\nFor Dad's 60th I'm getting him a record player.\n",
        "memory/school.md": "# School\n\nThe Meyers have three kids at the primary school.\n",
        "memory/park.md": "# Park\n\nThe kids played in the park.\n",
        "memory/home.md": "# Home\n\nI'll be home around seven.\n",
        "memory/calendar.md": "# Calendar\n\nThe date of the team offsite is still open.\n",
        "memory/party.md": "# Party\n\nThe housewarming moves to the 22nd.\n",
    })


def found(index: MemoryIndex, query: str) -> list[str]:
    return [r.path for r in index.search(query, mode="text").results]


def test_a_word_form_finds_the_note_written_in_another(index):
    assert found(index, "stress")[:1] == ["memory/work.md"]
    assert found(index, "child")[:1] == ["memory/family.md"]


def test_the_forms_of_a_four_letter_word_ending_in_e_are_one_term(index):
    # The e dropped by -ed and -ing comes back on a short stem, so the word meets its own forms.
    for word in ("bake", "note", "move", "date", "hope", "code", "time", "like", "share", "agree"):
        forms = {word, word + "s", word + "d", word[:-1] + "ing"}
        assert {stem(w) for w in forms} == {stem(word)}, forms
    # ... and only there: a doubled consonant, w, x or y keep their word (hopping is not hoping).
    assert (stem("hopping"), stem("fixed"), stem("rowing"), stem("cod")) == ("hop", "fix", "row", "cod")
    assert found(index, "bake")[:1] == ["memory/kitchen.md"]
    assert TermFinder(keyword_terms("bake")).by_line("# Sunday\nWe were baking all day.") == {1: frozenset({"bake"})}


def test_only_ed_and_ing_give_a_short_stem_its_e_back():
    # -ly leaves three letters of a name ("sally" -> "sal"): with an e it would be another word.
    for name, word in (("sally", "sale"), ("holly", "hole"), ("molly", "mole"), ("polly", "pole"), ("tally", "tale")):
        assert stem(name) != stem(word), name
    assert TermFinder(keyword_terms("garage sale")).by_line("Lunch with Sally\nThe garage sale") == {
        1: frozenset({"garag", "sale"})}


def test_a_hyphenated_word_and_the_word_written_together_find_each_other(index):
    assert set(found(index, "checkup")[:2]) == {"memory/clinic.md", "memory/dentist.md"}
    assert "memory/dentist.md" in found(index, "check-up")[:2]
    # The passage finder reads the joined word inside the hyphenated one, so the line is cited.
    assert TermFinder(keyword_terms("checkup")).by_line("# Health\nThe annual check-up is booked.") == {1: frozenset({"checkup"})}
    # ... also inside a longer identifier (a CLI flag), where only a stop word starts the compound.
    flag = TermFinder(keyword_terms("backup --only-config")).by_line("Run it.\nUse `--only-config` for that.")
    assert "onlyconfig" in flag[1]


def test_a_misspelled_query_word_finds_the_word_the_notes_hold(index):
    assert found(index, "fesetival")[:1] == ["memory/events.md"]


def test_a_number_in_words_finds_it_in_digits_and_the_other_way_round(index):
    """A note writes "60th", the question "sixtieth"; a note writes "three", the question "3"."""
    assert found(index, "sixtieth birthday present")[:1] == ["memory/gifts.md"]
    assert found(index, "3 kids")[:1] == ["memory/school.md"]


def test_a_number_form_a_note_holds_is_never_replaced():
    held = {"60th": 2, "3": 5, "second": 4, "2nd": 1}
    assert number_fixes(keyword_terms("his sixtieth"), lambda t: held.get(t, 0)) == {"sixtieth": "60th"}
    assert number_fixes(keyword_terms("three kids"), lambda t: held.get(t, 0)) == {"thre": "3"}
    assert number_fixes(keyword_terms("a second gateway"), lambda t: held.get(t, 0)) == {}  # held as written
    assert number_fixes(keyword_terms("twenty kids"), lambda t: held.get(t, 0)) == {}  # no chunk holds 20 either


def test_one_first_and_second_are_not_taken_for_numbers():
    """"the one about groceries" found a note holding "1 car" first, "second opinion" the "2nd floor"
    (review of 1faa4e5): in a query those words are rarely the number. Their digits still find them."""
    held = {"1": 4, "2nd": 2, "1st": 3, "one": 5, "second": 5}
    for query in ("the one about groceries", "a second opinion", "when did we first meet"):
        assert number_fixes(keyword_terms(query), lambda t: 0 if t in {"one", "second", "first"} else held.get(t, 0)) == {}
    assert number_fixes(keyword_terms("1 kid"), lambda t: 0 if t == "1" else held.get(t, 0)) == {"1": "one"}


def test_a_word_whose_stem_is_short_is_no_typo(index):
    """The edits are made on the stem: ``evening`` is ``even``, one letter from ``seven``, and
    ``boiling`` is ``boil``, one from ``soil``; words no note holds, never misspelt."""
    assert found(index, "evening") == []
    held = {"seven": 3, "soil": 2, "receiv": 4}
    assert spelling_fixes("which evening", lambda t: held.get(t, 0)) == {}
    assert spelling_fixes("boiling point", lambda t: held.get(t, 0)) == {}
    assert spelling_fixes("recieved", lambda t: held.get(t, 0)) == {"reciev": "receiv"}  # a stem of six: still read


def test_the_noun_of_which_date_or_what_time_is_no_keyword(index):
    """It names the kind of answer wanted: the note that answers says "the 22nd", not "date"; a note
    that says "date" about something else is no answer."""
    assert found(index, "On which date is the housewarming?") == ["memory/party.md"]
    assert found(index, "which date") == []
    assert answer_kind_terms("What time is the dentist appointment?") == {"time"}
    assert answer_kind_terms("Which days are free?") == {"day"}
    assert answer_kind_terms("How many days did it take? What is the date format?") == set()  # asked about: kept


def test_a_word_a_note_holds_is_never_corrected():
    held = {"festival": 3, "novel": 9}
    assert spelling_fixes("pride fesetival", lambda t: held.get(t, 0)) == {"fesetival": "festival"}
    assert spelling_fixes("fesetival", {**held, "fesetival": 1}.get) == {}  # a note holds it: never replaced
    assert spelling_fixes("nobel", lambda t: held.get(t, 0)) == {}  # too short to guess from


def test_a_query_of_long_or_many_unknown_words_costs_a_bounded_number_of_lookups():
    """Each letter of a word absent from the index has 54 neighbours to look up: an agent's query
    of one 10,000-letter word (a pasted blob) took two minutes and gigabytes (a set of its 540,000
    neighbours), one of 100,000 letters was killed for memory; 2,000 absent words were a million
    lookups. A word longer than any typo is not one, and a query's first 8 absent words only are."""
    looked: list[str] = []

    def df(term: str) -> int:
        looked.append(term)
        return {"festival": 3}.get(term, 0)

    assert spelling_fixes("x" * 1_000 + " fesetival", df) == {"fesetival": "festival"}
    assert len(looked) < 1_000
    looked.clear()
    words = " ".join("qwertyu" + "".join(chr(97 + (n // 26 ** k) % 26) for k in range(3)) for n in range(2_000))
    spelling_fixes(words, df)
    assert len(looked) < 10 * 60 * 12  # 8 words of 10 letters, 54 neighbours a letter, and the presence checks


def test_every_passage_carries_the_date_it_sits_under(workspace, state_dir):
    from openclaw_memory.wire import to_json

    write(workspace / "MEMORY.md", "# Memory\n\n## 2026-03-01\n\n- Dana drinks an oat flat white every morning.\n\n"
          "## Standing\n\n- Dana takes the train to work.\n")
    write(workspace / "memory" / "2026-11-20.md", "# Notes\n\n- Dana now prefers a cortado, no more flat white.\n")
    write(workspace / "memory" / "people" / "dana.md", "# Dana\n\n- Dana likes a flat white after lunch.\n")
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    hits = {r.path: r for r in index.search("Dana flat white", mode="text").results}
    assert hits["MEMORY.md"].date == "2026-03-01"  # the dated heading above the item
    assert hits["memory/2026-11-20.md"].date == "2026-11-20"  # the daily note's own date
    shown = {r["path"]: r for r in to_json(index.search("Dana flat white", mode="text"))["results"]}
    assert shown["memory/2026-11-20.md"]["passages"][0]["date"] == "2026-11-20"
    assert shown["MEMORY.md"]["date"] == "2026-03-01"
    assert "date" not in shown["memory/people/dana.md"] and "date" not in shown["memory/people/dana.md"]["passages"][0]


def test_a_day_the_calendar_has_not_is_no_passage_date(workspace, state_dir):
    """memory/2026-02-30.md (and a heading ## 2026-13-01) showed that date while --since/--until
    filtered the note by its modification day: a result dated 2026-02-30 passed --since 2026-12-01."""
    write(workspace / "memory" / "2026-02-30.md", "# 2026-02-30\n\n## 2026-13-01\n\n- kiwi on a day that is none\n")
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    [hit] = index.search("kiwi", mode="text").results
    assert not hit.date and not any(p.date for p in hit.passages), hit


def test_an_index_cut_by_older_term_rules_is_written_again_with_its_vectors(workspace, state_dir, monkeypatch):
    import openclaw_memory.index.chunking as chunking
    import openclaw_memory.index.sync as sync

    write(workspace / "memory" / "clinic.md", "# Health\n\nThe annual check-up is booked at the clinic.\n")
    with monkeypatch.context() as old:  # the rules before: no joined word for a hyphenated one
        old.setattr(chunking, "CHUNKER_VERSION", chunking.CHUNKER_VERSION - 1)
        old.setattr(sync, "TERMS_VERSION", 0)
        old.setattr(sync, "keyword_terms", lambda text: [t for t in keyword_terms(text) if t != "checkup"])
        MemoryIndex(settings_for(workspace, state_dir)).sync()
    index = MemoryIndex(settings_for(workspace, state_dir))
    assert not index.search("checkup", mode="text", sync=False).results
    summary = index.sync()
    assert summary.chunks_embedded == 0 and summary.chunks_reused > 0, summary  # no text embedded again
    assert [r.path for r in index.search("checkup", mode="text", sync=False).results] == ["memory/clinic.md"]


def test_a_newer_note_goes_first_only_when_one_of_its_chunks_is_on_the_subject():
    from openclaw_memory.index.bm25 import Bm25, TermStats
    from openclaw_memory.index.search import QueryPlan, _Candidate, _File, _prefer_newer
    from openclaw_memory.index.store.base import TERMS_FIELD

    plan = QueryPlan("who borrowed the drill", "text", None, 6, Bm25([TermStats(100, 1000, {"borrow": 5, "drill": 5})]))

    def note(day: str, raw: float, *chunks: tuple[str, float]) -> _File:
        cands = [_Candidate(f"{day}-{i}", {TERMS_FIELD: terms}, "s", k=k) for i, (terms, k) in enumerate(chunks)]
        return _File(f"memory/{day}.md", cands, raw=raw, score=raw)

    older = note("2026-01-10", 0.9, ("mo borrow drill saturdai", 0.9))
    # Mentions the drill in one chunk and borrowing (an umbrella) in another: not the subject.
    mentions = note("2026-03-02", 0.8, ("need drill shelv", 0.8), ("borrow umbrella", 0.75))
    assert [f.path for f in _prefer_newer(plan, [older, mentions])] == ["memory/2026-01-10.md", "memory/2026-03-02.md"]
    # Says it again in one chunk (a correction): the newer first.
    corrects = note("2026-03-02", 0.8, ("drill borrow back sundai", 0.8))
    assert [f.path for f in _prefer_newer(plan, [older, corrects])] == ["memory/2026-03-02.md", "memory/2026-01-10.md"]


def test_the_short_reply_after_the_turn_asked_about_is_inside_its_passage():
    from openclaw_memory.index.snippets import ChunkText, build_passages
    from openclaw_memory.index.terms import query_terms, term_patterns

    filler = [f"[09:{i:02d}] {'Sam' if i % 2 else 'Lena'}: ok, see you later then" for i in range(20)]
    story = ("[10:00] Lena: The museum trip with the kids is on Saturday; the kids keep asking about the museum, "
             "the dinosaurs, the planetarium show and whether the museum cafe still sells the blue ice cream they "
             "loved last time, so we should leave early, take the tram and bring snacks for the long queue.")
    log = ["# 2025-03-01", "", *filler, story, "[10:02] Sam: How did the kids feel at the museum?",
           "[10:03] Lena: They were awestruck and humbled.", *filler]
    query = "how did the kids feel at the museum"
    terms = dict.fromkeys(keyword_terms(query), 1.0)
    best = build_passages([ChunkText("\n".join(log), 1, 0.5)], terms, lambda: term_patterns(query_terms(query)),
                          lambda v, k: 0.5 * v + 0.5 * k)[0]
    reply = log.index("[10:03] Lena: They were awestruck and humbled.") + 1
    assert best.start_line <= reply - 1 and reply <= best.end_line, best  # the turn asked about and its reply
