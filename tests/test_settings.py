"""Settings precedence: flags > environment > config files > defaults; extra paths add up."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import env_for, settings_for, write
from openclaw_memory.errors import ConfigError, UsageError, WorkspaceError
from openclaw_memory.settings import Overrides, resolve_settings


def resolve(state_dir, environ=None, **kw):
    """Settings from ``state_dir`` alone; its ``workspace`` folder (OpenClaw's default) is made
    when it is a folder already and no workspace is given."""
    if Path(state_dir).is_dir():
        (Path(state_dir) / "workspace").mkdir(exist_ok=True)
    return resolve_settings(Overrides(state_dir=str(state_dir), **kw), environ=environ or {})


def test_workspace_precedence(tmp_path, state_dir):
    a, b, c, d = (tmp_path / n for n in "abcd")
    for p in (a, b, c, d):
        p.mkdir()
    write(state_dir / "openclaw.json", f'{{agents: {{defaults: {{workspace: "{c}"}}, // comment\n}}}}')
    assert resolve_settings(Overrides(state_dir=str(state_dir)), environ={}).workspace == c
    env = {"OPENCLAW_WORKSPACE": str(b)}
    assert resolve_settings(Overrides(state_dir=str(state_dir)), environ=env).workspace == b
    assert resolve_settings(Overrides(state_dir=str(state_dir), workspace=str(a)), environ=env).workspace == a
    assert resolve_settings(Overrides(state_dir=str(state_dir)), environ={"OPENCLAW_WORKSPACE": ""}).workspace == c


def test_openclaw_workspace_is_read_from_the_process_alone(tmp_path, state_dir):
    """OPENCLAW_WORKSPACE is this product's own: OpenClaw reads no such variable, so one in openclaw.json's
    env.vars or the state dir's .env names no agent's workspace. Taken from them, it gave agent ops main's
    workspace over its own agents.entries.ops.workspace (ops read main's notes)."""
    main, ops = tmp_path / "mainws", tmp_path / "opsws"
    main.mkdir()
    ops.mkdir()
    agents = f'agents: {{entries: {{main: {{default: true, workspace: "{main}"}}, ops: {{workspace: "{ops}"}}}}}}'
    write(state_dir / "openclaw.json", f'{{env: {{vars: {{OPENCLAW_WORKSPACE: "{main}"}}}}, {agents}}}')
    assert resolve(state_dir, agent="ops").workspace == ops
    write(state_dir / "openclaw.json", f"{{{agents}}}")
    write(state_dir / ".env", f"OPENCLAW_WORKSPACE={main}\n")
    assert resolve(state_dir, agent="ops").workspace == ops
    assert resolve(state_dir, {"OPENCLAW_WORKSPACE": str(main)}, agent="ops").workspace == main  # the process's: above the config


def test_the_other_agents_workspaces_are_read_with_the_settings_environment(tmp_path, monkeypatch):
    """The agents openclaw.json configures are resolved with the environment the settings were, OpenClaw's
    .env files included (a ${VAR}, an OPENCLAW_STATE_DIR): read with the process's alone, agent ops's
    workspace "${ROOT}/ops" was a folder of that name in the current one, and main's was looked for in
    ~/.openclaw, not the state dir the .env named."""
    from openclaw_memory.settings.agents import configured_workspaces

    home, state = tmp_path / "home", tmp_path / "state"
    monkeypatch.setenv("HOME", str(home))
    write(home / ".openclaw" / ".env", f"OPENCLAW_STATE_DIR={state}\nROOT={tmp_path / 'root'}\n")
    write(state / "openclaw.json", '{agents: {entries: {main: {default: true}, ops: {workspace: "${ROOT}/ops"}, qa: {}}}}')
    for folder in ("workspace", "workspace-qa"):
        (state / folder).mkdir()
    settings = resolve_settings(Overrides(), environ={"HOME": str(home)})
    assert settings.state_dir == state and settings.workspace == state / "workspace"
    assert configured_workspaces(settings) == {
        "main": str(state / "workspace"), "ops": str(tmp_path / "root" / "ops"), "qa": str(state / "workspace-qa")}


def test_agent_entry_workspace_and_extra_paths_add_up(tmp_path, state_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    write(state_dir / "openclaw.json", """{
      agents: {
        defaults: { memorySearch: { extraPaths: ["~/notes", "shared"] } },
        list: [ { id: "ops", workspace: "WS", memorySearch: { extraPaths: ["ops-notes"] } } ],
      },
    }""".replace("WS", str(ws)))
    write(state_dir / "openclaw-memory.toml", 'extra_paths = ["toml-notes"]\n')
    env = {"OPENCLAW_MEMORY_EXTRA_PATHS": os.pathsep.join(["env-a", "", " shared "])}
    s = resolve_settings(Overrides(state_dir=str(state_dir), agent="ops", extra=("flag", "shared")), environ=env)
    assert s.workspace == ws and s.agent == "ops"
    assert s.extra_paths == (
        os.path.expanduser("~/notes"), str(ws / "shared"), str(ws / "ops-notes"), str(ws / "toml-notes"),
        str(ws / "env-a"), str(ws / "flag"),
    )


def test_an_agent_of_agents_entries_gets_its_workspace_extra_paths_and_limits(cli, tmp_path, state_dir):
    """OpenClaw 2026.9.6's own spelling, as its `doctor --fix` writes it: agents keyed by id under
    agents.entries. Only agents.list was read: an up-to-date OpenClaw user's agent got the default
    workspace, none of its extra paths and none of its limits, and `--agent Ops` (OpenClaw's id `ops`) neither."""
    ws = tmp_path / "ops-ws"
    write(ws / "MEMORY.md", "# Ops\n" + "x" * 400 + "\n")
    write(tmp_path / "runbooks" / "deploy.md", "# Deploy\n")
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {
        "main": {"default": True},
        "ops": {"workspace": str(ws), "memory": {"search": {"extraPaths": [str(tmp_path / "runbooks")]}},
                "contextLimits": {"memoryGetMaxChars": 100}}}}}))
    for agent in ("ops", "Ops"):
        listed = cli("files", "--json", "--agent", agent, env={"OPENCLAW_WORKSPACE": ""})
        assert listed.returncode == 0, listed.stderr
        assert listed.json()["workspace"] == str(ws)
        assert [f["path"] for f in listed.json()["files"]] == ["MEMORY.md", "../runbooks/deploy.md"]
        assert cli("read", "MEMORY.md", "--json", "--agent", agent, env={"OPENCLAW_WORKSPACE": ""}).json()["truncated"] is True
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {"ops": {"workspace": 5}}}}))
    wrong = cli("files", "--agent", "ops", env={"OPENCLAW_WORKSPACE": ""})
    assert wrong.returncode == 2 and "openclaw.json: agents.entries.ops.workspace must be a string" in wrong.stderr, wrong.stderr
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": ["ops"]}}))
    wrong = cli("files", env={"OPENCLAW_WORKSPACE": ""})
    assert wrong.returncode == 2 and "agents.entries must be an object keyed by agent id" in wrong.stderr, wrong.stderr

def test_toml_limits(tmp_path, state_dir):
    write(state_dir / "openclaw-memory.toml", "[read]\ndefault_lines = 10\nmax_chars = 500\n[prompt]\nfile_chars = 100\n")
    s = resolve(state_dir)
    assert (s.read.default_lines, s.read.max_chars, s.prompt.file_chars, s.prompt.total_chars) == (10, 500, 100, 60_000)


def test_malformed_files_name_file_and_line(tmp_path, state_dir):
    write(state_dir / "openclaw.json", "{\n  agents: {\n    defaults: { workspace: 1 }\n    list: []\n}\n")
    with pytest.raises(ConfigError, match=r"openclaw\.json.*line 4"):
        resolve(state_dir)
    os.unlink(state_dir / "openclaw.json")
    write(state_dir / "openclaw-memory.toml", "[read]\nmax_chars = \n")
    with pytest.raises(ConfigError, match=r"openclaw-memory\.toml.*line 2"):
        resolve(state_dir)


@pytest.mark.parametrize("body", ["", "\n  \n", "\ufeff", "// only a comment\n"])
def test_an_empty_openclaw_json_is_said_to_be_empty(cli, state_dir, body):
    """OpenClaw refuses an empty config file too; json5 said `Empty strings are not legal JSON5`, or
    `Unexpected end of input at column 4`, about a file with nothing in it."""
    write(state_dir / "openclaw.json", body)
    res = cli("files", "--json")
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert res.json()["error"] == f"{state_dir / 'openclaw.json'}: the file is empty, which is not valid JSON5 " \
                                  "(OpenClaw refuses it too): an empty configuration is {}"

def test_workspace_errors(tmp_path, state_dir):
    with pytest.raises(WorkspaceError, match="not found"):
        resolve(state_dir, workspace=str(tmp_path / "missing"))
    f = write(tmp_path / "file.md", "x")
    with pytest.raises(WorkspaceError, match="not a folder"):
        resolve(state_dir, workspace=str(f))


# What OpenClaw 2026.9.6's resolveAgentWorkspaceDir answers for each (asked of the real OpenClaw):
# (openclaw.json, agent, environment) -> the workspace, "~" being the state dir's parent. A config
# holding the older agents.list is answered as its `doctor --fix` moves it to agents.entries (OpenClaw
# refuses it as it is: "Unrecognized key: list"): the first entry, none marked default, owns the
# shared workspace; tests/conformance/test_agents_list.py asks OpenClaw so.
OPENCLAW_WORKSPACES = [
    ({}, "main", {}, "@STATE/workspace"),
    ({}, "ops", {}, "@STATE/workspace-ops"),
    ({}, "main", {"OPENCLAW_WORKSPACE_DIR": "@WD"}, "@WD"),
    ({"agents": {"defaults": {"workspace": "@D"}}}, "main", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}}}, "ops", {}, "@D/ops"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "main"}]}}, "main", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "main"}, {"id": "ops"}]}}, "main", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "ops", "default": True}, {"id": "main"}]}}, "ops", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "ops"}]}}, "ops", {}, "@D"),
    ({"agents": {"list": [{"id": "main"}, {"id": "ops"}]}}, "main", {}, "@STATE/workspace"),
    ({"agents": {"list": [{"id": "main"}, {"id": "ops"}]}}, "ops", {}, "@STATE/workspace-ops"),
    ({"agents": {"list": [{"id": "ops"}]}}, "ops", {}, "@STATE/workspace"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "ops", "workspace": "@O"}]}}, "ops", {}, "@O"),
    # 2026.9.6 keeps agents in agents.entries, keyed by id (its doctor --fix moves agents.list there),
    # and matches ids as it normalizes them: any case, other characters as "-".
    ({"agents": {"entries": {"ops": {"workspace": "@O"}}}}, "ops", {}, "@O"),
    ({"agents": {"entries": {"Ops": {"workspace": "@O"}}}}, "ops", {}, "@O"),
    ({"agents": {"entries": {"ops": {"workspace": "@O"}}, "list": [{"id": "ops", "workspace": "@D"}]}}, "ops", {}, "@O"),
    ({"agents": {"defaults": {"workspace": "@D"}, "entries": {"ops": {"default": True}, "main": {}}}}, "ops", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}, "entries": {"ops": {"default": True}, "main": {}}}}, "main", {}, "@D/main"),
    ({"agents": {"defaults": {"workspace": "@D"}, "entries": {"ops": {}}}}, "ops", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}, "ownership": "explicit", "entries": {"ops": {"default": True}, "main": {}}}},
     "ops", {}, "@D/ops"),
    ({"agents": {"defaults": {"workspace": "@D"}, "entries": {}}}, "main", {}, "@D/main"),
    ({"agents": {"entries": {}}}, "main", {}, "@STATE/workspace-main"),
    ({"agents": {"list": [{"id": "Ops", "workspace": "@O"}]}}, "ops", {}, "@O"),
    ({"agents": {"list": [{"id": "ops", "workspace": "@O"}]}}, "Ops", {}, "@O"),
    ({"agents": {"list": [{"workspace": "@O"}]}}, "main", {}, "@STATE/workspace-main"),  # that entry is agent 'agent''s
    ({"agents": {"list": [{"workspace": "@O"}]}}, "agent", {}, "@O"),
    ({}, "Ops", {}, "@STATE/workspace-ops"),
    ({"agents": {"defaults": {"workspace": "@D"}}}, "My.Agent", {}, "@D/my-agent"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "OPS", "default": True}, {"id": "main"}]}}, "ops", {}, "@D"),
    ({"agents": {"defaults": {"workspace": "@D"}, "list": [{"id": "a", "default": True}, {"id": "b", "default": True}]}},
     "a", {}, "@D/a"),
]


