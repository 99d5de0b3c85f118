"""Managing notes: ``mv`` moves a memory file with its history and index points (nothing embedded
again), ``rm`` removes one into the history and ``restore --last`` brings it back; both are guarded
like a write, refuse bad input in one line, and a SIGKILL at any step leaves every byte reachable
and ``doctor --fix`` finishing or undoing the step."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import xxhash
from test_serve import Serve
from test_watch import Watch

from conftest import (
    NOBODY,
    as_nobody,
    env_for,
    fault,
    fill_disk,
    run_in_process,
    run_paused,
    settings_for,
    tmpfs,
    wait_for,
    write,
)
from openclaw_memory.errors import UsageError, WriteBlocked
from openclaw_memory.history.moves import pending
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.memory.local import LocalMemory

HERON = "# Heron\n\nThe heron project keeps lighthouse keepers on the northern cape.\n"
KETTLE = "# Kettle\n\nThe kettle whistles when the tea water boils.\n"
HERON_2 = HERON + "\n## Budget\n\nThe heron budget was approved in November.\n"
OTHER = "# Kettle\n\nThe kettle whistles when the tea water boils.\n"


def version_of(data: str | bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data.encode() if isinstance(data, str) else data)


def memory_for(workspace, state_dir, **kw) -> LocalMemory:
    return LocalMemory(settings_for(workspace, state_dir, **kw))


def origins(memory: LocalMemory, path: str) -> list[tuple[str, str]]:
    return [(v.origin, v.version) for v in memory.history(path).versions]  # newest first


def one_line_error(result) -> str:
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# -- mv ---------------------------------------------------------------------------------------------


def test_a_moved_note_keeps_its_history_and_is_found_at_its_new_path_with_nothing_embedded(workspace, state_dir):
    write(workspace / "memory" / "2026-11-30.md", HERON)
    write(workspace / "memory" / "kettle.md", OTHER)
    memory = memory_for(workspace, state_dir)
    first = memory.index()
    assert first.chunks_embedded > 0
    memory.read("memory/2026-11-30.md")
    memory.write("memory/2026-11-30.md", content=HERON_2)  # a second version, written by the agent

    moved = memory.move("memory/2026-11-30.md", "memory/projects/heron.md")

    assert (moved.source, moved.path, moved.how) == ("memory/2026-11-30.md", "memory/projects/heron.md", "rename")
    assert (workspace / "memory" / "projects" / "heron.md").read_text() == HERON_2
    assert not (workspace / "memory" / "2026-11-30.md").exists()
    sync = moved.index.sync
    assert moved.index.updated and sync.chunks_embedded == 0 and sync.chunks_reused > 0  # the embed count
    assert (sync.files_changed, sync.files_removed) == (1, 1)
    # The history follows the file: the move is its newest version, the versions it had as the old path below.
    assert origins(memory, "memory/projects/heron.md") == [
        ("move", version_of(HERON_2)), ("agent-write", version_of(HERON_2)), ("external-edit", version_of(HERON))]
    assert memory.history("memory/2026-11-30.md").versions == ()
    found = memory.search("heron budget approved", mode="text")
    assert [r.path for r in found.results][:1] == ["memory/projects/heron.md"]
    assert "memory/2026-11-30.md" not in {r.path for r in found.results}
    # The mover's read record moved too: it may write the new path at once.
    assert memory.write("memory/projects/heron.md", append="- one more fact").changed


def test_every_session_and_agent_that_read_a_moved_note_may_write_it_at_its_new_path(workspace, state_dir):
    """notes.md: every session's read record of the file moves with it, so a session that read it
    is not made to read it again (the test above checks the mover's own record only)."""
    settings = settings_for(workspace, state_dir)
    mover = LocalMemory(settings.with_session("s1"))
    for reader, name in ((LocalMemory(settings.with_session("s2")), "a"), (LocalMemory(settings.with_agent("ops")), "c")):
        write(workspace / "memory" / f"{name}.md", "hello\n")
        mover.read(f"memory/{name}.md")
        reader.read(f"memory/{name}.md")
        mover.move(f"memory/{name}.md", f"memory/{name}-moved.md")
        assert reader.write(f"memory/{name}-moved.md", content="rewritten\n").changed
        assert (workspace / "memory" / f"{name}-moved.md").read_text() == "rewritten\n"


def test_a_move_across_file_systems_is_a_verified_copy_and_still_embeds_nothing(workspace, state_dir, tmp_path):
    with tmpfs(tmp_path / "extra", "8m") as extra:
        write(workspace / "memory" / "heron.md", HERON)
        memory = memory_for(workspace, state_dir, extra=(str(extra),))
        memory.index()
        memory.read("memory/heron.md")
        moved = memory.move("memory/heron.md", str(extra / "heron.md"))
        assert moved.how == "copy"
        assert (extra / "heron.md").read_text() == HERON and not (workspace / "memory" / "heron.md").exists()
        assert moved.index.sync.chunks_embedded == 0 and moved.index.sync.chunks_reused > 0
        assert [o for o, _ in origins(memory, str(extra / "heron.md"))] == ["move", "external-edit"]


def test_a_name_as_long_as_the_system_allows_is_moved_across_file_systems_and_removed(workspace, state_dir, tmp_path):
    """The private name a move or removal gives the source (``.NAME.aside-<hex>``) did not fit
    beside a 255-byte name: the copy was made, the source kept, and the intent left could be
    finished by neither the next mv nor doctor --fix ("File name too long"), so every mv, rm and
    rollback of the workspace stopped on it."""
    name = "n" * 252 + ".md"
    with tmpfs(tmp_path / "extra", "8m") as extra:
        write(workspace / "memory" / name, HERON)
        memory = memory_for(workspace, state_dir, extra=(str(extra),))
        memory.read(f"memory/{name}")
        assert memory.move(f"memory/{name}", str(extra / name), update_index=False).how == "copy"
        assert (extra / name).read_text() == HERON and not (workspace / "memory" / name).exists()
        memory.read(str(extra / name))
        assert memory.move(str(extra / name), f"memory/{name}", update_index=False).how == "copy"
        memory.read(f"memory/{name}")
        memory.remove(f"memory/{name}", update_index=False)
        assert not (workspace / "memory" / name).exists()
        memory.restore(f"memory/{name}", last=True, update_index=False)
        assert (workspace / "memory" / name).read_text() == HERON
        assert sorted(os.listdir(workspace / "memory")) == [name] and os.listdir(extra) == []
        assert [o for o, _ in origins(memory, f"memory/{name}")][:4] == ["restore", "remove", "move", "move"]
        assert pending(memory.settings) is None  # no interrupted move waits


def _append_only(folder) -> None:
    """``chattr +a``: names may be added to the folder, none removed or renamed away (the move's last
    step fails, EPERM, where a check of the folder's mode passes), or skip."""
    done = subprocess.run(["chattr", "+a", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no append-only folders here: {done.stderr.strip() or 'chattr failed'}")


@pytest.mark.parametrize("across", ["folder", False, True], ids=["one folder", "one file system", "across file systems"])
def test_a_move_whose_source_cannot_lose_its_name_is_undone_and_blocks_nothing_after(across, cli, workspace,
                                                                                        state_dir, tmp_path):
    """The old name could not go (an append-only folder): the move said "nothing was moved" and
    left the note's second name (or its copy) at the destination with its intent, which every
    later mv, rm and rollback tried to finish, failing the same way ("could not be finished"). Within
    the one folder the second name could not be taken back either: the folder's flag is asked first."""
    write(workspace / "memory" / "kept" / "a.md", HERON)
    write(workspace / "memory" / "b.md", KETTLE)
    with contextlib.ExitStack() as stack:
        extra = (stack.enter_context(tmpfs(tmp_path / "extra", "8m")) if across is True
                 else workspace / "memory" / "kept" if across == "folder" else workspace / "memory")
        extra_args = ("--extra", str(extra)) if across is True else ()
        destination = str(extra / ("z.md" if across == "folder" else "a.md"))
        assert cli("read", "memory/kept/a.md", *extra_args).returncode == 0
        _append_only(workspace / "memory" / "kept")
        stack.callback(subprocess.run, ["chattr", "-a", str(workspace / "memory" / "kept")], check=False)

        moved = cli("mv", "memory/kept/a.md", destination, "--no-index", *extra_args)
        assert moved.returncode == 1 and "nothing was moved" in moved.stderr, moved.stderr
        assert (workspace / "memory" / "kept" / "a.md").read_text() == HERON
        assert "append-only" in moved.stderr, moved.stderr
        assert not os.path.exists(destination) and not [n for n in os.listdir(extra) if n.startswith(".")]
        assert pending(settings_for(workspace, state_dir)) is None

        assert cli("read", "memory/b.md", *extra_args).returncode == 0
        assert cli("mv", "memory/b.md", "memory/c.md", "--no-index", *extra_args).returncode == 0


def test_a_forced_move_of_an_immutable_note_archives_nothing(cli, workspace, state_dir):
    """An immutable source (`chattr +i`: no mode or folder flag shows it): `--force` archived the file at
    the destination, then the link failed, "nothing was moved", that note gone from the workspace."""
    write(workspace / "memory" / "kept" / "a.md", HERON)
    write(workspace / "memory" / "b.md", KETTLE)
    assert cli("read", "memory/kept/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    done = subprocess.run(["chattr", "+i", str(workspace / "memory" / "kept" / "a.md")], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no immutable files here: {done.stderr.strip() or 'chattr failed'}")
    try:
        moved = cli("mv", "memory/kept/a.md", "memory/b.md", "--force", "--no-index")
    finally:
        subprocess.run(["chattr", "-i", str(workspace / "memory" / "kept" / "a.md")], check=False)
    assert moved.returncode == 1 and "nothing was moved" in moved.stderr and "immutable" in moved.stderr, moved.stderr
    assert (workspace / "memory" / "b.md").read_text() == KETTLE and "archived" not in moved.stderr
    assert pending(settings_for(workspace, state_dir)) is None


def test_a_forced_move_stopped_after_archiving_the_destination_says_it_is_archived(cli, workspace, state_dir):
    """The source's name could not go for a reason no check sees first (an ACL, a sticky folder of
    another user's note; the test's fault step stands for it) after `--force` archived the file at
    the destination: "nothing was moved" alone, and that note gone from the workspace without a word."""
    from conftest import fault

    write(workspace / "memory" / "kept" / "a.md", HERON)
    write(workspace / "memory" / "b.md", KETTLE)
    assert cli("read", "memory/kept/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    moved = cli("mv", "memory/kept/a.md", "memory/b.md", "--force", "--no-index", env=fault("mv:source-refused=fail"))
    assert moved.returncode == 1 and "nothing was moved" in moved.stderr, moved.stderr
    assert "memory/b.md is archived" in moved.stderr and "restore memory/b.md --last" in moved.stderr
    assert (workspace / "memory" / "kept" / "a.md").read_text() == HERON and not (workspace / "memory" / "b.md").exists()
    assert pending(settings_for(workspace, state_dir)) is None
    assert cli("restore", "memory/b.md", "--last", "--no-index").returncode == 0
    assert (workspace / "memory" / "b.md").read_text() == KETTLE


def test_a_plain_move_into_an_append_only_folder_is_made(cli, workspace):
    """Only adding a name there: an append-only folder takes it (6be9e72 refused it too)."""
    write(workspace / "memory" / "a.md", HERON)
    (workspace / "memory" / "journal").mkdir()
    assert cli("read", "memory/a.md").returncode == 0
    _append_only(workspace / "memory" / "journal")
    try:
        moved = cli("mv", "memory/a.md", "memory/journal/a.md", "--no-index")
    finally:
        subprocess.run(["chattr", "-a", str(workspace / "memory" / "journal")], check=False)
    assert moved.returncode == 0, moved.stderr
    assert (workspace / "memory" / "journal" / "a.md").read_text() == HERON and not (workspace / "memory" / "a.md").exists()


def test_a_copy_into_an_append_only_folder_is_refused_and_leaves_nothing(cli, workspace):
    """A rename refused across file systems (EXDEV: a bind mount shares st_dev, so the check before
    took it for one file system) copied into an append-only folder: the temporary's name could not
    go, a second name of the note stayed beside it, and the move said "moved"."""
    write(workspace / "memory" / "a.md", HERON)
    journal = workspace / "memory" / "journal"
    journal.mkdir()
    assert cli("read", "memory/a.md").returncode == 0
    _append_only(journal)
    try:
        moved = cli("mv", "memory/a.md", "memory/journal/a.md", "--no-index", env=fault("move:rename=fail"))
        left = sorted(p.name for p in journal.iterdir())
    finally:
        subprocess.run(["chattr", "-a", str(journal)], check=False)
    assert moved.returncode == 1 and "nothing was moved" in moved.stderr and "append-only" in moved.stderr, moved.stderr
    assert f"({journal})" in moved.stderr, moved.stderr  # the folder that refused, not the source's
    assert left == [] and (workspace / "memory" / "a.md").read_text() == HERON
    assert cli("mv", "memory/a.md", "memory/journal/a.md", "--no-index").returncode == 0  # no intent left waiting


def test_mv_force_from_a_folder_it_may_not_change_archives_nothing(cli, workspace, tmp_path):
    """A read-only extra path: `mv --force` archived the destination's note (gone from the
    workspace, into the history) and then failed at the source, saying "nothing was moved"."""
    with tmpfs(tmp_path / "extra", "8m") as extra:
        write(extra / "a.md", HERON)
        assert subprocess.run(["mount", "-o", "remount,ro", str(extra)], capture_output=True).returncode == 0
        write(workspace / "memory" / "b.md", KETTLE)
        assert cli("read", str(extra / "a.md"), "--extra", str(extra)).returncode == 0
        assert cli("read", "memory/b.md", "--extra", str(extra)).returncode == 0

        moved = cli("mv", str(extra / "a.md"), "memory/b.md", "--force", "--no-index", "--extra", str(extra))
        assert moved.returncode == 1 and "Read-only file system" in moved.stderr and "nothing was moved" in moved.stderr
        assert (workspace / "memory" / "b.md").read_text() == KETTLE and (extra / "a.md").read_text() == HERON
        assert "remove" not in cli("log", "--extra", str(extra)).stdout


def test_a_destination_it_may_not_write_is_named_as_the_destination(cli, workspace, tmp_path):
    """The refusal named the source's folder ("cannot write in the workspace (…/memory)") where the
    destination's (a read-only extra path) was the one that could not be written."""
    with tmpfs(tmp_path / "extra", "8m") as extra:
        assert subprocess.run(["mount", "-o", "remount,ro", str(extra)], capture_output=True).returncode == 0
        write(workspace / "memory" / "b.md", KETTLE)
        assert cli("read", "memory/b.md", "--extra", str(extra)).returncode == 0
        moved = cli("mv", "memory/b.md", str(extra / "b.md"), "--no-index", "--extra", str(extra))
        assert moved.returncode == 1 and f"({extra})" in moved.stderr and "Read-only file system" in moved.stderr
        assert "nothing was moved" in moved.stderr and (workspace / "memory" / "b.md").read_text() == KETTLE


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user (uid 65534) needs root")
def test_a_forced_move_onto_a_note_it_may_not_read_names_that_note(base):
    """`mv --force` onto another user's 0600 note said "cannot write in the workspace (…/memory):
    Permission denied" of a folder anyone may write in (0777); the note it could not read to archive
    it was the obstacle, as `rm` of it says."""
    ws, sd = base / "ws", base / "state"
    memory = ws / "memory"
    memory.mkdir(parents=True)
    memory.chmod(0o777)
    sd.mkdir()
    os.chown(sd, NOBODY, NOBODY)
    os.chown(write(memory / "plan.md", HERON), NOBODY, NOBODY)
    write(memory / "nb.md", KETTLE).chmod(0o600)  # root's, private

    def run(*args: str) -> dict:
        return as_nobody(lambda: dataclasses.asdict(run_in_process(args, env=env_for(ws, sd), cwd=ws)))

    # The same commands run here first: the child acting as uid 65534 may not reach the
    # interpreter's library folder (under /root) to import a module they need.
    warm, warm_state = base / "warm", base / "warm-state"
    for name in ("a.md", "b.md"):
        write(warm / "memory" / name, HERON)
    for args in (("read", "memory/a.md"), ("read", "memory/b.md"), ("rm", "memory/b.md"), ("read", "memory/a.md"),
                 ("restore", "memory/b.md", "--last", "--no-index"), ("read", "memory/b.md"),
                 ("mv", "memory/a.md", "memory/b.md", "--force", "--no-index")):
        assert run_in_process(args, env=env_for(warm, warm_state), cwd=warm).returncode == 0, args
    read = run("read", "memory/plan.md")
    assert read["returncode"] == 0, read
    removed = run("rm", "memory/nb.md")
    assert (removed["returncode"], removed["stderr"]) == (2, "error: cannot read memory/nb.md: permission denied\n")
    moved = run("mv", "memory/plan.md", "memory/nb.md", "--force", "--no-index")
    assert moved["returncode"] == 2 and "Traceback" not in moved["stderr"], moved
    assert moved["stderr"] == ("error: cannot read memory/nb.md: permission denied, so --force cannot archive it; "
                               "nothing was moved\n")
    assert (memory / "plan.md").read_text() == HERON and (memory / "nb.md").read_text() == KETTLE


def test_a_destination_whose_folder_is_a_file_is_named_as_the_destination(cli, workspace):
    """`mv memory/a.md memory/file/x.md` with memory/file a file: "refused: memory/a.md: a folder on its
    path is a file", the source named for the destination's path."""
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "file", "not a folder\n")
    assert cli("read", "memory/a.md").returncode == 0
    line = one_line_error(cli("mv", "memory/a.md", "memory/file/x.md", "--no-index"))
    assert "refused: memory/file/x.md: memory/file on its path is a file, not a folder" in line and (
        "memory/a.md is unchanged" in line), line
    assert (workspace / "memory" / "a.md").read_text() == HERON


def test_a_destination_on_a_full_disk_is_named_as_the_destination(cli, workspace, tmp_path):
    """The copy to an extra path on a full disk failed there, and the message named the source's
    folder ("no space left to write in the workspace (…/memory)"): a user freed space on the wrong disk."""
    with tmpfs(tmp_path / "extra", "1m") as extra:
        fill_disk(extra)
        write(workspace / "memory" / "b.md", KETTLE * 200)
        assert cli("read", "memory/b.md", "--extra", str(extra)).returncode == 0
        moved = cli("mv", "memory/b.md", str(extra / "b.md"), "--no-index", "--extra", str(extra))
        line = one_line_error(moved)
        # ... and an extra path is named as one (it read "to write in the workspace (<extra path>)").
        assert moved.returncode == 1 and "the disk is full" in line and f"the extra path ({extra})" in line, line
        assert str(workspace / "memory") not in line and "nothing was moved" in line
        assert (workspace / "memory" / "b.md").read_text() == KETTLE * 200
        assert sorted(os.listdir(extra)) == ["filler"]


def test_a_file_appearing_at_a_forced_moves_destination_after_its_archive_says_the_note_there_is_archived(
        workspace, state_dir, cli):
    """`mv --force` archived the destination's note, then a file appeared there before the link:
    "appeared while … was being moved; nothing was moved" alone, and the note that was there gone
    from the workspace without a word of where it went."""
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", KETTLE)
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    code, _, err = run_paused(workspace, state_dir, ("mv", "memory/a.md", "memory/b.md", "--force", "--no-index"),
                              "mv:replaced-removed", lambda: write(workspace / "memory" / "b.md", "# Newcomer\n"))
    assert code == 2 and "appeared while memory/a.md was being moved" in err, err
    assert "memory/b.md is archived" in err and "restore memory/b.md --last" in err, err
    assert (workspace / "memory" / "a.md").read_text() == HERON
    assert (workspace / "memory" / "b.md").read_text() == "# Newcomer\n"
    assert pending(settings_for(workspace, state_dir)) is None
    assert memory_for(workspace, state_dir).history("memory/b.md").versions[0].origin in ("remove", "external-edit")
    assert cli("restore", "memory/b.md", "--last", "--no-index").returncode == 0
    assert (workspace / "memory" / "b.md").read_text() == KETTLE


def test_a_forced_move_whose_destination_changes_while_it_is_archived_names_the_destination(workspace, state_dir, cli):
    """`mv --force memory/b.md memory/a.md`, a.md written to while the move took it aside to archive it:
    "blocked: memory/b.md changed while it was moved (someone wrote to it)", the source blamed, which
    nothing had touched. The destination is named, both notes stay as they are, nothing is moved."""
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", KETTLE)
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    late = "- written to a.md while the move archived it\n"

    def write_to_the_destination() -> None:
        (aside,) = [p for p in (workspace / "memory").iterdir() if p.name.startswith(".a.md.aside-")]
        with open(aside, "a") as fh:  # a writer that had a.md open
            fh.write(late)

    code, _, err = run_paused(workspace, state_dir, ("mv", "memory/b.md", "memory/a.md", "--force", "--no-index"),
                              "move:source-aside", write_to_the_destination)
    assert code == 3, err
    assert "memory/a.md changed while it was being archived to be replaced (someone wrote to it)" in err, err
    assert "nothing was moved: memory/b.md is unchanged" in err and "memory/b.md changed" not in err, err
    assert (workspace / "memory" / "a.md").read_text() == HERON + late
    assert (workspace / "memory" / "b.md").read_text() == KETTLE
    assert stray(workspace) == [] and pending(settings_for(workspace, state_dir)) is None


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_move_across_file_systems_keeps_the_notes_owner_and_mode(workspace, state_dir, tmp_path):
    """Root (sudo, a service of root's) moving a user's note to another disk: the copy was root's,
    and the user's agent could no longer write its own note; a guarded write keeps the owner."""
    with tmpfs(tmp_path / "extra", "8m") as extra:
        note = write(workspace / "memory" / "heron.md", HERON)
        os.chown(note, 65534, 65534)
        os.chmod(note, 0o640)
        memory = memory_for(workspace, state_dir, extra=(str(extra),))
        memory.read("memory/heron.md")
        memory.write("memory/heron.md", append="- a line", update_index=False)
        assert (note.stat().st_uid, note.stat().st_gid) == (65534, 65534)  # the control: a write keeps it
        memory.read("memory/heron.md")
        assert memory.move("memory/heron.md", str(extra / "heron.md"), update_index=False).how == "copy"
        moved = (extra / "heron.md").stat()
        assert (moved.st_uid, moved.st_gid, moved.st_mode & 0o7777) == (65534, 65534, 0o640)


def test_mv_is_guarded_like_a_write(cli, workspace):
    write(workspace / "memory" / "a.md", HERON)
    blocked = cli("mv", "memory/a.md", "memory/b.md")
    assert blocked.returncode == 3
    assert "has not read it; read it first (openclaw-memory read memory/a.md) and try again" in one_line_error(blocked)
    assert cli("read", "memory/a.md").returncode == 0
    write(workspace / "memory" / "a.md", HERON_2)  # changed by someone else since
    stale = cli("mv", "memory/a.md", "memory/b.md")
    assert stale.returncode == 3 and "changed since agent 'main' last read it" in one_line_error(stale)
    assert (workspace / "memory" / "a.md").read_text() == HERON_2 and not (workspace / "memory" / "b.md").exists()
    # --expect: a compare-and-swap on the version read, as write's; the version now, never read, is no read.
    assert cli("mv", "memory/a.md", "memory/b.md", "--expect", version_of(HERON)[:12]).returncode == 3
    unread = cli("mv", "memory/a.md", "memory/b.md", "--expect", version_of(HERON_2)[:12])
    assert unread.returncode == 3 and "is at a version agent 'main' has not read" in one_line_error(unread)
    assert cli("read", "memory/a.md").returncode == 0
    done = cli("mv", "memory/a.md", "memory/b.md", "--expect", version_of(HERON_2)[:12], "--json")
    assert done.returncode == 0, done.stderr
    assert (done.json()["from"], done.json()["path"]) == ("memory/a.md", "memory/b.md")


def test_mv_refuses_bad_input_in_one_line(cli, workspace, tmp_path):
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "taken.md", OTHER)
    (workspace / "memory" / "folder").mkdir()
    os.symlink(workspace / "memory" / "a.md", workspace / "memory" / "link.md")
    write(workspace / "DREAMS.md", "dreams\n")
    outside = tmp_path / "outside.md"
    assert cli("read", "memory/a.md").returncode == 0
    cases = {
        ("memory/a.md", str(outside)): "is not a memory path",
        ("memory/a.md", "notes.md"): "is not a memory path",  # a root name OpenClaw would not read
        ("memory/a.md", "memory.md"): "memory.md is the legacy root file",
        ("memory/a.md", "dreams.md"): "DREAMS.md exists, so dreams.md is not memory",
        ("memory/a.md", "memory/a.txt"): "is not a Markdown (.md) memory file",
        ("memory/a.md", "memory/taken.md"): "memory/taken.md exists; nothing was moved (--force replaces it",
        ("memory/link.md", "memory/b.md"): "goes through a symlink",
        ("memory/missing.md", "memory/b.md"): "memory/missing.md does not exist",
        ("memory/a.md", "memory/./a.md"): "'memory/a.md' and 'memory/./a.md' both name memory/a.md; nothing was moved",
        # OpenClaw trims a path: said so, each name quoted (it read "memory/a.md and memory/a.md are the same file").
        ("memory/a.md", "memory/a.md "): "'memory/a.md' and 'memory/a.md ' both name memory/a.md (spaces around a path are trimmed",
        ("memory/a.md", "memory/a.md"): "memory/a.md is both the source and the destination",
        ("MEMORY.md", "memory/old-root.md"): "takes it out of the agent's startup",
    }
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    for (src, dst), words in cases.items():
        line = one_line_error(cli("mv", src, dst))
        assert words in line, (src, dst, line)
    assert (workspace / "memory" / "a.md").read_text() == HERON and (workspace / "memory" / "taken.md").read_text() == OTHER
    os.rename(workspace / "memory" / "folder", workspace / "memory" / "folder.md")
    assert "memory/folder.md is a folder" in one_line_error(cli("mv", "memory/a.md", "memory/folder.md"))


def test_mv_into_a_folder_keeps_the_notes_name_as_mv_does(cli, workspace):
    """``mv memory/a.md memory/people`` (a folder there) or ``memory/new/`` (a trailing slash): the note
    goes into it under its own name. Both were refused ("memory/people is not a Markdown (.md) memory
    file", and ``mv MEMORY.md memory/`` "memory is not a memory path")."""
    write(workspace / "memory" / "a.md", HERON)
    (workspace / "memory" / "people").mkdir()
    assert cli("read", "memory/a.md").returncode == 0
    into = cli("mv", "memory/a.md", "memory/people", "--json")
    assert into.returncode == 0 and into.json()["path"] == "memory/people/a.md", into.stderr
    made = cli("mv", "memory/people/a.md", "memory/new/", "--json")
    assert made.returncode == 0 and made.json()["path"] == "memory/new/a.md", made.stderr
    assert (workspace / "memory" / "new" / "a.md").read_text() == HERON
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    root = cli("mv", "MEMORY.md", "memory/", "--force", "--json")
    assert root.returncode == 0 and root.json()["path"] == "memory/MEMORY.md", root.stderr
    extra = workspace.parent / "extra"
    extra.mkdir()
    away = cli("mv", "memory/new/a.md", str(extra), "--extra", str(extra), "--json")  # an extra path's folder, no slash
    assert away.returncode == 0 and (extra / "a.md").read_text() == HERON, away.stdout + away.stderr
    back = cli("mv", str(extra / "a.md"), "memory/new", "--extra", str(extra), "--json")
    assert back.returncode == 0 and back.json()["path"] == "memory/new/a.md", back.stdout + back.stderr
    # A folder that is not there, without the slash, is a name as before; one that leaves the memory, refused.
    assert "is not a Markdown" in one_line_error(cli("mv", "memory/new/a.md", "memory/nowhere"))
    assert "a.md is not a memory path" in one_line_error(cli("mv", "memory/new/a.md", "./"))
    assert (workspace / "memory" / "new" / "a.md").read_text() == HERON


def test_mv_to_a_note_name_with_a_slash_is_refused_as_mv_refuses_it_not_made_a_folder(cli, workspace):
    """``mv memory/draft.md memory/final.md/``: mv(1) says "Not a directory" where no folder
    ``final.md`` is; it made one (``memory/final.md/draft.md``), which write and read of
    ``memory/final.md`` then refused as a folder. A folder so named that is there is moved into."""
    write(workspace / "memory" / "draft.md", HERON)
    write(workspace / "memory" / "taken.md", OTHER)
    assert cli("read", "memory/draft.md").returncode == 0
    for named in ("memory/final.md", "memory/Final.MD", "memory/taken.md"):
        line = one_line_error(cli("mv", "memory/draft.md", f"{named}/", "--no-index"))
        assert line == (f"error: refused: {named}/ names a folder, and {named} is not one: mv makes a new folder only for a "
                        f"name not ending in .md (a folder {named} is no note write or read takes); give {named} to rename "
                        "the note to it; nothing was moved: memory/draft.md is unchanged"), line
    assert sorted(os.listdir(workspace / "memory")) == ["draft.md", "taken.md"]
    assert (workspace / "memory" / "taken.md").read_text() == OTHER
    (workspace / "memory" / "box.md").mkdir()
    into = cli("mv", "memory/draft.md", "memory/box.md/", "--json", "--no-index")
    assert into.returncode == 0 and into.json()["path"] == "memory/box.md/draft.md", into.stderr


def test_mv_into_an_extra_path_named_through_a_linked_folder_above_it(cli, workspace, tmp_path):
    """An extra path configured through a link above it (macOS's ``/tmp`` is one to ``/private/tmp``)
    is a folder to move into, with the slash or without: the folder was walked from ``/`` refusing
    every link, and ``mv NOTE EXTRA`` was refused as "not a memory path". A link below the extra
    path is still never followed."""
    (tmp_path / "real" / "notes" / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "notes" / "linked").symlink_to(tmp_path / "real" / "notes" / "sub")
    extra = str(tmp_path / "link" / "notes")
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md", "--extra", extra).returncode == 0
    away = cli("mv", "memory/a.md", extra, "--extra", extra, "--json", "--no-index")
    assert away.returncode == 0, away.stdout + away.stderr
    assert (tmp_path / "real" / "notes" / "a.md").read_text() == HERON
    deeper = cli("mv", f"{extra}/a.md", f"{extra}/sub", "--extra", extra, "--json", "--no-index")
    assert deeper.returncode == 0, deeper.stdout + deeper.stderr
    assert (tmp_path / "real" / "notes" / "sub" / "a.md").read_text() == HERON
    assert "is not a Markdown" in one_line_error(cli("mv", f"{extra}/sub/a.md", f"{extra}/linked", "--extra", extra))
    assert os.listdir(tmp_path / "real" / "notes" / "sub") == ["a.md"]


def test_mv_force_archives_the_file_it_replaces(workspace, state_dir):
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", OTHER)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/a.md")
    with pytest.raises(UsageError, match="memory/b.md exists"):
        memory.move("memory/a.md", "memory/b.md")
    # Replaced only as rm removes it: as the reader read it (it replaced a note nobody had read).
    with pytest.raises(WriteBlocked, match="memory/b.md exists and agent 'main' has not read it"):
        memory.move("memory/a.md", "memory/b.md", force=True)
    memory.read("memory/b.md")
    write(workspace / "memory" / "b.md", OTHER + "a person's line\n")
    with pytest.raises(WriteBlocked, match="memory/b.md changed"):
        memory.move("memory/a.md", "memory/b.md", force=True)
    assert (workspace / "memory" / "a.md").read_text() == HERON
    write(workspace / "memory" / "b.md", OTHER)
    moved = memory.move("memory/a.md", "memory/b.md", force=True)
    assert moved.replaced == version_of(OTHER)
    assert (workspace / "memory" / "b.md").read_text() == HERON
    listed = origins(memory, "memory/b.md")
    assert listed[0] == ("move", version_of(HERON)) and ("remove", version_of(OTHER)) in listed
    # The replaced file is archived as rm archives it: restore --last brings it back (the moved one kept).
    back = memory.restore("memory/b.md", last=True)
    assert back.version == version_of(OTHER) and (workspace / "memory" / "b.md").read_text() == OTHER
    assert back.previous == version_of(HERON)


@pytest.mark.parametrize("freed", ["rm", "mv --force"])
def test_a_note_removed_from_a_name_stays_there_when_the_next_note_of_that_name_moves_on(workspace, state_dir, freed):
    """The removed note's entries went with the next note to take its name when that one moved on:
    `restore memory/b.md --last`, which rm and mv --force print, found no removal, and `restore
    memory/c.md --last` put the removed note over the moved one."""
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", OTHER)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/a.md")
    memory.read("memory/b.md")
    if freed == "rm":
        memory.remove("memory/b.md")
        memory.move("memory/a.md", "memory/b.md")
    else:
        memory.move("memory/a.md", "memory/b.md", force=True)
    moved = memory.move("memory/b.md", "memory/c.md")
    assert origins(memory, "memory/c.md") == [("move", moved.version), ("move", moved.version),
                                                ("external-edit", version_of(HERON))]
    assert origins(memory, "memory/b.md") == [("remove", version_of(OTHER)), ("external-edit", version_of(OTHER))]
    # A move counts what changed against the moved file's own bytes: nothing (it counted every line).
    entries = memory.activity().entries
    assert [(e.path, e.added, e.removed) for e in entries[:2]] == [("memory/c.md", 0, 0), ("memory/b.md", 0, 0)]
    back = memory.restore("memory/b.md", last=True)
    assert back.version == version_of(OTHER) and (workspace / "memory" / "c.md").read_text() == HERON


