"""Peak memory of ``read`` on a large note, whole and paged (figures, not a test).

A workspace holds ``memory/big.md`` (``--size`` MB of note lines from a fixed seed, accents and
dashes: its text is 2 bytes a character in Python) and ``memory/long.md`` (the same size in three
lines). Each case runs in a new process, which reports its own peak RSS (VmHWM, read at exit), and
its wall time: the CLI (output to /dev/null, through a pipe so it is hashed: the checkouts must
print the same bytes) and ``open_memory(...).read`` in process (the peak, and what the read added
to the process's RSS before it). With ``--baseline DIR`` (another checkout of this project, e.g. a
``git archive`` of an older commit), the same cases run from that checkout too, side by side.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MiB = 1 << 20
EVERYTHING = ("--lines", "1000000000", "--max-chars", "1000000000")

# The child reports its peak (VmHWM: per address space, fresh at exec) on a pipe at exit.
_CLI = (
    "import atexit, os, runpy, sys\n"
    "fd = int(sys.argv.pop(1))\n"
    "def peak():\n"
    "    with open('/proc/self/status') as fh:\n"
    "        os.write(fd, next(l.split()[1] for l in fh if l.startswith('VmHWM:')).encode())\n"
    "atexit.register(peak)\n"
    "sys.argv[0] = 'openclaw-memory'\n"
    "runpy.run_module('openclaw_memory', run_name='__main__')\n"
)
_IN_PROCESS = (
    "import json, os, sys\n"
    "fd, ws, state, path, window = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5])\n"
    "from openclaw_memory import open_memory\n"
    "from openclaw_memory.settings import Overrides, resolve_settings\n"
    "def status(key):\n"
    "    with open('/proc/self/status') as fh:\n"
    "        return int(next(l.split()[1] for l in fh if l.startswith(key + ':')))\n"
    "memory = open_memory(resolve_settings(Overrides(workspace=ws, state_dir=state), environ={}))\n"
    "before = status('VmRSS')\n"
    "result = memory.read(path, **window)\n"
    "os.write(fd, f'{status(\"VmHWM\")} {before}'.encode())\n"
    "print(len(result.text), result.lines, result.version)\n"
)

WORDS = ("the user sails a ketch named Étoile — the teak deck is sanded each spring; "
         "déjà vu at the harbour café, naïve plans for the regatta, a rope and a wind").split()

CASES = (
    ("read (120 lines)", "cli", "memory/big.md", ()),
    ("read --from 1000000 --lines 50", "cli", "memory/big.md", ("--from", "1000000", "--lines", "50")),
    ("read whole (--lines/--max-chars 1e9)", "cli", "memory/big.md", EVERYTHING),
    ("read whole --json", "cli", "memory/big.md", (*EVERYTHING, "--json")),
    ("read long.md --from 2 --lines 1 (a line)", "cli", "memory/long.md", ("--from", "2", "--lines", "1", "--max-chars", "1000000000")),
    ("open_memory().read (120 lines)", "api", "memory/big.md", {}),
    ("open_memory().read whole", "api", "memory/big.md", {"lines": 10**9, "max_chars": 10**9}),
)


def make_workspace(base: Path, size: int) -> Path:
    ws = base / "ws"
    (ws / "memory").mkdir(parents=True)
    rng = random.Random(7)
    written = 0
    with open(ws / "memory" / "big.md", "wb") as fh:
        while written < size:
            block = "".join("- " + " ".join(rng.choices(WORDS, k=rng.randint(4, 30))) + "\n" for _ in range(2000)).encode()
            fh.write(block)
            written += len(block)
    with open(ws / "memory" / "long.md", "wb") as fh:
        for i in range(3):
            fh.write(f"word{i} ".encode() * (size // 3 // 6) + b"\n")
    return ws


def run_case(root: Path, ws: Path, state: Path, kind: str, path: str, args) -> tuple[float, float | None, float, str]:
    """(peak MiB, RSS the read added MiB or None, wall s, digest of stdout)."""
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(PYTHONPATH=str(root), OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state))
    read_end, write_end = os.pipe()
    if kind == "cli":
        cmd = [sys.executable, "-c", _CLI, str(write_end), "read", path, *args]
    else:
        cmd = [sys.executable, "-c", _IN_PROCESS, str(write_end), str(ws), str(state), path, json.dumps(args)]
    started = time.perf_counter()
    # From the workspace: `-c` puts the current folder first on sys.path, which must not shadow PYTHONPATH.
    proc = subprocess.Popen(cmd, env=env, cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, pass_fds=(write_end,))
    os.close(write_end)
    digest = hashlib.sha256()
    assert proc.stdout is not None
    while chunk := proc.stdout.read(MiB):
        digest.update(chunk)
    proc.wait()
    wall = time.perf_counter() - started
    with os.fdopen(read_end, "rb") as fh:
        figures = fh.read().split()
    if proc.returncode != 0 or not figures:
        sys.exit(f"{root}: {' '.join(cmd[3:])} failed ({proc.returncode})")
    added = (int(figures[0]) - int(figures[1])) / 1024 if len(figures) > 1 else None
    return int(figures[0]) / 1024, added, wall, digest.hexdigest()[:12]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200, help="MB of each note (default 200)")
    parser.add_argument("--baseline", type=Path, action="append", default=[], help="another checkout to run beside this one (repeatable)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-read-"))
    ws = make_workspace(tmp, args.size * 1000 * 1000)
    checkouts = [("this checkout", REPO)] + [(f"{p.name or 'baseline'} ({i + 1})", p.resolve()) for i, p in enumerate(args.baseline)]
    print(f"notes: memory/big.md {os.path.getsize(ws / 'memory/big.md') / MiB:.0f} MiB, "
          f"memory/long.md {os.path.getsize(ws / 'memory/long.md') / MiB:.0f} MiB (3 lines); python {sys.version.split()[0]}")
    print(f"{'case':42}" + "".join(f"{label[:34]:>36}" for label, _ in checkouts))
    for name, kind, path, case_args in CASES:
        cells, digests = [], set()
        for i, (_, root) in enumerate(checkouts):
            peak, added, wall, digest = run_case(root, ws, tmp / f"state{i}", kind, path, case_args)
            digests.add(digest)
            grown = f" (+{added:.0f})" if added is not None else ""
            cells.append(f"{peak:8.0f} MiB{grown:>8} {wall:6.2f} s")
        same = "" if len(checkouts) == 1 else ("  same output" if len(digests) == 1 else "  OUTPUT DIFFERS")
        print(f"{name:42}" + "".join(f"{c:>36}" for c in cells) + same)
    print("peak RSS of the process (in process: in brackets, what the read added to it), wall time")


if __name__ == "__main__":
    main()
