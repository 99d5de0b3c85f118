"""A service started for one agent, asked by another agent of the workspace configured otherwise
(its own extra paths in openclaw.json). The caller was told to restart it with a command that
fails (`openclaw-memory --agent main serve`: "already running ... the CLI and `openclaw-memory
--agent main mcp` use it: no second one is needed"), both untrue: one service runs per workspace,
and it never answers an agent whose settings are not its own."""

from __future__ import annotations

import json

from test_serve import memory, start

from conftest import write


def _ops_with_its_own_extra_path(workspace, state_dir, tmp_path):
    runbooks = write(tmp_path / "runbooks" / "deploy.md", "# Deploy\n").parent
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {
        "main": {"default": True, "workspace": str(workspace)},
        "ops": {"workspace": str(workspace), "memory": {"search": {"extraPaths": [str(runbooks)]}}}}}}))


def test_another_agents_command_is_told_what_is_true(workspace, state_dir, tmp_path, cli_process, services):
    memory(workspace)
    _ops_with_its_own_extra_path(workspace, state_dir, tmp_path)
    service = start(services, workspace, state_dir, "--no-watch", "--agent", "ops")
    read = cli_process("--agent", "main", "read", "MEMORY.md")
    assert read.returncode == 0 and "Pistachio" in read.stdout, read.stderr
    assert read.stderr == (
        f"warning: the memory service (pid {service.proc.pid}) cannot answer this: it serves agent 'ops', and agent "
        "'main' has other settings (extra paths or search settings of its own in openclaw.json, extra paths given to "
        "this command, or a config changed since the service started); one service runs per workspace and answers "
        "only the agents of its settings, so agent 'main' is not served while it runs (to serve agent 'main' in its "
        "place: stop it, `openclaw-memory --agent main serve --stop`, then `openclaw-memory --agent main serve`); "
        "working in-process\n")
    # status says it runs (it said "not answering"), and why it does not serve main.
    status = cli_process("--agent", "main", "status")
    assert "Service: running, not serving this command: the memory service" in status.stdout, status.stdout
    assert "stop it, `openclaw-memory --agent main serve --stop`, then `openclaw-memory --agent main serve`" in (
        status.stdout), status.stdout  # (its flags: `serve --stop` alone acted on the default workspace)
    as_json = cli_process("--agent", "main", "status", "--json").json()["service"]
    assert as_json["refused"] is True  # and its note's commands run as given: they had no flags here (review)
    assert "stop it, `openclaw-memory --agent main serve --stop`, then `openclaw-memory --agent main serve`" in (
        as_json["note"]), as_json
    assert f"stop it, `openclaw-memory -w {workspace} --state-dir {state_dir} --agent main serve --stop`" in (
        _mcp_status_note(workspace, state_dir, "main"))
    # The command it named before, `openclaw-memory --agent main serve`, is refused, and now says why truly.
    second = cli_process("--agent", "main", "serve", "--no-watch")
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr == (
        f"error: a memory service for {workspace} is already running (pid {service.proc.pid}), serving agent 'ops'; "
        "one runs per workspace, answering only the agents of its settings: the commands and `openclaw-memory "
        "--agent main mcp` of agent 'main' use it where the two agents' settings are the same (extra paths and "
        "search settings in openclaw.json), and work in-process otherwise; to serve agent 'main' in its place, stop "
        "it first: `openclaw-memory --agent main serve --stop`\n")
    # The service's own agent: it does use it, as its second serve is told.
    same = cli_process("--agent", "ops", "serve", "--no-watch")
    assert same.returncode == 2 and "no second one is needed" in same.stderr and "serving agent" not in same.stderr
    assert "in-process" not in cli_process("--agent", "ops", "read", "MEMORY.md").stderr
    # As the first warning says: the stop it names stops the workspace's service, then main's serve runs.
    stopped = cli_process("--agent", "main", "serve", "--stop")
    assert stopped.returncode == 0, stopped.stderr
    main = start(services, workspace, state_dir, "--no-watch", "--agent", "main")
    assert cli_process("--agent", "main", "read", "MEMORY.md").stderr == "", main.stderr


def _mcp_status_note(workspace, state_dir, agent: str) -> str:
    """memory_status's service note, to an MCP server of ``agent``: its commands named with that server's
    workspace, state dir and agent, as the model's shell must run them (they had no flags: review)."""
    import asyncio
    import sys

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from conftest import env_for

    params = StdioServerParameters(command=sys.executable, args=["-m", "openclaw_memory", "mcp", "--agent", agent],
                                   env=env_for(workspace, state_dir), cwd=str(workspace))

    async def main():
        async with stdio_client(params) as (read, write_stream), ClientSession(read, write_stream) as session:
            await session.initialize()
            result = await session.call_tool("memory_status", {})
            return json.loads("".join(block.text for block in result.content))["service"]["note"]

    return asyncio.run(asyncio.wait_for(main(), timeout=120))
