"""``openclaw-memory mcp --session ID``: the MCP server is the session ID names, as each CLI command
given ``--session ID`` is (``mcp --help``: "Read records of this session"). It was taken and ignored:
the server made a session of its own (``mcp-<pid>-<hex>``), and a file read with ``--session ID
read`` was blocked for its memory_write as never read."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_mcp import payload, text_of

from conftest import env_for, write


def _session(workspace: Path, state_dir: Path, script, *flags: str):
    params = StdioServerParameters(command=sys.executable, env=env_for(workspace, state_dir), cwd=str(workspace),
                                   args=["-m", "openclaw_memory", "mcp", "-w", str(workspace), "--state-dir", str(state_dir), *flags])

    async def main():
        async with stdio_client(params) as (read, write_stream):
            async with ClientSession(read, write_stream) as session:
                await session.initialize()
                return await script(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=120))


def test_mcp_session_flag_names_the_session_whose_reads_count(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n\nThe roof leaks.\n")
    write(workspace / "memory" / "plan.md", "# Plan\n\nCall the roofer.\n")
    assert cli("--session", "desk-1", "read", "MEMORY.md").returncode == 0

    async def write_both(session):
        return [await session.call_tool("memory_write", {"path": path, "append": "Fixed."})
                for path in ("MEMORY.md", "memory/plan.md")]

    read_by_cli, never_read = _session(workspace, state_dir, write_both, "--session", "desk-1")
    assert payload(read_by_cli)["changed"] is True  # read under desk-1 by the CLI: this session's read
    assert never_read.is_error and "has not read" in text_of(never_read), text_of(never_read)
    # Its records outlive the server, as the CLI's: the session goes on in the CLI with what it wrote.
    again = cli("--session", "desk-1", "write", "MEMORY.md", "--append", "Again.")
    assert again.returncode == 0, again.stderr
    # Without --session, the server is a session of its own: desk-1's reads are not its reads.
    alone, = _session(workspace, state_dir, lambda s: asyncio.gather(s.call_tool("memory_write", {
        "path": "MEMORY.md", "append": "Mine."})))
    assert alone.is_error and "has not read" in text_of(alone), text_of(alone)
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\nThe roof leaks.\nFixed.\nAgain.\n"
