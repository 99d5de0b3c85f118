"""The stale-write guard: file states, guarded atomic writes, daily-note appends, --expect, the lock."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time

import pytest
import xxhash

from conftest import env_for, run_paused, settings_for, wait_for, write
from openclaw_memory.errors import PathRefused, UsageError, WriteBlocked
from openclaw_memory.memory.local import LocalMemory

TODAY = f"memory/{datetime.date.today().isoformat()}.md"


def version_of(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def states(cli, *args) -> dict:
    return {f["path"]: f for f in cli("state", "--json", *args).json()["files"]}


def test_write_after_external_edit_is_blocked_and_says_read_again(cli, workspace):
    write(workspace / "MEMORY.md", "alpha\n")
    assert cli("read", "MEMORY.md").returncode == 0
    write(workspace / "MEMORY.md", "alpha\nedited by a person\n")
    res = cli("write", "MEMORY.md", "--append", "agent note")
    assert res.returncode == 3
    assert "changed since" in res.stderr and "Read it again" in res.stderr and "Traceback" not in res.stderr
    assert (workspace / "MEMORY.md").read_text() == "alpha\nedited by a person\n"
    as_json = cli("write", "MEMORY.md", "--append", "agent note", "--json")
    assert as_json.returncode == 3 and "read it again" in as_json.json()["error"].lower()
    # After reading again, the same write goes through and keeps the person's edit.
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "agent note").returncode == 0
    assert (workspace / "MEMORY.md").read_text() == "alpha\nedited by a person\nagent note\n"


def test_write_to_an_existing_file_never_read_is_blocked(cli, workspace):
    write(workspace / "memory/project.md", "plans\n")
    res = cli("write", "memory/project.md", "--append", "more")
    assert res.returncode == 3 and "read it first" in res.stderr
    assert (workspace / "memory/project.md").read_text() == "plans\n"


def test_creating_a_new_file_is_allowed_including_new_folders(cli, workspace):
    res = cli("write", "memory/topics/new.md", "--append", "first line", "--json")
    assert res.returncode == 0, res.stderr
    out = res.json()
    assert out["created"] is True and out["previousVersion"] is None and out["action"] == "append"
    assert (workspace / "memory/topics/new.md").read_bytes() == b"first line\n"
    assert out["version"] == version_of(b"first line\n") and out["size"] == 11


def test_own_write_counts_as_read_then_an_outside_change_makes_it_stale(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "one\n")
    LocalMemory(s).read("MEMORY.md")
    LocalMemory(s).write("MEMORY.md", content="two\n")
    LocalMemory(s).write("MEMORY.md", content="three\n")  # second write: allowed, no read in between
    assert LocalMemory(s).state().files[0].state == "written_unread"
    write(workspace / "MEMORY.md", "a person wrote this\n")
    assert LocalMemory(s).state().files[0].state == "read_stale"
    with pytest.raises(WriteBlocked):
        LocalMemory(s).write("MEMORY.md", content="four\n")
    assert (workspace / "MEMORY.md").read_text() == "a person wrote this\n"


def test_a_file_read_then_deleted_elsewhere_is_blocked_until_read_again(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/gone.md", "x\n")
    LocalMemory(s).read("memory/gone.md")
    os.unlink(workspace / "memory/gone.md")
    with pytest.raises(WriteBlocked, match="deleted"):
        LocalMemory(s).write("memory/gone.md", content="recreated\n")
    assert not (workspace / "memory/gone.md").exists()
    assert LocalMemory(s).read("memory/gone.md").missing  # the agent now knows it is gone
    LocalMemory(s).write("memory/gone.md", content="recreated\n")
    assert (workspace / "memory/gone.md").read_text() == "recreated\n"


def test_daily_note_append_allowed_after_someone_else_appended(cli, workspace):
    write(workspace / TODAY, "# Today\n- morning\n")
    assert cli("read", TODAY).returncode == 0
    with open(workspace / TODAY, "a") as fh:  # another process appends (the person, another tool)
        fh.write("- noon (by a person)\n")
    res = cli("write", TODAY, "--append", "- evening (by the agent)")
    assert res.returncode == 0, res.stderr
    assert (workspace / TODAY).read_text() == "# Today\n- morning\n- noon (by a person)\n- evening (by the agent)\n"


def test_daily_note_append_uses_the_last_version_seen_when_this_agent_never_read_it(workspace, state_dir):
    other = settings_for(workspace, state_dir, agent="other")
    me = settings_for(workspace, state_dir, agent="main")
    LocalMemory(other).write(TODAY, append="- from other")  # created by another agent: seen by the product
    with open(workspace / TODAY, "a") as fh:
        fh.write("- appended outside\n")
    LocalMemory(me).write(TODAY, append="- from main")
    assert (workspace / TODAY).read_text() == "- from other\n- appended outside\n- from main\n"
    # A note nobody ever saw through the product: nothing to check against, so read first.
    write(workspace / "memory/2020-01-02.md", "old\n")
    with pytest.raises(WriteBlocked, match="has not read"):
        LocalMemory(me).write("memory/2020-01-02.md", append="x")


@pytest.mark.parametrize("rewrite", ["# Today\n", "# Today\n- MORNING\n- more\n", "X Today\n- morning\n"])
def test_daily_note_append_blocked_when_the_file_shrank_or_was_rewritten(workspace, state_dir, rewrite):
    s = settings_for(workspace, state_dir)
    write(workspace / TODAY, "# Today\n- morning\n")
    LocalMemory(s).read(TODAY)
    write(workspace / TODAY, rewrite)
    with pytest.raises(WriteBlocked, match="shrank or was rewritten"):
        LocalMemory(s).write(TODAY, append="- evening")
    assert (workspace / TODAY).read_text() == rewrite


def test_only_real_daily_notes_get_the_append_rule(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    for name in ("memory/2026-02-30.md", "memory/sub/2026-01-05.md", "memory/notes.md"):
        write(workspace / name, "start\n")
        LocalMemory(s).read(name)
        with open(workspace / name, "a") as fh:
            fh.write("outside\n")
        with pytest.raises(WriteBlocked, match="changed since"):
            LocalMemory(s).write(name, append="agent")


def test_expect_is_a_compare_and_swap_on_a_version_this_agent_read(cli, workspace):
    """--expect names the version the agent last read: one learnt elsewhere (a refusal, `history`) is no
    read (it overwrote a person's edit the agent never saw), and a file never read is never called changed."""
    write(workspace / "MEMORY.md", "v1\n")
    v1 = version_of(b"v1\n")
    unread = cli("write", "MEMORY.md", "--stdin", "--expect", v1[:8], input="v2\n")
    assert unread.returncode == 3 and "MEMORY.md is at a version agent 'main' has not read" in unread.stderr
    assert "changed" not in unread.stderr and "--expect" not in unread.stderr
    assert cli("read", "MEMORY.md").returncode == 0
    ok = cli("write", "MEMORY.md", "--stdin", "--expect", v1[:8], "--json", input="v2\n")
    assert ok.returncode == 0, ok.stderr
    assert ok.json()["previousVersion"] == v1
    v2 = version_of(b"v2\n")
    stale = cli("write", "MEMORY.md", "--stdin", "--expect", v1[:8], input="v3\n")  # it wrote v2 since: its read
    assert stale.returncode == 3 and f"is at the version agent 'main' read ({v2[:12]}), not {v1[:8]}" in stale.stderr
    write(workspace / "MEMORY.md", "v2\nthe person's line\n")
    edited = version_of(b"v2\nthe person's line\n")
    changed = cli("write", "MEMORY.md", "--stdin", "--expect", v2[:8], input="v3\n")
    assert changed.returncode == 3 and "changed since agent 'main' last read it" in changed.stderr
    learnt = cli("write", "MEMORY.md", "--stdin", "--expect", edited[:12], input="v3\n")  # taken from that message
    assert learnt.returncode == 3 and "is at a version agent 'main' has not read" in learnt.stderr
    assert (workspace / "MEMORY.md").read_text() == "v2\nthe person's line\n"
    short = cli("write", "MEMORY.md", "--stdin", "--expect", v1[:7], input="v3\n")
    assert short.returncode == 2 and "the version `read --json` gives" in short.stderr  # not history's: no read
    assert cli("write", "MEMORY.md", "--stdin", "--expect", "zzzzzzzz", input="v3\n").returncode == 2
    missing = cli("write", "memory/none.md", "--append", "x", "--expect", v1[:8])
    assert missing.returncode == 3 and "does not exist" in missing.stderr


def test_expect_on_a_daily_note_is_strict(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / TODAY, "a\n")
    LocalMemory(s).read(TODAY)
    with open(workspace / TODAY, "a") as fh:
        fh.write("b\n")
    with pytest.raises(WriteBlocked, match="changed since"):
        LocalMemory(s).write(TODAY, append="c", expect=version_of(b"a\n")[:10])
    with pytest.raises(WriteBlocked, match="has not read"):  # the version now, never read
        LocalMemory(s).write(TODAY, append="c", expect=version_of(b"a\nb\n"))
    LocalMemory(s).read(TODAY)
    LocalMemory(s).write(TODAY, append="c", expect=version_of(b"a\nb\n"))
    assert (workspace / TODAY).read_text() == "a\nb\nc\n"


def test_writes_only_memory_paths(cli, workspace, tmp_path):
    write(workspace / "notes.md", "not memory\n")
    write(workspace / "memory.md", "legacy\n")
    write(tmp_path / "outside.md", "outside\n")
    os.symlink(tmp_path / "outside.md", workspace / "MEMORY.md")
    for target in ("notes.md", "memory.md", "../outside.md", str(tmp_path / "outside.md"), "memory/a.txt",
                   "MEMORY.md", "memory/.openclaw-repair/x.md"):
        res = cli("write", target, "--append", "x", "--json")
        assert res.returncode == 2, (target, res.stderr)
        assert "error" in res.json() and "Traceback" not in res.stderr
    assert (workspace / "notes.md").read_text() == "not memory\n"
    assert (tmp_path / "outside.md").read_text() == "outside\n"
    assert not (workspace / "memory/a.txt").exists()


def test_an_extra_path_holding_the_workspace_does_not_make_memory_md_memory(cli, workspace):
    write(workspace / "memory.md", "legacy\n")
    write(workspace / "notes.md", "notes\n")
    for args in (("read", "memory.md"), ("write", "memory.md", "--append", "x"), ("read", "memory.md", "--diff")):
        res = cli(*args, "--extra", ".", "--json")
        assert res.returncode == 2 and "legacy root file" in res.json()["error"], (args, res.stdout)
    assert (workspace / "memory.md").read_text() == "legacy\n"
    assert cli("read", "notes.md", "--extra", ".").stdout == "notes\n"  # the rest of the folder is memory


def test_extra_paths_are_memory_paths(workspace, state_dir, tmp_path):
    s = settings_for(workspace, state_dir, extra=[str(tmp_path / "shared")])
    with pytest.raises(PathRefused, match="not a memory path"):  # the extra folder does not exist (yet)
        LocalMemory(s).write(str(tmp_path / "shared/team.md"), content="team\n")
    (tmp_path / "shared").mkdir()
    result = LocalMemory(s).write(str(tmp_path / "shared/team.md"), content="team\n")
    assert result.created and (tmp_path / "shared/team.md").read_text() == "team\n"


def test_replacing_a_file_with_its_own_bytes_says_nothing_changed(cli, workspace, tmp_path):
    write(workspace / "MEMORY.md", "same\n")
    write(tmp_path / "same.md", "same\n")
    assert cli("read", "MEMORY.md").returncode == 0
    result = cli("write", "MEMORY.md", "--replace-file", str(tmp_path / "same.md"), "--json", "--no-index").json()
    assert result["changed"] is False and result["version"] == result["previousVersion"]
    result = cli("write", "MEMORY.md", "--append", "more", "--json", "--no-index").json()
    assert result["changed"] is True


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_write_by_root_keeps_the_file_owned_by_its_user(cli, workspace):
    write(workspace / "MEMORY.md", "owned by a user\n")
    os.chown(workspace / "MEMORY.md", 1234, 2345)
    os.chmod(workspace / "MEMORY.md", 0o640)
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "root wrote this", "--no-index").returncode == 0
    st = os.stat(workspace / "MEMORY.md")
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (1234, 2345, 0o640)
    version = cli("history", "MEMORY.md", "--json").json()["versions"][-1]["version"]
    assert cli("restore", "MEMORY.md", version, "--no-index").returncode == 0
    st = os.stat(workspace / "MEMORY.md")
    assert (st.st_uid, st.st_gid) == (1234, 2345)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_new_note_and_its_folders_made_by_root_are_the_folders_owners(base):
    """Root's MCP server or CLI in a user's workspace made a new note (and the folders for it) root's:
    the user's own agent was then refused appending to their daily note, "read-only (owned by uid 0)"."""
    import dataclasses

    from conftest import NOBODY, as_nobody, env_for, run_in_process

    ws, state, user_state = base / "ws", base / "state", base / "user-state"
    ws.mkdir()
    os.chown(ws, NOBODY, NOBODY + 1)
    for args in (("write", TODAY, "--append", "root wrote this"),
                 ("write", "memory/projects/roof.md", "--stdin")):
        done = run_in_process((*args, "--no-index"), input="# Roof\n", env=env_for(ws, state), cwd=base)
        assert done.returncode == 0, done.stderr
    for made in ("memory", TODAY, "memory/projects", "memory/projects/roof.md"):
        st = os.stat(ws / made)
        assert (st.st_uid, st.st_gid) == (NOBODY, NOBODY + 1), made
    user_state.mkdir(mode=0o700)
    os.chown(user_state, NOBODY, NOBODY)
    appended = as_nobody(lambda: [dataclasses.asdict(run_in_process(args, env=env_for(ws, user_state), cwd=ws)) for args in (
        ("read", TODAY), ("write", TODAY, "--append", "the user wrote this", "--no-index"))][-1])
    assert appended["returncode"] == 0, appended
    assert (ws / TODAY).read_text() == "root wrote this\nthe user wrote this\n"
    from openclaw_memory.fsutil.atomic import atomic_write_bytes  # (doctor's new MEMORY.md: made through its folder)

    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        atomic_write_bytes("MEMORY.md", b"# Memory\n", dir_fd=fd)
    finally:
        os.close(fd)
    assert (os.stat(ws / "MEMORY.md").st_uid, os.stat(ws / "MEMORY.md").st_gid) == (NOBODY, NOBODY + 1)
    atomic_write_bytes(ws / "by-path.json", b"{}", 0o600)  # a state file, written by path: root's, as before
    assert os.stat(ws / "by-path.json").st_uid == 0
    os.chown(ws / "memory", 0, 0)  # in root's own folder, root's as before
    done = run_in_process(("write", "memory/root/x.md", "--append", "x", "--no-index"), env=env_for(ws, state), cwd=base)
    assert done.returncode == 0 and os.stat(ws / "memory/root").st_uid == os.stat(ws / "memory/root/x.md").st_uid == 0


