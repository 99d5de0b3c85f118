"""Two ``agents.entries`` keys of one agent id, asked of OpenClaw 2026.9.6 (``oc_more.mjs``'s ``agent``
op validates the config): it refuses them ("... resolve to the same agent id ..."), naming the first
such pair; this product refuses the same configs in the same words, and reads the others. A key outside
its pattern is refused before that ("Invalid key in record"), here too."""

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


# agents.entries keys beside main (marked default: one owner, as OpenClaw's schema wants), asked of OpenClaw's own
# validation (validateConfigObjectRaw's issues): a key outside /^[a-z0-9_][a-z0-9_-]{0,63}$/i is refused, "Invalid
# key in record", and two keys of one id are, only when every key is valid.
ENTRY_KEYS = [["ops"], ["_ops"], ["x" * 64], ["Ops-2_"], ["!!!"], ["ＯＰＳ"], ["a b"], ["-ops"], ["a.b"], ["x" * 65],
              [" ops"], ["ops "], [""], ["\u017f"], ["\u212a"], ["OPS", "ops"], ["MAIN"], ["ops", "OPS", "!!!"],
              ["!!!", "a b"], ["ops\n"]]


def test_agents_entries_keys(oracle, tmp_path, checks):
    configs = [{"agents": {"entries": {"main": {"default": True}, **{k: {} for k in keys}}}} for keys in ENTRY_KEYS]
    answers = oracle.more([{"op": "agent", "config": c, "agent": "main", "env": {"HOME": str(oracle.home)}} for c in configs])
    (tmp_path / "ws").mkdir()
    for n, (keys, config, answer) in enumerate(zip(ENTRY_KEYS, configs, answers)):
        assert "error" not in answer, (keys, answer)
        path = tmp_path / f"{n}.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        try:
            resolve_settings(Overrides(workspace=str(tmp_path / "ws")), environ={"OPENCLAW_CONFIG_PATH": str(path)})
            ours = None
        except ConfigError as exc:
            ours = str(exc).removeprefix(f"{path}: ")
        theirs = answer["issues"][0] if answer["issues"] else None  # (the first: this product names one)
        if "\n" in keys[-1]:  # a key that is no line is named as one here
            checks.deliberate("entry-key-shown-on-one-line", "an error is one line", ours != theirs and ours is not None
                              and theirs is not None and ours.replace(repr(keys[-1]), keys[-1]) == theirs, f"{ours!r} {theirs!r}")
            continue
        checks.same(f"agents.entries keys {['main', *keys]!r}", ours, theirs)
    checks.done()
