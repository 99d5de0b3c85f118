"""doctor names a state dir (or data dir) this user cannot create or write: every command that keeps
state there failed with exit 2 while doctor said "No problems found." (exit 0). Asked as uid 65534,
in a forked child, under a 0755 ``mkdtemp`` folder (``base``)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
from test_private_state import NOBODY, as_nobody

from conftest import env_for, run_in_process, write

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534)")


@pytest.fixture(scope="module", autouse=True)
def warm(tmp_path_factory) -> None:
    """Every module doctor imports, imported here first: the child acting as uid 65534 may not reach
    the interpreter's own library folder to import one."""
    folder = tmp_path_factory.mktemp("warm")
    write(folder / "ws" / "MEMORY.md", "# M\n")
    for args in (("doctor", "--json"), ("write", "MEMORY.md", "--append", "x", "--no-index")):
        run_in_process(args, env=env_for(folder / "ws", folder / "state"), cwd=folder / "ws")


def _nobody(env: dict, ws: Path, *args: str) -> dict:
    return as_nobody(lambda: dataclasses.asdict(run_in_process(args, env=env, cwd=ws)))


def _workspace(base: Path) -> Path:
    ws = base / "ws"
    write(ws / "MEMORY.md", "# M\n")
    for path in (ws, ws / "MEMORY.md"):
        os.chown(path, NOBODY, NOBODY)
    return ws


def test_a_state_dir_this_user_cannot_write_is_an_error_naming_it(base):
    ws, state = _workspace(base), base / "state"
    state.mkdir(mode=0o555)
    os.chown(state, NOBODY, NOBODY)
    env = env_for(ws, state)
    write_run = _nobody(env, ws, "write", "MEMORY.md", "--append", "x")
    assert write_run["returncode"] == 2, write_run
    done = _nobody(env, ws, "doctor", "--json")
    assert done["returncode"] == 1, done
    found = [f for f in json.loads(done["stdout"])["findings"] if f["id"] == "state-dir-not-writable"]
    assert len(found) == 1 and found[0]["severity"] == "error" and found[0]["paths"] == [str(state)], found
    assert f"The state dir {state} cannot be written by this user (uid 65534)" in found[0]["message"]
    assert "--state-dir" in found[0]["message"] and "chmod u+rwx" in found[0]["message"]
    assert sorted(os.listdir(state)) == []  # nothing made to find out


def test_a_state_dir_that_cannot_be_created_under_a_read_only_home_is_an_error(base):
    ws, home = _workspace(base), base / "home"
    home.mkdir(mode=0o555)
    env = {k: v for k, v in env_for(ws, base / "unused").items() if k != "OPENCLAW_STATE_DIR"}
    env["HOME"] = str(home)
    done = _nobody(env, ws, "doctor")
    assert done["returncode"] == 1, done
    assert (f"error: state-dir-not-writable\nThe state dir {home}/.openclaw does not exist and cannot be created by this "
            f"user (uid 65534): {home} cannot be written") in done["stdout"], done
    assert os.listdir(home) == []


def test_a_state_dir_this_user_may_write_is_no_finding(base):
    ws, state = _workspace(base), base / "state"
    state.mkdir(mode=0o700)
    os.chown(state, NOBODY, NOBODY)
    done = _nobody(env_for(ws, state), ws, "doctor", "--json")
    assert "state-dir-not-writable" not in done["stdout"], done


def test_a_state_dir_this_user_cannot_read_is_the_state_dir_error(base):
    # `chmod 000` state dir: the bare OSError's line, {"error": "Permission denied (/.../st/openclaw.json)"}, exit 1.
    ws, state = _workspace(base), base / "state"
    state.mkdir(mode=0o700)
    os.chown(state, NOBODY, NOBODY)
    os.chmod(state, 0)
    for args in (("files", "--json"), ("doctor", "--json")):
        done = _nobody(env_for(ws, state), ws, *args)
        assert done["returncode"] == 2, done
        said = json.loads(done["stdout"])["error"]
        assert said.startswith(f"the state dir {state} cannot be read by this user (uid 65534): Permission denied"), said
        assert "chmod u+rwx" in said and "--state-dir" in said


def test_a_state_dir_under_another_users_closed_folder_says_give_another_state_dir_once(base):
    """Its parent root's and 0700: "... its owner gives it back (`chown`), or give another state dir,
    or give another state dir (--state-dir DIR or OPENCLAW_STATE_DIR)"."""
    ws, shut = _workspace(base), base / "shut"
    shut.mkdir(mode=0o700)
    state = shut / "state"
    state.mkdir(mode=0o700)
    done = _nobody(env_for(ws, state), ws, "files", "--json")
    assert done["returncode"] == 2, done
    said = json.loads(done["stdout"])["error"]
    assert f"the folder {shut} (mode 700) belongs to another user (uid 0)" in said, said
    assert said.count("give another state dir") == 1 and said.endswith("(--state-dir DIR or OPENCLAW_STATE_DIR)"), said


