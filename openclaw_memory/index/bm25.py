"""BM25 with one statistic per agent: document frequencies and lengths over all its collections.

The engine's own BM25 is computed inside each shard, so a term's weight depended on which
collection held the file: ``MEMORY.md`` alone in its collection lost to the big ``memory/`` one
(a term found only there ranked it 37th). Here the engine only finds candidates (its BM25 over
the ``terms`` field); their scores are computed again with the agent's statistics, as if all its
collections were one corpus.

Each collection's statistics (chunks, total length, document frequency per term) are counted
from its points after an index run that rebuilt it, and changed by the terms of the chunks a
smaller run wrote and removed; saved with its manifest (the state database's ``term_stats``: the
totals; ``term_df``: one row per term, so a change touches its terms' rows alone). A search adds
up those of the agent's collections, reading the frequencies of its query's terms only.
"""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..database import Database, in_batches
from .store.base import TERMS_FIELD
from .terms import CJK_RUN

K1 = 1.2
B = 0.75


def doc_length(text: str, terms: list[str]) -> int:
    """A chunk's length for BM25 (``text``: its ``terms`` field; ``terms``: that split): its terms
    less its CJK bigrams, for the statistics' average and for each chunk alike.

    A CJK run of n characters gives n unigrams and n - 1 bigrams (``terms.keyword_terms``), so
    counting every term made a Chinese note look twice as long as its text and cut its keyword
    signal against English chunks of the same size; its unigrams measure it as a word count does.
    """
    if text.isascii():  # no CJK, no bigram: the count (the common case, no scan of the terms)
        return len(terms)
    return sum(1 for t in terms if not (len(t) == 2 and t[0] >= "\u3040" and CJK_RUN.fullmatch(t)))


@dataclass(frozen=True)
class TermStats:
    chunks: int = 0
    length: int = 0
    df: dict = field(default_factory=dict)

    def count(self, term: str) -> int:
        """Chunks holding ``term``."""
        return self.df.get(term, 0)


@dataclass(frozen=True)
class TermChange:
    """What a sync's write does to a collection's statistics: the totals after it, and each
    touched term's change of document frequency (terms of the chunks removed and added)."""

    chunks: int
    length: int
    df: dict  # term -> change (nonzero)


class StatsCount:
    """Statistics counted from points' ``terms`` fields as they come: a shard an index run builds
    from nothing is counted while it is written, not scrolled afterwards (reading every point's
    terms back mapped its payload pages: 2.5 s and 40 MB more RSS at 50,000 points)."""

    def __init__(self) -> None:
        self.chunks = self.length = 0
        self.df: Counter = Counter()

    def add(self, terms_of_points: Iterable[str]) -> None:
        for text in terms_of_points:
            terms = text.split()
            self.chunks += 1
            self.length += doc_length(text, terms)
            self.df.update(set(terms))

    def stats(self) -> TermStats:
        return TermStats(self.chunks, self.length, dict(self.df))


def count_stats(terms_of_points: Iterable[str]) -> TermStats:
    """Statistics of a collection from its points' ``terms`` fields."""
    count = StatsCount()
    count.add(terms_of_points)
    return count.stats()


def scan_stats(shard) -> TermStats:
    return count_stats(str(h.payload.get(TERMS_FIELD, "")) for h in shard.scroll([TERMS_FIELD]))


def change_stats(data_dir: Path, collection: str, gone: Iterable[str], added: Iterable[str]) -> TermChange | None:
    """The saved statistics less the points whose terms are ``gone``, plus those of ``added``, as
    a change of the terms they hold (their rows read by key, never the whole vocabulary); None
    where they do not add up (the saved statistics were not what the shard held, or none are)."""
    head = _head(Database(data_dir).one, collection)
    if head is None:
        return None
    minus, plus = count_stats(gone), count_stats(added)
    delta = Counter(plus.df)
    delta.subtract(minus.df)
    delta = Counter({t: n for t, n in delta.items() if n})
    # Every chunk removed must be among those the saved frequencies count (the rows of its terms,
    # read by key): a term it held that fewer chunks hold means they were not what the shard held.
    saved = _df_rows(Database(data_dir).rows, collection, list(minus.df))
    if any(saved.get(t, 0) < n for t, n in minus.df.items()) or minus.chunks > head[0]:
        return None
    return TermChange(head[0] - minus.chunks + plus.chunks, head[1] - minus.length + plus.length, dict(delta))