def test_a_note_moved_before_schema_14_onto_a_removed_name_takes_all_of_that_names_entries_as_then(workspace, state_dir):
    """Entries a move made before versions.arrived_by (schema 14) name no move: which of them are the
    note's cannot be told, so a move takes all of them, as it did then (the note's own history stayed
    behind under the old name, a restore of one of its versions refused)."""
    import sqlite3

    from openclaw_memory.database.connection import forget_connections

    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", OTHER)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/a.md")
    memory.read("memory/b.md")
    memory.remove("memory/b.md")
    memory.move("memory/a.md", "memory/b.md")
    forget_connections()
    with sqlite3.connect(settings_for(workspace, state_dir).data_dir / "state.db") as conn:
        conn.execute("UPDATE versions SET arrived_by = NULL")  # as a move before schema 14 left them
    memory = memory_for(workspace, state_dir)
    memory.move("memory/b.md", "memory/c.md")
    assert ("external-edit", version_of(HERON)) in origins(memory, "memory/c.md")
    assert memory.history("memory/b.md").versions == ()


def test_a_note_brought_back_by_restore_last_takes_its_whole_history_when_it_moves(workspace, state_dir):
    write(workspace / "memory" / "b.md", OTHER)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/b.md")
    memory.remove("memory/b.md")
    memory.restore("memory/b.md", last=True)
    memory.move("memory/b.md", "memory/c.md")
    assert [o for o, _ in origins(memory, "memory/c.md")] == ["move", "restore", "remove", "external-edit"]
    assert memory.history("memory/b.md").versions == ()