def test_a_full_disk_under_the_state_dir_is_a_finding(workspace, state_dir, cli, tmp_path):
    """A full state-dir disk made every rm and write fail ("the disk is full ... nothing was changed")
    while doctor said "No problems found.", exit 0."""
    from conftest import fill_disk, tmpfs, write

    write(workspace / "MEMORY.md", "# Memory\n")
    with tmpfs(tmp_path / "small", "1m") as small:
        st = ("--state-dir", str(small / "st"))
        assert cli("read", "MEMORY.md", *st).returncode == 0
        assert "disk-full" not in cli("doctor", "--json", *st).stdout
        fill_disk(small)
        done = cli("doctor", "--json", *st)
        assert done.returncode == 1, done.stdout
        (found,) = [f for f in done.json()["findings"] if f["id"] == "disk-full"]
        assert found["message"].startswith(f"The disk of the state dir ({small / 'st'}) is full: "), found
        assert found["message"].endswith("or give another state dir on a disk with room (--state-dir DIR or "
                                         "OPENCLAW_STATE_DIR; it starts without this one's index and history)."), found
        assert cli("write", "MEMORY.md", "--append", "x", *st).returncode != 0  # (what the finding says)


def test_a_full_workspace_disk_is_not_told_to_give_another_state_dir(cli, tmp_path):
    """The workspace's full disk was advised "(or give another state dir: --state-dir DIR)", which frees
    nothing there: the state dir is elsewhere. On a disk holding both, one finding names both."""
    from conftest import fill_disk, tmpfs, write

    with tmpfs(tmp_path / "small", "1m") as small:
        write(small / "ws" / "MEMORY.md", "# Memory\n")
        fill_disk(small)
        done = cli("-w", str(small / "ws"), "doctor", "--json")
        assert done.returncode == 1, done.stdout
        (found,) = [f for f in done.json()["findings"] if f["id"] == "disk-full"]
        said = found["message"]
        assert said.startswith(f"The disk of the workspace ({small / 'ws'}) is full: "), said
        assert "no memory file can be written, moved or restored" in said and "state dir" not in said, said
        assert said.endswith("Free some space there: only room on the workspace's own disk lets its memory files "
                             "be written."), said

        both = cli("-w", str(small / "ws"), "--state-dir", str(small / "st"), "doctor", "--json")
        (found,) = [f for f in both.json()["findings"] if f["id"] == "disk-full"]
        said = found["message"]
        assert said.startswith(f"The disk of the state dir ({small / 'st'}) and of the workspace ({small / 'ws'}) "
                               "is full: "), said
        assert "every command that records something" in said and "no memory file can be written" in said, said
        assert said.endswith("both are on this disk, and another state dir (--state-dir) would still leave the "
                             "workspace's memory files no room to be written."), said
        assert found["paths"] == [str(small), str(small / "ws")], found


def test_no_inode_left_under_the_state_dir_is_a_full_disk(workspace, cli, tmp_path):
    """Out of inodes (blocks free): doctor said "No problems found." (exit 0) and a write failed with
    "attempt to write a readonly database (is the state dir writable?)"; then an index said "No space
    left on device (is the state dir writable?)" (its lock file could not be made) and a write "the
    disk is full" of a disk with megabytes free."""
    from conftest import fill_inodes, tmpfs

    write(workspace / "MEMORY.md", "# Memory\n")
    with tmpfs(tmp_path / "few", "20m", inodes=40) as small:
        st = ("--state-dir", str(small / "st"))
        assert cli("read", "MEMORY.md", *st).returncode == 0
        assert "disk-full" not in cli("doctor", "--json", *st).stdout
        from openclaw_memory.database.handles import close_all

        close_all()  # as a new process finds it: the write must make the database's -wal again
        fill_inodes(small)
        assert os.statvfs(small).f_ffree == 0 and os.statvfs(small).f_bfree * 4096 > 1024 * 1024
        done = cli("doctor", "--json", *st)
        assert done.returncode == 1, done.stdout
        (found,) = [f for f in done.json()["findings"] if f["id"] == "disk-full"]
        assert found["message"].startswith(f"The disk of the state dir ({small / 'st'}) is full: no inode left"), found
        for command in (("write", "MEMORY.md", "--append", "x"), ("index",)):
            done = cli(*command, *st)
            said = done.stdout + done.stderr
            assert done.returncode == 1, said
            assert "no inode is left on the file system of the state dir" in said, said
            assert "writable" not in said and "readonly" not in said and "disk is full" not in said, said
