"""Stopping MCP over HTTP while a client holds its event stream open (the GET the MCP SDK's own
client keeps for its session): the stream is closed at once. uvicorn waited for it as for a request
in flight, so every stop took the endpoint's 5 s bound, saying nothing (0.74 s -> 5.62 s)."""

from __future__ import annotations

import os

import pytest

from conftest import settings_for, write
from openclaw_memory.mcp.http import HttpEndpoint
from openclaw_memory.serve.core import ServiceCore

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_a_stop_closes_an_open_event_stream_at_once_and_lets_nothing_wait_on_it(workspace, state_dir):
    import httpx2

    write(workspace / "MEMORY.md", "Pistachio.\n")
    settings = settings_for(workspace, state_dir)
    os.makedirs(os.path.join(settings.data_dir, "service"), exist_ok=True)
    core = ServiceCore(settings, live_sync=False)
    endpoint = HttpEndpoint(core.memory, settings, "127.0.0.1:0", lambda _session: None).start()
    try:
        assert endpoint.url is not None and endpoint.token is not None
        base = {"Authorization": f"Bearer {endpoint.token}", "Accept": "application/json, text/event-stream"}
        hello = httpx2.post(endpoint.url, headers=base, json=HELLO)
        session = {**base, "mcp-session-id": hello.headers["mcp-session-id"]}
        httpx2.post(endpoint.url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        with httpx2.stream("GET", endpoint.url, headers={**session, "Accept": "text/event-stream"}, timeout=60) as stream:
            assert stream.status_code == 200  # the stream is open, its answer never complete
            endpoint.stop()
            # The server's thread ended within the stop (it waited 5 s for the stream, and was left running).
            assert endpoint._thread is not None and not endpoint._thread.is_alive()
            with pytest.raises(httpx2.RemoteProtocolError):  # closed by the server: the client's read ends
                b"".join(stream.iter_raw())
    finally:
        endpoint.stop()
        core.close()
