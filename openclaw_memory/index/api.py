"""``MemoryIndex``: the semantic index of one agent, as the CLI, MCP and plugins use it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..bulk import gc_paused
from ..errors import BadValue, DiskFull, IndexMissing, LockTimeout, MemoryToolError, UsageError
from ..files.paths import MEMORY_DIR
from ..files.scan import ScanCache, ScanResult
from ..fsutil.lock import read_only_mount
from ..timezones import local_date
from ..types import MAX_LIMIT, SearchMode
from .agent_lock import index_builder
from .bm25 import Bm25, saved_stats, stats_serial
from .collections import NAMED, assign_files, lost_and_found, resolve_collections, some_named, unindexable
from .config import index_config, search_ranking
from .embedding import recipe_outdated
from .filters import SearchFilters, file_dates, note_date
from .lender import Models
from .manifest import load_manifest, load_manifest_head, manifest_serial, stale_known
from .results import SearchResult, SyncSummary
from .search import DEFAULT_MIN_SCORE, MODES, PASSAGE_FIELDS, QueryPlan, rank
from .status import IndexStatus, index_status
from .store.factory import open_store
from .sync import ProgressCallback, sync_index
from .terms import query_terms

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..settings import Settings


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    kind: str
    agent: str
    path: str
    pattern: str
    points: int | None  # None: never indexed
    backend: str


@dataclass(frozen=True)
class CollectionsResult:
    """The agent's collections (``Memory.collections``): its JSON is what ``collections --json`` prints."""

    agent: str
    collections: tuple[CollectionInfo, ...]


