"""Shared fixtures: real workspaces in temporary folders, and the CLI run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "openclaw-docs"


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    sd = tmp_path / "state"
    sd.mkdir()
    return sd


def env_for(workspace: Path, state_dir: Path, **extra: str) -> dict:
    """This process's environment without any OPENCLAW* setting, naming one workspace and state dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(workspace), OPENCLAW_STATE_DIR=str(state_dir))
    env.update(extra)  # may name another workspace or state dir
    return env


def wait_for(condition, timeout: float, step: float = 0.1):
    """Poll ``condition`` until it returns something true (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(step)


@pytest.fixture(scope="module")
def module_state_dir(tmp_path_factory, request) -> Path:
    """One state dir for a whole module of process tests: the model's ONNX export is made once."""
    return tmp_path_factory.mktemp(f"{request.module.__name__.removeprefix('test_')}-state")


@pytest.fixture
def cli(workspace: Path, state_dir: Path):
    """Run ``openclaw-memory`` in a new process with this test's workspace and state dir."""

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd=None, timeout: float = 300) -> CliResult:
        full_env = env_for(workspace, state_dir, **(env or {}))
        proc = subprocess.run(
            [sys.executable, "-m", "openclaw_memory", *args],
            input=input,
            capture_output=True,
            text=True,
            env=full_env,
            cwd=cwd or workspace,
            timeout=timeout,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def shared_index_state(tmp_path_factory) -> Path:
    """One state dir for every test that indexes: the model's ONNX export is made once per session."""
    return tmp_path_factory.mktemp("shared-index-state")


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted at ``folder`` (for full disks and cross-device moves); skips
    the test where this machine cannot mount one (mounting needs root)."""
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or 'mount failed'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
