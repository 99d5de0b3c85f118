"""What a write killed at the wrong instant leaves beside the file, found by plain doctor and swept
by ``doctor --fix``: a ``.swp`` holding what the exchange displaced (a save an editor made in that
instant included: logged in the history first), a ``.tmp`` whose bytes the history holds. Before,
only the next write of that same file swept them, and doctor said nothing: a note nobody wrote again
kept them, and a save held only in a ``.swp`` never reached the history."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest
import xxhash

from conftest import env_for, fault, settings_for, wait_for, wait_for_line, write
from openclaw_memory.memory.local import LocalMemory

HERON = "# Heron\n\nThe heron project keeps lighthouse keepers on the northern cape.\n"
SAVED = HERON + "\nA line the person saved in the editor at that instant.\n"


def leftovers(workspace) -> list[str]:
    return sorted(n for n in os.listdir(workspace / "memory") if n.endswith((".tmp", ".swp")))


def killed_write(workspace, state_dir, *steps: str, between=None, path: str = "memory/a.md") -> None:
    """``write --append`` of ``path`` with ``steps`` faults; ``between(process)`` runs at a pause."""
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "write", path, "--append", "agent line"],
                            cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(workspace, state_dir, **fault(*steps)))
    try:
        if between is not None:
            wait_for_line(proc.stderr, "test-hook: paused at")
            between(proc)
            if proc.poll() is None:
                proc.send_signal(signal.SIGUSR1)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL, proc.returncode


def swept_by_doctor(cli, workspace) -> None:
    plain = cli("doctor", "--json").json()
    (found,) = [f for f in plain["findings"] if f["id"] == "write-leftovers"]
    assert found["paths"] == [f"memory/{n}" for n in leftovers(workspace)]
    fixed = cli("doctor", "--fix", "--json").json()
    assert [r["status"] for r in fixed["repairs"] if r["id"] == "write-leftovers"] == ["done"], fixed
    assert leftovers(workspace) == []
    assert cli("doctor").returncode == 0


def test_a_save_displaced_by_a_write_killed_at_its_exchange_reaches_the_history(cli, workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0

    def editor_saves(_) -> None:  # after the write's last check, before its exchange
        tmp = workspace / "memory" / ".a.md.swx"
        tmp.write_text(SAVED)
        os.rename(tmp, path)

    killed_write(workspace, state_dir, "write:checked=pause", "write:exchanged=kill", between=editor_saves)
    (swp,) = leftovers(workspace)
    assert swp.endswith(".swp") and (workspace / "memory" / swp).read_text() == SAVED  # only there
    memory = LocalMemory(settings_for(workspace, state_dir))
    saved = xxhash.xxh3_128_hexdigest(SAVED.encode())
    assert saved not in {v.version for v in memory.history("memory/a.md").versions}

    swept_by_doctor(cli, workspace)
    assert path.read_text() == HERON + "agent line\n"  # what the killed write put there
    assert saved in {v.version for v in memory.history("memory/a.md").versions}
    assert cli("restore", "memory/a.md", saved[:12]).returncode == 0
    assert path.read_text() == SAVED


def test_what_writes_killed_before_and_after_their_exchange_left_is_swept(cli, workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    for name in ("a", "b"):
        write(workspace / "memory" / f"{name}.md", HERON)
        assert cli("read", f"memory/{name}.md").returncode == 0
    # Two files: a write of either sweeps what an earlier one of it left.
    killed_write(workspace, state_dir, "write:key-recorded=kill")  # its temp file: the new version, stored
    killed_write(workspace, state_dir, "write:exchanged=kill", path="memory/b.md")  # its .swp: the version replaced
    assert [n.rsplit(".", 2)[0] + "." + n.rsplit(".", 1)[1] for n in leftovers(workspace)] == [".a.md.tmp", ".b.md.swp"]

    swept_by_doctor(cli, workspace)
    assert (workspace / "memory" / "a.md").read_text() == HERON  # killed before its swap: not written
    assert (workspace / "memory" / "b.md").read_text() == HERON + "agent line\n"


def test_the_leftover_check_never_lists_a_folder_through_a_symlink_planted_since_the_scan(workspace, state_dir, tmp_path):
    """The folders come from the scan; one swapped for a symlink since (to a folder outside, holding
    names like ours) is not followed: each is opened from its root's descriptor."""
    from openclaw_memory.doctor.check_leftovers import leftovers

    outside = tmp_path / "outside" / "sub"
    write(outside / ".a.md.0123abcd.swp", "outside bytes\n")
    inside = workspace / "memory" / "sub"
    write(inside / ".a.md.0123abcd.swp", "inside bytes\n")  # the control: found where it is a folder
    settings = settings_for(workspace, state_dir)
    assert [os.path.basename(p) for p, _ in leftovers(settings, [str(inside)])] == [".a.md.0123abcd.swp"]
    os.rename(workspace / "memory", tmp_path / "memory-moved")
    (workspace / "memory").symlink_to(tmp_path / "outside")
    assert leftovers(settings, [str(inside)]) == []