# -- rm and restore --last ----------------------------------------------------------------------------


def test_rm_archives_the_note_out_of_search_and_prompt_and_restore_last_brings_it_back(workspace, state_dir):
    today = "2026-11-30"
    write(workspace / "memory" / f"{today}.md", HERON)
    write(workspace / "memory" / "kettle.md", OTHER)
    memory = memory_for(workspace, state_dir)
    memory.index()
    memory.read(f"memory/{today}.md")
    import datetime as dt

    assert "lighthouse keepers" in memory.prompt(today=dt.date(2026, 11, 30), consume=False).text

    removed = memory.remove(f"memory/{today}.md")
    assert removed.version == version_of(HERON) and not (workspace / "memory" / f"{today}.md").exists()
    assert removed.index.sync.chunks_deleted > 0
    assert f"memory/{today}.md" not in {f.path for f in memory.files().files}
    assert not memory.search("lighthouse keepers northern cape", mode="text").results
    assert "lighthouse keepers" not in memory.prompt(today=dt.date(2026, 11, 30), consume=False).text
    assert origins(memory, f"memory/{today}.md")[0] == ("remove", version_of(HERON))

    back = memory.restore(f"memory/{today}.md", last=True)
    assert back.created and (workspace / "memory" / f"{today}.md").read_text() == HERON
    assert [o for o, _ in origins(memory, f"memory/{today}.md")] == ["restore", "remove", "external-edit"]
    assert [r.path for r in memory.search("lighthouse keepers northern cape", mode="text").results] == [f"memory/{today}.md"]


