"""A write that the state dir's full disk stops at any step leaves no phantom version (docs/watch.md).

The history must never list an agent-write version the file never held. The state dir is on a real
tmpfs, filled so that only ``free`` pages are left, for every ``free`` from none to enough for the
whole write: each step of the write meets a full disk in one of these runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest

from conftest import env_for, fill_disk, fill_inodes, run_in_process, settings_for, tmpfs, wait_for, write
from openclaw_memory.database import forget_connections
from openclaw_memory.fsutil.hashing import hash_bytes
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.history.versions import AGENT_WRITE
from openclaw_memory.service_files import read_info

PAGE = 4096


def leave_free(folder, pages: int) -> None:
    """Fill the file system of ``folder`` up, then give back ``pages`` pages."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            while True:
                os.write(fd, b"\0" * PAGE)
        except OSError:
            pass
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - pages * PAGE))
    finally:
        os.close(fd)


def write_with_pages_free(disk: Path, ws: Path, state: Path, path: str, free: int) -> int:
    """Read ``path``, leave ``free`` pages on ``disk`` (the state dir's), append to it; check that the
    file holds the old bytes or the new ones and the history lists no agent-write version but the
    one the file holds. Returns the write's exit status."""
    write(ws / path, "# Notes\n")
    env = env_for(ws, state)
    assert run_in_process(("read", path), env, cwd=ws).returncode == 0
    leave_free(disk, free)
    try:
        res = run_in_process(("write", path, "--append", f"line {free}", "--no-index"), env, cwd=ws)
    finally:
        (disk / "filler").unlink()
    assert "Traceback" not in res.stderr, res.stderr
    assert res.returncode in (0, 1), res.stderr
    assert [p.name for p in (ws / path).parent.iterdir() if p.name.startswith(".")] == []  # no temp file left
    held = (ws / path).read_bytes()
    assert held == (b"# Notes\n" if res.returncode else f"# Notes\nline {free}\n".encode())
    forget_connections()  # the write's connection may be the read-only one of a full disk
    store = HistoryStore.for_settings(settings_for(ws, state))
    written = [e.version for e in store.entries(str(ws / path)) if e.origin == AGENT_WRITE]
    assert set(written) <= {hash_bytes(held)}, f"{free} pages free: a phantom agent-write version"
    forget_connections()
    return res.returncode


@contextmanager
def service(ws: Path, state: Path) -> Iterator[None]:
    """The workspace's service (``serve --no-watch``) running while inside."""
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=ws,
                            env=env_for(ws, state), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: read_info(settings_for(ws, state)) or proc.poll() is not None, timeout=120)
        assert proc.poll() is None, "the service did not start"
        yield
        assert proc.poll() is None, "the service died"
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.mark.parametrize("through", [
    "in-process",
    # A new service for each run: one that met a full disk answers "disk I/O error" after it (reported).
    pytest.param("service", marks=pytest.mark.slow),
])
def test_a_write_stopped_by_a_full_state_dir_never_leaves_a_phantom_version(tmp_path, through):
    outcomes = set()
    with tmpfs(tmp_path / "state-disk", "2m") as disk:
        for free in range(0, 40):
            ws, state = tmp_path / f"ws-{free}", disk / f"state-{free}"
            ws.mkdir()
            with service(ws, state) if through == "service" else nullcontext():
                outcomes.add(write_with_pages_free(disk, ws, state, "MEMORY.md", free))
            shutil.rmtree(state)  # room for the next run
    assert outcomes == {0, 1}  # some runs were stopped, and the last ones had room for the whole write


def test_a_full_extra_path_is_named_as_the_extra_path(tmp_path, cli, workspace):
    """A write failing in an extra path's folder named it "the workspace (/mnt/notes)" (``translated``'s
    catch-all), where `mv` and `rm` already said "the extra path"."""
    with tmpfs(tmp_path / "notes", "1m") as notes:
        write(notes / "plan.md", "# Plan\n")
        assert cli("--extra", str(notes), "read", str(notes / "plan.md")).returncode == 0
        fill_disk(notes)
        done = cli("--extra", str(notes), "write", str(notes / "plan.md"), "--append", "- more", "--no-index")
        assert done.returncode == 1, done.stderr
        assert f"the extra path ({notes})" in done.stderr and "the workspace" not in done.stderr, done.stderr
        assert (notes / "plan.md").read_text() == "# Plan\n"


def test_a_workspace_out_of_inodes_is_said_so_not_full(tmp_path, cli, workspace):
    """Its file system out of inodes, megabytes free: a new note's write said "the disk is full: no
    space left to write in the workspace"."""
    with tmpfs(tmp_path / "few", "20m", inodes=12) as few:
        write(few / "memory" / "a.md", "# A\n")
        fill_inodes(few)
        done = cli("-w", str(few), "write", "memory/b.md", "--append", "new", "--no-index")
        assert done.returncode == 1, done.stderr
        assert "no inode is left on the file system of the workspace" in done.stderr, done.stderr
        assert "disk is full" not in done.stderr and not (few / "memory" / "b.md").exists()


def test_an_export_into_a_folder_out_of_inodes_is_said_so_not_full(tmp_path, cli, workspace):
    """`export` where the file system has space but no inode: "the disk is full: no space left to
    write in the folder ..."."""
    write(workspace / "MEMORY.md", "# Memory\n")
    with tmpfs(tmp_path / "few", "20m", inodes=12) as few:
        fill_inodes(few)
        done = cli("export", str(few / "backup.tar.gz"))
        assert done.returncode == 1 and "no inode is left on the file system of the folder" in done.stderr, done.stderr
        assert "disk is full" not in done.stderr and not (few / "backup.tar.gz").exists()
