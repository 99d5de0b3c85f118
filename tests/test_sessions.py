"""Read records per session, idempotency keys for writes, and the self-removing lock file.

Real files, threads and the CLI (called in this process); no index and no model are needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from conftest import env_for, fault, settings_for, wait_for, write
from openclaw_memory.errors import LockTimeout, UsageError, WriteBlocked
from openclaw_memory.fsutil.lock import FileLock
from openclaw_memory.history.idempotency import KEEP_S, IdempotencyStore, default_key
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.service_files import read_info
from openclaw_memory.wire import to_json


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\nalpha\n")
    return settings_for(workspace, state_dir)


# -- sessions ----------------------------------------------------------------------------------


def test_a_session_that_never_read_cannot_overwrite_what_the_cli_read(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n\nalpha\n")
    assert cli("read", "MEMORY.md").returncode == 0
    blind = cli("--session", "s1", "write", "MEMORY.md", "--append", "beta")
    assert blind.returncode == 3 and "has not read it" in blind.stderr
    assert cli("write", "MEMORY.md", "--append", "from the cli").returncode == 0  # the CLI's own read still counts
    assert cli("read", "MEMORY.md", "--session", "s1").returncode == 0
    ok = cli("--session", "s1", "write", "MEMORY.md", "--append", "beta", "--json")
    assert ok.returncode == 0, ok.stderr
    assert (workspace / "MEMORY.md").read_text().endswith("from the cli\nbeta\n")
    states = cli("--session", "s1", "state", "--json").json()
    assert [f["state"] for f in states["files"] if f["path"] == "MEMORY.md"] == ["written_unread"]
    assert [f["state"] for f in cli("state", "--json").json()["files"] if f["path"] == "MEMORY.md"] == ["read_stale"]


def test_session_ids_are_checked(cli, workspace):
    bad = cli("--session", "no spaces!", "state")
    assert bad.returncode == 2 and "session id" in bad.stderr


def test_session_records_stay_apart_in_the_api(settings):
    one, two = settings.with_session("one"), settings.with_session("two")
    LocalMemory(one).read("MEMORY.md")
    with pytest.raises(WriteBlocked):
        LocalMemory(two).write("MEMORY.md", append="from two")
    assert LocalMemory(one).write("MEMORY.md", append="from one").changed
    with pytest.raises(UsageError):
        settings.with_session("")


# -- idempotency -------------------------------------------------------------------------------


def test_a_retried_append_is_written_once_and_answered_with_the_first_result(settings, workspace):
    LocalMemory(settings).read("MEMORY.md")
    first = LocalMemory(settings).write("MEMORY.md", append="- call the plumber")
    again = LocalMemory(settings).write("MEMORY.md", append="- call the plumber")
    assert (workspace / "MEMORY.md").read_text().count("call the plumber") == 1
    replayed = to_json(again)
    assert replayed.pop("replay") == {"key": again.replay.key, "firstTime": again.replay.first_time}
    assert replayed == {**to_json(first), "replayed": True}
    assert "replayed" not in to_json(first) and "replay" not in to_json(first)


def test_a_retried_append_to_a_daily_note_others_appended_to_since_is_not_written_twice(settings, workspace):
    """The daily note is the file with several writers: the first append's text is still there,
    at its place, when the retry comes after another session's append."""
    import datetime as dt

    note = f"memory/{dt.date.today().isoformat()}.md"
    write(workspace / note, "# today\n")
    one, two = LocalMemory(settings.with_session("s1")), LocalMemory(settings.with_session("s2"))
    one.read(note)
    first = one.write(note, append="- bought milk")
    two.read(note)
    two.write(note, append="- other line")
    again = one.write(note, append="- bought milk")
    assert again.replay is not None and again.version == first.version
    assert (workspace / note).read_text() == "# today\n- bought milk\n- other line\n"
    write(workspace / note, "# today\n- rewritten by hand\n")  # what it made is gone: the retry writes again
    one.read(note)
    assert one.write(note, append="- bought milk").replay is None
    assert (workspace / note).read_text().count("bought milk") == 1


