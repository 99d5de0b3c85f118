"""Chunking with the real all-MiniLM-L6-v2 tokenizer: exact lines, budgets, fences, headings, overlap."""

from __future__ import annotations

import json
import unicodedata

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_memory.errors import UsageError
from openclaw_memory.index.blocks import entries, is_table_rule
from openclaw_memory.index.chunking import Chunk, chunk_document, chunk_markdown, make_chunk
from openclaw_memory.index.tokens import load_token_counter

GRAPHEME = regex.compile(r"\X", regex.DOTALL)


@pytest.fixture(scope="module")
def counter():
    return load_token_counter("all-MiniLM-L6-v2")


def check_invariants(text: str, chunks: list[Chunk], counter, budget: int) -> None:
    """What every chunking must satisfy, whatever the input."""
    lines = text.split("\n")
    covered: set[int] = set()
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        exact = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        if chunk.text != exact:
            # Only a piece of one over-long line may differ from its whole line.
            assert chunk.start_line == chunk.end_line
            assert chunk.text in lines[chunk.start_line - 1]
        assert lines[chunk.start_line - 1].strip() and lines[chunk.end_line - 1].strip()
        expected_embed = f"{chunk.heading_path}\n\n{chunk.text}" if chunk.heading_path else chunk.text
        assert chunk.embed_text == expected_embed
        assert counter.count(chunk.embed_text) <= budget, chunk
        assert chunk.hash == make_chunk(chunk.start_line, chunk.end_line, chunk.text, chunk.heading_path).hash
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(lines, 1):
        if line.strip():
            assert number in covered, f"line {number} not in any chunk: {line!r}"
    # The pieces of a split line are its graphemes in order, none broken.
    by_line: dict[int, list[Chunk]] = {}
    for chunk in chunks:
        if chunk.start_line == chunk.end_line and chunk.text != lines[chunk.start_line - 1]:
            by_line.setdefault(chunk.start_line, []).append(chunk)
    for number, pieces in by_line.items():
        line = lines[number - 1]
        bounds = {m.end() for m in GRAPHEME.finditer(line)}
        pos = 0
        for piece in pieces:
            pos = line.index(piece.text, pos) + len(piece.text)
            assert pos in bounds or pos == len(line), f"cut inside a grapheme at {pos}"


# -- random Markdown ---------------------------------------------------------------------------

WORDS = ["memory", "agent", "editor", "vim", "preferences", "tea", "coffee", "the", "a", "unaffable",
         "naïve", "café", "喝绿茶", "東京都", "한국어", "日本語のテキスト", "👨‍👩‍👧‍👦", "🏳️‍🌈", "e\u0301",
         "a\u0308\u0301", "x" * 40, "2026-11-30", "API_KEY", "#tag", "`code`", "**bold**"]

word = st.sampled_from(WORDS)
sentence = st.lists(word, min_size=1, max_size=12).map(" ".join)
long_line = st.lists(word, min_size=150, max_size=400).map(" ".join)
heading = st.tuples(st.integers(1, 6), sentence).map(lambda t: "#" * t[0] + " " + t[1])
fence = st.tuples(st.sampled_from(["```", "~~~", "````"]), st.lists(sentence, min_size=0, max_size=30)).map(
    lambda t: "\n".join([t[0] + "python", *t[1], t[0]])
)
block = st.one_of(sentence, sentence, heading, fence, st.just(""), st.just("   "), long_line)
markdown = st.lists(block, min_size=0, max_size=60).map("\n".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=markdown, budget=st.sampled_from([32, 64, 128, None]))
def test_random_markdown_invariants(counter, text, budget):
    budget = budget or counter.window
    chunks = chunk_markdown(text, counter, budget_tokens=budget)
    check_invariants(text, chunks, counter, budget)
    lines = text.split("\n")
    for first, last in fence_ranges(lines):
        if counter.count("\n".join(lines[first - 1 : last])) <= budget - budget // 4:
            # Fits beside any (capped) heading path: never cut.
            for chunk in chunks:
                assert not first < chunk.start_line <= last and not first <= chunk.end_line < last


def fence_ranges(lines: list[str]) -> list[tuple[int, int]]:
    """1-based (open, close) of the generator's fences."""
    out, k = [], 0
    while k < len(lines):
        marker = lines[k][:-len("python")] if lines[k].endswith("python") else None
        if marker in ("```", "~~~", "````"):
            close = next((j for j in range(k + 1, len(lines)) if lines[j] == marker), len(lines) - 1)
            out.append((k + 1, close + 1))
            k = close
        k += 1
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=3000),
       budget=st.sampled_from([8, 20, 254]))
