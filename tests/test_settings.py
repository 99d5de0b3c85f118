"""Settings precedence: flags > environment > config files > defaults; extra paths add up."""

from __future__ import annotations

import os

import pytest

from conftest import write
from openclaw_memory.errors import ConfigError, WorkspaceError
from openclaw_memory.settings import Overrides, resolve_settings


def resolve(state_dir, environ=None, cwd=None, **kw):
    return resolve_settings(Overrides(state_dir=str(state_dir), **kw), environ=environ or {}, cwd=cwd)


def test_workspace_precedence(tmp_path, state_dir):
    a, b, c, d = (tmp_path / n for n in "abcd")
    for p in (a, b, c, d):
        p.mkdir()
    write(state_dir / "openclaw.json", f'{{agents: {{defaults: {{workspace: "{c}"}}, // comment\n}}}}')
    assert resolve_settings(Overrides(state_dir=str(state_dir)), environ={}, cwd=str(d)).workspace == c
    env = {"OPENCLAW_WORKSPACE": str(b)}
    assert resolve_settings(Overrides(state_dir=str(state_dir)), environ=env).workspace == b
    assert resolve_settings(Overrides(state_dir=str(state_dir), workspace=str(a)), environ=env).workspace == a
    assert resolve_settings(Overrides(state_dir=str(state_dir)), environ={"OPENCLAW_WORKSPACE": ""}, cwd=str(d)).workspace == c


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


def test_toml_limits(tmp_path, state_dir):
    write(state_dir / "openclaw-memory.toml", "[read]\ndefault_lines = 10\nmax_chars = 500\n[prompt]\nfile_chars = 100\n")
    s = resolve(state_dir, cwd=str(tmp_path))
    assert (s.read.default_lines, s.read.max_chars, s.prompt.file_chars, s.prompt.total_chars) == (10, 500, 100, 60_000)


def test_malformed_files_name_file_and_line(tmp_path, state_dir):
    write(state_dir / "openclaw.json", "{\n  agents: {\n    defaults: { workspace: 1 }\n    list: []\n}\n")
    with pytest.raises(ConfigError, match=r"openclaw\.json.*line 4"):
        resolve(state_dir, cwd=str(tmp_path))
    os.unlink(state_dir / "openclaw.json")
    write(state_dir / "openclaw-memory.toml", "[read]\nmax_chars = \n")
    with pytest.raises(ConfigError, match=r"openclaw-memory\.toml.*line 2"):
        resolve(state_dir, cwd=str(tmp_path))


def test_workspace_errors(tmp_path, state_dir):
    with pytest.raises(WorkspaceError, match="not found"):
        resolve(state_dir, workspace=str(tmp_path / "missing"))
    f = write(tmp_path / "file.md", "x")
    with pytest.raises(WorkspaceError, match="not a folder"):
        resolve(state_dir, workspace=str(f))


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


def test_openclaw_limits_per_agent_and_toml_above_them(state_dir, workspace):
    write(state_dir / "openclaw.json", """{agents: {
        defaults: {bootstrapMaxChars: 15000.9, bootstrapTotalMaxChars: -5, contextLimits: {memoryGetMaxChars: 900},
                   userTimezone: " Europe/Paris ",
                   startupContext: {enabled: false, applyOn: ["reset", 3], dailyMemoryDays: 40, maxFileBytes: 0,
                                    maxFileChars: "big", maxTotalChars: 777.7}},
        list: [{id: "ops", bootstrapMaxChars: 5000, contextLimits: {}}]}}""")
    main = resolve(state_dir, workspace=str(workspace))
    assert (main.prompt.file_chars, main.prompt.total_chars, main.read.max_chars) == (15000, 60000, 900)
    startup = main.prompt.startup
    assert (startup.enabled, startup.apply_on, startup.daily_memory_days, startup.max_file_bytes,
            startup.max_file_chars, startup.max_total_chars, startup.user_timezone) == (
        False, ("reset",), 14, 1, 1200, 777, "Europe/Paris")
    ops = resolve(state_dir, workspace=str(workspace), agent="ops")
    # The agent's own contextLimits replaces the defaults' whole object (OpenClaw's rule).
    assert (ops.prompt.file_chars, ops.read.max_chars) == (5000, 12000)
    write(state_dir / "openclaw-memory.toml", "[prompt]\nfile_chars = 300\n[read]\nmax_chars = 50\n")
    assert (resolve(state_dir, workspace=str(workspace)).prompt.file_chars, resolve(state_dir, workspace=str(workspace)).read.max_chars) == (300, 50)