def test_the_same_line_appended_again_after_another_write_of_this_session_is_written_again(settings, workspace, cli):
    """A retry comes before the session goes on: the same line appended again after this session
    wrote the file in between is a new entry, not a retry ("- fed the cat" in the morning and again
    in the evening). It was answered as a replay, nothing written, the CLI saying "appended"."""
    import datetime as dt

    note = f"memory/{dt.date.today().isoformat()}.md"
    write(workspace / note, "# today\n")
    session = LocalMemory(settings.with_session("s1"))
    session.read(note)
    session.write(note, append="- fed the cat")
    session.write(note, append="- walked the dog")
    again = session.write(note, append="- fed the cat")
    assert again.replay is None
    assert (workspace / note).read_text() == "# today\n- fed the cat\n- walked the dog\n- fed the cat\n"
    assert session.write(note, append="- fed the cat").replay is not None  # a retry of that one: once
    for line in ("- tea", "- post", "- tea"):  # a person at the command line, as the issue found it
        assert cli("write", note, "--append", line).returncode == 0
    assert (workspace / note).read_text().endswith("- fed the cat\n- tea\n- post\n- tea\n")


def test_a_read_after_the_write_ends_its_replay_window(settings, workspace):
    """A retry is the call sent again because its answer never came: the session has not seen the
    file since. After a read of the file the same line is a new entry: a person appended a line, the
    agent read it and appended "- fed the cat" again in the evening, which was answered as a replay
    of the morning's write (its old version, the CLI saying "appended"), written nowhere."""
    import datetime as dt

    note = f"memory/{dt.date.today().isoformat()}.md"
    write(workspace / note, "# Log\n")
    session = LocalMemory(settings.with_session("s1"))
    session.read(note)
    morning = session.write(note, append="- fed the cat")
    assert session.write(note, append="- fed the cat").replay is not None  # no read between: a retry, written once
    with open(workspace / note, "a") as fh:
        fh.write("- (human) vet called\n")
    session.read(note)
    evening = session.write(note, append="- fed the cat")
    assert evening.replay is None and evening.version != morning.version and evening.changed
    assert (workspace / note).read_text() == "# Log\n- fed the cat\n- (human) vet called\n- fed the cat\n"
    assert session.write(note, append="- fed the cat").replay is not None  # the evening's retry: once
    session.read(note)  # a read of what the file holds, nobody else writing: a new entry all the same
    assert session.write(note, append="- fed the cat").replay is None
    assert (workspace / note).read_text().count("- fed the cat") == 3
    other = LocalMemory(settings.with_session("s2"))  # another session's read is not this session's
    other.read(note)
    assert session.write(note, append="- fed the cat").replay is not None


def test_a_read_does_not_end_an_explicit_keys_replay_nor_one_that_saw_the_file_before_the_write(settings, workspace):
    """An explicit key is the caller's word that this is the same write (a client that re-sends a
    read and a write together after a lost answer); and a read that returned the version the write
    replaced (sent beside it) could not show the write: both still replay."""
    from openclaw_memory.history.states import READ, ReadRecords
    from openclaw_memory.history.store import FileVersion, HistoryStore

    session = LocalMemory(settings)
    session.read("MEMORY.md")
    first = session.write("MEMORY.md", append="- tick", idempotency_key="turn-9")
    session.read("MEMORY.md")
    again = session.write("MEMORY.md", append="- tick", idempotency_key="turn-9")
    assert again.replay is not None and again.version == first.version
    plain = session.write("MEMORY.md", append="- tock")
    records = ReadRecords.for_settings(HistoryStore.for_settings(settings), settings)
    records.put(plain.abs_path, FileVersion(plain.previous, first.size), READ)  # recorded late
    assert session.write("MEMORY.md", append="- tock").replay is not None
    assert (workspace / "MEMORY.md").read_text().count("- tick") == (workspace / "MEMORY.md").read_text().count("- tock") == 1


