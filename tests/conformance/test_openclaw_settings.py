"""openclaw.json's memory search settings, read by this product and by OpenClaw 2026.9.6 itself.

OpenClaw reads only ``memory.search`` and an agent's ``memory.search``; a config with the older
``memorySearch`` spellings is migrated first (its startup does it, as ``doctor --fix`` does:
``migrateLegacyConfig``), and the migrated config is what its ``resolveMemorySearchConfig`` reads.
``oc_more.mjs``'s ``search`` op does both, and the extra paths, the default number of results
(``query.maxResults``) and the multimodal kinds it answers are compared with this product's settings.
"""

from __future__ import annotations

import json

from openclaw_memory.files.paths import MODALITIES
from openclaw_memory.settings import Overrides, normalize_extra_paths, resolve_settings

ON, OFF = {"enabled": True}, {"enabled": False}

# (name, openclaw.json, agent)
CASES = [
    ("nothing", {}, "main"),
    ("current only", {"memory": {"search": {"extraPaths": ["a", {"path": "b", "pattern": "*.md"}],
                                            "query": {"maxResults": 9}, "multimodal": ON}}}, "main"),
    ("the agent's own adds its paths and wins its keys",
     {"memory": {"search": {"extraPaths": ["a"], "query": {"maxResults": 9}, "multimodal": ON}},
      "agents": {"entries": {"ops": {"memory": {"search": {"extraPaths": ["o"], "query": {"maxResults": 2},
                                                            "multimodal": {"modalities": ["audio"]}}}}}}}, "ops"),
    ("an agent without its own entry", {"memory": {"search": {"extraPaths": ["a"]}},
                                        "agents": {"entries": {"ops": {"memory": {"search": {"extraPaths": ["o"]}}}}}}, "main"),
    ("older spellings only", {"agents": {"defaults": {"memorySearch": {"extraPaths": ["d"], "maxResults": 4, "multimodal": ON}}}},
     "main"),
    ("the top-level memorySearch", {"memorySearch": {"extraPaths": ["t"], "query": {"maxResults": 5}}}, "main"),
    ("agents.defaults.memorySearch before the top-level one",
     {"memorySearch": {"extraPaths": ["t"], "maxResults": 5, "multimodal": OFF},
      "agents": {"defaults": {"memorySearch": {"maxResults": 7, "multimodal": {"modalities": ["image"]}}}}}, "main"),
    ("the current spelling wins key by key",
     {"memorySearch": {"extraPaths": ["top"], "maxResults": 3},
      "agents": {"defaults": {"memorySearch": {"extraPaths": ["legacy"], "multimodal": ON}},
                 "entries": {"ops": {"memorySearch": {"extraPaths": ["own"], "multimodal": {"modalities": ["image"]}}}}},
      "memory": {"search": {"extraPaths": ["cur"]}}}, "ops"),
    ("an agent's older memorySearch under its current one",
     {"agents": {"entries": {"ops": {"memory": {"search": {"multimodal": OFF}},
                                     "memorySearch": {"extraPaths": ["own"], "multimodal": ON, "maxResults": 8}}}}}, "ops"),
    ("the older agents.list", {"agents": {"list": [{"id": "ops", "memorySearch": {"extraPaths": ["l"], "maxResults": 11}}]}},
     "ops"),
    ("no media kind left", {"memory": {"search": {"multimodal": {"enabled": True, "modalities": []}}}}, "main"),
    ("every kind", {"memory": {"search": {"multimodal": {"enabled": True, "modalities": ["all", "image"]}}}}, "main"),
]


def test_memory_search_settings(oracle, new_ws, checks, tmp_path):
    answers = oracle.more([{"op": "search", "config": config, "agent": agent} for _name, config, agent in CASES])
    for (name, config, agent), answer in zip(CASES, answers):
        assert "error" not in answer, (name, answer)
        ws, state = new_ws(), tmp_path / name.replace(" ", "-").replace("'", "")
        state.mkdir()
        (state / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
        ours = resolve_settings(Overrides(state_dir=str(state), workspace=str(ws), agent=agent), environ={})
        theirs_extra = normalize_extra_paths([p if isinstance(p, str) else (p["path"], p.get("pattern") or "")
                                              for p in answer["extraPaths"] or []], ws)
        checks.same(f"{name}: extraPaths", [(str(p), p.pattern) for p in ours.extra_paths],
                    [(str(p), p.pattern) for p in theirs_extra])
        checks.same(f"{name}: query.maxResults", ours.max_results, answer["maxResults"])
        mm = answer["multimodal"]
        theirs_kinds = tuple(k for k in MODALITIES if k in mm["modalities"])
        checks.same(f"{name}: multimodal", (ours.multimodal, ours.modalities if ours.multimodal else ()),
                    (bool(mm["enabled"] and theirs_kinds), theirs_kinds))
    checks.done()
