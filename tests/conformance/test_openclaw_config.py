"""docs/mcp.md's "Using these tools instead of OpenClaw's builtin memory", asked of OpenClaw 2026.9.6.

With this server added, an OpenClaw agent has two memories: the builtin ``memory_search`` /
``memory_get`` of the ``memory-core`` plugin and this server's ``memory__*`` tools. The page's
configuration turns the builtin off with ``plugins.slots.memory: "none"``, or keeps the plugin and
denies its two tools (``tools.deny``). Checked here with OpenClaw itself: its config validator
(``openclaw config validate``) takes the configuration and refuses a slot naming this product (not an
OpenClaw plugin); ``openclaw mcp probe`` lists this server's tools under it; and one real agent turn
(``openclaw agent --local``, against a model endpoint on loopback that records the request,
tests/conformance/fake_model.py) shows which memory tools the model is offered, whether the builtin's
"## Memory Recall" prompt section is there, and that MEMORY.md is still injected into the prompt.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from .fake_model import FakeModel, offered_tools, system_prompt
from .test_mcp_client import TOOLS

OURS = [f"memory__{name}" for name in TOOLS]
BUILTIN = ["memory_get", "memory_search"]
RECALL = "## Memory Recall"  # memory-core's prompt section (its buildMemoryPromptSection)
MEMORY_TEXT = "prefers green tea"
DAILY_TEXT = "ordered the roof tiles"


def server_entry(workspace: Path, state: Path) -> dict[str, Any]:
    """docs/mcp.md's server entry, with this interpreter for the `openclaw-memory` executable."""
    return {"command": sys.executable, "args": ["-m", "openclaw_memory", "mcp", "-w", str(workspace), "--agent", "main"],
            "env": {"OPENCLAW_STATE_DIR": str(state)}}


# The two configurations docs/mcp.md gives (beside the server entry), and two it warns about.
BUILTIN_OFF = {"plugins": {"slots": {"memory": "none"}}}
TOOLS_DENIED = {"tools": {"deny": ["memory_search", "memory_get"]}}
NOTHING = {}
GLOB_DENIED = {"tools": {"deny": ["memory_*"]}}


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


@pytest.fixture
def workspace(tmp_path) -> tuple[Path, Path]:
    ws, state = tmp_path / "ws", tmp_path / "state"
    (ws / "memory").mkdir(parents=True)
    state.mkdir()
    (ws / "MEMORY.md").write_text(f"# Memory\n\n- {MEMORY_TEXT}\n", encoding="utf-8")
    (ws / "memory" / "2026-12-04.md").write_text(f"# 2026-12-04\n\n- {DAILY_TEXT}\n", encoding="utf-8")
    return ws, state


def write_config(openclaw, config: dict[str, Any]) -> None:
    path = openclaw.home / ".openclaw" / "openclaw.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")


def validate(openclaw) -> dict[str, Any]:
    done = openclaw("config", "validate", "--json")
    return json.loads(done.stdout[done.stdout.index("{"):])


@pytest.mark.parametrize("choice", [BUILTIN_OFF, TOOLS_DENIED], ids=["builtin-off", "tools-denied"])
def test_openclaw_takes_the_configuration_and_probes_the_server(openclaw, workspace, choice):
    ws, state = workspace
    config = merge({"mcp": {"servers": {"memory": server_entry(ws, state)}}}, choice)
    if choice is BUILTIN_OFF:  # as docs/mcp.md says: `openclaw config set` writes the slot
        write_config(openclaw, {"mcp": config["mcp"]})
        done = openclaw("config", "set", "plugins.slots.memory", "none")
        assert done.returncode == 0, done.stdout + done.stderr
        written = json.loads((openclaw.home / ".openclaw" / "openclaw.json").read_text(encoding="utf-8"))
        assert written["plugins"] == config["plugins"] and written["mcp"] == config["mcp"], written
    else:
        write_config(openclaw, config)
    report = validate(openclaw)
    assert report.get("valid") is True and report.get("warnings") == [], report

    probed = openclaw("mcp", "probe", "memory", "--json")
    assert probed.returncode == 0, probed.stdout + probed.stderr
    answer = json.loads(probed.stdout[probed.stdout.index("{"):])
    assert answer["diagnostics"] == [] and answer["tools"] == OURS, answer

    # The validator reads the slot: a memory slot naming this product is refused (it is no OpenClaw plugin).
    write_config(openclaw, merge(config, {"plugins": {"slots": {"memory": "openclaw-memory"}}}))
    refused = validate(openclaw)
    assert refused.get("valid") is False, refused
    assert [i["path"] for i in refused["issues"]] == ["plugins.slots.memory"], refused


# (extra configuration, memory tools the model is offered, the builtin's recall section in the prompt)
TURNS = {
    "nothing": (NOTHING, sorted(BUILTIN + OURS), True),  # two memories
    "builtin-off": (BUILTIN_OFF, OURS, False),
    "tools-denied": (TOOLS_DENIED, OURS, False),
    "glob-denied": (GLOB_DENIED, [], False),  # `memory_*` also matches `memory__memory_search`
}


@pytest.mark.parametrize("case", list(TURNS))
def test_what_the_model_is_offered(openclaw, workspace, case):
    extra, expected_tools, recall = TURNS[case]
    ws, state = workspace
    with FakeModel() as model:
        provider = model.provider_config()
        config = merge({
            "agents": {"defaults": {"workspace": str(ws), "model": {"primary": provider["model"]}}},
            "models": provider["models"],
            "mcp": {"servers": {"memory": server_entry(ws, state)}},
            # OpenClaw's default tool search sends the model tool_search/tool_describe/tool_call instead of
            # the tools (its docs tools/tool-search.md); off, the request lists every tool the model may call.
            "tools": {"toolSearch": False},
        }, extra)
        write_config(openclaw, config)
        done = openclaw("agent", "--local", "--agent", "main", "--message", "hello", "--json", timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        turns = [r for r in model.requests if r["body"].get("messages")]
    assert len(turns) == 1, [r["path"] for r in model.requests]
    request = turns[0]
    assert [n for n in offered_tools(request) if n.startswith("memory")] == expected_tools
    prompt = system_prompt(request)
    assert (RECALL in prompt) is recall
    # OpenClaw still injects MEMORY.md (and USER.md) as Project Context; daily notes only on a bare /new or /reset.
    assert f"## {ws / 'MEMORY.md'}\n# Memory\n\n- {MEMORY_TEXT}" in prompt
    assert DAILY_TEXT not in json.dumps(request["body"]["messages"])
