"""A long history: one memory file with ``--versions`` versions kept (figures, not a test).

The versions are written by the API (each a guarded append, as an agent makes them), with
``[history] keep_per_path`` at ``--versions``. Then, each in a new process: ``history --json`` (every
version listed), one more append (which prunes the oldest entry), and ``read --diff`` (the newest
two versions' bytes); wall time and peak memory (RSS) of each, beside ``python -c pass``.

Usage: .venv/bin/python bench/history_long.py [--versions 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

from _common import REPO, ROOT


def timed(args: list[str], env: dict, cwd) -> tuple[float, float]:
    """(wall ms, peak RSS MiB) of one new process (its own peak: GNU time's %M)."""
    t0 = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *args], env=env, cwd=cwd, capture_output=True)
    wall = (time.perf_counter() - t0) * 1000
    if done.returncode != 0:
        sys.exit(done.stderr.decode()[-2000:])
    return wall, int(done.stderr.decode().strip().splitlines()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", type=int, default=10_000)
    args = parser.parse_args()
    base = ROOT / "history-long"
    shutil.rmtree(base, ignore_errors=True)
    ws, state = base / "ws", base / "state"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
    (state / "openclaw-memory.toml").write_text(f"[history]\nkeep_per_path = {args.versions}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state), PYTHONPATH=str(REPO))
    writer = f"""
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.settings import resolve_settings
memory = LocalMemory(resolve_settings())
memory.read("memory/long.md")
for i in range({args.versions}):
    memory.write("memory/long.md", append=f"- entry {{i}}", update_index=False)
"""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", writer], env=env, cwd=ws, check=True)
    print(f"{args.versions} versions of memory/long.md written in {time.perf_counter() - t0:.1f} s "
          f"({(time.perf_counter() - t0) / args.versions * 1000:.1f} ms a write)")
    cli = [sys.executable, "-m", "openclaw_memory"]
    rows = [
        ("python -c pass", [sys.executable, "-c", "pass"]),
        ("history --json (every version)", [*cli, "history", "memory/long.md", "--json"]),
        ("one more append (prunes one)", [*cli, "write", "memory/long.md", "--append", "- one more", "--no-index"]),
        ("read --diff", [*cli, "read", "memory/long.md", "--diff"]),
    ]
    for name, argv in rows:
        wall, rss = timed(argv, env, ws)
        print(f"  {name:34s} {wall:8.0f} ms   peak RSS {rss:6.1f} MiB")


if __name__ == "__main__":
    main()