def test_arbitrary_unicode_invariants(counter, text, budget):
    check_invariants(text, chunk_markdown(text, counter, budget_tokens=budget), counter, budget)


@settings(max_examples=30, deadline=None)
@given(lines=st.lists(sentence, min_size=1, max_size=40))
def test_line_counts_add_up(counter, lines):
    # The chunker sums per-line counts; that is only sound if they equal the joined count.
    assert counter.additive
    assert sum(counter.count_many(lines)) == counter.count("\n".join(lines))


# -- specific behaviour ------------------------------------------------------------------------


def test_empty_and_blank_files_give_no_chunks(counter):
    assert chunk_markdown("", counter) == []
    assert chunk_markdown(" \n\n\t\n", counter) == []


def test_small_file_is_one_chunk_with_exact_lines(counter):
    text = "\n# Preferences\n\n## Editor\nUses vim.\n\n"
    chunks = chunk_markdown(text, counter)
    assert [(c.start_line, c.end_line) for c in chunks] == [(2, 5)]
    assert chunks[0].text == "# Preferences\n\n## Editor\nUses vim."
    assert chunks[0].heading_path == "Preferences"


def reference_paths(lines: list[str]) -> list[str]:
    """Heading path per line for plain ATX headings, computed the obvious way."""
    stack: list[tuple[int, str]] = []
    out = []
    for line in lines:
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, line[level:].strip()))
        out.append(" > ".join(t for _, t in stack))
    return out


def test_heading_path_follows_nesting(counter):
    sections = []
    for top in ("Preferences", "Projects"):
        sections.append(f"# {top}")
        for sub in ("Editor", "Shell"):
            sections.append(f"## {sub}")
            for leaf in ("Keys", "Colours"):
                sections.append(f"### {leaf}")
                sections.extend(f"{top} {sub} {leaf} fact {n} is worth remembering." for n in range(6))
    text = "\n".join(sections)
    lines = text.split("\n")
    expected = reference_paths(lines)
    for budget in (48, 100, None):
        chunks = chunk_markdown(text, counter, budget_tokens=budget)
        check_invariants(text, chunks, counter, budget or counter.window)
        for chunk in chunks:
            assert chunk.heading_path == expected[chunk.start_line - 1]
    assert "Projects > Shell > Colours" in {c.heading_path for c in chunk_markdown(text, counter, budget_tokens=48)}


def test_cut_prefers_heading_then_blank_line(counter):
    para = " ".join(["remember"] * 30)  # 30 tokens a line
    text = "\n".join(["# A", para, para, "# B", para, para])
    chunks = chunk_markdown(text, counter, budget_tokens=100)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 3), (4, 6)]
    text = "\n".join(["# A", para, "", para, para, para])
    chunks = chunk_markdown(text, counter, budget_tokens=100, overlap_tokens=0)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 2), (4, 6)]


def test_setext_headings_and_closing_hashes(counter):
    text = "Preferences\n===========\n\nEditor\n------\n" + "vim " * 20 + "\n\n### Keys ###\njk"
    chunks = chunk_markdown(text, counter)
    assert chunks[0].heading_path == "Preferences"
    small = chunk_markdown(text, counter, budget_tokens=32, overlap_tokens=0)
    assert small[-1].heading_path == "Preferences > Editor > Keys"
    assert small[-1].start_line == 8


def test_heading_inside_fence_is_not_a_heading(counter):
    text = "# Real\n```\n# not a heading\n```\ntext"
    assert chunk_markdown(text, counter)[0].heading_path == "Real"
    later = chunk_markdown(text + "\n" + "more words here. " * 40, counter, budget_tokens=40, overlap_tokens=0)
    assert all(c.heading_path == "Real" for c in later)


def test_fence_kept_whole_when_it_fits(counter):
    filler = "\n".join(f"Paragraph line {n} about the agent's memory." for n in range(20))
    code = "\n".join(["```python", *[f"value_{n} = compute({n})" for n in range(12)], "```"])  # 103 tokens
    text = f"# Notes\n{filler}\n\n{code}\n\nAfter the code."
    budget = 128
    assert counter.count(code) < budget - counter.count("Notes")
    chunks = chunk_markdown(text, counter, budget_tokens=budget)
    lines = text.split("\n")
    open_line = lines.index("```python") + 1
    close_line = open_line + 13
    for chunk in chunks:
        inside = open_line < chunk.start_line <= close_line or open_line <= chunk.end_line < close_line
        assert not inside, f"fence cut by chunk {chunk.start_line}-{chunk.end_line}"
    assert any(c.start_line <= open_line and c.end_line >= close_line for c in chunks)
    check_invariants(text, chunks, counter, budget)