class MemoryIndex:
    """Sync, search and inspect the index of ``settings.agent`` in ``settings.workspace``.

    ``keep_open=True`` keeps shards (and their locks) open between calls, for a
    long-lived process that answers many queries; call ``close()`` when done.
    ``on_wait(what, pid)`` is told once when another process holds a lock we wait on.
    """

    def __init__(self, settings: Settings, *, keep_open: bool = False, on_wait=None, models: Models | None = None):
        self.settings = settings
        self.config = index_config(settings)
        # Callers indexing several workspaces with one model may share a loaded ``Models``.
        self.models = models if models is not None and models.config.settings_key == self.config.settings_key else Models(self.config, cache_dir=settings.model_cache)
        self.on_wait = on_wait
        self._manifests: dict = {}
        self._heads: dict = {}
        self._stats: dict = {}
        self._scans = ScanCache(settings)  # the stale check of every search
        self._last_stale: tuple | None = None
        self._scan: ScanResult | None = None  # the last stale check's scan
        self._listed: tuple | None = None  # (that scan, its files by path)
        self.ranking = search_ranking(settings)
        self.store = open_store(settings, on_wait=on_wait, keep_open=keep_open)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> MemoryIndex:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def sync(self, full: bool = False, progress: ProgressCallback | None = None, wait: bool = True,
             paths: Sequence[str] | None = None) -> SyncSummary:
        """Index what changed (everything with ``full=True``; only ``paths``, the files a write
        changed, when given); see ``index.sync``. ``wait=False``: LockTimeout at once when
        another process is indexing this agent."""
        return sync_index(self.settings, full=full, progress=progress, on_wait=self.on_wait, models=self.models,
                          store=self.store, wait=wait, paths=paths)

    def search(
        self,
        query: str,
        limit: int | None = None,
        min_score: float = DEFAULT_MIN_SCORE,
        mode: SearchMode = "hybrid",
        sync: bool = True,
        filters: SearchFilters | None = None,
        progress: ProgressCallback | None = None,
    ) -> SearchResult:
        """Search the agent's memory; see ``index.search`` for the ranking and the score scale.

        >>> with MemoryIndex(resolve_settings(Overrides(workspace="~/agent"))) as index:
        ...     for hit in index.search("when are backups taken").results:
        ...         print(hit.score, hit.citation)
        """
        return self._search(query, limit, min_score, mode, sync, filters, progress, again=True)

    def _search(self, query: str, limit: int | None, min_score: float, mode: SearchMode, sync: bool,
                filters: SearchFilters | None, progress: ProgressCallback | None, *, again: bool) -> SearchResult:
        """``search``; ``again``: a hit's note found changed since the stale check may have it searched
        once more, the change synced first."""
        if mode not in MODES:
            raise BadValue("mode", f"must be one of {', '.join(MODES)}, not {mode!r}")
        if not query.strip():
            raise UsageError("the search query is empty")
        if limit is None:  # openclaw.json's maxResults (OpenClaw sets it no bound): at most what a search returns
            limit = min(self.settings.max_results, MAX_LIMIT)
        if not 1 <= limit <= MAX_LIMIT:
            raise BadValue("limit", f"must be from 1 to {MAX_LIMIT}, not {limit}")
        if not 0.0 <= min_score <= 1.0:
            raise BadValue("min_score", f"must be between 0 and 1, not {min_score}")
        filters = filters or SearchFilters()
        # The caller's day first: a service that cannot name the caller's zone refuses before it opens
        # a shard, which it then held while the caller's in-process answer waited for it (review).
        today = filters.today()
        collections = resolve_collections(self.settings)
        filters.check_collections([c.name for c in collections])
        # Each manifest's head (settings, backend): its files are read only where a filter or the
        # decay needs them; the stale check reads their change keys (a cold search at 30,000 notes
        # spent 0.43 s loading every entry).
        manifests = self._built(collections)
        indexed = [c for c in collections if manifests[c.name] is not None]
        notes: list[str] = []
        synced = False  # a sync of this search said what it leaves out (the notes below)
        if not indexed and mode != "text" and sync and not read_only_mount(self.settings.data_dir):
            # OpenClaw's first search builds the index it needs ("search-bootstrap"): an agent that
            # cannot run `openclaw-memory index` got a tool error bidding it to. An interrupted first
            # index is finished (what it saved is not embedded again). One being built (another
            # search's, the service's first sync) is waited for as OpenClaw's concurrent searches wait
            # for it, up to the lock timeout: past that, it says so below.
            try:
                first = self.sync(progress=progress)
            except LockTimeout:
                pass
            else:
                notes.extend(first.notes)
                synced = True
                chunks = first.chunks_embedded + first.chunks_reused
                if first.files_changed:  # (none: another search built it meanwhile, or there is no file)
                    notes.append(f"agent {self.settings.agent} had no search index yet: this search built it "
                                 f"({first.files_scanned} file{'s' * (first.files_scanned != 1)}, {chunks} chunk{'s' * (chunks != 1)})")
                manifests = self._built(collections)
                indexed = [c for c in collections if manifests[c.name] is not None]
        if not indexed:
            builder = index_builder(self.settings)
            if builder is not None:  # the first index, by a service that just started or an `index` run
                raise IndexMissing(f"the search index of agent {self.settings.agent} is being built right now "
                                   f"(pid {builder}); search again once it is built")
            # Listing the shards says it when their folder is not one ("Not a directory", naming
            # doctor, as `index` does): "no search index yet" bid an `index` that then failed so.
            self.store.names()
            held = [c.name for c in collections if self.store.exists(c.name)]
            if held:
                raise self._unrecorded(held)
            raise IndexMissing(f"no search index for agent {self.settings.agent} in {self.settings.workspace} yet: build it with ",
                               run="index")
        stale = self._stale(collections, manifests)
        built = [m for m in manifests.values() if m is not None]
        settings_changed = any(not self.config.vectors_hold(m.settings_key) or recipe_outdated(m.fingerprint) for m in built)
        # Built under other settings: a sync re-embeds it, or only chunks it again (new chunking rules,
        # whose vectors still answer when there is no sync).
        outdated = settings_changed or any(m.settings_key != self.config.settings_key for m in built)
        updating = False
        if mode != "text" and (stale or outdated):
            if sync and read_only_mount(self.settings.data_dir):
                # Nothing on this mount can write it (no sync of ours, no other writer's): the index
                # as last built answers, and `stale` lists what it does not hold as it is now.
                notes.append(f"the index could not be brought up to date: the state dir ({self.settings.state_dir}) "
                             "is mounted read-only; what changed since it was built is searched as it was then")
            elif sync:
                try:
                    # Never wait for a running index: the last complete index answers meanwhile.
                    summary = self.sync(wait=False)
                    notes.extend(summary.notes)
                    synced = True
                    stale = []
                    settings_changed = False
                    manifests = self._built(collections)
                    indexed = [c for c in collections if manifests[c.name] is not None]
                except LockTimeout:
                    # Routine: a watch, the service's live sync or an `index` run is indexing them
                    # now (OpenClaw: routine indexing adds no warning); `stale` still lists them.
                    updating = True
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
        bm25 = Bm25(self._term_stats(c.name) for c in indexed)
        searched = [c for c in indexed if filters.wants_collection(c.name)]
        if not synced:  # each later search says it too, as the sync that left them out did
            notes.extend(self._left_out_notes(collections, searched, filters))
        allowed = filters.point_ids({c.name: self._manifest(c.name) for c in searched}, self.settings.workspace) \
            if filters.by_file() else None
        plan = QueryPlan(query, mode, vector, limit, bm25, ids=allowed, ranking=self.ranking)
        candidates = []
        for c in searched:
            with self.store.open(c.name) as shard:
                candidates.extend(plan.candidates(shard, c.name))
        dates = file_dates(self._manifest(c.name) for c in collections) if self.ranking.decay else None
        hits = rank(plan, candidates, min_score, dates=dates, today=today, fetch=self._fetch_passages)
        hits, gone, edited = self._still_there(hits)
        if edited:
            # Edited since the stale check, which a long-lived process's scan sees only in rotation (an
            # edit in place, 1,024 files a search): the hit's lines may not be the note's any more, and
            # were cited as they were. The next check walks again: searched once more, the edit synced.
            self._scans.changed()
            if again and sync and mode != "text" and not updating:
                return self._search(query, limit, min_score, mode, sync, filters, progress, again=False)
        if gone or edited:  # moved out or removed (edited) since the stale check, or while the index, not yet synced, holds it
            stale = sorted({*stale, *gone, *edited})
        # What OpenClaw's memory_search calls its provider and model: what embedded this index.
        built = [m for m in manifests.values() if m is not None]
        provider = next((m.embed_backend for m in built if m.embed_backend), self.config.embedding_backend)
        model = next((m.model for m in built if m.model), self.config.model)
        return SearchResult(tuple(hits), mode, provider=provider, model=model,
                            stale_paths=tuple(stale), notes=tuple(notes), terms=tuple(query_terms(query)), updating=updating,
                            filtered_out=allowed is not None and not allowed,
                            read_only=bool(stale) and read_only_mount(self.settings.data_dir))

    def _left_out_notes(self, collections, searched, filters: SearchFilters) -> list[str]:
        """What the sync says of the notes it leaves out (``not indexed: ...``, an unreadable folder's
        ``cannot read ...``), of those the searched collections and the filters take, from the stale
        check's scan (its left-out files were found with its answer: nothing is walked again)."""
        if self._last_stale is None:
            return []
        scan, left = self._last_stale[2], self._last_stale[4]
        folders = [s for s in scan.skipped if s.reason.startswith("unreadable")]
        if not left and not folders:
            return []
        names = {c.name for c in searched}
        wants_path = filters.path_test(self.settings.workspace)
        workspace = os.fspath(self.settings.workspace)

        def owner(source: str, abs_path: str) -> str | None:
            probe = _Probe(source, abs_path)
            return next((c.name for c in collections if c.owns(probe)), None)

        def dated_in(f) -> bool:
            if filters.since is None and filters.until is None:
                return True
            try:
                return filters.wants_day(note_date(f.path) or local_date(f.mtime_ns / 1e9))
            except (OverflowError, ValueError, OSError):  # a time no date holds (tmpfs: any): named
                return True

        files = [f for f in left if owner(f.source, f.abs_path) in names and wants_path(f.path) and dated_in(f)]
        notes = [f"not indexed: {some_named(unindexable(files))}"] if files else []
        unread: list[str] = []
        for s in folders:
            # A folder's notes have no names to filter: it is named unless no collection searched
            # or no path glob could reach below it.
            abs_path = os.path.normpath(os.path.join(workspace, s.path))
            source = "memory" if abs_path == os.path.join(workspace, MEMORY_DIR) or \
                abs_path.startswith(os.path.join(workspace, MEMORY_DIR) + os.sep) else "extra"
            if (filters.collections and owner(source, abs_path) not in names) or not filters.may_hold(s.path, workspace):
                continue
            if lost_and_found(s.path):
                continue
            unread.append(f"cannot read {s.path}: {s.reason}: the notes in it are not indexed")  # (as the sync says it)
        notes += unread[:NAMED]
        if len(unread) > NAMED:
            notes.append(f"and {len(unread) - NAMED} more folders it cannot read (`openclaw-memory status` lists them)")
        return notes

    def _fetch_passages(self, candidates) -> None:
        """Read the passage fields (body, fence) of the candidates shown, one retrieve per collection."""
        by_source: dict[str, list] = {}
        for c in candidates:
            by_source.setdefault(c.source, []).append(c)
        for name, group in by_source.items():
            with self.store.open(name) as shard:
                found = {h.id: h.payload for h in shard.retrieve([c.id for c in group], fields=PASSAGE_FIELDS)}
            for c in group:
                c.payload.update(found.get(c.id, {}))

    def _term_stats(self, name: str):
        """A collection's keyword statistics (its totals; a term's frequency read when a query asks
        for it and kept), read again only when they were saved again."""
        key = stats_serial(self.settings.data_dir, name)
        if key is None:
            raise MemoryToolError(
                f"the index of collection {name} has no keyword statistics (built by an older version, or its "
                "state database was rebuilt): run `openclaw-memory index`"
            )
        cached = self._stats.get(name)
        if cached is None or cached[0] != key:
            stats = saved_stats(self.settings.data_dir, name)
            if stats is None:
                raise MemoryToolError(f"the keyword statistics of collection {name} are damaged: run `openclaw-memory index --full`")
            cached = self._stats[name] = (key, stats)
        return cached[1]

    def _unrecorded(self, held: list[str]) -> IndexMissing:
        """What a search says of shards the store holds that no manifest here lists: a first index of this
        data dir, written in place and interrupted (its dirty mark says it began here), or an index on a
        Qdrant server that another machine sharing it (OPENCLAW_MEMORY_QDRANT_INDEX_ID) built."""
        from .manifest import is_dirty
        from .store.server_config import INDEX_ID_ENV, shared_on_purpose

        whose = f"agent {self.settings.agent} in {self.settings.workspace}"
        if any(is_dirty(self.settings.data_dir, name) for name in held):
            return IndexMissing(f"the first index of {whose} was interrupted: ", run="index",
                                then=" finishes it (what it saved is not embedded again)")
        if shared_on_purpose():
            return IndexMissing(f"the search index of {whose} that {INDEX_ID_ENV} shares was built by another state "
                                "dir (another machine's), and this one has no record of it yet: run ", run="index",
                                then=" once here (it embeds nothing the server holds already), then search")
        return IndexMissing(f"the search index of {whose} holds points this state dir has no record of: ", run="index",
                            then=" records them (what they hold is not embedded again)")

    def _built(self, collections) -> dict:
        """Each collection's manifest head where the store holds its shard, else None (as
        ``index_status`` reads them): a manifest whose shard is gone lists files no search
        finds, so they are stale and a synced search rebuilds the shard."""
        return {c.name: self._head(c.name) if self.store.exists(c.name) else None for c in collections}

    def _manifest(self, name: str):
        """The collection's manifest with every file's entry, read again only when it was saved
        again (warm queries)."""
        return self._cached(self._manifests, name, load_manifest)

    def _head(self, name: str):
        """The collection's manifest without its files, read again only when it was saved again."""
        return self._cached(self._heads, name, load_manifest_head)

    def _cached(self, cache: dict, name: str, load):
        key = manifest_serial(self.settings.data_dir, name)
        if key is None:
            cache.pop(name, None)
            return None
        cached = cache.get(name)
        if cached is None or cached[0] != key:
            cached = cache[name] = (key, load(self.settings.data_dir, name))
        return cached[1]

    def files_changed(self) -> None:
        """A watch saw memory files change: the next search walks the workspace again (else it
        reuses its last scan while its bounded check finds nothing moved; see ScanCache)."""
        self._scans.changed()

    def _still_there(self, hits: list) -> tuple[list, list[str], list[str]]:
        """The hits whose file is there now; the paths of those whose file is not; and those of the
        kept ones whose file is not as the last scan saw it (the change rule's key: edited since).
        Each hit's file is lstat'ed once, by the name the last scan listed it under (``_file_there``)."""
        if not hits:
            return hits, [], []
        listed = self._listed
        if listed is None or listed[0] is not self._scan:
            scan = self._scan
            listed = self._listed = (scan, {f.path: f for f in scan.files} if scan is not None else {})
        kept, gone, edited = [], [], set()
        for hit in hits:
            scanned = listed[1].get(hit.path)
            st = _file_there(hit.path, scanned.abs_path if scanned is not None else None, self.settings)
            if st is None:
                gone.append(hit.path)
                continue
            kept.append(hit)
            if scanned is not None and isinstance(st, os.stat_result) and (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_mode) != (
                    scanned.size, scanned.mtime_ns, scanned.ctime_ns, scanned.inode, scanned.mode):
                edited.add(hit.path)
        return kept, gone, sorted(edited)

    def _stale(self, collections, manifests) -> list[str]:
        with gc_paused():  # every file's entry, in bulk (none forms a cycle): no collection walks them
            return self._stale_now(collections, manifests)

    def _stale_now(self, collections, manifests) -> list[str]:
        scan = self._scan = self._scans.scan()
        # The same scan against the same manifests gives the same answer (a file whose stat
        # changes gives a new scan), so a warm process does not hash its suspects again.
        key = (id(scan), tuple(id(manifests[c.name]) for c in collections))
        if self._last_stale is not None and self._last_stale[0] == key:
            return list(self._last_stale[1])
        left: list = []  # the files the index leaves out, with the answer (each later search names them)
        groups = assign_files(collections, scan.files, left)
        stale: set[str] = set()
        for c in collections:
            stale.update(stale_known(self.settings.data_dir, manifests[c.name], groups[c.name]))
        # The scan and the manifests are kept with the answer, so that their ids are not reused.
        self._last_stale = (key, sorted(stale), scan, [manifests[c.name] for c in collections], left)
        return sorted(stale)

    def status(self) -> IndexStatus:
        from ..watchdog.gitstate import memory_git_changes

        git, notes = memory_git_changes(self.settings)
        return replace(index_status(self.settings, self.store), git=git, git_notes=notes)

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


@dataclass(frozen=True)
class _Probe:
    """What ``Collection.owns`` asks of a file: where the scan found it."""

    source: str
    abs_path: str


def _file_there(path: str, abs_path: str | None, settings: Settings) -> os.stat_result | bool | None:
    """A hit's memory file's lstat where it is still there (None where it is not): one lstat of the
    name the scan listed it under (``abs_path``), else (the scan did not list it) the path resolved
    as every memory path is, refusing symlinks, and its entry lstat'ed from its folder's descriptor.
    A file that cannot be looked at (no permission) counts as there (True)."""
    try:
        if abs_path is not None:
            st = os.lstat(abs_path)
        else:
            from ..errors import PathRefused
            from ..files.read import resolve_memory_path

            try:
                resolved = resolve_memory_path(path, os.fspath(settings.workspace), settings.extra_paths)
                with resolved.folder() as folder:
                    st = folder.lstat(resolved.name)
            except PathRefused:  # a symlink or no memory path now: not this memory file
                return None
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return True
    return st if stat.S_ISREG(st.st_mode) else None