def test_restore_takes_a_version_or_last_and_says_when_nothing_was_removed(cli, workspace):
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    assert f"no removal of memory/a.md is recorded for this workspace ({workspace})" in one_line_error(cli("restore", "memory/a.md", "--last"))
    assert "give the version to restore, or --last" in one_line_error(cli("restore", "memory/a.md"))
    assert cli("rm", "memory/a.md").returncode == 0
    assert "not both" in one_line_error(cli("restore", "memory/a.md", version_of(HERON)[:8], "--last"))
    assert cli("restore", "memory/a.md", version_of(HERON)[:8]).returncode == 0  # the plain form still works
    assert (workspace / "memory" / "a.md").read_text() == HERON


def test_restore_never_replaces_a_file_too_big_for_the_history_to_keep(cli, workspace, state_dir):
    """restore replaced a file over [history] max_bytes / 8 and said its version "can be brought
    back": it had been evicted, and its bytes were gone (rm, mv --force and rollback refuse it)."""
    (state_dir / "openclaw-memory.toml").write_text("[history]\nmax_bytes = 80000\n")
    big = "a long line of the log\n" * 1000  # over 10,000 bytes
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    write(workspace / "memory" / "a.md", big)
    words = one_line_error(cli("restore", "memory/a.md", version_of(HERON)[:8]))
    assert "cannot be kept in the history before it is replaced" in words and "nothing was restored" in words
    assert (workspace / "memory" / "a.md").read_text() == big
    # The same by --last: a removed note whose name now holds a big file.
    write(workspace / "memory" / "b.md", HERON)
    assert cli("read", "memory/b.md").returncode == 0 and cli("rm", "memory/b.md").returncode == 0
    write(workspace / "memory" / "b.md", big)
    assert "nothing was restored" in one_line_error(cli("restore", "memory/b.md", "--last"))
    assert (workspace / "memory" / "b.md").read_text() == big
    # The control: a file the history keeps is restored over.
    write(workspace / "memory" / "b.md", "small\n")
    assert cli("restore", "memory/b.md", "--last").returncode == 0
    assert (workspace / "memory" / "b.md").read_text() == HERON