def test_oversized_fence_is_cut_between_lines(counter):
    code = "\n".join(["~~~", *[f"line {n}: some code tokens here" for n in range(80)], "~~~"])
    chunks = chunk_markdown(code, counter, budget_tokens=64)
    assert len(chunks) > 3
    check_invariants(code, chunks, counter, 64)
    lines = code.split("\n")
    assert all(c.text == "\n".join(lines[c.start_line - 1 : c.end_line]) for c in chunks)


def test_overlap_carries_whole_lines(counter):
    text = "\n".join(f"Sentence {n} tells one more fact about the user." for n in range(60))
    budget = 100
    chunks = chunk_markdown(text, counter, budget_tokens=budget)
    assert len(chunks) > 2
    for prev, nxt in zip(chunks, chunks[1:]):
        assert nxt.start_line <= prev.end_line, "no overlap"
        shared = "\n".join(text.split("\n")[nxt.start_line - 1 : prev.end_line])
        assert counter.count(shared) <= round(budget * 0.15)
        assert nxt.start_line > prev.start_line
    without = chunk_markdown(text, counter, budget_tokens=budget, overlap_tokens=0)
    assert all(b.start_line == a.end_line + 1 for a, b in zip(without, without[1:]))
    assert len(without) < len(chunks)


def test_no_overlap_across_a_heading_cut(counter):
    section = "\n".join(f"Fact {n} about this section's subject." for n in range(8))
    text = f"# One\n{section}\n# Two\n{section}"
    chunks = chunk_markdown(text, counter, budget_tokens=128)
    two = text.split("\n").index("# Two") + 1
    starting = [c for c in chunks if c.start_line == two]
    assert starting and starting[0].heading_path == "Two"
    assert not any(c.start_line < two <= c.end_line for c in chunks)


def test_cjk_budget(counter):
    # Every CJK character is its own word piece for this tokenizer: a budget of 50 holds 50.
    text = "# 笔记\n" + "\n".join("我喜欢喝绿茶，也喜欢在东京散步。" * 3 for _ in range(30))
    budget = 50
    chunks = chunk_markdown(text, counter, budget_tokens=budget)
    check_invariants(text, chunks, counter, budget)
    assert all(c.heading_path == "笔记" for c in chunks)
    assert max(counter.count(c.embed_text) for c in chunks) > budget * 0.6  # budgets are used, not wasted


def test_over_long_line_split_between_graphemes(counter):
    family = "👨\u200d👩\u200d👧\u200d👦"
    line = " ".join(["naïve", "e\u0301", family, "東京", "unaffable"] * 200)
    text = f"# Long\n{line}\nafter"
    chunks = chunk_markdown(text, counter, budget_tokens=40)
    pieces = [c for c in chunks if c.start_line == 2]
    assert len(pieces) > 10
    assert "".join(p.text for p in pieces).replace(" ", "") == line.replace(" ", "")
    check_invariants(text, chunks, counter, 40)
    assert chunks[-1].text == "after"


def test_split_to_fit_keeps_graphemes_and_surrogate_free(counter):
    text = ("🏳️‍🌈" + "a\u0308\u0301" + "語") * 300
    pieces = counter.split_to_fit(text, 16)
    assert "".join(pieces) == text
    bounds = {m.end() for m in GRAPHEME.finditer(text)}
    pos = 0
    for piece in pieces:
        pos += len(piece)
        assert pos in bounds
        assert counter.count(piece) <= 16
        piece.encode("utf-8")  # no lone surrogate was produced


def test_grapheme_larger_than_budget_is_cut_between_code_points(counter):
    chain = "\u200d".join(["👩"] * 100)  # one grapheme cluster of 100 emoji, ~100 tokens
    assert len(GRAPHEME.findall(chain)) == 1
    pieces = counter.split_to_fit(chain, 10)
    assert "".join(pieces) == chain
    assert all(counter.count(p) <= 10 for p in pieces)
    assert all(unicodedata.category(p[0]) != "Cs" for p in pieces)


def test_window_is_max_seq_length_minus_special_tokens(counter):
    config = json.loads((__import__("pathlib").Path(counter.model_path) / "sentence_bert_config.json").read_text())
    assert config["max_seq_length"] == 256
    assert counter.window == 254
    assert chunk_markdown("x " * 10, counter) and counter.count("x " * 10) == 10


def test_budget_and_overlap_are_checked(counter):
    with pytest.raises(UsageError, match="window of 254"):
        chunk_markdown("text", counter, budget_tokens=300)
    with pytest.raises(UsageError, match="overlap"):
        chunk_markdown("text", counter, budget_tokens=100, overlap_tokens=80)


