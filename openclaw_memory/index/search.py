"""Search an agent's collections: ranked by file, answered by passage, on one calibrated score.

1. **Candidates.** Each collection returns its nearest chunks by cosine and its best chunks by
   the engine's BM25 over the ``terms`` field. Every candidate then gets both signals exactly:
   its cosine (a keyword-only candidate's stored vector against the query's) and its BM25
   computed again with the *agent's* statistics (``index.bm25``; a chunk's length without its
   CJK bigrams), so a file scores the same whichever collection holds it.
2. **Per file.** A chunk's keyword signal is its BM25 over the BM25 of "every query term once"
   (clamped to [0, 1]); its meaning signal the cosine. A file takes, per signal, its best chunk
   (adding 0.3 x its next two measured worse: MEMORY.md's many items then outweigh the one
   note that answers), and the two are fused: ``0.5 x vector + 0.5 x keywords ** 1.25`` in
   hybrid mode (``KEYWORD_POWER``), blended 0.7 : 0.3 with its best chunk's own fused value
   (``BEST_CHUNK_SHARE``); either signal alone in the single modes.
3. **Calibration.** That raw value is mapped to a score in [0, 1] by a monotone piecewise-linear
   table per mode, fitted on the benchmark's development queries, so the score reads as "how
   likely this is an answer", the same in every mode, and the default ``min_score`` returns
   nothing when no file answers (docs/search.md has the table and how to refit it).
4. **Results.** One per file, with its passages (``snippets.build_passages``, from its best
   candidates): the best chunk's best entry, and up to two more entries of the file that
   score nearly as well, each with its lines and own score; the newest dated note on a
   subject before older ones that answer about as well (``_prefer_newer``); optional temporal decay of dated
   notes and MMR diversity (OpenClaw's ``memorySearch.query.hybrid`` settings), best passages of
   several files that say the same shown once (``snippets.same_saying``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date

from ..types import SEARCH_MODES, typed_day
from .blocks import line_pattern
from .bm25 import Bm25
from .chunking import CARD
from .filters import note_date
from .results import DEFAULT_MIN_SCORE, HitPassage, SearchHit, SearchResult  # noqa: F401  re-exported: the package and callers import them from here
from .snippets import ChunkText, build_passages, said, same_saying
from .store.base import BODY_FIELD, PATH_FIELD, TERMS_FIELD, Shard
from .terms import (
    CJK_RUN,
    DATE_PREFIX,
    TermFinder,
    answer_kind_terms,
    date_hits,
    date_terms,
    keyword_terms,
    number_fixes,
    query_terms,
    spelling_fixes,
    term_patterns,
)

MODES = SEARCH_MODES
# What a candidate needs: where it is, its kind and its terms (BM25); the passage fields (body,
# fence) are read only for the results, not for every candidate.
CANDIDATE_FIELDS = (PATH_FIELD, "startLine", "endLine", "kind", TERMS_FIELD)
PASSAGE_FIELDS = (BODY_FIELD, "fence", "fenceLine", "heading")
CANDIDATES = 24  # per collection and signal (48 and 100 measured the same on the benchmark)
# A shown file's passages are built from its best candidates: at most this many (12 and 16: one
# line hit fewer on the development set), scoring at least this share of its best one (0.7: one
# best passage fewer; 0.6 reads 40% fewer chunks than none, for the same passages).
PASSAGE_CHUNKS = 8
PASSAGE_FLOOR = 0.6
VECTOR_WEIGHT = 0.5
# A file's keyword signal enters the hybrid fusion as k ** KEYWORD_POWER: matching a few of the
# query's words is common among unrelated files (a large docs corpus holds "chat", "cost", "run"
# somewhere), matching nearly all of them is not, so the evidence grows faster than the share
# matched (Lucene's classic "coord" factor, softened). Development MRR (with BEST_CHUNK_SHARE):
# 1.0 0.804, 1.1 0.810, 1.25 and 1.4 0.823, 1.5 0.827 with one answer out of the first five;
# 1.75 and 2 lost the CJK queries (their keyword signal is lower: a long query of characters and
# bigrams, partly matched).
KEYWORD_POWER = 1.25
# A file's fused value: (1 - BEST_CHUNK_SHARE) x (fusion of its best cosine and its best keyword
# signal, which may come from different chunks) + BEST_CHUNK_SHARE x (its best chunk's own fused
# value). A file of many candidates (MEMORY.md's items, a long page) takes each maximum from
# another chunk; one chunk that matches in meaning and in words is the better evidence.
BEST_CHUNK_SHARE = 0.3
# The newest note on a subject first (``_prefer_newer``): a dated note is put before an older dated
# note ranked above it when its raw value is at most RECENCY_MARGIN lower, and the two are about
# the same subject: the newer holds at least RECENCY_SHARE of the (IDF-weighted) query terms the
# older holds, and what they share is at least RECENCY_QUERY_SHARE of the query's weight.
RECENCY_MARGIN = 0.15
RECENCY_SHARE = 0.7
RECENCY_QUERY_SHARE = 0.3
# A newer dated note that names the older one by its date ("the 2026-04-02 decision is
# superseded") is a follow-up on it, whatever query words the two share: it moves before it from
# up to this far below (its own words may be others than the question's: "switched to" for "picked"),
# if it scores DEFAULT_MIN_SCORE at least.
RECENCY_NAMED_MARGIN = 0.25

# Calibration: raw value -> score, per mode: monotone, piecewise linear, fitted (isotonic) on the
# development queries of ../shared/eval so that a score is the share of results scoring about the
# same that answer the question (docs/search.md: the table, and how to refit it). Hybrid: fitted on
# the answerable and the off-topic questions together (bench/offtopic.json: every result of
# theirs is a wrong answer), the knot at 0.2 placing DEFAULT_MIN_SCORE just below the lowest answer.
CALIBRATION = {
    "hybrid": ((0.0, 0.0), (0.2, 0.026), (0.25, 0.041), (0.3, 0.096), (0.4, 0.182), (0.5, 0.328), (0.6, 0.33),
               (0.7, 0.5), (0.8, 0.714), (0.9, 0.875), (1.0, 0.95)),
    "vector": ((0.0, 0.0), (0.25, 0.019), (0.3, 0.032), (0.35, 0.074), (0.4, 0.11), (0.5, 0.201), (0.6, 0.26),
               (0.7, 0.512), (0.8, 0.767), (1.0, 0.95)),
    "text": ((0.0, 0.0), (0.1, 0.03), (0.2, 0.092), (0.4, 0.112), (0.6, 0.225), (0.8, 0.43), (0.9, 0.5), (1.0, 0.841)),
}
# A search answers a question when its best file scores ``min_score``; the other files of its
# results need this share of it (0 and 0.5 measured the same on the development set and the chat
# log: docs/search.md). OpenClaw drops every result below its minScore.
TAIL_SHARE = 0.5
# DEFAULT_MIN_SCORE (index.results): below it (hybrid raw ~0.213) no answer of a development query
# was found (the lowest: raw 0.217), while 17 of the 40 off-topic questions end there.


@dataclass(frozen=True)
class Ranking:
    """Re-ranking options (OpenClaw's ``memorySearch.query.hybrid``): MMR and temporal decay."""

    mmr: bool = False
    mmr_lambda: float = 0.7
    decay: bool = False
    half_life_days: float = 30.0
    prefer_newer: bool = True  # the newest dated note on a subject first (``_prefer_newer``)


@dataclass
class _Candidate:
    id: str
    payload: dict
    source: str
    v: float = 0.0  # cosine, clamped at 0
    k: float = 0.0  # keyword signal: BM25 over the BM25 of "every query term once", clamped to [0, 1]
    vector: Sequence[float] | None = None


@dataclass
class _File:
    path: str
    chunks: list = field(default_factory=list)
    raw: float = 0.0
    score: float = 0.0
    v: float = 0.0  # its best cosine and its best keyword signal: what the fusion weighed
    k: float = 0.0


def calibrate(mode: str, raw: float) -> float:
    table = CALIBRATION[mode]
    if raw <= table[0][0]:
        return table[0][1]
    for (x0, y0), (x1, y1) in zip(table, table[1:]):
        if raw <= x1:
            return y0 + (y1 - y0) * (raw - x0) / (x1 - x0) if x1 > x0 else y1
    return table[-1][1]


def fuse(mode: str, v: float, k: float) -> float:
    if mode == "vector":
        return v
    if mode == "text":
        return k
    return VECTOR_WEIGHT * v + (1 - VECTOR_WEIGHT) * k


def fuse_file(mode: str, v: float, k: float) -> float:
    """A file's fused value from its signals: as ``fuse``, the keyword signal raised to
    ``KEYWORD_POWER`` in hybrid mode (the passages of a file are ranked by ``fuse``)."""
    return fuse(mode, v, k**KEYWORD_POWER if mode == "hybrid" else k)


class QueryPlan:
    """A query prepared once (terms, vector, statistics) and run against each shard."""

    def __init__(
        self,
        query: str,
        mode: str,
        vector: Sequence[float] | None,
        limit: int,
        bm25: Bm25,
        ids: set[str] | None = None,
        ranking: Ranking = Ranking(),
    ):
        if vector is None and mode != "text":
            raise ValueError(f"a {mode} search needs the query's vector")
        self.query = query
        self.mode = mode
        self.vector = vector
        self.limit = limit
        self.bm25 = bm25
        self.allowed = ids  # None: every point; else only these (filters)
        self.ranking = ranking
        # A word no chunk holds (a typo) is read as the nearest one a chunk does (terms.spelling_fixes):
        # as written it matches nothing and only lowers every chunk's share of the query.
        fixes = spelling_fixes(query, bm25.df) if bm25.chunks else {}
        # A number in words that no chunk holds is read in digits where a chunk holds those, and the
        # other way round (terms.number_fixes: "sixtieth" for a note's "60th").
        keywords = keyword_terms(query)
        fixes |= number_fixes(keywords, bm25.df) if bm25.chunks else {}
        # The noun of "which date" / "what time" says what kind of answer is wanted, not a word it holds.
        kinds = answer_kind_terms(query)
        words = (fixes.get(t, t) for t in keywords if t not in kinds)
        self.terms = dict.fromkeys(absent_grams_dropped(words, bm25), 1.0)
        self.full = bm25.full_match(self.terms)
        self._patterns: list[re.Pattern] | None = None
        self.pool = max(limit * 4, CANDIDATES)
        self._passage_terms: tuple[dict[str, float], TermFinder] | None = None

    @property
    def patterns(self) -> list[re.Pattern]:
        """The query's words as patterns, for a window inside a long entry: compiled only when one is
        needed (a dozen patterns per query cost more than building the passages)."""
        if self._patterns is None:
            self._patterns = term_patterns(query_terms(self.query))
        return self._patterns

    def passage_terms(self) -> tuple[dict[str, float], TermFinder]:
        """The query's terms with their weights (IDF), and their finder, for the passages (once per
        query); its dates as date terms (``terms.date_terms``), so the entry of that date is found,
        written any way."""
        if self._passage_terms is None:
            weights = {t: self.bm25.idf(t) for t in self.terms}
            dates = date_terms(self.query)
            if dates:  # a date of the query weighs as much as one of its average words
                unit = sum(weights.values()) / len(weights) if weights else 1.0
                weights.update({t: w * unit for t, w in dates.items()})
            self._passage_terms = weights, TermFinder(weights)
        return self._passage_terms

    def candidates(self, shard: Shard, source: str) -> list[_Candidate]:
        found: dict[str, _Candidate] = {}
        ids = sorted(self.allowed) if self.allowed is not None else None
        want_vectors = self.ranking.mmr and self.mode != "text"
        fields = CANDIDATE_FIELDS if self.mode != "vector" else CANDIDATE_FIELDS[:-1]
        # Set for every mode but text (checked in __init__).
        vector = self.vector
        if vector is not None and self.mode in ("vector", "hybrid"):
            for hit in shard.dense_query(vector, self.pool, ids=ids, fields=fields):
                found[hit.id] = _Candidate(hit.id, hit.payload, source, v=max(0.0, hit.score))
        if self.mode in ("text", "hybrid") and self.terms:
            text = " ".join(self.terms)
            for hit in shard.text_query(TERMS_FIELD, text, self.pool, ids=ids, with_vector=self.mode == "hybrid", fields=CANDIDATE_FIELDS):
                if hit.id not in found:
                    c = found[hit.id] = _Candidate(hit.id, hit.payload, source)
                    if hit.vector is not None:
                        c.v = max(0.0, _dot(self.vector, hit.vector))
                        c.vector = hit.vector
        if want_vectors:
            missing = [i for i, c in found.items() if c.vector is None]
            for hit in shard.retrieve(missing, with_vector=True, fields=()):
                found[hit.id].vector = hit.vector
        if self.mode != "vector":
            for c in found.values():
                c.k = self.keyword_share(str(c.payload.get(TERMS_FIELD, "")))
        return list(found.values())

    def keyword_share(self, terms: str) -> float:
        """A chunk's keyword signal (``terms``: its ``terms`` field): its BM25 over the BM25 of
        "every query term once", clamped to [0, 1]."""
        return min(1.0, self.bm25.score(self.terms, terms) / self.full) if self.full > 0 else 0.0


def absent_grams_dropped(terms: Iterable[str], bm25: Bm25) -> list[str]:
    """The query's keyword terms less its CJK grams that no chunk holds.

    CJK text is indexed as character unigrams and bigrams (``terms.keyword_terms``), so a Chinese
    question gives grams that are no word of any note: a bigram across two of its words (``少钱``
    of ``多少钱``), a question particle. One that no chunk holds matches nothing and only lowers every
    chunk's share of the query (``k``), so the cosine weighs more, and the default model, English
    only, puts any Chinese text near any Chinese question: a note answering a Chinese question in
    its own words ranked below Chinese notes about something else. A word in Latin letters that no
    chunk holds stays in the query: it is the subject asked about (an off-topic question's word,
    or a paraphrase the model may still relate), and its absence is evidence.
    """
    if not bm25.chunks:
        return list(terms)
    return [t for t in terms if not (CJK_RUN.fullmatch(t) and bm25.df(t) == 0)]


def _dot(a, b) -> float:
    import numpy as np

    return float(np.dot(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)))


