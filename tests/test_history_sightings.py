"""Sightings beside writes: a read or a listing logs a version only when it is still what the file
holds, and never an agent's write as someone else's edit.

Real threads and processes; no index and no model are needed.
"""

from __future__ import annotations

import threading

import pytest

from conftest import run_paused, settings_for, write
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.memory.local import LocalMemory

NOTE = "memory/n.md"


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / NOTE, "# n\n")
    return settings_for(workspace, state_dir)


def entries(settings, workspace):
    return HistoryStore.for_settings(settings).entries(str(workspace / NOTE))


def only_the_agents(logged, writes: int) -> None:
    """The first sighting of the note as it was made by hand, then every write of the agent, each its own version."""
    assert [(e.origin, e.agent) for e in logged] == [("external-edit", None)] + [("agent-write", "main")] * writes
    assert len({e.version for e in logged}) == writes + 1


@pytest.mark.parametrize("reader", ["read", "listing"])
def test_reads_beside_another_sessions_appends_log_every_write_and_no_outside_edit(settings, workspace, reader):
    # Two sessions of one agent, nobody else: one reads (or lists) the note over and over while
    # the other appends to it. Each read's snapshot is hashed before the store's lock: one taken
    # before a write and logged after it was an "outside edit" back to the older version (and the
    # next read one forward again), and the pairs pushed the agent's versions out of the history.
    one, two = LocalMemory(settings.with_session("one")), LocalMemory(settings.with_session("two"))
    two.read(NOTE)
    errors: list[BaseException] = []
    writing = threading.Event()

    def reads() -> None:
        try:
            while not writing.is_set():
                one.read(NOTE) if reader == "read" else one.listing()
        except BaseException as exc:  # collected: the assertion below shows it
            errors.append(exc)

    reader_thread = threading.Thread(target=reads)
    reader_thread.start()
    try:
        for i in range(25):
            two.write(NOTE, append=f"- entry {i}", update_index=False)
    finally:
        writing.set()
        reader_thread.join()
    assert not errors
    only_the_agents(entries(settings, workspace), 25)


def test_a_read_hashed_before_a_write_and_recorded_after_it_logs_nothing(settings, workspace, monkeypatch):
    from openclaw_memory.history import states

    one, two = LocalMemory(settings.with_session("one")), LocalMemory(settings.with_session("two"))
    two.read(NOTE)
    record_read = states.record_read

    def late(*args, **kwargs):  # the other session's write lands between the read's hash and its record
        two.write(NOTE, append="- between", update_index=False)
        return record_read(*args, **kwargs)

    monkeypatch.setattr(states, "record_read", late)
    seen = one.read(NOTE)
    monkeypatch.setattr(states, "record_read", record_read)
    assert seen.text == "# n"  # the version before the write
    only_the_agents(entries(settings, workspace), 1)
    # The read is recorded all the same: the session read the older version, so it reads again before writing.
    assert [f.state for f in one.state().files if f.path == NOTE] == ["read_stale"]

    # A person's edit a read finds is an outside edit, as ever.
    write(workspace / NOTE, "# n\n\nby hand\n")
    one.read(NOTE)
    logged = entries(settings, workspace)
    assert [(e.origin, e.agent, e.size) for e in logged[2:]] == [("external-edit", None, len(b"# n\n\nby hand\n"))]


def test_a_read_while_a_write_is_in_place_but_not_logged_logs_nothing(settings, workspace, state_dir, cli):
    # A writer (another process) has swapped its version in and not yet logged it; a read then
    # finds a version newer than the history's latest. Before, it was logged as an outside edit,
    # and the writer's own entry came after it.
    assert cli("--session", "w", "read", NOTE).returncode == 0
    reads = []
    code, _, err = run_paused(workspace, state_dir, ("--session", "w", "write", NOTE, "--append", "- by the agent"),
                              "write:exchanged", lambda: reads.append(cli("--session", "r", "read", NOTE, "--json")))
    assert code == 0, err
    assert reads[0].returncode == 0 and reads[0].json()["text"].endswith("- by the agent")
    only_the_agents(entries(settings, workspace), 1)
    states = cli("--session", "r", "state", "--json").json()["files"]
    assert [f["state"] for f in states if f["path"] == NOTE] == ["read_fresh"]  # its read counts