def save_stats(conn: sqlite3.Connection, collection: str, stats: TermStats | TermChange) -> None:
    """In the caller's transaction (the one that saves the manifest): the totals, and every
    term's row anew (``TermStats``) or the touched terms' rows changed (``TermChange``)."""
    conn.execute("INSERT OR REPLACE INTO term_stats VALUES (?, ?, ?)",
                 (collection, time.time_ns(), json.dumps({"chunks": stats.chunks, "length": stats.length})))
    if isinstance(stats, TermStats):
        conn.execute("DELETE FROM term_df WHERE collection = ?", (collection,))
        conn.executemany("INSERT INTO term_df VALUES (?, ?, ?)", [(collection, t, n) for t, n in stats.df.items() if n > 0])
        return
    conn.executemany("INSERT INTO term_df VALUES (?, ?, ?) ON CONFLICT (collection, term) DO UPDATE SET df = df + excluded.df",
                     [(collection, t, n) for t, n in stats.df.items()])
    conn.executemany("DELETE FROM term_df WHERE collection = ? AND term = ? AND df <= 0",
                     [(collection, t) for t, n in stats.df.items() if n < 0])


def stats_serial(data_dir: Path, collection: str) -> int | None:
    """What changes at every save of the collection's statistics (None: none saved): a cache key."""
    row = Database(data_dir).one("SELECT serial FROM term_stats WHERE collection = ?", (collection,))
    return row[0] if row else None


def load_stats(data_dir: Path, collection: str) -> TermStats | None:
    """The saved statistics whole, every term's row (a check; a search reads :func:`saved_stats`)."""
    db = Database(data_dir)
    head = _head(db.one, collection)
    if head is None:
        return None
    return TermStats(head[0], head[1], dict(db.rows("SELECT term, df FROM term_df WHERE collection = ?", (collection,))))


def saved_stats(data_dir: Path, collection: str) -> SavedStats | None:
    """The saved statistics as a search reads them: the totals now, a term's frequency when asked."""
    head = _head(Database(data_dir).one, collection)
    return SavedStats(data_dir, collection, head[0], head[1]) if head is not None else None


class SavedStats:
    """A collection's saved totals, and the document frequency of each term a search asks for,
    read by key and kept (a query reads a few terms, a typo's neighbours a few hundred: never
    the whole vocabulary, which at 30,000 notes cost a cold search a 100,000-term parse)."""

    def __init__(self, data_dir: Path, collection: str, chunks: int, length: int):
        self.data_dir, self.collection = data_dir, collection
        self.chunks, self.length = chunks, length
        self._df: dict[str, int] = {}

    def count(self, term: str) -> int:
        n = self._df.get(term)
        if n is None:
            row = Database(self.data_dir).one("SELECT df FROM term_df WHERE collection = ? AND term = ?", (self.collection, term))
            n = self._df[term] = int(row[0]) if row else 0
        return n


def _head(one, collection: str) -> tuple[int, int] | None:
    row = one("SELECT data FROM term_stats WHERE collection = ?", (collection,))
    if row is None:
        return None
    try:
        data = json.loads(row[0])
        return int(data["chunks"]), int(data["length"])
    except (ValueError, KeyError, TypeError):
        return None


def _df_rows(rows, collection: str, terms: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for part, marks in in_batches(terms):
        found.update(rows(f"SELECT term, df FROM term_df WHERE collection = ? AND term IN ({marks})", (collection, *part)))
    return found


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75) over the sum of some collections' statistics."""

    def __init__(self, parts: Iterable[TermStats | SavedStats]):
        parts = list(parts)
        self.chunks = sum(p.chunks for p in parts)
        length = sum(p.length for p in parts)
        self.avg = length / self.chunks if self.chunks else 1.0
        self._parts = parts
        self._idf: dict[str, float] = {}

    def df(self, term: str) -> int:
        return sum(p.count(term) for p in self._parts)

    def idf(self, term: str) -> float:
        value = self._idf.get(term)
        if value is None:
            n = self.df(term)
            value = self._idf[term] = math.log(1 + (self.chunks - n + 0.5) / (n + 0.5))
        return value

    def score(self, query: dict[str, float], text: str) -> float:
        """BM25 of a chunk (``text``: its ``terms`` field) for ``query`` (term -> weight)."""
        doc_terms = text.split()
        if not doc_terms:
            return 0.0
        tf = Counter(t for t in doc_terms if t in query)
        length = doc_length(text, doc_terms)
        norm = K1 * (1 - B + B * length / self.avg)
        return sum(w * self.idf(t) * tf[t] * (K1 + 1) / (tf[t] + norm) for t, w in query.items() if tf[t])

    def full_match(self, query: dict[str, float]) -> float:
        """What a chunk of average length holding every query term once scores: the scale of "all matched"."""
        return sum(w * self.idf(t) for t, w in query.items())
