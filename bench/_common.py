"""Shared set-up for the benchmarks: the corpus copied into a temporary workspace."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("OPENCLAW_MEMORY_CORPUS", REPO.parent / "shared" / "corpus" / "openclaw-docs"))
ROOT = Path(os.environ.get("OPENCLAW_MEMORY_BENCH_DIR", Path(tempfile.gettempdir()) / "openclaw-memory-bench"))
sys.path.insert(0, str(REPO))


def fresh_workspace(name: str) -> tuple[Path, Path]:
    """A new workspace with the corpus as its ``memory/`` tree, and an empty state dir."""
    if not CORPUS.is_dir():
        sys.exit(f"corpus not found at {CORPUS} (set OPENCLAW_MEMORY_CORPUS)")
    base = ROOT / name
    shutil.rmtree(base, ignore_errors=True)
    ws, state = base / "ws", base / "state"
    shutil.copytree(CORPUS, ws / "memory", ignore=shutil.ignore_patterns(".git"))
    (ws / "MEMORY.md").write_text("# Memory\n\n- The user reads the OpenClaw docs a lot.\n", encoding="utf-8")
    state.mkdir(parents=True)
    return ws, state


def settings_for(ws: Path, state: Path):
    from openclaw_memory.settings import Overrides, resolve_settings

    return resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})


def cli(ws: Path, state: Path, *args: str) -> tuple[float, subprocess.CompletedProcess]:
    """Run the CLI in a new process; returns (wall seconds, result)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state))
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], env=env, capture_output=True, text=True, cwd=ws)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"openclaw-memory {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return elapsed, proc


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def median(values: list[float]) -> float:
    return statistics.median(values)
