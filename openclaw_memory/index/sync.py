"""Incremental, idempotent sync of an agent's memory files into its collections.

Rules (docs/search.md tells users the same):
- A file whose size and mtime match the manifest is not read; one whose stat moved
  is read once and hashed (xxh3); only new content is chunked.
- A point id is ``uuid5(collection, path, chunk hash, k)`` (k: how many identical
  chunks came before it in the file), so re-running after a crash rewrites the same
  points: never a duplicate.
- Vectors are keyed by the hash of exactly what was embedded: before embedding, a
  chunk's vector is looked up in the agent's existing points (any path, any
  collection, including points a killed run left behind). A rename, a move or a
  copy therefore re-embeds nothing; only never-seen chunk texts reach the model.
- Stale points (old chunks of an edited file, every chunk of a removed file, and
  anything a crashed run orphaned) are deleted by path and id.
- Each collection's manifest is saved after its store writes; a ``.dirty`` marker
  set before the first write makes the next run reconcile store and manifest.
- When nothing changed, no shard is opened and neither the tokenizer nor the model
  is loaded (no torch import).
- A change of model, chunk budget, overlap or embedding backend (the fingerprint)
  drops the agent's collections and re-embeds, and the summary says why.
"""

from __future__ import annotations

import os
import signal
from contextlib import nullcontext
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

from ..files.scan import scan_workspace
from ..fsutil.lock import FileLock
from .collections import Collection, assign_files, registered_names, resolve_collections, sanitize
from .config import IndexConfig, index_config
from .manifest import (
    FileEntry,
    Manifest,
    clear_dirty,
    delete_manifest,
    diff_files,
    is_dirty,
    load_manifest,
    mark_dirty,
    read_version,
    save_manifest,
)
from .bm25 import save_stats, scan_stats
from .store.base import AGENT_FIELD, BODY_FIELD, PATH_FIELD, TERMS_FIELD, TEXT_FIELD, PointData, VectorStore
from .store.factory import open_store
from .terms import keyword_terms

_POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/openclaw/openclaw-memory/chunk")
# Test-only: SIGKILL this process after N store upserts, to prove a rerun heals the index.
KILL_HOOK_ENV = "OPENCLAW_MEMORY_TEST_KILL_AFTER_UPSERTS"
PROGRESS_STEP = 32  # chunks per progress report while embedding


