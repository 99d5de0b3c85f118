"""openclaw.json past its JSON5, as OpenClaw 2026.9.6 reads it: `$include` files and `${NAME}`
references (openclaw_memory/openclaw_json.py)."""

from __future__ import annotations

import json
import os
import re

import pytest

from conftest import write
from openclaw_memory.errors import ConfigError, WorkspaceError
from openclaw_memory.settings import Overrides, resolve_settings


def settings(state_dir, environ=None, agent="main"):
    return resolve_settings(Overrides(state_dir=str(state_dir), agent=agent), environ=environ or {})


def test_agents_kept_in_included_files_are_read_as_if_written_in_place(tmp_path, state_dir, cli):
    """OpenClaw's docs split a config this way; the included agents were not read at all: the agent
    got OpenClaw's default workspace and none of its extra paths."""
    ws, notes, more = tmp_path / "ops-ws", tmp_path / "notes", tmp_path / "more"
    write(ws / "MEMORY.md", "# Ops\n")
    write(notes / "a.md", "a\n")
    write(more / "b.md", "b\n")
    write(state_dir / "openclaw.json", '{agents: {$include: "./agents.json5"}, memory: {search: {$include: ["s1.json", "s2.json"]}}}')
    write(state_dir / "agents.json5", json.dumps({"entries": {"ops": {"$include": "conf.d/ops.json5", "workspace": str(ws)}}}))
    write(state_dir / "conf.d" / "ops.json5", json.dumps({"workspace": "/nowhere", "bootstrapMaxChars": 123}))
    write(state_dir / "s1.json", json.dumps({"extraPaths": [str(notes)]}))
    write(state_dir / "s2.json", json.dumps({"extraPaths": [str(more)]}))  # lists of two includes add up
    s = settings(state_dir, agent="ops")
    assert s.workspace == ws  # the key beside an $include wins over the included file's
    assert s.prompt.file_chars == 123  # the included file's own keys count (an include of an include)
    assert s.extra_paths == (str(notes), str(more))
    listed = cli("files", "--json", "--agent", "ops", env={"OPENCLAW_WORKSPACE": ""})
    assert listed.returncode == 0 and listed.json()["workspace"] == str(ws), listed.stderr


def test_a_value_may_name_an_environment_variable(tmp_path, state_dir):
    """`workspace: "${AGENT_HOME}/ws"` was taken for a folder named `${AGENT_HOME}`."""
    ws = tmp_path / "home" / "ws"
    ws.mkdir(parents=True)
    write(state_dir / "openclaw.json", '{agents: {defaults: {workspace: "${AGENT_HOME}/ws", memorySearch: '
                                       '{extraPaths: ["$${AGENT_HOME}/x", "${NOT_SET}/y", "${lower}/z"]}}}}')
    s = settings(state_dir, {"AGENT_HOME": str(tmp_path / "home")})
    assert s.workspace == ws
    assert s.extra_paths == tuple(str(ws / p) for p in ("${AGENT_HOME}/x", "${NOT_SET}/y", "${lower}/z"))  # as OpenClaw leaves them
    write(state_dir / "openclaw.json", json.dumps({"env": {"vars": {"AGENT_HOME": str(tmp_path / "home")}},
                                                   "agents": {"defaults": {"workspace": "${AGENT_HOME}/ws"}}}))
    assert settings(state_dir).workspace == ws  # the config's own env block, where the environment has none
    write(state_dir / "openclaw.json", json.dumps({"agents": {"defaults": {"workspace": f"{tmp_path}/${{AGENT_HOME}}/ws"}}}))
    with pytest.raises(WorkspaceError, match=re.escape(f"workspace not found: {tmp_path}/${{AGENT_HOME}}/ws")):
        settings(state_dir)  # unset: it stays as written, and the message shows it


@pytest.mark.parametrize("files, said", [
    ({"openclaw.json": '{agents: {$include: "../elsewhere.json"}}', "../elsewhere.json": "{}"},
     "the file is outside the folder of openclaw.json"),
    ({"openclaw.json": '{agents: {$include: "a.json"}}', "a.json": '{$include: "b.json"}', "b.json": '{$include: "a.json"}'},
     "circular include: "),
    ({"openclaw.json": '{$include: "openclaw.json"}'}, "circular include: "),
    ({"openclaw.json": '{agents: {$include: "missing.json"}}'}, "missing.json (an $include of openclaw.json): no such file"),
    ({"openclaw.json": '{agents: {$include: "list.json", defaults: {}}}', "list.json": "[1]"},
     "is not an object, so the keys beside it cannot be merged over it"),
    ({"openclaw.json": '{agents: {$include: 5}}'}, "$include must be a path or a list of paths, not 5"),
    ({"openclaw.json": '{agents: {$include: "bad.json"}}', "bad.json": "{a: }"}, "bad.json: not valid JSON5: line 1"),
    ({"openclaw.json": '{$include: "x.json"}', "x.json": "[]"}, "the top level must be an object (after its $include)"),
    ({"openclaw.json": '{$include: "0.json"}', **{f"{i}.json": f'{{$include: "{i + 1}.json"}}' for i in range(12)}},
     "includes nest more than 10 deep"),
])
def test_a_bad_include_is_one_line_naming_the_file(tmp_path, cli, state_dir, files, said):
    for name, text in files.items():
        write(state_dir / name, text)
    res = cli("files", "--json")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    assert said in res.json()["error"], res.json()["error"]


