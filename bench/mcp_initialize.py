"""Time from starting ``openclaw-memory mcp`` (no service) to its answer to ``initialize``, and to
its answer to ``tools/list`` after it, at rest and with the machine loaded (figures, not a test).

OpenClaw's client gives a stdio server 5 s to answer ``initialize``. The workspace has an index
(built with the real model first), so a server that loads the model at start competes with its
own handshake. ``--load N`` runs N busy processes beside it. With ``--baseline PATH`` (another
checkout), the same runs come from that checkout too, interleaved, in the same run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _busy() -> None:
    while True:
        pass


def _handshake(checkout: Path, env: dict) -> tuple[float, float]:
    env = {**env, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=env["OPENCLAW_WORKSPACE"])
    assert proc.stdin and proc.stdout

    def send(message: dict) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    proc.stdout.readline()
    initialized = time.perf_counter() - start
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    proc.stdout.readline()
    listed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=120)
    return initialized, listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--load", type=int, nargs="*", default=[0, 4], help="busy processes beside it (default: 0 4)")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-mcp-"))
    ws, state = tmp / "ws", tmp / "state"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\n- prefers green tea\n")
    (ws / "memory" / "2026-11-30.md").write_text("# Nov 30\n\nBooked the hiking trip.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state), OPENCLAW_MEMORY_SERVICE="off")
    subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], env={**env, "PYTHONPATH": str(REPO)},
                   cwd=ws, check=True, capture_output=True)
    checkouts = [("this checkout", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    print(f"{'load':<6}{'checkout':<16}{'initialize p50':>16}{'max':>8}{'tools/list p50':>16}")
    for load in args.load:
        busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(load)]
        for p in busy:
            p.start()
        try:
            times: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in checkouts}
            for _ in range(args.runs):
                for label, checkout in checkouts:
                    times[label].append(_handshake(checkout, env))
        finally:
            for p in busy:
                p.kill()
        for label, _ in checkouts:
            inits = [t[0] for t in times[label]]
            lists = [t[1] for t in times[label]]
            print(f"{load:<6}{label:<16}{statistics.median(inits) * 1000:>14.0f}ms{max(inits) * 1000:>6.0f}ms"
                  f"{statistics.median(lists) * 1000:>14.0f}ms")


if __name__ == "__main__":
    main()
