"""openclaw.json's memory search settings, read by this product and by OpenClaw 2026.9.6 itself.

OpenClaw reads only ``memory.search`` and an agent's ``memory.search``; a config with the older
``memorySearch`` spellings is migrated first (its startup does it, as ``doctor --fix`` does:
``migrateLegacyConfig``), and the migrated config is what its ``resolveMemorySearchConfig`` reads.
``oc_more.mjs``'s ``search`` op does both, and the extra paths, the default number of results
(``query.maxResults``) and the multimodal kinds it answers are compared with this product's settings.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from openclaw_memory.files.paths import MODALITIES
from openclaw_memory.settings import Overrides, normalize_extra_paths, resolve_settings

from .conftest import NODE_IN_ROOT, OPENCLAW_CLI, oracle_root, why_unavailable

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
    # A bare true or false: kept by the migration, no key of its own (OpenClaw's schema refuses it).
    ("a bare true", {"memory": {"search": {"multimodal": True}}}, "main"),
    ("a bare true before an older object", {"memory": {"search": {"multimodal": True}},
                                            "agents": {"defaults": {"memorySearch": {"multimodal": ON}}}}, "main"),
    ("an agent's bare true under the shared object", {"memory": {"search": {"multimodal": ON}},
                                                      "agents": {"entries": {"ops": {"memory": {"search": {"multimodal": True}}}}}},
     "ops"),
    ("an agent's bare false under the shared object", {"memory": {"search": {"multimodal": ON}},
                                                       "agents": {"entries": {"ops": {"memory": {"search": {"multimodal": False}}}}}},
     "ops"),
    ("a shared bare true under the agent's object", {"memory": {"search": {"multimodal": True}},
                                                     "agents": {"entries": {"ops": {"memory": {"search": {"multimodal": ON}}}}}},
     "ops"),
    ("an agent's older bare true", {"agents": {"entries": {"ops": {"memorySearch": {"multimodal": True}}}},
                                    "memory": {"search": {"multimodal": {"enabled": True, "modalities": ["image"]}}}}, "ops"),
    ("a bare false before an older object", {"memory": {"search": {"multimodal": False}},
                                             "memorySearch": {"multimodal": ON}}, "main"),
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


# (files under HOME, environment) -> the openclaw.json OpenClaw's `openclaw config file` names.
CONFIG_LAYOUTS = [
    ((), {}),
    ((".clawdbot/clawdbot.json",), {}),
    ((".openclaw/", ".clawdbot/clawdbot.json"), {}),
    ((".openclaw/clawdbot.json", ".clawdbot/openclaw.json"), {}),
    ((".clawdbot/openclaw.json", ".clawdbot/clawdbot.json"), {}),
    (("s/clawdbot.json",), {"OPENCLAW_STATE_DIR": "@/s"}),
    (("s/", ".clawdbot/clawdbot.json"), {"OPENCLAW_STATE_DIR": "@/s"}),
    ((".clawdbot/clawdbot.json",), {"OPENCLAW_STATE_DIR": " "}),
    ((".openclaw/openclaw.json",), {"OPENCLAW_CONFIG_PATH": "~/elsewhere.json"}),
    ((".openclaw/openclaw.json",), {"OPENCLAW_CONFIG_PATH": " \t"}),
    # A HOME that is no home (empty, blank, "null", "undefined": its normalizeHomeDirValue) is passed over for
    # USERPROFILE, else the current folder (resolveRequiredHomeDir's last resort); here it was "/" or a relative "null".
    ((".openclaw/openclaw.json",), {"HOME": ""}),
    ((".openclaw/openclaw.json",), {"HOME": " \t"}),
    ((".openclaw/openclaw.json",), {"HOME": "null"}),
    ((".openclaw/openclaw.json",), {"HOME": "undefined"}),
    ((".openclaw/openclaw.json",), {"HOME": "rel"}),
    ((".openclaw/openclaw.json",), {"HOME": " @ "}),
    ((".openclaw/openclaw.json",), {"HOME": "", "USERPROFILE": "@"}),
    ((), {"HOME": "", "OPENCLAW_STATE_DIR": "~/st2"}),
    ((), {"HOME": "null", "OPENCLAW_CONFIG_PATH": "~/c.json"}),
    ((), {"HOME": "", "OPENCLAW_HOME": "~/x"}),
]


def test_which_openclaw_json_is_read(tmp_path, checks, monkeypatch):
    """OpenClaw's resolveConfigPath, through its command line: a state dir or config from before its
    rename (~/.clawdbot, clawdbot.json) is still read, a variable of white space is unset, and a HOME of
    nothing is no home (the current folder is, as there; a `~` in a path is it too)."""
    if why_unavailable():
        pytest.skip(why_unavailable())
    root = oracle_root()
    for n, (files, environ) in enumerate(CONFIG_LAYOUTS):
        home = tmp_path / str(n)
        (home / "ws").mkdir(parents=True)
        for name in files:
            (home / name).parent.mkdir(parents=True, exist_ok=True)
            if not name.endswith("/"):
                (home / name).write_text("{}", encoding="utf-8")
        env = {"HOME": str(home), **{k: v.replace("@", str(home)) for k, v in environ.items()}}
        run_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "USERPROFILE"))}
        run_env.update(env, NO_COLOR="1")
        done = subprocess.run([str(root / NODE_IN_ROOT), str(root / OPENCLAW_CLI), "config", "file"], env=run_env,
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        theirs = done.stdout.strip().splitlines()[-1]
        theirs = theirs.replace("~", str(home), 1) if theirs.startswith("~/") else theirs  # (its shortenHomePath)
        monkeypatch.chdir(tmp_path)
        for name in ("HOME", "USERPROFILE"):  # (read from this process's environment, as node's os.homedir() is)
            if name in env:
                monkeypatch.setenv(name, env.pop(name))
            else:
                monkeypatch.delenv(name, raising=False)
        ours = resolve_settings(Overrides(workspace=str(home / "ws")), environ=env).config_file
        checks.same(f"{files} {environ}: the config file", str(ours), theirs)
    checks.done()
