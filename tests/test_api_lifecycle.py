"""A library's memory over its life: closed, it refuses calls and holds nothing; two of one workspace
in one process share the index instead of locking each other out."""

from __future__ import annotations

import os
import signal
import threading

import pytest

import openclaw_memory as om
from conftest import settings_for, write
from openclaw_memory.errors import MemoryClosed
from openclaw_memory.fsutil.lock import lock_holder
from openclaw_memory.index.collections import resolve_collections


def shard_locks(settings) -> list[str]:
    return [str(settings.data_dir / "index" / "locks" / f"{c.name}.lock") for c in resolve_collections(settings)]


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Ops\nnightly backups at 02:30 to the backups bucket\n")
    return settings_for(workspace, state_dir)


def test_a_closed_memory_refuses_every_call_and_holds_no_shard(settings):
    """A search after close() reopened the shards and held them (the idle thread was stopped):
    another process's `index` timed out on them. Now the call is MemoryClosed and nothing is opened."""
    memory = om.open_memory(settings, in_process=True, shard_idle_s=30)
    assert memory.search("backups").results
    assert {lock_holder(p) for p in shard_locks(settings)} == {str(os.getpid())}  # kept open between calls
    memory.close()
    assert {lock_holder(p) for p in shard_locks(settings)} == {None}
    for call in (lambda: memory.search("backups"), memory.files, lambda: memory.read("MEMORY.md"), memory.warm,
                 lambda: memory.for_session("s1").status()):
        with pytest.raises(MemoryClosed, match=r"open_memory\(settings\) opens a new one"):
            call()
    assert {lock_holder(p) for p in shard_locks(settings)} == {None}
    memory.close()  # a second close is nothing


def test_a_memory_is_a_context_manager_here_and_through_the_service(settings):
    from openclaw_memory.index.pool import IndexPool
    from openclaw_memory.memory.remote import ServiceMemory

    with om.open_memory(settings, in_process=True) as memory:
        assert memory.search("backups").results
    assert {lock_holder(p) for p in shard_locks(settings)} == {None}
    with pytest.raises(MemoryClosed):
        memory.search("backups")
    # The service's client (none runs: it works here): closed alike.
    with ServiceMemory.connect(settings, IndexPool(), notice=lambda line: None) as remote:
        assert remote.search("backups").results
    with pytest.raises(MemoryClosed):
        remote.search("backups")
    remote.close()


def test_two_memories_of_one_workspace_in_one_process_share_the_index(settings):
    """Each open_memory had its own index: while one held the shards (in a call, or kept open
    between calls), the other waited 5 s and failed with "held by another openclaw-memory process"
    naming this very process. They share it now; closing one leaves the other's call alone."""
    first = om.open_memory(settings, in_process=True, shard_idle_s=30)
    second = om.open_memory(settings, in_process=True, shard_idle_s=30)
    assert first.search("backups").results  # the shards stay open for it
    assert second.search("nightly").results
    with first.pool.index(first.settings) as index:  # a call of the first in progress
        closer = threading.Thread(target=second.close)
        closer.start()
        closer.join(10)
        assert not closer.is_alive()  # it did not wait for the first's call
        assert {lock_holder(p) for p in shard_locks(settings)} == {str(os.getpid())}
        assert index.search("backups").results  # the call goes on, on open shards
    assert first.search("backups").results
    first.close()
    assert {lock_holder(p) for p in shard_locks(settings)} == {None}


def test_the_last_memory_to_close_lets_go_however_they_were_opened(settings):
    """One closing after each call (the CLI's) beside one that keeps the shards open."""
    keeps = om.open_memory(settings, in_process=True, shard_idle_s=30)
    each_call = om.open_memory(settings, in_process=True, shard_idle_s=0)
    assert each_call.index().files_changed == 1
    assert keeps.search("backups").results
    assert each_call.search("nightly").results
    each_call.close()
    keeps.close()
    assert {lock_holder(p) for p in shard_locks(settings)} == {None}
    with om.open_memory(settings, in_process=True) as again:  # opened anew: a new index
        assert again.search("backups").results


def test_a_memory_a_forked_child_opens_is_its_own(settings, workspace):
    """A child forked after the parent opened a memory got the parent's index from the shared table:
    its write hung counting points in the parent's engines, and the parent's index was left damaged.
    Its own memory finds the parent's shards held by another process, as any other process would."""
    parent = om.open_memory(settings, in_process=True, shard_idle_s=30)
    parent.index()
    assert parent.search("backups").results
    pid = os.fork()
    if pid == 0:  # the child: a fresh memory of the same settings, written through
        code = 1
        try:
            signal.alarm(60)
            child = om.open_memory(settings, in_process=True)
            written = child.write("memory/child.md", content="the child wrote gizmo\n")
            code = 0 if f"(pid {os.getppid()})" in (written.index.reason or "") else 2
            child.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [h.path for h in parent.search("gizmo").results] == ["memory/child.md"]  # the parent's index is sound
    parent.close()