def test_exactly_one_source_of_content(cli, workspace, tmp_path):
    assert cli("write", "MEMORY.md").returncode == 2
    both = cli("write", "MEMORY.md", "--append", "x", "--stdin", "--json", input="y")
    assert both.returncode == 2 and "exactly one" in both.json()["error"]
    assert cli("write", "MEMORY.md", "--replace-file", str(tmp_path / "absent.txt")).returncode == 2


def test_replace_file_and_stdin_write_exact_bytes(cli, workspace, state_dir, tmp_path):
    payload = b"caf\xc3\xa9\r\nno final newline"
    write(tmp_path / "new.bin", payload)
    assert cli("write", "memory/a.md", "--replace-file", str(tmp_path / "new.bin")).returncode == 0
    assert (workspace / "memory/a.md").read_bytes() == payload
    res = subprocess.run(
        [sys.executable, "-m", "openclaw_memory", "write", "memory/b.md", "--stdin"],
        input=payload, capture_output=True, env=env_for(workspace, state_dir),
    )
    assert res.returncode == 0 and (workspace / "memory/b.md").read_bytes() == payload


def test_append_puts_the_text_on_its_own_line(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    write(workspace / "memory/a.md", "no newline at end")
    LocalMemory(s).read("memory/a.md")
    LocalMemory(s).write("memory/a.md", append="next")
    LocalMemory(s).write("memory/a.md", append="last\n")
    assert (workspace / "memory/a.md").read_text() == "no newline at end\nnext\nlast\n"


def test_append_keeps_the_notes_own_line_ending(cli, workspace, state_dir):
    """An append to a CRLF note added an LF line (`- two\r\n- three\n`), and "\n" was the separator
    of a CRLF note without a final line break: it uses the note's last line ending, for the
    separator, the text's own line breaks and its end; an LF note's stays LF, a CR-only note's CR."""
    s = settings_for(workspace, state_dir)
    cases = {
        "memory/win.md": (b"- one\r\n- two\r\n", "- three", b"- one\r\n- two\r\n- three\r\n"),
        "memory/open.md": (b"- one\r\n- two", "- three\n- four", b"- one\r\n- two\r\n- three\r\n- four\r\n"),
        "memory/kept.md": (b"- one\r\n", "- two\r\n- three\n", b"- one\r\n- two\r\n- three\r\n"),
        "memory/mixed.md": (b"- one\r\n- two\n", "- three\n- four", b"- one\r\n- two\n- three\n- four\n"),
        "memory/unix.md": (b"- one", "- two", b"- one\n- two\n"),
        # A CR-only note (classic Mac OS) appends with a lone CR: its last ending became CRLF, an LF line added.
        "memory/mac.md": (b"a\rb\r", "c", b"a\rb\rc\r"),
        "memory/mac-open.md": (b"a\rb", "c\r\nd\ne", b"a\rb\rc\rd\re\r"),
        "memory/to-mac.md": (b"a\r\nb\r", "c", b"a\r\nb\rc\r"),
        "memory/from-mac.md": (b"a\rb\n", "c", b"a\rb\nc\n"),
    }
    for path, (before, added, after) in cases.items():
        write(workspace / path, before)
        LocalMemory(s).read(path)
        LocalMemory(s).write(path, append=added)
        assert (workspace / path).read_bytes() == after, path
    assert cli("write", "memory/win.md", "--append", "- cli").returncode == 0
    assert (workspace / "memory/win.md").read_bytes().endswith(b"- three\r\n- cli\r\n")


def test_an_appends_line_breaks_all_take_the_notes_ending_in_an_lf_note_too(cli, workspace, state_dir):
    """In an LF note the text's CRLF and CR were appended as they came (`one\ntwo\r\nthree\n`), and a
    text ending in a lone CR ended the note in CRLF (`one\ntwo\r\n`), every later append with it:
    each of the text's `\r\n`, `\r` and `\n` is the note's own ending. A note with no line break yet
    takes the text's first."""
    s = settings_for(workspace, state_dir)
    cases = {
        "memory/lf.md": (b"one\n", "two\r\nthree", b"one\ntwo\nthree\n"),
        "memory/lf-cr.md": (b"one\n", "two\r", b"one\ntwo\n"),
        "memory/lf-mixed.md": (b"one\n", "two\rthree\r\nfour\n", b"one\ntwo\nthree\nfour\n"),
        "memory/crlf-cr.md": (b"one\r\n", "two\rthree", b"one\r\ntwo\r\nthree\r\n"),
        "memory/cr-crlf.md": (b"one\r", "two\r\n\r\nthree", b"one\rtwo\r\rthree\r"),
        "memory/empty.md": (b"", "two\r\nthree", b"two\r\nthree\r\n"),
        "memory/unended.md": (b"one", "two\r\nthree", b"one\r\ntwo\r\nthree\r\n"),
    }
    for path, (before, added, after) in cases.items():
        write(workspace / path, before)
        LocalMemory(s).read(path)
        LocalMemory(s).write(path, append=added)
        assert (workspace / path).read_bytes() == after, path
    LocalMemory(s).write("memory/lf-cr.md", append="three")  # the note stays LF
    assert (workspace / "memory/lf-cr.md").read_bytes() == b"one\ntwo\nthree\n"
    LocalMemory(s).write("memory/new.md", append="a\rb")  # a new note: the text's own
    assert (workspace / "memory/new.md").read_bytes() == b"a\rb\r"
    assert cli("write", "memory/lf.md", "--append", "four\r\nfive\r").returncode == 0
    assert (workspace / "memory/lf.md").read_bytes() == b"one\ntwo\nthree\nfour\nfive\n"


def test_write_is_atomic_replace_keeping_permissions(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    path = write(workspace / "MEMORY.md", "old\n")
    os.chmod(path, 0o600)
    before = os.stat(path)
    with open(path, "rb") as reader:  # a reader holding the old file keeps seeing the old bytes
        LocalMemory(s).read("MEMORY.md")
        LocalMemory(s).write("MEMORY.md", content="new\n")
        assert reader.read() == b"old\n"
    after = os.stat(path)
    assert after.st_ino != before.st_ino, "the file was rewritten in place, not replaced"
    assert after.st_mode & 0o777 == 0o600
    assert path.read_text() == "new\n"
    assert sorted(os.listdir(workspace)) == ["MEMORY.md"], "a temp file was left behind"


def _spawn_write(workspace, state_dir, agent, *args, stdin=None):
    return subprocess.Popen(
        [sys.executable, "-m", "openclaw_memory", "--agent", agent, "write", *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(workspace, state_dir),
    )


def _waiting_on(pid: int, lock_path: str) -> bool:
    """The process has the lock file open and sleeps: its lock's only sleep is between two tries."""
    target = os.path.realpath(lock_path)
    try:
        opened = any(os.readlink(f"/proc/{pid}/fd/{fd}") == target for fd in os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rpartition(")")[2].split()[0]
    except OSError:  # gone, or an fd closed while we looked
        return False
    return opened and state == "S"


def test_concurrent_appends_are_serialized_and_none_is_lost(workspace, state_dir):
    write(workspace / TODAY, "# Log\n")
    agents = [f"agent{i}" for i in range(6)]
    for agent in agents:
        LocalMemory(settings_for(workspace, state_dir, agent=agent)).read(TODAY)
    procs = [_spawn_write(workspace, state_dir, agent, TODAY, "--append", f"- entry from {agent}") for agent in agents]
    results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in procs]
    assert all(code == 0 for code, _ in results), results
    lines = (workspace / TODAY).read_text().splitlines()
    assert lines[0] == "# Log" and sorted(lines[1:]) == sorted(f"- entry from {a}" for a in agents)


def test_concurrent_replacements_of_one_read_version_let_exactly_one_through(workspace, state_dir):
    write(workspace / "MEMORY.md", "base\n")
    agents = [f"agent{i}" for i in range(4)]
    for agent in agents:
        LocalMemory(settings_for(workspace, state_dir, agent=agent)).read("MEMORY.md")
    procs = [_spawn_write(workspace, state_dir, a, "MEMORY.md", "--stdin", stdin=True) for a in agents]
    for agent, p in zip(agents, procs):
        p.stdin.write(f"rewritten by {agent}\n".encode())
        p.stdin.close()
    codes = [p.wait(timeout=120) for p in procs]
    assert sorted(codes) == [0, 3, 3, 3], codes
    winner = agents[codes.index(0)]
    assert (workspace / "MEMORY.md").read_text() == f"rewritten by {winner}\n"


def test_state_json_shows_all_four_states_and_deleted_files(cli, workspace):
    write(workspace / "MEMORY.md", "fresh\n")
    write(workspace / "memory/stale.md", "old\n")
    write(workspace / "memory/unread.md", "never read\n")
    write(workspace / "memory/deleted.md", "soon gone\n")
    for path in ("MEMORY.md", "memory/stale.md", "memory/deleted.md"):
        assert cli("read", path).returncode == 0
    assert cli("write", "memory/written.md", "--append", "by the agent").returncode == 0
    write(workspace / "memory/stale.md", "changed outside\n")
    os.unlink(workspace / "memory/deleted.md")
    got = states(cli)
    assert {p: f["state"] for p, f in got.items()} == {
        "MEMORY.md": "read_fresh",
        "memory/stale.md": "read_stale",
        "memory/unread.md": "discovered_unread",
        "memory/written.md": "written_unread",
        "memory/deleted.md": "read_stale",
    }
    assert got["memory/deleted.md"]["exists"] is False and got["memory/deleted.md"]["version"] is None
    assert got["memory/stale.md"]["seenVersion"] == version_of(b"old\n")
    assert got["memory/stale.md"]["version"] == version_of(b"changed outside\n")
    assert got["memory/written.md"]["seenAs"] == "write"
    # States belong to an agent: another agent has read nothing.
    assert {f["state"] for f in states(cli, "--agent", "other").values()} == {"discovered_unread"}
    plain = cli("state")
    assert plain.returncode == 0 and "read_stale" in plain.stdout and "memory/unread.md" in plain.stdout


def test_read_json_keeps_openclaw_keys_and_a_paged_read_records_the_whole_file(cli, workspace):
    body = "".join(f"line {i}\n" for i in range(1, 301)).encode()
    write(workspace / "MEMORY.md", body)
    out = cli("read", "MEMORY.md", "--json", "--from", "5", "--lines", "2").json()
    assert set(out) == {"status", "text", "path", "from", "lines", "truncated", "nextFrom", "version"}
    assert out["version"] == version_of(body)
    assert states(cli)["MEMORY.md"]["seenVersion"] == version_of(body)


def test_write_reports_no_index_and_no_index_flag(cli, workspace):
    out = cli("write", "memory/a.md", "--append", "x", "--json").json()
    assert out["index"] == {"updated": False, "reason": "no index for agent main", "failed": False, "sync": None}
    out = cli("write", "memory/a.md", "--append", "y", "--json", "--no-index").json()
    assert out["index"] == {"updated": False, "reason": "skipped (--no-index)", "failed": False, "sync": None}


def test_api_errors_are_typed(workspace, state_dir):
    s = settings_for(workspace, state_dir)
    with pytest.raises(UsageError):
        LocalMemory(s).write("memory/a.md")
    with pytest.raises(PathRefused):
        LocalMemory(s).write("README.md", content="x")


def test_a_writer_waits_for_the_lock_held_by_another_process(workspace, state_dir):
    from openclaw_memory.fsutil.lock import FileLock
    from openclaw_memory.history.store import HistoryStore

    s = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "base\n")
    LocalMemory(s).read("MEMORY.md")
    lock = FileLock(HistoryStore.for_settings(s).write_lock_path)
    lock.acquire()
    try:
        proc = _spawn_write(workspace, state_dir, "main", "MEMORY.md", "--append", "after the lock")
        wait_for(lambda: proc.poll() is not None or _waiting_on(proc.pid, lock.path), timeout=120)
        assert proc.poll() is None, "the writer did not wait for the lock"
        assert (workspace / "MEMORY.md").read_text() == "base\n"
    finally:
        lock.release()
    assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    assert (workspace / "MEMORY.md").read_text() == "base\nafter the lock\n"


def test_a_write_updates_an_existing_index_and_no_index_skips_it(workspace, state_dir):
    from openclaw_memory.index.api import MemoryIndex

    s = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", "# Memory\n\nThe boat is moored at pier seven.\n")
    with MemoryIndex(s) as index:
        index.sync()
    LocalMemory(s).read("MEMORY.md")
    result = LocalMemory(s).write("MEMORY.md", append="The spare key is under the zucchiniflowerpot.")
    assert result.index.updated is True and result.index.sync.chunks_embedded >= 1
    with MemoryIndex(s) as index:
        assert index.status().stale == []
        hits = index.search("zucchiniflowerpot", mode="text", sync=False, min_score=0.0).results
        assert hits and hits[0].path == "MEMORY.md"
    LocalMemory(s).write("MEMORY.md", append="Unindexed line.", update_index=False)
    with MemoryIndex(s) as index:
        assert index.status().stale == ["MEMORY.md"]


def test_append_text_that_is_not_utf8_or_empty(workspace, state_dir):
    env = env_for(workspace, state_dir)  # a real process: argv bytes that are not UTF-8
    run = [sys.executable, "-m", "openclaw_memory", "write", "memory/raw.md", "--append"]
    res = subprocess.run(run + [b"caf\xe9 latin-1"], env=env, capture_output=True)  # (it wrote the raw byte)
    assert res.returncode == 2 and b"holds a byte that is not UTF-8 (0xE9) at byte 3" in res.stderr, res.stderr
    assert not (workspace / "memory/raw.md").exists()
    empty = subprocess.run(run + [""], env=env, capture_output=True)
    assert empty.returncode == 2 and b"nothing to append" in empty.stderr


def test_a_write_indexes_its_file_alone_and_says_so_when_the_update_must_cover_more(workspace, state_dir, cli):
    """A write's index update syncs the file written, whatever else is stale (the next `index` or
    search finds the rest); where it must run the whole sync (a crash left the index to reconcile)
    and that covers other files, it says so and shows progress."""
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    assert cli("index").returncode == 0
    for i in range(400):  # edited while no watch or service kept the index up to date
        write(workspace / "memory" / f"2026-01-{i:03}.md", f"# Note {i}\n\nThe note number {i} about the garden.\n")
    assert cli("read", "MEMORY.md").returncode == 0
    alone = cli("write", "MEMORY.md", "--append", "- and oolong", "--json")
    assert alone.returncode == 0, alone.stderr
    assert alone.json()["index"]["sync"]["filesChanged"] == 1 and "bringing" not in alone.stderr
    from openclaw_memory.index.collections import resolve_collections
    from openclaw_memory.index.manifest import mark_dirty

    settings = settings_for(workspace, state_dir)
    for c in resolve_collections(settings):
        mark_dirty(settings.data_dir, c.name)
    done = cli("write", "MEMORY.md", "--append", "- and sencha")
    assert done.returncode == 0, done.stderr
    assert "bringing the agent's index up to date" in done.stderr
    assert "read 401/401 files" in done.stderr or "embedded" in done.stderr


def test_a_killed_writes_temp_files_go_at_the_next_write_of_the_file(workspace, state_dir):
    write(workspace / "memory" / "k.md", "# K\n")
    folder = workspace / "memory"
    held, old, fresh = folder / ".k.md.0123abcd.tmp", folder / ".k.md.4567abcd.tmp", folder / ".k.md.89abcdef.tmp"
    other, doctors = folder / ".other.md.0123abcd.tmp", folder / ".k.md.migrate-0123abcd.tmp"
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read("memory/k.md")  # "# K\n" is in the history: a write killed before its rename stored it
    held.write_bytes(b"# K\n")
    for leftover in (old, fresh, other, doctors):
        leftover.write_bytes(leftover.name.encode() + b" half of a write" * 1000)
    hour_ago = time.time() - 3600
    for aged in (old, other, doctors):
        os.utime(aged, (hour_ago, hour_ago))
    memory.write("memory/k.md", append="- more")
    assert not held.exists()  # this file's, its bytes in the history: removed as those bytes
    # Bytes the history lacks are no version of the note, and not removed (doctor --fix sets an old one aside).
    assert old.exists() and version_of(old.read_bytes()) not in [v.version for v in memory.history("memory/k.md").versions]
    assert fresh.exists() and other.exists() and doctors.exists()  # too new, another file's, not a write's
    assert (folder / "k.md").read_text() == "# K\n- more\n"


def test_a_version_a_killed_write_displaced_is_recorded_before_its_swap_file_goes(workspace, state_dir):
    """A write killed between its exchange and the check of what it took off the file leaves that
    version in ``.NAME.<hex>.swp``: the next write records it in the history, then removes it."""
    write(workspace / "memory" / "k.md", "# K\n")
    folder = workspace / "memory"
    displaced, stored = folder / ".k.md.0123abcd.swp", folder / ".k.md.89abcdef.swp"
    displaced.write_bytes(b"# K\nsaved in an editor at the wrong moment\n")
    stored.write_bytes(b"# K\n")  # the version the file holds: in the history once read
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read("memory/k.md")
    memory.write("memory/k.md", append="- more")
    assert not displaced.exists() and not stored.exists()
    kept = [v.version for v in memory.history("memory/k.md").versions]
    assert version_of(b"# K\nsaved in an editor at the wrong moment\n") in kept
    assert (folder / "k.md").read_text() == "# K\n- more\n"


def test_a_note_made_read_only_is_not_written(cli, workspace):
    """chmod a-w by its owner: the write replaced it anyway (a rename, which only the folder's mode
    governs), where an editor asks first and OpenClaw's own write is refused (EACCES)."""
    note = workspace / "memory" / "kept.md"
    write(note, "# Kept\n")
    note.chmod(0o444)
    assert cli("read", "memory/kept.md").returncode == 0
    refused = cli("write", "memory/kept.md", "--append", "- more", "--json")
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"] == ("refused: memory/kept.md is read-only (mode 444); nothing was written "
                                       "(`chmod u+w` it to let writes through)")
    assert note.read_text() == "# Kept\n" and oct(note.stat().st_mode & 0o777) == "0o444"
    note.chmod(0o544)  # chmod u-w alone
    assert "is read-only (mode 544)" in cli("write", "memory/kept.md", "--append", "- more").stderr
    note.chmod(0o644)
    assert cli("write", "memory/kept.md", "--append", "- more").returncode == 0
    assert note.read_text() == "# Kept\n- more\n"


def _mode(path) -> str:
    return oct(path.stat().st_mode & 0o777)


def test_a_read_only_note_is_not_restored_over(cli, workspace):
    """`restore` replaced a note its owner made read-only as `write` did (a rename); refused as `write` is."""
    note = workspace / "memory" / "kept.md"
    write(note, "# Kept\n")
    assert cli("read", "memory/kept.md").returncode == 0
    assert cli("write", "memory/kept.md", "--append", "- more", "--no-index").returncode == 0
    first = version_of(b"# Kept\n")
    note.chmod(0o444)
    refused = cli("restore", "memory/kept.md", first, "--json")
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"] == ("refused: memory/kept.md is read-only (mode 444); nothing was restored "
                                       "(`chmod u+w` it to let writes through)")
    assert note.read_text() == "# Kept\n- more\n" and _mode(note) == "0o444"
    note.chmod(0o644)
    assert cli("restore", "memory/kept.md", first).returncode == 0
    assert note.read_text() == "# Kept\n"