@pytest.mark.parametrize(("config", "agent", "environ", "expected"), OPENCLAW_WORKSPACES)
def test_with_no_workspace_given_it_is_the_one_openclaw_resolves_never_the_current_folder(
        tmp_path, state_dir, monkeypatch, config, agent, environ, expected):
    """The current folder was the workspace when none was configured: a `write` from any folder
    created MEMORY.md there, and `--state-dir` elsewhere (no openclaw.json there) made it silently
    the workspace. Now it is the one OpenClaw itself resolves for the agent."""
    def place(text: str) -> str:
        return text.replace("@STATE", str(state_dir)).replace("@WD", str(tmp_path / "wd")).replace(
            "@D", str(tmp_path / "d")).replace("@O", str(tmp_path / "o"))

    expected_path = Path(place(expected))
    expected_path.mkdir(parents=True)
    write(state_dir / "openclaw.json", place(json.dumps(config)))
    monkeypatch.chdir(tmp_path)  # a folder that is no workspace of any of these
    environ = {k: place(v) for k, v in environ.items()}
    assert resolve_settings(Overrides(state_dir=str(state_dir), agent=agent), environ=environ).workspace == expected_path


def test_openclaw_profile_moves_the_default_workspace_as_openclaw_does(tmp_path, monkeypatch):
    """OpenClaw 2026.9.6 (asked of it): with OPENCLAW_PROFILE=dev and no state dir given, the default
    workspace is ~/.openclaw-dev/workspace (the state dir stays ~/.openclaw); a state dir given, or the
    profile `default`, keeps <state dir>/workspace. It was ~/.openclaw/workspace whatever the profile."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for folder in (".openclaw-dev/workspace", ".openclaw/workspace", "state/workspace"):
        (tmp_path / folder).mkdir(parents=True)
    assert resolve_settings(Overrides(), environ={"OPENCLAW_PROFILE": " dev "}).workspace == tmp_path / ".openclaw-dev/workspace"
    assert resolve_settings(Overrides(), environ={"OPENCLAW_PROFILE": "Default"}).workspace == tmp_path / ".openclaw/workspace"
    assert resolve_settings(Overrides(), environ={"OPENCLAW_PROFILE": "dev", "OPENCLAW_STATE_DIR": str(tmp_path / "state")}
                            ).workspace == tmp_path / "state/workspace"
    (tmp_path / ".openclaw/workspace-ops").mkdir()  # another agent's: in the state dir, whatever the profile
    assert resolve_settings(Overrides(agent="ops"), environ={"OPENCLAW_PROFILE": "dev"}).workspace == tmp_path / ".openclaw/workspace-ops"
    with pytest.raises(ConfigError, match="OPENCLAW_PROFILE 'a/b' is not a profile name"):
        resolve_settings(Overrides(), environ={"OPENCLAW_PROFILE": "a/b"})


@pytest.mark.parametrize("name", ["\u212a", "\u017f"])
def test_a_profile_name_is_ascii_as_an_agent_id_and_a_namespace_are(tmp_path, monkeypatch, name):
    """OpenClaw's /i pattern folds no letter outside ASCII onto one in it; the profile's copy of it
    (Python's re.I) took the Kelvin sign for k and the long s for s, which the namespace's refused."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / f".openclaw-{name}" / "workspace").mkdir(parents=True)
    with pytest.raises(ConfigError, match="is not a profile name"):
        resolve_settings(Overrides(), environ={"OPENCLAW_PROFILE": name})


def test_openclaw_home_is_the_home_of_every_openclaw_path(tmp_path, monkeypatch):
    """OpenClaw's OPENCLAW_HOME (a service account's home) replaces $HOME for its paths: the state
    dir ~/.openclaw, and `~` in openclaw.json's workspace. It was ignored: the command read the
    invoking user's ~/.openclaw and said no workspace was configured. Extra paths are OpenClaw's
    exception: their `~` is $HOME (expandHomePath; tests/conformance asks OpenClaw)."""
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    service = tmp_path / "srv"
    write(service / ".openclaw" / "openclaw.json", json.dumps({"agents": {"defaults": {
        "workspace": "~/agent", "memorySearch": {"extraPaths": ["~/notes"]}}}}))
    (service / "agent").mkdir()
    for home in (str(service), f" {service} ", "~/../srv"):  # trimmed; `~` in it is the system's home
        s = resolve_settings(Overrides(), environ={"OPENCLAW_HOME": home})
        assert s.state_dir == service / ".openclaw" and s.workspace == service / "agent", home
        assert s.extra_paths == (str(tmp_path / "me" / "notes"),)
    (tmp_path / "me" / ".openclaw" / "workspace").mkdir(parents=True)  # the control: without it, $HOME's
    assert resolve_settings(Overrides(), environ={}).workspace == tmp_path / "me" / ".openclaw" / "workspace"


@pytest.mark.parametrize(("home", "theirs"), [("", "ws/notes"), ("null", "ws/null/notes"), (" ", "ws/ /notes"),
                                             ("/srv/h/", "/srv/h/notes"), ("/srv/h/../g", "/srv/g/notes")])
def test_a_tilde_in_an_extra_path_is_nodes_homedir_as_it_is(tmp_path, monkeypatch, home, theirs):
    """OpenClaw expands an extra path's `~` with node's os.homedir() (expandHomePath), which answers $HOME
    as it is: HOME= makes `~/notes` `notes`, in the workspace (node: path.resolve(ws, path.join(os.homedir(),
    "notes")) run with each HOME gave these). Python's expanduser made it /notes."""
    from openclaw_memory.settings import normalize_extra_paths

    monkeypatch.setenv("HOME", home)
    ws = tmp_path / "ws"
    assert normalize_extra_paths(["~/notes", "~"], ws) == [
        str(tmp_path / theirs) if theirs.startswith("ws") else theirs,
        str(tmp_path / theirs.removesuffix("/notes")) if theirs.startswith("ws") else theirs.removesuffix("/notes")]


NO_HOME = """
import pwd, sys
def unknown(uid):  # a user id the password database has no entry for (a container's --user 1234)
    raise KeyError(uid)
pwd.getpwuid = unknown
from openclaw_memory.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_with_no_home_at_all_openclaws_home_is_the_current_folder(tmp_path, workspace):
    """HOME unset and a user id without a password entry: the import died with `RuntimeError: Could
    not determine home directory` (a traceback for every command); then every command was refused
    unless a state dir was given. OpenClaw 2026.9.6 takes the current folder as its home there
    (resolveRequiredHomeDir's last resort): its state dir is ./.openclaw, and so is this product's.
    Nothing is named `~`."""
    write(workspace / "MEMORY.md", "# Memory\n")
    here = tmp_path / "here"
    here.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW", "HOME", "XDG_", "USERPROFILE"))}
    env["OPENCLAW_WORKSPACE"] = str(workspace)

    def run(*args, **extra):
        return subprocess.run([sys.executable, "-c", NO_HOME, *args], env={**env, **extra}, cwd=here, capture_output=True,
                              text=True, timeout=120)

    read = run("read", "MEMORY.md")
    assert (read.returncode, read.stdout, read.stderr) == (0, "# Memory\n", "")
    unset = run("files", OPENCLAW_WORKSPACE="")  # OpenClaw's default workspace, in its home
    assert unset.returncode == 2 and f"workspace not found: {here / '.openclaw' / 'workspace'}" in unset.stderr, unset.stderr
    given = run("read", "MEMORY.md", "--state-dir", str(tmp_path / "state"))
    assert given.returncode == 0 and given.stdout == "# Memory\n", given.stderr
    unset = run("files", OPENCLAW_STATE_DIR=str(tmp_path / "state"), OPENCLAW_WORKSPACE="")
    assert unset.returncode == 2 and f"workspace not found: {tmp_path / 'state' / 'workspace'}" in unset.stderr, unset.stderr
    assert [p.name for p in here.iterdir()] == [".openclaw"]


# (HOME, other variables) -> OpenClaw 2026.9.6's home, state dir and openclaw.json (at <here>, its current folder),
# the values its own `openclaw config file` printed, run from <here> with that environment (the oracle at
# /tmp/b36/oracle; tests/conformance/test_openclaw_settings.py::test_which_openclaw_json_is_read asks it each run):
# a HOME that is empty, blank, "null" or "undefined" is none (normalizeHomeDirValue), USERPROFILE and Termux's
# PREFIX come next, then node's os.homedir() (which answers $HOME itself when it is set), then the current folder.
NO_HOMES = [
    ("", {}, "@", "@/.openclaw"),
    (" \t", {}, "@", "@/.openclaw"),
    ("null", {}, "@", "@/.openclaw"),
    ("undefined", {}, "@", "@/.openclaw"),
    (" null ", {}, "@", "@/.openclaw"),
    ("rel", {}, "@/rel", "@/rel/.openclaw"),
    (" /srv/h/ ", {}, "/srv/h", "/srv/h/.openclaw"),
    ("", {"USERPROFILE": "/srv/up"}, "/srv/up", "/srv/up/.openclaw"),
    ("", {"PREFIX": "/data/data/com.termux/files/usr", "ANDROID_DATA": "/data"},
     "/data/data/com.termux/files/home", "/data/data/com.termux/files/home/.openclaw"),
    # OPENCLAW_HOME of ~/x with no home: its default workspace's home is the current folder, its state dir's
    # home x in it (OpenClaw nests its resolveRequiredHomeDir once more for the state dir)
    ("", {"OPENCLAW_HOME": "~/x"}, "@", "@/x/.openclaw"),
    ("null", {"OPENCLAW_HOME": "null"}, "@", "@/.openclaw"),
]


@pytest.mark.parametrize(("home", "more", "theirs", "state"), NO_HOMES)
def test_a_home_of_nothing_is_no_home_as_openclaw_reads_it(tmp_path, monkeypatch, home, more, theirs, state):
    """`HOME= openclaw-memory files` said `workspace not found: /.openclaw/workspace` (Python's expanduser
    makes an empty HOME "/"), HOME=null a relative `null/.openclaw/workspace`, and as root
    `HOME= openclaw-memory --state-dir '~/st2' write ...` made /st2: OpenClaw's state dir is elsewhere
    (NO_HOMES), so neither read the other's files. A `~` in --state-dir, -w and OPENCLAW_CONFIG_PATH is
    that home too."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    monkeypatch.setenv("HOME", home)
    for name in ("USERPROFILE", "PREFIX", "ANDROID_DATA"):
        monkeypatch.delenv(name, raising=False)
    for name, value in more.items():
        if name != "OPENCLAW_HOME":
            monkeypatch.setenv(name, value)
    env = {k: v for k, v in more.items() if k == "OPENCLAW_HOME"}
    at = lambda text: Path(text.replace("@", str(here)))  # noqa: E731
    tilde = at(state).parent  # a `~` in a path: the state dir's home (OpenClaw's resolveUserPath)
    if tilde.is_relative_to(here):  # (the test can make those)
        (tilde / "w").mkdir(parents=True)
        s = resolve_settings(Overrides(workspace="~/w"), environ=env)
        assert (s.state_dir, s.config_file, s.workspace) == (at(state), at(state) / "openclaw.json", tilde / "w")
        s = resolve_settings(Overrides(workspace="~/w", state_dir="~/st2"), environ={**env, "OPENCLAW_CONFIG_PATH": "~/c.json"})
        assert (s.state_dir, s.config_file) == (tilde / "st2", tilde / "c.json")
        with pytest.raises(WorkspaceError, match=re.escape(f"workspace not found: {at(theirs)}/.openclaw/workspace ")):
            resolve_settings(Overrides(), environ=env)
    from openclaw_memory.settings import openclaw_home
    from openclaw_memory.settings._places import default_state_dir

    assert (openclaw_home(env), default_state_dir(env)) == (str(at(theirs)), at(state))


def test_a_write_with_no_workspace_configured_never_lands_in_the_current_folder(cli, tmp_path, state_dir):
    here = tmp_path / "somewhere"
    here.mkdir()
    unset = {"OPENCLAW_WORKSPACE": ""}
    refused = cli("write", "MEMORY.md", "--append", "- a fact", env=unset, cwd=here)
    assert refused.returncode == 2 and not (here / "MEMORY.md").exists()
    said = refused.stderr
    assert f"workspace not found: {state_dir / 'workspace'}" in said and "OpenClaw's default" in said
    assert str(state_dir / "openclaw.json") in said and "-w/--workspace" in said and "-w ." not in said
    write(here / "MEMORY.md", "# Memory\n")  # the current folder looks like a workspace: the hint says how to use it
    assert "`-w .` for the current folder" in cli("files", env=unset, cwd=here).stderr
    (state_dir / "workspace").mkdir()  # OpenClaw's own default workspace: the write goes there
    assert cli("write", "MEMORY.md", "--append", "- a fact", env=unset, cwd=here).returncode == 0
    assert "- a fact" in (state_dir / "workspace" / "MEMORY.md").read_text()
    assert (here / "MEMORY.md").read_text() == "# Memory\n"


def test_openclaw_json_is_read_where_openclaw_reads_it(tmp_path, state_dir, workspace):
    """In the state dir (``--state-dir`` moves it, as ``OPENCLAW_STATE_DIR`` moves OpenClaw's),
    unless ``OPENCLAW_CONFIG_PATH`` names the file."""
    elsewhere = tmp_path / "config" / "main.json"
    write(elsewhere, json.dumps({"agents": {"defaults": {"workspace": str(workspace)}}}))
    assert resolve(state_dir, environ={"OPENCLAW_CONFIG_PATH": str(elsewhere)}).workspace == workspace
    assert resolve(state_dir).workspace == state_dir / "workspace"
    write(state_dir / "openclaw.json", json.dumps({"agents": {"defaults": {"workspace": str(workspace)}}}))
    assert resolve(state_dir).workspace == workspace


def test_a_workspace_that_is_not_there_is_named_with_where_it_was_configured(tmp_path, state_dir):
    write(state_dir / "openclaw.json", json.dumps({"agents": {"defaults": {"workspace": str(tmp_path / "agnet")}}}))
    with pytest.raises(WorkspaceError, match=re.escape(
            f"workspace not found: {tmp_path / 'agnet'} (from {state_dir / 'openclaw.json'}: agents.defaults.workspace)")):
        resolve(state_dir)
    with pytest.raises(WorkspaceError, match=re.escape("(from OPENCLAW_WORKSPACE)")):
        resolve(state_dir, environ={"OPENCLAW_WORKSPACE": str(tmp_path / "nope")})
    with pytest.raises(WorkspaceError, match=re.escape("(given with --workspace)")):
        resolve(state_dir, workspace=str(tmp_path / "nope"))


def test_workspace_is_real_path(tmp_path, state_dir):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "link")
    assert resolve(state_dir, workspace=str(tmp_path / "link")).workspace == real


def test_extra_path_objects_with_patterns_from_every_config(tmp_path, state_dir, workspace):
    write(state_dir / "openclaw.json", '{memory: {search: {extraPaths: [{path: "notes", pattern: " *.md "}, "notes"]}},'
          ' agents: {list: [{id: "ops", memory: {search: {extraPaths: [{path: "ops"}]}}}]}}')
    write(state_dir / "openclaw-memory.toml", 'extra_paths = [{ path = "notes", pattern = "sub/**" }, "  "]\n')
    s = resolve(state_dir, workspace=str(workspace), agent="ops")
    assert [(str(e), e.pattern) for e in s.extra_paths] == [
        (str(workspace / "notes"), "*.md"), (str(workspace / "notes"), None), (str(workspace / "ops"), None),
        (str(workspace / "notes"), "sub/**"),
    ]
    write(state_dir / "openclaw-memory.toml", 'extra_paths = [{ pattern = "x" }]\n')
    with pytest.raises(ConfigError, match="extra_paths must be a list of paths or"):
        resolve(state_dir, workspace=str(workspace))


def test_an_extra_path_object_with_an_unknown_key_is_refused_as_openclaw_refuses_it(state_dir, workspace):
    """OpenClaw's schema takes an extraPaths object with `path` and `pattern` alone (strict): `patern` was
    read as no pattern here, and every note of the folder (private-diary.md) was memory."""
    json_path = state_dir / "openclaw.json"
    write(json_path, '{memory: {search: {extraPaths: [{path: "notes", patern: "public*.md"}]}}}')
    with pytest.raises(ConfigError) as err:
        resolve(state_dir, workspace=str(workspace))
    assert str(err.value) == (f'{json_path}: memory.search.extraPaths: unknown key "patern" in '
                              '{"path": "notes", "patern": "public*.md"} (an entry is {path, pattern}; OpenClaw refuses the config)')
    write(json_path, '{agents: {entries: {main: {memory: {search: {extraPaths: [{path: "n", pattern: "*.md", x: 1}]}}}}}}')
    with pytest.raises(ConfigError, match=r'agents\.entries\.main\.memory\.search\.extraPaths: unknown key "x"'):
        resolve(state_dir, workspace=str(workspace))
    write(json_path, '{memory: {search: {extraPaths: [{path: "notes", pattern: "public*.md"}]}}}')
    assert [e.pattern for e in resolve(state_dir, workspace=str(workspace)).extra_paths] == ["public*.md"]


def test_openclaw_limits_per_agent_and_toml_above_them(state_dir, workspace):
    write(state_dir / "openclaw.json", """{agents: {
        defaults: {bootstrapMaxChars: 15000.9, bootstrapTotalMaxChars: -5, contextLimits: {memoryGetMaxChars: 900},
                   userTimezone: " Europe/Paris ",
                   startupContext: {enabled: false, applyOn: ["reset", 3], dailyMemoryDays: 40, maxFileBytes: 0,
                                    maxFileChars: "big", maxTotalChars: 777.7}},
        list: [{id: "ops", bootstrapMaxChars: 5000, contextLimits: {}}]}}""")
    main = resolve(state_dir, workspace=str(workspace), agent="main")  # (ops, the only agent, is the default)
    assert (main.prompt.file_chars, main.prompt.total_chars, main.read.max_chars) == (15000, 60000, 900)
    startup = main.prompt.startup
    assert (startup.enabled, startup.apply_on, startup.daily_memory_days, startup.max_file_bytes,
            startup.max_file_chars, startup.max_total_chars, startup.user_timezone) == (
        False, ("reset",), 14, 1, 1200, 777, "Europe/Paris")
    ops = resolve(state_dir, workspace=str(workspace), agent="ops")
    # The agent's own contextLimits replaces the defaults' whole object (OpenClaw's rule).
    assert (ops.prompt.file_chars, ops.read.max_chars) == (5000, 12000)
    write(state_dir / "openclaw-memory.toml", "[prompt]\nfile_chars = 300\n[read]\nmax_chars = 50\n")
    toml_over = resolve(state_dir, workspace=str(workspace), agent="main")
    assert (toml_over.prompt.file_chars, toml_over.read.max_chars) == (300, 50)


# -- openclaw-memory.toml: one typed tree, checked once -----------------------------------------

DOCS = Path(__file__).resolve().parent.parent / "docs"

# A valid value for every key of every table (the typed field then holds it).
VALID = {
    "read": {"default_lines": 10, "max_chars": 500},
    "prompt": {"file_chars": 300, "total_chars": 400},
    "index": {"model": "all-MiniLM-L6-v2", "chunk_tokens": 64, "overlap_tokens": 8, "embedding_backend": "onnx",
              "backend": "qdrant", "url": "http://localhost:6333", "lock_timeout": 1.5, "embed_batch": 8},
    "index.server": {"api_key_file": "~/qdrant.key", "tenancy": "shared", "namespace": "team-memory", "shard_number": 3,
                     "replication_factor": 2, "write_consistency_factor": 1, "hnsw_m": 16, "hnsw_ef_construct": 100,
                     "timeout": 3, "retries": 0, "retry_backoff": 0.25},
    "search": {"mmr": True, "mmr_lambda": 0.5, "temporal_decay": True, "half_life_days": 14},
    "history": {"keep_per_path": 5, "max_bytes": 80_000},
    "watchdog": {"keep": 3, "max_bytes": 1_000_000},
    "service": {"timeout": 1, "shard_idle": 0.5, "http_body_timeout": 30},
}


def _toml_value(value) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else repr(value)


def _typed(settings, table: str):
    node = settings
    for part in table.split("."):
        node = getattr(node, part)
    return node


def _toml_error(state_dir, workspace, body: str) -> str:
    write(state_dir / "openclaw-memory.toml", body)
    with pytest.raises(ConfigError) as err:
        resolve(state_dir, workspace=str(workspace))
    return err.value.message


def test_every_key_of_every_table_lands_in_its_typed_field(state_dir, workspace):
    body = "".join(f"[{table}]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in keys.items()) for table, keys in VALID.items())
    write(state_dir / "openclaw-memory.toml", body)
    s = resolve(state_dir, workspace=str(workspace))
    for table, keys in VALID.items():
        for key, value in keys.items():
            assert getattr(_typed(s, table), key) == value, (table, key)
    assert isinstance(s.service.timeout, float) and isinstance(s.index.server.timeout, float)
    assert s.index.configured
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.service.timeout = 2  # type: ignore[misc]
    write(state_dir / "openclaw-memory.toml", "")
    defaults = resolve(state_dir, workspace=str(workspace))
    assert (defaults.service.timeout, defaults.service.shard_idle, defaults.watchdog.keep) == (5.0, 10.0, 20)
    assert (defaults.history.keep_per_path, defaults.history.max_bytes) == (50, 256 * 1024 * 1024)
    assert defaults.index.backend == "edge" and defaults.index.server.retries == 4 and not defaults.index.configured
    assert defaults.search.mmr is None  # not set in the toml: openclaw.json's (or off)


def _documented_keys() -> dict[str, set[str]]:
    """The tables and keys docs/configuration.md lists, and the keys above the tables in its toml example."""
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    tables: dict[str, set[str]] = {}
    for table, cell in re.findall(r"^\| `\[([a-z_.]+)\]` \| (.+?) \|", text, flags=re.M):
        tables[table] = set(re.findall(r"`([a-z_]+)`", re.sub(r"\([^)]*\)", "", cell)))
    example = re.search(r"```toml\n(.*?)```", text, flags=re.S)
    assert example
    tables[""] = set(re.findall(r"^([a-z_]+) =", example.group(1).split("\n[")[0], flags=re.M))
    return tables


def _accepted_keys() -> dict[str, set[str]]:
    from openclaw_memory.settings import TOML_KEYS, TOML_TABLES

    accepted = {"": set(TOML_KEYS)}

    def walk(name: str, cls) -> None:
        accepted[name] = set()
        for f in dataclasses.fields(cls):
            if "table" in f.metadata:
                walk(f"{name}.{f.name}", f.metadata["table"])
            elif "toml" in f.metadata:
                accepted[name].add(f.name)

    for name, cls in TOML_TABLES.items():
        walk(name, cls)
    return accepted


def test_the_documented_tables_and_keys_are_the_accepted_ones():
    documented, accepted = _documented_keys(), _accepted_keys()
    assert documented == accepted
    assert {t: set(k) for t, k in VALID.items()} == {t: k for t, k in accepted.items() if t}


def _doc_examples() -> list:
    """Every ```toml block of the docs, with commented-out settings (``# key = value``) switched on."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        blocks = re.findall(r"```toml\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
        for n, block in enumerate(blocks, 1):
            found.append(pytest.param(page.name, re.sub(r"^# ([a-z_]+ = )", r"\1", block, flags=re.M), id=f"{page.stem}-{n}"))
    assert len(found) >= 5
    return found


@pytest.mark.parametrize(("page", "body"), _doc_examples())
def test_every_toml_example_in_the_docs_is_accepted(state_dir, workspace, page, body):
    write(state_dir / "openclaw-memory.toml", body)
    s = resolve(state_dir, workspace=str(workspace))  # the flag is above an example's `workspace`
    data = tomllib.loads(body)
    for table, keys in data.items():
        if isinstance(keys, dict):
            for key, value in keys.items():
                if not isinstance(value, dict):
                    assert getattr(_typed(s, table), key) == value, (page, table, key)


def test_unknown_table_is_refused_with_the_closest_name(state_dir, workspace):
    toml = state_dir / "openclaw-memory.toml"
    assert _toml_error(state_dir, workspace, "[serivce]\ntimeout = 5\n") == f"{toml}: unknown table [serivce] (did you mean [service]?)"
    assert _toml_error(state_dir, workspace, '[index.servr]\ntenancy = "shared"\n') == (
        f"{toml}: unknown table [index.servr] (did you mean [index.server]?)")
    message = _toml_error(state_dir, workspace, "[zzz]\na = 1\n")
    assert message.startswith(f"{toml}: unknown table [zzz] (known: 'workspace', ") and "[service]" in message


def test_unknown_key_is_refused_with_the_closest_name(state_dir, workspace):
    toml = state_dir / "openclaw-memory.toml"
    assert _toml_error(state_dir, workspace, "[service]\nshard_idel = 3\n") == (
        f"{toml}: [service] unknown key 'shard_idel' (did you mean 'shard_idle'?)")
    assert _toml_error(state_dir, workspace, "multimodel = true\n") == f"{toml}: unknown key 'multimodel' (did you mean 'multimodal'?)"
    assert _toml_error(state_dir, workspace, '[index.server]\ntenacy = "shared"\n') == (
        f"{toml}: [index.server] unknown key 'tenacy' (did you mean 'tenancy'?)")
    assert _toml_error(state_dir, workspace, "[watchdog]\nzzz = 1\n") == f"{toml}: [watchdog] unknown key 'zzz' (known: 'keep', 'max_bytes')"
    # [prompt]'s startup context is openclaw.json's, not a key of the toml
    assert "[prompt] unknown key 'startup'" in _toml_error(state_dir, workspace, "[prompt]\nstartup = 1\n")
    assert "[index.server] api_key is not read from the toml" in _toml_error(state_dir, workspace, '[index.server]\napi_key = "k"\n')


@pytest.mark.parametrize(("body", "words"), [
    ('[service]\nshard_idle = "x"\n', "[service] shard_idle must be a positive number of seconds, not 'x'"),
    ("[service]\ntimeout = 0\n", "[service] timeout must be a positive number of seconds, not 0"),
    ("[service]\ntimeout = nan\n", "[service] timeout must be a positive number of seconds, not nan"),
    ("[read]\ndefault_lines = 0\n", "[read] default_lines must be a whole number of at least 1, not 0"),
    ("[prompt]\ntotal_chars = 1.5\n", "[prompt] total_chars must be a whole number of at least 1, not 1.5"),
    # Values as TOML spells them, not as Python shows them (True, {'a': 1}, datetime.date(...)).
    ("[history]\nkeep_per_path = true\n", "[history] keep_per_path must be a whole number of at least 1, not true"),
    ("[prompt]\nfile_chars = {a = 1, b = [false, 2026-01-01]}\n",
     "[prompt] file_chars must be a whole number of at least 1, not {a = 1, b = [false, 2026-01-01]}"),
    ("workspace = 10:30:00\n", "workspace must be a string (a folder path), not 10:30:00"),
    ('[prompt]\nfile_chars = {"a b" = 1, "x.y" = 2, c = 3}\n',
     '[prompt] file_chars must be a whole number of at least 1, not {"a b" = 1, "x.y" = 2, c = 3}'),
    ("[watchdog]\nkeep = 1.5\n", "[watchdog] keep must be a whole number of at least 1, not 1.5"),
    ('[index]\nchunk_tokens = "many"\n', "[index] chunk_tokens must be a whole number of at least 16, not 'many'"),
    ('[index]\nembedding_backend = "fast"\n', "[index] embedding_backend must be auto, torch, onnx or hash, not 'fast'"),
    ('[index]\nbackend = "postgres"\n', "[index] backend must be edge or qdrant, not 'postgres'"),
    ('[index]\nmodel = " "\n', "[index] model must be a non-empty string, not ' '"),
    ("[index]\nlock_timeout = -1\n", "[index] lock_timeout must be a number of seconds of at least 0, not -1"),
    ("[index]\nserver = 5\n", "[index] server must be a table ([index.server] with keys under it), not 5"),
    ('[index.server]\ntenancy = "one"\n', "[index.server] tenancy must be collection or shared, not 'one'"),
    ('[index.server]\nnamespace = "a b"\n', "[index.server] namespace must be 1-64 letters, digits, '-' or '_', not 'a b'"),
    ("[index.server]\ntimeout = 0.05\n", "[index.server] timeout must be a number of seconds of at least 0.1, not 0.05"),
    ("[index.server]\nhnsw_ef_construct = 2\n", "[index.server] hnsw_ef_construct must be a whole number of at least 4, not 2"),
    ('[search]\nmmr = "yes"\n', "[search] mmr must be true or false, not 'yes'"),
    ("[search]\nmmr_lambda = 2\n", "[search] mmr_lambda must be a number from 0 to 1, not 2"),
    ("[search]\nhalf_life_days = 0\n", "[search] half_life_days must be a positive number of days, not 0"),
    ("workspace = 5\n", "workspace must be a string (a folder path), not 5"),
    ('multimodal = "maybe"\n', "multimodal must be true or false, not 'maybe'"),
    ('extra_paths = "x"\n', "extra_paths must be a list of strings (folder or file paths) or {path, pattern} tables, not 'x'"),
    ("service = 5\n", "service must be a table ([service] with keys under it), not 5"),
])
def test_a_wrong_type_names_the_file_table_key_and_what_is_expected(state_dir, workspace, body, words):
    assert _toml_error(state_dir, workspace, body) == f"{state_dir / 'openclaw-memory.toml'}: {words}"


def test_environment_overrides_stay_above_the_toml(state_dir, workspace):
    from openclaw_memory.index.config import index_config
    from openclaw_memory.index.store.server_config import server_config

    write(state_dir / "openclaw-memory.toml", '[index]\nembedding_backend = "torch"\nbackend = "qdrant"\nurl = "http://toml:6333"\n')
    env = {"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "hash", "OPENCLAW_MEMORY_QDRANT_URL": "http://env:6333"}
    s = resolve(state_dir, workspace=str(workspace), environ=env)
    assert s.index.embedding_backend == "torch" and index_config(s).embedding_backend == "hash"
    config = server_config(s, environ={})
    assert config is not None and config.url == "http://env:6333"
    # A wrong environment value is refused where it is used, as before; the toml's at once.
    wrong = resolve(state_dir, workspace=str(workspace), environ={"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "fast"})
    with pytest.raises(ConfigError, match="OPENCLAW_MEMORY_EMBEDDING_BACKEND must be auto, torch, onnx or hash, not 'fast'"):
        index_config(wrong)


def test_the_service_key_follows_the_meaning_of_the_toml(state_dir, workspace):
    from openclaw_memory.memory.protocol import settings_key

    def key(body: str) -> str:
        write(state_dir / "openclaw-memory.toml", body)
        return settings_key(resolve(state_dir, workspace=str(workspace)))

    plain = key("")
    assert key("[service]\ntimeout = 5\n") == key("[service]\ntimeout = 5.0\n") == plain  # the default, spelled out
    assert key("[service]\ntimeout = 2\n") != plain
    assert key("[watchdog]\nkeep = 3\n") != plain
    assert key("[index.server]\nretries = 1\n") != key("[index.server]\nretries = 2\n")
    assert key("[search]\nmmr = false\n") != plain  # set in the toml: above openclaw.json's


def test_every_command_stops_at_a_mistake_in_the_toml(cli, workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(state_dir / "openclaw-memory.toml", "[service]\nshard_idel = 3\n")  # read never used [service] before
    for args in (("read", "MEMORY.md"), ("files",)):
        res = cli(*args)
        assert res.returncode == 2 and "Traceback" not in res.stderr
        assert "[service] unknown key 'shard_idel' (did you mean 'shard_idle'?)" in res.stderr


@pytest.mark.parametrize("toml,said", [
    ("[index]\nchunk_tokens = 16\noverlap_tokens = 100\n", "[index] overlap_tokens must be at most half of chunk_tokens (8), not 100"),
    ('extra_paths = [{path = "x", pattern = "*.md", junk = 1}]\n', "extra_paths: unknown key 'junk'"),
    ("[service]\ntimeout = inf\n", "[service] timeout must be a positive number of seconds, not inf"),
    ('extra_paths = ["a\\u0000b"]\n', "extra_paths: the path 'a\\x00b' holds a NUL character, which no path can hold"),
    ('workspace = "a\\u0000b"\n', "workspace: the path 'a\\x00b' holds a NUL character"),
    ('[index.server]\napi_key_file = "k\\u0000"\n', "[index.server] api_key_file must be a path"),
])
def test_the_toml_is_checked_whole_when_read(cli, state_dir, toml, said):
    (state_dir / "openclaw-memory.toml").write_text(toml)
    refused = cli("files", "--json", env={"OPENCLAW_WORKSPACE": ""})  # the toml's workspace is the one used
    assert refused.returncode == 2 and said in refused.json()["error"], refused.stdout


@pytest.mark.parametrize(("body", "said"), [
    ('{"agents": {"defaults": {"workspace": "\\ud800"}}}', "agents.defaults.workspace: the path '\\ud800' holds a lone UTF-16 surrogate"),
    ('{"memory": {"search": {"extraPaths": ["\\ud800x"]}}}', "memory.search.extraPaths: the path '\\ud800x' holds a lone"),
    ('{"memory": {"search": {"extraPaths": [{"path": "a\\u0000"}]}}}', "memory.search.extraPaths: the path 'a\\x00' holds a NUL"),
    ("{agents: {list: [{id: 'main', memorySearch: {extraPaths: ['\\ud800']}}]}}", "agents.list[main].memorySearch.extraPaths: the path"),
])
def test_a_path_no_file_system_can_hold_in_openclaw_json_is_named(cli, state_dir, body, said):
    (state_dir / "openclaw.json").write_text(body)
    for args in (("files", "--json"), ("doctor", "--json")):
        refused = cli(*args, env={"OPENCLAW_WORKSPACE": ""})
        assert refused.returncode == 2 and said in refused.json()["error"], refused.stdout + refused.stderr


def test_openclaw_json_as_plain_json_with_a_bom_or_as_json5_reads_the_same(state_dir, workspace):
    data = {"agents": {"defaults": {"bootstrapMaxChars": 1234}}}
    for text in (json.dumps(data), "\ufeff" + json.dumps(data), "// a comment\n{agents: {defaults: {bootstrapMaxChars: 1234,},},}"):
        (state_dir / "openclaw.json").write_text(text, encoding="utf-8")
        assert resolve(state_dir, workspace=str(workspace)).prompt.file_chars == 1234
    (state_dir / "openclaw.json").unlink()
    write(state_dir / "openclaw-memory.toml", "\ufeff[prompt]\nfile_chars = 99\n")  # the BOM a Windows editor writes
    assert resolve(state_dir, workspace=str(workspace)).prompt.file_chars == 99


def test_a_state_dir_that_is_a_file_is_named_as_such(cli, tmp_path):
    plain = tmp_path / "not-a-folder"
    plain.write_text("")
    refused = cli("--state-dir", str(plain), "write", "MEMORY.md", "--append", "x", "--json")
    assert refused.returncode == 2 and refused.json()["error"].startswith(f"the state dir {plain} is not a folder")
    # A folder below that file: "Not a directory (PATH)", exit 1, naming no file on the way.
    for args in (("files",), ("read", "MEMORY.md")):
        refused = cli("--state-dir", str(plain / "sub"), *args, "--json")
        assert refused.returncode == 2 and refused.json()["error"] == (
            f"the state dir {plain / 'sub'} cannot be made: {plain} is a file, not a folder; give --state-dir a folder")


def test_a_current_folder_removed_under_the_shell_is_named(tmp_path, workspace):
    """A relative path in a folder removed under the shell: "error: No such file or directory" and
    nothing more (no path: getcwd failed)."""
    gone = tmp_path / "gone"
    gone.mkdir()
    write(workspace / "MEMORY.md", "# notes\n")
    done = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && exec "$2" -m openclaw_memory -w "$3" --state-dir st files',
                           "sh", str(gone), sys.executable, str(workspace)], capture_output=True, text=True,
                          env=env_for(workspace, tmp_path / "state"))
    assert done.returncode == 1 and done.stderr == (
        "error: the current folder no longer exists (removed while the shell was in it), so no relative path can be "
        "found from it: cd to a folder that exists, or give absolute paths\n"), done.stderr


def test_a_state_dir_through_a_symlink_or_dot_dot_is_the_same_state_dir(tmp_path, state_dir, workspace):
    """One service answers them all: its settings key names the state dir."""
    from openclaw_memory.memory.protocol import settings_key

    (tmp_path / "link").symlink_to(state_dir)
    plain = resolve(state_dir, workspace=str(workspace))
    for spelled in (tmp_path / "link", state_dir / ".." / state_dir.name, f"{state_dir}/"):
        other = resolve(spelled, workspace=str(workspace))
        assert other.state_dir == plain.state_dir and settings_key(other) == settings_key(plain)


def test_a_count_past_what_a_store_can_hold_means_no_limit(cli, workspace, state_dir):
    """2**63 overflowed SQLite (a traceback on the first read); a count that large is kept as 2**53."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(state_dir / "openclaw-memory.toml", "[history]\nkeep_per_path = 9223372036854775808\n"
                                              "[watchdog]\nkeep = 99999999999999999999\n")
    assert resolve(state_dir, workspace=str(workspace)).history.keep_per_path == 2**53
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "x"), ("history", "MEMORY.md"), ("watchdog", "snapshot")):
        done = cli(*args)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)


