"""The start of an MCP stdio session: settings refused after ``initialize``, and an ``initialize`` refused.

Raw JSON-RPC lines to a real ``openclaw-memory mcp`` process (review D2, item 4 and the refused initialize).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import env_for, write

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class _Server:
    """``openclaw-memory mcp`` in a process: a request sent, its answer read (notifications skipped)."""

    def __init__(self, workspace, state_dir, **env: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env_for(workspace, state_dir, **env), cwd=workspace)

    def send(self, message: dict) -> dict | None:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        if "id" not in message:
            return None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the server closed its output: " + self.close()[1]
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return answer

    def call(self, request_id: int, name: str, arguments: dict) -> dict:
        answer = self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}})
        assert answer is not None and "result" in answer, answer
        return answer["result"]

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin and self.proc.stderr
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        return code, self.proc.stderr.read().decode()


def test_a_state_dir_refused_after_initialize_makes_each_tool_call_a_tool_error_until_it_is_fixed(workspace, state_dir):
    """A state dir other users may write in (0777, no sticky bit) is refused once the server opens the
    memory, after the handshake: the server answered initialize and tools/list, then exited 2 with
    the reason on stderr only, and the client's tool call got no answer ("Connection closed"). Each
    tool call is now a tool error with the CLI's line, the server stays up, and the call after
    `chmod go-w` works."""
    write(workspace / "MEMORY.md", "# Memory\n\nThe roof was fixed in May.\n")
    os.chmod(state_dir, 0o777)
    server = _Server(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off")
    try:
        assert "result" in server.send(HELLO)
        server.send(INITIALIZED)
        listed = server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert {t["name"] for t in listed["result"]["tools"]} >= {"memory_get", "memory_search"}
        for request_id in (3, 4):
            refused = server.call(request_id, "memory_get", {"path": "MEMORY.md"})
            text = refused["content"][0]["text"]
            assert refused.get("isError") and text.startswith(f"refusing the state dir {state_dir}: other users may write in it"), text
            assert "chmod go-w" in text and "\n" not in text
        os.chmod(state_dir, 0o755)
        read = server.call(5, "memory_get", {"path": "MEMORY.md"})
        assert not read.get("isError") and "roof" in json.loads(read["content"][0]["text"])["text"]
    finally:
        os.chmod(state_dir, 0o755)
        code, stderr = server.close()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "refusing the state dir" in stderr  # said once on stderr too


def test_a_tool_call_after_a_refused_initialize_is_refused(workspace, state_dir):
    """An initialize the SDK refuses (protocolVersion 5), then the client's notifications/initialized
    and a tool call: the SDK took the notification alone as the end of the handshake and answered
    the call. It is refused as before any initialize; a good initialize then opens the session."""
    write(workspace / "MEMORY.md", "# Memory\n")
    server = _Server(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off")
    try:
        bad = server.send({**HELLO, "params": {**HELLO["params"], "protocolVersion": 5}})
        assert "error" in bad and "not an initialize request's" in bad["error"]["message"]
        server.send(INITIALIZED)
        early = server.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}})
        assert early["error"]["message"].startswith("the session is not initialized: send initialize first"), early
        assert "result" in server.send({**HELLO, "id": 3})
        server.send(INITIALIZED)
        assert not server.call(4, "memory_get", {"path": "MEMORY.md"}).get("isError")
    finally:
        code, stderr = server.close()
    assert code == 0 and "Traceback" not in stderr, stderr
