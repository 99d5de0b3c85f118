"""Scanner and cold-start benchmark (figures, not a test).

1. Listing 10,000 memory files in 500 folders: our scanner (in-process, and the
   `files` command as a process) side by side with GNU `find WS -name '*.md'`.
2. Cold start of `read`, `files` and `prompt` as new processes, beside `python -c pass`.

Usage: python bench/scan.py [--files 10000] [--folders 500] [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from openclaw_memory.files.scan import scan_memory_files  # noqa: E402

CLI = [sys.executable, "-m", "openclaw_memory"]
SCRIPT = Path(sys.executable).with_name("openclaw-memory")


def build_tree(root: Path, files: int, folders: int) -> None:
    memory = root / "memory"
    per_folder = files // folders
    for d in range(folders):
        folder = memory / f"topic-{d:03d}"
        folder.mkdir(parents=True)
        for f in range(per_folder):
            (folder / f"note-{f:03d}.md").write_text(f"# note {d}/{f}\n")
    (root / "MEMORY.md").write_text("# root\n")


def median_seconds(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run_quiet(cmd: list[str], env=None) -> None:
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--folders", type=int, default=500)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-scan-"))
    try:
        ws = tmp / "ws"
        build_tree(ws, args.files, args.folders)
        env = {**os.environ, "OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(tmp / "state")}
        find = shutil.which("find")
        listed = len(scan_memory_files(ws).files)
        print(f"tree: {listed:,} memory files in {args.folders} folders (warm page cache, median of {args.runs})")

        t_find = median_seconds(lambda: run_quiet([find, str(ws), "-name", "*.md"]), args.runs)
        # We report each file's size, so every file is stat'ed; find's -printf %s does the same.
        t_find_size = median_seconds(lambda: run_quiet([find, str(ws), "-name", "*.md", "-printf", "%s %p\n"]), args.runs)
        t_scan = median_seconds(lambda: scan_memory_files(ws), args.runs)
        t_cli = median_seconds(lambda: run_quiet([str(SCRIPT), "files", "--json"], env), args.runs)
        print(f"{'GNU find -name *.md (process)':40s} {t_find * 1000:8.1f} ms   1.00x")
        print(f"{'GNU find -name *.md -printf %s (stats)':40s} {t_find_size * 1000:8.1f} ms   {t_find_size / t_find:.2f}x")
        print(f"{'scan_memory_files (in-process)':40s} {t_scan * 1000:8.1f} ms   {t_scan / t_find:.2f}x  (target <= 1.5x)")
        print(f"{'openclaw-memory files --json (process)':40s} {t_cli * 1000:8.1f} ms   {t_cli / t_find:.2f}x")

        small = tmp / "small"
        (small / "memory").mkdir(parents=True)
        (small / "MEMORY.md").write_text("# root\nline\n")
        (small / "memory/2026-11-30.md").write_text("today\n")
        env_small = {**env, "OPENCLAW_WORKSPACE": str(small)}
        print("\ncold start, new process (target <= 150 ms):")
        t_pass = median_seconds(lambda: run_quiet([sys.executable, "-c", "pass"]), args.runs)
        print(f"{'python -c pass':40s} {t_pass * 1000:8.1f} ms")
        for name, argv in (("read", ["read", "MEMORY.md"]), ("files", ["files"]), ("prompt", ["prompt", "--peek"])):
            t = median_seconds(lambda argv=argv: run_quiet([str(SCRIPT), *argv], env_small), args.runs)
            print(f"{'openclaw-memory ' + name:40s} {t * 1000:8.1f} ms   (+{(t - t_pass) * 1000:.0f} ms over python)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