def test_an_include_through_a_symlink_out_of_the_folder_is_refused_unless_its_folder_is_allowed(tmp_path, state_dir):
    outside = tmp_path / "shared-config"
    write(outside / "agents.json", json.dumps({"defaults": {"workspace": str(tmp_path)}}))
    os.symlink(outside / "agents.json", state_dir / "agents.json")
    write(state_dir / "openclaw.json", '{agents: {$include: "agents.json"}}')
    with pytest.raises(ConfigError, match="outside the folder of openclaw.json"):
        settings(state_dir)
    assert settings(state_dir, {"OPENCLAW_INCLUDE_ROOTS": str(outside)}).workspace == tmp_path


def test_a_tilde_in_an_include_root_or_the_workspace_is_read_as_openclaw_reads_it(tmp_path, state_dir, monkeypatch):
    """OpenClaw 2026.9.6 expands a leading `~` alone or before `/` (``expandHomePrefix``), and reads
    `~user` as a folder of that name in the current folder, never that user's home: include roots
    and the workspace alike (the settings' rule expanded `~user`, and a copy of it for include
    roots did not)."""
    monkeypatch.chdir(tmp_path)
    here = tmp_path / "~nobody"
    write(here / "agents.json", json.dumps({"defaults": {"workspace": str(tmp_path)}}))
    os.symlink(here / "agents.json", state_dir / "agents.json")
    write(state_dir / "openclaw.json", '{agents: {$include: "agents.json"}}')
    assert settings(state_dir, {"OPENCLAW_INCLUDE_ROOTS": str(here)}).workspace == tmp_path  # the control
    assert settings(state_dir, {"OPENCLAW_INCLUDE_ROOTS": "~nobody"}).workspace == tmp_path  # ./~nobody
    (tmp_path / "~nobody" / "ws").mkdir()
    write(state_dir / "openclaw.json", '{agents: {defaults: {workspace: "~nobody/ws"}}}')
    assert settings(state_dir).workspace == tmp_path / "~nobody" / "ws"


@pytest.mark.parametrize(("config", "said"), [
    ('{memory: {search: {extraPaths: [{path: "x", pattern: null}]}}}',
     'memory.search.extraPaths must be a list of paths or {path, pattern} objects, not {"path": "x", "pattern": null}'),
    ('{agents: {defaults: {workspace: true}}}', "agents.defaults.workspace must be a string (a folder path), not true"),
    ('{agents: [1, null]}', "agents must be an object, not array [1, null]"),
    ('{agents: {list: false}}', "agents.list must be an array of agents, not false"),
    ('{memory: {search: {extraPaths: [{path: "x", pattern: "a\\u0000b"}]}}}',
     'memory.search.extraPaths: the pattern "a\\u0000b" of extra path "x" holds a NUL character, which no file name holds: '
     "it matches nothing (OpenClaw lists nothing of that extra path); remove it or the extra path"),
])
def test_a_wrong_value_is_shown_as_json_and_a_bad_pattern_named_as_the_pattern(state_dir, config, said):
    # Values were shown as Python writes them (not True, not {'path': 'x', 'pattern': None}), and a
    # pattern holding a NUL character was said to be "the path 'a\x00b'".
    write(state_dir / "openclaw.json", config)
    with pytest.raises(ConfigError) as caught:
        settings(state_dir)
    assert caught.value.message == f"{state_dir / 'openclaw.json'}: {said}"


def test_a_config_variable_is_taken_for_a_reference_by_openclaws_rules(tmp_path, state_dir):
    """`${NAME}` from `env.vars` as OpenClaw applies them (collectConfigEnvVarsByTarget,
    applyConfigEnvVars): a name is trimmed, a value of white space is no value, a white-space value
    of the environment is replaced, a name OpenClaw blocks and a value holding `${...}` are dropped.
    `${ND}` (set as " ND ") stayed as written, `${BLANK}` became its spaces."""
    out = tmp_path / "out"
    write(state_dir / "openclaw.json", json.dumps({
        "env": {"vars": {" ND ": str(out), "BLANK": "  ", "LD_PRELOAD": "/x", "OPENCLAW_INCLUDE_ROOTS": "/y",
                         "REF": "${ND}", "ESC": "$${ND}", "SPACED": str(out)}},
        "agents": {"defaults": {"workspace": str(tmp_path)}},
        "memory": {"search": {"extraPaths": ["${ND}", "${BLANK}notes", "${LD_PRELOAD}", "${OPENCLAW_INCLUDE_ROOTS}",
                                             "${REF}", "${ESC}", "${SPACED}/s"]}}}))
    s = settings(state_dir, {"SPACED": " \t"})
    assert s.extra_paths == tuple(map(str, (out, tmp_path / "${BLANK}notes", tmp_path / "${LD_PRELOAD}",
                                            tmp_path / "${OPENCLAW_INCLUDE_ROOTS}", tmp_path / "${REF}",
                                            tmp_path / "$${ND}", out / "s")))  # (one pass: $${ND} stays)
    assert settings(state_dir, {"ND": str(tmp_path / "mine")}).extra_paths[0] == str(tmp_path / "mine")  # the process's wins