def test_keys_default_to_agent_tool_and_input_hash(settings):
    key = default_key("main", "write", "MEMORY.md", "append", b"x")
    assert key.startswith("main.write.") and len(key.split(".")[-1]) == 32
    assert key == default_key("main", "write", "./MEMORY.md", "append", b"x")
    others = {default_key("ops", "write", "MEMORY.md", "append", b"x"), default_key("main", "memory_write", "MEMORY.md", "append", b"x"),
              default_key("main", "write", "MEMORY.md", "replace", b"x"), default_key("main", "write", "MEMORY.md", "append", b"y")}
    assert key not in others and len(others) == 4


def test_an_explicit_key_makes_a_second_identical_append_a_new_write(settings, workspace):
    LocalMemory(settings).read("MEMORY.md")
    LocalMemory(settings).write("MEMORY.md", append="- tick", idempotency_key="turn-1")
    LocalMemory(settings).write("MEMORY.md", append="- tick", idempotency_key="turn-2")
    replay = LocalMemory(settings).write("MEMORY.md", append="- tick", idempotency_key="turn-2")
    assert to_json(replay)["replayed"] is True
    assert (workspace / "MEMORY.md").read_text().count("- tick") == 2
    with pytest.raises(UsageError):
        LocalMemory(settings).write("MEMORY.md", append="- tick", idempotency_key="")


def test_a_key_is_bound_to_its_write_and_a_reuse_for_another_is_refused(settings, workspace):
    write(workspace / "memory" / "b.md", "b\n")
    for path in ("MEMORY.md", "memory/b.md"):
        LocalMemory(settings).read(path)
    LocalMemory(settings).write("MEMORY.md", append="- first fact", idempotency_key="turn-7")
    other_session = settings.with_session("s-2")
    LocalMemory(other_session).read("MEMORY.md")
    for kwargs in ({"path": "MEMORY.md", "append": "- second fact"},  # other content
                   {"path": "memory/b.md", "append": "- first fact"},  # another file
                   {"path": "MEMORY.md", "content": "- first fact\n"}):  # another mode
        with pytest.raises(UsageError, match="'turn-7' was first used for an append of MEMORY.md; this write differs"):
            LocalMemory(settings).write(idempotency_key="turn-7", **kwargs)
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\nalpha\n- first fact\n"
    assert (workspace / "memory" / "b.md").read_text() == "b\n"
    assert to_json(LocalMemory(settings).write("MEMORY.md", append="- first fact", idempotency_key="turn-7"))["replayed"]


def test_a_key_is_the_sessions_own_never_blocked_by_or_told_of_another_sessions(settings, workspace):
    """Another session's (or agent's) same key is another key: it was refused, naming the first
    write's path, agent and session (another agent's note and session id shown to this one)."""
    write(workspace / "memory" / "secret-plan.md", "plan\n")
    LocalMemory(settings).read("memory/secret-plan.md")
    LocalMemory(settings).write("memory/secret-plan.md", content="the launch code is 0000\n", idempotency_key="turn-1")
    for n, other in enumerate((settings.with_session("s-2"), settings.with_agent("ops"))):
        made = LocalMemory(other).write(f"memory/other-{n}.md", content="hello\n", idempotency_key="turn-1")
        assert "replayed" not in to_json(made) and made.created
        with pytest.raises(UsageError) as refused:  # its own key, bound to its own first write
            LocalMemory(other).write(f"memory/other-{n}.md", content="bye\n", idempotency_key="turn-1")
        assert f"first used for a replace of memory/other-{n}.md; this write differs in its content" in str(refused.value)
        assert "secret-plan" not in str(refused.value) and "session" not in str(refused.value)
    assert (workspace / "memory" / "secret-plan.md").read_text() == "the launch code is 0000\n"


