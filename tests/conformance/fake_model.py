"""A model endpoint on loopback that records what OpenClaw sends it and answers "ok".

OpenClaw builds a turn's system prompt and tool list only when it calls a model; without a network
the conformance tests give it this endpoint as a custom OpenAI-compatible provider
(``models.providers.<id>`` with ``api: "openai-completions"``, OpenClaw's docs
gateway/local-models.md) and read the real request: the tools the model is offered and the system
prompt with its injected workspace files. Nothing of OpenClaw is replaced.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROVIDER = "fake"
MODEL = "fake"


def _completion(streaming: bool) -> list[dict[str, Any]]:
    base = {"id": "c1", "created": int(time.time()), "model": MODEL}
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    if not streaming:
        return [{**base, "object": "chat.completion", "usage": usage,
                 "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}]
    chunk = {**base, "object": "chat.completion.chunk"}
    return [{**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}, "finish_reason": None}]},
            {**chunk, "usage": usage, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]


class FakeModel:
    """``with FakeModel() as model``: ``model.provider_config()`` for openclaw.json, ``model.requests`` after a turn."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # the test's output is not the place for access logs
                pass

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._send(200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode(),
                           "application/json")

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with lock:
                    owner.requests.append({"path": self.path, "body": body})
                streaming = bool(body.get("stream"))
                parts = _completion(streaming)
                if streaming:
                    events = b"".join(b"data: " + json.dumps(p).encode() + b"\n\n" for p in parts)
                    self._send(200, events + b"data: [DONE]\n\n", "text/event-stream")
                else:
                    self._send(200, json.dumps(parts[0]).encode(), "application/json")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def provider_config(self) -> dict[str, Any]:
        """The ``models`` and the model choice to merge into openclaw.json."""
        port = self._server.server_address[1]
        model = {"id": MODEL, "name": "Recording model", "reasoning": False, "input": ["text"],
                 "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                 "contextWindow": 128000, "maxTokens": 4096}
        return {"models": {"mode": "merge", "providers": {PROVIDER: {
                    "baseUrl": f"http://127.0.0.1:{port}/v1", "apiKey": "unused", "api": "openai-completions",
                    "models": [model]}}},
                "model": f"{PROVIDER}/{MODEL}"}


def offered_tools(request: dict[str, Any]) -> list[str]:
    """The tool names a chat-completions request offers the model."""
    return sorted(t["function"]["name"] for t in request["body"].get("tools", []))


def system_prompt(request: dict[str, Any]) -> str:
    for message in request["body"]["messages"]:
        if message["role"] in ("system", "developer"):
            content = message["content"]
            return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    raise AssertionError(f"no system message in the request: {[m['role'] for m in request['body']['messages']]}")
