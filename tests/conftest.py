"""Shared fixtures: real workspaces in temporary folders, and the CLI run as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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


@pytest.fixture
def cli(workspace: Path, state_dir: Path):
    """Run ``openclaw-memory`` in a new process with this test's workspace and state dir."""

    def run(*args: str, input: str | None = None, env: dict | None = None, cwd=None, timeout: float = 300) -> CliResult:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
        full_env["OPENCLAW_WORKSPACE"] = str(workspace)
        full_env["OPENCLAW_STATE_DIR"] = str(state_dir)
        full_env.update(env or {})
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