@dataclass(frozen=True)
class SyncSummary:
    files_scanned: int
    files_changed: int
    files_removed: int
    chunks_embedded: int
    chunks_reused: int
    chunks_deleted: int
    seconds: float
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {
            "filesScanned": self.files_scanned,
            "filesChanged": self.files_changed,
            "filesRemoved": self.files_removed,
            "chunksEmbedded": self.chunks_embedded,
            "chunksReused": self.chunks_reused,
            "chunksDeleted": self.chunks_deleted,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class SyncProgress:
    """Reported while indexing: files read so far, chunks embedded so far, and their totals."""

    files_done: int
    files_total: int
    chunks_done: int
    chunks_total: int
    phase: str = "read"  # "read" (files), "model" (loading the embedding model), "embed" (chunks)
    chunks_written: int = 0  # of chunks_done, those already in the store (kept if the run stops)


ProgressCallback = Callable[[SyncProgress], None]


def point_id(collection: str, path: str, chunk_hash: str, k: int) -> str:
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{collection}\x00{path}\x00{chunk_hash}\x00{k}"))


def model_cache_dir(settings):
    """Exports of embedding models (ONNX), shared by every workspace of the state dir."""
    return settings.state_dir / "openclaw-memory" / "models"


def agent_lock(settings, timeout: float) -> FileLock:
    import hashlib

    key = hashlib.sha256(settings.agent.encode()).hexdigest()[:8]
    path = settings.data_dir / "index" / "locks" / f"sync-{sanitize(settings.agent)}-{key}.lock"
    return FileLock(str(path), timeout=timeout, what=f"the index of agent {settings.agent}")


class Models:
    """The tokenizer and the embedding model, each loaded on first use only."""

    def __init__(self, config: IndexConfig, cache_dir=None):
        self.config = config
        self.cache_dir = cache_dir  # where the ONNX export of the model is cached (the state dir)
        self._counter = None
        self._embedder = None
        self._pinned: str | None = None

    def pin_backend(self, backend: str) -> None:
        """Embed with the backend an existing index was built with (``auto`` may resolve otherwise now)."""
        if backend and self._embedder is None and self.config.embedding_backend == "auto":
            self._pinned = backend

    @property
    def counter(self):
        if self._counter is None:
            from .tokens import load_token_counter

            self._counter = load_token_counter(self.config.model)
        return self._counter

    @property
    def embedder(self):
        if self._embedder is None:
            from .embedding import load_embedder

            backend = self._pinned or self.config.embedding_backend
            self._embedder = load_embedder(self.config.model, backend=backend, cache_dir=self.cache_dir)
        return self._embedder

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    @property
    def budget(self) -> tuple[int, int]:
        """The effective (chunk budget, overlap) in the model's tokens."""
        from .chunking import resolve_budget

        return resolve_budget(self.counter, self.config.chunk_tokens, self.config.overlap_tokens)

    def chunk(self, text: str, path: str | None = None, items: bool = False):
        """The file's section chunks, its list items with ``items``, and its card (``path`` names
        the file: a title of last resort)."""
        from .chunking import chunk_document

        return chunk_document(
            text, self.counter, budget_tokens=self.config.chunk_tokens, overlap_tokens=self.config.overlap_tokens,
            path=path, items=items,
        )

    def fingerprint(self) -> str:
        from .embedding import embedding_fingerprint

        e = self.embedder
        budget, overlap = self.budget
        return embedding_fingerprint(e.model_name, e.dim, budget, overlap, e.backend)


@dataclass
class _Changed:
    file: object  # MemoryFile
    size: int
    mtime_ns: int
    hash: str
    points: list[tuple[str, str, dict]]  # (point id, chunk hash, payload without vector)


@dataclass
class _Work:
    collection: Collection
    old: Manifest | None
    new: Manifest
    changed: list[_Changed] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    dirty: bool = False
    files: dict = field(default_factory=dict)  # path -> MemoryFile scanned now
    suspects: list = field(default_factory=list)  # files whose stat moved: to read
    stat_only: bool = False  # same content, new stat: manifest update only
    started: bool = False  # dirty marker set, stale points deleted


def sync_index(
    settings,
    *,
    full: bool = False,
    progress: ProgressCallback | None = None,
    on_wait=None,
    models: Models | None = None,
    store: VectorStore | None = None,
) -> SyncSummary:
    """Bring the agent's collections in line with its memory files; see the module docstring."""
    config = index_config(settings)
    own_store = store is None
    store = store or open_store(settings, on_wait)
    models = models or Models(config, cache_dir=model_cache_dir(settings))
    lock = agent_lock(settings, config.lock_timeout)
    lock.acquire(on_wait=(lambda pid: on_wait(f"the index of agent {settings.agent}", pid)) if on_wait else None)
    try:
        return _Sync(settings, config, store, models, progress).run(full)
    finally:
        lock.release()
        if own_store:
            store.close()


class _Sync:
    def __init__(self, settings, config: IndexConfig, store: VectorStore, models: Models, progress):
        self.settings = settings
        self.config = config
        self.store = store
        self.models = models
        self.progress = progress or (lambda p: None)
        self.notes: list[str] = []
        self.embedded = self.reused = self.deleted = 0
        self.upserts = 0
        self.kill_after = int(os.environ.get(KILL_HOOK_ENV, "0") or 0)
        self.rekeyed: set[str] = set()  # settings key changed, fingerprint did not: save the new key

    def run(self, full: bool) -> SyncSummary:
        started = time.monotonic()
        data_dir = self.settings.data_dir
        collections = resolve_collections(self.settings, register=True)
        scan = scan_workspace(self.settings)
        groups = assign_files(collections, scan.files)
        olds = {c.name: load_manifest(data_dir, c.name) for c in collections}
        if full:
            self._drop_agent(collections)
            olds = dict.fromkeys(olds)
            self.notes.append("--full: dropped the agent's index and rebuilt it")
        olds = self._check_fingerprints(collections, olds)
        for old in olds.values():
            if old is not None and old.embed_backend:
                self.models.pin_backend(old.embed_backend)

        works = [self._plan(c, olds[c.name], groups[c.name]) for c in collections]
        self._read_suspects(works)
        busy = [w for w in works if w.changed or w.removed or w.dirty or w.old is None]
        if busy:
            # A small sync keeps its shards open from start to end (each load costs ~0.3 s on
            # the corpus); a long one opens them per batch so searches get through meanwhile.
            chunks = sum(len(ch.points) for w in busy for ch in w.changed)
            with self.store.held() if chunks <= self.config.embed_batch else nullcontext():
                self._reconcile([w for w in busy if w.dirty])
                self._write(busy, works)
        for w in works:
            if w in busy or w.stat_only or w.collection.name in self.rekeyed:
                self._save(w)
        files_total = sum(len(g) for g in groups.values())
        return SyncSummary(
            files_scanned=files_total,
            files_changed=sum(len(w.changed) for w in works),
            files_removed=sum(len(w.removed) for w in works),
            chunks_embedded=self.embedded,
            chunks_reused=self.reused,
            chunks_deleted=self.deleted,
            seconds=time.monotonic() - started,
            notes=tuple(self.notes),
        )

    # -- planning -------------------------------------------------------------------------

    def _drop_agent(self, collections: list[Collection]) -> None:
        names = {c.name for c in collections}
        names |= {n for n, e in registered_names(self.settings.data_dir).items() if e["agent"] == self.settings.agent}
        for name in sorted(names):
            if self.store.exists(name):
                self.store.drop(name)
            delete_manifest(self.settings.data_dir, name)

    def _check_fingerprints(self, collections, olds: dict) -> dict:
        result = dict(olds)
        for c in collections:
            old = olds[c.name]
            if old is None:
                continue
            if not self.store.exists(c.name):
                self.notes.append(f"{c.name}: the store has no shard for it; rebuilding")
                delete_manifest(self.settings.data_dir, c.name)
                result[c.name] = None
                continue
            if old.settings_key == self.config.settings_key and old.store_backend == self.store.backend:
                continue
            current = self.models.fingerprint()
            if current == old.fingerprint:
                self.rekeyed.add(c.name)
                continue
            self.notes.append(
                f"{c.name}: embedding settings changed (was model {old.model}, {old.embed_backend}, "
                f"fingerprint {old.fingerprint[:12]}; now model {self.config.model}, {self.models.embedder.backend}, "
                f"fingerprint {current[:12]}): re-embedding every chunk"
            )
            self.store.drop(c.name)
            delete_manifest(self.settings.data_dir, c.name)
            result[c.name] = None
        return result

    def _plan(self, c: Collection, old: Manifest | None, files: list) -> _Work:
        data_dir = self.settings.data_dir
        new = Manifest(c.name, self.settings.agent, files=dict(old.files) if old else {})
        if old is not None:
            new.fingerprint, new.dim = old.fingerprint, old.dim
        work = _Work(c, old, new, dirty=is_dirty(data_dir, c.name) or (old is None and self.store.exists(c.name)))
        work.files = {f.path: f for f in files}
        diff = diff_files(old, files)
        work.removed = list(diff.removed)
        work.suspects = diff.suspects
        return work

    def _read_suspects(self, works: list[_Work]) -> None:
        total = sum(len(w.suspects) for w in works)
        done = 0
        for w in works:
            for f in w.suspects:
                self._read(w, f)
                done += 1
                if done % 16 == 0 or done == total:
                    self.progress(SyncProgress(done, total, 0, 0))

    def _read(self, work: _Work, f, force: bool = False) -> None:
        version = read_version(f.abs_path)
        entry = work.old.files.get(f.path) if work.old else None
        if version is None:
            if entry is not None:
                work.removed.append(f.path)
            return
        if entry is not None and entry.hash == version.hash and not force:
            work.new.files[f.path] = FileEntry(version.size, version.mtime_ns, version.hash, entry.chunks)
            work.stat_only = True
            return
        text = version.data.decode("utf-8", errors="replace")
        seen: dict[str, int] = {}
        points = []
        # The root collection holds MEMORY.md (and the dream diary): durable facts, one per list item.
        for chunk in self.models.chunk(text, f.path, items=work.collection.kind == "root"):
            k = seen.get(chunk.hash, 0)
            seen[chunk.hash] = k + 1
            heading = chunk.heading_path if isinstance(chunk.heading_path, str) else " > ".join(chunk.heading_path)
            # Keywords of a section are its own lines (weighting titles and headings higher measured
            # worse); a card's are its title, front-matter fields, outline and the file's path.
            keywords = f"{chunk.embed_text}\n{f.path}" if chunk.kind == "card" else chunk.text
            payload = {
                AGENT_FIELD: self.settings.agent,
                "collection": work.collection.name,
                PATH_FIELD: f.path,
                "hash": chunk.hash,
                "startLine": chunk.start_line,
                "endLine": chunk.end_line,
                "heading": heading,
                "kind": chunk.kind,
                TEXT_FIELD: chunk.embed_text,
                TERMS_FIELD: " ".join(keyword_terms(keywords)),
                BODY_FIELD: chunk.text,
            }
            if chunk.fence_line:  # the chunk starts inside a code block: its snippet opens with the fence
                payload["fenceLine"], payload["fence"] = chunk.fence_line, chunk.fence
            points.append((point_id(work.collection.name, f.path, chunk.hash, k), chunk.hash, payload))
        work.changed = [ch for ch in work.changed if ch.file.path != f.path]
        work.changed.append(_Changed(f, version.size, version.mtime_ns, version.hash, points))

    def _reconcile(self, works: list[_Work]) -> None:
        """After a crash: delete points of files no longer indexed, re-chunk files whose points don't add up."""
        for w in works:
            if not self.store.exists(w.collection.name):
                continue
            with self.store.open(w.collection.name) as shard:
                counts = shard.path_counts()
            changed = {ch.file.path for ch in w.changed}
            current = {p for p in w.new.files if p not in w.removed}
            orphans = [p for p in counts if p not in current and p not in changed and p not in w.removed]
            w.removed.extend(orphans)
            for path, entry in list(w.new.files.items()):
                if path in changed or path in w.removed:
                    continue
                if counts.get(path, 0) != len(entry.chunks) and path in w.files:
                    self._read(w, w.files[path], force=True)

    # -- writing --------------------------------------------------------------------------

    def _write(self, works: list[_Work], all_works: list[_Work]) -> None:
        needed: dict[str, str] = {}
        for w in works:
            for ch in w.changed:
                for _pid, h, payload in ch.points:
                    needed.setdefault(h, payload[TEXT_FIELD])
        vectors = self._reusable_vectors(all_works, needed)
        missing = sorted((h for h in needed if h not in vectors), key=lambda h: -len(needed[h]))
        files_total = sum(len(w.suspects) for w in works)
        if missing and not self.models.loaded:
            self.progress(SyncProgress(files_total, files_total, 0, len(missing), "model"))
            self.models.embedder  # noqa: B018 - load it now, so the wait is reported as such
        self.progress(SyncProgress(files_total, files_total, 0, len(missing), "embed"))

        for w in works:
            self._flush(w, vectors, first=True)
        batch = self.config.embed_batch
        for start in range(0, len(missing), batch):
            hashes = missing[start : start + batch]
            # Embedded in steps of at most PROGRESS_STEP chunks, each reported (rate, ETA); written per batch.
            for step in range(0, len(hashes), PROGRESS_STEP):
                part = hashes[step : step + PROGRESS_STEP]
                for h, vec in zip(part, self.models.embedder.encode([needed[h] for h in part])):
                    vectors[h] = vec
                if step + PROGRESS_STEP < len(hashes):
                    self.progress(SyncProgress(files_total, files_total, start + step + len(part), len(missing), "embed", start))
            batch_hashes = set(hashes)
            self.embedded += sum(1 for w in works for ch in w.changed for _p, h, _ in ch.points if h in batch_hashes)
            for w in works:
                self._flush(w, vectors, only=batch_hashes)
            done = min(start + batch, len(missing))
            self.progress(SyncProgress(files_total, files_total, done, len(missing), "embed", done))
        for w in works:
            if w.started:
                with self.store.open(w.collection.name) as shard:
                    shard.optimize()
                    # Keyword statistics of what the shard now holds (index.bm25: one per agent).
                    save_stats(self.settings.data_dir, w.collection.name, scan_stats(shard))

    def _reusable_vectors(self, works: list[_Work], needed: dict[str, str]) -> dict:
        """Vectors already in the store for the needed chunk hashes: any path, any collection of the agent."""
        candidates: dict[str, set[str]] = {}
        for w in works:
            if w.old is None:
                continue
            name = w.collection.name
            for entry in w.old.files.values():
                for pid, h in entry.chunks:
                    if h in needed:
                        candidates.setdefault(name, set()).add(pid)
        for w in works:  # points a killed run may have written already
            for ch in w.changed:
                candidates.setdefault(w.collection.name, set()).update(pid for pid, _h, _p in ch.points)
        vectors: dict = {}
        for name, ids in candidates.items():
            if not self.store.exists(name):
                continue
            with self.store.open(name) as shard:
                for hit in shard.retrieve(sorted(ids), with_vector=True, fields=["hash"]):
                    h = hit.payload.get("hash")
                    if h in needed and hit.vector is not None:
                        vectors.setdefault(h, hit.vector)
        return vectors

    def _dim(self, vectors: dict) -> int:
        if self.models.loaded:
            return self.models.embedder.dim
        for vec in vectors.values():
            return len(vec)
        return self.models.embedder.dim

    def _flush(self, w: _Work, vectors: dict, *, first: bool = False, only: set | None = None) -> None:
        points = []
        for ch in w.changed:
            for pid, h, payload in ch.points:
                if (only is None and h in vectors) or (only is not None and h in only):
                    points.append(PointData(pid, vectors[h], payload))
        if first:
            if only is None:
                self.reused += len(points)
            if not (points or w.removed or w.changed or w.dirty or w.old is None):
                return
        elif not points:
            return
        data_dir = self.settings.data_dir
        if not w.started:
            mark_dirty(data_dir, w.collection.name)
            w.started = True
        with self.store.open(w.collection.name, dim=self._dim(vectors)) as shard:
            if first:
                before = shard.count()
                if w.removed:
                    shard.delete_paths(w.removed)
                for ch in w.changed:
                    shard.delete_path_except(ch.file.path, [pid for pid, _h, _p in ch.points])
                self.deleted += before - shard.count()
            if points:
                shard.upsert(points)
                self.upserts += 1
                if self.kill_after and self.upserts >= self.kill_after:
                    os.kill(os.getpid(), signal.SIGKILL)

    def _save(self, w: _Work) -> None:
        for path in w.removed:
            w.new.files.pop(path, None)
        for ch in w.changed:
            w.new.files[ch.file.path] = FileEntry(ch.size, ch.mtime_ns, ch.hash, [(pid, h) for pid, h, _ in ch.points])
        if w.old is None or w.old.settings_key != self.config.settings_key or not w.new.fingerprint:
            w.new.fingerprint = self.models.fingerprint()
            w.new.dim = self.models.embedder.dim
        elif self.models.loaded:
            w.new.dim = self.models.embedder.dim
        w.new.settings_key = self.config.settings_key
        w.new.model = self.config.model
        w.new.embed_backend = self.models.embedder.backend if self.models.loaded else (w.old.embed_backend if w.old else "")
        w.new.store_backend = self.store.backend
        save_manifest(self.settings.data_dir, w.new)
        clear_dirty(self.settings.data_dir, w.collection.name)
