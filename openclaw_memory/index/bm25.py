"""BM25 with one statistic per agent: document frequencies and lengths over all its collections.

The engine's own BM25 is computed inside each shard, so a term's weight depended on which
collection held the file: ``MEMORY.md`` alone in its collection lost to the big ``memory/`` one
(a term found only there ranked it 37th). Here the engine only finds candidates (its BM25 over
the ``terms`` field); their scores are computed again with the agent's statistics, as if all its
collections were one corpus.

Each collection's statistics (chunks, total length, document frequency per term) are counted
from its points after every index run that wrote to it, and saved with its manifest (the state
database's ``term_stats``); a search adds up those of the agent's collections.
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

from ..database import Database
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

    def to_json(self) -> dict:
        return {"chunks": self.chunks, "length": self.length, "df": self.df}


def count_stats(terms_of_points: Iterable[str]) -> TermStats:
    """Statistics of a collection from its points' ``terms`` fields."""
    df: Counter = Counter()
    chunks = length = 0
    for text in terms_of_points:
        terms = text.split()
        chunks += 1
        length += doc_length(text, terms)
        df.update(set(terms))
    return TermStats(chunks, length, dict(df))


def scan_stats(shard) -> TermStats:
    return count_stats(str(h.payload.get(TERMS_FIELD, "")) for h in shard.scroll([TERMS_FIELD]))


def save_stats(conn: sqlite3.Connection, collection: str, stats: TermStats) -> None:
    """In the caller's transaction (the one that saves the manifest)."""
    conn.execute("INSERT OR REPLACE INTO term_stats VALUES (?, ?, ?)",
                 (collection, time.time_ns(), json.dumps(stats.to_json(), ensure_ascii=False, separators=(",", ":"))))


def stats_serial(data_dir: Path, collection: str) -> int | None:
    """What changes at every save of the collection's statistics (None: none saved): a cache key."""
    row = Database(data_dir).one("SELECT serial FROM term_stats WHERE collection = ?", (collection,))
    return row[0] if row else None


def load_stats(data_dir: Path, collection: str) -> TermStats | None:
    row = Database(data_dir).one("SELECT data FROM term_stats WHERE collection = ?", (collection,))
    if row is None:
        return None
    try:
        data = json.loads(row[0])
        return TermStats(int(data["chunks"]), int(data["length"]), dict(data["df"]))
    except (ValueError, KeyError, TypeError):
        return None


class Bm25:
    """Okapi BM25 (k1 1.2, b 0.75) over the sum of some collections' statistics."""

    def __init__(self, parts: Iterable[TermStats]):
        parts = list(parts)
        self.chunks = sum(p.chunks for p in parts)
        length = sum(p.length for p in parts)
        self.avg = length / self.chunks if self.chunks else 1.0
        self._parts = parts
        self._idf: dict[str, float] = {}

    def df(self, term: str) -> int:
        return sum(p.df.get(term, 0) for p in self._parts)

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