def test_a_running_writes_temp_file_is_no_leftover(cli, workspace, state_dir):
    """A write paused between storing its new bytes and its swap holds the write lock: its temp
    file (bytes the history holds) is not named; once the write is killed, it is."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0

    def plain_doctor_names_none(proc) -> None:
        assert [n.rsplit(".", 1)[1] for n in leftovers(workspace)] == ["tmp"]
        assert "write-leftovers" not in {f["id"] for f in cli("doctor", "--json").json()["findings"]}
        proc.kill()

    killed_write(workspace, state_dir, "write:key-recorded=pause", between=plain_doctor_names_none)
    assert "write-leftovers" in {f["id"] for f in cli("doctor", "--json").json()["findings"]}


def test_an_old_temp_file_the_history_lacks_is_set_aside_never_a_version_of_the_note(cli, workspace, state_dir):
    """A ``.NAME.<hex>.tmp`` ten minutes old whose bytes the history lacks (another program's draft by
    that name, a write's partial copy) was unlinked unread while doctor said "kept in the history and
    removed"; then it was logged as a version of the note: ``log`` counted it and a rollback to a moment
    after it put the draft in the note's place. It is set aside under .openclaw-repair/leftovers/,
    the note's history untouched; the next write of the note leaves it as it is."""
    write(workspace / "MEMORY.md", "# Memory\n")
    note = write(workspace / "memory" / "a.md", HERON)
    draft = workspace / "memory" / ".a.md.deadbeef.tmp"
    draft.write_text("precious draft 123\n")
    old = draft.stat().st_mtime - 20 * 60
    os.utime(draft, (old, old))
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("write", "memory/a.md", "--append", "- more", "--no-index").returncode == 0
    assert draft.read_text() == "precious draft 123\n"  # a write leaves it (it is no bytes the history holds)
    swept_by_doctor(cli, workspace)
    [aside] = (workspace / ".openclaw-repair" / "leftovers").glob("*/memory/.a.md.deadbeef.tmp")
    assert aside.read_text() == "precious draft 123\n"
    # Set aside for this user alone: a draft a private folder kept was laid open by 0755 folders (review).
    assert all(os.stat(folder).st_mode & 0o077 == 0 for folder in aside.parents if folder.is_relative_to(
        workspace / ".openclaw-repair" / "leftovers"))
    version = xxhash.xxh3_128_hexdigest(b"precious draft 123\n")
    assert version not in {v["version"] for v in cli("history", "memory/a.md", "--json").json()["versions"]}
    assert note.read_text() == HERON + "- more\n"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a file of another user")
def test_another_users_temp_file_is_never_read_nor_removed(cli, workspace, state_dir):
    """The sweep took another user's ``.NAME.<hex>.tmp`` in a shared folder into this user's private
    history (and a restore printed it into this user's note), then removed it."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", HERON)
    theirs = workspace / "memory" / ".a.md.1234abcd.tmp"
    theirs.write_text("their private draft\n")
    os.chown(theirs, 1001, 1001)
    old = theirs.stat().st_mtime - 30 * 60
    os.utime(theirs, (old, old))
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("write", "memory/a.md", "--append", "- more", "--no-index").returncode == 0
    assert "write-leftovers" not in {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    cli("doctor", "--fix", "--json")
    assert theirs.read_text() == "their private draft\n"
    version = xxhash.xxh3_128_hexdigest(b"their private draft\n")
    assert version not in {v["version"] for v in cli("history", "memory/a.md", "--json").json()["versions"]}


def test_a_leftover_in_an_extra_path_named_through_a_linked_folder_is_found_and_swept(cli, workspace, tmp_path):
    # The scanner names an extra path with its folders' links resolved; the check matched the
    # folders it lists against the extra path as configured, so one spelled through a link
    # (/tmp on macOS) never had its leftovers found.
    (tmp_path / "real" / "notes").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    write(workspace / "MEMORY.md", "# Memory\n")
    write(tmp_path / "real" / "notes" / "a.md", HERON)
    swp = tmp_path / "real" / "notes" / ".a.md.0123abcd.swp"
    swp.write_text(SAVED)
    extra = ("--extra", str(tmp_path / "link" / "notes"))
    (found,) = [f for f in cli("doctor", "--json", *extra).json()["findings"] if f["id"] == "write-leftovers"]
    assert found["paths"] == [os.path.relpath(swp, workspace)]
    fixed = cli("doctor", "--fix", "--json", *extra).json()
    assert [r["status"] for r in fixed["repairs"] if r["id"] == "write-leftovers"] == ["done"], fixed
    assert not swp.exists()
    saved = xxhash.xxh3_128_hexdigest(SAVED.encode())
    assert saved in {v["version"] for v in cli("history", str(tmp_path / "real" / "notes" / "a.md"), "--json",
                                               *extra).json()["versions"]}


def test_a_write_the_service_was_killed_making_is_this_sessions_own_once_replayed(cli, workspace, state_dir):
    """The service SIGKILLed right after it put an agent's write in place (``write:exchanged``): the
    session's retry answered ``replayed: true``, but the history logged the version as a person's
    ``external-edit`` (no agent, no session), the session's next write was blocked as if someone else
    had changed the note ("changed since this session ... last read it"), and the ``.swp`` stayed.
    The replay finishes the write: its entry is the session's, its record too, its leftover swept."""
    from test_guard_reads import Session
    from test_serve import WAIT

    from openclaw_memory.service_files import read_info

    write(workspace / "MEMORY.md", "# Memory\n")
    note = write(workspace / "memory" / "n.md", "base\n")
    service = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=workspace,
                               env=fault("write:exchanged=kill", env=env_for(workspace, state_dir)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    agent = None
    try:
        wait_for(lambda: read_info(settings_for(workspace, state_dir)), timeout=WAIT)
        agent = Session(workspace, state_dir, service=True)
        read = json.loads(agent.call("memory_get", path="memory/n.md")[1])
        refused, text = agent.call("memory_write", path="memory/n.md", content="base\nagent line\n", expect=read["version"])
        assert not refused and json.loads(text)["replayed"] is True, text
        assert service.wait(timeout=WAIT) == -signal.SIGKILL
        made = json.loads(text)["version"]
        assert note.read_text() == "base\nagent line\n" and leftovers(workspace) == []
        refused, text = agent.call("memory_write", path="memory/n.md", content="base\nagent line\nsecond\n")
        assert not refused, text  # its own version: not "changed since this session last read it"
    finally:
        if service.poll() is None:
            service.kill()
        if agent is not None:
            agent.close()
    logged = [e for e in cli("log", "--json").json()["entries"] if e["path"] == "memory/n.md"]
    (own,) = [e for e in logged if e["version"] == made]
    assert own["origin"] == "agent-write" and own["agent"] == "main" and own["session"].startswith("mcp-"), own
    assert [e["origin"] for e in logged].count("external-edit") == 1, logged  # the note as it was found, only


def test_a_replay_relabels_the_sighting_of_its_own_killed_write(cli, workspace, state_dir):
    """A write killed right after its exchange, its version then seen by another session's read (a
    sighting logs it as an outside edit): the retry, a replay, makes that entry the write it was, and
    the writer may go on replacing the note it has read whole."""
    write(workspace / "MEMORY.md", "# Memory\n")
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    killed_write(workspace, state_dir, "write:exchanged=kill")
    assert path.read_text() == HERON + "agent line\n" and [n.rsplit(".", 1)[1] for n in leftovers(workspace)] == ["swp"]
    assert cli("--session", "other", "read", "memory/a.md").returncode == 0
    logged = cli("log", "--json").json()["entries"]
    assert [(e["origin"], e.get("agent")) for e in logged][:1] == [("external-edit", None)], logged  # the sighting

    again = cli("write", "memory/a.md", "--append", "agent line", "--json")
    assert again.returncode == 0 and again.json()["replayed"] is True, again.stderr
    assert path.read_text() == HERON + "agent line\n" and leftovers(workspace) == []
    made = again.json()["version"]
    logged = cli("log", "--json").json()["entries"]
    assert [(e["version"], e["origin"], e.get("agent")) for e in logged if e["version"] == made] == [
        (made, "agent-write", "main")], logged
    written = cli("write", "memory/a.md", "--stdin", input=HERON + "agent line\nmore\n")
    assert written.returncode == 0, written.stderr


def test_a_retry_never_claims_another_agents_identical_write(cli, workspace, state_dir):
    """A write killed after its idempotency key was recorded, before its exchange (``write:key-recorded``),
    made nothing; another agent then appended the same line. The retry was answered as a replay and
    logged bob's version a second time as main's write ("an earlier write ... made version V"); now it
    writes nothing (the file holds the text already), logs nothing as main's, and says whose it is."""
    write(workspace / "MEMORY.md", "# Memory\n")
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    killed_write(workspace, state_dir, "write:key-recorded=kill")
    assert path.read_text() == HERON and [n.rsplit(".", 1)[1] for n in leftovers(workspace)] == ["tmp"]
    assert cli("--agent", "bob", "read", "memory/a.md").returncode == 0
    assert cli("--agent", "bob", "write", "memory/a.md", "--append", "agent line").returncode == 0
    made = xxhash.xxh3_128_hexdigest((HERON + "agent line\n").encode())

    again = cli("write", "memory/a.md", "--append", "agent line", "--json")
    assert again.returncode == 0, again.stderr
    answer = again.json()
    assert "replayed" not in answer and answer["changed"] is False and answer["version"] == made, answer
    assert "already holds this text, but as agent 'bob''s write, not as a write of this session" in answer["warnings"][0]
    assert path.read_text() == HERON + "agent line\n" and leftovers(workspace) == []
    logged = [(e["origin"], e.get("agent")) for e in cli("log", "--json").json()["entries"] if e["version"] == made]
    assert logged == [("agent-write", "bob")], logged
    plain = cli("write", "memory/a.md", "--append", "agent line")  # asked again: the same answer, in words
    assert plain.returncode == 0 and plain.stdout.startswith("unchanged: nothing appended to memory/a.md;"), plain.stdout
    assert "an earlier write" not in plain.stdout and "not as a write of this session" in plain.stderr


def test_a_retry_never_claims_a_persons_identical_edit(cli, workspace, state_dir):
    """The same, a person appending the line by hand: their edit was relabelled main's agent-write."""
    write(workspace / "MEMORY.md", "# Memory\n")
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    killed_write(workspace, state_dir, "write:key-recorded=kill")
    with open(path, "a") as fh:
        fh.write("agent line\n")
    made = xxhash.xxh3_128_hexdigest((HERON + "agent line\n").encode())

    again = cli("write", "memory/a.md", "--append", "agent line", "--json")
    assert again.returncode == 0 and again.json()["changed"] is False and "replayed" not in again.json(), again.stdout
    assert "but as an outside edit" in again.json()["warnings"][0]
    assert path.read_text() == HERON + "agent line\n" and leftovers(workspace) == []
    logged = [(e["origin"], e.get("agent")) for e in cli("log", "--json").json()["entries"] if e["version"] == made]
    assert logged == [("external-edit", None)], logged
    blocked = cli("write", "memory/a.md", "--stdin", input="new\n")  # main never read the person's edit
    assert blocked.returncode == 3, blocked.stderr


def test_a_replay_claims_its_version_put_over_an_editors_save(cli, workspace, state_dir):
    """A write killed right after an exchange that displaced an editor's save (not the version it
    checked): its ``.swp`` holds bytes no write stored, the trace that it put its version in place,
    so its retry is a replay that logs the version as its own, the save logged before it."""
    write(workspace / "MEMORY.md", "# Memory\n")
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0

    def editor_saves(_) -> None:
        tmp = workspace / "memory" / ".a.md.swx"
        tmp.write_text(SAVED)
        os.rename(tmp, path)

    killed_write(workspace, state_dir, "write:checked=pause", "write:exchanged=kill", between=editor_saves)
    again = cli("write", "memory/a.md", "--append", "agent line", "--json")
    assert again.returncode == 0 and again.json()["replayed"] is True, again.stdout
    made, saved = again.json()["version"], xxhash.xxh3_128_hexdigest(SAVED.encode())
    logged = [(e["version"], e["origin"], e.get("agent")) for e in cli("log", "--json").json()["entries"]
              if e["path"] == "memory/a.md"]
    assert logged[:2] == [(made, "agent-write", "main"), (saved, "external-edit", None)], logged
    assert path.read_text() == HERON + "agent line\n" and leftovers(workspace) == []


def test_an_old_temp_file_of_an_extra_path_is_set_aside_and_a_refusal_says_why(cli, workspace, tmp_path):
    """One in an extra path beside the workspace was left with the finding fixable for ever, and every
    doctor --fix failed saying it was "held open, or bytes the history could not keep"; a symlinked
    .openclaw-repair was said the same way."""
    notes = tmp_path / "notes"
    write(notes / "a.md", "# A\n")
    draft = notes / ".a.md.0badf00d.tmp"
    draft.write_text("a draft\n")
    old = draft.stat().st_mtime - 3600
    os.utime(draft, (old, old))
    fixed = cli("--extra", str(notes), "doctor", "--fix", "--json")
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "write-leftovers"] == ["done"], fixed.stdout
    [aside] = (workspace / ".openclaw-repair" / "leftovers").glob("*/outside/**/.a.md.0badf00d.tmp")
    assert aside.read_text() == "a draft\n" and not draft.exists()
    assert "write-leftovers" not in {f["id"] for f in cli("--extra", str(notes), "doctor", "--json").json()["findings"]}

    inside = workspace / "memory" / ".b.md.0badf00d.tmp"
    write(workspace / "memory" / "b.md", "# B\n")
    inside.write_text("another draft\n")
    os.utime(inside, (old, old))
    shutil.rmtree(workspace / ".openclaw-repair")
    (workspace / ".openclaw-repair").symlink_to(tmp_path)
    (failed,) = [r for r in cli("doctor", "--fix", "--json").json()["repairs"] if r["id"] == "write-leftovers"]
    assert failed["status"] == "failed" and "is a symlink or not a folder: move it away" in failed["detail"], failed
    assert inside.read_text() == "another draft\n"
