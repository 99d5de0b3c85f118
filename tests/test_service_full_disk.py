"""The service on a state dir whose disk is full: the reason is said, naming where.

``serve``, ``watch`` and ``mcp --http`` said only "the disk is full: free some space and run the
command again" (its info file's write, naming no place); ``mcp --serve`` made every tool call say
"the memory service did not start (exit 1); see .../service.log", a log the service could not write
its error in (0 bytes): "full" was said nowhere. Real tmpfs mounts (skipped where none can be made)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import env_for, fill_disk, settings_for, tmpfs, write
from openclaw_memory.errors import DiskFull
from openclaw_memory.service_files import service_dir


@pytest.mark.parametrize("args", [("serve", "--no-watch"), ("watch",), ("mcp", "--http", "127.0.0.1:0")])
def test_the_service_on_a_full_state_disk_names_its_folder(workspace, tmp_path, cli, args):
    write(workspace / "MEMORY.md", "Pistachio.\n")
    with tmpfs(tmp_path / "st", "4m") as st:
        assert cli("status", env={"OPENCLAW_WORKSPACE": str(workspace), "OPENCLAW_STATE_DIR": str(st)}).returncode == 0
        fill_disk(st)
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], env=env_for(workspace, st),
                              cwd=workspace, capture_output=True, text=True, timeout=120)
        folder = service_dir(settings_for(workspace, st))
        assert done.returncode == 1, done.stderr
        assert f"the disk is full: no space left to write in the memory service's folder {folder}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr


def test_a_service_started_for_mcp_on_a_full_state_disk_says_the_disk_is_full(workspace, tmp_path, cli, monkeypatch):
    from openclaw_memory.memory.launch import ensure_service

    write(workspace / "MEMORY.md", "Pistachio.\n")
    with tmpfs(tmp_path / "st", "4m") as st:
        assert cli("status", env={"OPENCLAW_WORKSPACE": str(workspace), "OPENCLAW_STATE_DIR": str(st)}).returncode == 0
        settings = settings_for(workspace, st)
        fill_disk(st)
        for name, value in env_for(workspace, st).items():
            monkeypatch.setenv(name, value)
        with pytest.raises(DiskFull) as raised:
            ensure_service(settings)
        said = raised.value.message
        assert said.startswith(f"the disk is full: no space left to write in the state dir {settings.data_dir}; "
                               "the memory service did not start (exit 1) and could not write why in its log "), said
        assert (settings.data_dir / "service.log").stat().st_size == 0  # (the log had nothing to say)
