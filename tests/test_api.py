"""The public Python API: every exported name resolves, and the facade works without the CLI."""

from __future__ import annotations

import subprocess
import sys

import openclaw_memory as om
from conftest import write
from openclaw_memory.wire import to_json


def test_every_export_resolves():
    for name in om.__all__:
        assert getattr(om, name) is not None, name


def test_importing_the_package_loads_no_heavy_library():
    code = "import sys, openclaw_memory; print(sorted(m for m in ('torch', 'typer', 'qdrant_edge', 'sentence_transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_agent_flow_without_the_cli(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Prefs\nlikes tea\n")
    write(workspace / "memory.md", "legacy\n")
    settings = om.resolve_settings(om.Overrides(workspace=str(workspace), state_dir=str(state_dir)))
    memory = om.open_memory(settings)
    assert [f.path for f in memory.files().files] == ["MEMORY.md"]
    assert to_json(memory.read("MEMORY.md", lines=1))["nextFrom"] == 2
    assert memory.read("MEMORY.md#L2").text == "likes tea"  # a search citation reads its lines
    assert "likes tea" in memory.prompt().text
    assert [f.id for f in memory.doctor().findings] == ["split-root"]
    memory.close()


def test_every_export_is_visible_to_type_checkers():
    """Type checkers do not run ``__getattr__``: each public name must be imported under TYPE_CHECKING."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(om.__file__).read_text(encoding="utf-8"))
    guarded = next(node for node in tree.body if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING")
    imported = {alias.name: "." * stmt.level + (stmt.module or "") for stmt in guarded.body for alias in stmt.names}
    assert imported == om._NAMES
    assert sorted(om.__all__) == sorted(om._NAMES)
    eager = [stmt for stmt in tree.body if isinstance(stmt, ast.ImportFrom) and stmt.level]
    assert eager == []  # nothing of the package loads with it (the console script's Ctrl-C rule)


def test_result_types_and_literals_are_exported():
    for name in ("SearchHit", "IndexStatus", "Finding", "WriteResult", "IndexUpdate", "SearchMode", "Severity"):
        assert name in om.__all__, name
    from typing import get_args

    assert get_args(om.SearchMode) == ("hybrid", "vector", "text")


def test_an_in_process_memory_keeps_its_shards_open_between_calls_until_idle(workspace, state_dir):
    """A library's memory does not reopen its shards on every search (the engine's load and the
    manifest's check each time); its own thread closes them once unused for ``shard_idle_s``, and
    a memory of one call (the CLI's, ``shard_idle_s=0``) closes them after the call."""
    import os

    from conftest import wait_for
    from openclaw_memory.fsutil.lock import lock_holder
    from openclaw_memory.index.collections import resolve_collections

    write(workspace / "MEMORY.md", "# Prefs\nlikes green tea in the morning\n")
    settings = om.resolve_settings(om.Overrides(workspace=str(workspace), state_dir=str(state_dir)))
    locks = [str(settings.data_dir / "index" / "locks" / f"{c.name}.lock") for c in resolve_collections(settings)]
    one_call = om.open_memory(settings, in_process=True, shard_idle_s=0)
    one_call.index()
    assert locks and {lock_holder(p) for p in locks} == {None}
    memory = om.open_memory(settings, in_process=True, shard_idle_s=0.5)
    assert memory.search("green tea").results
    assert {lock_holder(p) for p in locks} == {str(os.getpid())}  # still open after the call
    assert memory.search("morning").results
    wait_for(lambda: {lock_holder(p) for p in locks} == {None}, timeout=30)  # closed once idle
    assert memory.search("green tea").results  # and opened again when needed
    memory.close()
    one_call.close()
    assert {lock_holder(p) for p in locks} == {None}


def test_an_extra_found_once_is_not_looked_up_again_on_every_call(monkeypatch):
    """Every index call checks its extra first; the import path is searched once a process."""
    import importlib.util

    from openclaw_memory.extras import require

    require("search")  # installed in the test environment
    monkeypatch.setattr(importlib.util, "find_spec", lambda *a, **k: (_ for _ in ()).throw(AssertionError("searched")))
    require("search")


def test_a_callers_code_is_type_checked_against_the_api(tmp_path):
    # Each operation's signature reaches the caller's type checker (the declaration decorator gave
    # every method `(*Any, **Any) -> Any`), and a name the package does not export is an error there.
    script = tmp_path / "caller.py"
    script.write_text(
        "from openclaw_memory import BadValue, MemoryClosed, Overrides, SearchResult, open_memory, resolve_settings\n"
        "from openclaw_memory import NoSuchName\n"
        "with open_memory(resolve_settings(Overrides(workspace='ws'))) as m:\n"
        "    found: SearchResult = m.search('q', limit=3)\n"
        "    n: int = m.search('q')\n"
        "    m.read(['MEMORY.md'], lines='5')\n"
        "errors: tuple[type[Exception], ...] = (BadValue, MemoryClosed)\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
                          str(script)], capture_output=True, text=True)
    errors = [line.split(": error: ", 1)[1] for line in out.stdout.splitlines() if ": error: " in line]
    assert any("NoSuchName" in e for e in errors), out.stdout
    assert any('"SearchResult"' in e and '"int"' in e for e in errors), out.stdout
    assert sum('"read"' in e for e in errors) == 2, out.stdout  # the path and the window, each of the wrong type
    assert len(errors) == 4, out.stdout
