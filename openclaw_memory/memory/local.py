"""The memory in this process, over the domain packages, and a pool of warm indexes.

One :class:`~openclaw_memory.index.api.MemoryIndex` per agent, created on first use, all
sharing one loaded embedding model, their shards kept open between calls (a warm search costs
milliseconds, not the 0.2-0.4 s of opening a shard). Calls share an index through its store's
read view (:class:`~openclaw_memory.index.store.edge.ReadView`): searches run side by side, and
the service's live sync reads beside them while it embeds, then has the index alone only to
commit (a search waits for that commit, never for the embedding); with a Qdrant server store an
index is used by one call at a time. Shards unused for ``shard_idle_s`` seconds are closed (0: after every call, for a process that runs beside others: the CLI, an
MCP server without a service), so ``doctor --fix`` or another tool can open them: by the service's
janitor, or, in a library's process (``janitor=True``), by the pool's own thread and at exit.
"""

from __future__ import annotations

import atexit
import datetime as dt
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import DiskFull, MemoryToolError, UsageError, is_no_space, shown
from ..extras import require
from .base import OnLockWait, ServiceInfo, ServiceStatus

if TYPE_CHECKING:
    from ..doctor.model import Finding
    from ..doctor.runner import DoctorReport
    from ..files.read import ReadResult
    from ..files.scan import ScanResult
    from ..history.diff import DiffRead
    from ..history.guard import WriteResult
    from ..history.listing import VersionHistory
    from ..history.report import StateReport
    from ..index.api import CollectionInfo, MemoryIndex
    from ..index.migrate import MigrationResult
    from ..index.results import SearchResult
    from ..index.status import IndexStatus
    from ..index.store.edge import ReadView
    from ..index.sync import Models, ProgressCallback, SyncProgress, SyncSummary
    from ..prompt.loader import PromptSection
    from ..settings import Settings
    from ..types import SearchMode
    from ..watchdog.heartbeat import HeartbeatResult
    from ..watchdog.snapshot import SnapshotInfo
    from ..watchdog.verify import VerifyResult

# How long a library's in-process memory keeps an index's shards open after a call: reopening
# them (the engine's load, the manifest's check) was 83% of a warm search at 30,000 notes
# (bench/scale.py); another process that needs them waits at most this long (its lock wait).
IN_PROCESS_SHARD_IDLE_S = 2.0

WRITE_TOOLS = ("write", "memory_write")  # who made a write (its default idempotency key names it)


class Stopping(BaseException):
    """Raised inside long work (a full index) when the service is asked to stop."""


class _Slot:
    def __init__(self, index: MemoryIndex):
        from ..index.store.edge import ReadView

        self.index = index
        view = getattr(index.store, "view", None)
        self.shared = isinstance(view, ReadView)  # the edge store: calls read side by side
        self.view: ReadView = view if isinstance(view, ReadView) else ReadView()  # else each call writes: alone
        self.used = time.monotonic()

    def enter(self, blocking: bool = True) -> bool:
        return self.view.acquire_read(blocking) if self.shared else self.view.acquire_write(blocking)

    def leave(self) -> None:
        if self.shared:
            self.view.release_read()
        else:
            self.view.release_write()


class _Lent:
    """The shared embedding model as the service's pool lends it: a call that reads an index
    through the pool alone lets go of it while the model embeds (its query), so that a sync's
    commit never waits for a query being embedded, and takes it again after (waiting for a
    commit in progress then, a wait counted like any other). A sync, which reads the index
    itself too, keeps it while it embeds."""

    def __init__(self, model, pool: IndexPool):
        self._model = model
        self._pool = pool

    def __getattr__(self, name: str):
        return getattr(self._model, name)

    def encode(self, texts, *args, **kwargs):
        view = self._pool._only_reading_here()
        if view is None:
            return self._model.encode(texts, *args, **kwargs)
        view.release_read()
        try:
            return self._model.encode(texts, *args, **kwargs)
        finally:
            self._pool._enter(view.acquire_read)