def test_a_state_dir_without_openclaw_json_names_the_usual_one(tmp_path, monkeypatch):
    """`--state-dir X` reads X/openclaw.json, as OPENCLAW_STATE_DIR does for OpenClaw: when there is
    none and ~/.openclaw/openclaw.json exists, the refusal says how to read that one."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    write(tmp_path / "home" / ".openclaw" / "openclaw.json", "{}")
    (tmp_path / "elsewhere").mkdir()
    usual = tmp_path / "home" / ".openclaw" / "openclaw.json"
    with pytest.raises(WorkspaceError, match=re.escape(f"which does not exist ({usual} is read with OPENCLAW_CONFIG_PATH={usual})")):
        resolve_settings(Overrides(state_dir=str(tmp_path / "elsewhere")), environ={})
    usual.unlink()  # the one OpenClaw reads where ~/.openclaw has no openclaw.json: its clawdbot.json
    write(tmp_path / "home" / ".openclaw" / "clawdbot.json", "{}")
    usual = tmp_path / "home" / ".openclaw" / "clawdbot.json"
    with pytest.raises(WorkspaceError, match=re.escape(f"which does not exist ({usual} is read with OPENCLAW_CONFIG_PATH={usual})")):
        resolve_settings(Overrides(state_dir=str(tmp_path / "elsewhere")), environ={})


def test_multimodal_from_openclaw_2026_9_6s_memory_search_the_agents_own_first(state_dir, workspace):
    """OpenClaw 2026.9.6 keeps it in `memory.search.multimodal` (top level, and an agent's own
    `memory.search`, which wins); only the older `memorySearch.multimodal` was read, so a current
    config's images and audio were never listed."""
    def multimodal(config: dict, agent: str = "main") -> bool:
        write(state_dir / "openclaw.json", json.dumps(config))
        return resolve(state_dir, workspace=str(workspace), agent=agent).multimodal

    on, off = {"multimodal": {"enabled": True}}, {"multimodal": {"enabled": False}}
    assert multimodal({"memory": {"search": on}})
    assert not multimodal({"memory": {"search": on}, "agents": {"entries": {"ops": {"memory": {"search": off}}}}}, "ops")
    assert multimodal({"memory": {"search": off}, "agents": {"entries": {"ops": {"memory": {"search": on}}}}}, "ops")
    # The current spelling before the older one at the same level; the agent's own before both shared ones.
    assert not multimodal({"memory": {"search": off}, "agents": {"defaults": {"memorySearch": on}}})
    assert multimodal({"memory": {"search": off}, "agents": {"entries": {"main": {"memorySearch": on}}}})
    assert not multimodal({})
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"multimodal": 5}}}))
    with pytest.raises(ConfigError, match=r"openclaw.json: memory.search.multimodal must be \{enabled: true\|false, modalities: \[\.\.\.\]\}, not 5"):
        resolve(state_dir, workspace=str(workspace))


