"""What the service makes in the workspace for a caller gets the caller's umask, not the service's.

A caller at umask 077 writing a new note through a service started at 022 got a 0755 folder and a
0644 note, readable by every user, where the same write in-process made them 0700 and 0600: the
caller's umask now travels with each request (the request context's ``umask``, as its ``tz``).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_serve import WAIT, _stdio_params, _text, start

from conftest import env_for, write


@contextmanager
def umask(value: int) -> Iterator[None]:
    """This process's umask for the block: a process started in it inherits it."""
    old = os.umask(value)
    try:
        yield
    finally:
        os.umask(old)


def through_the_service(workspace: Path, state_dir: Path, mask: int, *args: str) -> None:
    """``openclaw-memory ARGS`` in a process of umask ``mask``, answered by the service (a caller working
    in-process says why on stderr)."""
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], env=env_for(workspace, state_dir),
                          cwd=workspace, capture_output=True, text=True, umask=mask, timeout=WAIT)
    assert done.returncode == 0 and done.stderr == "", (args, done.stderr)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_note_and_folder_the_service_makes_get_the_callers_umask(workspace, state_dir, services):
    write(workspace / "MEMORY.md", "# Memory\n")
    with umask(0o022):
        service = start(services, workspace, state_dir, "--no-watch")
    private = workspace / "memory" / "health"
    through_the_service(workspace, state_dir, 0o077, "write", "memory/health/diagnosis.md", "--append", "diagnosis: private")
    assert (mode(private), mode(private / "diagnosis.md")) == (0o700, 0o600)  # were 0755 and 0644, the service's
    shared = workspace / "memory" / "shared"
    through_the_service(workspace, state_dir, 0o022, "write", "memory/shared/note.md", "--append", "for everyone")
    assert (mode(shared), mode(shared / "note.md")) == (0o755, 0o644)
    # A note moved into a new folder keeps its mode; the folder is made as the caller's process makes it.
    through_the_service(workspace, state_dir, 0o077, "mv", "memory/shared/note.md", "memory/moved/note.md")
    assert (mode(workspace / "memory" / "moved"), mode(workspace / "memory" / "moved" / "note.md")) == (0o700, 0o644)
    assert service.stop() == 0


def test_a_note_an_mcp_session_writes_through_the_service_gets_the_sessions_umask(workspace, state_dir, services):
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    write(workspace / "MEMORY.md", "# Memory\n")
    with umask(0o022):
        service = start(services, workspace, state_dir, "--no-watch")

    async def session() -> str:
        with umask(0o077):  # the `openclaw-memory mcp` process's
            client = stdio_client(_stdio_params(workspace, state_dir))
            read, send = await client.__aenter__()
        try:
            async with ClientSession(read, send) as mcp:
                await mcp.initialize()
                done = await mcp.call_tool("memory_write", {"path": "memory/health/diagnosis.md",
                                                            "content": "diagnosis: private\n"})
                assert not done.is_error, _text(done)
                return _text(await mcp.call_tool("memory_status", {}))
        finally:
            await client.__aexit__(None, None, None)

    status = asyncio.run(asyncio.wait_for(session(), timeout=WAIT))
    assert json.loads(status)["service"]["pid"] == service.proc.pid  # the service answered the session
    folder = workspace / "memory" / "health"
    assert (mode(folder), mode(folder / "diagnosis.md")) == (0o700, 0o600)
    assert service.stop() == 0


def test_a_request_whose_umask_is_none_a_umask_can_be_is_refused():
    """The service works for no caller with a umask it would have to guess: the caller then works in-process."""
    from openclaw_memory.serve.core import INVALID_PARAMS, Refused, _caller_umask

    for context in ({}, {"umask": None}, {"umask": True}, {"umask": -1}, {"umask": 0o1000}, {"umask": "077"}, {"umask": 63.0}):
        with pytest.raises(Refused) as refused:
            _caller_umask(context)
        assert refused.value.code == INVALID_PARAMS, context
    assert _caller_umask({"umask": 0o077}) == 0o077
