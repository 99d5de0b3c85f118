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


def _index(checkout: Path, workspace: Path, state: Path, cache: Path) -> tuple[float, float]:
    """(seconds to the first embedded chunk, seconds in all) of one ``index`` in a new process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(workspace), OPENCLAW_STATE_DIR=str(state), OPENCLAW_MEMORY_MODEL_CACHE=str(cache),
               PYTHONPATH=str(checkout), OPENCLAW_MEMORY_SERVICE="off")
    state.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "index"], env=env, cwd=workspace,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    first = None
    lines = []
    for line in proc.stderr:  # progress lines: "embedded 32/410 chunks of 20 files ..."
        lines.append(line)
        if first is None and line.startswith("embedded "):
            first = time.perf_counter() - start
    if proc.wait() != 0:
        raise SystemExit(f"index failed ({checkout}): {''.join(lines[-5:]).strip()}")
    return first if first is not None else float("nan"), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=20, help="files per workspace (default 20)")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    args = parser.parse_args()
    checkouts = [("this checkout", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    print(f"{'checkout':<16}{'workspace':<12}{'first chunk':>14}{'index in all':>14}")
    for label, checkout in checkouts:
        tmp = Path(tempfile.mkdtemp(prefix="ocm-bench-second-"))
        try:
            cache = tmp / "model-cache"
            for k, name in enumerate(("first", "second")):
                ws = _workspace(tmp / f"ws{k}", args.notes, k * args.notes)
                first, total = _index(checkout, ws, tmp / f"state{k}", cache)
                print(f"{label:<16}{name:<12}{first:>13.1f}s{total:>13.1f}s")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