def test_a_read_only_note_is_neither_removed_nor_replaced_by_a_forced_move(cli, workspace):
    """`rm` (even `--force`, which is for the startup files) and `mv --force` onto it removed a note
    its owner made read-only without a word, where the shell's `rm` asks first. Moving it elsewhere
    keeps its bytes and its mode: allowed, as `mv` allows it."""
    kept, other = workspace / "memory" / "kept.md", workspace / "memory" / "other.md"
    write(kept, "# Kept\n")
    write(other, "# Other\n")
    for rel in ("memory/kept.md", "memory/other.md"):
        assert cli("read", rel).returncode == 0
    kept.chmod(0o544)
    for args in (("rm", "memory/kept.md"), ("rm", "memory/kept.md", "--force")):
        refused = cli(*args, "--json")
        assert refused.returncode == 2, refused.stdout
        assert refused.json()["error"] == ("refused: memory/kept.md is read-only (mode 544); nothing was removed "
                                           "(`chmod u+w` it to let writes through)")
    moved = cli("mv", "memory/other.md", "memory/kept.md", "--force", "--json")
    assert moved.returncode == 2, moved.stdout
    assert moved.json()["error"] == ("refused: memory/kept.md is read-only (mode 544); nothing was moved "
                                     "(`chmod u+w` it to let writes through)")
    assert kept.read_text() == "# Kept\n" and _mode(kept) == "0o544" and other.read_text() == "# Other\n"
    assert [v["origin"] for v in cli("history", "memory/kept.md", "--json").json()["versions"]] == ["external-edit"]
    assert cli("mv", "memory/kept.md", "memory/moved.md").returncode == 0
    assert (workspace / "memory" / "moved.md").read_text() == "# Kept\n"
    assert _mode(workspace / "memory" / "moved.md") == "0o544"
    (workspace / "memory" / "moved.md").chmod(0o644)
    assert cli("rm", "memory/moved.md").returncode == 0