def test_a_replay_is_answered_only_while_the_file_holds_what_the_first_write_made(settings, workspace):
    LocalMemory(settings).read("MEMORY.md")
    first = LocalMemory(settings).write("MEMORY.md", append="- remember the keys")
    LocalMemory(settings).restore("MEMORY.md", first.previous)  # the person takes the fact out again
    LocalMemory(settings).read("MEMORY.md")
    again = LocalMemory(settings).write("MEMORY.md", append="- remember the keys")
    assert "replayed" not in to_json(again)  # written again, not answered from a version the file no longer has
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\nalpha\n- remember the keys\n"
    other = settings.with_session("s-9")  # without a key, another session's same text is its own write
    LocalMemory(other).read("MEMORY.md")
    assert "replayed" not in to_json(LocalMemory(other).write("MEMORY.md", append="- remember the keys"))
    assert (workspace / "MEMORY.md").read_text().count("- remember the keys") == 2


def test_a_key_older_than_a_day_or_damaged_counts_as_absent(settings, workspace):
    store = IdempotencyStore(settings.data_dir, settings.agent, settings.session)
    LocalMemory(settings).read("MEMORY.md")
    LocalMemory(settings).write("MEMORY.md", append="- daily", idempotency_key="k-old")
    with store.db.transaction() as conn:
        conn.execute("UPDATE idempotency SET time = time - ?", (KEEP_S + 1,))
    assert "replayed" not in to_json(LocalMemory(settings).write("MEMORY.md", append="- daily", idempotency_key="k-old"))
    with store.db.transaction() as conn:
        conn.execute("UPDATE idempotency SET result = '{not json'")
    assert "replayed" not in to_json(LocalMemory(settings).write("MEMORY.md", append="- daily", idempotency_key="k-old"))
    assert (workspace / "MEMORY.md").read_text().count("- daily") == 3
    assert to_json(LocalMemory(settings).write("MEMORY.md", append="- daily", idempotency_key="k-old"))["replayed"] is True
    assert stat_mode(store.db.path) == 0o600
    with store.db.transaction() as conn:
        conn.execute("UPDATE idempotency SET time = time - ?", (KEEP_S + 10,))
    assert store.prune() == 1 and store.get("k-old") is None


def stat_mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_concurrent_retries_write_once(settings, workspace):
    LocalMemory(settings).read("MEMORY.md")
    results, errors = [], []

    def attempt():
        try:
            results.append(to_json(LocalMemory(settings).write("MEMORY.md", append="- once", update_index=False)))
        except Exception as exc:  # collected: the assertion below shows it
            errors.append(exc)

    threads = [threading.Thread(target=attempt) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert (workspace / "MEMORY.md").read_text().count("- once") == 1
    assert sum(1 for r in results if r.get("replayed")) == 3


def test_the_cli_says_a_retried_write_was_already_done(cli, workspace):
    write(workspace / "memory" / "2026-11-30.md", "# Notes\n")
    assert cli("read", "memory/2026-11-30.md").returncode == 0
    first = cli("write", "memory/2026-11-30.md", "--append", "- boat: sanded", "--json")
    again = cli("write", "memory/2026-11-30.md", "--append", "- boat: sanded", "--json")
    assert first.returncode == again.returncode == 0
    replayed = again.json()
    assert set(replayed.pop("replay")) == {"key", "firstTime"}
    assert replayed == {**first.json(), "replayed": True}
    assert "already written" in again.stderr
    assert (workspace / "memory" / "2026-11-30.md").read_text() == "# Notes\n- boat: sanded\n"
    plain = cli("write", "memory/2026-11-30.md", "--append", "- boat: sanded")
    assert plain.returncode == 0 and not plain.stdout.startswith("appended to"), plain.stdout  # never said so
    assert plain.stdout == (f"replayed: nothing appended to memory/2026-11-30.md now; an earlier write with the same "
                            f"idempotency key made version {first.json()['version'][:12]} (23 bytes), which the file "
                            "still holds\n")
    assert "read the file first (openclaw-memory read memory/2026-11-30.md)" in plain.stderr, plain.stderr
    other = cli("write", "memory/2026-11-30.md", "--append", "- boat: sanded", "--idempotency-key", "second time")
    assert other.returncode == 0
    assert (workspace / "memory" / "2026-11-30.md").read_text().count("- boat: sanded") == 2


# -- the lock that removes its file --------------------------------------------------------------


def test_a_removing_lock_leaves_no_file_and_a_waiter_locks_the_live_file(tmp_path):
    path = str(tmp_path / "svc" / "lock")
    first = FileLock(path, timeout=0, remove=True)
    first.acquire()
    waiter = FileLock(path, timeout=10, remove=True)
    blocked, got = threading.Event(), threading.Event()

    def wait():
        waiter.acquire(on_wait=lambda _pid: blocked.set())
        got.set()

    t = threading.Thread(target=wait)
    t.start()
    assert blocked.wait(10)  # the waiter now blocks on the first holder's file
    first.release()
    t.join(10)
    assert got.is_set()
    # The waiter holds the file that is at the path now, so nobody else can take it.
    with pytest.raises(LockTimeout):
        FileLock(path, timeout=0, remove=True).acquire()
    waiter.release()
    assert not os.path.exists(path)


def test_a_wait_for_another_call_of_this_process_names_this_process(tmp_path):
    """The pid in a lock file is written just after the lock is taken and emptied just before it is
    let go (and not written on a full disk): an MCP server's parallel calls waiting for each other
    read an empty file and told the client's log that "another openclaw-memory process" held the
    index. A lock this process holds is known as its own; another process's is read from its file."""
    path = str(tmp_path / "index.lock")
    held = FileLock(path, timeout=0)
    held.acquire()
    os.truncate(path, 0)  # the moment before the holder's pid is written (or a full disk)
    heard: list[str] = []
    with pytest.raises(LockTimeout):
        FileLock(path, timeout=0.1).acquire(on_wait=heard.append)
    held.release()
    assert heard == [str(os.getpid())]
    # The control: a lock another process holds is named by its file.
    other = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR); "
                              "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'4242\\n'); print(flush=True); sys.stdin.read()", path],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert other.stdout.readline() == b"\n"
    heard.clear()
    with pytest.raises(LockTimeout):
        FileLock(path, timeout=0.1).acquire(on_wait=heard.append)
    other.stdin.close()
    other.wait(10)
    assert heard == ["4242"]


