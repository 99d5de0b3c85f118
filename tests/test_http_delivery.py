"""MCP over HTTP: a ``memory_get`` counts as this session's read only once its whole answer went out.

uvicorn counts an answer as sent once it is in its buffer; a client that closed its connection after
227 KB of a 30 MiB read kept the read recorded, and its session's replace then went through (review
D2, item 2). A real service and a real client that reads part of the answer and closes.
"""

from __future__ import annotations

import json
import socket

from test_serve import _http_session

from conftest import settings_for, wait_for, write
from openclaw_memory.database import Database


def _post(url: str, headers: dict, message: dict) -> bytes:
    """The raw HTTP request of ``message`` for ``url``, with ``headers``."""
    body = json.dumps(message).encode()
    host = url.removeprefix("http://").split("/")[0]
    head = "".join(f"{k}: {v}\r\n" for k, v in {**headers, "Host": host, "Content-Type": "application/json",
                                                  "Content-Length": str(len(body))}.items())
    return f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode() + body


def test_a_read_whose_answer_was_cut_off_mid_transfer_lets_the_session_write_nothing(workspace, state_dir, services):
    import httpx2

    service, url, session = _http_session(services, workspace, state_dir)
    big = write(workspace / "memory" / "big.md", "a person's long note line\n" * 1_200_000)  # ~30 MiB
    db = Database(settings_for(workspace, state_dir).data_dir)

    def recorded() -> list[bytes]:
        return [row[0] for row in db.rows("SELECT version FROM reads WHERE session = ?",
                                          (f"http-{session['mcp-session-id']}".encode(),))]

    def call(request_id: int, name: str, arguments: dict) -> dict:
        answer = httpx2.post(url, headers=session, timeout=120, json={
            "jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
        return json.loads(answer.text[answer.text.index("{"):].splitlines()[0])["result"]

    get = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "memory_get", "arguments": {"path": "memory/big.md", "maxChars": 10**9, "lines": 10**7}}}
    host, _, port = url.removeprefix("http://").split("/")[0].rpartition(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(_post(url, session, get))
        got = b""
        while len(got) < 200_000:  # part of the answer: the version, at its end, never arrives
            chunk = sock.recv(1 << 16)
            assert chunk, got[:300]
            got += chunk
        assert b'"result"' in got and b"version" not in got
    # Recorded when it ran, then taken back once the connection was lost with the answer unsent.
    wait_for(lambda: recorded() == [], 120)
    blocked = call(3, "memory_write", {"path": "memory/big.md", "content": "the agent's replacement\n"})
    assert blocked["isError"] and "has not read it" in blocked["content"][0]["text"], blocked
    assert big.stat().st_size > 30_000_000
    read = call(4, "memory_get", {"path": "memory/big.md", "maxChars": 10**9, "lines": 10**7})  # whole: delivered
    assert not read.get("isError") and len(recorded()) == 1
    assert not call(5, "memory_write", {"path": "memory/big.md", "content": "the agent's replacement\n"}).get("isError")
    assert service.stop() == 0
