"""``watch`` keeps every version it sees in the history: the bytes a sync indexed (not what the file
holds once the sync is done), each save an event names while a long sync runs, and the notes the
index leaves out (a name that is not UTF-8). A watch in a thread of this process; waits are on its
events (a sync held at a read, the feed's messages), never on time."""

from __future__ import annotations

import contextlib
import os
import threading

from conftest import settings_for, wait_for, write
from openclaw_memory.fsutil.hashing import hash_bytes
from openclaw_memory.history.store import HistoryStore

WAIT = 120  # a loaded machine: generous, never a measure


@contextlib.contextmanager
def running(settings):
    """A watch in a thread (its backstop an hour away), started; yields (watcher, changes)."""
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.watch.watcher import Watcher

    changes: list = []
    started = threading.Event()
    with MemoryIndex(settings) as index:
        watcher = Watcher(settings, index=index, index_session=lambda _i: contextlib.nullcontext(),
                          on_change=changes.append, on_start=lambda _s: started.set(), backstop_s=3600)
        runner = threading.Thread(target=watcher.run)
        runner.start()
        try:
            assert started.wait(WAIT)
            yield watcher, changes
        finally:
            watcher.stop()
            runner.join(WAIT)


class HeldSync:
    """The sync held as it reads ``note`` (once ``hold`` is set: ``held`` is then set, and it goes on
    at ``release``), and each message the watcher's feeds post, counted (read ahead first, then queued)."""

    def __init__(self, monkeypatch, note):
        import openclaw_memory.index.sync as sync_module

        self.held, self.release, self.hold = threading.Event(), threading.Event(), threading.Event()
        self.posted: list[frozenset] = []
        real = sync_module.read_version

        def read_version(abs_path, roots, guard):
            content = real(abs_path, roots, guard)
            if self.hold.is_set() and abs_path == str(note):
                self.hold.clear()
                self.held.set()
                assert self.release.wait(WAIT)
            return content

        monkeypatch.setattr(sync_module, "read_version", read_version)

    def count(self, watcher) -> None:
        put = watcher._queue.put

        def counted(item, *args, **kwargs):
            put(item, *args, **kwargs)
            self.posted.append(item.paths)

        watcher._queue.put = counted

    def posted_since(self, before: int, path) -> bool:
        return any(str(path) in p for p in self.posted[before:])


def save(path, text: str) -> str:
    """An editor's atomic save (a temporary renamed over the note); the version saved."""
    tmp = os.path.join(os.path.dirname(path), os.path.basename(path) + b".tmp" if isinstance(path, bytes) else
                       os.path.basename(path) + ".tmp")
    with open(tmp, "wb") as f:
        f.write(text.encode())
    os.replace(tmp, path)
    return hash_bytes(text.encode())


def versions(settings, abs_path) -> list[str]:
    return [e.version for e in HistoryStore(settings.data_dir).entries(os.fsdecode(abs_path))]


@contextlib.contextmanager
def held_after_v1(workspace, state_dir, monkeypatch):
    """A watch whose sync read memory/keep.md's first save (v1) and is held there: (settings, the note,
    the HeldSync, the watch's changes, v1)."""
    settings = settings_for(workspace, state_dir)
    note = workspace / "memory" / "keep.md"
    write(note, "# keep\n\nv0\n")
    sync = HeldSync(monkeypatch, note)
    with running(settings) as (watcher, changes):
        sync.count(watcher)
        sync.hold.set()
        v1 = save(str(note), "# keep\n\nperson save v1\n")
        assert sync.held.wait(WAIT)  # the sync read v1 and waits
        yield settings, note, sync, changes, v1


def test_saves_during_a_long_sync_are_each_kept_in_order(workspace, state_dir, monkeypatch):
    """A sync reads keep.md (v1) and is held there while the person saves v2 and v3: the history
    gets v1, the version indexed, then v2 and v3 as read at their events, in that order. It got
    the version the file held once the sync was done (v3), v1 and v2 never."""
    with held_after_v1(workspace, state_dir, monkeypatch) as (settings, note, sync, changes, v1):
        saved = []
        for v in (2, 3):
            before = len(sync.posted)
            saved.append(save(str(note), f"# keep\n\nperson save v{v}\n"))
            wait_for(lambda before=before: sync.posted_since(before, note), WAIT)
        sync.release.set()
        wait_for(lambda: any(c.path == "memory/keep.md" and c.version == saved[-1] for c in changes), WAIT)
        assert any(c.path == "memory/keep.md" and c.version == v1 for c in changes)  # the held sync indexed v1
    assert versions(settings, note) == [hash_bytes(b"# keep\n\nv0\n"), v1, *saved]


def test_a_note_whose_name_is_not_utf8_is_kept_each_save(workspace, state_dir):
    """The index leaves out memory/caf\\xe9.md (said once); the watch keeps each of its versions."""
    settings = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "# M\n\nhello\n")
    (workspace / "memory").mkdir(exist_ok=True)
    note = os.fsencode(workspace / "memory") + b"/caf\xe9.md"
    with running(settings) as (watcher, _changes):
        first = save(note, "# cafe\n\nv1: the supplier list\n")
        wait_for(lambda: first in versions(settings, note), WAIT)
        second = save(note, "# cafe\n\nv2: list removed\n")
        wait_for(lambda: second in versions(settings, note), WAIT)
    assert versions(settings, note) == [first, second]


def test_a_workspace_replaced_at_its_path_is_watched_again_at_once(workspace, state_dir):
    """`mv ws ws.old; mkdir -p ws/memory` (a restore from a backup): the new folder is watched at once,
    each save in it synced and kept; nothing watched it until the backstop sync (an hour here)."""
    settings = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "# M\n\nhello\n")
    old = workspace.parent / (workspace.name + ".old")
    with running(settings) as (_watcher, changes):
        os.rename(workspace, old)
        (workspace / "memory").mkdir(parents=True)
        write(workspace / "MEMORY.md", "# M\n\nhello\n")
        plan = workspace / "memory" / "plan.md"
        v1 = save(str(plan), "# plan\n\nv1: call the plumber on Monday\n")
        wait_for(lambda: any(c.path == "memory/plan.md" and c.version == v1 for c in changes), WAIT)
        v2 = save(str(plan), "# plan\n\nv2: done\n")
        wait_for(lambda: any(c.path == "memory/plan.md" and c.version == v2 for c in changes), WAIT)
    assert versions(settings, plan) == [v1, v2]


def test_one_save_written_in_place_during_a_sync_is_one_version(workspace, state_dir, monkeypatch):
    """Read at each event, a save written in place a piece at a time (truncate, then write, flush,
    write...) was logged once per piece: ten versions of one save, each cut short. Reads of the
    same file closer than SETTLE_S are one save's: the last is kept."""
    with held_after_v1(workspace, state_dir, monkeypatch) as (settings, note, sync, changes, v1):
        text = ""
        with open(note, "w") as f:  # one save, in place
            for i in range(4):
                before = len(sync.posted)
                f.write(f"line {i} of the final note\n")
                f.flush()
                text += f"line {i} of the final note\n"
                wait_for(lambda before=before: sync.posted_since(before, note), WAIT)
        sync.release.set()
        final = hash_bytes(text.encode())
        wait_for(lambda: any(c.path == "memory/keep.md" and c.version == final for c in changes), WAIT)
    assert versions(settings, note) == [hash_bytes(b"# keep\n\nv0\n"), v1, final]
