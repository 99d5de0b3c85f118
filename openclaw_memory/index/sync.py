"""Incremental, idempotent sync of an agent's memory files into its collections.

Rules (docs/search.md tells users the same):
- A file the change rule (``database.observations``) knows unchanged since its indexed content
  was hashed is not read; any other is read once and hashed (xxh3); only new content is chunked.
- A point id is ``uuid5(collection, path, chunk hash, k)`` (k: how many identical
  chunks came before it in the file), so re-running after a crash rewrites the same
  points: never a duplicate.
- Vectors are keyed by the hash of exactly what was embedded: before embedding, a
  chunk's vector is looked up in the agent's existing points (any path, any
  collection, including points a killed run left behind). A rename, a move or a
  copy therefore re-embeds nothing; only never-seen chunk texts reach the model.
- Stale points (old chunks of an edited file, every chunk of a removed file, and
  anything a crashed run orphaned) are deleted by path and id.
- Each collection's manifest is saved after its store writes; a dirty mark (state database)
  set before the first write makes the next run reconcile store and manifest.
- Searches in this process answer from the last committed state meanwhile: reading, chunking
  and embedding share the store's read view with them; the commit (every live write, swap and
  removal, the keyword statistics and the manifests) has it alone, and is only writes: a search
  sees each file's chunks all old or all new, never half of them. Optimizing comes after.
- When nothing changed, no shard is opened and neither the tokenizer nor the model
  is loaded (no torch import).
- A change of model, chunk budget, overlap or embedding backend (the fingerprint)
  drops the agent's collections and re-embeds, and the summary says why. New chunking rules alone
  (the chunker's version) chunk every file again and embed only texts no point holds.
"""

from __future__ import annotations

import errno
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .. import faults
from ..bulk import gc_paused
from ..database import Database
from ..database.observations import Observations, TextCheck
from ..errors import DiskFull, MemoryToolError, no_inode_left, printable
from ..files.scan import MemoryFile, scan_paths, scan_workspace
from ..fsutil.fsclock import guard_ns
from ..fsutil.space import free_bytes
from ..types import ProgressCallback
from .agent_lock import agent_lock
from .bm25 import StatsCount, TermChange, TermStats, change_stats, save_stats, scan_stats
from .collections import (
    Collection,
    assign_files,
    left_out,
    registered_names,
    resolve_collections,
    some_named,
    unindexable,
)
from .config import IndexConfig, index_config
from .embedding import fingerprint_parts, recipe_outdated, what_changed
from .lender import Models
from .manifest import (
    FileEntry,
    FileStat,
    Manifest,
    chunk_map,
    clear_dirty,
    delete_manifest,
    diff_files,
    diff_known,
    is_dirty,
    load_entries,
    load_manifest,
    load_manifest_head,
    lookup_chunks,
    manifest_chunk_count,
    manifest_serial,
    mark_dirty,
    read_version,
    write_manifest,
)
from .results import FileRead, SyncProgress, SyncSummary
from .store.base import AGENT_FIELD, BODY_FIELD, PATH_FIELD, TERMS_FIELD, TEXT_FIELD, PointData, Shard, VectorStore
from .store.edge_shard import OPTIMIZE_ROOM
from .store.factory import open_store
from .terms import TERMS_VERSION, keyword_terms

if TYPE_CHECKING:
    from ..settings import Settings

_POINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/openclaw/openclaw-memory/chunk")
# Test-only: SIGKILL this process after N store upserts, to prove a rerun heals the index;
# pause after N (until SIGUSR1), to prove searches answer while an index runs; pause after N steps
# of embedding (PROGRESS_STEP chunks each), to interrupt a run between embedding and writing.
PROGRESS_STEP = 32  # chunks per progress report while embedding


# The bytes a sync keeps for its summary (``keeping_reads``): past this, the files it reads are not
# kept (the watch then records what they hold once the sync is done, as before).
KEPT_READS_BYTES = 64 << 20
_keeping = threading.local()


@contextmanager
def keeping_reads():
    """Syncs of this thread within the block return, in their summary, the bytes of each file they
    read and the memory files they left out (``SyncSummary.read``, ``left_out``): the watch keeps
    exactly the versions it indexed in the history. Other callers keep nothing (no memory held)."""
    before = getattr(_keeping, "on", False)
    _keeping.on = True
    try:
        yield
    finally:
        _keeping.on = before


def point_id(collection: str, path: str, chunk_hash: str, k: int) -> str:
    # The keyword rules' version is part of the id: a chunk whose text is unchanged is still written
    # again (its vector reused by hash) when the rules that cut its ``terms`` change.
    tail = f"\x00t{TERMS_VERSION}" if TERMS_VERSION else ""
    return str(uuid.uuid5(_POINT_NAMESPACE, f"{collection}\x00{path}\x00{chunk_hash}\x00{k}{tail}"))


@dataclass
class _Changed:
    file: MemoryFile
    stat: FileStat
    hash: str
    points: list[tuple[str, str]]  # (point id, chunk hash), in file order
    chunks: list | None  # the chunks themselves until they are written (then None: memory stays bounded)


# The cosine at or above which a point's stored vector is the one this run's embedder gives its text
# (the same model and backend agree to rounding; another backend or model is far below it).
_SAME_VECTOR = 0.99


