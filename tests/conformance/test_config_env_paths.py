"""The workspace and state dir OpenClaw 2026.9.6 uses where openclaw.json names them with `..` after a
symbolic link or through its ``env.vars``, and ``${NAME}`` from ``env.vars``: the real ``openclaw agents
list --json`` and ``openclaw config get`` in a throwaway HOME, beside this product's settings; and the
keys whose null OpenClaw refuses (its schema: "expected object, received null"), refused here too.

OpenClaw folds ``.`` and ``..`` as text (node's ``path.resolve``), and its ``loadConfig`` adds the
config's ``env.vars`` to its environment (``applyConfigEnvVars``) before it resolves a path or a
``${NAME}``; this product followed the link first and used ``env.vars`` only for ``${NAME}``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openclaw_memory.errors import ConfigError
from openclaw_memory.settings import Overrides, resolve_settings

from .conftest import NODE_IN_ROOT, OPENCLAW_CLI, oracle_root, why_unavailable

OPS = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}

# (name, openclaw.json with @ for HOME, environment with @ for HOME)
CASES = [
    ("the workspace with .. after a link", {"agents": {"defaults": {"workspace": "@/link/../ws"}}}, {}),
    ("the workspace with .. after a folder not there", {"agents": {"defaults": {"workspace": "@/x/../ws"}}}, {}),
    ("OPENCLAW_WORKSPACE_DIR with .. after a link", {}, {"OPENCLAW_WORKSPACE_DIR": "@/link/../ws"}),
    ("OPENCLAW_STATE_DIR with .. after a link", OPS, {"OPENCLAW_STATE_DIR": "@/link/../state"}),
    ("env.vars OPENCLAW_WORKSPACE_DIR", {"env": {"vars": {"OPENCLAW_WORKSPACE_DIR": "@/ws"}}}, {}),
    ("env.vars under the process's", {"env": {"vars": {"OPENCLAW_WORKSPACE_DIR": "@/ws"}}},
     {"OPENCLAW_WORKSPACE_DIR": "@/elsewhere/ws"}),
    ("env.vars over the process's white space", {"env": {"vars": {" OPENCLAW_WORKSPACE_DIR ": "@/ws"}}},
     {"OPENCLAW_WORKSPACE_DIR": " \t"}),
    ("env.vars holding a reference", {"env": {"vars": {"X": "@", "OPENCLAW_WORKSPACE_DIR": "${X}/ws"}}}, {}),
    ("env.vars OPENCLAW_STATE_DIR", {"env": {"vars": {"OPENCLAW_STATE_DIR": "@/state"}}, **OPS}, {}),
    ("env.vars OPENCLAW_HOME", {"env": {"vars": {"OPENCLAW_HOME": "@/elsewhere"}}, "agents": {"defaults": {"workspace": "~/ws"}}},
     {}),
    ("env.vars HOME, blocked", {"env": {"vars": {"HOME": "@/elsewhere"}}, "agents": {"defaults": {"workspace": "~/ws"}}}, {}),
    # OpenClaw reads no OPENCLAW_WORKSPACE (this product's own, from its process alone): each agent keeps its own.
    ("env.vars OPENCLAW_WORKSPACE, read by neither", {"env": {"vars": {"OPENCLAW_WORKSPACE": "@/ws"}}, "agents": {"entries": {
        "main": {"default": True, "workspace": "@/ws"}, "ops": {"workspace": "@/elsewhere/ws"}}}}, {}),
]


def _openclaw(home: Path, environ: dict, *args: str) -> list:
    root = oracle_root()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "NO_COLOR": "1", **environ}
    done = subprocess.run([str(root / NODE_IN_ROOT), str(root / OPENCLAW_CLI), *args], env=env, cwd=home,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    start = next(i for i, line in enumerate(done.stdout.splitlines(keepends=True)) if line[:1] in "[{")
    return json.loads("".join(done.stdout.splitlines(keepends=True)[start:]))


def _home(tmp_path: Path, n: int) -> Path:
    home = tmp_path / str(n)
    for folder in (".openclaw", "ws", "state", "elsewhere/deep", "elsewhere/ws", "elsewhere/state"):
        (home / folder).mkdir(parents=True)
    (home / "link").symlink_to(home / "elsewhere" / "deep")
    return home


def _at(value, home: Path):
    return json.loads(json.dumps(value).replace("@", str(home)))


@pytest.mark.parametrize(("n", "name", "config", "environ"), [(n, *case) for n, case in enumerate(CASES)],
                         ids=[case[0] for case in CASES])
def test_the_workspace_openclaw_uses(tmp_path, monkeypatch, checks, n, name, config, environ):
    if why_unavailable():
        pytest.skip(why_unavailable())
    home = _home(tmp_path, n)
    config, environ = _at(config, home), _at(environ, home)
    (home / ".openclaw" / "openclaw.json").write_text(json.dumps(config), encoding="utf-8")
    answer = _openclaw(home, environ, "agents", "list", "--json")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    for agent in answer:
        os.makedirs(agent["workspace"], exist_ok=True)  # (this product refuses a workspace that is not there)
        ours = resolve_settings(Overrides(agent=agent["id"]), environ=environ)
        checks.same(f"{name}: agent {agent['id']}'s workspace", str(ours.workspace), os.path.realpath(agent["workspace"]))
    checks.done()


def test_a_reference_to_a_config_variable(tmp_path, monkeypatch, checks):
    if why_unavailable():
        pytest.skip(why_unavailable())
    home = _home(tmp_path, 0)
    config = {"env": {"vars": {" ND ": "@/out", "BLANK": "  ", "LD_PRELOAD": "/x", "OPENCLAW_INCLUDE_ROOTS": "/y",
                               "REF": "${ND}", "ESC": "$${ND}", "SPACED": "@/out"}},
              "agents": {"defaults": {"workspace": "@/ws"}},
              "memory": {"search": {"extraPaths": ["${ND}", "${BLANK}notes", "${LD_PRELOAD}", "${OPENCLAW_INCLUDE_ROOTS}",
                                                   "${REF}", "${ESC}", "${SPACED}/s", "${NOT_SET}"]}}}
    (home / ".openclaw" / "openclaw.json").write_text(json.dumps(_at(config, home)), encoding="utf-8")
    environ = {"SPACED": " \t"}
    theirs = _openclaw(home, environ, "config", "get", "memory.search.extraPaths", "--json")
    monkeypatch.setenv("HOME", str(home))
    ours = resolve_settings(Overrides(), environ=environ).extra_paths
    checks.same("extraPaths", [str(p) for p in ours], [os.path.join(home, "ws", p) for p in theirs])
    checks.done()


# A null for a key this product reads, as written (`@` for HOME): OpenClaw refuses the config at the key
# (`issue`, as its `agents list --json` names it). Before, this product took each null but an agent's
# memory.search as unset (no extra paths, the default budget, no env.vars); beside the older agents.list,
# an agents.entries of null was passed over and the list read, and with {main: null} neither was.
REFUSED = [
    ("agents.entries of null beside agents.list", {"agents": {"entries": None, "list": [{"id": "main", "workspace": "@/ws"}]}},
     "agents.entries", "agents.entries"),
    ("agents.entries.main of null beside agents.list",
     {"agents": {"entries": {"main": None}, "list": [{"id": "main", "workspace": "@/ws"}]}}, "agents.entries.main",
     "agents.entries.main"),
    ("memory.search.extraPaths", {"memory": {"search": {"extraPaths": None}}}, "memory.search.extraPaths",
     "memory.search.extraPaths"),
    ("env", {"env": None}, "env", "env"),
    ("env.vars", {"env": {"vars": None}}, "env.vars", "env.vars"),
    ("a variable of env.vars", {"env": {"vars": {"OPENCLAW_WORKSPACE_DIR": None}}}, "env.vars.OPENCLAW_WORKSPACE_DIR",
     "env.vars.OPENCLAW_WORKSPACE_DIR"),
    ("multimodal.modalities", {"memory": {"search": {"multimodal": {"modalities": None}}}},
     "memory.search.multimodal.modalities", "memory.search.multimodal.modalities"),
    ("query.maxResults", {"memory": {"search": {"query": {"maxResults": None}}}}, "memory.search.query.maxResults",
     "memory.search.query.maxResults"),
    ("bootstrapMaxChars", {"agents": {"defaults": {"bootstrapMaxChars": None}}}, "agents.defaults.bootstrapMaxChars",
     "agents.defaults.bootstrapMaxChars"),
    ("bootstrapTotalMaxChars", {"agents": {"entries": {"main": {"bootstrapTotalMaxChars": None}}}},
     "agents.entries.main.bootstrapTotalMaxChars", "agents.entries.main.bootstrapTotalMaxChars"),
    ("contextLimits", {"agents": {"defaults": {"contextLimits": None}}}, "agents.defaults.contextLimits",
     "agents.defaults.contextLimits"),
    ("startupContext.applyOn", {"agents": {"defaults": {"startupContext": {"applyOn": None}}}},
     "agents.defaults.startupContext.applyOn", "agents.defaults.startupContext.applyOn"),
    ("startupContext.dailyMemoryDays", {"agents": {"defaults": {"startupContext": {"dailyMemoryDays": None}}}},
     "agents.defaults.startupContext.dailyMemoryDays", "agents.defaults.startupContext.dailyMemoryDays"),
    ("userTimezone", {"agents": {"defaults": {"userTimezone": None}}}, "agents.defaults.userTimezone",
     "agents.defaults.userTimezone"),
    ("an agent's memory.search", {"agents": {"entries": {"main": {"memory": {"search": None}}}}},
     "agents.entries.main.memory.search", "agents.entries.main.memory.search"),
    ("an entry of agents.list", {"agents": {"list": [{"id": "main", "workspace": None}]}}, "agents.entries.main.workspace",
     "agents.list[0].workspace"),
]


@pytest.mark.parametrize(("name", "config", "issue", "ours_named"), REFUSED, ids=[case[0] for case in REFUSED])
def test_a_null_openclaw_refuses_is_refused(tmp_path, monkeypatch, checks, name, config, issue, ours_named):
    if why_unavailable():
        pytest.skip(why_unavailable())
    home = _home(tmp_path, 0)
    (home / ".openclaw" / "workspace").mkdir()
    (home / ".openclaw" / "workspace-main").mkdir()
    (home / ".openclaw" / "openclaw.json").write_text(json.dumps(_at(config, home)), encoding="utf-8")
    root = oracle_root()
    done = subprocess.run([str(root / NODE_IN_ROOT), str(root / OPENCLAW_CLI), "agents", "list", "--json"],
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "NO_COLOR": "1"},
                          cwd=home, capture_output=True, text=True, timeout=120)
    answer = json.loads(done.stdout[done.stdout.index("{"):]) if done.returncode else {}
    checks.same(f"{name}: OpenClaw refuses it at", [i["path"] for i in answer.get("issues", []) if i["path"] == issue], [issue])
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(home)
    try:
        resolve_settings(Overrides(), environ={})
        ours = "read"
    except ConfigError as exc:
        ours = exc.message.removeprefix(f"{home / '.openclaw' / 'openclaw.json'}: ").split(" must be ")[0]
    checks.same(f"{name}: this product refuses it at", ours, ours_named)
    checks.done()
