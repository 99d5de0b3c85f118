"""Repairs of the search index: bring it up to date (re-embedding only what must be), and
delete shards that no collection owns any more."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MemoryToolError
from .model import Finding, Repair, RepairSpec

if TYPE_CHECKING:
    from ..settings import Settings


def reindex(settings: Settings, finding: Finding) -> Repair:
    from ..index.api import MemoryIndex

    try:
        with MemoryIndex(settings) as index:
            summary = index.sync()
    except MemoryToolError as exc:
        return Repair(finding.id, "re-index", "failed", exc.message, finding.paths)
    detail = (
        f"re-indexed: {summary.files_changed} file(s) changed, {summary.chunks_embedded} chunk(s) embedded, "
        f"{summary.chunks_reused} reused, {summary.chunks_deleted} deleted"
    )
    return Repair(finding.id, "re-index", "done", detail, finding.paths)


def _remove_orphans(settings: Settings, finding: Finding) -> Repair:
    from ..index.status import remove_orphaned_shards
    from ..index.store.factory import open_store

    try:
        store = open_store(settings)
        try:
            removed = remove_orphaned_shards(settings, store)
        finally:
            store.close()
    except MemoryToolError as exc:
        return Repair(finding.id, "remove orphaned shards", "failed", exc.message, finding.paths)
    return Repair(finding.id, "remove orphaned shards", "done", f"removed {len(removed)} shard(s): {', '.join(removed)}", tuple(removed))


_REINDEX = RepairSpec("re-index", lambda f: "Bring the search index up to date (only changed chunks are embedded)", reindex)

REPAIRS = {
    "index-missing": _REINDEX,
    "index-stale": _REINDEX,
    "index-fingerprint": _REINDEX,
    "index-interrupted": _REINDEX,
    "index-orphaned-shards": RepairSpec(
        "remove orphaned shards", lambda f: f"Delete {len(f.paths)} index shard(s) no collection owns", _remove_orphans
    ),
}