def _three_notes_changed_since(cli, workspace) -> dict[str, str]:
    notes = {name: f"# {name}\n" for name in ("a", "b", "c")}
    for name, text in notes.items():
        write(workspace / "memory" / f"{name}.md", text)
        assert cli("read", f"memory/{name}.md").returncode == 0
    assert cli("watchdog", "snapshot", "before").returncode == 0
    for name in notes:
        assert cli("write", f"memory/{name}.md", "--append", "- since", "--no-index").returncode == 0
    return {name: f"# {name}\n- since\n" for name in notes}


def test_a_rollback_over_read_only_notes_is_refused_whole_naming_each(cli, workspace, state_dir):
    """The rollback replaced them as `restore` did; refused at the first step it would have stopped
    half made, so every read-only note is named before anything changes."""
    from openclaw_memory.rollback.journal import read_intent

    now = _three_notes_changed_since(cli, workspace)
    (workspace / "memory" / "a.md").chmod(0o444)
    (workspace / "memory" / "c.md").chmod(0o544)
    dry = cli("rollback", "--to", "before", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert {f["path"]: f.get("readOnly", False) for f in dry.json()["files"]} == {
        "memory/a.md": True, "memory/b.md": False, "memory/c.md": True}
    assert "(read-only: refuses the rollback until `chmod u+w`)" in cli("rollback", "--to", "before", "--dry-run").stdout
    refused = cli("rollback", "--to", "before", "--force", "--json")
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"] == ("refused: memory/a.md (mode 444) and memory/c.md (mode 544) are read-only; "
                                       "nothing was rolled back (`chmod u+w` them to let writes through)")
    assert {name: (workspace / "memory" / f"{name}.md").read_text() for name in now} == now
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None
    (workspace / "memory" / "a.md").chmod(0o644)
    (workspace / "memory" / "c.md").chmod(0o644)
    assert cli("rollback", "--to", "before", "--force").returncode == 0
    assert (workspace / "memory" / "b.md").read_text() == "# b\n"


