"""One open Qdrant Edge shard (:class:`EdgeShard`), and how the engine is loaded and configured so
that an index run's memory stays bounded; :mod:`.edge` keeps the shards of an agent."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import DiskFull, MemoryToolError, limit_reached
from ...fsutil.space import free_bytes
from .base import BATCH, DENSE, PATH_FIELD, Hit, PointData, scroll_all
from .view import ReadView

if TYPE_CHECKING:
    from qdrant_edge import PointId

# The engine keeps an appendable segment's points on the heap (about 2.5 KB each, most of it the
# ``terms`` postings) until an optimize turns the segment into memory-mapped ones, and what that
# optimize built is only freed when the shard is reopened. So a shard that took this many points
# since it was opened or last settled is optimized and reopened: the engine's share of an index
# run's memory stays bounded whatever the corpus size (bench/index_memory.py).
SETTLE_POINTS = 4096
# In KB of vectors (1.5 KB each at 384 dimensions): an optimize turns a segment of ~650 points
# and more into a memory-mapped one, and merges segments up to ~21,000 points, no further: a
# merge builds its segment in memory, so this caps the peak, while keeping segments large
# enough that their HNSW graph is the one a dense query uses.
_INDEXING_THRESHOLD_KB = 1_000
_MAX_SEGMENT_KB = 32_000
# Opening a shard maps its files and allocates their pages (~32 MiB of vectors at once); where
# the disk has no room for that the engine dies of SIGBUS, so a shard is not opened without it.
LOAD_ROOM = 64 << 20
# An optimize writes the segments it builds or merges (up to _MAX_SEGMENT_KB of vectors: ~21,000
# points of ~5 KB on disk with their payload and indexes) before it drops the old ones.
OPTIMIZE_ROOM = 192 << 20  # and room to reopen the shard after it (LOAD_ROOM)
_OPTIMIZE_REFUSED = re.compile(r"Not enough space available for optimization, needed: ([0-9.]+) MiB, available: ([0-9.]+) MiB")


def engine_config(dim: int):
    import qdrant_edge as qe

    return qe.EdgeConfig(
        vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
        optimizers=qe.EdgeOptimizersConfig(indexing_threshold=_INDEXING_THRESHOLD_KB, max_segment_size=_MAX_SEGMENT_KB),
    )


def load_engine(path: Path):
    """Open a shard, giving one built by an earlier version this version's optimizer settings;
    returns the engine and the shard's vector dimension."""
    import qdrant_edge as qe

    with open(path / "edge_config.json", encoding="utf-8") as fh:
        stored = json.load(fh)
    wanted = {"indexing_threshold": _INDEXING_THRESHOLD_KB, "max_segment_size": _MAX_SEGMENT_KB}
    optimizers = stored.get("optimizers") or {}
    dim = int(stored["vectors"][DENSE]["size"])
    if any(optimizers.get(key) != value for key, value in wanted.items()):
        return qe.EdgeShard.load(str(path), engine_config(dim)), dim
    return qe.EdgeShard.load(str(path)), dim


