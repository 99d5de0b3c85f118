"""Copy a workspace's index between the embedded engine and a Qdrant server, vectors and payloads as they are.

Nothing is re-embedded: every point is read with its vector and payload and
written under the same id. Each collection is made an exact copy (points the
target holds and the source does not are deleted) and verified by its point
count and its points per file. Progress is recorded in the state database (``migration``)
after each verified collection; an
interrupted run (network failure, kill) is run again with the same command and
goes on: collections already verified are checked by count and skipped, and in a
partly copied one only the points the target lacks are written (upserts by id
are idempotent, so nothing is ever duplicated). The agents' index locks are
held throughout, so no index run changes the source meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..database import Database
from ..errors import MemoryToolError, UsageError
from ..wire import key
from .collections import registered_names
from .config import index_config
from .manifest import load_manifest, save_manifest
from .store.base import PATH_FIELD, PointData

if TYPE_CHECKING:
    from ..settings import Settings

EMBEDDED = "embedded"
_BATCH = 256


@dataclass(frozen=True)
class CollectionCopy:
    name: str
    points: int  # in the source, = in the target once verified
    copied: int  # written by this run
    already: int = key("alreadyThere")  # found in the target already (an earlier, interrupted run)
    removed: int = key()  # in the target only, deleted
    resumed: bool = key("skippedAsDone")  # verified by an earlier run and only re-counted now


@dataclass(frozen=True)
class MigrationResult:
    source: str = key("from")
    target: str = key("to")
    target_backend: str = key()
    collections: tuple[CollectionCopy, ...] = key()
    seconds: float = key(digits=3)
    notes: tuple[str, ...] = key(omit=lambda m: not m.notes, default=())

    JSON_DERIVED: ClassVar = ("points", "verified")

    @property
    def points(self) -> int:
        return sum(c.points for c in self.collections)

    @property
    def verified(self) -> bool:
        """Always: a migration that could not verify every collection raises instead of returning."""
        return True


# (collection, points done, points in that collection)
MigrateProgress = Callable[[str, int, int], None]


def _endpoint(settings: Settings, spec: str):
    """(label, store) for ``embedded`` or a Qdrant URL."""
    if spec == EMBEDDED:
        from .store.edge import EdgeStore

        return EMBEDDED, EdgeStore(settings.data_dir / "index", lock_timeout=index_config(settings).lock_timeout)
    from .store.server import ServerStore
    from .store.server_config import server_config

    config = server_config(settings, url=spec)
    if config is None:  # only for an empty spec, which _resolve_specs already refuses
        raise UsageError("give a Qdrant URL (http(s)://HOST:PORT or file:///folder) or `embedded`")
    label = f"{config.display_url} (namespace {config.namespace}, tenancy {config.tenancy})"
    return label, ServerStore(config)


def _resolve_specs(settings: Settings, to: str, source: str | None) -> tuple[str, str]:
    from .store.server_config import normalize_url, server_config

    to = to.strip()
    if to != EMBEDDED:
        to = normalize_url(to, "--to")
    if source is None:
        if to != EMBEDDED:
            source = EMBEDDED
        else:
            configured = server_config(settings)
            if configured is None:
                raise UsageError("--to embedded copies from a Qdrant server: give it with --from URL (none is configured)")
            source = configured.url
    source = source.strip()
    if source != EMBEDDED:
        source = normalize_url(source, "--from")
    if source == to:
        raise UsageError(f"--from and --to are the same ({to}); one of them must be {EMBEDDED!r} or another server")
    if EMBEDDED not in (source, to):
        raise UsageError("one side of a migration is the embedded engine: use --from embedded or --to embedded")
    return source, to


def _load_progress(db: Database, key: str) -> dict[str, int]:
    """The collections this migration verified already (another migration's record: none, and
    starting over is safe: upserts by id)."""
    return {str(name): int(points) for name, points in db.rows("SELECT collection, points FROM migration WHERE key = ?", (key,))}


def _save_progress(db: Database, key: str, name: str, points: int) -> None:
    with db.transaction() as conn:
        conn.execute("DELETE FROM migration WHERE key != ?", (key,))
        conn.execute("INSERT OR REPLACE INTO migration VALUES (?, ?, ?)", (key, name, points))


def _agent_locks(settings: Settings, stack: ExitStack) -> None:
    from .agent_lock import agent_lock

    agents = {settings.agent} | {e["agent"] for e in registered_names(settings.data_dir).values()}
    timeout = index_config(settings).lock_timeout
    for agent in sorted(agents):  # one order everywhere: no deadlock between two migrations
        stack.enter_context(agent_lock(settings.with_agent(agent), timeout))


def migrate_index(settings: Settings, to: str, source: str | None = None, progress: MigrateProgress | None = None) -> MigrationResult:
    """Copy every collection of the workspace from ``source`` to ``to`` (``embedded`` or a Qdrant URL)."""
    from ..extras import require

    require("qdrant")
    started = time.monotonic()
    src_spec, dst_spec = _resolve_specs(settings, to, source)
    report = progress or (lambda name, done, total: None)
    with ExitStack() as stack:
        _agent_locks(settings, stack)
        src_label, src = _endpoint(settings, src_spec)
        stack.callback(src.close)
        dst_label, dst = _endpoint(settings, dst_spec)
        stack.callback(dst.close)
        key = f"{src_label} -> {dst_label}"
        db = Database(settings.data_dir)
        done = _load_progress(db, key)
        names = src.names()
        if not names:
            raise MemoryToolError(f"nothing to migrate: {src_label} holds no collection of this workspace (run `openclaw-memory index` first)")
        copies, notes = [], []
        for name in names:
            copy = _copy_collection(settings, src, dst, name, done.get(name), report)
            if copy is None:
                notes.append(f"{name}: empty and of unknown dimension in the source; not created in the target")
                continue
            copies.append(copy)
            _save_progress(db, key, name, copy.points)
        _retag_manifests(settings, dst, names)
        with db.transaction() as conn:
            conn.execute("DELETE FROM migration")
    return MigrationResult(src_label, dst_label, dst.backend, tuple(copies), time.monotonic() - started, tuple(notes))


def _copy_collection(settings: Settings, src, dst, name: str, recorded: int | None, report: MigrateProgress) -> CollectionCopy | None:
    manifest = load_manifest(settings.data_dir, name)
    with src.open(name) as s:
        source_ids = [h.id for h in s.scroll([PATH_FIELD])]
        total = len(source_ids)
        if recorded is not None and recorded == total and dst.exists(name):
            with dst.open(name) as d:
                if d.count() == total:
                    report(name, total, total)
                    return CollectionCopy(name, total, 0, total, 0, True)
        dim = manifest.dim if manifest is not None and manifest.dim else None
        if dim is None and source_ids:
            first = s.retrieve(source_ids[:1], with_vector=True, fields=[])
            dim = len(first[0].vector) if first and first[0].vector is not None else None
        if dim is None:
            return None
        with dst.open(name, dim=dim) as d:
            wanted = set(source_ids)
            present = {h.id for h in d.scroll([PATH_FIELD])}
            extra = sorted(present - wanted)
            if extra:
                d.delete_ids(extra)
            missing = [i for i in source_ids if i not in present]
            already = total - len(missing)
            report(name, already, total)
            for start in range(0, len(missing), _BATCH):
                batch = missing[start : start + _BATCH]
                points = [PointData(h.id, h.vector, h.payload) for h in s.retrieve(batch, with_vector=True)]
                if len(points) != len(batch):
                    raise MemoryToolError(f"{name}: points vanished from the source while copying; is an index run writing to it?")
                d.upsert(points)
                report(name, already + start + len(batch), total)
            _verify(name, s, d)
    if manifest is not None and manifest.fingerprint and hasattr(dst, "record_fingerprint"):
        dst.record_fingerprint(name, manifest.fingerprint)
    return CollectionCopy(name, total, len(missing), already, len(extra), False)


def _verify(name: str, s, d) -> None:
    source_count, target_count = s.count(), d.count()
    if source_count != target_count:
        raise MemoryToolError(f"{name}: verification failed: {source_count} points in the source, {target_count} in the target; run the migration again")
    if s.path_counts() != d.path_counts():
        raise MemoryToolError(f"{name}: verification failed: the points per file differ between source and target; run the migration again")


def _retag_manifests(settings: Settings, dst, names: list[str]) -> None:
    """Record the target engine in each manifest, so the next index run trusts the copy instead of re-checking it."""
    for name in names:
        manifest = load_manifest(settings.data_dir, name)
        if manifest is not None and manifest.store_backend != dst.backend:
            manifest.store_backend = dst.backend
            save_manifest(settings.data_dir, manifest)