@dataclass
class _Work:
    collection: Collection
    old: Manifest | None
    new: Manifest
    changed: list[_Changed] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    dirty: bool = False
    fresh: bool = False  # rebuild from nothing (--full, new embedding settings): no vector is reused
    rechunk: bool = False  # new chunking rules, same vectors: every file chunked again, known texts reused
    files: dict[str, MemoryFile] = field(default_factory=dict)  # path -> the file as scanned now
    suspects: list[MemoryFile] = field(default_factory=list)  # files whose stat moved: to read
    stat_only: bool = False  # same content, new stat: manifest update only
    started: bool = False  # something was written for this collection
    staged: str | None = None  # the shard built beside the live one, to swap in at the end
    live: _Live | None = None  # a change embedded for the live shard, written at the commit
    stats: TermStats | TermChange | None = None  # the keyword statistics to save at the commit (None: those saved hold)
    texts: list[tuple[str, TextCheck]] = field(default_factory=list)  # what the files read are as text (doctor's check)
    counted: StatsCount | None = None  # the statistics of a shard built from nothing, counted as it is written


@dataclass
class _Live:
    changes: list[_Changed]
    prepared: list[tuple[list[tuple[str, str, dict]], dict, set[str]]]  # (piece, vectors by hash, hashes embedded now)
    dim: int
    stats: TermChange | None  # what the write changes of the statistics, when known without a scan


def sync_index(
    settings: Settings,
    *,
    full: bool = False,
    progress: ProgressCallback | None = None,
    on_wait=None,
    models: Models | None = None,
    store: VectorStore | None = None,
    wait: bool = True,
    paths: Sequence[str] | None = None,
) -> SyncSummary:
    """Bring the agent's collections in line with its memory files; see the module docstring.

    ``wait=False`` gives up at once (LockTimeout) when another process is indexing this agent.
    ``paths`` (workspace-relative, what a write just changed): bring only those files in line,
    at a cost that does not grow with the memory (no folder listed, only their manifest rows
    read); other stale files wait for the next sync without it. Where the index is not in a
    state a few files can be synced into (none yet, a crash to reconcile, other settings, a
    damaged shard) or a path is one only the whole scan places, the whole sync runs instead.
    Raises DiskFull, having changed nothing, when the state dir has no room for the index.
    """
    config = index_config(settings)
    own_store = store is None
    store = store or open_store(settings, on_wait)
    models = models or Models(config, cache_dir=settings.model_cache)
    lock = agent_lock(settings, config.lock_timeout if wait else 0)
    view = store.view  # what this process's searches read (None: a store each call has alone)
    try:
        # A caller that reads the view (a search that syncs first) lets go of it while it waits:
        # the sync holding the lock may be waiting for its readers to commit.
        with view.released() if view is not None else nullcontext():
            lock.acquire(on_wait=(lambda pid: on_wait(f"the index of agent {settings.agent}", pid)) if on_wait and wait else None)
        try:
            with view.reading() if view is not None else nullcontext():
                return _Sync(settings, config, store, models, progress, view).run(full, paths)
        finally:
            lock.release()
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        raise disk_full(settings.data_dir / "index", indexed=_has_index(settings, store)) from None
    finally:
        if own_store:
            store.close()


def disk_full(folder, needed: int | None = None, *, indexed: bool = True) -> DiskFull:
    """``indexed``: whether the agent has an index the failed run leaves in use (a first index has none)."""
    free = free_bytes(folder)
    need = f", about {_mib(needed)} needed" if needed else ""
    kept = "the last complete index is still in use" if indexed else "there is no search index yet"
    if no_inode_left(folder):
        return DiskFull(f"the file system holding the index ({folder}) has no inode left ({_mib(free)} free, but no new "
                        f"file can be made): nothing was changed, {kept}; remove some files there and run "
                        "`openclaw-memory index` again")
    return DiskFull(
        f"the disk holding the index ({folder}) is full ({_mib(free)} free{need}): nothing was changed, {kept}; "
        "free some space and run `openclaw-memory index` again"
    )


def _has_index(settings: Settings, store: VectorStore) -> bool:
    """Whether any collection of the agent is built (a disk found full says what searches still answer
    from): a shard with a manifest; one without is what a killed first index left, which no search uses."""
    try:
        return any(entry["agent"] == settings.agent and store.exists(name) and manifest_serial(settings.data_dir, name) is not None
                   for name, entry in registered_names(settings.data_dir).items())
    except OSError:
        return True  # (not known: the message keeps its usual words)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"


# Room the engine needs before it writes: its files are memory-mapped, and a write that finds
# the disk full there is a SIGBUS, not an error. Measured on Qdrant Edge (384-dimension vectors):
# a new shard allocates ~85 MiB at once where the file system does not keep holes (tmpfs: its
# payload-index pages are written whole), a point takes ~6 KB across vectors, payload, text
# indexes and WAL, and a full page file grows by 32 MiB at a time.
_BYTES_PER_POINT = 16 << 10
_NEW_SHARD = 96 << 20
_MARGIN = 64 << 20
_RECENT = 4096  # vectors kept for reuse within a run (~6 MB)


