"""Sightings beside writes: a read or a listing logs a version only when it is what the file
holds, never an agent's write as someone else's edit, and never drops a person's edit it found
while a writer was at work.

Real threads and processes; no index and no model are needed.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable

import pytest

from conftest import run_paused, settings_for, wait_for_line, write
from openclaw_memory.fsutil.lock import FileLock
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.memory.local import LocalMemory

NOTE = "memory/n.md"
LOG = "memory/log.md"


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / NOTE, "# n\n")
    return settings_for(workspace, state_dir)


def entries(settings, workspace):
    return HistoryStore.for_settings(settings).entries(str(workspace / NOTE))


def until_it_waits(monkeypatch, work: Callable[[], object]) -> tuple[threading.Thread, list[BaseException]]:
    """``work`` in a thread of its own, returned once it waits for a lock (a sighting waiting for a
    writer) or is done; and the errors it raised, once joined."""
    told = threading.Event()
    acquire = FileLock.acquire

    def acquiring(self, on_wait=None):
        def waiting(holder):
            if self.timeout > 0:  # a wait, not a look (a lock tried without waiting)
                told.set()
            if on_wait is not None:
                on_wait(holder)

        return acquire(self, on_wait=waiting)

    monkeypatch.setattr(FileLock, "acquire", acquiring)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # collected: the caller's assertion shows it
            errors.append(exc)
        finally:
            told.set()

    thread = threading.Thread(target=run)
    thread.start()
    assert told.wait(60)
    return thread, errors


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


def test_a_read_while_a_write_is_in_place_but_not_logged_logs_nothing(settings, workspace, state_dir, cli, monkeypatch):
    # A writer (another process) has swapped its version in and not yet logged it; a read then
    # finds a version newer than the history's latest. Before, it was logged as an outside edit,
    # and the writer's own entry came after it. The read now waits for the writer, which logs it.
    assert cli("--session", "w", "read", NOTE).returncode == 0
    reader = LocalMemory(settings.with_session("r"))
    reads: list = []
    running: list = []
    code, _, err = run_paused(workspace, state_dir, ("--session", "w", "write", NOTE, "--append", "- by the agent"),
                              "write:exchanged",
                              lambda: running.append(until_it_waits(monkeypatch, lambda: reads.append(reader.read(NOTE)))))
    thread, errors = running[0]
    thread.join()
    assert code == 0, err
    assert not errors
    assert reads[0].text.endswith("- by the agent")
    only_the_agents(entries(settings, workspace), 1)
    states = cli("--session", "r", "state", "--json").json()["files"]
    assert [f["state"] for f in states if f["path"] == NOTE] == ["read_fresh"]  # its read counts


HOLD = """import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def test_a_persons_edit_read_while_another_process_writes_is_logged(settings, workspace, cli, monkeypatch):
    # Another process holds the workspace's write lock (another session's write, of any file)
    # while a read finds a person's edit; the person edits again after it is done. The read gave
    # up logging the edit and nothing came back for it: read --diff named a version that history
    # did not list and restore said did not exist.
    assert cli("read", NOTE).returncode == 0
    holder = subprocess.Popen([sys.executable, "-c", HOLD, HistoryStore.for_settings(settings).write_lock_path],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        wait_for_line(holder.stdout, "held")
        write(workspace / NOTE, "# n\n\nedited by a person\n")
        thread, errors = until_it_waits(monkeypatch, lambda: LocalMemory(settings).read(NOTE))
        holder.communicate("go\n", timeout=60)  # the writer is done
        thread.join()
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert not errors
    write(workspace / NOTE, "# n\n\nedited by a person\nand again\n")
    assert cli("read", NOTE).returncode == 0
    logged = entries(settings, workspace)
    assert [(e.origin, e.size) for e in logged] == [("external-edit", len(b"# n\n")),
                                                   ("external-edit", len(b"# n\n\nedited by a person\n")),
                                                   ("external-edit", len(b"# n\n\nedited by a person\nand again\n"))]
    assert cli("restore", NOTE, logged[1].version[:12]).returncode == 0
    assert (workspace / NOTE).read_text() == "# n\n\nedited by a person\n"


def test_every_save_the_watch_sees_while_an_agent_writes_another_file_is_logged(settings, workspace, monkeypatch):
    # watch beside an agent appending to one note while a person saves another: each of the
    # person's saves the watch saw while an append was at work was dropped (21 of 26 logged, by
    # hand, with 40 appends and 25 saves 0.8 s apart). Here every save is seen while one is.
    from openclaw_memory import faults
    from openclaw_memory.watch.versions import record_versions

    write(workspace / LOG, "- start\n")
    agent = LocalMemory(settings.with_session("agent"))
    agent.read(LOG)
    assert record_versions(settings, [NOTE]) is None
    turn, at_work, go, done = threading.Event(), threading.Event(), threading.Event(), threading.Event()
    reach = faults.reach

    def pausing(step: str) -> bool:
        if step == "write:checked" and threading.current_thread() is appender:  # under the write lock
            at_work.set()
            if not done.is_set():
                go.wait()
                go.clear()
        return reach(step)

    monkeypatch.setattr(faults, "reach", pausing)
    failed: list[BaseException] = []

    def appends() -> None:
        try:
            for i in range(6):
                turn.wait()  # one append for each save (an agent's tool calls come apart)
                turn.clear()
                if done.is_set():
                    return
                agent.write(LOG, append=f"- entry {i}", update_index=False)
        except BaseException as exc:  # collected: the assertion below shows it
            failed.append(exc)
            at_work.set()

    appender = threading.Thread(target=appends)
    appender.start()
    saves = []
    try:
        for i in range(6):
            turn.set()
            assert at_work.wait(60) and not failed
            at_work.clear()
            saves.append(f"# n\n\nperson edit {i}\n")
            write(workspace / NOTE, saves[-1])
            thread, errors = until_it_waits(monkeypatch, lambda: failed.extend(
                [AssertionError(w)] if (w := record_versions(settings, [NOTE])) else []))
            go.set()
            thread.join()
            assert not errors
    finally:
        done.set()
        turn.set()
        go.set()
        appender.join()
    assert not failed
    logged = entries(settings, workspace)
    assert [(e.origin, e.size) for e in logged] == [("external-edit", len(s.encode())) for s in ["# n\n", *saves]]
    log = HistoryStore.for_settings(settings).entries(str(workspace / LOG))
    assert [e.origin for e in log] == ["external-edit"] + ["agent-write"] * 6
