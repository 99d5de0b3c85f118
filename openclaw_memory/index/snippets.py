"""A result's passages: the entries of a file that answer, with their exact lines.

OpenClaw users saw the start of the file instead of the passage that matched
(#47730); a 700-character window around the line with most hits cited a dozen
lines for a one-line answer. Here (``build_passages``) a file's candidate chunks
are cut into entries (``chunking.entries``: list items, paragraphs, table rows,
chat-log turns, code blocks, headings), each entry is scored by the ranking's
own signals (its chunk's cosine, the query terms its lines hold), and the
passage is the best chunk's best entry, widened to what it needs to be read and
a small context budget, never past its chunk; a few more of the file's entries
that score nearly as well are passages of their own. A heading that matched only
by its date is never the passage.

Inside an entry longer than the snippet limit, or a code block, the passage is a
window (``make_passage``): whole lines centred on the line with the most
query-term hits, grown on both sides while it fits; a single longer line is cut
around its first hit. A window that would open inside a fenced code block starts
at the fence's line instead when the lines up to it fit (deep inside a long block
it is the window's own lines). Every passage knows its exact lines: the citation
names them, the snippet is what they hold, and reading the citation gives them back.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass, replace

import regex

from .blocks import (
    CODE,
    FENCE,
    HEADING,
    ROW,
    TURN,
    TURN_MIN_WORDS,
    WORD,
    block_start,
    entries,
    fence_end,
    is_table_rule,
    turn_text,
    word_count,
)
from .terms import DATE_PREFIX, TermFinder, fold, fold_spans, hit_count

MAX_SNIPPET = 700
# Two files' best passages that say nearly the same (a line copied forward from day to day, one
# remark made in several sessions) are one answer, shown once naming both: each copy shown takes
# the place of a file that holds another instance of what was asked. "Nearly": one adds a few words
# to the other (none in another's place), this share of their word pairs in common (order counts:
# "Anna owes Ben" is not "Ben owes Anna"), no number or negation among the words added.
SAME_PAIRS = 0.8
_NEGATION = frozenset("not no never nothing none nobody nor cannot".split())


@dataclass(frozen=True)
class Passage:
    text: str
    start_line: int  # 1-based, inclusive, in the file
    end_line: int
    value: float = 0.0  # build_passages: its fused signals (its chunk's cosine, its own lines' share of the query)


def make_passage(
    body: str, first_line: int, patterns: list[re.Pattern], limit: int = MAX_SNIPPET, fence: str = "", fence_line: int = 0
) -> Passage:
    """The snippet of a chunk whose text ``body`` starts at file line ``first_line``, with its lines.

    ``fence``/``fence_line``: the opening fence (text, file line) of the code block the chunk
    starts inside, when it does.
    """
    lines = body.split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        return Passage("", first_line, first_line)
    if fence and fence_line == first_line - 1:
        # The block's fence is the line before the chunk: it goes in front, as context for the window.
        # (One further up is not shown: a snippet is exactly the lines it cites, and lines between
        # left out made the citation read as the block's first lines, not the window.)
        lo, hi, text = _window([fence, *lines], patterns, limit, first=1)
        return Passage(text, fence_line if lo == 0 else first_line + lo - 1, first_line + hi - 1)
    lo, hi, text = _window(lines, patterns, limit)
    return Passage(text, first_line + lo, first_line + hi)


def _fence_openers(lines: list[str]) -> list[int | None]:
    """Per line, the index of the fence line that opened the code block it is inside, its closing
    fence included (None: outside)."""
    out: list[int | None] = [None] * len(lines)
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        end = fence_end(lines, i, m.group(1))
        out[i + 1 : end + 1] = [i] * (end - i)
        i = end + 1
    return out


def _window(lines: list[str], patterns: list[re.Pattern], limit: int, first: int = 0) -> tuple[int, int, str]:
    """(first index, last index, text) of the window; ``first``: lines before it are context only."""
    hits = [hit_count(fold(line), patterns) if i >= first else 0 for i, line in enumerate(lines)]
    best = max(range(first, len(lines)), key=lambda i: (hits[i], -i)) if any(hits) else _first_text_line(lines[first:]) + first
    if len(lines[best]) > limit:
        return best, best, _cut_line(lines[best], patterns, limit)
    lo = hi = best
    size = len(lines[best])
    grew = True
    while grew:
        grew = False
        # Prefer the side with more hits, then below (the text that follows a heading).
        sides = sorted(
            [s for s in ("up", "down") if (s == "up" and lo > 0) or (s == "down" and hi < len(lines) - 1)],
            key=lambda s: -(hits[lo - 1] if s == "up" else hits[hi + 1]),
        )
        for side in sides:
            i = lo - 1 if side == "up" else hi + 1
            if size + 1 + len(lines[i]) > limit:
                continue
            size += 1 + len(lines[i])
            lo, hi = (i, hi) if side == "up" else (lo, i)
            grew = True
    opener = _fence_openers(lines)[lo]
    if opener is not None and sum(len(line) + 1 for line in lines[opener : hi + 1]) - 1 <= limit:
        lo = opener  # opened by the block's fence line, when the lines up to it fit
    # Deep inside a long block the window is its own lines: it was the fence line and then the
    # window, cited from the fence, so that reading the citation gave the block's first lines.
    return lo, hi, "\n".join(lines[lo : hi + 1])


def _first_text_line(lines: list[str]) -> int:
    for i, line in enumerate(lines):
        if line.strip():
            return i
    return 0


def _cut_line(line: str, patterns: list[re.Pattern], limit: int) -> str:
    starts = [start for start, _end in fold_spans(line, lambda folded: [m.span() for p in patterns for m in [p.search(folded)] if m])]
    centre = min(starts) if starts else 0
    start = max(0, min(centre - limit // 2, len(line) - limit))
    end = start + limit
    # Only between graphemes, as the chunker cuts an over-long line: a cut inside one showed a lone
    # regional indicator (and every flag after it misread), a bare ZWJ or a skin-tone swatch. Both
    # ends move inwards, so the snippet stays within the limit; a window inside one grapheme longer
    # than it (a chain of ZWJ emoji) is cut between code points, as the chunker cuts that.
    inner_start, inner_end = start, end
    while inner_start < end and _joined(line, inner_start):
        inner_start += 1
    while inner_end > inner_start and _joined(line, inner_end):
        inner_end -= 1
    return line[inner_start:inner_end] if inner_start < inner_end else line[start:end]


# An extended grapheme cluster (UAX #29), tried on two code points: whether they are one (a letter
# and its marks, an emoji and its variation selector, skin-tone modifier or tag characters, Hangul
# jamo, CR LF). Only what needs more than the pair is decided apart (``_joined``).
_GRAPHEME = regex.compile(r"\X", regex.DOTALL)
_REGIONAL_RUN = regex.compile("[\U0001F1E6-\U0001F1FF]+", regex.REVERSE)  # matched backwards from a point


def _joined(line: str, p: int) -> bool:
    """Whether ``line[p - 1]`` and ``line[p]`` are of one grapheme, so that no cut falls between them."""
    if not 0 < p < len(line):
        return False
    a, b = line[p - 1], line[p]
    if a == "\u200d":  # a ZWJ joins what follows it (the next emoji of a family), the pair alone cannot tell
        return True
    if _REGIONAL_RUN.fullmatch(a + b):
        # Flags are regional indicators paired from the start of their run: joined after an odd count.
        run = _REGIONAL_RUN.match(line, 0, p)
        return run is not None and (p - run.start()) % 2 == 1
    if "\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff":  # a surrogate pair (a string made with surrogatepass)
        return True
    match = _GRAPHEME.match(line, p - 1, p + 1)
    return match is not None and match.end() > p


# -- passages: the entries that matched, each with its own lines and score ------------------------

MAX_PASSAGES = 3
# A passage shorter than this is given its neighbouring entries as context (whole entries, in its chunk).
CONTEXT_CHARS = 320
MORE_CONTEXT_CHARS = 80  # ... and the file's other passages this much
# Another entry of the file is a passage of its own when it scores at least this share of the best.
SECOND_SHARE = 0.8


@dataclass(frozen=True)
class ChunkText:
    """What a passage can be built from: one candidate chunk of a file, with its signals."""

    body: str
    first_line: int  # the body's first line in the file (1-based)
    v: float  # the chunk's cosine to the query (0 in text mode)
    fence: str = ""  # the chunk starts inside a code block opened by this line ...
    fence_line: int = 0  # ... at this file line


@dataclass
class _Entry:
    first: int  # file lines, 1-based, inclusive
    last: int
    kind: str
    depth: int
    terms: frozenset  # the query's terms its lines hold
    v: float  # the cosine of the most specific chunk holding it ...
    span: int  # ... that chunk's lines (an item chunk of MEMORY.md beats its section)
    k: float = 0.0  # the share of the query's weight it holds
    value: float = 0.0  # its fused signals (``build_passages``' ``fuse(v, k)``)

    @property
    def own_chunk(self) -> bool:
        """Whether the entry is a chunk of its own, so that its cosine is its own."""
        return self.span == self.last - self.first + 1

    @property
    def pointed(self) -> bool:
        """Whether the signals point at this entry's own lines: it holds query terms (a heading:
        terms other than numbers), or it is a chunk of its own (a ``MEMORY.md`` item)."""
        return self.k > 0 or (self.own_chunk and self.kind != HEADING)


def build_passages(
    chunks: list[ChunkText],
    terms: dict[str, float],
    patterns: Callable[[], list[re.Pattern]],
    fuse: Callable[[float, float], float],
    max_passages: int = MAX_PASSAGES,
    limit: int = MAX_SNIPPET,
    finder: TermFinder | None = None,
) -> list[Passage]:
    """A file's passages, best first, each with its lines and its ``value`` (fused signals).

    ``chunks``: the file's candidate chunks, best first; ``terms``: the query's keyword terms with
    their weights (IDF); ``fuse(v, k)``: the ranking's fusion of a cosine and a keyword share;
    ``patterns()``: the query's words, for a window inside an entry longer than ``limit`` (asked
    for only then).

    Every entry of the chunks (list item, paragraph, table row, chat-log turn, code block,
    heading) gets the cosine of the smallest chunk holding it (a ``MEMORY.md`` item's own, before
    its section's) and ``k``, the share of the query's weight its own lines hold, a term counting
    less the more of the file's entries hold it (``Theo`` in a file about Theo). A heading's
    numbers (a daily note's date) count for nothing. The best passage is the best chunk's best
    entry; then up to ``max_passages - 1`` more of the file's entries the signals point at, each
    scoring at least ``SECOND_SHARE`` of the best entry; each widened (``_widen``), none overlapping.
    """
    lines: dict[int, str] = {}  # file line -> text, from the chunks' bodies
    ranges: list[tuple[int, int]] = []  # each chunk's lines, blank tail left out
    found: dict[tuple[int, int], _Entry] = {}
    finder = finder or TermFinder(terms)
    on_line: dict[int, frozenset] = {}  # file line -> the query's terms it holds (none: not there)
    for chunk in chunks:
        body = chunk.body.split("\n")
        while body and not body[-1].strip():
            body.pop()
        if not body:
            ranges.append((chunk.first_line, chunk.first_line - 1))
            continue
        span = len(body)
        ranges.append((chunk.first_line, chunk.first_line + span - 1))
        if any(chunk.first_line + i not in lines for i in range(span)):  # not all seen in a chunk before
            for i, text in enumerate(body):
                lines.setdefault(chunk.first_line + i, text)
            for i, words in finder.by_line(chunk.body).items():
                on_line.setdefault(chunk.first_line + i, words)
        inside = bool(chunk.fence) and 0 < chunk.fence_line < chunk.first_line
        for unit in entries(body, in_fence=inside):
            if unit.kind == ROW and is_table_rule(body[unit.first]):
                continue
            key = (chunk.first_line + unit.first, chunk.first_line + unit.last)
            have = found.get(key)
            if have is None:
                words = on_line.get(key[0], _NONE) if key[0] == key[1] else frozenset().union(
                    *(on_line.get(n, _NONE) for n in range(key[0], key[1] + 1)))
                if unit.kind == HEADING:  # a heading's numbers and dates (a daily note's date) count for nothing
                    words = frozenset(t for t in words if not _numeric(t) and not t.startswith(DATE_PREFIX))
                found[key] = _Entry(*key, unit.kind, unit.depth, words, chunk.v, span)
            elif (span, -chunk.v) < (have.span, -have.v):
                have.v, have.span = chunk.v, span
    if not found:
        return []
    every = sorted(found.values(), key=lambda e: (e.first, e.last))
    firsts = [e.first for e in every]
    _share(every, terms)
    for e in every:
        e.value = fuse(e.v, e.k)
    value = {id(e): e.value for e in every}
    out: list[Passage] = []

    def overlaps(a: int, b: int) -> bool:
        return any(p.start_line <= b and a <= p.end_line for p in out)

    # The best passage: the best chunk's best entry (or, when the signals point at none of its
    # entries, its first entry that is not a heading).
    lo, hi = ranges[0]
    inner = [e for e in every if lo <= e.first and e.last <= hi]
    best = max((e for e in inner if e.pointed), key=lambda e: (value[id(e)], e.k, -e.first), default=None)
    if best is None:
        best = next((e for e in inner if e.kind != HEADING), None)
    if best is None:
        first = chunks[0]
        out.append(make_passage(first.body, first.first_line, patterns(), limit, first.fence, first.fence_line))
    else:
        passage = _widen(best, every, firsts, lines, chunks[0], ranges[0], patterns, limit, out, CONTEXT_CHARS)
        out.append(replace(passage, value=value[id(best)]))
    # More passages: the file's other entries the signals point at, scoring nearly as well.
    ranked = sorted((e for e in every if e.pointed), key=lambda e: (-value[id(e)], -e.k, e.span, e.first))
    for e in ranked:
        if len(out) >= max_passages or value[id(e)] < SECOND_SHARE * value[id(ranked[0])]:
            break
        if overlaps(e.first, e.last):
            continue
        # It may widen within the widest candidate holding it (a MEMORY.md item: its section).
        room = max((i for i, (a, b) in enumerate(ranges) if a <= e.first and e.last <= b), key=lambda i: ranges[i][1] - ranges[i][0])
        passage = _widen(e, every, firsts, lines, chunks[room], ranges[room], patterns, limit, out, MORE_CONTEXT_CHARS)
        if not overlaps(passage.start_line, passage.end_line):
            out.append(replace(passage, value=value[id(e)]))
    return out


_NONE: frozenset = frozenset()


def _share(every: list[_Entry], terms: dict[str, float]) -> None:
    """Each entry's ``k``: the weight of the query terms it holds over the query's whole weight,
    a term held by ``c`` of the file's ``n`` entries weighted by ``log(1 + n/c) / log(1 + n)``."""
    total = sum(terms.values()) or 1.0
    counts: dict[str, int] = {}
    for e in every:
        for t in e.terms:
            counts[t] = counts.get(t, 0) + 1
    n = len(every)
    scale = math.log(1 + n)
    weight = {t: terms[t] * math.log(1 + n / c) / scale / total for t, c in counts.items()}
    for e in every:
        if e.terms:
            e.k = sum(weight[t] for t in e.terms)


def _numeric(term: str) -> bool:
    return not any(ch.isalpha() for ch in term)


def _widen(e: _Entry, every: list[_Entry], firsts: list[int], lines: dict[int, str], chunk: ChunkText,
           bounds: tuple[int, int], patterns: Callable[[], list[re.Pattern]], limit: int, taken: list[Passage],
           budget: int) -> Passage:
    """The entry, with what it needs to be read (the text under a heading, a table's header row,
    a nested item's parent, a chat turn's reply), its best-scoring neighbour when that answers
    about as well (``_answers_with``), and then whole neighbouring entries, the one scoring higher
    first, while the passage is under ``budget`` characters: never past the chunk
    (``bounds``), the snippet ``limit`` or into a passage already ``taken``. An entry longer than
    the limit, or a code block, is a window of its lines (``make_passage``: cut around its best
    lines, opened by its fence)."""
    lo_chunk, hi_chunk = bounds  # ``every`` is in first-line order, ``firsts`` its first lines
    if e.kind == CODE or _size(lines, e.first, e.last) > limit:
        body = "\n".join(lines.get(k, "") for k in range(e.first, e.last + 1))
        fence = chunk.fence if e.first == chunk.first_line else ""
        return make_passage(body, e.first, patterns(), limit, fence, chunk.fence_line if fence else 0)
    at = bisect_left(firsts, lo_chunk)
    own = [x for x in every[at : bisect_right(firsts, hi_chunk)] if x.last <= hi_chunk]  # in first-line order
    mine = own.index(e)
    lo, hi = e.first, e.last
    if e.kind == HEADING and mine + 1 < len(own):
        hi = own[mine + 1].last  # a heading: the text under it
    elif e.kind == ROW:
        header = next((x for x in reversed(own[:mine]) if x.kind != ROW), None)
        top = (header.last + 1) if header is not None else lo_chunk
        if top < lo and _size(lines, top, hi) <= limit and lo - top <= 4:
            lo = top  # the table's header row (and its rule)
    elif e.depth > 0:
        parent = next((x for x in reversed(own[:mine]) if x.depth < e.depth), None)
        if parent is not None and _size(lines, parent.first, hi) <= limit and e.first - parent.first <= 4:
            lo = parent.first
    size = _size(lines, lo, hi)
    below = next((k for k in range(mine, len(own)) if own[k].first > hi), len(own))  # the next entry down
    above = next((k for k in range(mine, -1, -1) if own[k].last < lo), -1)  # ... and up
    def free(k: int) -> bool:
        return 0 <= k < len(own) and not any(p.start_line <= own[k].last and own[k].first <= p.end_line for p in taken)

    if e.kind == TURN and free(below) and own[below].kind == TURN and _size(lines, lo, own[below].last) <= limit:
        # A chat turn is answered by the next one: the reply comes first. A short one ("They were
        # awestruck.") holds none of the query's words, and a long neighbour above that holds some
        # took the whole budget: the passage stopped one line before the answer.
        hi, size = own[below].last, _size(lines, lo, own[below].last)
        below += 1
    # A short neighbour (within the budget alone) that answers about as well comes whatever the
    # budget (``_answers_with``): a long entry, or one whose other neighbour took the budget,
    # stopped one entry short of the short line that answers ("- Cortado." under the question
    # about the coffee: an item with its own cosine, holding none of the query's words).
    for k in sorted((k for k in (above, below) if free(k)), key=lambda k: (-own[k].value, k == above)):
        a, b = min(lo, own[k].first), max(hi, own[k].last)
        if _answers_with(own[k], e) and _size(lines, own[k].first, own[k].last) <= budget and _size(lines, a, b) <= limit:
            lo, hi, size = a, b, _size(lines, a, b)
            above, below = (above - 1, below) if k == above else (above, below + 1)
    while size < budget:
        sides = [k for k in (above, below) if free(k)]
        # The neighbour scoring higher first (its own cosine where it is a chunk of its own, the
        # query's words it holds), else the one below.
        sides.sort(key=lambda k: (-own[k].value, k == above))
        for k in sides:
            a, b = min(lo, own[k].first), max(hi, own[k].last)
            grown = _size(lines, a, b)
            if grown <= limit:
                lo, hi, size = a, b, grown
                if k == above:
                    above -= 1
                else:
                    below += 1
                break
        else:
            break
    while lo < hi and not lines.get(lo, "").strip():
        lo += 1
    while hi > lo and not lines.get(hi, "").strip():
        hi -= 1
    return Passage("\n".join(lines.get(k, "") for k in range(lo, hi + 1)), lo, hi)


def _answers_with(near: _Entry, e: _Entry) -> bool:
    """Whether the neighbour ``near`` of the passage's entry ``e`` answers about as well as it (see
    ``_widen``), by evidence of its own: query words and a fused value ``SECOND_SHARE`` of the
    entry's (a passage of its own would), or, a chunk of its own, a cosine no lower than the
    entry's. A neighbour holding no query word in the entry's chunk has only that chunk's cosine:
    no evidence (its context is the budget's to give); nor has any in text mode (cosines 0)."""
    return (near.k > 0 and near.value >= SECOND_SHARE * e.value) or (
        near.own_chunk and near.kind != HEADING and 0 < near.v and e.v <= near.v)


def _size(lines: dict[int, str], a: int, b: int) -> int:
    return sum(len(lines.get(k, "")) + 1 for k in range(a, b + 1)) - 1


def said(text: str) -> tuple[str, ...]:
    """A passage's words as ``same_saying`` compares them: lowercased, without its headings (where
    it is, a daily note's date, not what it says) and each chat turn's head (the stamp and speaker
    that differ between the copies of one remark) but where too little is left without it. A list
    item's head is a label, part of what it says: "- Anna's flight: at 9" is not "- Ben's flight:
    at 9" (``blocks.entries`` reads no list item as a turn)."""
    words: list[str] = []
    for line in text.lower().splitlines():
        start = block_start(line)
        if start == "atx":
            continue
        rest = line if start == "item" else turn_text(line)
        words += WORD.findall(rest if word_count(rest) >= TURN_MIN_WORDS else line)
    return tuple(words)


def same_saying(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two passages' words (``said``) say the same: equal, or, with four word pairs or more,
    one saying every word of the other and a few more (never another word in one's place: "moved
    to Monday" is not "moved to Tuesday"), ``SAME_PAIRS`` of their pairs shared, and no number or
    negation among the words more."""
    if a == b:
        return bool(a)
    if len(a) < 5 or len(b) < 5:
        return False
    words_a, words_b = set(a), set(b)
    if not (words_a <= words_b or words_b <= words_a):
        return False
    if any(w[:1].isdigit() or w in _NEGATION or w.endswith(("n't", "n’t")) for w in words_a ^ words_b):
        return False
    pairs_a, pairs_b = set(zip(a, a[1:])), set(zip(b, b[1:]))
    return len(pairs_a & pairs_b) >= SAME_PAIRS * len(pairs_a | pairs_b)
