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
    assert imported == om._RESULT_TYPES
    eager = {alias.name for stmt in tree.body if isinstance(stmt, ast.ImportFrom) and stmt.level for alias in stmt.names}
    assert sorted(om.__all__) == sorted(eager | set(om._RESULT_TYPES))


def test_result_types_and_literals_are_exported():
    for name in ("SearchHit", "IndexStatus", "Finding", "WriteResult", "IndexUpdate", "SearchMode", "Severity"):
        assert name in om.__all__, name
    from typing import get_args

    assert get_args(om.SearchMode) == ("hybrid", "vector", "text")
