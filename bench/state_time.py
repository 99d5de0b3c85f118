"""Wall time of `openclaw-memory state` on a synthetic workspace (figures, not a test).

First run (every file is new to the history: hashed and kept), a repeat with nothing changed, and
a repeat after editing 1% of the notes; each in a fresh process. With ``--baseline PATH`` (a
checkout of an earlier version) the same runs are made with that code, in its own state dir.

Target: a repeat costs what changed, not what exists (repeat << first run).

Usage: .venv/bin/python bench/state_time.py [--notes 2000] [--baseline /work/main]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

from _common import REPO, ROOT


def workspace(folder, notes: int) -> list:
    paths = []
    for i in range(notes):
        sub = folder / "memory" / f"d{i // 200:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"n{i:05d}.md"
        path.write_text(f"# Note {i}\n\n" + f"Fact {i}: something worth remembering about item {i}.\n" * 20, encoding="utf-8")
        paths.append(path)
    (folder / "MEMORY.md").write_text("# Memory\n", encoding="utf-8")
    return paths


def state_once(code: str, ws, state) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(PYTHONPATH=code, OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state))
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "state", "--json"], env=env, cwd=ws, capture_output=True)
    if done.returncode != 0:
        sys.exit(f"state failed ({code}): {done.stderr.decode()[-2000:]}")
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--baseline")
    args = parser.parse_args()
    base = ROOT / "state-time"
    shutil.rmtree(base, ignore_errors=True)
    ws = base / "ws"
    paths = workspace(ws, args.notes)
    time.sleep(2.1)  # older than the racy window: a repeat may trust the stat
    codes = ([("baseline", args.baseline)] if args.baseline else []) + [("this", str(REPO))]
    rows = []
    for label, code in codes:
        state = base / f"state-{label}"
        state.mkdir()
        first = state_once(code, ws, state)
        again = state_once(code, ws, state)
        for path in paths[:: 100]:
            path.write_text(path.read_text(encoding="utf-8") + "edited\n", encoding="utf-8")
        edited = state_once(code, ws, state)
        rows.append((label, first, again, edited))
    print(f"{args.notes} notes; times in seconds, one fresh process each")
    print(f"{'code':9s} {'first':>8s} {'repeat':>8s} {'1% edited':>10s}")
    for label, first, again, edited in rows:
        print(f"{label:9s} {first:8.2f} {again:8.2f} {edited:10.2f}")


if __name__ == "__main__":
    main()
