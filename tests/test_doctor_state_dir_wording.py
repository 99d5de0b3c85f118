"""The ``state-dir-not-writable`` finding says truthfully what fails: the commands that change something
(index, write, restore, mv, rm) fail with exit 2, while reads, ``history`` and ``log`` of a data dir that
holds a database work, warning that nothing is recorded (it said history and a read's record failed too).
On a read-only file system (statvfs ``ST_RDONLY``) it says so and gives no ``chmod``, which cannot help
there: remount it, or another state dir. The answers of ``access`` and ``statvfs`` are the check's own
view, stood in for here (a real read-only mount needs root: the reviewer's repro)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import write


class _View:
    """``os`` as the check sees it, with a data dir it may not write and (or not) a read-only mount."""

    def __init__(self, read_only: bool):
        self.read_only = read_only

    def __getattr__(self, name):
        return getattr(os, name)

    def access(self, path, mode):
        return False if mode & os.W_OK else os.access(path, mode)

    def statvfs(self, path):
        real = os.statvfs(path)
        flags = real.f_flag | os.ST_RDONLY if self.read_only else real.f_flag & ~os.ST_RDONLY

        class _Vfs:
            f_flag = flags

            def __getattr__(self, name):  # the rest as it is (doctor's disk-full check reads the free counts)
                return getattr(real, name)

        return _Vfs()


def _message(cli, monkeypatch, read_only: bool) -> str:
    from openclaw_memory.doctor import check_state_dir

    with monkeypatch.context() as m:
        m.setattr(check_state_dir, "os", _View(read_only))
        m.setattr(check_state_dir, "read_only_mount", lambda path: read_only)  # (fsutil.lock's statvfs)
        done = cli("doctor", "--json")
    (found,) = [f for f in done.json()["findings"] if f["id"] == "state-dir-not-writable"]
    return found["message"]


@pytest.fixture
def used(workspace: Path, cli) -> None:
    write(workspace / "MEMORY.md", "# M\n")
    assert cli("read", "MEMORY.md").returncode == 0  # the data dir made, a database in it


def test_the_finding_names_what_fails_and_that_reads_and_history_still_work(used, cli, monkeypatch):
    message = _message(cli, monkeypatch, read_only=False)
    assert "(index, write, restore, mv, rm...) fails with exit 2" in message, message
    assert "reads, history and log still work, each warning that nothing is recorded" in message, message
    assert "history, restore, a read's record) fails" not in message, message
    assert "chmod u+rwx" in message and "--state-dir" in message, message


def test_on_a_read_only_file_system_it_says_so_and_gives_no_chmod(used, cli, monkeypatch):
    message = _message(cli, monkeypatch, read_only=True)
    assert "is on a read-only file system" in message and "Remount it read-write" in message, message
    assert "chmod" not in message.replace("no chmod can change that", ""), message
    assert "--state-dir" in message, message
