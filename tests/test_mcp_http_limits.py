"""MCP over HTTP: the bound on open sessions, and the protocol version a session's requests carry."""

from __future__ import annotations

import json
import os

from test_serve import _http_service, _http_session

from conftest import settings_for, write
from openclaw_memory.mcp import http
from openclaw_memory.serve.core import ServiceCore

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
STATUS = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_status", "arguments": {}}}


def _error(answer) -> str:
    return json.loads(answer.text)["error"]["message"]


def test_an_unsupported_protocol_version_header_is_refused_naming_it_and_the_versions_served(workspace, state_dir,
                                                                                           services):
    """A session's call with an MCP-Protocol-Version no session can have agreed on was refused in the
    SDK's words for its sessionless protocol (``params._meta must be an object carrying the required
    'io.modelcontextprotocol/protocolVersion' ... envelope keys``): now 400, naming the header."""
    import httpx2

    service, url, session = _http_session(services, workspace, state_dir)
    for version, shown in [("2099-01-01", '"2099-01-01"'), ("garbage", '"garbage"'), ("2026-07-28", '"2026-07-28"')]:
        answer = httpx2.post(url, headers={**session, "MCP-Protocol-Version": version}, json=STATUS)
        assert answer.status_code == 400, answer.text
        said = _error(answer)
        assert said == (f"MCP-Protocol-Version {shown} is not supported (2025-11-25, 2025-06-18, 2025-03-26, "
                        "2024-11-05): send the version initialize agreed on"), said
        assert json.loads(answer.text)["id"] == 2
    stream = httpx2.get(url, headers={**session, "Accept": "text/event-stream", "MCP-Protocol-Version": "2099-01-01"})
    assert stream.status_code == 400 and "MCP-Protocol-Version" in _error(stream)
    agreed = httpx2.post(url, headers={**session, "MCP-Protocol-Version": "2025-06-18"}, json=STATUS)
    assert agreed.status_code == 200 and '"result"' in agreed.text
    assert service.stop() == 0


def test_an_initialize_with_an_unknown_protocol_version_header_is_refused_naming_it(workspace, state_dir, services):
    """An initialize carrying an ``MCP-Protocol-Version`` the SDK does not know was refused in the
    words of the SDK's sessionless protocol (``params._meta must be an object carrying ... envelope
    keys``): now 400, naming the header and the versions spoken; without the header, or with a
    version initialize negotiates, it opens a session as before."""
    import httpx2

    service, url, base = _http_service(services, workspace, state_dir)
    answer = httpx2.post(url, headers={**base, "MCP-Protocol-Version": "2099-01-01"}, json=HELLO)
    assert answer.status_code == 400, answer.text
    assert _error(answer) == ('MCP-Protocol-Version "2099-01-01" is not supported (2026-07-28, 2025-11-25, '
                              "2025-06-18, 2025-03-26, 2024-11-05): send initialize without it, or one of these")
    assert json.loads(answer.text)["id"] == 1 and "mcp-session-id" not in answer.headers
    for headers in ({}, {"MCP-Protocol-Version": "2025-06-18"}):
        opened = httpx2.post(url, headers={**base, **headers}, json=HELLO)
        assert opened.status_code == 200 and "mcp-session-id" in opened.headers, opened.text
    assert service.stop() == 0


def test_a_new_session_past_the_bound_closes_the_one_idle_longest_and_never_one_at_work(workspace, state_dir,
                                                                                      monkeypatch):
    """Clients that exit without their DELETE left their sessions open 30 minutes, and past the SDK's
    bound (10,000) every new session was refused ("Too many open sessions"), saying neither when nor
    what to do. A new one now closes the session idle longest (its records dropped as at its DELETE),
    never one with a request in flight (an open event stream included); only when every one is busy
    is it refused, in one line. Bound made 3 here, in-process."""
    import httpx2

    monkeypatch.setattr(http, "MAX_HTTP_SESSIONS", 3, raising=False)
    write(workspace / "MEMORY.md", "Pistachio.\n")
    settings = settings_for(workspace, state_dir)
    os.makedirs(os.path.join(settings.data_dir, "service"), exist_ok=True)
    core = ServiceCore(settings, live_sync=False)
    ended: list[str] = []
    endpoint = http.HttpEndpoint(core.memory, settings, "127.0.0.1:0", ended.append).start()
    try:
        assert endpoint.url is not None and endpoint.token is not None
        url = endpoint.url
        base = {"Authorization": f"Bearer {endpoint.token}", "Accept": "application/json, text/event-stream"}

        def open_session() -> dict:
            hello = httpx2.post(url, headers=base, json=HELLO)
            assert hello.status_code == 200, hello.text
            session = {**base, "mcp-session-id": hello.headers["mcp-session-id"]}
            assert httpx2.post(url, headers=session, json={"jsonrpc": "2.0", "method": "notifications/initialized"}).is_success
            return session

        def works(session: dict) -> bool:
            return '"result"' in httpx2.post(url, headers=session, json=STATUS, timeout=60).text

        busy, oldest, other = open_session(), open_session(), open_session()
        with httpx2.Client(timeout=60) as client, client.stream(
                "GET", url, headers={**busy, "Accept": "text/event-stream"}) as listening:
            assert listening.status_code == 200  # busy's event stream: a request in flight all along
            assert works(other)  # oldest is now the one idle longest
            fourth = open_session()
            gone = httpx2.post(url, headers=oldest, json=STATUS)
            assert gone.status_code == 404
            assert "is not open" in _error(gone) and "initialize a new session" in _error(gone), gone.text
            assert ended == [f"http-{oldest['mcp-session-id']}"]  # its read records went, as at its DELETE
            assert works(busy) and works(other) and works(fourth)
            # Every session busy: a new one is refused, saying when room frees.
            with client.stream("GET", url, headers={**other, "Accept": "text/event-stream"}), \
                    client.stream("GET", url, headers={**fourth, "Accept": "text/event-stream"}):
                refused = httpx2.post(url, headers=base, json=HELLO)
                assert refused.status_code == 503
                assert _error(refused) == ("3 MCP sessions are open, each with a request in flight: try again when one "
                                           "of them ends (an idle one is closed to make room for a new session)")
        assert works(busy)
        assert works(open_session())  # the streams ended: room is made again
    finally:
        endpoint.stop()
        core.close()
