"""Markdown-aware chunking with exact line numbers and a budget in the model's own tokens.

Rules (see docs/search.md):
- a chunk's ``embed_text`` (heading path, a blank line, the text) never exceeds the budget, which
  defaults to the model's window, so nothing past the window is ever silently truncated;
- a cut is made only when the budget would overflow, preferring the start of a heading (the
  higher the level the better), then a blank line, then a plain line, each weighted by how full
  the chunk is there (never under a quarter full when another place exists);
- a fenced code block (``` or ~~~) and a front-matter block are never cut unless alone they exceed
  the budget, then they are cut between lines; a single line over budget is cut between graphemes;
- about 15% of the budget is carried over as whole trailing lines of the previous chunk, except
  after a cut at a heading, where the new section starts its own context;
- every heading starts a new chunk once the chunk before it holds a section's worth of text
  (an eighth of the budget), so one chunk is one section and its vector is not a blend of several;
- what is embedded is the file's title (its H1, else the front-matter ``title``, else the file's
  name) and the heading path, a blank line, then the text;
- a front-matter block is parsed, never chunked as text: its fields go into the file's *card*, one
  extra chunk per file (title, front-matter fields, an outline of the headings) that answers
  questions about the file as a whole;
- blank lines never start or end a chunk; every other line (front matter aside) is in at least one
  chunk;
- every chat-log turn (a line of a paragraph that reads as a chat log, see ``entries``) is also a
  chunk of its own, under its heading path, as ``MEMORY.md``'s items are (``turn_chunks``): a
  section of a long conversation blends a dozen turns into one vector.

``entries`` (:mod:`.blocks`) cuts a chunk's lines into the units a search passage is made of (list
items, paragraphs, table rows, chat-log turns, code blocks, headings); it changes nothing in the chunks.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, replace

import xxhash

from openclaw_memory.errors import UsageError

from .blocks import (
    FENCE,
    ITEM,
    LIST_ITEM,
    SETEXT,
    TURN,
    TURN_LINE,
    TURN_MIN_WORDS,
    entries,
    fence_end,
    line_pattern,
    turn_text,
    word_count,
)

# 3: every chat-log turn is also a chunk of its own. 4: turns written "**Sam:** ...", quoted, or
# a paragraph each. 5: new keyword terms (index.terms.TERMS_VERSION 1): every point is written
# again, its vector reused. 6: keyword terms version 2; no chunk of its own for a turn of fewer
# than TURN_MIN_WORDS words (a CJK run counted by its bigrams). 7: the front matter, first heading,
# list item or chat turn of a file that starts with a byte order mark. 8: the same for a list item
# before a thematic break, a table's rule and a setext title (every line pattern takes the mark).
# 9: a chat turn's chunk keeps its last line's "\r" (and trailing spaces) in a CRLF file. 10: a
# piece of an over-long line inside a code block has no fence (its snippet is that line alone).
# 11: keyword terms version 3 (words folded: café is cafe, in any Unicode form).
CHUNKER_VERSION = 11
DEFAULT_OVERLAP_RATIO = 0.15
MIN_BUDGET = 8
# The heading path may take at most this share of the budget; longer paths lose outer headings.
_PATH_SHARE = 4
# A heading starts a new chunk once the open one has this share of the budget in text.
_SECTION_SHARE = 8
CARD = "card"
SECTION = "section"

_ATX = line_pattern(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+$")
_NOT_PARAGRAPH = line_pattern(r"[ \t]*(?:[-*+>|]|\d+[.)]|#|`{3}|~{3}|<)")

# Cut preference before a unit, by what the unit starts with.
_SCORE_BLANK = 20
_SCORE_BLOCK = 15
_SCORE_LINE = 5
_SCORE_INSIDE_BLOCK = 0


@dataclass(frozen=True)
class Chunk:
    """A span of lines (1-based, inclusive) and exactly what is embedded for it."""

    start_line: int
    end_line: int
    text: str
    heading_path: str
    embed_text: str
    hash: str
    kind: str = SECTION
    fence_line: int = 0  # when the chunk starts inside a fenced code block: the fence's line (1-based)
    fence: str = ""  # ... and that line's text, so a snippet can open with it


@dataclass(frozen=True)
class FrontMatter:
    """A leading ``---`` block: its fields (lists joined with "; "), its last line (1-based, 0: none)
    and its lines as written (the passage of a file that holds nothing else)."""

    fields: dict
    end_line: int
    text: str = ""


@dataclass
class _Unit:
    first: int  # 0-based line indexes, inclusive
    last: int
    tokens: int
    score: int  # preference for a cut just before this unit
    blank: bool
    heading: bool


def make_chunk(start_line: int, end_line: int, text: str, heading_path: str) -> Chunk:
    """Build a chunk: ``embed_text`` is the heading path, a blank line and the text."""
    embed = f"{heading_path}\n\n{text}" if heading_path else text
    digest = xxhash.xxh3_128_hexdigest(embed.encode("utf-8", "surrogatepass"))
    return Chunk(start_line, end_line, text, heading_path, embed, digest)


def resolve_budget(counter, budget_tokens: int | None, overlap_tokens: int | None) -> tuple[int, int]:
    """The effective (budget, overlap): defaults, then checks against the model's window."""
    budget = counter.window if budget_tokens is None else int(budget_tokens)
    if not MIN_BUDGET <= budget <= counter.window:
        raise UsageError(
            f"openclaw-memory.toml: [index] chunk_tokens must be at most the model's window of {counter.window} "
            f"tokens (text past the window would never be embedded), and at least {MIN_BUDGET}; not {budget}"
        )
    overlap = round(budget * DEFAULT_OVERLAP_RATIO) if overlap_tokens is None else int(overlap_tokens)
    if not 0 <= overlap <= budget // 2:
        raise UsageError(f"openclaw-memory.toml: [index] overlap_tokens must be from 0 to half the chunk budget "
                         f"({budget // 2}); not {overlap}")
    return budget, overlap


