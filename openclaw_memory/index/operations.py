"""The index's operations as the memory in this process runs them, on its pool's warm index
(:mod:`.pool`); declared in :class:`~openclaw_memory.memory.base.Memory`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..extras import require
from ..signals import Stopping

if TYPE_CHECKING:
    from ..memory.local import LocalMemory
    from ..types import ProgressCallback, SearchMode
    from .api import CollectionsResult
    from .results import SearchResult, SyncProgress, SyncSummary
    from .status import IndexStatus


def index(memory: LocalMemory, full: bool = False, progress: ProgressCallback | None = None) -> SyncSummary:
    with memory.pool.index(memory.settings) as warm:
        return warm.sync(full=full, progress=_stoppable(memory, progress))


def index_written(memory: LocalMemory, paths: tuple[str, ...], progress: ProgressCallback | None = None) -> SyncSummary:
    """The index brought in line with the files a write or restore just changed (``paths``,
    workspace-relative), at a cost that does not grow with the memory; other stale files are
    left to the next ``index`` or search (see ``index.sync.sync_index``)."""
    with memory.pool.index(memory.settings) as warm:
        return warm.sync(progress=_stoppable(memory, progress), paths=paths)


def _stoppable(memory: LocalMemory, progress: ProgressCallback | None) -> ProgressCallback:
    stopping = memory.pool.stopping

    def report(p: SyncProgress) -> None:
        if stopping.is_set():
            raise Stopping()  # the index is crash-safe: the next run finishes what this one started
        if progress is not None:
            progress(p)

    return report


def search(memory: LocalMemory, query: str, limit: int | None = None, min_score: float | None = None, mode: SearchMode = "hybrid",
           sync: bool = True, collections: tuple[str, ...] = (), paths: tuple[str, ...] = (),
           since: str | None = None, until: str | None = None, progress: ProgressCallback | None = None) -> SearchResult:
    require("search")
    from .filters import SearchFilters
    from .results import DEFAULT_MIN_SCORE

    filters = SearchFilters.from_args(collections, paths, since, until)
    with memory.pool.index(memory.settings) as warm:
        return warm.search(query, limit=limit,
                           min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
                           mode=mode, sync=sync, filters=filters, progress=_stoppable(memory, progress))


def status(memory: LocalMemory) -> IndexStatus:
    with memory.pool.index(memory.settings) as warm:
        return warm.status()


def collections(memory: LocalMemory) -> CollectionsResult:
    from .api import CollectionsResult

    with memory.pool.index(memory.settings) as warm:
        return CollectionsResult(memory.settings.agent, tuple(warm.collections()))
