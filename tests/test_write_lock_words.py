"""The words of a write that waited too long for the workspace's write lock."""

from __future__ import annotations

import os

import pytest

from conftest import settings_for, write


def test_a_write_kept_waiting_by_another_writer_names_the_lock_in_a_sentence(workspace, state_dir, monkeypatch):
    """It said "the memory files of this workspace (another write) is locked by another
    openclaw-memory process": a plural subject with "is", and a parenthesis for what holds it."""
    from openclaw_memory.errors import LockTimeout
    from openclaw_memory.fsutil.lock import FileLock
    from openclaw_memory.history import store
    from openclaw_memory.memory.local import LocalMemory

    settings = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "base\n")
    LocalMemory(settings).read("MEMORY.md")
    monkeypatch.setattr(store, "LOCK_TIMEOUT_S", 0)
    held = FileLock(store.HistoryStore.for_settings(settings).write_lock_path)
    held.acquire()
    try:
        with pytest.raises(LockTimeout) as refused:
            LocalMemory(settings).write("MEMORY.md", append="kept waiting")
    finally:
        held.release()
    assert refused.value.message == (f"the write lock of this workspace's memory files is held by another "
                                     f"openclaw-memory process (pid {os.getpid()}); waited 0 s. Try again when it has finished.")
    assert (workspace / "MEMORY.md").read_text() == "base\n"
