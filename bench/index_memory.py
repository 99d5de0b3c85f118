"""Peak memory of `index` against corpus size (figures, not a test).

Two synthetic corpora, one four times the other, are indexed by `openclaw-memory index` in a
fresh process each; the process's own peak RSS (VmHWM) is printed side by side. Every note holds
the same few paragraphs under its own file name, so the real model embeds only a handful of
texts (feasible on 2 cores) while every note is still read, chunked and written as its own
points: what made memory grow with the corpus. With ``--baseline PATH`` (a checkout of an
earlier version, e.g. /work/main) the same runs are made with that code first.

``--corpus scale`` indexes bench/scale.py's OpenClaw-style workspaces instead (its
``build_workspace``, fixed seed: a 200-line ``MEMORY.md`` and N daily notes of 20-60 lines, ~7
chunks each, every text its own): what issue 42 measures, with the model embedding every chunk.
``--sizes 1000,10000`` names the corpus sizes (default: ``--notes`` and four times it).
``--backend hash`` embeds with the model-free backend (the test suite's): what grows with the
corpus besides the model, in minutes instead of hours on two cores.

Target: the larger corpus's peak heap within 10% of the smaller one's (a bounded pipeline); for
the scale corpus, 10,000 notes' peak RSS within 1.2x of 1,000 notes'.

Usage: .venv/bin/python bench/index_memory.py [--notes 400 | --sizes 1000,10000] [--corpus same|scale]
       [--backend onnx|hash] [--baseline /work/main]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from _common import REPO, ROOT
from scale import build_workspace

# VmHWM counts the engine's memory-mapped index files too (page cache the kernel can drop, and
# proportional to the index on disk); the heap is the anonymous memory, sampled every 20 ms.
RUNNER = r"""
import sys, threading, time
peak_anon = [0]
def anon():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("RssAnon:"))
def sample():
    while True:
        peak_anon[0] = max(peak_anon[0], anon())
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
from openclaw_memory.cli.main import main
rc = main(["index", "--json"])
peak_anon[0] = max(peak_anon[0], anon())
with open("/proc/self/status") as fh:
    peak = next(line.split()[1] for line in fh if line.startswith("VmHWM:"))
sys.stderr.write(f"peak-rss-kib {peak} {peak_anon[0]}\n")
sys.exit(rc)
"""

# Six sections of about 250 word pieces each: one chunk apiece.
NOTE = "".join(
    f"## Part {i}\n\n"
    + f"The team agreed that release {i} ships after the review of the storage layer, the migration notes "
    "and the on-call handover; everything else waits for the next cycle. " * 9
    + "\n\n"
    for i in range(6)
)


def corpus(folder, notes: int) -> None:
    for i in range(notes):
        sub = folder / "memory" / f"d{i // 500:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"note-{i:05d}.md").write_text(f"# Weekly notes\n\n{NOTE}", encoding="utf-8")
    (folder / "MEMORY.md").write_text("# Memory\n\n- prefers short answers\n", encoding="utf-8")


def index_once(code: str, ws, state, backend: str | None = None) -> tuple[tuple[int, int], float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(PYTHONPATH=code, OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state))
    if backend:
        env["OPENCLAW_MEMORY_EMBEDDING_BACKEND"] = backend
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUNNER], env=env, cwd=ws, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"index failed ({code}): {done.stderr[-2000:]}")
    line = next(line for line in done.stderr.splitlines() if line.startswith("peak-rss-kib"))
    _, rss, heap = line.split()
    return (int(rss), int(heap)), seconds, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=400, help="notes in the smaller corpus (the larger has 4x)")
    parser.add_argument("--sizes", help="the corpus sizes, comma-separated (default: --notes and 4x it)")
    parser.add_argument("--corpus", choices=("same", "scale"), default="same",
                        help="same: one text in every note; scale: bench/scale.py's daily notes, every text its own")
    parser.add_argument("--backend", choices=("onnx", "hash"), default="onnx", help="the embedding backend")
    parser.add_argument("--baseline", help="another checkout to measure the same way, first")
    args = parser.parse_args()
    sizes = tuple(int(n) for n in args.sizes.split(",")) if args.sizes else (args.notes, args.notes * 4)
    make = corpus if args.corpus == "same" else build_workspace
    codes = ([("baseline", args.baseline)] if args.baseline else []) + [("this", str(REPO))]
    base = ROOT / "index-memory"
    shutil.rmtree(base, ignore_errors=True)
    state = base / "state"  # one state dir: the model's ONNX export is made once, by the warm-up
    state.mkdir(parents=True)
    warm = base / "warm"
    corpus(warm, 2)
    index_once(str(REPO), warm, state, args.backend)
    rows = []
    for label, code in codes:
        for n in sizes:
            ws = base / f"{label}-{n}"
            make(ws, n)
            peak, seconds, out = index_once(code, ws, state, args.backend)
            summary = json.loads(out)
            rows.append((label, n, summary["chunksEmbedded"] + summary["chunksReused"], peak, seconds))
            print(f"[{label}] {n} notes: {rows[-1][2]} points, peak RSS {peak[0] / 1024:.1f} MB, peak heap "
                  f"{peak[1] / 1024:.1f} MB, {seconds:.1f} s", file=sys.stderr, flush=True)  # a long run's figures so far
            shutil.rmtree(ws)
            for data in (state / "openclaw-memory" / "workspaces").glob(f"{ws.name}-*"):
                shutil.rmtree(data)  # its index: the next corpus's run starts from the same disk
    print(f"{'code':9s} {'notes':>6s} {'points':>7s} {'peak RSS':>10s} {'peak heap':>10s} {'time':>8s}")
    for label, n, points, (rss, heap), seconds in rows:
        print(f"{label:9s} {n:6d} {points:7d} {rss / 1024:7.1f} MB {heap / 1024:7.1f} MB {seconds:7.1f} s")
    for label, _code in codes:
        peaks = [r[3] for r in rows if r[0] == label]
        for (rss, heap), n in zip(peaks[1:], sizes[1:]):
            print(f"{label}: with {n} notes / with {sizes[0]} notes: peak RSS x{rss / peaks[0][0]:.2f}, "
                  f"peak heap x{heap / peaks[0][1]:.2f}")


if __name__ == "__main__":
    main()
