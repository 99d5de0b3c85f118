"""Cold start of the light commands, as new processes (figures, not a test).

Each command runs on a small workspace, median of ``--runs``, beside ``python -c pass``. With
``--baseline PATH`` (another checkout of this project, e.g. a worktree of an older commit), the
same commands run from that checkout too, in the same run, so the two columns are comparable.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

COMMANDS = (
    ("files", ["files"]),
    ("read", ["read", "MEMORY.md"]),
    ("prompt", ["prompt", "--peek"]),
    ("state", ["state"]),
    ("history", ["history", "MEMORY.md"]),
    ("doctor", ["doctor"]),
    ("watchdog verify", ["watchdog", "verify"]),
    ("write", ["write", "memory/2026-11-30.md", "--append", "- bench", "--no-index"]),
)


def median_ms(cmd: list[str], env: dict, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-start-"))
    ws = tmp / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# root\nline\n")
    (ws / "memory/2026-11-30.md").write_text("today\n")
    checkouts = [("this checkout", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    envs = {}
    for label, root in checkouts:
        env = {**base_env, "PYTHONPATH": str(root), "OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(tmp / label)}
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "openclaw_memory")], check=True)
        subprocess.run([sys.executable, "-m", "openclaw_memory", "watchdog", "snapshot"], env=env, stdout=subprocess.DEVNULL)
        envs[label] = env
    t_pass = median_ms([sys.executable, "-c", "pass"], base_env, args.runs)
    print(f"cold start, median of {args.runs} ({sys.executable}):")
    print(f"{'command':22s}" + "".join(f"{label:>18s}" for label, _ in checkouts))
    print(f"{'python -c pass':22s}" + "".join(f"{t_pass:15.1f} ms" for _ in checkouts))
    for name, argv in COMMANDS:
        row = [median_ms([sys.executable, "-m", "openclaw_memory", *argv], envs[label], args.runs) for label, _ in checkouts]
        print(f"{name:22s}" + "".join(f"{t:15.1f} ms" for t in row))


if __name__ == "__main__":
    main()