def is_engine_failure(exc: BaseException) -> bool:
    """An error of the engine (an Exception, or pyo3's PanicException, a BaseException) rather
    than a stop (Ctrl-C, an exit, a watch or service stopping): a stop must go through untouched,
    since worded as damage it says "rebuild it" of a whole index."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _return_freed_memory() -> None:
    """Hand the heap the engine just freed back to the system (glibc keeps it otherwise)."""
    import ctypes

    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):  # not glibc: the memory is reused by the next segment
        pass


def ensure_room(folder: Path, needed: int = LOAD_ROOM, doing: str = "open the index") -> None:
    free = free_bytes(folder)
    if free < needed:
        raise DiskFull(_full(folder, free / (1 << 20), needed / (1 << 20), doing))


def _full(folder: Path, free_mib: float, needed_mib: float, doing: str) -> str:
    return (f"the disk holding the index ({folder}) is full ({free_mib:.1f} MiB free): the engine needs about "
            f"{int(needed_mib)} MiB to {doing}; nothing was changed; free some space and try again")


def _ids_filter(ids: Sequence[str] | None):
    import qdrant_edge as qe

    if ids is None:
        return None
    return qe.Filter(must=[qe.HasIdCondition(set(ids))])


def _payload(fields: Sequence[str] | None):
    import qdrant_edge as qe

    if fields is None:
        return True
    return qe.PayloadSelector.Include(list(fields)) if fields else False


def _hit(point, with_vector: bool = False) -> Hit:
    vector = None
    if with_vector and point.vector is not None:
        vector = point.vector[DENSE] if isinstance(point.vector, dict) else point.vector
    return Hit(str(point.id), float(getattr(point, "score", 0.0) or 0.0), dict(point.payload or {}), vector)


class EdgeShard:
    """An open Qdrant Edge shard; see ``base.Shard`` for the contract."""

    def __init__(self, name: str, path: Path, engine, dim: int, view: ReadView | None = None, count: int | None = None):
        self.name = name
        self._path = path
        self._engine = engine
        self._view = view or ReadView()  # the store's: a reopen waits for the searches using the engine
        self._unsettled = 0
        # The exact count since the last write (None: to be counted): known at the open when the
        # shard's check knew it, so a command that writes nothing never counts (its close records it).
        self._count = count
        # Points that fill the engine's indexing threshold: from there on an optimize builds.
        self._indexing_points = _INDEXING_THRESHOLD_KB * 1024 // (4 * dim)

    @property
    def closed(self) -> bool:
        return self._engine is None

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

    def flush(self) -> None:
        """Write what the engine holds in memory to its files (a copy of them is then whole)."""
        self._engine.flush()

    def upsert(self, points: Sequence[PointData]) -> None:
        import qdrant_edge as qe

        for start in range(0, len(points), BATCH):
            batch = points[start : start + BATCH]
            self._count = None
            self._engine.update(
                qe.UpdateOperation.upsert_points(
                    [qe.Point(p.id, {DENSE: [float(x) for x in p.vector]}, p.payload) for p in batch]
                )
            )
            self._unsettled += len(batch)
            if self._unsettled >= SETTLE_POINTS:
                self.optimize()

    def delete_ids(self, ids: Iterable[str]) -> None:
        import qdrant_edge as qe

        # The engine's id lists are invariant in their item type, so ours (all str) is declared as theirs.
        id_list: list[PointId] = list(ids)
        self._count = None
        for start in range(0, len(id_list), BATCH):
            self._engine.update(qe.UpdateOperation.delete_points(id_list[start : start + BATCH]))

    def delete_paths(self, paths: Iterable[str]) -> None:
        import qdrant_edge as qe

        paths = list(paths)
        self._count = None
        for start in range(0, len(paths), BATCH):
            cond = qe.FieldCondition(PATH_FIELD, match=qe.MatchAny(paths[start : start + BATCH]))
            self._engine.update(qe.UpdateOperation.delete_points_by_filter(qe.Filter(must=[cond])))

    def delete_path_except(self, path: str, keep_ids: Iterable[str]) -> None:
        import qdrant_edge as qe

        keep: set[PointId] = set(keep_ids)
        self._count = None
        cond = qe.FieldCondition(PATH_FIELD, match=qe.MatchValue(path))
        self._engine.update(
            qe.UpdateOperation.delete_points_by_filter(
                qe.Filter(must=[cond], must_not=[qe.HasIdCondition(keep)] if keep else None)
            )
        )

    def optimize(self) -> None:
        # From the indexing threshold on, the engine turns the appendable segment into
        # memory-mapped ones and builds their HNSW graph (100k chunks answer in ~5 ms instead of
        # ~25 ms by brute force); a reopen then frees what it built (see SETTLE_POINTS). Below
        # it nothing was built, and a reopen (~100 ms) would only slow a live edit down.
        # Searches keep reading while the engine optimizes (it builds beside the segments it
        # replaces); only the reopen has the engine to itself.
        settle = self._unsettled >= self._indexing_points
        if settle:
            ensure_room(self._path.parent, OPTIMIZE_ROOM, "optimize the index")
        try:
            self._engine.optimize()
        except Exception as exc:
            # The engine's own check, made before it writes: it wants twice the size of the
            # segments it merges (more than OPTIMIZE_ROOM where they are large), and said so in a traceback.
            said = _OPTIMIZE_REFUSED.search(str(exc))
            if said is None:
                raise
            raise DiskFull(_full(self._path.parent, float(said.group(2)), float(said.group(1)), "optimize the index")) from None
        if settle:
            with self._view.writing():
                self._reopen()

    def _reopen(self) -> None:
        import qdrant_edge as qe

        self._engine.close()
        _return_freed_memory()
        try:
            self._engine = qe.EdgeShard.load(str(self._path))
        except BaseException as exc:
            self._engine = None
            if not is_engine_failure(exc):
                raise
            if (limit := limit_reached(exc)) is not None:
                raise MemoryToolError(f"index collection {self.name} could not be reopened after its optimize: "
                                      f"{limit}") from None
            # the shard is closed and whole on disk
            raise MemoryToolError(
                f"index collection {self.name} could not be reopened after its optimize ({exc}); "
                "run `openclaw-memory index` again"
            ) from None
        self._unsettled = 0

    def count(self) -> int:
        """The exact number of points, counted again only after a write of this process (the
        shard's lock is ours: nobody else writes it): 19 ms per count at 150,000 points."""
        import qdrant_edge as qe

        if self._count is None:
            self._count = int(self._engine.count(qe.CountRequest(exact=True)))
        return self._count

    def path_counts(self) -> dict[str, int]:
        import qdrant_edge as qe

        facet = self._engine.facet(qe.FacetRequest(PATH_FIELD, limit=1 << 30, exact=True))
        return {str(h.value): int(h.count) for h in facet}

    def dense_query(self, vector, limit: int, ids: Sequence[str] | None = None, fields: Sequence[str] | None = None) -> list[Hit]:
        import qdrant_edge as qe

        if ids is not None and not ids:
            return []
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest([float(x) for x in vector], using=DENSE),
            filter=_ids_filter(ids),
            with_payload=_payload(fields),
        )
        return [_hit(p) for p in self._engine.query(request)]

    def text_query(
        self,
        field: str,
        text: str,
        limit: int,
        ids: Sequence[str] | None = None,
        with_vector: bool = False,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        import qdrant_edge as qe

        if (ids is not None and not ids) or not text.strip():
            return []
        request = qe.QueryRequest(
            limit=limit,
            query=qe.TextQuery(field, text),
            filter=_ids_filter(ids),
            with_payload=_payload(fields),
            with_vector=[DENSE] if with_vector else False,
        )
        return [_hit(p, with_vector) for p in self._engine.query(request)]

    def retrieve(self, ids: Sequence[str], with_vector: bool = False, fields: Sequence[str] | None = None) -> list[Hit]:

        if not ids:
            return []
        points = self._engine.retrieve(list(ids), with_payload=_payload(fields), with_vector=[DENSE] if with_vector else False)
        return [_hit(p, with_vector) for p in points]

    def scroll(self, fields: Sequence[str]) -> Iterator[Hit]:
        import qdrant_edge as qe

        selector = qe.PayloadSelector.Include(list(fields))
        pages = scroll_all(lambda offset: self._engine.scroll(qe.ScrollRequest(offset=offset, limit=1024, with_payload=selector)))
        return (_hit(p) for p in pages)