def test_rm_is_guarded_and_asks_force_for_memory_md(cli, workspace):
    write(workspace / "memory" / "a.md", HERON)
    assert cli("rm", "memory/a.md").returncode == 3  # never read
    write(workspace / "MEMORY.md", "# Memory\n- prefers tea\n")
    assert cli("read", "MEMORY.md").returncode == 0
    line = one_line_error(cli("rm", "MEMORY.md"))
    assert "OpenClaw loads MEMORY.md into every new session" in line and "--force" in line
    assert (workspace / "MEMORY.md").exists()
    assert cli("rm", "MEMORY.md", "--force").returncode == 0
    assert "prefers tea" not in cli("prompt", "--peek").stdout
    assert cli("restore", "MEMORY.md", "--last").returncode == 0
    assert "prefers tea" in cli("prompt", "--peek").stdout
    for bad, words in (("memory/folder", "is not a Markdown"), ("memory/none.md", "does not exist"), ("../x.md", "not a memory path")):
        assert words in one_line_error(cli("rm", bad))


def test_rm_mv_write_and_restore_act_on_a_name_with_white_space_around_it_as_printed(cli, workspace):
    """An extra path's note `` top.md`` (``--extra .``), named so by `files`, search and rm's own
    restore hint: every path was trimmed, so ``rm ' top.md'`` removed ``top.md`` (another note). The
    name as given wins where it is a note, or one the history has logged (a removed note); a name that
    is neither is trimmed: a new note is never made with white space around its name."""
    write(workspace / " top.md", HERON)
    write(workspace / "top.md", OTHER)
    om = ("--extra", ".")
    assert cli(*om, "read", " top.md").returncode == 0 and cli(*om, "read", "top.md").returncode == 0
    removed = cli(*om, "rm", " top.md")
    assert removed.returncode == 0 and "restore ' top.md' --last" in removed.stdout, removed.stdout
    assert not (workspace / " top.md").exists() and (workspace / "top.md").read_text() == OTHER
    # Gone, its name is still the history's: a second rm or mv of it says so, and leaves top.md be.
    again, moved = cli(*om, "rm", " top.md"), cli(*om, "mv", " top.md", "moved.md")
    assert (again.returncode, moved.returncode) == (2, 2), (again.stderr, moved.stderr)
    assert "top.md does not exist; nothing was removed" in again.stderr, again.stderr
    assert (workspace / "top.md").read_text() == OTHER and not (workspace / "moved.md").exists()
    listed = cli(*om, "history", " top.md", "--json").json()
    assert listed["path"] == " top.md" and listed["versions"][0]["origin"] == "remove", listed
    assert cli(*om, "restore", " top.md", "--last").returncode == 0  # the hint it printed brings back that note
    assert (workspace / " top.md").read_text() == HERON and (workspace / "top.md").read_text() == OTHER
    # A name no note has had: trimmed, as OpenClaw trims an agent's stray space or newline.
    assert cli(*om, "mv", "top.md", " top2.md").returncode == 0
    assert (workspace / "top2.md").read_text() == OTHER and not (workspace / " top2.md").exists()
    assert cli(*om, "write", " new.md", "--append", "new").returncode == 0
    assert (workspace / "new.md").read_text() == "new\n" and not (workspace / " new.md").exists()
    assert cli(*om, "write", "memory/n.md\n", "--append", "n").returncode == 0
    assert (workspace / "memory" / "n.md").read_text() == "n\n"
    assert cli(*om, "read", " top.md").returncode == 0 and cli(*om, "rm", " top.md").returncode == 0
    assert not (workspace / " top.md").exists() and (workspace / "top2.md").read_text() == OTHER


def test_a_removed_note_outlives_retention_and_eviction(workspace, state_dir):
    (state_dir / "openclaw-memory.toml").write_text("[history]\nkeep_per_path = 2\nmax_bytes = 8192\n")
    big = "".join(f"- line {i}: {os.urandom(24).hex()}\n" for i in range(14))  # ~900 bytes that do not compress
    write(workspace / "memory" / "gone.md", big)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/gone.md")
    memory.remove("memory/gone.md")
    write(workspace / "memory" / "gone.md", "a new file at the same name\n")
    memory.read("memory/gone.md")
    store = HistoryStore.for_settings(memory.settings)
    for i in range(4):  # new versions at the same name, past keep_per_path
        memory.write("memory/gone.md", content=f"version {i}\n")
    assert [e.origin for e in store.entries(str(workspace / "memory" / "gone.md"))] == ["remove", "agent-write", "agent-write"]
    # Other files, past max_bytes (each ~500 compressed bytes): the least recently used objects go.
    first = [memory.write(f"memory/o{i}.md", content=f"{os.urandom(480).hex()}\n").version for i in range(20)][0]
    assert not store.objects.has(first)  # eviction ran
    assert memory.restore("memory/gone.md", last=True).version == version_of(big)
    assert (workspace / "memory" / "gone.md").read_text() == big


def test_the_service_answers_mv_rm_and_restore_last(workspace, state_dir, cli):
    write(workspace / "memory" / "a.md", HERON)
    assert cli("index").returncode == 0
    service = Serve(workspace, state_dir, "--no-watch")
    try:
        service.wait_ready()
        assert cli("read", "memory/a.md").returncode == 0
        steps = [cli("mv", "memory/a.md", "memory/b.md", "--json"), cli("rm", "memory/b.md", "--json"),
                 cli("restore", "memory/b.md", "--last", "--json")]
        requests = cli("status", "--json").json()["service"]["requests"]
    finally:
        service.kill()
    for done in steps:
        assert done.returncode == 0 and done.stderr == "", done.stderr  # answered, no fallback said
    moved, removed, restored = (d.json() for d in steps)
    assert (moved["from"], moved["path"], moved["index"]["sync"]["chunksEmbedded"]) == ("memory/a.md", "memory/b.md", 0)
    assert removed["version"] == restored["version"] == version_of(HERON)
    assert requests >= 4  # they went through the service
    assert (workspace / "memory" / "b.md").read_text() == HERON


def test_a_running_watch_sees_a_move_as_a_move(workspace, state_dir, cli):
    write(workspace / "memory" / "a.md", HERON)
    watch = Watch(workspace, state_dir)
    try:
        watch.wait_started()
        wait_for(lambda: watch.change_for("memory/a.md", "added"), 120)
        assert cli("read", "memory/a.md").returncode == 0
        moved = cli("mv", "memory/a.md", "memory/b.md", "--json")  # through the watch's service
        assert moved.returncode == 0, moved.stderr
        assert moved.json()["index"]["reason"].startswith("the running watch")
        change = wait_for(lambda: watch.change_for("memory/b.md", "moved"), 120)
        assert (change["from"], change["chunksEmbedded"]) == ("memory/a.md", 0) and change["chunksReused"] > 0
        assert watch.change_for("memory/a.md", "removed") is None and watch.change_for("memory/b.md", "added") is None
        history = cli("history", "memory/b.md", "--json").json()["versions"]
        assert [v["origin"] for v in history] == ["move", "external-edit"]  # no sighting of its own by the watch
    finally:
        watch.stop()


# -- SIGKILL at every step -----------------------------------------------------------------------------

MOVE_STEPS = ["mv:journaled", "move:linked", "mv:renamed"]
EXDEV_STEPS = ["move:copy-written", "move:unlink-source", "move:source-aside", "mv:renamed"]
REMOVE_STEPS = ["rm:journaled", "move:source-aside", "rm:unlinked"]


def run_killed(workspace, state_dir, step: str, *args: str, env: dict | None = None) -> None:
    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace, capture_output=True, text=True,
                          env=env_for(workspace, state_dir, **fault(f"{step}=kill", env=env)), timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {step}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


def stray(workspace) -> list[str]:
    return [n for _r, _d, files in os.walk(workspace) for n in files if n.endswith((".tmp", ".swp")) or ".aside-" in n]


def finish_with_doctor(cli) -> dict:
    plain = cli("doctor", "--json")
    assert plain.returncode == 1 and "interrupted-move" in {f["id"] for f in plain.json()["findings"]}, plain.stdout
    fixed = cli("doctor", "--fix", "--json")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-move"]
    assert cli("doctor").returncode == 0
    return repair


@pytest.mark.parametrize("step,exdev", [(s, False) for s in MOVE_STEPS] + [(s, True) for s in EXDEV_STEPS],
                         ids=[f"{s}-rename" for s in MOVE_STEPS] + [f"{s}-exdev" for s in EXDEV_STEPS])