def test_a_note_made_read_only_after_a_rollback_was_planned_is_left_and_named(cli, workspace, state_dir):
    """chmod takes no lock: a note made read-only between a killed rollback's plan and its finish is
    left as it is and named, as a note changed meanwhile is (the finish replaced it)."""
    from test_rollback import run_killed

    now = _three_notes_changed_since(cli, workspace)
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "before", "--force")
    (workspace / "memory" / "b.md").chmod(0o444)
    fixed = cli("doctor", "--fix", "--json")
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
    assert repair["status"] == "completed", repair
    assert "except: memory/b.md (made read-only since: `chmod u+w` it, then roll back again; left as it is)" in repair["detail"]
    assert (workspace / "memory" / "b.md").read_text() == now["b"] and _mode(workspace / "memory" / "b.md") == "0o444"
    assert (workspace / "memory" / "a.md").read_text() == "# a\n" and (workspace / "memory" / "c.md").read_text() == "# c\n"


def test_doctor_does_not_merge_into_a_read_only_memory_md(cli, workspace, state_dir):
    """The split-root merge rewrote MEMORY.md whatever its mode; plain doctor called it "fixable
    with --fix" and --fix then refused. Now the check says chmod first, and the merge itself checks
    again, on the file it read, before it writes (made read-only meanwhile: refused, nothing changed)."""
    write(workspace / "MEMORY.md", "# Memory\n- kept as it is\n")
    write(workspace / "memory.md", "- a legacy line\n")
    (workspace / "MEMORY.md").chmod(0o444)
    plain = cli("doctor")
    assert "(fixable with --fix)" not in plain.stdout
    assert ("MEMORY.md is read-only (mode 444), so doctor --fix will not merge memory.md into it: let writes through "
            "first (`chmod u+w MEMORY.md`, by its owner)") in plain.stdout
    fixed = cli("doctor", "--fix", "--json")
    assert fixed.returncode == 1 and fixed.json()["repairs"] == [], fixed.stdout
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n- kept as it is\n"
    assert (workspace / "memory.md").read_text() == "- a legacy line\n"
    (workspace / "MEMORY.md").chmod(0o644)
    code, out, err = run_paused(workspace, state_dir, ("doctor", "--fix", "--json"), "merge:write-canonical",
                                lambda: (workspace / "MEMORY.md").chmod(0o444))
    (repair,) = json.loads(out)["repairs"]
    assert (repair["id"], repair["status"]) == ("split-root", "failed"), (code, out, err)
    assert repair["detail"] == ("refused: MEMORY.md is read-only (mode 444); nothing was changed "
                                "(`chmod u+w` it to let writes through)")
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n- kept as it is\n"
    assert (workspace / "memory.md").read_text() == "- a legacy line\n"
    assert not any((workspace / ".openclaw-repair").rglob("*.md"))
    (workspace / "MEMORY.md").chmod(0o644)
    assert cli("doctor", "--fix").returncode == 0
    assert "- a legacy line" in (workspace / "MEMORY.md").read_text()


