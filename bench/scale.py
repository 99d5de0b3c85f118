"""Costs against the size of the memory: 300 to 30,000 daily notes in one run (figures, not a test).

Each size gets a synthetic OpenClaw-style workspace from a fixed seed (``build_workspace``: a
200-line ``MEMORY.md`` and N daily notes ``memory/YYYY-MM-DD.md`` of 20-60 lines, about 7 chunks
each), indexed once; then, every command in a new process (median of ``--runs``, after one
untimed run):

- ``write --append`` with its index update, a re-index after one note changed (edited behind the
  product's back), ``index`` with nothing changed, ``doctor``, a cold ``search`` (no service);
- a warm library search in one process (``open_memory(in_process=True)``), p50 of ``--queries``;
- a library search through a running ``serve`` (with its watch), p50 of ``--queries``;
- the commands that must stay flat: ``read``, ``history``, ``write --no-index``, ``watchdog verify``.

Every figure is printed with its ratio to the smallest size's. The index is embedded with the
model-free ``hash`` backend (the test suite's, ``OPENCLAW_MEMORY_EMBEDDING_BACKEND=hash``): the
real model would take ~40 min per 30,000 notes on two cores, and none of these commands embeds
more than a note. The peak memory of a full index with the real model against N is
``bench/index_memory.py``'s figure.

``--baseline PATH`` (a checkout of an earlier version, e.g. made with ``git worktree add
/tmp/base e48f3f0``) runs the same table with that code first, on its own copy of each workspace,
in the same run.

``--clock cpu`` reports each command's CPU seconds (user + system, the command's process and the
processes it waited for) in place of the wall clock, and the in-process library search's CPU
time: on a machine shared with other work the wall clock measures the neighbours as much as the
command (the search through the service stays wall-clock: its work is the service's).

``--only doctor,read`` measures only the rows whose name starts with one of those words (the full
index is always run: the other rows need an indexed workspace).

Usage: .venv/bin/python bench/scale.py [--sizes 300,3000,10000,30000] [--baseline /tmp/base] [--clock cpu]
       [--only doctor]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, ROOT

SEED = 42
WORDS = (
    "backup deploy review release storage migration kernel invoice budget garden recipe travel flight "
    "meeting standup roadmap incident pager database index search cache latency memory agent prompt "
    "tokens model embedding vector shard manifest history restore doctor watchdog service socket "
    "customer contract renewal feedback design sketch prototype launch metrics dashboard alert quota "
    "family dinner birthday gift doctor dentist appointment running marathon training weights coffee"
).split()
QUERIES = ("when is the storage migration", "who reviewed the release", "budget for the garden",
           "latency of the search cache", "dentist appointment", "marathon training plan",
           "incident pager rotation", "customer contract renewal", "embedding model vector shard")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16))).capitalize() + "."


def _note(rng: random.Random, title: str, lines: int) -> str:
    out = [f"# {title}", ""]
    while len(out) < lines:
        if rng.random() < 0.15:
            out += ["", f"## {rng.choice(WORDS).capitalize()} {rng.choice(WORDS)}", ""]
        else:
            out.append(f"- {_sentence(rng)}")
    return "\n".join(out[:lines]) + "\n"


def build_workspace(ws: Path, notes: int, seed: int = SEED) -> None:
    """A 200-line MEMORY.md and ``notes`` daily notes of 20-60 lines, the same for the same seed."""
    rng = random.Random(seed)
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text(_note(rng, "Memory", 200), encoding="utf-8")
    day = dt.date(2026, 12, 1)
    for _ in range(notes):
        (ws / "memory" / f"{day.isoformat()}.md").write_text(_note(rng, day.isoformat(), rng.randint(20, 60)), encoding="utf-8")
        day -= dt.timedelta(days=1)


# Library searches in a process of their own, so that the baseline's code is the one measured.
LIBRARY = r"""
import json, statistics, sys, time
from openclaw_memory import open_memory
from openclaw_memory.settings import Overrides, resolve_settings
queries, in_process = json.loads(sys.argv[1]), sys.argv[2] == "1"
clock = time.process_time if sys.argv[3] == "cpu" else time.perf_counter
settings = resolve_settings(Overrides())
memory = open_memory(settings, in_process=in_process)
memory.search(queries[0])  # untimed: the model loaded, the shards opened once
times = []
for q in queries:
    t0 = clock()
    memory.search(q)
    times.append(clock() - t0)
