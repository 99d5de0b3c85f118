"""An agent's workspace, extra paths and read budget from openclaw.json, asked of OpenClaw 2026.9.6.

``oc_more.mjs``'s ``agent`` op reads the config as OpenClaw does (``${NAME}`` from the environment,
an unset one left as written; ``migrateLegacyConfig``, what ``doctor --fix`` writes), validates it,
and answers the workspace (``resolveAgentWorkspaceDir``), the extra paths and the read budget
``memory_get`` uses (``resolveMemoryHostSearchPathConfig``, ``resolveMemoryHostAgentContextLimits``).
OpenClaw 2026.9.6 refuses a config holding the older ``agents.list`` ("Unrecognized key"); its
``doctor --fix`` moves it to ``agents.entries``, and the cases below compare this product with the
config that fix writes (a randomized run of 2,000 configs found them; ``agents.entries`` configs
valid as written agreed). Not a list beside an ``agents.entries`` of null: the fix moves the list over it,
but OpenClaw itself takes that key for its roster and refuses the config, and so does this product
(test_config_env_paths.py::test_a_null_openclaw_refuses_is_refused).
"""

from __future__ import annotations

import json
import math
import os

import pytest

from openclaw_memory.settings import Overrides, normalize_extra_paths, resolve_settings


def _limit(value) -> int:
    """OpenClaw's read budget from contextLimits.memoryGetMaxChars (readMemoryFile's resolveIntegerOption)."""
    number = value if isinstance(value, (int, float)) and math.isfinite(value) else 12_000
    return max(1, math.floor(number))


def _compare(oracle, tmp_path, checks, monkeypatch, cases):
    home = oracle.home
    answers = oracle.more([{"op": "agent", "config": c, "agent": a, "env": {"HOME": str(home)}} for _n, c, a in cases])
    monkeypatch.setenv("HOME", str(home))
    for n, ((name, config, agent), answer) in enumerate(zip(cases, answers)):
        assert "error" not in answer, (name, answer)
        assert not answer["migratedIssues"], (name, answer["migratedIssues"])
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        theirs_ws = answer["workspace"]
        os.makedirs(theirs_ws, exist_ok=True)  # (this product refuses a workspace that is not there)
        try:
            s = resolve_settings(Overrides(agent=agent), environ={"HOME": str(home), "OPENCLAW_CONFIG_PATH": str(path)})
            ours = (str(s.workspace), s.read.max_chars, sorted((str(p), p.pattern or "") for p in s.extra_paths))
        except Exception as exc:  # (a workspace OpenClaw would not use may be missing here)
            ours = f"{type(exc).__name__}: {exc}"
        extras = normalize_extra_paths([p if isinstance(p, str) else (p["path"], p.get("pattern") or "")
                                        for p in answer["getExtraPaths"] or []], theirs_ws)
        theirs = (theirs_ws, _limit(answer["getMaxChars"]), sorted((str(p), p.pattern or "") for p in extras))
        checks.same(f"{name} (agent {agent}; doctor --fix: {answer['changes']})", ours, theirs)
    checks.done()


# Configs valid as OpenClaw 2026.9.6 reads them (agents.entries): a guard, all agree.
ENTRIES = [
    ("the owner marked default keeps the shared workspace",
     {"agents": {"defaults": {"workspace": "~/shared", "contextLimits": {"memoryGetMaxChars": 700}},
                 "entries": {"ops": {"default": True}, "main": {"contextLimits": {"postCompactionMaxChars": 900}}}}}, "ops"),
    ("another agent gets its folder in it, and its own contextLimits whole",
     {"agents": {"defaults": {"workspace": "~/shared", "contextLimits": {"memoryGetMaxChars": 700}},
                 "entries": {"ops": {"default": True}, "main": {"contextLimits": {"postCompactionMaxChars": 900}}}}}, "main"),
    ("explicit ownership: no owner", {"agents": {"ownership": "explicit", "defaults": {"workspace": "~/shared"},
                                                 "entries": {"ops": {}, "main": {}}}}, "ops"),
    ("an agent not configured", {"agents": {"entries": {"ops": {"workspace": "~/w1"}}}, "memory": {"search": {"extraPaths": ["n"]}}},
     "research"),
    ("the shared and the agent's extra paths, an older spelling migrated",
     {"memory": {"search": {"extraPaths": ["a", {"path": "b", "pattern": "*.md"}]}},
      "agents": {"defaults": {"memorySearch": {"extraPaths": ["d"]}},
                 "entries": {"main": {"memory": {"search": {"extraPaths": ["~/o", "a"]}}, "contextLimits": {"memoryGetMaxChars": 25000}}}}},
     "main"),
]


def test_agents_entries(oracle, tmp_path, checks, monkeypatch):
    _compare(oracle, tmp_path, checks, monkeypatch, ENTRIES)


# The older agents.list, read here as OpenClaw's `doctor --fix` moves it to agents.entries: found by the
# randomized run, each a bug on this side until settings.py's _roster / _workspace_owner read it so.
LIST_FOUND = [
    # The legacy default is the entry marked default, else the first: the fix pins the shared workspace
    # on it (ops: ~/shared); here, two agents with no marker have no owner (ops: ~/shared/ops).
    ("the first of the list owns agents.defaults.workspace",
     {"agents": {"defaults": {"workspace": "~/shared"}, "list": [{"id": "ops"}, {"id": "main"}]}}, "ops"),
    ("the first of the list owns OpenClaw's default workspace",
     {"agents": {"list": [{"id": "ops"}, {"id": "research"}]}}, "ops"),
    # An entry without an id becomes agents.entries.agent, not main's (main: ~/.openclaw/workspace-main,
    # read budget 12000; here main took that entry's workspace and budget).
    ("an entry without an id is agent 'agent'",
     {"agents": {"list": [{"workspace": "~/w1", "contextLimits": {"memoryGetMaxChars": 25000}}, {"id": "ops"}]}}, "main"),
    # An empty list becomes agents.entries.main: main owns the default workspace (here: workspace-main).
    ("an empty list", {"agents": {"list": []}}, "main"),
    # A second entry of one id becomes ops-2, and owns the workspace when marked default (here: ops's
    # first entry was read, as the owner).
    ("a second entry of one id is ops-2",
     {"agents": {"list": [{"id": "ops"}, {"id": "Ops", "default": True, "workspace": "~/w1"}]}}, "ops"),
]


@pytest.mark.parametrize("case", LIST_FOUND, ids=[c[0] for c in LIST_FOUND])
def test_agents_list_as_doctor_fix_moves_it(oracle, tmp_path, checks, monkeypatch, case):
    _compare(oracle, tmp_path, checks, monkeypatch, [case])