def test_an_import_with_force_over_a_read_only_note_is_refused(cli, workspace, tmp_path):
    note = workspace / "memory" / "kept.md"
    write(note, "# Kept\n")
    archive = tmp_path / "memory.tar.gz"
    assert cli("export", str(archive)).returncode == 0
    assert cli("read", "memory/kept.md").returncode == 0
    assert cli("write", "memory/kept.md", "--append", "- since", "--no-index").returncode == 0
    note.chmod(0o444)
    refused = cli("import", str(archive), "--force", "--json")
    assert refused.returncode == 2, refused.stdout
    assert refused.json()["error"] == ("refused: memory/kept.md is read-only (mode 444); nothing was written "
                                       "(`chmod u+w` it to let writes through)")
    assert note.read_text() == "# Kept\n- since\n"
    assert cli("doctor").returncode == 0  # no interrupted import left behind
    note.chmod(0o644)
    assert cli("import", str(archive), "--force").returncode == 0
    assert note.read_text() == "# Kept\n"


def test_a_replace_of_a_note_no_history_can_keep_is_refused_even_with_replace_unread(cli, workspace, state_dir):
    """One version may take an eighth of [history] max_bytes: `rm`, `mv --force`, `restore` and `rollback`
    refuse to replace a note past it. `write --replace-unread` replaced it, right after the refusal before it
    had said "the history keeps every version", and its bytes were gone for good."""
    write(state_dir / "openclaw-memory.toml", "[history]\nmax_bytes = 80000\n")
    big = "".join(f"{n}\n" for n in range(1, 5001))  # 23,893 bytes, past 10,000
    write(workspace / "memory" / "big.md", big)
    assert cli("read", "memory/big.md").returncode == 0
    for flags in ((), ("--replace-unread",)):
        done = cli("write", "memory/big.md", "--stdin", *flags, input="tiny\n")
        assert done.returncode == 1, done.stderr
        assert "memory/big.md cannot be kept in the history before it is replaced (23893 bytes" in done.stderr
        assert "nothing was written; append to it, split it, or raise [history] max_bytes" in done.stderr
    assert (workspace / "memory" / "big.md").read_text() == big
    assert cli("write", "memory/big.md", "--append", "- still appends").returncode == 0
    assert (workspace / "memory" / "big.md").read_text() == big + "- still appends\n"


