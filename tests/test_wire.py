"""What crosses the service socket or sits in the data dir decodes into data only: the closed set
of the product's data types, whatever the bytes (a request or a planted record naming a function,
a module with side effects, a class outside the package)."""

from __future__ import annotations

import json
import socket
import sqlite3
import subprocess
import sys
from dataclasses import replace
from typing import Literal

import pytest

from conftest import env_for, wait_for, write
from openclaw_memory import wire
from openclaw_memory.history.guard import WriteResult


def test_a_type_name_in_the_data_is_never_looked_up():
    """A record naming a class or a function is data that does not fit: nothing is imported."""
    before = set(sys.modules)
    for hostile in ({"~c": "os:system", "f": {"command": "touch /tmp/pwned"}},
                    {"~n": "openclaw_memory.__main__:run", "v": []},
                    [{"~m": {"x": {"~c": "subprocess:Popen", "f": {"args": "id"}}}}]):
        with pytest.raises(wire.WireError):
            wire.from_json(hostile, WriteResult)
    assert not {"openclaw_memory.__main__", "subprocess"} & (set(sys.modules) - before)


@pytest.mark.parametrize("data, hint", [
    ({"path": 1}, WriteResult),
    ("text", int),
    (True, int),
    ([1, "a"], tuple[int, ...]),
    ({"base64": "%%%"}, bytes),
    ("bytes", bytes),
    ("other", Literal["hybrid", "vector"]),
    ([[[[[[[[[[1]]]]]]]]]], int),
])
def test_a_value_of_another_type_is_refused(data, hint):
    with pytest.raises(wire.WireError):
        wire.from_json(data, hint)


def test_results_round_trip_by_their_type_with_camel_case_keys(workspace, state_dir):
    from conftest import settings_for
    from openclaw_memory.memory.local import LocalMemory
    from openclaw_memory.memory.operations import OPERATIONS

    write(workspace / "MEMORY.md", "# Memory\n- likes tea\n")
    write(workspace / "memory" / "2026-11-30.md", "# Day\n- the database migration\n")
    memory = LocalMemory(settings_for(workspace, state_dir).with_session("s1"))
    try:
        values = {
            "read": memory.read("MEMORY.md"),
            "write": memory.write("MEMORY.md", append="- likes coffee"),
            "state": memory.state(),
            "index": memory.index(),
            "search": memory.search("database migration", min_score=0.0),
            "status": memory.status(),
            "collections": memory.collections(),
            "read_diff": memory.read_diff("MEMORY.md"),
            "service": memory.service(),
        }
    finally:
        memory.close()
    # What only this process can use (the read's absolute path and size, for its read record) stays
    # here, and figures travel as --json prints them (seconds to the millisecond, scores to 4 places).
    values["read"] = replace(values["read"], abs_path="", size=None)
    for method, value in values.items():
        data = json.loads(json.dumps(wire.to_json(value)))
        back = wire.from_json(data, OPERATIONS[method].result)
        assert wire.to_json(back) == data, method
        if method not in ("index", "search", "service"):
            assert back == value, method
    assert "abs_path" not in json.dumps(wire.to_json(values["write"])) and "absPath" in wire.to_json(values["write"])


def test_bytes_that_are_not_utf8_travel_exactly():
    assert wire.from_json(json.loads(json.dumps(wire.to_json(b"\xff\x00a"))), bytes | str | None) == b"\xff\x00a"


def test_a_planted_idempotency_record_runs_nothing(workspace, state_dir, cli, tmp_path):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "- one", "--idempotency-key", "k1").returncode == 0
    (record,) = state_dir.rglob("state.db")
    marker = tmp_path / "pwned"
    planted = json.dumps({"~n": "os:system", "v": [f"touch {marker}"]})
    with sqlite3.connect(record) as db:
        db.execute("UPDATE idempotency SET result = ?", (planted,))
    again = cli("write", "MEMORY.md", "--append", "- one", "--idempotency-key", "k1", "--json")
    assert again.returncode in (0, 3) and "Traceback" not in again.stderr
    assert not marker.exists()