def test_the_multimodal_environment_variable_takes_on_and_off_words_and_refuses_others(state_dir, workspace):
    """Any other word was taken as off without a word (OPENCLAW_MEMORY_MULTIMODAL=enabled: no images)."""
    write(state_dir / "openclaw-memory.toml", "multimodal = true\n")
    for word, meant in [("1", True), ("ON", True), (" yes ", True), ("0", False), ("off", False), ("False", False), ("", True)]:
        assert resolve(state_dir, workspace=str(workspace), environ={"OPENCLAW_MEMORY_MULTIMODAL": word}).multimodal is meant, word
    with pytest.raises(ConfigError, match="OPENCLAW_MEMORY_MULTIMODAL must be 1, true, yes or on .*not 'enabled'"):
        resolve(state_dir, workspace=str(workspace), environ={"OPENCLAW_MEMORY_MULTIMODAL": "enabled"})


def test_a_word_other_than_on_or_off_for_the_service_switch_is_refused(cli, workspace):
    """docs/configuration.md: OPENCLAW_MEMORY_SERVICE=off works in-process. Any other word than off
    went to the service without a word (=of, =disabled), as a wrong OPENCLAW_MEMORY_MULTIMODAL was off."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for word in ("off", "OFF", "0", "on", ""):
        assert cli("state", env={"OPENCLAW_MEMORY_SERVICE": word}).returncode == 0, word
    res = cli("state", "--json", env={"OPENCLAW_MEMORY_SERVICE": "of"})
    assert res.returncode == 2 and res.json() == {"error": "OPENCLAW_MEMORY_SERVICE must be 1, true, yes or on (or 0, false, no, off), not 'of'"}
    wrong = cli("files", env={"OPENCLAW_MEMORY_MULTIMODAL": "enabled"})
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: OPENCLAW_MEMORY_MULTIMODAL must be"), wrong.stderr


def test_the_openclaw_json_example_of_the_docs_gives_each_agent_its_workspace(tmp_path, state_dir, monkeypatch):
    """docs/configuration.md's openclaw.json, as a user copies it: with `ops` the only agent of its
    entries, ops owned agents.defaults.workspace (OpenClaw's rule) and main was sent to ~/agent/main,
    which did not exist; and it used the older agents.defaults.memorySearch OpenClaw 2026.9.6 reports as moved."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```json5\n(.*?)```", page, re.S)
    write(state_dir / "openclaw.json", example)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))  # an extra path's `~` is $HOME, the workspace's OPENCLAW_HOME
    for folder in ("agent", "ops-agent/runbooks", "shared-notes"):
        (home / folder).mkdir(parents=True)
    main, ops = (resolve_settings(Overrides(state_dir=str(state_dir), agent=agent), environ={"OPENCLAW_HOME": str(home)})
                 for agent in ("main", "ops"))
    assert (main.workspace, ops.workspace) == (home / "agent", home / "ops-agent")
    assert main.extra_paths == (str(home / "shared-notes"),)
    assert ops.extra_paths == (str(home / "shared-notes"), str(home / "ops-agent" / "runbooks"))
    assert not main.multimodal


