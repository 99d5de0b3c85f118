"""The first ``index`` of a second workspace (its own state dir) on a machine that already indexed one.

What a user pays when they add a second agent or workspace, and what ``make demo`` pays on each run
(it deletes its state). Both workspaces hold ``--notes`` files of the docs corpus (or this
project's own docs when ../shared is absent); each ``index`` is a new process with the real model.
The model cache starts empty (a private one, so the machine's own is not touched), as on a new
machine. With ``--baseline PATH`` (another checkout, e.g. a worktree of an older commit), the same
steps run from that checkout too, in the same run. Figures, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "openclaw-docs"


def _workspace(folder: Path, notes: int, offset: int) -> Path:
    source = CORPUS if CORPUS.is_dir() else REPO / "docs"
    files = sorted(source.rglob("*.md"))
    (folder / "memory").mkdir(parents=True)
    (folder / "MEMORY.md").write_text("# Memory\n\n- prefers green tea\n", encoding="utf-8")
    for k, path in enumerate(files[offset : offset + notes]):
        shutil.copy(path, folder / "memory" / f"{k:04}-{path.name}")
    return folder


def _index(checkout: Path, workspace: Path, state: Path, cache: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(workspace), OPENCLAW_STATE_DIR=str(state), OPENCLAW_MEMORY_MODEL_CACHE=str(cache),
               PYTHONPATH=str(checkout), OPENCLAW_MEMORY_SERVICE="off")
    state.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], env=env, cwd=workspace,
                          capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"index failed ({checkout}): {done.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20, help="files per workspace (default 20)")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    checkouts = [("this checkout", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    print(f"{'checkout':<16}{'first workspace':>18}{'second workspace':>18}")
    for label, checkout in checkouts:
        tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-second-"))
        try:
            cache = tmp / "model-cache"
            first = _index(checkout, _workspace(tmp / "ws1", args.notes, 0), tmp / "state1", cache)
            second = _index(checkout, _workspace(tmp / "ws2", args.notes, args.notes), tmp / "state2", cache)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{label:<16}{first:>17.1f}s{second:>17.1f}s")


if __name__ == "__main__":
    main()