def score_files(plan: QueryPlan, candidates: list[_Candidate]) -> list[_File]:
    """Candidates grouped per file, each file with its raw fused value and calibrated score."""
    files: dict[str, _File] = {}
    for c in candidates:
        path = str(c.payload.get(PATH_FIELD, ""))
        files.setdefault(path, _File(path)).chunks.append(c)
    for f in files.values():
        f.v = v = max(c.v for c in f.chunks) if plan.mode != "text" else 0.0
        f.k = k = max(c.k for c in f.chunks) if plan.mode != "vector" else 0.0
        f.raw = fuse_file(plan.mode, v, k)
        if plan.mode == "hybrid":  # the single modes have one signal: their best chunk is their max
            best = max(fuse_file(plan.mode, c.v, c.k) for c in f.chunks)
            f.raw = (1 - BEST_CHUNK_SHARE) * f.raw + BEST_CHUNK_SHARE * best
        f.score = calibrate(plan.mode, f.raw)
    return list(files.values())


def rank(
    plan: QueryPlan, candidates: list[_Candidate], min_score: float, dates: dict | None = None, today=None, fetch=None
) -> list[SearchHit]:
    """Files scored, decayed/diversified when asked, cut on ``min_score`` (the best file must reach
    it, the others ``TAIL_SHARE`` of it), one passage each.

    ``fetch(candidates)`` adds the passage fields to the payloads of the candidates shown
    (None: the payloads already hold them).
    """
    files = score_files(plan, candidates)
    if plan.ranking.decay and dates:
        for f in files:
            age = dates.get(f.path)
            if age is not None and today is not None:
                f.score *= 0.5 ** (max(0, (today - age).days) / plan.ranking.half_life_days)
    # The cut decides whether the question is answered at all: by its best file. The files after
    # it need TAIL_SHARE of it, so that the second and third sessions telling what was asked
    # (scoring far below the first) stay; an off-topic question still gets nothing.
    answered = any(f.score >= min_score for f in files)
    files = [f for f in files if answered and f.score >= min_score * TAIL_SHARE and f.score > 0]
    files.sort(key=lambda f: (-f.score, f.path))
    if plan.ranking.prefer_newer and plan.mode != "vector":
        files = _prefer_newer(plan, files)
    if plan.ranking.mmr:
        files = _mmr(files, plan.ranking.mmr_lambda, plan.limit * 2)
    hits: list[SearchHit] = []
    seen: list[tuple[str, ...]] = []  # what each hit's best passage says (``snippets.said``)
    # Files until the limit is reached, past those whose passage says what an earlier one does;
    # their passage chunks are chosen and their fields read as they are needed: the files still
    # wanted and one more (it may be a copy of one shown), in one read.
    chosen: list[list[_Candidate]] = []
    for i, f in enumerate(files):
        if i >= len(chosen):
            batch = files[i: i + plan.limit - len(hits) + 1]
            chosen += [_passage_chunks(plan, g) for g in batch]
            if fetch is not None:
                fetch([c for chunks in chosen[i:] for c in chunks])
        chunks = chosen[i]
        passages, words = _passages(plan, f.path, chunks)
        best = passages[0]
        twin = next((n for n, other in enumerate(seen) if same_saying(words, other)), None)
        if twin is not None:  # another file's best passage says the same: shown once, naming both
            hits[twin] = replace(hits[twin], also_in=hits[twin].also_in + (f.path,))
            continue
        if len(hits) == plan.limit:
            break
        seen.append(words)
        hits.append(
            SearchHit(
                path=f.path,
                start_line=best.start_line,
                end_line=best.end_line,
                score=f.score,
                snippet=best.snippet,
                source=chunks[0].source,
                vector_score=f.v if plan.mode != "text" else None,
                text_score=f.k if plan.mode != "vector" else None,
                passages=tuple(passages),
                date=best.date,
            )
        )
    return hits


