"""Warm indexes, one per agent, sharing one loaded embedding model.

One :class:`~openclaw_memory.index.api.MemoryIndex` per agent, created on first use, all
sharing one loaded embedding model, their shards kept open between calls (a warm search costs
milliseconds, not the 0.2-0.4 s of opening a shard). Calls share an index through its store's
read view (:class:`~openclaw_memory.index.store.edge.ReadView`): searches run side by side, and
the service's live sync reads beside them while it embeds, then has the index alone only to
commit (a search waits for that commit, never for the embedding); with a Qdrant server store an
index is used by one call at a time. Shards unused for ``shard_idle_s`` seconds are closed (0:
after every call, for a process that runs beside others: the CLI, an MCP server without a
service), so ``doctor --fix`` or another tool can open them: by the service's janitor, or, in a
library's process (``janitor=True``), by the pool's own thread and at exit.

The pools ``open_memory`` makes (``share_as``: the settings' key) share their indexes with every
other such pool of the process on the same settings: two memories of one workspace in one process
read one index side by side, as one memory's threads do (each with its own index held the shard
locks the other then waited for, and timed out naming this very process as "another process").
A closed pool lets go of what it shares only when it was the last to hold it; a call on it after
that is :class:`~openclaw_memory.errors.MemoryClosed`, never shards opened again that nothing closes.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import MemoryClosed, MemoryToolError
from ..extras import require

if TYPE_CHECKING:
    from ..settings import Settings
    from .api import MemoryIndex
    from .lender import Models
    from .store.view import ReadView

OnLockWait = Callable[[str, str], None]  # (what is locked, the holder's pid)

IN_PROCESS_SHARD_IDLE_S = 2.0

# The indexes of the sharing pools of this process, by (settings key, agent): each lives as long as a
# pool holds it (one dropped unclosed is let go as before, its model with it), closed by the last to close.
_SHARED: weakref.WeakValueDictionary[tuple[str, str], _Slot] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def _forked() -> None:
    """A forked child shares nothing with its parent's pools: a memory it opens opens its own index
    (the parent's engines, copied into the child, hung its first count and left the parent's index
    damaged), and the lock copied held by another thread of the parent is new."""
    global _SHARED_LOCK
    _SHARED_LOCK = threading.Lock()
    _SHARED.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
# .on_wait: the notice of the pool whose call this thread runs (a shared index tells that caller).
_calling = threading.local()


def _tell_caller(what: str, pid: str) -> None:
    on_wait = getattr(_calling, "on_wait", None)
    if on_wait is not None:
        on_wait(what, pid)


class _Slot:
    def __init__(self, index: MemoryIndex):
        from .store.view import ReadView

        self.index = index
        view = index.store.view
        self.shared = view is not None  # the embedded engine: calls read side by side, shards kept open
        self.view: ReadView = view if view is not None else ReadView()  # else each call writes: alone
        self.used = time.monotonic()
        self.holders = 0  # the sharing pools that hold it (_SHARED), less those dropped unclosed

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

    def __init__(self, *, shard_idle_s: float = 0.0, on_wait: OnLockWait | None = None, janitor: bool = False,
                 share_as: Callable[[], str] | None = None):
        self.shard_idle_s = shard_idle_s
        self.on_wait = on_wait
        # The settings' key under which its indexes are shared (module docstring), made on first use:
        # a command that never reaches the index does not pay for it (its imports were 6 ms of `files`).
        self._share_as = share_as
        self._shared_key: str | None = None
        self.closed = False
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
        with self._slots_lock:
            if self.closed:
                raise MemoryClosed()
            slot = self._slots.get(settings.agent)
            if slot is None:
                slot = self._shared_slot(settings) if self._share_as is not None else self._new_slot(settings, self.on_wait)
                self._models = self._models or slot.index.models
                self._slots[settings.agent] = slot
                if self.janitor and not self._janitor_started:
                    self._start_janitor()
            return slot

    def _new_slot(self, settings: Settings, on_wait: OnLockWait | None) -> _Slot:
        from .api import MemoryIndex

        index = MemoryIndex(replace(settings, session=None), keep_open=True, models=self._models, on_wait=on_wait)
        self._serve(index)
        if self.serving and not index.models.lent:
            index.models.lend(lambda model: _Lent(model, self))
        return _Slot(index)

    def _shared_slot(self, settings: Settings) -> _Slot:
        """The process's index of these settings for the agent, made on first use, held once more."""
        assert self._share_as is not None
        if self._shared_key is None:
            self._shared_key = self._share_as()
        with _SHARED_LOCK:
            slot = _SHARED.get((self._shared_key, settings.agent))
            if slot is None:
                slot = _SHARED[self._shared_key, settings.agent] = self._new_slot(settings, _tell_caller)
            slot.holders += 1
            return slot

    def _release(self, agent: str, slot: _Slot) -> bool:
        """Let go of ``slot``: whether this pool was the last to hold it (then it is to be closed)."""
        if self._shared_key is None:  # not shared (or never was: a slot is shared once the key is made)
            return True
        with _SHARED_LOCK:
            slot.holders -= 1
            if slot.holders:
                return False
            _SHARED.pop((self._shared_key, agent), None)
            return True

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
        if self.serving and index.store.view is not None:
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
        previous, caller = getattr(self._here, "view", None), getattr(_calling, "on_wait", None)
        self._here.view = slot.view if slot.shared else None
        _calling.on_wait = self.on_wait
        try:
            slot.used = time.monotonic()
            yield slot.index
        finally:
            _calling.on_wait = caller
            self._here.view = previous
            slot.used = time.monotonic()
            slot.leave()
            if self.shard_idle_s == 0 and slot.shared:
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
            if now - slot.used < self.shard_idle_s or not slot.shared:
                continue
            self._close_unused(slot)

    def warm(self, settings: Settings) -> None:
        """Load the model now when the agent has an index (the first search then answers at once)."""
        from .collections import resolve_collections
        from .manifest import load_manifest_head

        loaded = [load_manifest_head(settings.data_dir, c.name) for c in resolve_collections(settings)]
        manifests = [m for m in loaded if m is not None]
        if not manifests:
            return
        with self.index(settings) as index:
            for m in manifests:
                if m.embed_backend:
                    index.models.pin_backend(m.embed_backend)
            index.models.embedder.encode(["warm-up"])

    def close(self) -> None:
        """Close the indexes (once: a second close does nothing). One another memory of this process
        still shares stays open for it: only its shards unused now are closed (its own idle closing
        or its next call's end closes the rest)."""
        with self._slots_lock:
            if self.closed:
                return
            self.closed = True
        self._janitor_stop.set()
        for agent, slot in list(self._slots.items()):
            if not self._release(agent, slot):
                self._close_unused(slot)
                continue
            with slot.view.writing():
                slot.index.close()