def test_mv_killed_at_each_step_loses_nothing_and_doctor_finishes_or_undoes_it(workspace, state_dir, cli, step, exdev):
    env = fault("move:rename=fail") if exdev else {}
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, step, "mv", "memory/a.md", "memory/b.md", env=env)
    at = [p for p in ("a.md", "b.md") if (workspace / "memory" / p).exists()]
    held = {p: (workspace / "memory" / p).read_text() for p in at}
    assert HERON in held.values() or any(HERON == (workspace / "memory" / n).read_text()
                                         for n in os.listdir(workspace / "memory") if ".aside-" in n), os.listdir(workspace / "memory")

    repair = finish_with_doctor(cli)
    finished = repair["status"] == "completed"
    assert finished == (step in ("move:source-aside", "mv:renamed", "move:unlink-source") or (step == "move:linked"))
    memory = memory_for(workspace, state_dir)
    if finished:
        assert sorted(os.listdir(workspace / "memory")) == ["b.md"] and (workspace / "memory" / "b.md").read_text() == HERON
        assert [o for o, _ in origins(memory, "memory/b.md")] == ["move", "external-edit"]
    else:
        assert sorted(os.listdir(workspace / "memory")) == ["a.md"] and (workspace / "memory" / "a.md").read_text() == HERON
        assert memory.history("memory/b.md").versions == ()
    assert stray(workspace) == []


@pytest.mark.parametrize("step", REMOVE_STEPS)
def test_rm_killed_at_each_step_loses_nothing_and_doctor_finishes_or_undoes_it(workspace, state_dir, cli, step):
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, step, "rm", "memory/a.md")
    memory = memory_for(workspace, state_dir)
    store = HistoryStore.for_settings(memory.settings)
    assert store.objects.read_bytes(version_of(HERON)) == HERON.encode()  # archived before any step

    repair = finish_with_doctor(cli)
    if step == "rm:unlinked":
        assert repair["status"] == "completed" and not (workspace / "memory" / "a.md").exists()
        assert origins(memory, "memory/a.md")[0] == ("remove", version_of(HERON))
        assert memory.restore("memory/a.md", last=True).version == version_of(HERON)
    else:
        assert repair["status"] == "rolled-back"
    assert (workspace / "memory" / "a.md").read_text() == HERON
    assert stray(workspace) == []


@pytest.mark.parametrize("save", ["renamed", "in-place"])
def test_rm_killed_before_its_unlink_then_saved_by_an_editor_is_not_finished_as_a_removal(workspace, state_dir, cli, save):
    """Killed at rm:journaled (the note archived, not unlinked), then an editor saves the note (a temp
    file renamed over it, or a write in place): doctor --fix drops the removal, saying so, and logs the
    save as an outside edit. Before, it "finished the removal": a `remove` logged at the fix's moment
    that never happened, and a rollback to just after it archived the note."""
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "rm:journaled", "rm", "memory/a.md")
    if save == "renamed":
        os.rename(write(workspace / "memory" / ".a.md.swp", HERON_2), path)
    else:
        with open(path, "r+") as f:
            f.truncate(0)
            f.write(HERON_2)

    repair = finish_with_doctor(cli)
    assert repair["status"] == "rolled-back", repair
    assert (f"memory/a.md was saved since (it holds version {version_of(HERON_2)[:12]}), so it is left as it is and "
            "nothing was removed") in repair["detail"], repair
    assert sorted(os.listdir(workspace / "memory")) == ["a.md"] and path.read_text() == HERON_2
    memory = memory_for(workspace, state_dir)
    assert origins(memory, "memory/a.md") == [("external-edit", version_of(HERON_2)), ("external-edit", version_of(HERON))]
    assert pending(memory.settings) is None
    dry = cli("rollback", "--to", moment_now(), "--dry-run", "--json")
    assert [(f["path"], f["fate"]) for f in dry.json()["files"]] == [("memory/a.md", "unchanged")], dry.stdout


def test_rm_killed_after_its_unlink_then_a_note_made_at_the_name_is_finished_and_the_new_note_kept(
        workspace, state_dir, cli):
    """Killed at rm:unlinked (the note gone), then a person makes a new note at the name: doctor --fix
    finishes the removal (logged) and leaves the new note, logged after it. Before (1d851dc), the new
    note read as the removed one saved since: "nothing was removed", and no removal was ever logged."""
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "rm:unlinked", "rm", "memory/a.md")
    assert not path.exists()
    write(path, HERON_2)

    repair = finish_with_doctor(cli)
    assert repair["status"] != "rolled-back", repair
    assert "finished the removal" in repair["detail"], repair
    assert f"the note made at its name since (version {version_of(HERON_2)[:12]}) is left as it is" in repair["detail"]
    assert path.read_text() == HERON_2
    memory = memory_for(workspace, state_dir)
    assert origins(memory, "memory/a.md")[:2] == [("external-edit", version_of(HERON_2)), ("remove", version_of(HERON))]
    assert pending(memory.settings) is None


def test_rm_killed_after_its_unlink_is_finished_by_a_restore_or_write_of_its_path_before_they_log(
        workspace, state_dir, cli):
    """Killed at rm:unlinked: `restore --last` said "no removal of memory/a.md is recorded" (blaming a
    renamed workspace); a restore by version and a write then went on, and doctor --fix logged the
    removal after both, and the write's bytes again as an outside edit. Now a write or restore of the
    path finishes the removal first (said), so the history is in the order things happened."""
    path = write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "rm:unlinked", "rm", "memory/a.md")
    back = cli("restore", "memory/a.md", "--last", "--no-index", "--json")
    assert back.returncode == 0, back.stderr
    assert back.json()["warnings"][0].startswith("finished the removal of memory/a.md"), back.json()
    assert path.read_text() == HERON
    memory = memory_for(workspace, state_dir)
    assert origins(memory, "memory/a.md") == [("restore", version_of(HERON)), ("remove", version_of(HERON)),
                                              ("external-edit", version_of(HERON))]

    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "rm:unlinked", "rm", "memory/a.md")
    assert cli("restore", "memory/a.md", version_of(HERON)[:12], "--no-index").returncode == 0
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("write", "memory/a.md", "--append", "more", "--no-index").returncode == 0
    assert origins(memory, "memory/a.md")[:3] == [("agent-write", version_of(HERON + "more\n")),
                                                  ("restore", version_of(HERON)), ("remove", version_of(HERON))]
    assert pending(memory.settings) is None and "interrupted-move" not in cli("doctor", "--json").stdout

    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "rm:unlinked", "rm", "memory/a.md")
    made = cli("write", "memory/a.md", "--append", "new", "--no-index", "--json")
    assert made.returncode == 0 and "finished the removal" in made.json()["warnings"][0], made.stdout + made.stderr
    assert [o for o, _v in origins(memory, "memory/a.md")[:2]] == ["agent-write", "remove"]


def moment_now() -> str:
    """Now, as `rollback --to` takes it, once the clock has moved past it."""
    from openclaw_memory.rollback.plan import iso_moment

    now = time.time()
    while time.time() <= now + 0.001:
        time.sleep(0.001)
    return iso_moment(now)


def test_mv_force_killed_after_archiving_the_destination_keeps_both(workspace, state_dir, cli):
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", OTHER)
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    run_killed(workspace, state_dir, "mv:replaced-removed", "mv", "--force", "memory/a.md", "memory/b.md")
    repair = finish_with_doctor(cli)
    assert repair["status"] == "rolled-back" and "restore memory/b.md --last" in repair["detail"]
    assert (workspace / "memory" / "a.md").read_text() == HERON and not (workspace / "memory" / "b.md").exists()
    assert cli("restore", "memory/b.md", "--last").returncode == 0
    assert (workspace / "memory" / "b.md").read_text() == OTHER


def test_the_next_mv_finishes_a_killed_one_first(workspace, state_dir, cli):
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "c.md", OTHER)
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/c.md").returncode == 0
    run_killed(workspace, state_dir, "mv:renamed", "mv", "memory/a.md", "memory/b.md")
    done = cli("mv", "memory/c.md", "memory/d.md")
    assert done.returncode == 0 and "finished the move of memory/a.md to memory/b.md" in done.stderr
    assert sorted(os.listdir(workspace / "memory")) == ["b.md", "d.md"]
    assert cli("doctor").returncode == 0


def test_a_killed_move_that_cannot_be_finished_now_stops_the_next_one_and_keeps_its_record(workspace, state_dir, cli, tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "c.md", OTHER)
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/c.md").returncode == 0
    run_killed(workspace, state_dir, "mv:renamed", "--extra", str(extra), "mv", "memory/a.md", str(extra / "a.md"))
    # Without the extra path its destination is no memory path: the record cannot be acted on now.
    line = one_line_error(cli("mv", "memory/c.md", "memory/d.md"))
    assert "interrupted move of memory/a.md to ../extra/a.md" in line and "could not be finished" in line
    assert (workspace / "memory" / "c.md").exists() and (extra / "a.md").read_text() == HERON
    fixed = cli("--extra", str(extra), "doctor", "--fix", "--json")
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "interrupted-move"] == ["completed"]
    assert cli("mv", "memory/c.md", "memory/d.md").returncode == 0