def chunk_markdown(
    text: str, counter, budget_tokens: int | None = None, overlap_tokens: int | None = None, path: str | None = None
) -> list[Chunk]:
    """Cut one Markdown file's text into section chunks (see the module docstring for the rules).

    ``path`` names the file, whose name is the title when it has neither an H1 nor a front-matter title.
    """
    budget, overlap = resolve_budget(counter, budget_tokens, overlap_tokens)
    if not text.strip():
        return []
    return _sections(_chunker(text, counter, budget, overlap, path)[0])


def chunk_document(
    text: str,
    counter,
    budget_tokens: int | None = None,
    overlap_tokens: int | None = None,
    path: str | None = None,
    items: bool = False,
) -> list[Chunk]:
    """The file's section chunks, its list items with ``items`` (a file of durable facts, one a
    line: ``MEMORY.md``), its chat-log turns, then its card (when it has front matter or more than one section)."""
    budget, overlap = resolve_budget(counter, budget_tokens, overlap_tokens)
    if not text.strip():
        return []
    chunker, front = _chunker(text, counter, budget, overlap, path)  # one per file: it counts every line's tokens
    sections = _sections(chunker)
    extra = list_items(chunker) if items else []
    extra += turn_chunks(chunker)
    card = make_card(chunker, front, sections)
    return sections + extra + ([card] if card is not None else [])


def _chunker(text: str, counter, budget: int, overlap: int, path: str | None) -> tuple[_Chunker, FrontMatter]:
    """The file's lines with its front matter blanked (line numbers kept), ready to cut."""
    lines = text.split("\n")
    front = parse_front_matter(lines)
    body = [""] * front.end_line + lines[front.end_line :]
    return _Chunker(body, counter, budget, overlap, document_title(body, front, path)), front


def _sections(chunker: _Chunker) -> list[Chunk]:
    chunks = chunker.run()
    if chunker.counter.additive:
        return chunks  # counts of lines add up exactly: every chunk is within budget already
    return [fitted for chunk in chunks for fitted in _enforce_budget(chunk, chunker.counter, chunker.budget)]