def test_a_write_of_the_content_a_note_holds_writes_nothing_and_logs_nothing(cli, workspace):
    """"unchanged: nothing written" replaced the note by a copy of itself (a new inode: a hard link and
    an editor's watch saw a change) and logged a second agent-write of the same version."""
    write(workspace / "memory" / "a.md", "one\n")
    (workspace / "v2").write_text("two\n")
    for _ in range(2):
        assert cli("read", "memory/a.md").returncode == 0
        done = cli("write", "memory/a.md", "--replace-file", str(workspace / "v2"), "--no-index")
        assert done.returncode == 0, done.stderr
        inode = os.stat(workspace / "memory" / "a.md").st_ino
    assert done.stdout.startswith("unchanged: nothing written to memory/a.md")
    assert os.stat(workspace / "memory" / "a.md").st_ino == inode
    versions = cli("history", "memory/a.md", "--json").json()["versions"]
    assert [v["origin"] for v in versions] == ["agent-write", "external-edit"], versions
    (workspace / "v3").write_text("three\n")  # the session's record holds: its next write goes through
    assert cli("write", "memory/a.md", "--replace-file", str(workspace / "v3"), "--no-index").returncode == 0


def _bits(path) -> int:
    return os.stat(path).st_mode & 0o777


@pytest.mark.parametrize("step", ["write:key-recorded", "write:checked"])
def test_a_chmod_made_while_a_write_runs_is_kept_and_never_undone(cli, workspace, state_dir, step):
    """A `chmod 600` made while a write ran was undone: the new file (the new text with it) got the
    mode copied at the write's start, 0644, readable by every user. Now the write sees it as it sees
    an editor's save: nothing written, blocked (exit 3), the note still 0600; written again, it stays 0600."""
    note = write(workspace / "memory" / "d.md", "hello\n")
    os.chmod(note, 0o644)
    assert cli("read", "memory/d.md").returncode == 0
    code, _out, err = run_paused(workspace, state_dir, ("write", "memory/d.md", "--append", "bank PIN 5555", "--no-index"),
                                 step, lambda: os.chmod(note, 0o600))
    assert code == 3 and "memory/d.md changed while it was being written; nothing was written" in err, err
    assert (_bits(note), note.read_text()) == (0o600, "hello\n")
    assert cli("write", "memory/d.md", "--append", "bank PIN 5555", "--no-index").returncode == 0
    assert (_bits(note), note.read_text()) == (0o600, "hello\nbank PIN 5555\n")
    assert [p.name for p in note.parent.iterdir()] == ["d.md"]  # no temp or swap file left