def test_rm_of_a_file_another_program_holds_open_for_writing_removes_nothing(workspace, state_dir):
    path = write(workspace / "memory" / "log.md", HERON)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/log.md")
    holder = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'a'); print('open', flush=True); "
                               "sys.stdin.read(); f.write('a late line\\n'); f.close()", str(path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        with pytest.raises(WriteBlocked, match="held open by another process"):
            memory.remove("memory/log.md")
    finally:
        holder.stdin.close()
        holder.wait(60)
    assert path.read_text() == HERON + "a late line\n"  # what it wrote after the attempt is in the file
    assert memory.history("memory/log.md").versions[0].origin != "remove"
    assert stray(workspace) == [] and "interrupted-move" not in {f.id for f in memory.doctor().findings}


def test_a_killed_move_survives_a_state_database_rebuilt_after_damage(workspace, state_dir, cli_process):
    import random

    write(workspace / "memory" / "a.md", HERON)
    assert cli_process("read", "memory/a.md").returncode == 0  # (no connection of this process keeps the WAL)
    run_killed(workspace, state_dir, "mv:renamed", "mv", "memory/a.md", "memory/b.md")
    assert cli_process("history", "memory/b.md").returncode == 0  # a clean close: the WAL copied into the file
    db = memory_for(workspace, state_dir).settings.data_dir / "state.db"
    assert not os.path.exists(f"{db}-wal")
    with open(db, "r+b") as fh:
        fh.write(random.Random("header").randbytes(16))
    fixed = cli_process("doctor", "--fix", "--json")
    assert [(r["id"], r["status"]) for r in fixed.json()["repairs"]][-1] == ("interrupted-move", "completed"), fixed.stdout
    assert [v["origin"] for v in cli_process("history", "memory/b.md", "--json").json()["versions"]] == ["move", "external-edit"]


def test_a_destination_folder_swapped_for_a_symlink_mid_move_never_sends_the_file_outside(workspace, state_dir, cli, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    write(workspace / "memory" / "a.md", HERON)
    (workspace / "memory" / "sub").mkdir()
    assert cli("read", "memory/a.md").returncode == 0

    def swap() -> None:
        os.rename(workspace / "memory" / "sub", workspace / "memory" / "sub-real")  # checked, opened, then swapped
        os.symlink(outside, workspace / "memory" / "sub")

    run_paused(workspace, state_dir, ("mv", "memory/a.md", "memory/sub/b.md"), "mv:journaled", swap)
    assert list(outside.iterdir()) == []  # nothing escaped
    assert (workspace / "memory" / "sub-real" / "b.md").read_text() == HERON  # it went where the folder was checked


def _swap_for_symlink(path: Path, outside: Path) -> Callable[[], None]:
    def swap() -> None:  # after the guard checked the note: it goes aside, a symlink out of the workspace takes its name
        os.rename(path, outside / f"{path.name}-orig")
        os.symlink(outside / "secret.md", path)
    return swap


def _two_notes_read_and_a_folder_outside(workspace, tmp_path, cli):
    """memory/a.md and memory/b.md, both read, and a folder outside the workspace holding a secret:
    where a swapped-in symlink points."""
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "secret.md", "SECRET\n")
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", "bee\n")
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    return outside


@pytest.mark.parametrize("args", [("mv", "memory/a.md", "memory/c.md"), ("rm", "memory/a.md")])
def test_a_note_swapped_for_a_symlink_mid_move_or_removal_is_refused_by_name_and_blocks_nothing(workspace, state_dir, cli,
                                                                                                   tmp_path, args):
    """The rename goes by name: it moved the symlink swapped in after the guard ("moved memory/a.md to
    memory/c.md", exit 0, c.md a symlink outside, its history claiming the note); rm said "cannot write
    in the workspace (.../memory): is a symlink", exit 1, and left a record that stopped every later mv,
    rm and doctor --fix until the symlink was deleted by hand."""
    outside = _two_notes_read_and_a_folder_outside(workspace, tmp_path, cli)
    step = f"{args[0]}:journaled"
    code, _, err = run_paused(workspace, state_dir, args, step, _swap_for_symlink(workspace / "memory" / "a.md", outside))
    assert code == 2, err
    assert f"refused: memory/a.md became a symlink while it was being {'moved' if args[0] == 'mv' else 'removed'}" in err
    assert not (workspace / "memory" / "c.md").exists() and not (workspace / "memory" / "c.md").is_symlink()
    assert cli("history", "memory/c.md", "--json").json()["versions"] == []
    assert (outside / "a.md-orig").read_text() == HERON and (outside / "secret.md").read_text() == "SECRET\n"
    assert cli("mv", "memory/b.md", "memory/d.md").returncode == 0  # nothing left waiting blocks the next one
    assert "interrupted-move" not in cli("doctor").stdout


def test_a_forced_move_whose_destination_became_a_symlink_is_refused_by_name_and_blocks_nothing(workspace, state_dir, cli,
                                                                                                  tmp_path):
    outside = _two_notes_read_and_a_folder_outside(workspace, tmp_path, cli)
    code, _, err = run_paused(workspace, state_dir, ("mv", "--force", "memory/a.md", "memory/b.md"), "mv:journaled",
                              _swap_for_symlink(workspace / "memory" / "b.md", outside))
    assert code == 2 and "refused: memory/b.md became a symlink while it was being replaced" in err, err
    assert (workspace / "memory" / "a.md").read_text() == HERON and (outside / "b.md-orig").read_text() == "bee\n"
    assert (workspace / "memory" / "b.md").is_symlink()
    assert cli("mv", "memory/a.md", "memory/c.md").returncode == 0
    assert "interrupted-move" not in cli("doctor").stdout


def test_a_move_record_whose_note_became_a_symlink_is_dropped_saying_so(workspace, state_dir, cli, tmp_path):
    """Killed after its record, then the note swapped for a symlink: doctor --fix drops the record
    (it said 'finish failed', the record kept, every later mv and rm refused)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    write(outside / "secret.md", "SECRET\n")
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "rm:journaled", "rm", "memory/a.md")
    _swap_for_symlink(workspace / "memory" / "a.md", outside)()
    fixed = cli("doctor", "--fix")
    assert "dropped the removal of memory/a.md" in fixed.stdout and "goes through a symlink" in fixed.stdout, fixed.stdout
    assert "interrupted-move" not in cli("doctor").stdout
    assert (outside / "a.md-orig").read_text() == HERON


def test_a_forced_move_killed_while_archiving_the_destination_gives_it_its_name_back(workspace, state_dir, cli):
    """Killed at move:source-aside while --force archived b.md: doctor --fix undid the move but left
    memory/.b.md.aside-<hex> (the whole note, hidden), logged b.md removed, and then said "No problems
    found"."""
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "b.md", OTHER)
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    run_killed(workspace, state_dir, "move:source-aside", "mv", "--force", "memory/a.md", "memory/b.md")
    assert finish_with_doctor(cli)["status"] == "rolled-back"
    assert (workspace / "memory" / "b.md").read_text() == OTHER and (workspace / "memory" / "a.md").read_text() == HERON
    assert stray(workspace) == []
    assert "remove" not in {v["origin"] for v in cli("history", "memory/b.md", "--json").json()["versions"]}


def test_a_note_left_at_its_hidden_aside_name_is_named_by_doctor_and_given_back(workspace, state_dir, cli):
    """What a move or removal leaves at .NAME.aside-<hex> (killed, or met a save under NAME): plain doctor
    said "No problems found"; --fix gives it its name back where free, drops a byte-for-byte copy, and
    leaves one that differs from the note at the name, saying so."""
    memory = workspace / "memory"
    write(memory / ".b.md.aside-0123456789abcdef", OTHER)  # its name free
    write(memory / ".c.md.aside-0123456789abcdef", HERON)  # a copy of c.md
    write(memory / "c.md", HERON)
    write(memory / ".d.md.aside-0123456789abcdef", OTHER)  # d.md holds other bytes
    write(memory / "d.md", HERON)
    plain = cli("doctor", "--json")
    (found,) = [f for f in plain.json()["findings"] if f["id"] == "move-leftovers"]
    assert found["paths"] == ["memory/.b.md.aside-0123456789abcdef", "memory/.c.md.aside-0123456789abcdef",
                              "memory/.d.md.aside-0123456789abcdef"], found
    fixed = cli("doctor", "--fix", "--json")
    repairs = [r for r in fixed.json()["repairs"] if r["id"] == "move-leftovers"]
    assert len(repairs) == 1, fixed.stdout
    repair = repairs[0]
    assert repair["status"] == "done" and "left as it is: memory/.d.md.aside-0123456789abcdef (it differs from memory/d.md" in repair["detail"]
    (still,) = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "move-leftovers"]  # named, left to the user
    assert not still["fixable"] and "differs from the note now at its name" in still["message"]
    assert (memory / "b.md").read_text() == OTHER and (memory / "c.md").read_text() == HERON
    assert sorted(p.name for p in memory.iterdir()) == [".d.md.aside-0123456789abcdef", "b.md", "c.md", "d.md"]
    assert (memory / ".d.md.aside-0123456789abcdef").read_text() == OTHER


def test_a_move_across_file_systems_of_a_file_held_open_for_writing_moves_nothing(workspace, state_dir, tmp_path):
    with tmpfs(tmp_path / "extra", "8m") as extra:
        path = write(workspace / "memory" / "log.md", HERON)
        memory = memory_for(workspace, state_dir, extra=(str(extra),))
        memory.read("memory/log.md")
        holder = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'a'); print('open', flush=True); "
                                   "sys.stdin.read(); f.write('a late line\\n'); f.close()", str(path)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline() == "open\n"
            with pytest.raises(WriteBlocked, match="held open by another process.*nothing was moved"):
                memory.move("memory/log.md", str(extra / "log.md"))
        finally:
            holder.stdin.close()
            holder.wait(60)
        assert path.read_text() == HERON + "a late line\n" and list(extra.iterdir()) == []  # no copy left
        assert memory.history(str(extra / "log.md")).versions == ()
        assert stray(workspace) == [] and "interrupted-move" not in {f.id for f in memory.doctor().findings}


def test_api_errors_are_typed(workspace, state_dir):
    write(workspace / "memory" / "a.md", HERON)
    memory = memory_for(workspace, state_dir)
    with pytest.raises(WriteBlocked):
        memory.move("memory/a.md", "memory/b.md")
    with pytest.raises(WriteBlocked):
        memory.remove("memory/a.md")