def list_items(chunker: _Chunker) -> list[Chunk]:
    """One chunk per top-level list item (with its continuation lines), under its heading path.

    A section of MEMORY.md holds a dozen unrelated facts; embedded together, none of them is
    found by a question that shares no words with it. Embedded one by one, each is.
    """
    body = chunker.lines
    inside: set[int] = set()
    for first, last in chunker.blocks.items():
        inside.update(range(first, last + 1))
    out: list[Chunk] = []
    i = 0
    while i < len(body):
        if i in inside or not LIST_ITEM.match(body[i]):
            i += 1
            continue
        end = i
        while end + 1 < len(body) and body[end + 1].strip() and not LIST_ITEM.match(body[end + 1]) and end + 1 not in inside \
                and not chunker.paths.heading_level.get(end + 1):
            end += 1
        chunk = make_chunk(i + 1, end + 1, "\n".join(body[i : end + 1]), chunker._path(i)[0])
        if chunker.counter.count(chunk.embed_text) <= chunker.budget:
            out.append(replace(chunk, kind=ITEM))
        i = end + 1
    return out


def turn_chunks(chunker: _Chunker) -> list[Chunk]:
    """One chunk per chat-log turn (``entries``: a paragraph most of whose lines start a turn, one
    entry per turn), under its heading path; none when the file has no such paragraph.

    A section of a long conversation holds a dozen turns about different things; embedded
    together, a question that shares no word with its answering turn ("car" for a Skoda) does not
    find it. Embedded one by one, the turn is found (its section chunk still carries the context).
    A turn of fewer than ``TURN_MIN_WORDS`` words has no chunk of its own.
    """
    body = chunker.lines
    if not any(TURN_LINE.match(line) for line in body):
        return []
    out: list[Chunk] = []
    for e in entries(body):
        if e.kind != TURN:
            continue
        last = e.last
        while last > e.first and not body[last].strip():
            last -= 1
        # Its lines as they are, a CRLF file's "\r" too (rstrip took the last one's: a passage of
        # the turn and its reply was then not the lines it cites).
        text = "\n".join(body[e.first : last + 1])
        if word_count(turn_text(text)) < TURN_MIN_WORDS:
            continue
        chunk = make_chunk(e.first + 1, last + 1, text, chunker._path(e.first)[0])
        if chunker.counter.count(chunk.embed_text) <= chunker.budget:
            out.append(replace(chunk, kind=ITEM))
    return out


def make_card(chunker: _Chunker, front: FrontMatter, sections: list[Chunk]) -> Chunk | None:
    """The file's card: what it is about as a whole, cited at its first section.

    Its embedded text is the title, the front-matter fields (summary, description, tags, ...)
    and an outline of the headings; a file of one section without front matter needs none.
    """
    if not front.fields and len(sections) <= 1:
        return None
    title = chunker.title
    outline = [t for t in _outline(chunker.lines) if t != title]
    parts = [title] + [v for k, v in front.fields.items() if k != "title" and v]
    if outline:
        parts.append("Sections: " + "; ".join(outline))
    embed = "\n\n".join(p for p in parts if p)
    if chunker.counter.count(embed) > chunker.budget:
        embed = chunker.counter.split_to_fit(embed, chunker.budget)[0].rstrip()
    if sections:
        start, end, text = sections[0].start_line, sections[0].end_line, sections[0].text
    else:
        # Front matter and nothing else: its lines are what a result shows and cites (with no text,
        # the result was an empty snippet at L1-L1, where reading the citation gave "---").
        start, end, text = 1, max(1, front.end_line), front.text
    digest = xxhash.xxh3_128_hexdigest(embed.encode("utf-8", "surrogatepass"))
    return Chunk(start, end, text, title, embed, digest, CARD)


def parse_front_matter(lines: list[str]) -> FrontMatter:
    """A YAML front-matter block's scalar and list fields (the subset Markdown notes use)."""
    if not lines or _unmarked(lines[0]).rstrip() != "---":
        return FrontMatter({}, 0)
    end = next((k for k in range(1, len(lines)) if lines[k].rstrip() in ("---", "...")), None)
    if end is None:
        return FrontMatter({}, 0)
    fields: dict[str, list[str]] = {}
    key = None
    for line in lines[1:end]:
        m = _FM_KEY.match(line)
        if m:
            key = m.group(1)
            value = m.group(2).strip()
            if value.startswith("[") and value.endswith("]"):
                items = [_unquote(v) for v in value[1:-1].split(",")]
            else:
                items = [_unquote(value)] if value and value not in ("|", ">", "|-", ">-") else []
            fields[key] = items
        elif key is not None and line.strip():
            item = line.strip()
            fields[key].append(_unquote(item[2:] if item.startswith("- ") else item))
    return FrontMatter({k: "; ".join(v for v in vs if v) for k, vs in fields.items()}, end + 1, "\n".join(lines[: end + 1]))


