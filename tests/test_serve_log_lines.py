"""What the service logs on its stderr is in the product's one-line format: ``warning: ...`` or
``error: ...``, escaped, never uvicorn's own format (``WARNING:  Invalid HTTP request received.``)
and never its line beside the product's own for the same failure (review D2)."""

from __future__ import annotations

import socket
import subprocess
import sys

from test_serve import _http_service

from conftest import env_for


def test_a_request_uvicorn_cannot_read_is_one_warning_line_in_the_products_format(workspace, state_dir, services):
    service, url, _headers = _http_service(services, workspace, state_dir)
    host, _, port = url.removeprefix("http://").split("/")[0].rpartition(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"NOT AN HTTP REQUEST \x1b]0;title\x07\r\n\r\n")
        sock.recv(1 << 16)  # its 400, then the connection closes
    assert service.stop() == 0
    lines = "".join(service.stderr).splitlines()
    assert "warning: MCP over HTTP: Invalid HTTP request received." in lines, lines
    assert not [line for line in lines if line.startswith(("WARNING:", "ERROR:", "INFO:"))], lines


def test_a_port_in_use_is_said_once_with_its_reason(workspace, state_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch", "--http", f"127.0.0.1:{port}"],
                              env=env_for(workspace, state_dir), cwd=workspace, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"error: --http: cannot listen on 127.0.0.1:{port} (address already in use)\n", done.stderr