class IndexPool:
    """Warm indexes, one per agent, sharing one model; see the module docstring."""

    def __init__(self, *, shard_idle_s: float = 0.0, on_wait: OnLockWait | None = None, janitor: bool = False):
        self.shard_idle_s = shard_idle_s
        self.on_wait = on_wait
        # The service's pool (its own janitor closes idle shards): searches beside its live sync.
        self.serving = shard_idle_s > 0 and not janitor
        self.janitor = janitor and shard_idle_s > 0
        self._janitor_started = False
        self._janitor_stop = threading.Event()
        self.stopping = threading.Event()
        self._slots: dict[str, _Slot] = {}
        self._slots_lock = threading.Lock()
        self._models: Models | None = None
        self._stats_lock = threading.Lock()
        self._here = threading.local()  # .view: the read view this thread's call reads through the pool
        self.waits = 0
        self.slow_waits = 0  # over 100 ms
        self.longest_wait_ms = 0.0

    def slot(self, settings: Settings) -> _Slot:
        require("search")  # before any index work, so a core install hears what to install, not "no index"
        from ..index.api import MemoryIndex

        with self._slots_lock:
            slot = self._slots.get(settings.agent)
            if slot is None:
                index = MemoryIndex(replace(settings, session=None), keep_open=True, models=self._models, on_wait=self.on_wait)
                self._serve(index)
                self._models = self._models or index.models
                if self.serving and not index.models.lent:
                    index.models.lend(lambda model: _Lent(model, self))
                slot = self._slots[settings.agent] = _Slot(index)
                if self.janitor and not self._janitor_started:
                    self._start_janitor()
            return slot

    def _start_janitor(self) -> None:
        """A thread that closes the shards left unused for ``shard_idle_s``, and their closing
        at exit (their stat recorded: the next process opens them without a probe). Neither
        keeps the pool alive."""
        self._janitor_started = True
        ref = weakref.ref(self)
        stop, every = self._janitor_stop, max(self.shard_idle_s / 4, 0.05)

        def sweep() -> None:
            while not stop.wait(every):
                pool = ref()
                if pool is None:
                    return
                try:
                    pool.close_idle_shards()
                except MemoryToolError:
                    pass  # e.g. the state database busy: the next sweep closes them
                del pool

        def at_exit() -> None:
            pool = ref()
            if pool is not None:
                stop.set()
                for slot in list(pool._slots.values()):
                    pool._close_unused(slot)

        threading.Thread(target=sweep, name="openclaw-memory-shards", daemon=True).start()
        atexit.register(at_exit)

    def _serve(self, index: MemoryIndex) -> None:
        """A pool that keeps shards open (the service) keeps one open while a sync copies it too."""
        from ..index.store.edge import EdgeStore

        if self.serving and isinstance(index.store, EdgeStore):
            index.store.serving = True

    @contextmanager
    def using(self, index: MemoryIndex) -> Iterator[None]:
        """The live sync's session on a pooled index, shards left open. With the edge store the
        sync takes the read view itself (to read while it embeds, to write only to commit), so
        searches answer throughout; with another store it has the index alone."""
        slot = next(s for s in list(self._slots.values()) if s.index is index)
        if not slot.shared:
            slot.view.acquire_write()
        try:
            slot.used = time.monotonic()
            yield
        finally:
            slot.used = time.monotonic()
            if not slot.shared:
                slot.view.release_write()

    @contextmanager
    def index(self, settings: Settings) -> Iterator[MemoryIndex]:
        """The agent's index for one call (reading it beside other calls; waits counted)."""
        slot = self.slot(settings)
        self._enter(slot.enter)
        previous = getattr(self._here, "view", None)
        self._here.view = slot.view if slot.shared else None
        try:
            slot.used = time.monotonic()
            yield slot.index
        finally:
            self._here.view = previous
            slot.used = time.monotonic()
            slot.leave()
            if self.shard_idle_s == 0 and slot.index.store.backend == "edge":
                self._close_unused(slot)

    def _enter(self, enter: Callable[..., bool]) -> None:
        """``enter()`` (a view's acquire), the wait counted when it cannot be had at once."""
        if enter(blocking=False):
            return
        started = time.monotonic()
        enter()
        waited = (time.monotonic() - started) * 1000
        with self._stats_lock:
            self.waits += 1
            self.slow_waits += waited > 100
            self.longest_wait_ms = max(self.longest_wait_ms, waited)

    def _only_reading_here(self) -> ReadView | None:
        """The view this thread reads through the pool, when that one read is all it holds."""
        view = getattr(self._here, "view", None)
        return view if view is not None and view.depth_here() == 1 and not view.writing_here() else None

    def _close_unused(self, slot: _Slot) -> None:
        """Close the slot's shards unless a call (or this thread, further up) still uses them."""
        if slot.view.held_here() or not slot.view.acquire_write(blocking=False):
            return  # the last call to leave closes them
        try:
            slot.index.store.close()
        finally:
            slot.view.release_write()

    def close_idle_shards(self) -> None:
        """Close the shards of indexes unused for ``shard_idle_s`` (never one in use)."""
        now = time.monotonic()
        for slot in list(self._slots.values()):
            if now - slot.used < self.shard_idle_s or slot.index.store.backend != "edge":
                continue
            self._close_unused(slot)

    def warm(self, settings: Settings) -> None:
        """Load the model now when the agent has an index (the first search then answers at once)."""
        from ..index.collections import resolve_collections
        from ..index.manifest import load_manifest

        loaded = [load_manifest(settings.data_dir, c.name) for c in resolve_collections(settings)]
        manifests = [m for m in loaded if m is not None]
        if not manifests:
            return
        with self.index(settings) as index:
            for m in manifests:
                if m.embed_backend:
                    index.models.pin_backend(m.embed_backend)
            index.models.embedder.encode(["warm-up"])

    def close(self) -> None:
        self._janitor_stop.set()
        for slot in list(self._slots.values()):
            with slot.view.writing():
                slot.index.close()