memory.close()
print(json.dumps(statistics.median(times)))
"""


class Code:
    """One version of the package: where it is, and the environment its processes run in."""

    def __init__(self, label: str, path: str, clock: str = "wall"):
        self.label, self.path, self.clock = label, path, clock

    def env(self, ws: Path, state: Path) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW") and k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPATH=self.path, OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state),
                   OPENCLAW_MEMORY_EMBEDDING_BACKEND="hash", PYTHONPYCACHEPREFIX=str(ROOT / "scale-pycache" / self.label))
        return env

    def run(self, ws: Path, state: Path, *args: str, ok=(0,)) -> float:
        t0, cpu0 = time.perf_counter(), _children_cpu()
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], env=self.env(ws, state), cwd=ws,
                              capture_output=True, text=True)
        seconds = _children_cpu() - cpu0 if self.clock == "cpu" else time.perf_counter() - t0
        if done.returncode not in ok:
            sys.exit(f"[{self.label}] openclaw-memory {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return seconds

    def library(self, ws: Path, state: Path, queries: list[str], in_process: bool) -> float:
        clock = self.clock if in_process else "wall"  # through the service the work is the service's
        done = subprocess.run([sys.executable, "-c", LIBRARY, json.dumps(queries), "1" if in_process else "0", clock],
                              env=self.env(ws, state), cwd=ws, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"[{self.label}] library search failed: {done.stderr[-2000:]}")
        return float(done.stdout.strip().splitlines()[-1])


def measure(code: Code, ws: Path, state: Path, runs: int, queries: list[str], only: tuple[str, ...] = ()
            ) -> dict[str, float]:
    note = sorted((ws / "memory").iterdir())[len(list((ws / "memory").iterdir())) // 2].name
    rel = f"memory/{note}"
    out: dict[str, float] = {}
    out["full index (hash)"] = code.run(ws, state, "index")
    code.run(ws, state, "watchdog", "snapshot")
    code.run(ws, state, "read", rel)

    def wanted(row: str) -> bool:
        return not only or row.startswith(only)

    def timed(row: str, *args: str, before=None, ok=(0,)) -> None:
        if not wanted(row):
            return
        times = []
        for i in range(runs + 1):
            if before is not None:
                before(i)
            seconds = code.run(ws, state, *args, ok=ok)
            if i:  # the first run is untimed: byte-code and page cache warm
                times.append(seconds)
        out[row] = statistics.median(times)

    counter = iter(range(10**6))
    times = []
    for i in range(runs + 1 if wanted("write --append (+ index)") else 0):
        seconds = code.run(ws, state, "write", rel, "--append", f"- scale bench line {next(counter)} storage review")
        if i:
            times.append(seconds)
    if times:
        out["write --append (+ index)"] = statistics.median(times)

    def edit(_i: int) -> None:
        with open(ws / "memory" / note, "a", encoding="utf-8") as fh:
            fh.write(f"- edited behind the product's back {next(counter)}\n")

    timed("re-index, one note changed", "index", before=edit)
    timed("index, nothing changed", "index")
    timed("doctor", "doctor", ok=(0, 1, 2))
    timed("cold search (no service)", "search", "storage migration review")
    if wanted("library search, in-process p50"):
        out["library search, in-process p50"] = code.library(ws, state, queries, True)
    if wanted("library search, service p50"):
        _service_search(code, ws, state, queries, out)
    timed("read", "read", rel)
    timed("history", "history", rel)
    timed("write --no-index", "write", rel, "--append", "- a line not indexed", "--no-index")
    timed("watchdog verify", "watchdog", "verify", ok=(0, 1, 2))
    return out


def _service_search(code: Code, ws: Path, state: Path, queries: list[str], out: dict[str, float]) -> None:
    log = open(ws.parent / f"serve-{code.label}.log", "w")  # a file: a pipe nobody reads would block the service
    serve = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve"], env=code.env(ws, state), cwd=ws,
                             stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        _wait_for_service(code, ws, state, serve)
        # Its watch's first sync done (the line it prints then): the searches meet a service at rest.
        _wait_for_line(ws.parent / f"serve-{code.label}.log", "watching ", serve)
        out["library search, service p50"] = code.library(ws, state, queries, False)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=120)
        log.close()


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _wait_for_service(code: Code, ws: Path, state: Path, serve: subprocess.Popen) -> None:
    script = ("from openclaw_memory.settings import Overrides, resolve_settings\n"
              "from openclaw_memory import open_memory\n"
              "m = open_memory(resolve_settings(Overrides()))\n"
              "print(m.service().running)\n")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if serve.poll() is not None:
            sys.exit(f"[{code.label}] serve exited (its log: {ws.parent / f'serve-{code.label}.log'})")
        done = subprocess.run([sys.executable, "-c", script], env=code.env(ws, state), cwd=ws, capture_output=True, text=True)
        if done.stdout.strip().endswith("True"):
            return
        time.sleep(1)
    sys.exit(f"[{code.label}] the service did not start")


def _wait_for_line(path: Path, needle: str, serve: subprocess.Popen) -> None:
    deadline = time.monotonic() + 1800
    while needle not in path.read_text(errors="replace"):
        if serve.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the service did not say {needle!r} (its log: {path})")
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="300,3000,10000,30000")
    parser.add_argument("--runs", type=int, default=3, help="timed runs of each command (median)")
    parser.add_argument("--queries", type=int, default=15, help="library searches timed (p50)")
    parser.add_argument("--baseline", help="a checkout of an earlier version, measured the same way first")
    parser.add_argument("--only-baseline", action="store_true", help="measure the baseline alone")
    parser.add_argument("--save", help="write the figures to this JSON file")
    parser.add_argument("--load", help="figures of an earlier run (--save) printed beside these")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces under the bench folder")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall-clock seconds, or CPU seconds of each command (a shared machine)")
    parser.add_argument("--only", default="", help="measure only the rows starting with these words (comma-separated)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    codes = (([Code("baseline", args.baseline, args.clock)] if args.baseline else [])
             + ([] if args.only_baseline else [Code("this", str(REPO), args.clock)]))
    queries = [QUERIES[i % len(QUERIES)] for i in range(args.queries)]
    base = ROOT / ("scale-" + "-".join(c.label for c in codes))  # runs of other codes side by side
    results: dict[tuple[str, int], dict[str, float]] = {}
    for n in sizes:
        for code in codes:
            shutil.rmtree(base, ignore_errors=True)
            ws, state = base / f"ws-{n}", base / f"state-{n}"
            build_workspace(ws, n)
            state.mkdir(parents=True)
            results[(code.label, n)] = measure(code, ws, state, args.runs, queries, tuple(filter(None, args.only.split(","))))
            print(f"[{code.label}] {n} notes: " + json.dumps({k: round(v, 4) for k, v in results[(code.label, n)].items()}),
                  file=sys.stderr, flush=True)
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    if args.save:
        Path(args.save).write_text(json.dumps({f"{label}|{n}": figures for (label, n), figures in results.items()}))
    if args.load:
        earlier = json.loads(Path(args.load).read_text())
        for key, figures in earlier.items():
            label, n = key.rsplit("|", 1)
            results.setdefault((f"{label} (earlier run)", int(n)), figures)
        codes = [Code(label, "--load") for label in dict.fromkeys(k[0] for k in results)]
    print(f"{'CPU' if args.clock == 'cpu' else 'wall-clock'} seconds per command (the service search: wall-clock); "
          f"embedder: hash (model-free, the test suite's); ratio = figure / figure at {sizes[0]} notes")
    rows = list(results[(codes[0].label, sizes[0])])
    for code in codes:
        print(f"\n== {code.label} ({code.path})")
        print(f"{'command':34s}" + "".join(f"{n:>16d}" for n in sizes))
        for row in rows:
            first = results[(code.label, sizes[0])][row]
            cells = "".join(f"{results[(code.label, n)][row]:8.3f} ({results[(code.label, n)][row] / first:4.1f}x)"
                            for n in sizes)
            print(f"{row:34s}{cells}")


if __name__ == "__main__":
    main()