_FM_KEY = re.compile(r"^([A-Za-z_][\w-]*)[ \t]*:(.*)$")


def _unmarked(first_line: str) -> str:
    """A file's first line without its byte order mark (an older Notepad saves UTF-8 with one): the
    front matter's ``---`` is what it is (it was chunked as text, its fields shown in snippets and
    missing from the card). The mark stays in the chunk's text, which is the line exactly as
    ``read`` gives it; the line patterns take it (``blocks.line_pattern``)."""
    return first_line.removeprefix("\ufeff")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def document_title(lines: list[str], front: FrontMatter, path: str | None) -> str:
    """The first H1, else the front-matter title, else the file's name without extension."""
    blocks = _blocks(lines)
    paths = _heading_paths(lines, blocks)
    for line, level in sorted(paths.heading_level.items()):
        if level == 1 and paths.at(line):
            return paths.at(line)[-1]
    if front.fields.get("title"):
        return front.fields["title"]
    if path:
        name = path.replace("\\", "/").rsplit("/", 1)[-1]
        return name[:-3] if name.lower().endswith(".md") else name
    return ""


def _outline(lines: list[str]) -> list[str]:
    paths = _heading_paths(lines, _blocks(lines))
    return [paths.at(line)[-1] for line in sorted(paths.heading_level) if paths.at(line)]