class LocalMemory:
    """:class:`~openclaw_memory.memory.Memory` computed here (see the module docstring).

    ``service_info`` is given inside the service, whose own figures ``service()`` then returns.
    """

    def __init__(self, settings: Settings, pool: IndexPool | None = None, *,
                 service_info: Callable[[], ServiceInfo] | None = None):
        self._settings = settings
        self.pool = pool or IndexPool()
        self._service_info = service_info

    @property
    def settings(self) -> Settings:
        return self._settings

    def for_session(self, session: str | None) -> LocalMemory:
        return LocalMemory(self._settings.with_session(session), self.pool, service_info=self._service_info)

    def for_agent(self, agent: str, session: str | None) -> LocalMemory:
        return LocalMemory(self._settings.with_agent(agent).with_session(session), self.pool, service_info=self._service_info)

    # -- files ---------------------------------------------------------------------------------

    def files(self) -> ScanResult:
        from ..files.scan import scan_workspace

        return scan_workspace(self._settings)

    def read(self, path: str, *, from_line: float | None = None, lines: float | None = None,
             max_chars: float | None = None, clamp: bool = False) -> ReadResult:
        from ..files.read import clamp_window_args, read_memory_file
        from ..history.states import record_read
        from ..history.store import FileVersion

        settings = self._settings
        path, from_line, lines = _cited(path, from_line, lines)
        if clamp:
            from_line, lines, max_chars = clamp_window_args(from_line, lines, max_chars, default_lines=settings.read.default_lines,
                                                            default_max_chars=settings.read.max_chars)
        result = read_memory_file(
            path, str(settings.workspace), extra_paths=settings.extra_paths,
            from_line=1 if from_line is None else int(from_line),
            lines=settings.read.default_lines if lines is None else int(lines),
            max_chars=settings.read.max_chars if max_chars is None else int(max_chars),
        )
        # The whole file's version is recorded as read (the write guard and ``read --diff`` compare
        # against it); a missing file is recorded as None, so the agent may then create it.
        version: FileVersion | None = None
        if not result.missing:
            if result.version is None or result.size is None:
                return result  # changed during the read: nothing reliable to record
            version = FileVersion(result.version, result.size)
        try:
            record_read(settings, result.abs_path, result.path, version)
        except (MemoryToolError, OSError) as exc:
            # The read itself succeeded (a state dir that is full, read-only, busy or damaged only costs
            # the record): without one the guard makes the agent read again before writing.
            reason = (
                f"the disk is full in the state dir ({settings.data_dir})" if isinstance(exc, DiskFull) or is_no_space(exc)
                else exc.message if isinstance(exc, MemoryToolError) else (exc.strerror or str(exc))
            )
            return replace(result, warnings=result.warnings + (f"read not recorded for the write guard: {reason}",))
        return result

    def read_diff(self, path: str, *, from_line: int | None = None, lines: int | None = None,
                  max_chars: int | None = None) -> DiffRead:
        from ..history.diff import read_diff

        path, start, count = _cited(path, from_line, lines)
        return read_diff(self._settings, path, from_line=1 if start is None else int(start),
                         lines=None if count is None else int(count), max_chars=max_chars)

    def write(self, path: str, *, content: bytes | str | None = None, append: bytes | str | None = None,
              expect: str | None = None, update_index: bool = True, idempotency_key: str | None = None,
              tool: str = "write", progress: ProgressCallback | None = None) -> WriteResult:
        """The guarded write, made idempotent: a write with the key of an earlier one (default
        ``<agent>.<tool>.<hash of session, path, mode and content>``) made less than 24 hours ago
        writes nothing and returns that first result (``replayed``) while the file still holds what
        it made; a key reused for another write is refused."""
        from .. import faults
        from ..files.read import refuse_unnamable
        from ..history.guard import still_holds, write_memory_file
        from ..history.idempotency import IdempotencyStore, binding, check_key, default_key, describe
        from ..history.store import FileVersion, HistoryStore

        refuse_unnamable(path)  # before the key is made of it, and of the tool:
        if tool not in WRITE_TOOLS:
            raise UsageError(f"a write is made by the tool {' or '.join(WRITE_TOOLS)}, not {shown(tool)}")
        settings = self._settings
        data = content.encode("utf-8", "surrogateescape") if isinstance(content, str) else content
        added = append.encode("utf-8", "surrogateescape") if isinstance(append, str) else append
        mode, body = ("append", added or b"") if added is not None else ("replace", data or b"")
        bound = binding(settings.agent, settings.session, path, mode, body)
        if idempotency_key is None:
            key = default_key(settings.agent, tool, path, mode, body, settings.session)
        else:
            key = check_key(idempotency_key)
        keys = IdempotencyStore(settings.data_dir)
        with HistoryStore.for_settings(settings).write_lock():
            found = keys.get(key)
            if found is not None:
                first, first_bound = found
                if first_bound is not None and first_bound != bound:
                    raise UsageError(
                        f"the idempotency key {key!r} was first used for {describe(first_bound, bound)}; a key stands "
                        "for one write: give this write a new key (nothing was written)"
                    )
                if still_holds(settings, path, FileVersion(first.version, first.size), at_start=mode == "append"):
                    return first
                # The file no longer holds what that write made (restored or edited since): write it again.
            when = time.time()

            def record_first(to_be: WriteResult) -> None:
                # In the same step as the write: before the rename, with the version it will make. A
                # crash after the rename leaves the key, and the retry finds the file at that version.
                keys.put(key, to_be, when, bound)
                faults.reach("write:key-recorded")  # recorded, the new content not renamed into place yet

            result = write_memory_file(settings, path, content=data, append=added, expect=expect, before_swap=record_first)
            faults.reach("write:swapped")
        keys.prune()
        result = self._after_write(result, update_index, progress)
        try:
            keys.put(key, result, when, bound)  # a later replay shows what the index update did
        except MemoryToolError:
            pass  # the key recorded before the rename stands
        return result

    def restore(self, path: str, version: str, *, update_index: bool = True) -> WriteResult:
        from ..history.guard import IndexUpdate, restore_file_version

        result = restore_file_version(self._settings, path, version)
        if not result.changed:
            return replace(result, index=IndexUpdate(False, "nothing changed"))
        return self._after_write(result, update_index)

    def _after_write(self, result: WriteResult, update_index: bool, progress: ProgressCallback | None = None) -> WriteResult:
        """The agent's index brought up to date after a write, when it has one (every stale file of
        the agent, not only the one written), unless a running watch does that."""
        from ..history.guard import IndexUpdate

        def done(update: IndexUpdate) -> WriteResult:
            return replace(result, index=update)

        if not update_index:
            return done(IndexUpdate(False, "skipped (--no-index)"))
        from ..watch.presence import running_watch

        watcher = running_watch(self._settings)
        if watcher is not None:  # it has the model loaded and picks the write up within a second
            return done(IndexUpdate(False, f"the running watch (pid {watcher}) updates it"))
        if not _has_index(self._settings):
            return done(IndexUpdate(False, f"no index for agent {self._settings.agent}"))
        try:
            summary = self.index(progress=progress)
        except MemoryToolError as exc:
            return done(IndexUpdate(False, f"index not updated: {exc.message}", failed=True))
        return done(IndexUpdate(True, sync=summary))

    def history(self, path: str) -> VersionHistory:
        from ..history.listing import file_history

        return file_history(self._settings, path)

    def state(self) -> StateReport:
        from ..history.report import file_states

        return file_states(self._settings)

    def prompt(self, *, today: dt.date | None = None, consume: bool = True) -> PromptSection:
        from ..prompt import build_prompt_section
        from ..watchdog.checkpoint import consume_checkpoint, read_checkpoint

        settings = self._settings
        unread = None
        try:
            pending = read_checkpoint(settings.data_dir)
        except MemoryToolError as exc:  # the memory files still make a prompt; the news waits for the repair
            pending, unread = None, f"the pending watchdog checkpoint cannot be read: {exc.message}"
        section = build_prompt_section(
            self.files(), today=today, file_cap=settings.prompt.file_chars, total_cap=settings.prompt.total_chars,
            startup=settings.prompt.startup, checkpoint=pending.text if pending is not None else None,
        )
        if unread is not None:
            section.warnings.append(unread)
        if pending is not None and consume:
            consume_checkpoint(settings.data_dir, pending.last)
        return section

    # -- index and search ------------------------------------------------------------------------

    def index(self, *, full: bool = False, progress: ProgressCallback | None = None) -> SyncSummary:
        stopping = self.pool.stopping

        def report(p: SyncProgress) -> None:
            if stopping.is_set():
                raise Stopping()  # the index is crash-safe: the next run finishes what this one started
            if progress is not None:
                progress(p)

        with self.pool.index(self._settings) as index:
            return index.sync(full=full, progress=report)

    def search(self, query: str, *, limit: int = 6, min_score: float | None = None, mode: SearchMode = "hybrid",
               sync: bool = True, collections: tuple[str, ...] = (), paths: tuple[str, ...] = (),
               since: str | None = None, until: str | None = None) -> SearchResult:
        require("search")
        from ..index.filters import SearchFilters
        from ..index.results import DEFAULT_MIN_SCORE

        filters = SearchFilters.from_args(collections, paths, since, until)
        with self.pool.index(self._settings) as index:
            return index.search(query, limit=limit, min_score=DEFAULT_MIN_SCORE if min_score is None else min_score,
                                mode=mode, sync=sync, filters=filters)

    def status(self) -> IndexStatus:
        with self.pool.index(self._settings) as index:
            return index.status()

    def collections(self) -> list[CollectionInfo]:
        with self.pool.index(self._settings) as index:
            return index.collections()

    def migrate(self, to: str, source: str | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> MigrationResult:
        require("qdrant")
        from ..index.migrate import migrate_index

        return migrate_index(self._settings, to, source, progress=progress)

    def service(self) -> ServiceStatus:
        if self._service_info is not None:
            return ServiceStatus(self._service_info())
        from .client import service_status

        return service_status(self._settings)

    # -- repair and watchdog ---------------------------------------------------------------------

    def doctor(self, *, fix: bool = False, confirm: Callable[[Finding, str], bool] | None = None,
               on_lock_wait: Callable[[str], None] | None = None) -> DoctorReport:
        from ..doctor import run_doctor

        return run_doctor(self._settings, fix=fix, confirm=confirm, on_lock_wait=on_lock_wait)

    def snapshot(self, label: str | None = None) -> SnapshotInfo:
        from ..watchdog.snapshot import take_snapshot

        return take_snapshot(self._settings, label)

    def verify(self) -> VerifyResult:
        from ..watchdog.verify import verify_workspace

        return verify_workspace(self._settings)

    def heartbeat(self) -> HeartbeatResult:
        from ..watchdog.heartbeat import heartbeat

        return heartbeat(self._settings)

    # -- lifetime --------------------------------------------------------------------------------

    def open_state(self) -> None:
        """Open the state database now (created, migrated, an earlier layout imported): a service
        says it is ready only once no first request has that to do."""
        from ..database import Database

        Database(self._settings.data_dir).open()

    def warm(self) -> None:
        self.pool.warm(self._settings)

    def end_session(self) -> None:
        from ..history.states import forget_session
        from ..history.store import HistoryStore

        if self._settings.session:
            forget_session(HistoryStore.for_settings(self._settings), self._settings.agent, self._settings.session)

    def close(self) -> None:
        self.pool.close()


def _cited(path: str, from_line: float | None, lines: float | None) -> tuple[str, float | None, float | None]:
    """A search citation (``memory/a.md#L10-L24``) as its path and lines, unless the window is given."""
    from ..files.citation import parse_citation

    citation = parse_citation(path)
    if citation is None:
        return path, from_line, lines
    return (citation.path, citation.from_line if from_line is None else from_line,
            citation.lines if lines is None else lines)


def _has_index(settings: Settings) -> bool:
    from ..index.collections import resolve_collections
    from ..index.manifest import manifest_serial

    return any(manifest_serial(settings.data_dir, c.name) is not None for c in resolve_collections(settings))