@pytest.mark.parametrize("step", ["key-recorded", "swapped"])
def test_a_keyed_write_killed_at_any_step_is_written_exactly_once(workspace, state_dir, cli, cli_process, step):
    write(workspace / "MEMORY.md", "# Memory\n\nalpha\n")
    assert cli("read", "MEMORY.md").returncode == 0
    args = ("write", "MEMORY.md", "--append", "- exactly once", "--idempotency-key", "turn-3", "--json")
    killed = cli_process(*args, env=fault(f"write:{step}=kill", env={"OPENCLAW_MEMORY_SERVICE": "off"}))
    assert killed.returncode == -9, killed.stderr
    retry = cli(*args)
    assert retry.returncode == 0, retry.stderr
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\nalpha\n- exactly once\n"
    assert retry.json().get("replayed", False) is (step == "swapped")  # renamed before the kill: answered


@pytest.mark.parametrize("step", ["key-recorded", "swapped"])
def test_a_service_killed_mid_write_then_the_in_process_retry_writes_once(workspace, state_dir, cli, step):
    write(workspace / "MEMORY.md", "# Memory\n\nalpha\n")
    assert cli("read", "MEMORY.md").returncode == 0
    service = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=workspace,
                               env=fault(f"write:{step}=kill", env=env_for(workspace, state_dir)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: read_info(settings_for(workspace, state_dir)), timeout=120)
        done = cli("write", "MEMORY.md", "--append", "- exactly once", "--idempotency-key", "turn-4", "--json")
        assert service.wait(timeout=60) == -9  # the service died at that step; the CLI carried on in-process
    finally:
        if service.poll() is None:
            service.kill()
    assert done.returncode == 0, done.stderr
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\nalpha\n- exactly once\n"


def test_a_blocked_write_names_the_session_that_did_not_read(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("--session", "s1", "read", "MEMORY.md").returncode == 0
    blocked = cli("--session", "s2", "write", "MEMORY.md", "--append", "x")
    assert blocked.returncode == 3 and "agent 'main' (session s2) has not read it" in blocked.stderr