def test_long_heading_path_is_shortened_to_fit(counter):
    text = "\n".join([
        "# " + "outer words " * 30,
        "## " + "inner words " * 30,
        "### Leaf",
        "content line",
    ])
    chunks = chunk_markdown(text, counter, budget_tokens=64)
    check_invariants(text, chunks, counter, 64)
    last = chunks[-1]
    assert last.heading_path.endswith("Leaf")
    assert counter.count(last.heading_path) <= 16


def test_crlf_lines_are_kept_exact(counter):
    text = "# Title\r\nline one\r\n\r\nline two\r\n"
    chunks = chunk_markdown(text, counter)
    assert chunks[0].start_line == 1 and chunks[0].end_line == 4
    assert chunks[0].text == "# Title\r\nline one\r\n\r\nline two\r"
    assert chunks[0].heading_path == "Title"


def test_front_matter_is_parsed_into_the_card_not_chunked(counter):
    text = '---\ntitle: "Field notes"\ntags: [alpha, beta]\nread_when:\n  - planning a trip\n---\nIntro line.\n\n## Gear\n' + "\n".join(
        f"line {n} words" for n in range(40)
    )
    chunks = chunk_document(text, counter, budget_tokens=48, path="memory/notes/field.md")
    sections = [c for c in chunks if c.kind == "section"]
    assert sections and all(c.start_line > 6 for c in sections)
    assert all("tags:" not in c.text and "---" not in c.text for c in sections)
    assert all(c.heading_path.startswith("Field notes") for c in sections)  # no H1: the front-matter title
    card = chunks[-1]
    assert card.kind == "card" and (card.start_line, card.end_line) == (sections[0].start_line, sections[0].end_line)
    for part in ("Field notes", "alpha; beta", "planning a trip", "Sections: Gear"):
        assert part in card.embed_text
    assert counter.count(card.embed_text) <= 48


@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_byte_order_mark_hides_neither_the_front_matter_nor_the_first_heading_item_or_turn(counter, line_end):
    # Saved with a BOM (an older Notepad's UTF-8), the front matter was chunked as text (its fields
    # in every snippet of the section, none in the card) and the file's H1 was no heading.
    body = ["\ufeff---", "title: Field notes", "summary: what the trip needs", "---", "# Packing", "", "Tent, stove and two maps."]
    text = line_end.join(body) + line_end
    chunks = chunk_document(text, counter, path="memory/trip.md")
    sections = [c for c in chunks if c.kind == "section"]
    assert sections[0].text == line_end.join(body[4:]) + line_end.rstrip("\n")  # the lines exactly
    assert [(c.start_line, c.heading_path) for c in sections] == [(5, "Packing")]
    assert "summary" not in sections[0].text and "---" not in sections[0].text
    assert "what the trip needs" in chunks[-1].embed_text and chunks[-1].kind == "card"
    heading_first = chunk_document("\ufeff# Packing\n\nTent and stove.\n", counter, path="memory/p.md")
    assert heading_first[0].heading_path == "Packing" and heading_first[0].text.startswith("\ufeff# Packing")
    # MEMORY.md's first fact and a chat log's first turn are chunks of their own, as the others are.
    for first in ("- prefers green tea in the morning", "Sam: we should book the hut by the lake"):
        second = "- drives a blue Skoda to work" if first.startswith("-") else "Lena: yes, the one with the sauna please"
        chunks = chunk_document(f"\ufeff{first}\n{second}\n", counter, path="MEMORY.md", items=True)
        assert [(c.kind, c.start_line, c.text) for c in chunks if c.kind == "item"] == [
            ("item", 1, f"\ufeff{first}"), ("item", 2, second)], first


def test_a_byte_order_mark_before_a_list_item_a_table_or_a_setext_title_reads_as_without_it(counter):
    # Every line pattern takes the mark (blocks.line_pattern); three did not: an item followed by a
    # thematic break read as a setext heading named "- item", and a setext title kept the mark.
    plain = chunk_document("- milk and eggs\n---\nShopping for the week.\n", counter, path="memory/s.md")
    marked = chunk_document("\ufeff- milk and eggs\n---\nShopping for the week.\n", counter, path="memory/s.md")
    assert [c.heading_path for c in marked] == [c.heading_path for c in plain] == ["s"]
    titled = chunk_document("\ufeffGroceries\n=========\n\nMilk and eggs.\n", counter, path="memory/g.md")
    assert titled[0].heading_path == "Groceries"
    rows = entries(["\ufeff| a | b |", "|---|---|", "| 1 | 2 |"])
    assert [e.kind for e in rows] == ["row", "row", "row"] and not is_table_rule("\ufeff| a | b |")
    assert is_table_rule("\ufeff|---|---|")

