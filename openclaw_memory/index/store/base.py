"""The store interface the indexer and the search talk to, whatever the engine.

A *store* holds one shard per collection; a *shard* is opened by one process at a
time (``with store.open(name, dim) as shard:``), used, and closed. Payload fields
are fixed here so a second backend (a Qdrant server through ``qdrant-client``)
only has to map these calls; sync and search never look at the engine.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .view import ReadView

# Payload fields of every point.
DENSE = "dense"  # the named dense vector of every point
BATCH = 256  # points per upsert
TEXT_FIELD = "text"  # what was embedded (title, heading path, chunk text): stored, not indexed
TERMS_FIELD = "terms"  # keyword terms (index.terms.keyword_terms), space separated: candidates by BM25
BODY_FIELD = "body"  # the chunk's own lines, for snippets (not indexed)
PATH_FIELD = "path"  # keyword index
AGENT_FIELD = "agent"  # keyword index


@dataclass(frozen=True)
class PointData:
    """A point to write: deterministic id, unit-length dense vector, payload."""

    id: str
    vector: Sequence[float]
    payload: dict[str, Any]


@dataclass(frozen=True)
class Hit:
    """A point read back; ``score`` is the engine's raw score (cosine or BM25)."""

    id: str
    score: float
    payload: dict[str, Any]
    vector: Sequence[float] | None = None


class Shard(Protocol):
    """One open collection. Every method works on this collection only."""

    def upsert(self, points: Sequence[PointData]) -> None: ...

    def delete_ids(self, ids: Iterable[str]) -> None: ...

    def delete_paths(self, paths: Iterable[str]) -> None:
        """Delete every point whose ``path`` is one of ``paths``."""
        ...

    def delete_path_except(self, path: str, keep_ids: Iterable[str]) -> None:
        """Delete the points of ``path`` whose id is not in ``keep_ids`` (orphans of any earlier run)."""
        ...

    def count(self) -> int: ...

    def optimize(self) -> None:
        """Let the engine build its search indexes (HNSW) once a batch of writes is done."""
        ...

    def path_counts(self) -> dict[str, int]:
        """Points per ``path`` value (exact)."""
        ...

    def dense_query(self, vector: Sequence[float], limit: int, ids: Sequence[str] | None = None, fields: Sequence[str] | None = None) -> list[Hit]:
        """Nearest points by cosine similarity; ``ids`` restricts the candidates, ``fields`` the payload (None: all)."""
        ...

    def text_query(
        self,
        field: str,
        text: str,
        limit: int,
        ids: Sequence[str] | None = None,
        with_vector: bool = False,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        """BM25 over the full-text index of ``field`` (``terms``); ``fields`` as for dense_query."""
        ...

    def retrieve(self, ids: Sequence[str], with_vector: bool = False, fields: Sequence[str] | None = None) -> list[Hit]:
        """The points among ``ids`` that exist (score 0)."""
        ...

    def scroll(self, fields: Sequence[str]) -> Iterable[Hit]:
        """Every point with the named payload fields."""
        ...


class VectorStore(Protocol):
    """A set of shards, one per collection."""

    backend: str
    serving: bool  # a shard stays open while a sync copies it (the service's pool keeps them warm)

    @property
    def view(self) -> ReadView | None:
        """What this process's calls read, side by side, while a sync writes only to commit (the
        embedded engine's shards, kept open between calls); None: each call has the store alone (a
        server, which orders concurrent writers itself, holds nothing open here)."""
        ...

    def exists(self, name: str) -> bool: ...

    def open(self, name: str, dim: int | None = None, *, keep: bool = True) -> AbstractContextManager[Shard]:
        """Lock and open ``name`` (created with vectors of ``dim`` when missing and ``dim`` is given).
        ``keep=False``: one this call opens is closed (its lock let go) at the block's end, even in a
        store that keeps shards open (a sync that reads vectors from a live shard and then embeds for
        seconds held the searches of other processes out)."""
        ...

    def drop(self, name: str) -> None: ...

    def stage(self, name: str, dim: int, *, copy: bool) -> str:
        """A shard to build ``name`` into (a copy of it, or empty) while searches keep using ``name``."""
        ...

    def publish(self, staged: str, name: str) -> None:
        """Put the shard built by ``stage`` in place of ``name``, in one step."""
        ...

    def discard_stages(self, name: str) -> None:
        """Remove what a killed build of ``name`` left behind."""
        ...

    def check(self, name: str, expected: int | None = None, *, record: bool = True) -> str | None:
        """Why the shard ``name`` cannot be trusted (damaged, or not holding ``expected`` points), else None.

        ``record=False`` writes nothing (plain ``doctor``)."""
        ...

    def names(self) -> list[str]:
        """Every shard present, whoever owns it."""
        ...

    def disk_usage(self, name: str) -> int:
        """Bytes actually allocated on disk for ``name``."""
        ...

    def held(self) -> AbstractContextManager[None]:
        """Keep the shards opened inside the block open (and locked) until it ends."""
        ...

    def close(self) -> None:
        """Close whatever the store kept open."""
        ...


WaitCallback = Callable[[str, str], None]  # (what is locked, holder pid)


def folder_bytes(folder: str | os.PathLike[str]) -> int:
    """The blocks a folder's files take on disk (a shard preallocates sparse files: not their size)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                continue
    return total


def scroll_all(fetch: Callable[[Any], tuple[Sequence[Any], Any]]) -> Iterator[Any]:
    """Every point of a paged scroll: ``fetch(offset)`` gives a page and the next offset (None: the last)."""
    offset = None
    while True:
        points, offset = fetch(offset)
        yield from points
        if offset is None:
            return
