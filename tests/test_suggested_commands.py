"""A command a message bids the user run repeats the settings flags the command was given.

``write -w WS --agent ops --session s1`` blocked said "read it first (openclaw-memory read MEMORY.md)",
and ``search -w WS --agent ops`` "build it with `openclaw-memory index`": run as printed, each acted
on $OPENCLAW_WORKSPACE's workspace and agent main, and the write stayed blocked. Each test here runs
the command as printed (split as a shell splits it) and checks that it does what was bidden.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from test_mcp import run_session, text_of
from test_serve import services, start  # noqa: F401 - services: the fixture

from conftest import write


def bidden(text: str, pattern: str) -> list[str]:
    """The arguments of the command ``pattern`` (a regex whose group 1 is the command line) finds in
    ``text``, as a shell splits them, without the program's name."""
    found = re.search(pattern, text)
    assert found, text
    words = shlex.split(found.group(1))
    assert words[0] == "openclaw-memory", words
    return words[1:]


def test_read_it_first_names_the_workspace_agent_and_session_given_and_following_it_lets_the_write_through(
        workspace, cli, tmp_path):
    other = tmp_path / "other"  # not $OPENCLAW_WORKSPACE: only -w names it
    write(other / "memory" / "my note.md", "hi\n")
    flags = ("-w", str(other), "--agent", "ops", "--session", "s1")
    blocked = cli("write", *flags, "memory/my note.md", "--append", "x")
    assert blocked.returncode == 3, blocked.stderr
    step = bidden(blocked.stderr, r"read it first \((openclaw-memory [^)]*)\)")
    assert step == [*flags, "read", "memory/my note.md"], blocked.stderr
    assert cli(*step).returncode == 0
    assert cli("write", *flags, "memory/my note.md", "--append", "x").returncode == 0
    assert (other / "memory" / "my note.md").read_text() == "hi\nx\n"


def test_build_it_with_index_names_the_workspace_and_agent_given_and_following_it_builds_that_index(
        workspace, cli, tmp_path):
    other = tmp_path / "other"
    write(other / "MEMORY.md", "The heron nests by the pier.\n")
    flags = ("-w", str(other), "--agent", "ops")
    missing = cli("search", *flags, "heron")
    assert missing.returncode == 1
    build = bidden(missing.stderr, r"build it with `([^`]*)`")
    assert build == [*flags, "index"], missing.stderr
    status = cli("status", *flags)
    assert bidden(status.stdout, r"No index yet: `([^`]*)` builds it") == build, status.stdout
    assert cli(*build).returncode == 0
    assert cli("search", *flags, "heron").returncode == 0
    write(other / "MEMORY.md", "The heron nests by the old pier.\n")
    stale = cli("status", *flags).stdout
    assert bidden(stale, r"stale: MEMORY\.md \(`([^`]*)` updates them\)") == build, stale


def test_a_hint_worded_by_the_service_names_the_callers_flags(workspace, state_dir, cli, services):  # noqa: F811
    # The service answers with the error's fields (IndexMissing's head, run, then): the caller words
    # them with its own flags, not the service's.
    write(workspace / "MEMORY.md", "The heron nests by the pier.\n")
    start(services, workspace, state_dir)
    missing = cli("search", "-w", str(workspace), "--agent", "ops", "heron")
    assert missing.returncode == 1
    assert bidden(missing.stderr, r"build it with `([^`]*)`") == ["-w", str(workspace), "--agent", "ops", "index"], (
        missing.stderr)


def test_memory_search_names_the_flags_the_mcp_server_was_given(workspace: Path, state_dir: Path):
    # The model's shell may not have the server's environment: the command it is told to run names
    # the workspace and state dir the server was started with (test_mcp's server: -w and --state-dir).
    write(workspace / "MEMORY.md", "The heron nests by the pier.\n")

    async def script(session):
        return await session.call_tool("memory_search", {"query": "heron"})

    missing = run_session(workspace, state_dir, script)
    assert missing.is_error
    assert bidden(text_of(missing), r"build it with `([^`]*)`") == ["-w", str(workspace), "--state-dir", str(state_dir),
                                                                    "index"]