def _serve(workspace, state_dir) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=workspace,
                            env=env_for(workspace, state_dir),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _ask(settings, line: bytes) -> dict:
    from openclaw_memory.service_files import socket_address

    with socket.socket(socket.AF_UNIX) as sock, socket_address(settings) as address:
        sock.connect(address)
        sock.sendall(line + b"\n")
        data = b""
        while not data.strip() or not data.endswith(b"\n"):
            data += sock.recv(1 << 16)
        return json.loads(data.strip().splitlines()[-1])


def test_a_request_outside_the_operations_gets_a_refusal_and_the_service_keeps_serving(workspace, state_dir, tmp_path):
    from conftest import settings_for
    from openclaw_memory.memory.protocol import PROTOCOL, request_line
    from openclaw_memory.service_files import read_info

    write(workspace / "MEMORY.md", "# Memory\n")
    service = _serve(workspace, state_dir)
    settings = settings_for(workspace, state_dir)
    try:
        wait_for(lambda: read_info(settings), timeout=120)
        marker = tmp_path / "pwned"

        def code(line: bytes) -> int:
            answer = _ask(settings, line)
            assert answer["jsonrpc"] == "2.0" and "result" not in answer
            return answer["error"]["code"]

        good = json.loads(request_line(1, "read", {"path": "MEMORY.md"}, settings))
        assert _ask(settings, json.dumps(good).encode())["result"]["text"] == "# Memory"
        assert code(json.dumps({**good, "method": "__init__"}).encode()) == -32601
        assert code(json.dumps({**good, "method": "system"}).encode()) == -32601
        hostile = {**good, "params": {**good["params"], "args": {"path": {"~n": "os:system", "v": [f"touch {marker}"]}}}}
        assert code(json.dumps(hostile).encode()) == -32602
        assert code(json.dumps({**good, "params": {**good["params"], "args": {"path": "MEMORY.md", "mode": 1}}}).encode()) == -32602
        other = {**good, "params": {**good["params"], "context": {**good["params"]["context"], "protocol": PROTOCOL + 1}}}
        assert code(json.dumps(other).encode()) == -32001
        assert code(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "read", "params": [1]}).encode()) == -32602
        assert code(b"[" * 100_000 + b"]" * 100_000) == -32700  # deeper than the decoder goes
        assert code(b"[1, 2]") == -32600
        assert not marker.exists()
        assert service.poll() is None  # still serving
    finally:
        service.terminate()
        _, err = service.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_socket_lines_are_framed_across_chunks_and_a_line_past_the_limit_is_refused():
    from openclaw_memory.memory.protocol import LineReader, LineTooLong

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


def _strict(data: bytes):
    """``data`` read as strict JSON: UTF-8, and no NaN or Infinity (JavaScript's, not JSON's)."""

    def refuse(constant: str):
        raise AssertionError(f"{constant} in an answer: not JSON")

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def _answer_to(settings, line: bytes) -> bytes:
    """The raw answer line to one request (heartbeats skipped); fails when the service closes the
    connection without one."""
    from openclaw_memory.service_files import socket_address

    with socket.socket(socket.AF_UNIX) as sock, socket_address(settings) as address:
        sock.settimeout(60)
        sock.connect(address)
        sock.sendall(line + b"\n")
        data = b""
        while not data.strip() or not data.endswith(b"\n"):
            chunk = sock.recv(1 << 16)
            assert chunk, f"the service closed the connection without an answer (got {data!r})"
            data += chunk
        return data.strip().splitlines()[-1]