def test_a_workspace_state_dir_or_agent_given_empty_is_refused_not_taken_as_not_given(cli, workspace, tmp_path):
    """`-w "$WS"` with WS unset: the empty flag was dropped, and the write went to $OPENCLAW_WORKSPACE
    (or OpenClaw's default workspace), another agent's memory; `--agent "$A"` wrote as main, `--session "$S"` with the command line's records."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for flags in (["-w", ""], ["--workspace= "], ["--state-dir", ""], ["--agent", ""], ["--session", ""], ["--qdrant-url", ""]):
        res = cli(*flags, "write", "memory/x.md", "--append", "- a note", "--json")
        assert res.returncode == 2 and "is empty; give one" in res.json()["error"], (flags, res.stdout, res.stderr)
    assert not (workspace / "memory").exists()
    with pytest.raises(UsageError, match="the workspace given with -w/--workspace is empty"):
        resolve_settings(Overrides(workspace=""), environ={"OPENCLAW_WORKSPACE": str(workspace)})


def test_an_extra_path_given_empty_is_refused_as_every_empty_flag_is(cli, workspace):
    """`--extra "$NOTES"` with NOTES unset was dropped without a word (the notes missing from files
    and search, nothing said), where every other settings flag given empty is refused."""
    (workspace / "notes").mkdir()
    for flags in (["--extra", ""], ["--extra= "], ["--extra", "notes", "--extra", ""]):
        res = cli(*flags, "files", "--json")
        assert res.returncode == 2, (flags, res.stdout, res.stderr)
        assert res.json()["error"] == "the extra path given with --extra is empty; give one (an empty value adds no path)"
    assert cli("--extra", "notes", "files").returncode == 0


def test_a_configured_workspace_of_white_space_alone_is_not_set_never_the_current_folder(cli, state_dir, tmp_path):
    """OpenClaw trims agents.defaults.workspace and an agent's workspace, and a blank one is not set
    (resolveAgentWorkspaceDir); here one of white space alone (the toml's too) was taken, and named
    the current folder: `files` listed it, a write from any folder went there."""
    here = tmp_path / "some-folder"
    write(here / "MEMORY.md", "# not the agent's\n")
    for openclaw, toml in (({"agents": {"defaults": {"workspace": "  "}}}, ""),
                           ({"agents": {"entries": {"main": {"workspace": "\t"}}}}, ""),
                           ({"agents": {"defaults": {"workspace": "\ufeff"}}}, ""),  # JavaScript's trim takes it
                           ({}, 'workspace = " "\n')):
        write(state_dir / "openclaw.json", json.dumps(openclaw))
        write(state_dir / "openclaw-memory.toml", toml)
        res = cli("files", "--json", env={"OPENCLAW_WORKSPACE": ""}, cwd=here)
        assert res.returncode == 2, (openclaw, toml, res.stdout)
        assert res.json()["error"].startswith(f"workspace not found: {state_dir / 'workspace'} (OpenClaw's default"), res.stdout


def test_a_workspace_or_state_dir_longer_than_the_system_allows_is_one_short_line(cli):
    """`-w "$NOTE"` holding 100,000 characters by mistake echoed them all back; the same as
    --state-dir was an OSError worded at exit 1, the whole path echoed too."""
    for flag in ("-w", "--state-dir"):
        res = cli(flag, "a" * 100_000, "files", "--json")
        assert res.returncode == 2 and len(res.stderr) < 300, (flag, res.returncode, res.stderr[:300])
        assert "path is longer than the system allows" in res.json()["error"], res.stdout[:300]
    for flag in ("-w", "--state-dir"):  # a path within the limit holding one name past 255 bytes
        res = cli(flag, "/tmp/" + "a" * 4_085, "files", "--json")
        assert res.returncode == 2 and len(res.stderr) < 300, (flag, res.returncode, res.stderr[:300])
        assert "holds a name longer than the system allows (4,085 bytes; at most 255)" in res.json()["error"], res.stdout[:300]


def test_an_extra_path_longer_than_the_system_allows_is_one_short_line_from_every_source(cli, state_dir):
    """`--extra "$NOTE"` of 120,000 characters gave a warning and a `skipped:` line each echoing it
    whole, exit 0 (and `status` failed, exit 1), while the same -w was refused in one short line: every
    source is refused so now, naming it (OpenClaw's own listing fails on such a config: ENAMETOOLONG)."""
    big = "b" * 120_000
    sources = [
        ({}, ("--extra", big), "the extra path given with --extra"),
        ({"OPENCLAW_MEMORY_EXTRA_PATHS": big}, (), "the extra path from OPENCLAW_MEMORY_EXTRA_PATHS"),
        ({}, ("--extra", "c" * 300), "the extra path given with --extra holds a name longer than the system allows "
                                     "(300 bytes; at most 255)"),
        ({}, ("--extra", "n/" * 2040), "the extra path given with --extra is longer"),  # 4,080 bytes: past it under the workspace
    ]
    for env, flags, said in sources:
        for command in (("files",), ("status",), ("doctor",)):
            res = cli(*flags, *command, "--json", env=env)
            lines = (res.stdout + res.stderr).splitlines()
            assert res.returncode == 2 and len(lines) <= 2 and max(map(len, lines)) < 300, (said, command, res.stdout[:300])
            assert res.json()["error"].startswith(said), res.stdout[:300]
    configs = [("openclaw.json", json.dumps({"memory": {"search": {"extraPaths": ["ok", {"path": big}]}}}),
                "openclaw.json: memory.search.extraPaths: the extra path is longer than the system allows (1"),
               ("openclaw-memory.toml", f'extra_paths = ["{big}"]\n', "openclaw-memory.toml: extra_paths: the extra path")]
    for name, text, said in configs:
        write(state_dir / name, text)
        for command in (("files",), ("status",), ("doctor",)):
            res = cli(*command, "--json")
            lines = (res.stdout + res.stderr).splitlines()
            assert res.returncode == 2 and len(lines) <= 2 and max(map(len, lines)) < 400, (name, command, res.stdout[:300])
            assert f"{state_dir / said}" in res.json()["error"], res.stdout[:300]
        (state_dir / name).unlink()
    assert cli("--extra", "c" * 255, "files").returncode == 0  # the longest name there may be: missing, not refused


def test_a_long_state_dir_leaves_the_state_database_a_path_sqlite_opens(tmp_path, cli):
    """SQLite opens no file whose path passes 504 bytes: a state dir of ~300 bytes and a workspace
    named with 250 characters (its data dir named after it), or a state dir of ~450, made every
    write fail "unable to open database file (is the state dir writable?)" while doctor found nothing.
    The data dir's name is cut to fit (the rebuild's scratch database too); a state dir past any fit
    is one line naming the limit."""
    from openclaw_memory.settings import Overrides, resolve_settings

    deep = tmp_path / "s"
    while len(os.fsencode(deep)) < 300:
        deep = deep / "agent-state-folder"
    deep.mkdir(parents=True)
    workspace = tmp_path / ("w" * 250)
    write(workspace / "MEMORY.md", "# notes\n")
    run = {"OPENCLAW_WORKSPACE": str(workspace), "OPENCLAW_STATE_DIR": str(deep)}
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "- more"), ("doctor", "--fix")):
        done = cli(*args, env=run)
        assert done.returncode == 0, (args, done.stderr)
    data_dir = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(deep))).data_dir
    assert len(os.fsencode(data_dir / ".rebuild-4194304-0123abcd" / "new" / "state.db")) <= 504
    assert len(cli("history", "MEMORY.md", "--json", env=run).json()["versions"]) == 2
    # A data dir named before the cut (it worked: its state.db's path fit) keeps its name and history.
    middle = tmp_path / "m" / ("s" * 150)
    named = Path(str(resolve_settings(Overrides(workspace=str(workspace), state_dir=str(middle))).data_dir))
    assert len(os.fsencode(named.name)) < 255  # cut: a new one leaves a rebuild room
    old = named.parent / f"{'w' * 242}-{named.name.rsplit('-', 1)[1]}"
    old.mkdir(parents=True)  # what a write that failed there left (a lock, no database): not kept
    assert resolve_settings(Overrides(workspace=str(workspace), state_dir=str(middle))).data_dir == named
    (old / "state.db").write_bytes(b"")
    assert resolve_settings(Overrides(workspace=str(workspace), state_dir=str(middle))).data_dir == old
    while len(os.fsencode(deep)) < 440:
        deep = deep / "agent-state-folder"
    deep.mkdir(parents=True)
    refused = cli("--state-dir", str(deep), "files", "--json")
    assert refused.returncode == 2 and "the state dir path is too long for the state database" in refused.json()["error"]


