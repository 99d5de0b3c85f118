"""The watchdog's walk holds a bounded number of folder descriptors, and running out is an error."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from conftest import env_for, settings_for
from openclaw_memory.watchdog.store import SnapshotStore


def _chain(top, depth: int) -> str:
    """A chain of ``depth`` folders ``d`` under ``top``, three empty siblings at each level (they keep
    each level's descriptor wanted), a note at the bottom; its workspace-relative path."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        for sibling in ("s1", "s2", "s3"):
            os.mkdir(sibling, dir_fd=fd)
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(note, b"keep me\n")
    os.close(note)
    os.close(fd)
    return "memory/" + "d/" * depth + "deep.md"


def _limited(workspace, state_dir, limit: int, *args: str) -> subprocess.CompletedProcess:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], capture_output=True, text=True,
                          env=env_for(workspace, state_dir), cwd=workspace,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard)))


def test_a_chain_with_siblings_at_each_level_deeper_than_the_limit_is_snapshotted_whole(workspace, state_dir, cli):
    (workspace / "memory").mkdir(exist_ok=True)
    deep = _chain(workspace / "memory", 300)
    taken = _limited(workspace, state_dir, 64, "watchdog", "snapshot", "before")
    assert taken.returncode == 0, taken.stderr
    assert "cannot list" not in taken.stdout + taken.stderr
    table = SnapshotStore(settings_for(workspace, state_dir).data_dir).load("before")
    assert deep in table.paths
    checked = _limited(workspace, state_dir, 32, "watchdog", "verify")
    assert checked.returncode == 0, checked.stderr
    assert "warning" not in checked.stdout + checked.stderr and "changed" not in checked.stdout
    beat = _limited(workspace, state_dir, 64, "watchdog", "heartbeat")
    assert beat.returncode == 0, beat.stderr
    assert "deep.md" not in beat.stdout + beat.stderr
    rolled = cli("rollback", "--to", "before", "--force")
    assert rolled.returncode == 0, rolled.stderr
    assert "archive" not in rolled.stdout + rolled.stderr
    assert (workspace / deep).read_bytes() == b"keep me\n"


def test_running_out_of_descriptors_in_the_walk_is_an_error_and_records_no_snapshot(workspace, state_dir, cli):
    (workspace / "memory").mkdir(exist_ok=True)
    _chain(workspace / "memory", 40)
    taken = _limited(workspace, state_dir, 12, "watchdog", "snapshot", "before")
    assert taken.returncode == 1
    lines = taken.stderr.strip().splitlines()
    assert len(lines) == 1 and "too many open files (the limit is 12" in lines[0], taken.stderr
    assert "Traceback" not in taken.stderr
    assert SnapshotStore(settings_for(workspace, state_dir).data_dir).latest_label() is None
    assert cli("watchdog", "snapshot", "whole").returncode == 0
    for command in ("verify", "heartbeat"):
        checked = _limited(workspace, state_dir, 12, "watchdog", command)
        assert checked.returncode == 1 and "too many open files" in checked.stderr, checked.stderr
        assert "deep.md" not in checked.stdout
    assert SnapshotStore(settings_for(workspace, state_dir).data_dir).latest_label() == "whole"


@pytest.mark.parametrize("swap", ["gone", "symlink"])
def test_a_folder_let_go_and_replaced_meanwhile_is_reported_not_walked(workspace, state_dir, swap, monkeypatch):
    """A folder the walk let go of (past the bound) and opens again is the very folder it listed."""
    from openclaw_memory.watchdog import compare

    (workspace / "memory").mkdir(exist_ok=True)
    _chain(workspace / "memory", 30)
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "s1").mkdir()
    (outside / "s1" / "secret.md").write_text("not ours\n")
    real = compare._Folders.fd_of
    swapped = []

    def fd_of(self, held):
        if held.fd < 0 and not swapped:
            target = workspace / "memory" / "d"
            target.rename(workspace / "memory" / "moved")
            if swap == "symlink":
                target.symlink_to(outside)
            swapped.append(held.rel)
        return real(self, held)

    monkeypatch.setattr(compare._Folders, "fd_of", fd_of)
    from openclaw_memory.watchdog.compare import compare_workspace, rules_for

    delta = compare_workspace(workspace, rules_for(workspace, state_dir, []), None, None, 0)
    assert swapped
    assert any("cannot list this folder" in w for w in delta.warnings)
    assert not any("secret" in p for p in delta.new)


def test_closing_a_data_dir_deeper_than_the_limit_says_the_descriptors_ran_out(tmp_path):
    """close_tree's os.fwalk holds a descriptor per level: out of them it raises, never passes over."""
    folder = tmp_path / "data"
    deepest = folder.joinpath(*["x"] * 60)
    deepest.mkdir(parents=True)
    script = ("import resource, sys\n"
              "from pathlib import Path\n"
              "from openclaw_memory.errors import OutOfFiles\n"
              "from openclaw_memory.fsutil.private import close_tree\n"
              "resource.setrlimit(resource.RLIMIT_NOFILE, (32, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
              "try:\n    close_tree(Path(sys.argv[1]))\n"
              "except OutOfFiles as exc:\n    print(exc)\n")
    ran = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert f"cannot close every folder in {folder} to others: too many open files (the limit is 32" in ran.stdout
