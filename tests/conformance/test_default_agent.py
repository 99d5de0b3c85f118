"""The agent a command acts for with no --agent, asked of OpenClaw 2026.9.6: its default agent, the one
its own ``memory search`` takes without --agent (``resolveDefaultAgentId``, on the config as its startup
and ``doctor --fix`` migrate it: ``oc_default_agent.mjs``). Where it refuses to guess (several agents,
none the default), this product refuses too, but keeps ``main`` where main is one of them, or where
``agents.entries`` is empty, which OpenClaw refuses as "No agents configured" (``default-agent-main-kept``,
docs/openclaw.md)."""

from __future__ import annotations

import json
from pathlib import Path

from openclaw_memory.errors import UsageError
from openclaw_memory.settings import Overrides, resolve_settings

SCRIPT = Path(__file__).with_name("oc_default_agent.mjs")

CONFIGS = [
    {"agents": {"entries": {"main": {}, "ops": {"default": True}}}},
    {"agents": {"entries": {"main": {}, "OPS": {"default": True}}}},
    {"agents": {"entries": {"ops": {}}}},
    {},
    {"agents": {"defaults": {"workspace": "~/shared"}}},
    {"agents": {"list": []}},
    {"agents": {"entries": {}}},
    {"agents": {"list": [{}]}},
    {"agents": {"entries": {"ops": {"default": True}, "dev": {"default": True}}}},
    {"agents": {"entries": {"ops": {"default": True}, "main": {"default": True}}}},
    {"agents": {"ownership": "explicit", "entries": {"ops": {"default": True}, "dev": {}}}},
    {"agents": {"ownership": "explicit", "entries": {"ops": {"default": True}, "main": {}}}},
    {"agents": {"ownership": "explicit", "entries": {"ops": {}}}},
    {"agents": {"entries": {"ops": {}, "dev": {}}}},
    {"agents": {"entries": {"ops": {}, "main": {}}}},
    {"agents": {"list": [{"id": "ops"}]}},
    {"agents": {"list": [5, {"id": "ops", "default": True}]}},
    {"agents": {"list": [{"id": "dev"}, {"id": "ops", "default": True}]}},
    {"agents": {"list": [{"id": "ops", "default": True}, {"id": "dev"}]}},
    {"agents": {"list": [{"id": "ops"}, {"id": "main", "default": True}]}},
    {"agents": {"list": [{"id": "ops"}, {"id": "ops"}]}},
    {"agents": {"ownership": "explicit", "list": [{"id": "ops", "default": True}]}},
]


def test_the_default_agent_is_openclaws(oracle, tmp_path, checks):
    answers = oracle._run(SCRIPT, [{"config": c} for c in CONFIGS])
    for n, (config, answer) in enumerate(zip(CONFIGS, answers)):
        assert "error" not in answer, (config, answer)
        state = tmp_path / str(n)
        (state / "workspace").mkdir(parents=True)
        (state / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
        try:
            ours = resolve_settings(Overrides(state_dir=str(state), workspace=str(state / "workspace")),
                                    environ={"HOME": str(oracle.home)}).agent
        except UsageError as exc:
            ours = f"refused: {exc.message}"
        label = json.dumps(config)
        if "refused" in answer and ours == "main":
            checks.deliberate("default-agent-main-kept", "OpenClaw refuses to guess; main is kept where it is one of "
                              "several agents, none the default, or where agents.entries is empty", True, label)
        elif "refused" in answer:
            checks.same(label, "several agents" in ours and "give --agent <id>" in ours, True)
        else:
            checks.same(label, ours, answer["agent"])
    checks.done()
