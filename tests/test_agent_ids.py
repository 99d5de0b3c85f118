"""An agent id is one agent however it is typed: normalized once where it enters (``--agent``, a
service caller's, ``log --agent``), as OpenClaw 2026.9.6 normalizes an explicit one
(``normalizeAgentIdStrict``; compared with OpenClaw itself in ``tests/conformance/test_agent_ids.py``).
Before, ``Main`` found main's workspace but read, wrote, indexed and logged as a second agent."""

from __future__ import annotations

import pytest

from conftest import settings_for, write
from openclaw_memory.index.collections import registered_names

EMOJI = "\N{CRAB}" * 100


def test_main_typed_another_way_is_main_everywhere(cli, workspace, state_dir):
    write(workspace / "MEMORY.md", "hi there\n")
    assert cli("read", "MEMORY.md", "--agent", "Main").returncode == 0
    wrote = cli("write", "MEMORY.md", "--append", "x")  # the write guard: main has read it
    assert wrote.returncode == 0, wrote.stderr
    assert cli("index").returncode == 0
    found = cli("search", "hi", "--agent", "MAIN", "--json")
    assert found.returncode == 0, found.stderr
    assert [r["path"] for r in found.json()["results"]] == ["MEMORY.md"]
    assert cli("index", "--agent", " Main ").returncode == 0
    names = registered_names(settings_for(workspace, state_dir).data_dir)
    assert sorted(names) == ["memory-dir-main", "memory-root-main"]  # no second index (was memory-root-main-2)
    assert {e["agent"] for e in names.values()} == {"main"}
    logged = cli("log", "--agent", "Main", "--json").json()["entries"]
    assert [e["agent"] for e in logged] == ["main"]  # was "by Main", and `log --agent main` missed it


def test_an_id_with_other_characters_is_the_agent_openclaw_makes_of_it(cli, workspace):
    write(workspace / "MEMORY.md", "hi\n")
    assert cli("read", "MEMORY.md", "--agent", "ops!").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "x", "--agent", "OPS").returncode == 0
    # ops wrote the version there now: another agent has not read it, ops has, whatever its spelling
    assert cli("write", "MEMORY.md", "--append", "y", "--agent", "main").returncode == 3
    assert cli("write", "MEMORY.md", "--append", "y", "--agent", "\N{CRAB}ops\N{CRAB}").returncode == 0
    assert cli("state", "--agent", "Ops", "--json").json()["agent"] == "ops"


@pytest.mark.parametrize("agent", [EMOJI, "!!!", "..", "/", "\\"], ids=["100-emoji", "bangs", "dotdot", "slash", "backslash"])
def test_an_id_openclaw_would_refuse_is_refused_in_one_line(cli, agent):
    refused = cli("--agent", agent, "files")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.startswith("error: an agent id needs a letter, a digit, '_' or '-'") and refused.stderr.count("\n") == 1
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize("agent,taken", [("a\nb", "a-b"), ("../../x", "x"), ("a/b", "a-b"), ("x" * 101, "x" * 64)])
def test_an_id_that_would_name_another_file_names_only_its_normalized_agent(workspace, state_dir, agent, taken):
    assert settings_for(workspace, state_dir, agent=agent).agent == taken


def test_an_agent_id_from_the_socket_is_normalized_as_one_from_the_command_line(workspace, state_dir):
    from openclaw_memory.memory.protocol import request_line
    from openclaw_memory.serve.core import Refused, ServiceCore

    settings = settings_for(workspace, state_dir)
    core = ServiceCore(settings, live_sync=False)
    line = request_line(1, "state", {}, settings)
    for asked, agent in (("Main", "main"), ("../../x", "x")):
        assert core.read_request(line.replace(b'"agent": "main"', f'"agent": "{asked}"'.encode())).settings.agent == agent
    with pytest.raises(Refused, match="an agent id needs"):
        core.read_request(line.replace(b'"agent": "main"', b'"agent": "!!"'))