class _Sync:
    def __init__(self, settings: Settings, config: IndexConfig, store: VectorStore, models: Models, progress, view=None):
        self.settings = settings
        self.view = view
        self.config = config
        self.store = store
        self.models = models
        # Files are read from the descriptor of their allowed root (boundary: docs/guarantees.md).
        self.roots = (str(settings.workspace), *map(str, settings.extra_paths))
        self.racy_guard_ns = guard_ns(*self.roots)
        self.progress = progress or (lambda p: None)
        self.notes: list[str] = []
        self.embedded = self.reused = self.deleted = 0
        self.batches = self.embed_steps = 0  # counted for the fault steps index:batch:N, index:embedded:N
        self.rekeyed: set[str] = set()  # settings key changed, fingerprint did not: save the new key
        self.rechunk: set[str] = set()  # only the chunker's version changed: chunk again, reuse vectors
        self._by_hash: dict[str, dict[str, list[str]]] | None = None
        self._lenders: dict[str, Manifest] = {}  # the old manifests whose points may lend a vector
        self._lookups = 0
        self.targeted = False  # syncing the files a write named, not the whole workspace
        self.files_done = self.files_total = 0
        self.chunks_done = self.chunks_seen = self.chunks_kept = 0
        # Vectors embedded by this run, the most recent first out last: the same text in many
        # files is embedded once, and memory stays bounded however large the corpus.
        self.recent: OrderedDict[str, object] = OrderedDict()
        self.kept: list[FileRead] | None = [] if getattr(_keeping, "on", False) else None  # see keeping_reads
        self.kept_bytes = 0
        self.left_out: list[MemoryFile] = []

    def run(self, full: bool, paths: Sequence[str] | None = None) -> SyncSummary:
        started = time.monotonic()
        collections = resolve_collections(self.settings, register=True)
        # Each collection's manifest without its files: the entries a run needs are read later,
        # by key (the files it reads or removes), or whole only where a crash is reconciled.
        olds = {c.name: load_manifest_head(self.settings.data_dir, c.name) for c in collections}
        files: Sequence[MemoryFile] | None = None
        if paths is not None and not full and self._targetable(collections, olds):
            files = scan_paths(self.settings, paths)
        self.targeted = files is not None
        if files is None:
            files = self._scan()
        for c in collections:
            self.store.discard_stages(c.name)  # left by a killed run; we hold the agent's lock
            if olds[c.name] is None and self.store.exists(c.name):
                self._drop_leftover_unless_it_fits(c.name, full)
                if self.store.exists(c.name) and not full:  # kept to resume: its vectors must be this run's
                    self._drop_leftover_embedded_otherwise(c.name)
        fresh: set[str] = set()
        if full:
            fresh = {c.name for c in collections if self.store.exists(c.name)}
            olds = dict.fromkeys(olds)  # (the caller asked for it: a rebuild is no note, let alone a warning)
        olds = self._check_fingerprints(collections, olds, fresh)
        if self.targeted and any(old is None for old in olds.values()):
            self.targeted = False  # a damaged shard dropped: it is rebuilt from every file
            files = self._scan()
        with gc_paused():  # bulk lists of every file (none forms a cycle): no collection walks them
            groups = assign_files(collections, files)
        if self.targeted:
            self._note_left_out(files)
        for old in olds.values():
            if old is not None and old.embed_backend:
                self.models.pin_backend(old.embed_backend)
        self._lenders = {name: old for name, old in olds.items() if old is not None and name not in fresh}

        with gc_paused():
            works = [self._plan(c, olds[c.name], groups[c.name], c.name in fresh, paths if self.targeted else None)
                     for c in collections]
        for w in works:
            if w.collection.name in self.rechunk:
                w.rechunk = True
                w.suspects = sorted(w.files.values(), key=lambda f: f.path)  # every file, whatever its stat
        self.files_total = sum(len(w.suspects) for w in works)
        try:
            saved = [w for w in works if self._sync_work(w) or w.stat_only or w.rechunk or w.collection.name in self.rekeyed]
            # The commit: searches wait for it (writes only, everything was embedded before).
            # Removals and swaps come last: until then every old point could lend its vector
            # (a file moved from one collection to another is not embedded again).
            with self.store.held():  # a shard the commit writes is opened once for it and the optimize after
                for w in saved:
                    self._prepare_commit(w)
                for w in saved:  # a live shard's batches are fault steps before the commit writes them
                    for _ in w.live.prepared if w.live is not None else ():
                        self._batch_done()
                with self._committing():
                    for w in saved:
                        self._commit(w)
                    if saved:
                        # One transaction for every manifest, statistic and observation of the run:
                        # a crash before it leaves the dirty marks, and the next run reconciles.
                        with Database(self.settings.data_dir).transaction() as conn:
                            for w in saved:
                                self._record(conn, w)
                for w in saved:
                    self._settle(w)
        except BaseException:
            # A failed run (a full disk, Ctrl-C) leaves no half-built shard beside a live one.
            for c in collections:
                self.store.discard_stages(c.name)
            raise
        if full:
            with self._committing():
                self._drop_unused(collections)
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
            read=tuple(self.kept or ()),
            left_out=tuple(self.left_out),
        )

    # -- planning -------------------------------------------------------------------------

    def _scan(self) -> Sequence[MemoryFile]:
        """Every memory file of the workspace (the stat of each), and what the scan says of them."""
        with gc_paused():  # 30,000 files' entries: the collector walked them again at each threshold
            scan = scan_workspace(self.settings)
        self._note_left_out(scan.files)
        self.notes += [f"{w}: the notes in it are not indexed" for w in scan.warnings]
        return scan.files

    def _note_left_out(self, files: Sequence[MemoryFile]) -> None:
        unindexed = unindexable(files)
        if unindexed:
            self.notes.append(f"not indexed: {some_named(unindexed)}")
            if self.kept is not None:
                names = {left.path for left in left_out(files)}
                self.left_out = [f for f in files if f.path in names]

    def _targetable(self, collections: list[Collection], olds: dict[str, Manifest | None]) -> bool:
        """Whether a few files can be synced alone: every collection indexed, with nothing to
        reconcile, under these settings and in this store (else the whole sync must run)."""
        data_dir = self.settings.data_dir
        return all(old is not None and old.settings_key == self.config.settings_key
                   and old.store_backend == self.store.backend and not recipe_outdated(old.fingerprint)
                   and self.store.exists(c.name) and not is_dirty(data_dir, c.name)
                   for c in collections for old in (olds[c.name],))

    def _drop_unused(self, collections: list[Collection]) -> None:
        """After --full: the agent's registered collections no current one uses (removed extra paths)."""
        current = {c.name for c in collections}
        for name, entry in sorted(registered_names(self.settings.data_dir).items()):
            if entry["agent"] == self.settings.agent and name not in current:
                if self.store.exists(name):
                    self.store.drop(name)
                delete_manifest(self.settings.data_dir, name)

    def _drop_leftover_unless_it_fits(self, name: str, full: bool) -> None:
        """A shard no manifest vouches for (a first index killed part way: no search uses it) is
        resumed in place, its points lending their vectors, where the disk has room beside it for
        the engine to rewrite it: an optimize writes the segments it merges before it drops them
        (the engine refuses one without twice their size free), then needs our own room. Else, and
        for ``--full`` (which reuses no vector), it is removed first and the build starts from an
        empty shard: kept, a first index that fits on the disk stopped for want of room at every
        try (a 95 MiB leftover on a 400 MiB disk where the whole index takes 252 MiB), and what
        the killed run left was never given back."""
        if self.store.backend != "edge":
            return
        left = self.store.disk_usage(name)
        if not full and free_bytes(self.settings.data_dir / "index") >= 2 * left + OPTIMIZE_ROOM:
            return
        with self._committing():
            self.store.drop(name)
        if not full:
            self.notes.append(f"{name}: an interrupted first index left {_mib(left)} the disk has no room to resume "
                              "beside: removed it and started again")

    def _drop_leftover_embedded_otherwise(self, name: str) -> None:
        """A shard no manifest vouches for lends its points' vectors to the run that resumes it, but
        nothing records how the killed run embedded them: one killed under the hash backend, resumed
        with the model, gave 256 of its 300 chunks hash vectors under the model's fingerprint (a
        note's own first line found other notes first; doctor found nothing). One of its points is
        embedded again now; where that vector is not the one it holds, the leftover is removed and
        the build starts from an empty shard."""
        try:
            with self.store.open(name, keep=False) as shard:
                first = next(iter(shard.scroll([TEXT_FIELD])), None)
                held = shard.retrieve([first.id], with_vector=True) if first is not None else []
        except MemoryToolError:
            return  # a shard that does not open: the damage check that follows drops it
        text = first.payload.get(TEXT_FIELD) if first is not None else None
        if not held or held[0].vector is None or not isinstance(text, str):
            return  # nothing to lend
        if not self.models.loaded:
            self._report("model")
        (again,) = self.models.embedder.encode([text])
        stored = held[0].vector
        dot = sum(a * b for a, b in zip(again, stored, strict=False))
        norms = (sum(a * a for a in again) * sum(b * b for b in stored)) ** 0.5
        if norms and dot / norms >= _SAME_VECTOR:
            return
        with self._committing():
            self.store.drop(name)
        self.notes.append(f"{name}: an interrupted first index was embedded another way (another model or backend): "
                          "removed it and started again")

    def _check_fingerprints(self, collections, olds: dict, fresh: set[str]) -> dict:
        result = dict(olds)
        data_dir = self.settings.data_dir
        for c in collections:
            old = olds[c.name]
            if self.store.exists(c.name):
                # Counted by the database: the run has not read the manifest's entries (none, or a few).
                expected = manifest_chunk_count(data_dir, c.name) if old is not None and not is_dirty(data_dir, c.name) else None
                reason = self.store.check(c.name, expected)
                if reason is not None:
                    # Derived from the memory files: a damaged shard is rebuilt, never trusted.
                    self.notes.append(f"{c.name} was damaged ({reason}): rebuilt it from the memory files")
                    with self._committing():
                        self.store.drop(c.name)
                        delete_manifest(data_dir, c.name)
                    fresh.discard(c.name)
                    result[c.name] = None
                    continue
            if old is None:
                continue
            if not self.store.exists(c.name):
                self.notes.append(f"{c.name}: the store has no shard for it; rebuilding")
                delete_manifest(data_dir, c.name)
                result[c.name] = None
                continue
            # Not moved to another store, and not an older ONNX export's vectors.
            same_vectors = old.store_backend == self.store.backend and not recipe_outdated(old.fingerprint)
            if same_vectors and old.settings_key == self.config.settings_key:
                continue
            if same_vectors and self.config.vectors_hold(old.settings_key):
                # New chunking rules, the same vector for the same text: chunk every file again and
                # embed only the texts no point holds yet (an upgrade does not re-embed a whole index).
                self.notes.append(f"{c.name}: the chunking rules changed: chunked every file again, "
                                  "embedding only the chunks whose text is new")
                self.rechunk.add(c.name)
                continue
            current = self.models.fingerprint()
            if current == old.fingerprint:
                self.rekeyed.add(c.name)
                continue
            why = "embedding settings changed"
            if old.settings_key == self.config.settings_key and recipe_outdated(old.fingerprint):
                why = "the ONNX export's int8 recipe changed"
            changes = what_changed(fingerprint_parts(old.fingerprint), fingerprint_parts(current))
            self.notes.append(f"{c.name}: {why} ({changes}): re-embedding every chunk")
            fresh.add(c.name)  # built beside the live shard, which searches keep using until the swap
            result[c.name] = None
        return result

    def _plan(self, c: Collection, old: Manifest | None, files: list, fresh: bool, paths: Sequence[str] | None) -> _Work:
        """What to read and remove for one collection. ``old`` comes without its entries: those
        of the files to read or remove are loaded here (``paths``: those a write named); the
        whole manifest only where a crash is reconciled or the chunking rules changed."""
        data_dir = self.settings.data_dir
        dirty = not fresh and (is_dirty(data_dir, c.name) or (old is None and self.store.exists(c.name)))
        if old is not None and paths is not None:
            old.files = load_entries(data_dir, c.name, paths)
            diff = diff_files(old, files)
        elif old is not None and (dirty or c.name in self.rechunk):
            whole = load_manifest(data_dir, c.name)
            old.files = whole.files if whole is not None else {}
            diff = diff_files(old, files)
        elif old is not None:
            diff = diff_known(data_dir, c.name, files)
            old.files = load_entries(data_dir, c.name, [f.path for f in diff.suspects] + diff.removed)
        else:
            diff = diff_files(None, files)
        new = Manifest(c.name, self.settings.agent, files=dict(old.files) if old else {})
        if old is not None:
            new.fingerprint, new.dim = old.fingerprint, old.dim
        work = _Work(c, old, new, dirty=dirty, fresh=fresh)
        work.files = {f.path: f for f in files}
        work.removed = list(diff.removed)
        work.suspects = diff.suspects
        return work

    # -- one collection, in bounded batches -------------------------------------------------

    def _sync_work(self, w: _Work) -> bool:
        """Read, chunk, embed and write one collection, ``embed_batch`` chunks at a time; True when
        its manifest must be saved.

        Searches keep answering from the last complete index meanwhile: a change that fits in one
        batch is embedded first and written to the live shard in one short locked step; a larger
        one (or a rebuild) is written to a copy beside the live shard, swapped in at the end.
        """
        name = w.collection.name
        todo = [(f, False) for f in w.suspects]
        if w.dirty and self.store.exists(name):
            todo += [(f, True) for f in self._reconcile(w, {f.path for f in w.suspects})]
        if not (todo or w.removed or w.dirty or w.old is None or w.fresh):
            return False
        pending: list[_Changed] = []
        count = 0
        batch = self.config.embed_batch
        # The shard being built is opened once for the whole collection: no search uses it (a copy
        # beside the live one, or a first build that has no manifest yet).
        with ExitStack() as building:

            def start_building() -> tuple[str, Shard]:
                if w.fresh or not self.store.exists(name):  # no copy: the shard holds what this run writes
                    w.counted = StatsCount()
                where = self._stage(w)
                return where, building.enter_context(self.store.open(where, dim=self.models.embedder.dim))

            # Where the collection is built and its shard, open; None until the first batch is written.
            target: tuple[str, Shard] | None = None
            for f, force in todo:
                change = self._read(w, f, force)
                self.files_done += 1
                if change is not None:
                    pending.append(change)
                    count += len(change.points)
                    self.chunks_seen += len(change.points)
                if self.files_done % 16 == 0 or self.files_done == self.files_total:
                    self._report()
                if count >= batch:
                    if target is None:
                        target = start_building()
                    self._flush(w, target[0], target[1], pending)
                    pending, count = [], 0
            if target is None and w.fresh:
                target = start_building()
            if target is None:
                if not (pending or w.removed or w.dirty or w.old is None):
                    return bool(w.changed)
                self._prepare_live(w, pending)
            else:
                staged, shard = target
                self._flush(w, staged, shard, pending)
                shard.optimize()
                counted, w.counted = w.counted, None
                # Every point of a shard built from nothing was counted as it was written (the
                # exact count agrees); a copy of the live shard is counted from what it holds.
                w.stats = counted.stats() if counted is not None and counted.chunks == shard.count() else scan_stats(shard)
                w.staged = staged
        self.deleted += self._stale_count(w)
        return True

    def _committing(self) -> AbstractContextManager:
        """The view to write (searches of this process wait): the commit's writes only."""
        return self.view.writing() if self.view is not None else nullcontext()

    def _prepare_commit(self, w: _Work) -> None:
        """Before the commit, searches still answering: the dirty mark of a shard about to change
        (committed on its own, before any write to the shard), and the new manifest."""
        name = w.collection.name
        if w.live is not None or (w.staged is not None and w.staged != name):
            mark_dirty(self.settings.data_dir, name)  # until the manifest of the new state is saved
            w.started = True
        if w.live is not None:
            w.stats = w.live.stats
        self._fill_manifest(w)

    def _commit(self, w: _Work) -> None:
        """Write what was embedded for the live shard, or swap the built one in. Searches wait
        meanwhile: no embedding here."""
        if w.live is not None:
            self._write_live(w, w.live)
        elif w.staged is not None and w.staged != w.collection.name:  # (a first build is written in place)
            self.store.publish(w.staged, w.collection.name)

    def _record(self, conn: sqlite3.Connection, w: _Work) -> None:
        """The collection's manifest, its keyword statistics (index.bm25: one statistic per agent),
        the observations of its files and what the files read are as text (doctor's UTF-8 check
        takes that instead of opening them again), saved; its dirty mark cleared."""
        name = w.collection.name
        write_manifest(conn, w.new, w.old)
        Observations.record_text(conn, w.texts)
        if w.stats is not None:
            save_stats(conn, name, w.stats)
        clear_dirty(conn, name)

    def _settle(self, w: _Work) -> None:
        """After the commit, searches answering meanwhile: check the statistics the commit saved
        add up, and let the engine optimize what the live write added."""
        if w.live is not None:
            with self.store.open(w.collection.name) as shard:
                if w.live.stats is not None and w.live.stats.chunks != shard.count():
                    stats = scan_stats(shard)  # they do not (never seen): the shard's own count replaces them
                    with self._committing(), Database(self.settings.data_dir).transaction() as conn:
                        save_stats(conn, w.collection.name, stats)
                shard.optimize()
            self._report()

    def _report(self, phase: str | None = None, embedded_now: int = 0) -> None:
        phase = phase or ("embed" if self.chunks_seen else "read")
        self.progress(SyncProgress(self.files_done, self.files_total, self.chunks_done + embedded_now, self.chunks_seen, phase,
                                   self.chunks_kept))

    def _read(self, work: _Work, f, force: bool = False) -> _Changed | None:
        read_ns = time.monotonic_ns()
        version = read_version(f.abs_path, self.roots, self.racy_guard_ns)
        entry = work.old.files.get(f.path) if work.old else None
        if version is None:
            if entry is not None:
                work.removed.append(f.path)
            return None
        if self.kept is not None and self.kept_bytes + len(version.data) <= KEPT_READS_BYTES:
            self.kept.append(FileRead(f.path, f.abs_path, version.hash, version.data, version.stat.inode, read_ns))
            self.kept_bytes += len(version.data)
        work.texts.append((f.abs_path, TextCheck.of(version.data, version.hash)))
        same = entry is not None and entry.hash == version.hash and not force
        if same and entry is not None and not work.rechunk:
            work.new.files[f.path] = FileEntry(version.stat, version.hash, entry.chunks, f.abs_path)
            work.stat_only = True
            return None
        seen: dict[str, int] = {}
        if b"\x00" in version.data:  # a binary file named .md (an ELF, an image): no text to embed
            self.notes.append(f"not indexed: {printable(f.path)} is not text (it holds NUL bytes)")
            chunks = []
        else:
            text = version.data.decode("utf-8", errors="replace")
            # The root collection holds MEMORY.md (and the dream diary): durable facts, one per list item.
            chunks = self.models.chunk(text, f.path, items=work.collection.kind == "root")
        points = []
        for chunk in chunks:
            k = seen.get(chunk.hash, 0)
            seen[chunk.hash] = k + 1
            points.append((point_id(work.collection.name, f.path, chunk.hash, k), chunk.hash))
        if same and entry is not None and [tuple(c) for c in entry.chunks] == points:  # chunked again, the same chunks
            work.new.files[f.path] = FileEntry(version.stat, version.hash, entry.chunks, f.abs_path)
            work.stat_only = True
            return None
        work.changed = [ch for ch in work.changed if ch.file.path != f.path]
        change = _Changed(f, version.stat, version.hash, points, chunks)
        work.changed.append(change)
        return change

    def _payload(self, work: _Work, path: str, chunk) -> dict:
        heading = chunk.heading_path if isinstance(chunk.heading_path, str) else " > ".join(chunk.heading_path)
        # Keywords of a section are its own lines (weighting titles and headings higher measured
        # worse); a card's are its title, front-matter fields, outline and the file's path.
        keywords = f"{chunk.embed_text}\n{path}" if chunk.kind == "card" else chunk.text
        payload = {
            AGENT_FIELD: self.settings.agent,
            "collection": work.collection.name,
            PATH_FIELD: path,
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
        return payload

    def _reconcile(self, w: _Work, reading: set[str]) -> list:
        """After a crash: delete points of files no longer indexed; returns the files whose points
        don't add up (to re-chunk)."""
        with self.store.open(w.collection.name) as shard:
            counts = shard.path_counts()
        current = {p for p in w.new.files if p not in w.removed}
        orphans = [p for p in counts if p not in current and p not in reading and p not in w.removed]
        w.removed.extend(orphans)
        self.deleted += sum(counts[p] for p in orphans)
        again = []
        for path, entry in list(w.new.files.items()):
            if path in reading or path in w.removed:
                continue
            if counts.get(path, 0) != len(entry.chunks) and path in w.files:
                again.append(w.files[path])
        return again

    # -- writing --------------------------------------------------------------------------

    def _stale_count(self, w: _Work) -> int:
        """Points of the old manifest this run's changes and removals made stale."""
        if w.old is None:
            return 0
        stale = sum(len(w.old.files[p].chunks) for p in w.removed if p in w.old.files)
        for ch in w.changed:
            entry = w.old.files.get(ch.file.path)
            if entry is not None:
                stale += len({pid for pid, _h in entry.chunks} - {pid for pid, _h in ch.points})
        return stale

    def _preflight(self, points: int, copy: int = 0, new_shard: bool = False) -> None:
        """Refuse (DiskFull, nothing written) when the index's disk cannot take ``points`` more
        (plus a copy of ``copy`` bytes, or a new shard)."""
        folder = self.settings.data_dir / "index"
        needed = _MARGIN + points * _BYTES_PER_POINT + copy + (_NEW_SHARD if new_shard else 0)
        if self.store.backend == "edge" and free_bytes(folder) < needed:
            raise disk_full(folder, needed, indexed=_has_index(self.settings, self.store))

    def _lenders_of(self, hashes: Iterable[str]) -> dict[str, dict[str, list[str]]]:
        """Chunk hash -> collection -> ids of the old manifests' points that hold it, for ``hashes``.

        A run's first lookup (all a write's or a one-note sync's) looks in the entries it loaded
        (the files it reads or removes: an edit, a rename, a move) and asks the database for the
        texts still missing (a copy of another file); a run that looks up again (many changed
        files) builds the whole map once, with the cyclic collector paused. At 30,000 notes
        building it for every sync was a quarter of a write (0.45 s, most of it the collector
        walking the 218k new objects). A write's own sync (``targeted``) lends only from the
        files it names: asking the whole manifest would cost what it must not."""
        wanted = set(hashes)
        if self._by_hash is None and (self._lookups == 0 or self.targeted):
            self._lookups += 1
            found: dict[str, dict[str, list[str]]] = {}
            for name, old in self._lenders.items():
                for entry in old.files.values():
                    for pid, h in entry.chunks:
                        if h in wanted:
                            found.setdefault(h, {}).setdefault(name, []).append(pid)
            missing = wanted - found.keys()
            if missing and not self.targeted:
                for h, by_name in lookup_chunks(self.settings.data_dir, list(self._lenders), missing).items():
                    found[h] = by_name
            return found
        if self._by_hash is None:
            with gc_paused():
                self._by_hash = chunk_map(self.settings.data_dir, list(self._lenders))
        return {h: self._by_hash[h] for h in wanted if h in self._by_hash}

    def _vectors(self, w: _Work, piece: list[tuple[str, str, dict]], open_as: tuple | None = None) -> tuple[dict, set[str]]:
        """Vectors for the chunks of ``piece`` by hash, and the hashes embedded now: reused from
        the store when any point of the agent holds that text already (any path, any collection,
        a killed run's points included), else embedded."""
        needed = {h: payload[TEXT_FIELD] for _pid, h, payload in piece}
        own_ids = [pid for pid, _h, _p in piece]
        vectors: dict = {}
        for h in needed:
            if h in self.recent:
                self.recent.move_to_end(h)
                vectors[h] = self.recent[h]
        if not w.fresh:
            candidates: dict[str, set[str]] = {}
            lenders = self._lenders_of(needed)
            for h in needed:
                for name, ids in lenders.get(h, {}).items():
                    candidates.setdefault(name, set()).update(ids)
            if w.dirty or w.old is None:
                candidates.setdefault(w.collection.name, set()).update(own_ids)
            for name, wanted in candidates.items():
                if open_as is not None and open_as[0] == name:
                    self._take(vectors, needed, open_as[1], wanted)  # the shard this run writes, open already
                elif self.store.exists(name):
                    # Let go of at once: the embedding that follows may take seconds, and a live
                    # shard held through it kept other processes' searches out (they wait 5 s, then fail).
                    with self.store.open(name, keep=False) as shard:
                        self._take(vectors, needed, shard, wanted)
        missing = sorted((h for h in needed if h not in vectors), key=lambda h: -len(needed[h]))
        if missing:
            if not self.models.loaded:
                self._report("model")
                self.models.embedder  # noqa: B018 - load it now, so the wait is reported as such
            # Embedded in steps of at most PROGRESS_STEP chunks, each reported (rate, ETA).
            for step in range(0, len(missing), PROGRESS_STEP):
                part = missing[step : step + PROGRESS_STEP]
                for h, vec in zip(part, self.models.embedder.encode([needed[h] for h in part])):
                    vectors[h] = vec
                    self.recent[h] = vec
                self._report("embed", step + len(part))
                self.embed_steps += 1
                faults.reach(f"index:embedded:{self.embed_steps}")
            while len(self.recent) > _RECENT:
                self.recent.popitem(last=False)
        return vectors, set(missing)

    @staticmethod
    def _take(vectors: dict, needed: dict, shard, ids) -> None:
        for hit in shard.retrieve(sorted(ids), with_vector=True, fields=["hash"]):
            h = hit.payload.get("hash")
            if h in needed and hit.vector is not None:
                vectors.setdefault(h, hit.vector)

    def _points(self, w: _Work, changes: list[_Changed]):
        """(point, chunk hash) for every chunk of ``changes``, in slices of at most ``embed_batch``."""
        batch = self.config.embed_batch
        current: list[tuple[str, str, dict]] = []
        for ch in changes:
            for (pid, h), chunk in zip(ch.points, ch.chunks or ()):
                current.append((pid, h, self._payload(w, ch.file.path, chunk)))
                if len(current) >= batch:
                    yield current
                    current = []
            ch.chunks = None  # written below: the text is not kept
        if current:
            yield current

    def _upsert(self, shard, target: str, w: _Work, piece: list[tuple[str, str, dict]]) -> None:
        try:
            vectors, fresh = self._vectors(w, piece, (target, shard))
        except KeyboardInterrupt:
            if target == w.collection.name:  # written in place (a first build): nothing to swap in
                self._keep_embedded(shard, piece)
            raise
        self._write_piece(shard, piece, vectors, fresh, kept=target == w.collection.name)
        if w.counted is not None:
            w.counted.add(payload[TERMS_FIELD] for _pid, _h, payload in piece)
        self._report()

    def _keep_embedded(self, shard, piece: list[tuple[str, str, dict]]) -> None:
        """Ctrl-C while a piece for a shard built in place was embedding: the chunks embedded so far
        are written, so the next run takes their vectors from the shard (a first build's points are
        its own to reuse) instead of embedding them again. A piece is written whole otherwise, and
        a first index of 2,102 chunks stopped at 96 lost them all."""
        done = [(pid, h, payload) for pid, h, payload in piece if h in self.recent]
        if done:
            self._write_piece(shard, done, {h: self.recent[h] for _pid, h, _p in done}, {h for _pid, h, _p in done})
            self._report()

    def _write_piece(self, shard, piece: list[tuple[str, str, dict]], vectors: dict, fresh: set[str], *,
                     kept: bool = True, in_commit: bool = False) -> None:
        shard.upsert([PointData(pid, vectors[h], payload) for pid, h, payload in piece])
        self.embedded += sum(1 for _pid, h, _p in piece if h in fresh)
        self.reused += sum(1 for _pid, h, _p in piece if h not in fresh)
        self.chunks_done += len(piece)
        self.chunks_kept += len(piece) if kept else 0
        if not in_commit:
            self._batch_done()

    def _batch_done(self) -> None:
        """The fault step ``index:batch:N``: a batch written to a shard, or one the commit is about
        to write to a live shard (reached before the commit, the ``.dirty`` marker written: paused
        inside it, this process's searches and a signal to stop would wait for it)."""
        self.batches += 1
        faults.reach(f"index:batch:{self.batches}")

    def _prepare_live(self, w: _Work, changes: list[_Changed]) -> None:
        """A change of at most one batch, for the live shard: embedded now, written at the commit."""
        pieces = list(self._points(w, changes))
        try:
            prepared = [(piece, *self._vectors(w, piece)) for piece in pieces]
        except KeyboardInterrupt:
            first = not self.store.exists(w.collection.name)
            if first and any(h in self.recent for piece in pieces for _pid, h, _p in piece):
                # A first index no search uses yet: what was embedded is kept in place, as a larger one is.
                with self.store.open(self._stage(w), dim=self.models.embedder.dim) as shard:
                    for piece in pieces:
                        self._keep_embedded(shard, piece)
            raise
        dim = self._dim([v for _p, vectors, _f in prepared for v in vectors.values()])
        self._preflight(sum(len(p) for p in pieces), new_shard=not self.store.exists(w.collection.name))
        w.live = _Live(changes, prepared, dim, self._live_stats(w, changes, pieces))
        self._report()

    def _live_stats(self, w: _Work, changes: list[_Changed], pieces: list) -> TermChange | None:
        """What the live write changes of the collection's keyword statistics: the terms of the
        chunks it replaces and writes, counted without reading every point, saved by changing
        those terms' rows alone; None where the saved ones cannot be trusted (a first or a
        reconciling run, statistics missing or not adding up): then the commit counts them all."""
        name = w.collection.name
        if w.old is None or w.dirty or not self.store.exists(name):
            return None
        paths = [ch.file.path for ch in changes] + list(w.removed)
        old_ids = sorted({pid for p in paths if p in w.old.files for pid, _h in w.old.files[p].chunks})
        with self.store.open(name) as shard:
            gone = [str(h.payload.get(TERMS_FIELD, "")) for h in shard.retrieve(old_ids, fields=[TERMS_FIELD])]
        if len(gone) != len(old_ids):
            return None  # the shard does not hold what the manifest says: count them all
        return change_stats(self.settings.data_dir, name, gone,
                            (payload[TERMS_FIELD] for piece in pieces for _pid, _h, payload in piece))

    def _write_live(self, w: _Work, live: _Live) -> None:
        """The commit's write to the live shard: the new chunks, then the removal of the old ones
        (a killed run leaves the ``.dirty`` marker: the next run reconciles)."""
        with self.store.open(w.collection.name, dim=live.dim) as shard:
            for piece, vectors, fresh in live.prepared:
                self._write_piece(shard, piece, vectors, fresh, in_commit=True)
            for ch in live.changes:
                shard.delete_path_except(ch.file.path, [pid for pid, _h in ch.points])
            if w.removed:
                shard.delete_paths(w.removed)
            if live.stats is None:  # statistics not known beforehand: counted from the shard, now
                w.stats = scan_stats(shard)

    def _stage(self, w: _Work) -> str:
        """Where this run writes the collection: a copy of the live shard beside it (a fresh shard
        for a rebuild), or the live shard itself when there is none yet (nothing to keep serving)."""
        name = w.collection.name
        live = self.store.exists(name)
        # A shard no manifest vouches for is a killed first index's: nothing to keep serving either,
        # and a copy of it beside took its size again (resumed: _drop_leftover_unless_it_fits).
        if not live or (w.old is None and not w.fresh):
            self._preflight(self.config.embed_batch, new_shard=not live)
            mark_dirty(self.settings.data_dir, name)
            w.started = True
            if w.removed:  # its points of files gone since (_reconcile)
                with self.store.open(name) as shard:
                    shard.delete_paths(w.removed)
            return name
        copy = 0 if w.fresh else self.store.disk_usage(name)
        self._preflight(self.config.embed_batch, copy, new_shard=w.fresh)
        staged = self.store.stage(name, self.models.embedder.dim, copy=not w.fresh)
        if w.removed and not w.fresh:
            with self.store.open(staged) as shard:
                shard.delete_paths(w.removed)
        return staged

    def _flush(self, w: _Work, target: str, shard, changes: list[_Changed]) -> None:
        if not changes:
            return
        self._preflight(sum(len(ch.points) for ch in changes))
        if not w.fresh:
            for ch in changes:
                shard.delete_path_except(ch.file.path, [pid for pid, _h in ch.points])
        for piece in self._points(w, changes):
            self._upsert(shard, target, w, piece)

    def _dim(self, vectors) -> int:
        if self.models.loaded:
            return self.models.embedder.dim
        for vec in vectors:
            return len(vec)
        return self.models.embedder.dim

    def _new_fingerprint(self, w: _Work) -> bool:
        return w.old is None or w.old.settings_key != self.config.settings_key or not w.new.fingerprint

    def _fill_manifest(self, w: _Work) -> None:
        """The collection's new manifest, as the commit saves it."""
        for path in w.removed:
            w.new.files.pop(path, None)
        for ch in w.changed:
            w.new.files[ch.file.path] = FileEntry(ch.stat, ch.hash, list(ch.points), ch.file.abs_path)
        if self._new_fingerprint(w):
            w.new.fingerprint = self.models.fingerprint()
            w.new.dim = self.models.embedder.dim
        elif self.models.loaded:
            w.new.dim = self.models.embedder.dim
        w.new.settings_key = self.config.settings_key
        w.new.model = self.config.model
        w.new.embed_backend = self.models.embedder.backend if self.models.loaded else (w.old.embed_backend if w.old else "")
        w.new.store_backend = self.store.backend
