"""Watchdog benchmark (figures, not a test), baselines measured side by side in the same run.

1. ``verify`` of an unchanged 100,000-file tree (1,000 folders) against ``git status
   --porcelain`` on the same tree, committed: medians of interleaved runs, in-process
   and as a CLI process. Target: <= 1.5x git status. The floor (a bare ``os.scandir`` +
   lstat walk in Python) is printed too, to show what is the system call cost.
2. Snapshot throughput on large files against ``cat FILES > /dev/null``: warm page cache
   (the target, >= 80% of cat), and cold when the page cache can be dropped (root).

Usage: .venv/bin/python bench/watchdog.py [--files 100000] [--runs 7] [--big 4] [--big-mib 256]
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

from openclaw_memory.wire import to_json

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from openclaw_memory.settings import Overrides, resolve_settings  # noqa: E402
from openclaw_memory.watchdog.snapshot import take_snapshot  # noqa: E402
from openclaw_memory.watchdog.verify import verify_workspace  # noqa: E402


def settings_for(ws: Path, state: Path):
    return resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def build_tree(root: Path, files: int) -> None:
    folders = 1000
    per = max(1, files // folders)
    for d in range(folders):
        folder = root / f"d{d:04d}"
        folder.mkdir(parents=True)
        for f in range(per):
            (folder / f"note-{f:05d}.md").write_text(f"# note {d}/{f}\n" + "x" * (f % 500) + "\n")


def git(root: Path, *args: str, quiet: bool = True) -> None:
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="b@e", GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="b@e")
    subprocess.run(["git", *args], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL if quiet else None)


def bare_walk(root: str) -> int:
    count = 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as listing:
            for entry in listing:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def cli(ws: Path, state: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state))
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], env=env, capture_output=True, text=True)


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def tree_benchmark(base: Path, files: int, runs: int) -> None:
    ws, state = base / "tree", base / "tree-state"
    state.mkdir(parents=True)
    started = time.perf_counter()
    build_tree(ws, files)
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "bench")
    print(f"tree: {files:,} files in 1,000 folders, built and committed in {time.perf_counter() - started:.1f} s")
    settings = settings_for(ws, state)
    first = timed(lambda: take_snapshot(settings))
    print(f"first snapshot (hash every file): {first:.2f} s")
    subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True)  # refresh git's index stat data
    result = verify_workspace(settings)
    assert result.break_count == 0 and not result.new, to_json(result)
    assert cli(ws, state, "watchdog", "verify").returncode == 0

    times: dict[str, list[float]] = {k: [] for k in ("git status", "bare scandir+lstat", "verify (in-process)", "verify (CLI process)", "snapshot, unchanged (in-process)")}
    for _ in range(runs):
        times["git status"].append(timed(lambda: subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, check=True)))
        times["bare scandir+lstat"].append(timed(lambda: bare_walk(str(ws))))
        times["verify (in-process)"].append(timed(lambda: verify_workspace(settings)))
        times["verify (CLI process)"].append(timed(lambda: cli(ws, state, "watchdog", "verify")))
        times["snapshot, unchanged (in-process)"].append(timed(lambda: take_snapshot(settings, "bench")))
    git_median = statistics.median(times["git status"])
    print(f"\nunchanged tree, median of {runs} interleaved runs (load average {os.getloadavg()[0]:.2f}):")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:34s} {median * 1000:8.0f} ms   {median / git_median:5.2f}x git status   (min {min(values) * 1000:.0f} ms)")
    ratio = statistics.median(times["verify (in-process)"]) / git_median
    print(f"verify / git status = {ratio:.2f}x (target <= 1.5x; {ratio - 1:+.2f} from 1.0x)")


def large_file_benchmark(base: Path, count: int, mib: int, runs: int) -> None:
    ws, state = base / "big", base / "big-state"
    ws.mkdir(parents=True)
    block = os.urandom(1 << 20)
    for n in range(count):
        with open(ws / f"blob-{n}.bin", "wb") as fh:
            for _ in range(mib):
                fh.write(block)
    total = count * mib * (1 << 20)
    paths = [str(p) for p in sorted(ws.iterdir())]

    def cat() -> None:
        subprocess.run(["cat", *paths], stdout=subprocess.DEVNULL, check=True)

    def snapshot() -> None:
        shutil.rmtree(state, ignore_errors=True)  # no baseline: every byte is read and hashed
        info = take_snapshot(settings_for(ws, state))
        assert info.entries == count and info.unhashed == 0

    cat()  # warm the page cache
    warm = {"cat > /dev/null": [], "snapshot": []}
    for _ in range(runs):
        warm["cat > /dev/null"].append(timed(cat))
        warm["snapshot"].append(timed(snapshot))
    print(f"\nlarge files: {count} x {mib} MiB, warm page cache, median of {runs} interleaved runs:")
    rates = {}
    for name, values in warm.items():
        rates[name] = total / statistics.median(values) / 1e9
        print(f"  {name:20s} {rates[name]:6.2f} GB/s")
    print(f"snapshot / cat = {rates['snapshot'] / rates['cat > /dev/null'] * 100:.0f}% (target >= 80%, warm)")

    cold = {"cat > /dev/null": [], "snapshot": []}
    for _ in range(min(runs, 3)):
        for name, fn in (("cat > /dev/null", cat), ("snapshot", snapshot)):
            if not drop_caches():
                print("cold cache: not measured (cannot write /proc/sys/vm/drop_caches; needs root)")
                return
            cold[name].append(timed(fn))
    print("large files, cold page cache (dropped before each run), median:")
    cold_rates = {name: total / statistics.median(v) / 1e9 for name, v in cold.items()}
    for name, rate in cold_rates.items():
        print(f"  {name:20s} {rate:6.2f} GB/s")
    print(f"snapshot / cat = {cold_rates['snapshot'] / cold_rates['cat > /dev/null'] * 100:.0f}% (cold)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--big", type=int, default=4, help="number of large files")
    parser.add_argument("--big-mib", type=int, default=256, help="size of each large file in MiB")
    parser.add_argument("--skip-tree", action="store_true")
    parser.add_argument("--skip-big", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="openclaw-memory-bench-watchdog-"))
    try:
        print(f"machine: {os.cpu_count()} CPUs, {sys.version.split()[0]}, work dir {base}")
        if not args.skip_tree:
            tree_benchmark(base, args.files, args.runs)
        if not args.skip_big:
            large_file_benchmark(base, args.big, args.big_mib, args.runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