def _prefer_newer(plan: QueryPlan, files: list[_File]) -> list[_File]:
    """Among dated notes on one subject that answer about as well, the newest first.

    ``files`` best first. A dated note (``memory/YYYY-MM-DD*.md``) moves just before an older
    dated note ranked above it when its raw value is within ``RECENCY_MARGIN`` of the older one's
    (and of every file between them) and both are about the same subject (the query terms their
    candidate chunks hold, dates left out: see ``RECENCY_SHARE``, ``RECENCY_QUERY_SHARE``); it then
    takes the older note's score, so scores stay in order. ``MEMORY.md`` and undated files never move and are never passed; a newer note that
    shares too little of the query with the older one (another subject) or scores much lower
    stays where it is. A newer note whose candidate chunks name the older note's date (a
    correction: "the 2026-04-02 decision is superseded") is on its subject by that alone, and
    moves from up to ``RECENCY_NAMED_MARGIN`` below.
    """
    weights, _finder = plan.passage_terms()
    total = sum(w for t, w in weights.items() if not t.startswith(DATE_PREFIX))  # a date is no subject
    if total <= 0:
        return files
    dates = {f.path: note_date(f.path) for f in files}
    if sum(1 for d in dates.values() if d is not None) < 2:
        return files
    held: dict[str, frozenset] = {}

    def terms_of(f: _File) -> frozenset:
        if f.path not in held:
            # Its best chunk's terms: a newer note whose chunks hold the subject's words only here
            # and there (a chat session mentioning the drill, and borrowing something else) is
            # not on that subject.
            best = max(f.chunks, key=lambda c: (fuse(plan.mode, c.v, c.k), c.k))
            words = set(str(best.payload.get(TERMS_FIELD, "")).split())
            held[f.path] = frozenset(t for t in weights if t in words and not t.startswith(DATE_PREFIX))
        return held[f.path]

    def same_subject(older: _File, newer: _File) -> bool:
        theirs = sum(weights[t] for t in terms_of(older))
        shared = sum(weights[t] for t in terms_of(older) & terms_of(newer))
        return theirs > 0 and shared >= RECENCY_SHARE * theirs and shared >= RECENCY_QUERY_SHARE * total

    days_named: dict[str, frozenset] = {}

    def names(f: _File, day: date) -> bool:
        """Whether ``f``'s candidate chunks write ``day`` (an ISO date is an identifier term)."""
        if f.path not in days_named:
            days_named[f.path] = frozenset(t for c in f.chunks for t in _ISO_DAY.findall(str(c.payload.get(TERMS_FIELD, ""))))
        return day.isoformat() in days_named[f.path]

    order = list(files)
    # A file scoring more than the margin below the last one shown never passes it: it stays unseen.
    shown = files[min(len(files), 2 * plan.limit) - 1].raw - max(RECENCY_MARGIN, RECENCY_NAMED_MARGIN)
    for f in files:
        day = dates[f.path]
        if day is None or f.raw < shown:
            continue
        at = order.index(f)
        for i, older in enumerate(order[:at]):
            was = dates[older.path]
            if was is None or was >= day:
                continue
            # Within the margin of every file it would pass (no chain of small steps up).
            below = max(g.raw for g in order[i:at]) - f.raw
            if not (below <= RECENCY_MARGIN and same_subject(older, f)) and not (
                    # A note the default cut drops (a search with a lower min_score) is no answer to move up.
                    below <= RECENCY_NAMED_MARGIN and f.score >= DEFAULT_MIN_SCORE and names(f, was)):
                continue
            order.remove(f)
            order.insert(i, f)
            f.score = max(f.score, older.score)
            break
    return order