def test_every_answer_on_the_socket_is_strict_json_whatever_the_id_or_path(workspace, state_dir, cli):
    """Ids strict JSON cannot carry back (a lone surrogate, 1e400 read as infinity, NaN) are refused
    with a null id; a path no file name can hold is the product's own refusal, not a failure; a
    file name that is not UTF-8 crosses as its escape. No answer is ever missing or not JSON."""
    from conftest import settings_for
    from openclaw_memory.memory.protocol import request_line
    from openclaw_memory.service_files import read_info

    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "old.md", "# Old\n")
    (workspace / "memory" / "old.md").rename(workspace / "memory" / "bad\udcff.md")  # the name's byte is 0xff
    service = _serve(workspace, state_dir)
    settings = settings_for(workspace, state_dir)
    try:
        wait_for(lambda: read_info(settings), timeout=120)
        good = request_line(7, "read", {"path": "MEMORY.md"}, settings).strip()
        assert b'"id": 7,' in good

        def ask(old: bytes, new: bytes) -> dict:
            return _strict(_answer_to(settings, good.replace(old, new)))

        for request_id, code in ((rb'"\ud800"', -32600), (rb'"\udcff"', -32600), (b"1e400", -32600),
                                 (b"-1e400", -32600), (b"NaN", -32700), (b"Infinity", -32700)):
            answer = ask(b'"id": 7,', b'"id": ' + request_id + b",")
            assert answer["id"] is None and answer["error"]["code"] == code, (request_id, answer)
        for path in (rb'"\ud800.md"', rb'"memory/\udfff.md"'):
            answer = ask(b'"MEMORY.md"', path)
            assert answer["id"] == 7 and answer["error"]["code"] == -32000, answer
            assert answer["error"]["data"]["kind"] == "PathRefused" and "no file name can hold" in answer["error"]["message"]
        written = ask(b'"read", "params": {"args": {"path": "MEMORY.md"}',
                      b'"write", "params": {"args": {"path": "\\ud800.md", "content": {"base64": "eA=="}}')
        assert written["error"]["data"]["kind"] == "PathRefused", written
        not_utf8 = ask(b'"MEMORY.md"', rb'"memory/bad\udcff.md"')
        assert not_utf8["result"]["text"] == "# Old" and not_utf8["result"]["path"] == "memory/bad\udcff.md"
        assert ask(b"", b"")["result"]["text"] == "# Memory"  # and it still serves
        through = cli("read", "memory/bad\udcff.md")  # the CLI's request with that name is strict JSON too
        assert through.returncode == 0 and through.stdout == "# Old\n" and through.stderr == "", through.stderr
        nan = cli("search", "x", "--min-score", "nan")  # not sent (no JSON holds it): refused here, in its words
        assert nan.returncode == 2 and nan.stderr == "error: --min-score must be between 0 and 1, not nan\n", nan.stderr
    finally:
        service.terminate()
        _, err = service.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]


def test_a_socket_refusal_carries_back_the_id_it_could_read(workspace, state_dir):
    """A request the service refuses after reading its id (no context, another protocol, params that
    are a list, an unknown method, not JSON-RPC 2.0) is answered with that id: it was null, and a
    caller matching answers to ids could not tell which request it refused (review D2, item 10)."""
    from conftest import settings_for
    from openclaw_memory.memory.protocol import PROTOCOL
    from openclaw_memory.service_files import read_info

    write(workspace / "MEMORY.md", "# Memory\n")
    service = _serve(workspace, state_dir)
    settings = settings_for(workspace, state_dir)
    try:
        wait_for(lambda: read_info(settings), timeout=120)
        for line, code in ((b'{"jsonrpc":"2.0","id":7,"method":"status","params":{"args":{}}}', -32602),
                           (b'{"jsonrpc":"2.0","id":"s7","method":"status","params":{"args":{},"context":{"protocol":2}}}', -32001),
                           (b'{"jsonrpc":"2.0","id":7.5,"method":"status","params":[1]}', -32602),
                           (b'{"jsonrpc":"2.0","id":7,"method":"nosuch","params":{"args":{},"context":{"protocol":%d}}}' % PROTOCOL, -32601),
                           (b'{"jsonrpc":"1.0","id":7,"method":"status"}', -32600)):
            answer = _strict(_answer_to(settings, line))
            assert answer["id"] == json.loads(line)["id"] and answer["error"]["code"] == code, (line, answer)
        for line in (b'[1, 2]', b'{"jsonrpc":"2.0","id":[7],"method":"status"}', b'not json'):
            assert _strict(_answer_to(settings, line))["id"] is None  # none to read, or none an answer may carry
    finally:
        service.terminate()
        _, err = service.communicate(timeout=60)
    assert b"Traceback" not in err, err.decode()[-2000:]
