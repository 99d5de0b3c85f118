"""The upgrade to the state database: a data dir of the previous release imported (figures, not a test).

The previous release (``--old``: a checkout of the commit before the database, e.g. a worktree of
89dac6e) writes a data dir as users have it: ``--notes`` notes indexed (the hash embedder: the
index is not part of the upgrade, only its size on disk) and ``--versions`` history versions
(writes spread over the notes, each read first), with read records and write keys. Then this
checkout runs ``history MEMORY.md`` twice in new processes: the first run imports and checks
everything and sets the old folders aside; the second is the same command on the upgraded data
dir. The old data dir also holds a watchdog snapshot and `state`'s cache. Printed: both wall
times, the rows imported, and the sizes before and after.

Usage: .venv/bin/python bench/upgrade.py --old /tmp/b1 [--notes 2000] [--versions 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, ROOT

HASH = {"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "hash"}


def _env(ws: Path, state: Path, python_path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    return {**env, **HASH, "OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(state), "PYTHONPATH": python_path}


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True, help="a checkout of the release before the state database")
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--versions", type=int, default=1000)
    args = parser.parse_args()
    base = ROOT / "upgrade"
    shutil.rmtree(base, ignore_errors=True)
    ws, state = base / "ws", base / "state"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (ws / "MEMORY.md").write_text("# Memory\n\n- the user keeps a garden\n", encoding="utf-8")
    for i in range(args.notes):
        (ws / "memory" / f"note-{i:05d}.md").write_text(f"# Note {i}\n\nAbout topic {i % 97}: detail {i}.\n")
    old_env = _env(ws, state, args.old)
    subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], env=old_env, cwd=ws, check=True,
                   capture_output=True)
    writer = f"""
import sys
sys.path.insert(0, {args.old!r})
from openclaw_memory import api
from openclaw_memory.settings import resolve_settings
s = resolve_settings()
for i in range({args.versions}):
    path = f"memory/note-{{i % 50:05d}}.md"
    api.read_memory(s, path)
    api.write_memory(s, path, append=f"- line {{i}}", update_index=False)
"""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", writer], env=old_env, cwd=ws, check=True)
    for step in (["watchdog", "snapshot"], ["state"]):  # a baseline of the workspace, `state`'s cache
        subprocess.run([sys.executable, "-m", "openclaw_memory", *step], env=old_env, cwd=ws, check=True,
                       capture_output=True)
    (data_dir,) = (state / "openclaw-memory" / "workspaces").iterdir()
    print(f"old data dir: {args.notes} notes indexed, {args.versions} versions written in "
          f"{time.perf_counter() - started:.1f} s; history/ {_size(data_dir / 'history') / 1e6:.1f} MB, "
          f"idempotency/ {_size(data_dir / 'idempotency') / 1e6:.1f} MB, index/ {_size(data_dir / 'index') / 1e6:.1f} MB")
    new_env = _env(ws, state, str(REPO))
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", "history", "MEMORY.md", "--json"], env=new_env,
                              cwd=ws, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        assert done.returncode == 0, done.stderr
    t0 = time.perf_counter()
    index = subprocess.run([sys.executable, "-m", "openclaw_memory", "index", "--json"], env=new_env, cwd=ws,
                           capture_output=True, text=True)
    index_s = time.perf_counter() - t0
    assert index.returncode == 0, index.stderr
    with sqlite3.connect(data_dir / "state.db") as db:
        imports = db.execute("SELECT source, counts FROM imports ORDER BY source").fetchall()
    print(f"first run of this release (imports, checks, sets aside): {times[0] * 1000:.0f} ms")
    print(f"the same command again:                                 {times[1] * 1000:.0f} ms")
    synced = json.loads(index.stdout)
    print(f"then `index` (every file hashed once, the imported manifests trusted by hash): {index_s * 1000:.0f} ms, "
          f"{synced['filesChanged']} files changed, {synced['chunksEmbedded']} chunks embedded")
    for source, counts in imports:
        print(f"imported {source}: {json.loads(counts)}")
    print(f"state.db {_size(data_dir) and (data_dir / 'state.db').stat().st_size / 1e6:.1f} MB; "
          f"set aside: before-state-db/ {_size(data_dir / 'before-state-db') / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