def _passage_chunks(plan: QueryPlan, f: _File) -> list[_Candidate]:
    """The file's candidates its passages are built from: its best sections and items (its card
    only when none is a candidate), best first (PASSAGE_CHUNKS, PASSAGE_FLOOR)."""
    sections = sorted([c for c in f.chunks if c.payload.get("kind") != CARD] or f.chunks,
                      key=lambda c: (-fuse(plan.mode, c.v, c.k), int(c.payload.get("startLine", 0))))
    floor = PASSAGE_FLOOR * fuse(plan.mode, sections[0].v, sections[0].k)
    return [c for c in sections[:PASSAGE_CHUNKS] if fuse(plan.mode, c.v, c.k) >= floor]


def _passages(plan: QueryPlan, path: str, chunks: list[_Candidate]) -> tuple[list[HitPassage], tuple[str, ...]]:
    """The file's passages, best first (snippets.build_passages), each scored on the calibrated
    scale and dated (``passage_date``), and what its best one says (``snippets.said``)."""
    texts = [
        ChunkText(str(c.payload.get(BODY_FIELD, "")), int(c.payload.get("startLine", 1)), c.v if plan.mode != "text" else 0.0,
                  fence=str(c.payload.get("fence", "")), fence_line=int(c.payload.get("fenceLine", 0) or 0))
        for c in chunks
    ]
    weights, finder = plan.passage_terms()
    built = build_passages(texts, weights, lambda: plan.patterns, lambda v, k: fuse(plan.mode, v, k), finder=finder)
    if not built:
        first = chunks[0].payload
        start = int(first.get("startLine", 1))
        return [HitPassage(start, start, 0.0, "", date=passage_date(path, chunks, start))], ()
    return [HitPassage(b.start_line, b.end_line, calibrate(plan.mode, b.value), b.text,
                       date=passage_date(path, chunks, b.start_line)) for b in built], said(built[0].text)


