"""Watchdog benchmark (figures, not a test), baselines measured side by side in the same run.

1. ``verify`` of an unchanged 100,000-file tree (1,000 folders) against ``git status
   --porcelain`` on the same tree, committed: medians of interleaved runs, in-process
   and as a CLI process. Target: <= 1.5x git status. The floor (a bare ``os.scandir`` +
   lstat walk in Python) is printed too, to show what is the system call cost.
2. Snapshot throughput on large files against ``cat FILES > /dev/null``: warm page cache
   (the target, >= 80% of cat), and cold when the page cache can be dropped (root).
3. A snapshot that keeps the memory files' content against today's hash-only snapshot (the same
   walk, saved without content), on a memory workspace of ``--notes`` notes: time and bytes of a
   first snapshot, of an unchanged re-snapshot and of one after 1% of the notes changed.
4. Git awareness: ``verify`` with its git step against ``verify`` without it (the hash-only
   comparison alone), in no repository, with no git on PATH, and in a committed repository.

Usage: .venv/bin/python bench/watchdog.py [--files 100000] [--runs 7] [--big 4] [--big-mib 256] [--notes 2000]
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

from openclaw_memory.database import Database, forget_connections  # noqa: E402
from openclaw_memory.settings import Overrides, resolve_settings  # noqa: E402
from openclaw_memory.watchdog.compare import compare_workspace, rules_for  # noqa: E402
from openclaw_memory.watchdog.gitstate import memory_git_changes  # noqa: E402
from openclaw_memory.watchdog.ignore import workspace_patterns  # noqa: E402
from openclaw_memory.watchdog.snapshot import new_table, save_table, take_snapshot, timestamp_label  # noqa: E402
from openclaw_memory.watchdog.store import SnapshotStore  # noqa: E402
from openclaw_memory.watchdog.verify import result_from, verify_workspace  # noqa: E402


def settings_for(ws: Path, state: Path):
    return resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
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


def build_memory(ws: Path, notes: int) -> list[Path]:
    """A memory workspace: MEMORY.md and ``notes`` daily-note-like files of 0.5 to 4 KB of text."""
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n" + "".join(f"- fact {n}: something worth keeping\n" for n in range(200)))
    paths = []
    for n in range(notes):
        path = ws / "memory" / f"note-{n:05d}.md"
        words = " ".join(f"w{(n * 7 + k) % 997}" for k in range(80 + n % 600))
        path.write_text(f"# Note {n}\n\n{words}\n")
        paths.append(path)
    return paths


def hash_only_snapshot(settings, label: str | None = None) -> None:
    """Today's snapshot before content was kept: the same walk and table, saved with no content rows."""
    store = SnapshotStore(settings.data_dir)
    patterns = workspace_patterns(settings.workspace)
    table = new_table(settings, label or timestamp_label(), patterns)
    delta = compare_workspace(settings.workspace, rules_for(settings.workspace, settings.state_dir, patterns),
                              store.baseline(), table, table.guard_ns)
    save_table(settings, store, table, delta, {})


def stored_bytes(settings) -> tuple[int, int]:
    """(snapshot bodies, compressed objects) in the state database, bytes."""
    db = Database(settings.data_dir)
    bodies = db.one("SELECT COALESCE(SUM(LENGTH(body)), 0) FROM snapshots")[0]
    return bodies, db.one("SELECT COALESCE(SUM(stored), 0) FROM objects")[0]


