"""Two ``agents.entries`` keys of one agent id, asked of OpenClaw 2026.9.6 (``oc_more.mjs``'s ``agent``
op validates the config): it refuses them ("... resolve to the same agent id ..."), naming the first
such pair; this product refuses the same configs in the same words, and reads the others."""

from __future__ import annotations

import json

from openclaw_memory.errors import ConfigError
from openclaw_memory.settings import Overrides, resolve_settings

KEYS = [("main", "ops"), ("main", "OPS", "ops"), ("Main", "main"), ("main", "ops", "Ops", "OPS"),
        ("main", "ops", "ops-2", "ops_2"), ("main", "a-B_c", "A-b_C"), ("X", "y", "x")]


def test_keys_of_one_agent_id(oracle, tmp_path, checks, monkeypatch):
    home = oracle.home
    ws = tmp_path / "ws"
    ws.mkdir()
    configs = [{"agents": {"entries": {k: {"workspace": str(ws), **({"default": True} if n == 0 else {})}
                                       for n, k in enumerate(keys)}}} for keys in KEYS]
    answers = oracle.more([{"op": "agent", "config": c, "agent": "main", "env": {"HOME": str(home)}} for c in configs])
    monkeypatch.setenv("HOME", str(home))
    for n, (keys, config, answer) in enumerate(zip(KEYS, configs, answers)):
        assert "error" not in answer, (keys, answer)
        theirs = next((i for i in answer["issues"] if "same agent id" in i), None)
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        try:
            resolve_settings(Overrides(agent="main"), environ={"HOME": str(home), "OPENCLAW_CONFIG_PATH": str(path)})
            ours = None
        except ConfigError as exc:
            ours = str(exc).removeprefix(f"{path}: ")
        checks.same(f"agents.entries keys {keys}", ours, theirs)
    checks.done()