_ISO_DAY = re.compile(r"(?<!\S)\d{4}-\d{2}-\d{2}(?!\S)")
_HEADING_LINE = line_pattern(r" {0,3}#{1,6}[ \t]")


def _full_date(text: str) -> str:
    """The last date with year, month and day written in ``text`` (``YYYY-MM-DD``) that names a day
    (a note named 2026-02-30 was shown that date and filtered by its modification day), or ""."""
    days = [t[len(DATE_PREFIX):] for _i, terms in date_hits(text.lower()) for t in terms
            if len(t) == len(DATE_PREFIX) + 10]
    days = [d for d in days if _a_day(d)]
    return days[-1] if days else ""


def _a_day(raw: str) -> bool:
    try:
        typed_day(raw)
    except ValueError:
        return False
    return True


def passage_date(path: str, chunks: list[_Candidate], line: int) -> str:
    """The date a passage starting at file line ``line`` sits under: the last dated heading above
    it in the smallest candidate chunk holding it (the chunk's heading path, then the heading
    lines of its body before the passage: a chat log's session, a dated section of MEMORY.md),
    else the dated note's own date (``filters.note_date``), else ""."""
    holding = [c for c in chunks if int(c.payload.get("startLine", 0)) <= line <= int(c.payload.get("endLine", 0))]
    if holding:
        c = min(holding, key=lambda c: int(c.payload.get("endLine", 0)) - int(c.payload.get("startLine", 0)))
        first = int(c.payload.get("startLine", 1))
        body = str(c.payload.get(BODY_FIELD, "")).split("\n")[: max(0, line - first + 1)]
        for text in reversed([t for t in body if _HEADING_LINE.match(t)]):
            day = _full_date(text)
            if day:
                return day
        day = _full_date(str(c.payload.get("heading", "")))
        if day:
            return day
    dated = note_date(path)
    return dated.isoformat() if dated else ""


def _mmr(files: list[_File], lam: float, keep: int) -> list[_File]:
    """Maximal marginal relevance over files (similarity: cosine of their best chunks' vectors)."""
    import numpy as np

    def vec(f: _File):
        best = max(f.chunks, key=lambda c: c.v)
        return None if best.vector is None else np.asarray(best.vector, dtype=np.float32)

    pool = [(f, vec(f)) for f in files]
    chosen: list[tuple[_File, object]] = []
    while pool and len(chosen) < keep:
        def gain(item):
            f, v = item
            sim = max((float(np.dot(v, w)) for _g, w in chosen if v is not None and w is not None), default=0.0)
            return lam * f.score - (1 - lam) * sim

        best = max(pool, key=gain)
        pool.remove(best)
        chosen.append(best)
    return [f for f, _v in chosen] + [f for f, _v in pool]