def test_a_chmod_made_while_a_daily_note_append_runs_is_kept_and_the_append_tried_again(workspace, state_dir, monkeypatch):
    """A daily-note append, tried again after a save made meanwhile, is tried again after a chmod too: made, at 0600."""
    from openclaw_memory import faults

    note = write(workspace / TODAY, "# Today\n")
    os.chmod(note, 0o644)
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read(TODAY)
    real, reached = faults.reach, []

    def chmod_at_the_first(step):  # the fault hook's pause, acted on in this process
        if step == "write:key-recorded" and step not in reached:
            os.chmod(note, 0o600)
        reached.append(step)
        return real(step)

    monkeypatch.setattr(faults, "reach", chmod_at_the_first)
    memory.write(TODAY, append="- private", update_index=False)
    assert reached.count("write:key-recorded") == 2  # raced once, then made
    assert (_bits(note), note.read_text()) == (0o600, "# Today\n- private\n")


def test_a_chmod_made_while_a_restore_runs_is_kept(cli, workspace, state_dir):
    """restore exchanges its version in as a write does: a chmod 600 made meanwhile was undone (0644)."""
    note = write(workspace / "memory" / "d.md", "secret one\n")
    os.chmod(note, 0o644)
    assert cli("read", "memory/d.md").returncode == 0
    first = version_of(b"secret one\n")
    assert cli("write", "memory/d.md", "--append", "two", "--no-index").returncode == 0
    code, _out, err = run_paused(workspace, state_dir, ("restore", "memory/d.md", first, "--no-index"), "write:checked",
                                 lambda: os.chmod(note, 0o600))
    assert code == 3 and "changed while it was being restored" in err, err
    assert (_bits(note), note.read_text()) == (0o600, "secret one\ntwo\n")
    assert cli("restore", "memory/d.md", first, "--no-index").returncode == 0
    assert (_bits(note), note.read_text()) == (0o600, "secret one\n")


def test_a_chmod_in_the_instant_before_the_exchange_is_undone_with_the_exchange(workspace, state_dir, monkeypatch):
    """The mode is checked before the exchange and again on what the exchange took off: a chmod
    landing between the two (here, just before the kernel's exchange) puts the note back, 0600."""
    from openclaw_memory.history import swap

    note = write(workspace / "memory" / "d.md", "hello\n")
    os.chmod(note, 0o644)
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read("memory/d.md")
    real = swap.exchange
    calls = []

    def chmod_first(dir_fd, a, b):
        if not calls:
            os.chmod(note, 0o600)
        calls.append(b)
        return real(dir_fd, a, b)

    monkeypatch.setattr(swap, "exchange", chmod_first)
    with pytest.raises(WriteBlocked, match="changed while it was being written"):
        memory.write("memory/d.md", append="bank PIN 5555", update_index=False)
    assert len(calls) == 2  # exchanged, then undone
    assert (_bits(note), note.read_text()) == (0o600, "hello\n")
    assert [p.name for p in note.parent.iterdir()] == ["d.md"]


def test_a_write_or_restore_of_a_hard_linked_note_says_its_other_name_keeps_the_old_text(cli, workspace):
    """A write replaces the file (never in place), so a note's second hard link keeps the text it had:
    the link was split with no word. Now the write goes on and says so, on stderr and in --json."""
    h1 = write(workspace / "memory" / "h1.md", "shared\n")
    os.link(h1, workspace / "memory" / "h2.md")
    said = "memory/h2.md had 2 hard links: the other name(s) keep the text it had (a write replaces the file)"
    assert cli("read", "memory/h2.md").returncode == 0
    done = cli("write", "--append", "more", "memory/h2.md", "--no-index")
    assert done.returncode == 0 and said in done.stderr, done.stderr
    assert (h1.read_text(), (workspace / "memory" / "h2.md").read_text()) == ("shared\n", "shared\nmore\n")
    again = cli("write", "--append", "again", "memory/h2.md", "--no-index", "--json")  # one name now: nothing said
    assert again.returncode == 0 and "hard link" not in again.stderr and "warnings" not in again.json(), again.stderr
    os.link(workspace / "memory" / "h2.md", workspace / "memory" / "h3.md")
    os.link(workspace / "memory" / "h2.md", workspace / "memory" / "h4.md")
    restored = cli("restore", "memory/h2.md", again.json()["previousVersion"], "--no-index", "--json")
    assert restored.returncode == 0, restored.stderr
    assert restored.json()["warnings"] == [
        "memory/h2.md had 3 hard links: the other name(s) keep the text it had (a restore replaces the file)"]
    assert (workspace / "memory" / "h3.md").read_text() == "shared\nmore\nagain\n"


def test_a_hard_linked_note_replaced_by_a_rename_is_said_too(workspace, state_dir, monkeypatch):
    """Where the file system cannot exchange, the rename replaces the file the swap checked: its links are counted."""
    from openclaw_memory.history import swap

    h1 = write(workspace / "memory" / "h1.md", "shared\n")
    os.link(h1, workspace / "memory" / "h2.md")
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read("memory/h2.md")
    monkeypatch.setattr(swap, "exchange", lambda dir_fd, a, b: None)  # (what one that cannot answers)
    done = memory.write("memory/h2.md", append="more", update_index=False)
    assert done.warnings == (
        "memory/h2.md had 2 hard links: the other name(s) keep the text it had (a write replaces the file)",)
    assert (h1.read_text(), os.stat(h1).st_nlink) == ("shared\n", 1)
