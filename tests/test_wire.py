"""What crosses the service socket or sits in the data dir decodes into data only: the closed set
of the product's data types, whatever the bytes (a request or a planted record naming a function,
a module with side effects, a class outside the package)."""

from __future__ import annotations

import ast
import json
import socket
import subprocess
import sys

import pytest

from conftest import REPO, env_for, wait_for, write
from openclaw_memory import wire
from openclaw_memory.history.guard import WriteResult


def _data_types() -> set[str]:
    """Every public dataclass and NamedTuple of the package outside the front-ends (cli, mcp)."""
    found = set()
    for path in sorted((REPO / "openclaw_memory").rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        if module.startswith(("openclaw_memory.cli", "openclaw_memory.mcp")):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                decorated = any(ast.unparse(d).startswith(("dataclass", "dataclasses.dataclass")) for d in node.decorator_list)
                if decorated or "NamedTuple" in [ast.unparse(b) for b in node.bases]:
                    found.add(f"{module}:{node.name}")
    return found


def test_the_closed_set_is_every_data_type_and_nothing_else():
    assert _data_types() == wire.TYPES


@pytest.mark.parametrize("hostile", [
    {"~c": "os:system", "f": {"command": "touch /tmp/pwned"}},
    {"~n": "os:system", "v": ["touch /tmp/pwned"]},
    {"~c": "openclaw_memory.__main__:run", "f": {}},  # importing it would run the CLI
    {"~n": "openclaw_memory.api:read_memory", "v": []},
    {"~c": "openclaw_memory.errors:MemoryToolError", "f": {}},
    {"~c": ["not", "a", "name"], "f": {}},
    [{"~m": {"x": {"~c": "subprocess:Popen", "f": {"args": "id"}}}}],
])
def test_a_name_outside_the_closed_set_is_refused(hostile):
    before = set(sys.modules)
    with pytest.raises(ValueError, match="refusing to rebuild"):
        wire.decode(hostile)
    assert "openclaw_memory.__main__" not in set(sys.modules) - before


def test_the_product_types_still_round_trip():
    result = WriteResult(path="memory/a.md", abs_path="/w/memory/a.md", action="append", version="ab" * 16,
                         previous=None, size=3, created=True, warnings=("w",))
    assert wire.decode(json.loads(json.dumps(wire.encode(result)))) == result


def test_a_planted_idempotency_record_runs_nothing(workspace, state_dir, cli, tmp_path):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "- one", "--idempotency-key", "k1").returncode == 0
    (record,) = (p for p in state_dir.rglob("idempotency/*.json"))
    marker = tmp_path / "pwned"
    data = json.loads(record.read_text())
    data["result"] = {"~n": "os:system", "v": [f"touch {marker}"]}
    record.write_text(json.dumps(data))
    again = cli("write", "MEMORY.md", "--append", "- one", "--idempotency-key", "k1", "--json")
    assert again.returncode in (0, 3) and "Traceback" not in again.stderr
    assert not marker.exists()


def test_a_request_naming_a_function_gets_a_refusal_and_the_service_keeps_serving(workspace, state_dir, tmp_path):
    from conftest import settings_for
    from openclaw_memory.serve.paths import read_info, socket_address

    write(workspace / "MEMORY.md", "# Memory\n")
    service = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=workspace,
                               env=env_for(workspace, state_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    settings = settings_for(workspace, state_dir)
    try:
        wait_for(lambda: read_info(settings), timeout=120)
        marker = tmp_path / "pwned"

        def ask(line: bytes) -> dict:
            with socket.socket(socket.AF_UNIX) as sock, socket_address(settings) as address:
                sock.connect(address)
                sock.sendall(line + b"\n")
                data = b""
                while not data.strip():
                    data = sock.recv(1 << 16)
                return json.loads(data.strip().splitlines()[-1])

        hostile = {"op": "read", "args": {"~n": "os:system", "v": [f"touch {marker}"]}, "settings": {}}
        assert "refused" in ask(json.dumps(hostile).encode())
        assert "refused" in ask(json.dumps({"op": "read", "settings": [1]}).encode())
        assert "refused" in ask(b"[" * 100_000 + b"]" * 100_000)  # deeper than the decoder goes
        assert "refused" in ask(b"[1, 2]")
        assert not marker.exists()
        assert service.poll() is None  # still serving
    finally:
        service.terminate()
        _, err = service.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_socket_lines_are_framed_across_chunks_and_a_line_past_the_limit_is_refused():
    from openclaw_memory.serve.protocol import LineReader, LineTooLong

    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b'{"a": 1}\n{"b"' + b": 2}\n" + b"x" * 5000 + b"\n" + b"y" * 300)
        theirs.shutdown(socket.SHUT_WR)
        lines = LineReader(ours, limit=4096)
        assert lines.next() == b'{"a": 1}' and lines.next() == b'{"b": 2}'
        with pytest.raises(LineTooLong):
            lines.next()
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"one\ntwo")
        theirs.shutdown(socket.SHUT_WR)
        lines = LineReader(ours)
        assert (lines.next(), lines.next()) == (b"one", None)  # an unfinished last line is not a request