def content_benchmark(base: Path, notes: int, runs: int) -> None:
    ws = base / "memory-ws"
    paths = build_memory(ws, notes)
    size = sum(p.stat().st_size for p in paths)
    print(f"\nmemory workspace: {notes:,} notes, {size / 1e6:.1f} MB; hash-only vs with content, {runs} interleaved runs:")
    kinds = {"hash-only": hash_only_snapshot, "with content": take_snapshot}
    times: dict[str, dict[str, list[float]]] = {k: {"first": [], "unchanged": [], "1% changed": []} for k in kinds}
    sizes: dict[str, dict[str, tuple[int, int]]] = {k: {} for k in kinds}
    for run in range(runs):
        for kind, snap in kinds.items():
            state = base / f"state-{kind}-{run}"
            settings = settings_for(ws, state)
            times[kind]["first"].append(timed(snap, settings))
            sizes[kind]["first"] = stored_bytes(settings)
            times[kind]["unchanged"].append(timed(snap, settings))
            sizes[kind]["unchanged"] = stored_bytes(settings)
            for path in paths[run::100]:  # 1% of the notes, different ones each run
                with open(path, "a") as fh:
                    fh.write(f"- edited in run {run} ({kind})\n")
            times[kind]["1% changed"].append(timed(snap, settings))
            sizes[kind]["1% changed"] = stored_bytes(settings)
            forget_connections()
            shutil.rmtree(state)
    for step in ("first", "unchanged", "1% changed"):
        plain, kept = (statistics.median(times[k][step]) for k in kinds)
        (pb, po), (kb, ko) = (sizes[k][step] for k in kinds)
        print(f"  {step:11s} hash-only {plain * 1000:7.1f} ms, with content {kept * 1000:7.1f} ms ({kept / plain:4.2f}x);"
              f" stored after it: hash-only {(pb + po) / 1e3:8.1f} KB, with content {(kb + ko) / 1e3:8.1f} KB"
              f" (bodies {kb / 1e3:.1f} KB + objects {ko / 1e3:.1f} KB)")


def git_benchmark(base: Path, notes: int, runs: int) -> None:
    ws, state = base / "git-ws", base / "git-state"
    build_memory(ws, notes)
    settings = settings_for(ws, state)
    take_snapshot(settings)

    def without_git_step() -> None:  # verify_workspace as it was: the comparison alone
        base_table = SnapshotStore(settings.data_dir).baseline()
        assert base_table is not None
        rules = rules_for(ws, settings.state_dir, base_table.ignore)
        result_from(base_table, compare_workspace(ws, rules, base_table, None, base_table.guard_ns))

    def no_git_on_path() -> None:
        saved = os.environ["PATH"]
        os.environ["PATH"] = str(base / "no-git-here")
        try:
            verify_workspace(settings)
        finally:
            os.environ["PATH"] = saved

    cases = {"verify without the git step": without_git_step, "verify, no repository": lambda: verify_workspace(settings),
             "verify, no git on PATH": no_git_on_path, "git step alone, no repository": lambda: memory_git_changes(settings)}
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs * 3):
        for name, fn in cases.items():
            times[name].append(timed(fn))
    git(ws, "init", "-q")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "bench")
    (ws / "memory" / "note-00001.md").write_text("changed, not committed\n")
    with_repo = {"verify, committed repository": lambda: verify_workspace(settings),
                 "git step alone, repository": lambda: memory_git_changes(settings)}
    for name in with_repo:
        times[name] = []
    for _ in range(runs * 3):
        for name, fn in with_repo.items():
            times[name].append(timed(fn))
    reference = statistics.median(times["verify without the git step"])
    print(f"\ngit awareness, {notes:,} notes, median of {runs * 3} interleaved runs:")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:32s} {median * 1000:7.2f} ms   {median / reference:5.2f}x verify without the git step")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--big", type=int, default=4, help="number of large files")
    parser.add_argument("--big-mib", type=int, default=256, help="size of each large file in MiB")
    parser.add_argument("--skip-tree", action="store_true")
    parser.add_argument("--skip-big", action="store_true")
    parser.add_argument("--notes", type=int, default=2000, help="notes of the memory workspace (content, git)")
    parser.add_argument("--skip-content", action="store_true")
    parser.add_argument("--skip-git", action="store_true")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="openclaw-memory-bench-watchdog-"))
    try:
        print(f"machine: {os.cpu_count()} CPUs, {sys.version.split()[0]}, work dir {base}")
        if not args.skip_tree:
            tree_benchmark(base, args.files, args.runs)
        if not args.skip_big:
            large_file_benchmark(base, args.big, args.big_mib, args.runs)
        if not args.skip_content:
            content_benchmark(base, args.notes, args.runs)
        if not args.skip_git:
            git_benchmark(base, args.notes, args.runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
