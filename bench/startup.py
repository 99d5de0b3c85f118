"""Cold start of the light commands, as new processes (figures, not a test).

Each command runs on a small workspace, median of ``--runs``, beside ``python -c pass``: wall
time, and in brackets the CPU time of the process (user + system), which a machine others load
inflates less. With ``--baseline PATH`` (another checkout of this project, e.g. a worktree of an
older commit), the same commands run from that checkout too, in the same run, so the columns
are comparable.
"""

from __future__ import annotations

import argparse
import os
import resource
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


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _once(cmd: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds of one run."""
    cpu, start = _cpu(), time.perf_counter()
    # Run from the workspace: `python -m` puts the current folder first on sys.path, and from a
    # checkout that would shadow the PYTHONPATH of the other one.
    subprocess.run(cmd, env=env, cwd=env.get("OPENCLAW_WORKSPACE"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, _cpu() - cpu


def medians_ms(cmd: list[str], envs: list[dict], runs: int) -> list[tuple[float, float]]:
    """(wall, CPU) medians per environment; the runs interleave, so a load that comes and goes hits all alike."""
    times: list[list[tuple[float, float]]] = [[] for _ in envs]
    for _ in range(runs):
        for i, env in enumerate(envs):
            times[i].append(_once(cmd, env))
    return [(statistics.median(w for w, _ in t) * 1000, statistics.median(c for _, c in t) * 1000) for t in times]


def _cell(wall: float, cpu: float) -> str:
    return f"{wall:8.1f} ms [{cpu:5.1f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another checkout to time beside this one (repeatable)")
    parser.add_argument("--only", help="only these commands, comma-separated (e.g. read,files,prompt)")
    args = parser.parse_args()
    commands = [(n, a) for n, a in COMMANDS if not args.only or n in args.only.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-start-"))
    ws = tmp / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# root\nline\n")
    (ws / "memory/2026-11-30.md").write_text("today\n")
    checkouts = [("this checkout", REPO)] + [(f"{path.name or 'baseline'} ({i + 1})", path.resolve()) for i, path in enumerate(args.baseline)]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    envs = {}
    for i, (label, root) in enumerate(checkouts):
        env = {**base_env, "PYTHONPATH": str(root), "OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(tmp / f"state{i}")}
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "openclaw_memory")], check=True)
        subprocess.run([sys.executable, "-m", "openclaw_memory", "watchdog", "snapshot"], env=env, cwd=ws, stdout=subprocess.DEVNULL)
        envs[label] = env
    t_pass = medians_ms([sys.executable, "-c", "pass"], [base_env], args.runs)[0]
    print(f"cold start, median of {args.runs}: wall [CPU] ({sys.executable}, load {os.getloadavg()[0]:.1f}):")
    print(f"{'command':22s}" + "".join(f"{label:>20s}" for label, _ in checkouts))
    print(f"{'python -c pass':22s}" + "".join(f"{_cell(*t_pass):>20s}" for _ in checkouts))
    for name, argv in commands:
        row = medians_ms([sys.executable, "-m", "openclaw_memory", *argv], [envs[label] for label, _ in checkouts], args.runs)
        print(f"{name:22s}" + "".join(f"{_cell(*t):>20s}" for t in row))


if __name__ == "__main__":
    main()