def test_a_name_that_is_not_utf8_is_measured_in_its_own_bytes(tmp_path, cli):
    """A byte of a name that is not UTF-8 comes from argv surrogate-escaped; counted in the UTF-8 of
    its escape (three bytes each), a folder of 100 such bytes was refused as 300 (e18d8e5)."""
    state = os.fsdecode(os.fsencode(str(tmp_path)) + b"/" + b"\xe9" * 100)
    res = cli("--state-dir", state, "files", "--json")
    assert "longer than the system allows" not in res.stdout + res.stderr, res.stdout[:300]
    res = cli("--state-dir", os.fsdecode(os.fsencode(str(tmp_path)) + b"/" + b"\xe9" * 256), "files", "--json")
    assert "holds a name longer than the system allows (256 bytes; at most 255)" in res.json()["error"], res.stdout[:300]


# OpenClaw 2026.9.6's answer for this config (its startup migration, then resolveMemorySearchConfig for
# agent ops; tests/conformance/test_openclaw_settings.py asks it again): the older spellings fill only
# what memory.search lacks, key by key; multimodal's keys are each the agent's own before the shared one.
LEGACY_AND_CURRENT = {
    "memorySearch": {"extraPaths": ["top"], "maxResults": 3},
    "agents": {"defaults": {"memorySearch": {"extraPaths": ["legacy"], "multimodal": {"enabled": True}}},
               "entries": {"ops": {"memorySearch": {"extraPaths": ["own"], "multimodal": {"modalities": ["image"]}}}}},
    "memory": {"search": {"extraPaths": ["cur"]}},
}


def test_older_memory_search_spellings_fill_only_what_memory_search_lacks(state_dir, workspace):
    """All four spellings' extra paths were added up (OpenClaw reads `legacy` nowhere: memory.search has
    extraPaths), the top-level memorySearch was never read, and an agent's multimodal without `enabled`
    turned off the shared `enabled: true` (and its `modalities` were not read: audio was listed too)."""
    write(state_dir / "openclaw.json", json.dumps(LEGACY_AND_CURRENT))
    s = resolve(state_dir, workspace=str(workspace), agent="ops")
    assert s.extra_paths == (str(workspace / "cur"), str(workspace / "own"))
    assert (s.multimodal, s.modalities, s.max_results) == (True, ("image",), 3)
    main = resolve(state_dir, workspace=str(workspace), agent="main")  # (ops, the only agent, is the default)
    assert main.extra_paths == (str(workspace / "cur"),)
    assert (main.multimodal, main.modalities, main.max_results) == (True, ("image", "audio"), 3)
    # Without memory.search, the older ones are read: agents.defaults.memorySearch before the top-level one.
    write(state_dir / "openclaw.json", json.dumps({"memorySearch": {"extraPaths": ["top"], "query": {"maxResults": 4}},
                                                   "agents": {"defaults": {"memorySearch": {"maxResults": 5}}}}))
    s = resolve(state_dir, workspace=str(workspace))
    assert (s.extra_paths, s.max_results) == ((str(workspace / "top"),), 4)