class _Chunker:
    def __init__(self, lines: list[str], counter, budget: int, overlap: int, title: str = ""):
        self.lines = lines
        self.title = title
        self.min_section = budget // _SECTION_SHARE
        self.counter = counter
        self.budget = budget
        self.overlap = overlap
        self.line_tokens = counter.count_many(lines)
        self.blocks = _blocks(lines)
        self.paths = _heading_paths(lines, self.blocks)
        self.has_h1 = 1 in self.paths.heading_level.values()
        self.path_cache: dict[tuple[str, ...], tuple[str, int]] = {}
        self.avail_cache: dict[int, int] = {}
        self.units = self._units()
        self.chunks: list[Chunk] = []

    # -- structure ---------------------------------------------------------------------------

    def _units(self) -> list[_Unit]:
        lines, tok, blocks = self.lines, self.line_tokens, self.blocks
        units: list[_Unit] = []
        i = 0
        while i < len(lines):
            end = blocks.get(i)
            if end is not None:
                tokens = sum(tok[i : end + 1])
                if tokens <= self._avail(i):
                    units.append(_Unit(i, end, tokens, _SCORE_BLOCK, False, False))
                else:
                    # Too big alone: cut between its lines, after any better place outside it.
                    units.append(self._line_unit(i, _SCORE_BLOCK))
                    units.extend(self._line_unit(k, _SCORE_INSIDE_BLOCK) for k in range(i + 1, end + 1))
                i = end + 1
                continue
            units.append(self._line_unit(i, None))
            i += 1
        return units

    def _line_unit(self, i: int, score: int | None) -> _Unit:
        line = self.lines[i]
        blank = not line.strip()
        heading_level = self.paths.heading_level.get(i)
        if score is None:
            if heading_level:
                score = 100 - 10 * heading_level
            elif blank or (i > 0 and not self.lines[i - 1].strip()):
                score = _SCORE_BLANK
            else:
                score = _SCORE_LINE
        return _Unit(i, i, self.line_tokens[i], score, blank, bool(heading_level))

    def _path(self, line: int) -> tuple[str, int]:
        """The heading path in force at ``line``, shortened to its share of the budget, and its tokens."""
        key = self.paths.at(line)
        # The title leads the path unless an H1 already does (a file's later H1s stand alone).
        if self.title and (not key or not self.has_h1) and key[:1] != (self.title,):
            key = (self.title, *key)
        hit = self.path_cache.get(key)
        if hit is None:
            hit = _fit_path(key, self.counter, self.budget // _PATH_SHARE)
            self.path_cache[key] = hit
        return hit

    def _avail(self, line: int) -> int:
        avail = self.avail_cache.get(line)
        if avail is None:
            avail = self.avail_cache[line] = self.budget - self._path(line)[1]
        return avail

    # -- assembly ----------------------------------------------------------------------------

    def run(self) -> list[Chunk]:
        units = self.units
        start = self._content_from(0)
        i = start
        total = 0  # tokens of units[start:i]
        while i < len(units):
            unit = units[i]
            if unit.heading and i > start and self._text_tokens(start, i) >= self.min_section:
                self._emit(start, i)
                start, total = i, 0
                continue
            if unit.first == unit.last and unit.tokens > self._avail(unit.first):
                self._emit(start, i)
                self._emit_long_line(unit.first)
                start = i = self._content_from(i + 1)
                total = 0
                continue
            avail = self._avail(units[start].first)
            if total + unit.tokens <= avail:
                total += unit.tokens
                i += 1
                continue
            cut = self._best_cut(start, i, avail)
            self._emit(start, cut)
            start = self._next_start(start, cut, i)
            total = sum(u.tokens for u in units[start:i])
        self._emit(start, len(units))
        return self.chunks

    def _text_tokens(self, a: int, b: int) -> int:
        return sum(u.tokens for u in self.units[a:b] if not (u.blank or u.heading))

    def _content_from(self, k: int) -> int:
        while k < len(self.units) and self.units[k].blank:
            k += 1
        return k

    def _best_cut(self, start: int, i: int, avail: int) -> int:
        """The unit index in (start, i] before which to cut.

        Each place scores its kind (heading, blank line, block edge, plain line) weighted by how
        full the chunk would be, so a heading wins from a quarter full on, while a plain line wins
        only near the end; places leaving the chunk under a quarter full are never taken (unless
        no other exists), so chunks do not shrink to their overlap.
        """
        best, best_key = i, None
        running = 0
        floor = avail // 4
        for j in range(start + 1, i + 1):
            running += self.units[j - 1].tokens
            if running < floor and j < i:
                continue
            weight = self.units[j].score * (0.3 + 0.7 * min(1.0, running / avail))
            key = (weight, j)
            if best_key is None or key >= best_key:
                best, best_key = j, key
        return best

    def _next_start(self, start: int, cut: int, i: int) -> int:
        """Where the chunk after a cut starts: whole trailing units of the last one as overlap."""
        units = self.units
        if cut < len(units) and units[cut].heading:
            return self._content_from(cut)
        k, carried = cut, 0
        while k - 1 > start and carried + units[k - 1].tokens <= self.overlap:
            k -= 1
            carried += units[k].tokens
        k = self._content_from(k)
        # The overlap must leave room for what follows, or the next cut would repeat it.
        while k < cut and sum(u.tokens for u in units[k : i + 1]) > self._avail(units[k].first):
            k = self._content_from(k + 1)
        return k if k < cut else self._content_from(cut)

    def _emit(self, a: int, b: int) -> None:
        """Emit units[a:b] as one chunk, blank lines at either end trimmed."""
        while a < b and self.units[a].blank:
            a += 1
        while b > a and self.units[b - 1].blank:
            b -= 1
        if a >= b:
            return
        first, last = self.units[a].first, self.units[b - 1].last
        path = self._path(first)[0]
        text = "\n".join(self.lines[first : last + 1])
        self.chunks.append(self._in_fence(make_chunk(first + 1, last + 1, text, path), first))

    def _in_fence(self, chunk: Chunk, first: int) -> Chunk:
        """Record the opening fence of the code block ``first`` (0-based) is inside, if any."""
        for start, end in self.blocks.items():
            if start < first <= end and FENCE.match(self.lines[start]):
                from dataclasses import replace

                return replace(chunk, fence_line=start + 1, fence=self.lines[start])
        return chunk

    def _emit_long_line(self, i: int) -> None:
        path = self._path(i)[0]
        # A piece is part of its line, never a whole line: no fence goes in front of its snippet
        # (the fence line and a piece were cited as two whole lines: not the lines they cite).
        for piece in self.counter.split_to_fit(self.lines[i], self._avail(i)):
            if piece.strip():
                self.chunks.append(make_chunk(i + 1, i + 1, piece, path))


def _enforce_budget(chunk: Chunk, counter, budget: int) -> list[Chunk]:
    """For tokenizers whose counts do not add up over lines (byte-level BPE counts newlines):
    halve an over-budget chunk by lines, or re-cut a single line with a smaller piece budget."""
    if counter.count(chunk.embed_text) <= budget:
        return [chunk]
    lines = chunk.text.split("\n")
    if len(lines) > 1:
        out: list[Chunk] = []
        mid = len(lines) // 2
        for offset, part in ((0, lines[:mid]), (mid, lines[mid:])):
            keep = [k for k, line in enumerate(part) if line.strip()]
            if keep:
                text = "\n".join(part[keep[0] : keep[-1] + 1])
                first = chunk.start_line + offset + keep[0]
                piece = make_chunk(first, chunk.start_line + offset + keep[-1], text, chunk.heading_path)
                out.extend(_enforce_budget(piece, counter, budget))
        return out
    piece_budget = budget - counter.count(chunk.heading_path)
    while piece_budget >= 1:
        pieces = [
            make_chunk(chunk.start_line, chunk.end_line, p, chunk.heading_path)
            for p in counter.split_to_fit(chunk.text, piece_budget)
            if p.strip()
        ]
        if all(counter.count(p.embed_text) <= budget for p in pieces):
            return pieces
        piece_budget -= max(1, piece_budget // 8)
    raise UsageError(f"The chunk budget of {budget} tokens is too small for this model's tokenizer.")


# -- Markdown structure --------------------------------------------------------------------------


def _blocks(lines: list[str]) -> dict[int, int]:
    """Atomic blocks: first line index -> last line index, for fences and front matter."""
    blocks: dict[int, int] = {}
    i = 0
    if lines and _unmarked(lines[0]).rstrip() == "---":
        for k in range(1, len(lines)):
            if lines[k].rstrip() in ("---", "..."):
                blocks[0] = k
                i = k + 1
                break
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            end = fence_end(lines, i, m.group(1))
            blocks[i] = end
            i = end + 1
        else:
            i += 1
    return blocks


class _Paths:
    """Heading paths per line, computed once for the file."""

    def __init__(self) -> None:
        self.heading_level: dict[int, int] = {}  # line index where a heading's title starts
        self._changes: list[tuple[int, tuple[str, ...]]] = []
        self._starts: list[int] = []

    def at(self, line: int) -> tuple[str, ...]:
        """The titles of the headings in force at ``line`` (its own heading included)."""
        index = bisect_right(self._starts, line)
        return self._changes[index - 1][1] if index else ()

    def add(self, line: int, titles: tuple[str, ...], level: int) -> None:
        self.heading_level[line] = level
        self._changes.append((line, titles))
        self._starts.append(line)


def _heading_paths(lines: list[str], blocks: dict[int, int]) -> _Paths:
    paths = _Paths()
    stack: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        if i in blocks:
            i = blocks[i] + 1
            continue
        level, title, first = _heading_at(lines, i)
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            if title:
                stack.append((level, title))
            paths.add(first, tuple(t for _, t in stack), level)
        i += 1
    return paths


def _heading_at(lines: list[str], i: int) -> tuple[int, str, int]:
    """(level, title, first line) of a heading ending at line ``i``, or (0, "", i)."""
    line = lines[i]
    m = _ATX.match(line)
    if m:
        title = _ATX_CLOSE.sub("", m.group(2) or "").strip()
        return len(m.group(1)), title, i
    m = SETEXT.match(line)
    if m and i > 0 and _is_paragraph(lines[i - 1]):
        return (1 if m.group(1)[0] == "=" else 2), lines[i - 1].removeprefix("\ufeff").strip(), i - 1
    return 0, "", i


def _is_paragraph(text: str) -> bool:
    # The line before is never inside a block: blocks are skipped whole, and a closing fence or
    # front-matter line does not read as a paragraph.
    return bool(text.strip()) and not _NOT_PARAGRAPH.match(text) and not SETEXT.match(text)


def _fit_path(titles: tuple[str, ...], counter, cap: int) -> tuple[str, int]:
    """Join titles with " > ", dropping outer ones (and cutting the last) to stay within ``cap``."""
    for skip in range(len(titles)):
        path = " > ".join(titles[skip:])
        tokens = counter.count(path)
        if tokens <= cap:
            return path, tokens
    if not titles or cap < 1:
        return "", 0
    path = counter.split_to_fit(titles[-1], cap)[0].strip()
    return path, counter.count(path)
