"""Something other than a lock file at a lock's path (a folder, a symbolic link, a socket): the
command that takes the lock sets it aside under ``damaged/`` and works, plain ``doctor`` names
it and changes nothing, ``doctor --fix`` sets it aside; nothing it held or pointed to is lost."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from conftest import settings_for, write


def _folder(path: Path, outside: Path) -> None:
    path.mkdir()
    (path / "kept.txt").write_text("a person's note left here\n")


def _link_outside(path: Path, outside: Path) -> None:
    path.symlink_to(outside)


def _dangling_link(path: Path, outside: Path) -> None:
    path.symlink_to(path.parent / "nowhere")


def _socket(path: Path, outside: Path) -> None:
    # Bound by its name in its folder: the full path may be longer than a socket address allows.
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(path.name)
    finally:
        os.chdir(here)


def _fifo(path: Path, outside: Path) -> None:
    os.mkfifo(path)


DAMAGES = {"folder": _folder, "link outside": _link_outside, "dangling link": _dangling_link, "socket": _socket,
           "fifo": _fifo}

# (lock, its path under the data dir, the command that takes it)
LOCKS = {
    "write": ("write.lock", ("write", "memory/new.md", "--append", "a new line", "--no-index")),
    "doctor": ("doctor.lock", ("doctor", "--fix")),
    "index": ("index/locks/memory-root-main.lock", ("index",)),
}


@pytest.fixture
def data_dir(workspace: Path, state_dir: Path, cli) -> Path:
    # Every lock file made once.
    assert cli("write", "MEMORY.md", "--append", "- green tea").returncode == 0
    assert cli("doctor", "--fix").returncode == 0
    assert cli("index").returncode == 0
    return settings_for(workspace, state_dir).data_dir


def _odd(data_dir: Path, outside: Path, rel: str, damage: str) -> Path:
    path = data_dir / rel
    path.unlink()
    DAMAGES[damage](path, outside)
    return path


def _kept(data_dir: Path, rel: str, damage: str, outside: Path) -> None:
    """What was at the lock's path is under damaged/<stamp>/, as it was; what a link named is untouched."""
    (stamp,) = (data_dir / "damaged").iterdir()
    moved = stamp / rel
    assert outside.read_text() == "not ours\n"
    if damage == "folder":
        assert (moved / "kept.txt").read_text() == "a person's note left here\n"
    elif damage == "link outside":
        assert os.readlink(moved) == str(outside)
    elif damage == "dangling link":
        assert os.readlink(moved) == str(data_dir / rel).rsplit("/", 1)[0] + "/nowhere"
    elif damage == "socket":
        assert stat.S_ISSOCK(os.lstat(moved).st_mode)
    else:
        assert stat.S_ISFIFO(os.lstat(moved).st_mode)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    return write(tmp_path / "outside.txt", "not ours\n")


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("lock", LOCKS)
def test_the_command_taking_a_lock_sets_aside_what_is_at_its_path_and_works(lock, damage, data_dir, outside,
                                                                           cli_process):
    rel, command = LOCKS[lock]
    path = _odd(data_dir, outside, rel, damage)

    result = cli_process(*command, timeout=120)  # its own process: a FIFO opened to read blocked forever

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert stat.S_ISREG(os.lstat(path).st_mode)  # the lock file, made anew
    _kept(data_dir, rel, damage, outside)


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("rel", ["write.lock", "index/locks/memory-root-main.lock"])
def test_plain_doctor_names_it_and_doctor_fix_sets_it_aside(rel, damage, data_dir, outside, cli, cli_process):
    path = _odd(data_dir, outside, rel, damage)
    before = os.lstat(path)

    plain = cli_process("doctor", "--json", timeout=120)  # its own process: a FIFO opened to read blocked forever

    assert plain.returncode == 1
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "lock-not-a-file"]
    assert finding["paths"] == [str(path)] and finding["fixable"]
    assert (os.lstat(path).st_ino, os.lstat(path).st_mode) == (before.st_ino, before.st_mode)  # plain doctor moved nothing
    assert not (data_dir / "damaged").exists()

    fixed = cli("doctor", "--fix", "--json")

    assert fixed.returncode == 0, fixed.stdout
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "lock-not-a-file"] == ["done"]
    _kept(data_dir, rel, damage, outside)
    assert cli("doctor").returncode == 0
    assert cli("write", "memory/after.md", "--append", "written").returncode == 0


def test_a_lock_file_is_never_set_aside(data_dir):
    """The control: a lock file (here held by this process) stays where it is, its lock with it."""
    from openclaw_memory.fsutil.lock import FileLock, set_aside_odd_lock

    path = str(data_dir / "write.lock")
    inode = os.stat(path).st_ino
    with FileLock(path) as held:
        assert set_aside_odd_lock(path)
        assert held.held_at_path() and os.stat(path).st_ino == inode
    assert not (data_dir / "damaged").exists()