def test_a_bare_multimodal_boolean_holds_no_key_as_openclaw_reads_it(state_dir, workspace):
    """`memory.search.multimodal: true` was read as `{enabled: true}`: images and audio of the extra
    paths listed as memory where OpenClaw 2026.9.6 lists none (`true.enabled` is undefined to it; its
    schema refuses the form). Kept by its migration, it also hides an older spelling of its level; the
    other level decides (asked of OpenClaw: tests/conformance/test_openclaw_settings.py)."""
    on = {"enabled": True}
    for config, agent, expected in (
            ({"memory": {"search": {"multimodal": True}}}, "main", False),
            ({"memory": {"search": {"multimodal": True}}, "agents": {"defaults": {"memorySearch": {"multimodal": on}}}}, "main", False),
            ({"memory": {"search": {"multimodal": on}}, "agents": {"entries": {"ops": {"memory": {"search": {"multimodal": False}}}}}},
             "ops", True)):
        write(state_dir / "openclaw.json", json.dumps(config))
        assert resolve(state_dir, workspace=str(workspace), agent=agent).multimodal is expected, config


def test_doctor_warns_of_a_bare_multimodal_boolean(cli, state_dir, workspace):
    write(workspace / "MEMORY.md", "# M\n")
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"multimodal": True}},
                                                   "agents": {"entries": {"ops": {"memorySearch": {"multimodal": False}}}}}))
    found = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "multimodal-not-an-object"]
    assert len(found) == 1 and found[0]["severity"] == "warning"
    assert "memory.search.multimodal: true; agents.entries.ops.memorySearch.multimodal: false" in found[0]["message"]
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"multimodal": {"enabled": True}}}}))
    assert not [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "multimodal-not-an-object"]
    # Only where settings read (the agents as they list them): not agents.defaults.memory.search, nor
    # agents.list beside agents.entries; an entry of the list is named by its id, as settings name it.
    write(state_dir / "openclaw.json", json.dumps({"agents": {
        "defaults": {"memory": {"search": {"multimodal": True}}},
        "entries": {"ops": {}}, "list": [{"id": "old", "memorySearch": {"multimodal": True}}]}}))
    assert not [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "multimodal-not-an-object"]
    # Another agent's entry that is not well formed (settings never read it for this agent) hides nothing.
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"multimodal": True}},
                                                   "agents": {"entries": {"other": {"memory": "x"}}}}))
    found = [f for f in cli("--agent", "main", "doctor", "--json").json()["findings"] if f["id"] == "multimodal-not-an-object"]
    assert len(found) == 1 and "memory.search.multimodal: true" in found[0]["message"], found
    write(state_dir / "openclaw.json", json.dumps({"agents": {"list": [{"id": "old", "memorySearch": {"multimodal": True}}]}}))
    found = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "multimodal-not-an-object"]
    assert len(found) == 1 and "agents.list[old].memorySearch.multimodal: true" in found[0]["message"], found


def test_multimodal_modalities_limit_which_media_files_are_listed(cli, workspace, state_dir, tmp_path):
    """memory.search.multimodal.modalities ["image"]: OpenClaw lists the images of an extra path, not
    its audio; both were listed. No kind left (`[]`) is multimodal off, as OpenClaw has it."""
    media = tmp_path / "media"
    for name in ("a.png", "b.mp3", "c.md"):
        write(media / name, "x")
    write(workspace / "MEMORY.md", "# M\n")
    listed = {}
    for kinds in (["image"], ["audio"], ["all"], ["image", "audio"], []):
        write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {
            "extraPaths": [str(media)], "multimodal": {"enabled": True, "modalities": kinds}}}}))
        res = cli("files", "--json")
        assert res.returncode == 0, res.stderr
        listed[str(kinds)] = [f["path"] for f in res.json()["files"] if f["path"] != "MEMORY.md"]
    assert listed == {"['image']": ["../media/a.png", "../media/c.md"], "['audio']": ["../media/b.mp3", "../media/c.md"],
                      "['all']": ["../media/a.png", "../media/b.mp3", "../media/c.md"],
                      "['image', 'audio']": ["../media/a.png", "../media/b.mp3", "../media/c.md"], "[]": ["../media/c.md"]}
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"multimodal": {"enabled": True, "modalities": ["video"]}}}}))
    wrong = cli("files")
    assert wrong.returncode == 2 and wrong.stderr.strip().endswith(
        "openclaw.json: memory.search.multimodal.modalities must be a list of \"image\", \"audio\" or \"all\", not [\"video\"]"), wrong.stderr


def test_a_search_gives_openclaw_json_max_results_when_no_limit_is_asked(cli, workspace, state_dir):
    """memory.search.query.maxResults (an agent's own first) is how many results OpenClaw's memory_search
    gives when none is asked for; it was not read: always 6."""
    for i in range(9):
        write(workspace / "memory" / f"2026-01-0{i + 1}.md", f"# Day {i}\n\nThe heron came to the pond again ({i}).\n")
    assert cli("index").returncode == 0

    def found(config: dict, *args: str) -> int:
        write(state_dir / "openclaw.json", json.dumps(config))
        res = cli("search", "heron pond", "--mode", "text", "--json", *args)
        assert res.returncode == 0, res.stderr
        return len(res.json()["results"])

    assert found({}) == 6
    assert found({"memory": {"search": {"query": {"maxResults": 2}}}}) == 2
    assert found({"memory": {"search": {"query": {"maxResults": 2}}}}, "--limit", "4") == 4
    assert found({"memory": {"search": {"query": {"maxResults": 2}}},
                  "agents": {"entries": {"main": {"memory": {"search": {"query": {"maxResults": 8}}}}}}}) == 8
    from openclaw_memory.index.api import MemoryIndex  # the library's own index, as its docs show it

    with MemoryIndex(settings_for(workspace, state_dir)) as index:
        assert len(index.search("heron pond", mode="text").results) == 8
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"query": {"maxResults": 0}}}}))
    wrong = cli("search", "heron", "--mode", "text")
    assert wrong.returncode == 2 and wrong.stderr.strip().endswith(
        "openclaw.json: memory.search.query.maxResults must be a whole number of at least 1, not 0"), wrong.stderr