@pytest.mark.parametrize(("files", "said"), [
    ({"openclaw.json": "null"}, "openclaw.json: line 1: the top level must be an object, not null"),
    ({"openclaw.json": "// nothing\nnull"}, "openclaw.json: line 1: the top level must be an object, not null"),
    ({"openclaw.json": '{memory: {$include: "./e.json5"}}', "e.json5": "null"}, "openclaw.json: memory must be an object, not null"),
    ({"openclaw.json": "{memory: null}"}, "openclaw.json: memory must be an object, not null"),
    ({"openclaw.json": "{memory: {search: null}}"}, "openclaw.json: memory.search must be an object, not null"),
    ({"openclaw.json": "{agents: {defaults: {workspace: null}}}"},
     "openclaw.json: agents.defaults.workspace must be a string (a folder path), not null"),
    ({"openclaw.json": "{agents: {entries: {ops: null}}}"}, "openclaw.json: agents.entries.ops must be an object, not null"),
    # Every other key read here: each was taken as unset (no extra paths, the default budget, no env.vars).
    ({"openclaw.json": "{memory: {search: {extraPaths: null}}}"}, "openclaw.json: memory.search.extraPaths must be an array, not null"),
    ({"openclaw.json": "{env: null}"}, "openclaw.json: env must be an object, not null"),
    ({"openclaw.json": "{env: {vars: null}}"}, "openclaw.json: env.vars must be an object, not null"),
    ({"openclaw.json": "{env: {vars: {OPENCLAW_WORKSPACE_DIR: null}}}"},
     "openclaw.json: env.vars.OPENCLAW_WORKSPACE_DIR must be a string, not null"),
    ({"openclaw.json": "{memory: {search: {multimodal: {enabled: null}}}}"},
     "openclaw.json: memory.search.multimodal.enabled must be true or false, not null"),
    ({"openclaw.json": "{memory: {search: {query: {maxResults: null}}}}"},
     "openclaw.json: memory.search.query.maxResults must be a number, not null"),
    ({"openclaw.json": "{agents: {defaults: {bootstrapMaxChars: null}}}"},
     "openclaw.json: agents.defaults.bootstrapMaxChars must be a number, not null"),
    ({"openclaw.json": "{agents: {defaults: {startupContext: {maxTotalChars: null}}}}"},
     "openclaw.json: agents.defaults.startupContext.maxTotalChars must be a number, not null"),
    ({"openclaw.json": "{agents: {defaults: {userTimezone: null}}}"},
     "openclaw.json: agents.defaults.userTimezone must be a string, not null"),
    ({"openclaw.json": "{agents: {ownership: null}}"}, 'openclaw.json: agents.ownership must be "explicit", not null'),
    ({"openclaw.json": "{agents: {entries: {main: {contextLimits: {memoryGetMaxChars: null}}}}}"},
     "openclaw.json: agents.entries.main.contextLimits.memoryGetMaxChars must be a number, not null"),
    ({"openclaw.json": "{agents: {entries: {main: {memory: {search: {extraPaths: null}}}}}}"},
     "openclaw.json: agents.entries.main.memory.search.extraPaths must be an array, not null"),
    ({"openclaw.json": "{agents: {list: null}}"}, "openclaw.json: agents.list must be an array, not null"),
    ({"openclaw.json": "{agents: {list: [{id: 'main', bootstrapTotalMaxChars: null}]}}"},
     "openclaw.json: agents.list[0].bootstrapTotalMaxChars must be a number, not null"),
    # agents.entries beside the older agents.list: OpenClaw takes the key as its roster, null or not, and
    # refuses the config; the list was read in its place, and beside {main: null} neither was.
    ({"openclaw.json": "{agents: {entries: null, list: [{id: 'main'}]}}"}, "openclaw.json: agents.entries must be an object, not null"),
    ({"openclaw.json": "{agents: {entries: {main: null}, list: [{id: 'main'}]}}"},
     "openclaw.json: agents.entries.main must be an object, not null"),
])
def test_a_null_is_refused_as_openclaw_refuses_it(state_dir, files, said):
    """A file holding `null` was no config at all (every setting its default), and an $include of one
    "no such file"; a key this product reads set to null was unset. OpenClaw refuses each: "expected
    object, received null"."""
    for name, text in files.items():
        write(state_dir / name, text)
    with pytest.raises(ConfigError) as caught:
        settings(state_dir)
    assert said in caught.value.message and "OpenClaw refuses" in caught.value.message, caught.value.message