def test_a_move_killed_between_link_and_unlink_then_edited_in_place_ends_as_one_file(workspace, state_dir, cli):
    """Killed with the file at both names (one file), then written in place through the old name:
    both names hold the edit. doctor --fix finishes the move (past its deciding step, the link) and
    logs the edit; before, it found the new name not holding the moved bytes, "undid" the move and
    left two names of one file, two notes in `files` and search ("No problems remain")."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", HERON)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, "move:linked", "mv", "memory/a.md", "memory/b.md")
    with open(workspace / "memory" / "a.md", "r+") as f:  # an editor saving in place
        f.truncate(0)
        f.write(HERON_2)

    repair = finish_with_doctor(cli)
    assert repair["status"] == "completed", repair
    assert sorted(os.listdir(workspace / "memory")) == ["b.md"]
    assert (workspace / "memory" / "b.md").read_text() == HERON_2
    memory = memory_for(workspace, state_dir)
    assert origins(memory, "memory/b.md")[:2] == [("external-edit", version_of(HERON_2)), ("move", version_of(HERON))]
    assert memory.history("memory/a.md").versions == ()


def test_rm_of_a_file_written_while_it_is_removed_removes_nothing_and_says_so(workspace, state_dir):
    """An editor appends to the note after rm archived it and before its unlink: the unlink is not
    made (the bytes are not those archived), and rm is blocked, logging nothing; before, its
    recovery read "not the bytes archived" as "unlinked": exit 0, "removed", a removal logged, and
    the edited file still there."""
    path = write(workspace / "memory" / "a.md", HERON)
    assert run_process_ok(workspace, state_dir, "read", "memory/a.md")

    def edit() -> None:
        with open(path, "a") as f:
            f.write("a line saved by hand meanwhile\n")

    code, _, err = run_paused(workspace, state_dir, ("rm", "memory/a.md"), "rm:journaled", edit)
    assert code == 3, err
    assert "memory/a.md changed while it was moved (someone wrote to it); nothing was removed" in err
    assert path.read_text() == HERON + "a line saved by hand meanwhile\n"
    memory = memory_for(workspace, state_dir)
    assert "remove" not in [o for o, _ in origins(memory, "memory/a.md")]
    assert pending(memory.settings) is None and stray(workspace) == []


def run_process_ok(workspace, state_dir, *args: str) -> bool:
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace, capture_output=True,
                          env=env_for(workspace, state_dir), timeout=120).returncode == 0


def test_a_source_saved_anew_while_it_is_copied_across_file_systems_is_not_moved(workspace, state_dir):
    """An editor saves the note (a new file renamed over its name) while mv copies it to another
    file system: the copy goes and the move is blocked, the save where it was made; before, mv said
    "moved" and left the version before the save at the destination and the save at the old name
    (two notes, one stale, and the history of the one being edited handed to the stale one)."""
    write(workspace / "MEMORY.md", "# Memory\n")
    path = write(workspace / "memory" / "a.md", HERON)
    assert run_process_ok(workspace, state_dir, "read", "memory/a.md")

    def save() -> None:
        os.rename(write(workspace / "memory" / ".a.md.swx", HERON_2), path)  # vim's save

    code, _, err = run_paused(workspace, state_dir, ("mv", "memory/a.md", "memory/b.md"), "move:copy-written", save,
                              "move:rename=fail")
    assert code == 3, err
    assert "memory/a.md was replaced while it was moved (a new file was saved under its name); nothing was moved" in err
    assert sorted(os.listdir(workspace / "memory")) == ["a.md"] and path.read_text() == HERON_2
    memory = memory_for(workspace, state_dir)
    assert memory.history("memory/b.md").versions == () and pending(memory.settings) is None


@pytest.mark.parametrize("step,exdev", [("mv:journaled", False), ("move:copy-written", True)])
def test_a_killed_move_undone_leaves_no_folder_it_made(workspace, state_dir, cli, step, exdev):
    """A move into folders that did not exist, killed before its deciding step: doctor --fix undoes
    it and removes the empty folders it made (before: memory/x/y stayed, empty, with "No problems
    remain"); a folder that held something before, or got a file since, stays."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", HERON)
    write(workspace / "memory" / "kept" / "other.md", OTHER)
    assert cli("read", "memory/a.md").returncode == 0
    run_killed(workspace, state_dir, step, "mv", "memory/a.md", "memory/kept/x/y/b.md",
               env=fault("move:rename=fail") if exdev else None)
    assert (workspace / "memory" / "kept" / "x" / "y").is_dir()
    repair = finish_with_doctor(cli)
    assert repair["status"] == "rolled-back", repair
    assert sorted(os.listdir(workspace / "memory")) == ["a.md", "kept"]
    assert os.listdir(workspace / "memory" / "kept") == ["other.md"]


# -- an extra path naming one file, gone ------------------------------------------------------------


def test_a_note_moved_out_of_an_extra_path_naming_one_file_can_be_moved_back_and_restored_there(cli, workspace, state_dir,
                                                                                                 tmp_path):
    """Gone from an extra path naming one file (moved into the workspace, removed), its name was no
    memory path: `mv` back, `restore --last`, `history` and a write there were refused ("not a memory
    path"), so a note removed from there could only come back under another name."""
    solo = tmp_path / "elsewhere" / "solo.md"
    write(solo, HERON)
    write(state_dir / "openclaw-memory.toml", f"extra_paths = [{json.dumps(str(solo))}]\n")
    assert cli("read", str(solo)).returncode == 0
    assert cli("mv", str(solo), "memory/solo.md", "--no-index").returncode == 0 and not solo.exists()
    assert cli("read", "memory/solo.md").returncode == 0
    back = cli("mv", "memory/solo.md", str(solo), "--no-index", "--json")
    assert back.returncode == 0, back.stderr
    assert solo.read_text() == HERON and not (workspace / "memory" / "solo.md").exists()
    listed = cli("history", str(solo), "--json").json()
    assert [v["origin"] for v in listed["versions"]][:2] == ["move", "move"], listed

    assert cli("read", str(solo)).returncode == 0 and cli("rm", str(solo), "--no-index").returncode == 0
    assert not solo.exists()
    assert [v["origin"] for v in cli("history", str(solo), "--json").json()["versions"]][0] == "remove"
    restored = cli("restore", str(solo), "--last", "--no-index")
    assert restored.returncode == 0, restored.stderr
    assert solo.read_text() == HERON
    # `read` of the gone name stays OpenClaw's refusal; a folder that is gone too is no place either.
    solo.unlink()
    assert "not a memory path" in one_line_error(cli("read", str(solo)))
    solo.parent.rmdir()
    assert "not a memory path" in one_line_error(cli("write", str(solo), "--append", "x"))


def test_an_extra_path_naming_one_file_inside_the_workspace_is_a_place_too(cli, workspace, state_dir):
    """`notes/todo.md` configured as an extra path, moved into memory/: `mv` back and `history` of it
    were refused ("not a memory path"), as only extra paths outside the workspace were looked up."""
    todo = workspace / "notes" / "todo.md"
    write(todo, HERON)
    write(state_dir / "openclaw-memory.toml", f"extra_paths = [{json.dumps(str(todo))}]\n")
    assert cli("read", "notes/todo.md").returncode == 0
    assert cli("mv", "notes/todo.md", "memory/todo.md", "--no-index").returncode == 0 and not todo.exists()
    assert cli("read", "memory/todo.md").returncode == 0
    back = cli("mv", "memory/todo.md", "notes/todo.md", "--no-index")
    assert back.returncode == 0, back.stderr
    assert todo.read_text() == HERON
    assert cli("history", "notes/todo.md").returncode == 0
    # The legacy root stays no place, configured or not.
    write(state_dir / "openclaw-memory.toml", f"extra_paths = [{json.dumps(str(workspace / 'memory.md'))}]\n")
    assert "legacy root file, not memory" in one_line_error(cli("write", "memory.md", "--append", "x"))


def test_a_move_out_of_an_extra_path_naming_one_file_killed_after_the_unlink_is_finished(workspace, state_dir, cli,
                                                                                          tmp_path):
    """Killed once the source's name was gone, the finish resolved that name again, was refused ("not a
    memory path"), and the move stayed unfinished: every later `mv`, `rm` and `rollback` failed on it."""
    solo = tmp_path / "elsewhere" / "solo.md"
    write(solo, HERON)
    write(state_dir / "openclaw-memory.toml", f"extra_paths = [{json.dumps(str(solo))}]\n")
    assert cli("read", str(solo)).returncode == 0
    run_killed(workspace, state_dir, "mv:renamed", "mv", str(solo), "memory/solo.md", "--no-index")
    assert not solo.exists()
    fixed = cli("doctor", "--fix", "--json")  # (its warning stays: the extra path is gone, as moved)
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-move"]
    assert repair["status"] == "completed", repair
    assert "interrupted-move" not in {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    assert (workspace / "memory" / "solo.md").read_text() == HERON
    assert [o for o, _ in origins(memory_for(workspace, state_dir), "memory/solo.md")] == ["move", "external-edit"]


def test_a_fifo_where_a_notes_folder_was_is_named_as_what_it_is(cli, workspace):
    """`restore memory/p/x.md --last` with a FIFO at memory/p said "a folder on its path is a file"."""
    write(workspace / "memory" / "p" / "x.md", HERON)
    assert cli("read", "memory/p/x.md").returncode == 0 and cli("rm", "memory/p/x.md", "--no-index").returncode == 0
    (workspace / "memory" / "p").rmdir()
    os.mkfifo(workspace / "memory" / "p")
    line = one_line_error(cli("restore", "memory/p/x.md", "--last", "--no-index"))
    assert line == ("error: refused: memory/p/x.md: memory/p on its path is a FIFO (named pipe), not a folder; nothing "
                    "was restored"), line