def test_a_clawdbot_state_dir_and_config_are_read_as_openclaw_reads_them(tmp_path, monkeypatch):
    """OpenClaw 2026.9.6 still reads the state dir ~/.clawdbot where there is no ~/.openclaw, and a
    config named clawdbot.json (tests/conformance/test_openclaw_settings.py asks its `config file`);
    neither was read: such a user's agents.defaults.workspace was not found, nor any of its settings.
    The workspaces are what its resolveAgentWorkspaceDir answers: the owner's stays ~/.openclaw/workspace."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    legacy = home / ".clawdbot"
    (tmp_path / "ws").mkdir()
    write(legacy / "clawdbot.json", json.dumps({"agents": {"defaults": {"workspace": str(tmp_path / "ws")}}}))
    s = resolve_settings(Overrides(), environ={})
    assert (s.state_dir, s.config_file, s.workspace) == (legacy, legacy / "clawdbot.json", tmp_path / "ws")
    (home / ".openclaw").mkdir()  # a ~/.openclaw without a config: the state dir, and the old config still read
    s = resolve_settings(Overrides(), environ={})
    assert (s.state_dir, s.config_file, s.workspace) == (home / ".openclaw", legacy / "clawdbot.json", tmp_path / "ws")
    write(home / ".openclaw" / "clawdbot.json", "{}")
    assert resolve_settings(Overrides(workspace=str(tmp_path / "ws")), environ={}).config_file == home / ".openclaw" / "clawdbot.json"
    # A state dir given reads its own file only.
    given = tmp_path / "given"
    given.mkdir()
    s = resolve_settings(Overrides(workspace=str(tmp_path / "ws")), environ={"OPENCLAW_STATE_DIR": str(given)})
    assert s.config_file == given / "openclaw.json"
    (home / ".openclaw" / "clawdbot.json").unlink()
    (home / ".openclaw").rmdir()
    legacy.joinpath("clawdbot.json").unlink()
    (legacy / "workspace-ops").mkdir()
    assert resolve_settings(Overrides(agent="ops"), environ={}).workspace == legacy / "workspace-ops"
    with pytest.raises(WorkspaceError, match=re.escape(f"workspace not found: {home / '.openclaw' / 'workspace'} ")):
        resolve_settings(Overrides(), environ={})


def test_openclaw_path_variables_holding_only_white_space_are_unset(tmp_path, monkeypatch):
    """OpenClaw trims its variables (`env.OPENCLAW_STATE_DIR?.trim()`): " " is unset. Here " " was a
    path, trimmed to nothing: the current folder was the state dir or the workspace."""
    home, here = tmp_path / "home", tmp_path / "here"
    (home / ".openclaw" / "workspace").mkdir(parents=True)
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    for name in ("OPENCLAW_STATE_DIR", "OPENCLAW_WORKSPACE_DIR", "OPENCLAW_WORKSPACE", "OPENCLAW_CONFIG_PATH", "OPENCLAW_PROFILE"):
        s = resolve_settings(Overrides(), environ={name: " \t"})
        assert (s.state_dir, s.workspace, s.config_file) == (
            home / ".openclaw", home / ".openclaw" / "workspace", home / ".openclaw" / "openclaw.json"), name


def test_dot_dot_after_a_symbolic_link_in_a_configured_path_is_folded_as_text(tmp_path, monkeypatch):
    """OpenClaw resolves `link/../ws` as text (node's path.resolve): the `ws` beside `link`. It was
    resolved through the link, to the `ws` beside the link's target: another folder's memory, or
    "workspace not found" and a `mkdir -p` making that other folder (`x/../ws` with no `x` too)."""
    home = tmp_path / "home"
    for folder in ("ws", "state", "elsewhere/deep", "elsewhere/ws", "elsewhere/state", ".openclaw"):
        (home / folder).mkdir(parents=True)
    (home / "link").symlink_to(home / "elsewhere" / "deep")
    monkeypatch.setenv("HOME", str(home))
    config = home / ".openclaw" / "openclaw.json"
    for spelled in (f"{home}/link/../ws", f"{home}/x/../ws", f"{home}/link/./../ws/"):
        write(config, json.dumps({"agents": {"defaults": {"workspace": spelled}}}))
        assert resolve_settings(Overrides(), environ={}).workspace == home / "ws", spelled
    write(config, "{}")
    assert resolve_settings(Overrides(), environ={"OPENCLAW_WORKSPACE_DIR": f"{home}/link/../ws"}).workspace == home / "ws"
    (home / "state" / "workspace").mkdir()
    s = resolve_settings(Overrides(), environ={"OPENCLAW_STATE_DIR": f"{home}/link/../state"})
    assert (s.state_dir, s.workspace) == (home / "state", home / "state" / "workspace")
    s = resolve_settings(Overrides(state_dir=f"{home}/link/../state"), environ={})
    assert s.state_dir == home / "state"
    (home / "ws2").symlink_to(home / "ws")  # a link to the folder itself is still followed (its real path)
    write(config, json.dumps({"agents": {"defaults": {"workspace": f"{home}/ws2/../ws2"}}}))
    assert resolve_settings(Overrides(), environ={}).workspace == home / "ws"


def test_openclaw_json_env_vars_name_the_workspace_state_dir_and_home_as_in_openclaw(tmp_path, monkeypatch):
    """OpenClaw's loadConfig adds `env.vars` to its own environment (a variable set, not only white
    space, keeps its value) before it resolves a path: OPENCLAW_WORKSPACE_DIR, OPENCLAW_STATE_DIR and
    OPENCLAW_HOME there were used only for `${NAME}`, so the memory was looked for in the old default
    workspace (and agent ops's in ~/.openclaw/workspace-ops, not <state dir>/workspace-ops)."""
    home = tmp_path / "home"
    for folder in (".openclaw/workspace", "ws", "proc-ws", "sd2/workspace-ops", "alt/ws"):
        (home / folder).mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    config = home / ".openclaw" / "openclaw.json"

    def settings(vars_: dict, environ: dict | None = None, agent: str = "main", **more):
        write(config, json.dumps({"env": {"vars": vars_}, **more}))
        return resolve_settings(Overrides(agent=agent), environ=environ or {})

    s = settings({"OPENCLAW_WORKSPACE_DIR": str(home / "ws")})
    assert s.workspace == home / "ws"
    assert settings({" OPENCLAW_WORKSPACE_DIR ": f"  {home}/ws "}).workspace == home / "ws"  # name and value trimmed
    assert settings({"OPENCLAW_WORKSPACE_DIR": str(home / "ws")},
                    {"OPENCLAW_WORKSPACE_DIR": str(home / "proc-ws")}).workspace == home / "proc-ws"  # the process's wins
    assert settings({"OPENCLAW_WORKSPACE_DIR": str(home / "ws")}, {"OPENCLAW_WORKSPACE_DIR": " "}).workspace == home / "ws"
    write(home / ".openclaw" / ".env", f"OPENCLAW_WORKSPACE_DIR={home}/proc-ws\n")  # a .env file's too
    assert settings({"OPENCLAW_WORKSPACE_DIR": str(home / "ws")}).workspace == home / "proc-ws"
    (home / ".openclaw" / ".env").unlink()
    for skipped in ({"OPENCLAW_WORKSPACE_DIR": " "}, {"X": str(home), "OPENCLAW_WORKSPACE_DIR": "${X}/ws"}):
        assert settings(skipped).workspace == home / ".openclaw" / "workspace", skipped  # blank, or holding ${...}
    with pytest.raises(WorkspaceError, match=re.escape(f"(from OPENCLAW_WORKSPACE_DIR in {config}: env.vars)")):
        settings({"OPENCLAW_WORKSPACE_DIR": str(home / "nowhere")})  # where it was set is said

    ops = {"agents": {"ownership": "explicit", "entries": {"main": {}, "ops": {}}}}
    s = settings({"OPENCLAW_STATE_DIR": str(home / "sd2")}, agent="ops", **ops)
    assert (s.state_dir, s.workspace, s.config_file) == (home / "sd2", home / "sd2" / "workspace-ops", config)
    s = settings({"OPENCLAW_HOME": str(home / "alt")}, agents={"defaults": {"workspace": "~/ws"}})
    assert s.workspace == home / "alt" / "ws"
    # Names OpenClaw refuses from a config: HOME (node's os.homedir() is read before), OPENCLAW_INCLUDE_ROOTS.
    assert settings({"HOME": str(home / "alt")}, agents={"defaults": {"workspace": "~/ws"}}).workspace == home / "ws"
    outside = tmp_path / "shared"
    write(outside / "agents.json", json.dumps({"defaults": {"workspace": str(home / "ws")}}))
    (home / ".openclaw" / "agents.json").symlink_to(outside / "agents.json")
    write(config, json.dumps({"env": {"vars": {"OPENCLAW_INCLUDE_ROOTS": str(outside)}}, "agents": {"$include": "agents.json"}}))
    with pytest.raises(ConfigError, match="outside the folder of openclaw.json"):
        resolve_settings(Overrides(), environ={})


def test_a_value_from_openclaw_json_env_vars_is_said_to_come_from_there(tmp_path, monkeypatch):
    """A message about a value openclaw.json's env.vars gave names the file: the shell has no such
    variable to look at. OPENCLAW_MEMORY_EMBEDDING_BACKEND there was refused as if the shell set it,
    and an OPENCLAW_HOME there naming a file gave "cannot open workspace .../afile/.openclaw/workspace:
    Not a directory" (or "give --state-dir a folder"), naming neither the variable nor the file."""
    from openclaw_memory.errors import StateDirError
    from openclaw_memory.index.config import index_config

    home = tmp_path / "home"
    (home / ".openclaw" / "workspace").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    config = home / ".openclaw" / "openclaw.json"
    write(config, json.dumps({"env": {"vars": {"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "bogus"}}}))
    with pytest.raises(ConfigError) as caught:
        index_config(resolve_settings(Overrides(), environ={}))
    assert caught.value.message == (f"OPENCLAW_MEMORY_EMBEDDING_BACKEND (set in {config}: env.vars) must be auto, torch, "
                                    "onnx or hash, not 'bogus'")
    with pytest.raises(ConfigError) as caught:  # the shell's: as before
        index_config(resolve_settings(Overrides(), environ={"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "fast"}))
    assert caught.value.message == "OPENCLAW_MEMORY_EMBEDDING_BACKEND must be auto, torch, onnx or hash, not 'fast'"

    afile = home / "afile"
    write(afile, "")
    write(config, json.dumps({"env": {"vars": {"OPENCLAW_HOME": str(afile)}}}))
    said = f"(OpenClaw's home {afile} is from OPENCLAW_HOME in {config}: env.vars)"
    with pytest.raises(StateDirError) as caught:
        resolve_settings(Overrides(), environ={})
    assert caught.value.message == (f"the state dir {afile / '.openclaw'} {said} cannot be made: {afile} is a file, not a "
                                    "folder; give --state-dir or OPENCLAW_STATE_DIR a folder")
    with pytest.raises(StateDirError) as caught:  # with a workspace given, the state dir still holds the data
        resolve_settings(Overrides(workspace=str(home)), environ={})
    assert said in caught.value.message
    (home / "alt").mkdir()
    write(config, json.dumps({"env": {"vars": {"OPENCLAW_HOME": str(home / "alt")}}}))
    with pytest.raises(WorkspaceError) as caught:  # OpenClaw's default workspace, placed by that home
        resolve_settings(Overrides(), environ={})
    assert f"; OpenClaw's home {home / 'alt'} is from OPENCLAW_HOME in {config}: env.vars)" in caught.value.message


# -- the agent with no --agent: OpenClaw's default agent ---------------------------------------------

# Each config, and the agent a command given no --agent acts for: OpenClaw 2026.9.6's resolveDefaultAgentId
# (its `memory search` without --agent) on the config as read (the agents.list form as its doctor --fix moves
# it), checked in tests/conformance/test_default_agent.py; None where OpenClaw refuses to guess and so does
# this product; "main" where OpenClaw refuses but main is one of the agents (a deliberate difference).
DEFAULT_AGENTS = [
    ("marked", {"agents": {"entries": {"main": {}, "ops": {"default": True}}}}, "ops"),
    ("marked, its key in capitals", {"agents": {"entries": {"main": {}, "OPS": {"default": True}}}}, "ops"),
    ("the only one", {"agents": {"entries": {"ops": {}}}}, "ops"),
    ("none configured", {}, "main"),
    ("an empty list", {"agents": {"list": []}}, "main"),
    ("two marked, main one of them", {"agents": {"entries": {"ops": {"default": True}, "main": {"default": True}}}}, "main"),
    ("two marked", {"agents": {"entries": {"ops": {"default": True}, "dev": {"default": True}}}}, None),
    ("explicit ownership: the marker counts for nothing",
     {"agents": {"ownership": "explicit", "entries": {"ops": {"default": True}, "dev": {}}}}, None),
    ("explicit ownership, the only one", {"agents": {"ownership": "explicit", "entries": {"ops": {}}}}, "ops"),
    ("several, none marked", {"agents": {"entries": {"ops": {}, "dev": {}}}}, None),
    ("several, none marked, main one of them", {"agents": {"entries": {"ops": {}, "main": {}}}}, "main"),
    ("a list of one", {"agents": {"list": [{"id": "ops"}]}}, "ops"),
    ("a list of several: doctor --fix drops the marker", {"agents": {"list": [{"id": "dev"}, {"id": "ops", "default": True}]}}, None),
    ("a list of several, main one of them", {"agents": {"list": [{"id": "ops", "default": True}, {"id": "main"}]}}, "main"),
]


@pytest.mark.parametrize("name, config, expected", DEFAULT_AGENTS, ids=[c[0] for c in DEFAULT_AGENTS])
def test_with_no_agent_given_the_agent_is_openclaws_default(state_dir, workspace, name, config, expected):
    """Every command acted as main with no --agent, while OpenClaw's own `memory search` acts for its
    default agent: with ops marked `default: true` (or the only agent), a search went to main's
    workspace-main, not found, or to main's index beside ops' memory."""
    write(state_dir / "openclaw.json", json.dumps(config))
    if expected is None:
        with pytest.raises(UsageError) as refused:
            resolve(state_dir, workspace=str(workspace))
        assert "configures several agents" in refused.value.message and "give --agent <id>" in refused.value.message
        assert "\n" not in refused.value.message
    else:
        assert resolve(state_dir, workspace=str(workspace)).agent == expected
    assert resolve(state_dir, workspace=str(workspace), agent="Main").agent == "main"  # --agent still chooses


def test_a_command_with_no_agent_acts_for_openclaws_default_agent(cli, state_dir, workspace, tmp_path):
    """The finding: `search` with ops marked default searched main (workspace-main not found); the CLI,
    `mcp` and the Python API take the default agent alike, -w with no agents configured is main's."""
    ops = tmp_path / "opsws"
    write(ops / "MEMORY.md", "# Ops\n\nThe deploy key rotates on Fridays.\n")
    write(workspace / "MEMORY.md", "# Main\n\nNothing here.\n")
    assert cli("status", "--json").json()["agent"] == "main"  # nothing configured: main, -w's workspace
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {"ops": {"default": True, "workspace": str(ops)}}}}))
    env = {"OPENCLAW_WORKSPACE": ""}  # (the fixture names a workspace; here openclaw.json does)
    found = cli("search", "deploy key", "--json", env=env).json()
    assert [(r["path"], r["source"]) for r in found["results"]][:1] == [("MEMORY.md", "memory-root-ops")], found
    assert cli("status", "--json", env=env).json()["agent"] == "ops"
    assert resolve_settings(Overrides(), environ=env_for(workspace, state_dir, OPENCLAW_WORKSPACE="")).agent == "ops"
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    mcp = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], input=json.dumps(hello) + "\n",
                         capture_output=True, text=True, env=env_for(workspace, state_dir, OPENCLAW_WORKSPACE=""),
                         cwd=workspace, timeout=60)
    assert f"Memory of agent 'ops' in workspace {ops}" in json.loads(mcp.stdout.splitlines()[0])["result"]["instructions"]
    # Several agents, none the default and main not one of them: refused in one line, as OpenClaw refuses.
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {"ops": {"workspace": str(ops)}, "dev": {}}}}))
    refused = cli("search", "deploy key", env=env)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "configures several agents (ops, dev)" in refused.stderr and "give --agent <id>" in refused.stderr
    assert cli("--agent", "ops", "search", "deploy key", "--json", env=env).json()["results"]