def test_each_heading_starts_a_section_and_the_title_leads_the_path(counter):
    text = "Intro about the house and who lives in it. " * 4 + "\n\n## Kitchen\n" + "The kettle is descaled monthly. " * 5 + "\n\n## Garden\nTulips by the fence.\n"
    chunks = chunk_document(text, counter, path="memory/house.md")
    assert [(c.kind, c.heading_path) for c in chunks] == [("section", "house"), ("section", "house > Kitchen"), ("section", "house > Garden"), ("card", "house")]
    assert chunks[1].embed_text.startswith("house > Kitchen\n\n## Kitchen")
    single = chunk_document("# Note\n\nOne line.\n", counter, path="memory/n.md")
    assert [c.kind for c in single] == ["section"]  # one section, no front matter: no card


def test_byte_level_tokenizer_budget_enforced(tmp_path):
    """A tokenizer whose counts do not add up over lines (byte-level BPE counts newlines):
    a real tokenizer trained here, so the exact re-check path runs."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = ["The agent remembers the user's editor preference.", "我喜欢喝绿茶", "## Heading\n\ntext"] * 50
    tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.save(str(tmp_path / "tokenizer.json"))
    (tmp_path / "config.json").write_text('{"max_position_embeddings": 64}')
    counter = load_token_counter(str(tmp_path))
    assert not counter.additive
    assert counter.window == 64
    text = "# Notes\n" + "\n".join(f"fact {n}\n\n" + "short " * (n % 7) for n in range(80))
    chunks = chunk_markdown(text, counter, budget_tokens=32)
    check_invariants(text, chunks, counter, 32)


def test_every_chat_turn_is_also_a_chunk_of_its_own(counter):
    text = ("# 2025-01-06\n\n[09:14] Sam: We finally bought it: a used Skoda Octavia.\n[09:15] Lena: Nice!\n"
            "and more from Lena\n[09:16] Sam: ok\n\nA plain paragraph.\n")
    chunks = chunk_document(text, counter, path="memory/2025-01-06.md")
    check_invariants(text, chunks, counter, counter.window)
    turns = [(c.start_line, c.end_line, c.text) for c in chunks if c.kind == "item"]
    # "Sam: ok" says too little to be found alone (fewer than TURN_MIN_WORDS): its section holds it.
    assert turns == [(3, 3, "[09:14] Sam: We finally bought it: a used Skoda Octavia."),
                     (4, 5, "[09:15] Lena: Nice!\nand more from Lena")]
    assert all(c.heading_path.endswith("2025-01-06") for c in chunks if c.kind == "item")
    plain = "# Notes\n\nNote: this is one line.\nAnd a second line that is prose.\n\n- Sam: an item\n"
    assert [c.kind for c in chunk_document(plain, counter, path="notes.md")] == ["section"]


def test_a_chat_log_with_a_blank_line_after_each_turn_has_a_chunk_per_turn(counter):
    text = ("# 2025-01-06\n\n**Sam:** We finally bought it: a used Skoda Octavia.\n\n**Lena:** Nice, which colour?\n\n"
            "**Sam:** ok\n\n**Lena:** see you at the garage\n")
    chunks = chunk_document(text, counter, path="memory/2025-01-06.md")
    check_invariants(text, chunks, counter, counter.window)
    assert [(c.start_line, c.text) for c in chunks if c.kind == "item"] == [
        (3, "**Sam:** We finally bought it: a used Skoda Octavia."), (5, "**Lena:** Nice, which colour?"),
        (9, "**Lena:** see you at the garage")]


def test_a_cjk_turn_counts_its_words_without_spaces(counter):
    # CJK is written without spaces: a sentence is one run of word characters, yet many words
    # (counted by its bigrams, as the keyword terms read it); a one- or two-character reply is short.
    text = ("# 2025-01-06\n\n[09:14] 小明: 我们终于买了一辆二手的斯柯达明锐。\n[09:15] 小红: 太好了！什么颜色的？\n"
            "[09:16] 小明: 好\n[09:17] たろう: 昨日、中古のシュコダを買いました。\n[09:18] はなこ: いいね！\n")
    chunks = chunk_document(text, counter, path="memory/2025-01-06.md")
    check_invariants(text, chunks, counter, counter.window)
    assert [c.start_line for c in chunks if c.kind == "item"] == [3, 4, 6]
