"""OpenClaw's own MCP client against the product: ``openclaw mcp add`` (stdio, with its probe and its
default connect timeout) and ``openclaw mcp probe --json``, in a throwaway HOME, exactly as
docs/mcp.md tells a user to set it up.

OpenClaw 2026.9.6 offers no command that calls one tool of an MCP server without a model (its
agent runtime calls them inside a model turn); what its client sees of the tools, their
annotations and the capabilities is checked here, and the tools' behaviour by tests/test_mcp.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

TOOLS = ["memory_files", "memory_get", "memory_links", "memory_search", "memory_status", "memory_write"]


def test_openclaw_adds_and_probes_the_stdio_server(openclaw, tmp_path):
    workspace, state = tmp_path / "ws", tmp_path / "state"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- prefers green tea\n", encoding="utf-8")
    state.mkdir()
    # docs/mcp.md's command line, with this environment's `openclaw-memory`.
    command = Path(sys.executable).with_name("openclaw-memory")
    if not command.is_file():
        pytest.skip(f"no openclaw-memory executable beside {sys.executable} (make install puts one there)")
    added = openclaw(
        "mcp", "add", "memory", "--command", str(command),
        "--arg", "mcp", "--arg", "-w", "--arg", str(workspace), "--arg", "--agent", "--arg", "main",
        "--env", f"OPENCLAW_STATE_DIR={state}",
    )
    assert added.returncode == 0, added.stdout + added.stderr
    config = json.loads((openclaw.home / ".openclaw" / "openclaw.json").read_text())
    entry = config["mcp"]["servers"]["memory"]
    assert entry["command"] == str(command) and entry["args"] == ["mcp", "-w", str(workspace), "--agent", "main"]

    listed = openclaw("mcp", "list", "--json")
    assert listed.returncode == 0, listed.stdout + listed.stderr

    probed = openclaw("mcp", "probe", "memory", "--json")
    assert probed.returncode == 0, probed.stdout + probed.stderr
    report = json.loads(probed.stdout[probed.stdout.index("{"):])
    assert report["diagnostics"] == []
    server = report["servers"]["memory"]
    assert server["tools"] == len(TOOLS)
    assert "approvalHint" not in server, server  # every tool carries its safety annotations
    assert not server.get("resources") and not server.get("prompts"), server  # nothing empty advertised
    assert report["tools"] == [f"memory__{name}" for name in TOOLS]
