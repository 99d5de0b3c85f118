"""``MemoryIndex``: the semantic index of one agent, as the CLI, MCP and plugins use it."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DiskFull, IndexMissing, LockTimeout, MemoryToolError, UsageError
from ..files.scan import scan_memory_files
from .collections import assign_files, resolve_collections
from .config import index_config
from .manifest import load_manifest, manifest_dir, stale_paths
from .search import MODES, QueryPlan, SearchResult, rank
from .status import IndexStatus, index_status
from .store.factory import open_store
from .sync import Models, ProgressCallback, SyncSummary, agent_lock, model_cache_dir, sync_index


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    kind: str
    agent: str
    path: str
    pattern: str
    points: int | None  # None: never indexed
    backend: str

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "agent": self.agent,
            "path": self.path,
            "pattern": self.pattern,
            "points": self.points,
            "backend": self.backend,
        }


class MemoryIndex:
    """Sync, search and inspect the index of ``settings.agent`` in ``settings.workspace``.

    ``keep_open=True`` keeps shards (and their locks) open between calls, for a
    long-lived process that answers many queries; call ``close()`` when done.
    ``on_wait(what, pid)`` is told once when another process holds a lock we wait on.
    """

    def __init__(self, settings, *, keep_open: bool = False, on_wait=None, models: Models | None = None):
        self.settings = settings
        self.config = index_config(settings)
        # Callers indexing several workspaces with one model may share a loaded ``Models``.
        self.models = models if models is not None and models.config.settings_key == self.config.settings_key else Models(self.config, cache_dir=model_cache_dir(settings))
        self.on_wait = on_wait
        self._manifests: dict = {}
        self.store = open_store(settings, on_wait=on_wait, keep_open=keep_open)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> "MemoryIndex":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def sync(self, full: bool = False, progress: ProgressCallback | None = None, wait: bool = True) -> SyncSummary:
        """Index what changed (everything with ``full=True``); see ``index.sync``. ``wait=False``:
        LockTimeout at once when another process is indexing this agent."""
        return sync_index(
            self.settings, full=full, progress=progress, on_wait=self.on_wait, models=self.models, store=self.store, wait=wait
        )

    def search(self, query: str, limit: int = 6, min_score: float = 0.35, mode: str = "hybrid", sync: bool = True) -> SearchResult:
        """Search the agent's memory; see ``index.search`` for the score scale."""
        if mode not in MODES:
            raise UsageError(f"--mode must be one of {', '.join(MODES)}, not {mode!r}")
        if not query.strip():
            raise UsageError("the search query is empty")
        if limit < 1:
            raise UsageError(f"--limit must be at least 1, not {limit}")
        if not 0.0 <= min_score <= 1.0:
            raise UsageError(f"--min-score must be between 0 and 1, not {min_score}")
        collections = resolve_collections(self.settings)
        manifests = {c.name: self._manifest(c.name) for c in collections}
        indexed = [c for c in collections if manifests[c.name] is not None and self.store.exists(c.name)]
        if not indexed:
            raise IndexMissing(
                f"no search index for agent {self.settings.agent} in {self.settings.workspace} yet: "
                "build it with `openclaw-memory index`"
            )
        stale = self._stale(collections, manifests)
        settings_changed = any(m is not None and m.settings_key != self.config.settings_key for m in manifests.values())
        notes: list[str] = []
        if mode != "text" and (stale or settings_changed):
            if sync:
                try:
                    # Never wait for a running index: the last complete index answers meanwhile.
                    summary = self.sync(wait=False)
                    notes.extend(summary.notes)
                    stale = []
                    settings_changed = False
                    indexed = [c for c in collections if self.store.exists(c.name)]
                    manifests = {c.name: self._manifest(c.name) for c in collections}
                except LockTimeout:
                    holder = agent_lock(self.settings, 0).holder_pid()
                    notes.append(
                        f"an index run (pid {holder}) is updating the index: answering from the last complete index"
                    )
                except DiskFull as exc:
                    notes.append(f"index not refreshed: {exc.message}")
            if settings_changed:
                raise MemoryToolError(
                    "the index was built with other embedding settings (model, chunk size or backend); "
                    "run `openclaw-memory index` to re-embed it, or search with --mode text"
                )
        vector = None
        if mode != "text":
            for m in manifests.values():
                if m is not None and m.embed_backend:
                    self.models.pin_backend(m.embed_backend)
            vector = self.models.embedder.encode([query])[0]
        plan = QueryPlan(query, mode, vector, limit)
        candidates = []
        for c in indexed:
            with self.store.open(c.name) as shard:
                candidates.extend(plan.candidates(shard, c.name))
        return SearchResult(tuple(rank(plan, candidates, min_score)), mode, tuple(stale), tuple(notes))

    def _manifest(self, name: str):
        """The collection's manifest, parsed again only when its file changed (warm queries)."""
        path = manifest_dir(self.settings.data_dir) / f"{name}.json"
        try:
            st = path.stat()
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            self._manifests.pop(name, None)
            return None
        cached = self._manifests.get(name)
        if cached is None or cached[0] != key:
            cached = self._manifests[name] = (key, load_manifest(self.settings.data_dir, name))
        return cached[1]

    def _stale(self, collections, manifests) -> list[str]:
        scan = scan_memory_files(
            self.settings.workspace,
            extra_paths=self.settings.extra_paths,
            multimodal=self.settings.multimodal,
            agent=self.settings.agent,
        )
        groups = assign_files(collections, scan.files)
        stale: set[str] = set()
        for c in collections:
            stale.update(stale_paths(manifests[c.name], groups[c.name]))
        return sorted(stale)

    def status(self) -> IndexStatus:
        return index_status(self.settings, self.store)

    def collections(self) -> list[CollectionInfo]:
        """The agent's collections with their paths, patterns and point counts (opens each shard)."""
        result = []
        for c in resolve_collections(self.settings):
            points = None
            if self.store.exists(c.name):
                with self.store.open(c.name) as shard:
                    points = shard.count()
            result.append(CollectionInfo(c.name, c.kind, c.agent, c.root, c.pattern, points, self.store.backend))
        return result
