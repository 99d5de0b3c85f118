"""Each operation is declared once (openclaw_memory/memory/operations.py): the protocol, the CLI,
the MCP tools and the service all come from the declaration, and one declared outside the package
is reachable from every front-end without touching them."""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import env_for, settings_for, wait_for, write
from openclaw_memory.memory import OPERATIONS, Memory, open_memory
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.memory.operations import plain_type
from openclaw_memory.memory.remote import ServiceMemory

TESTS = Path(__file__).parent
LIFETIME = {"settings", "for_session", "call", "warm", "close"}  # not operations: how a memory is held


def test_every_method_of_the_protocol_is_a_declared_operation_or_its_lifetime():
    methods = {name for name, _ in inspect.getmembers(Memory) if not name.startswith("_")}
    assert methods - LIFETIME == set(OPERATIONS)
    for op in OPERATIONS.values():
        assert op.function is not None, op.name  # its implementation imports
        named = {p.name for p in op.params}
        assert set(op.help) <= named, op.name  # help for parameters it does not have
        if op.cli is not None:
            assert set(op.cli.flags) | set(op.cli.hidden) <= named, op.name
            shown = [p for p in op.params if p.sent and p.name not in op.cli.hidden]
            assert all(p.help for p in shown), f"{op.name}: a flag without help"
        if op.tool is not None:
            taken = [p for p in op.params if p.sent and (op.tool.only is None or p.name in op.tool.only)]
            assert set(op.tool.names) | set(op.tool.fixed) | set(op.tool.kinds) | set(op.tool.bounds) <= named, op.name
            assert all(op.tool.help.get(p.name) or p.help for p in taken), f"{op.name}: a tool argument without help"


def test_a_service_operation_crosses_the_socket_as_json():
    """What the service answers takes and returns JSON-able values only: a callback stays home."""
    from openclaw_memory import wire

    for op in OPERATIONS.values():
        if not op.service:
            continue
        for p in op.params:
            if p.sent:
                assert plain_type(p.wire_hint) in (str, int, float, bool, bytes, tuple), (op.name, p.name)
        if op.result is not None:
            wire.from_json(None, op.result | None)  # its result type is one the wire reads


def test_an_undeclared_name_is_an_error_not_a_fallback(workspace, state_dir):
    memory = LocalMemory(settings_for(workspace, state_dir))
    with pytest.raises(AttributeError, match="no operation 'serch'"):
        memory.serch("x")  # type: ignore[attr-defined]
    assert not issubclass(ServiceMemory, LocalMemory)


@pytest.fixture
def toy():
    sys.path.insert(0, str(TESTS))
    import toy_operation

    toy_operation.declare()
    yield toy_operation
    toy_operation.forget()
    sys.path.remove(str(TESTS))


def _serve_with_toy(workspace: Path, state_dir: Path) -> subprocess.Popen:
    """A real service process that declares the toy operation first, as a plug-in would."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import toy_operation; toy_operation.declare(); "
            "from openclaw_memory.cli.main import main; sys.exit(main(['serve', '--no-watch']))")
    return subprocess.Popen([sys.executable, "-c", code, str(TESTS)], cwd=workspace, env=env_for(workspace, state_dir),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_an_operation_declared_outside_the_package_is_reachable_from_every_front_end(toy, workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    settings = settings_for(workspace, state_dir)

    # the library, in this process
    memory = open_memory(settings, in_process=True)
    assert memory.echo("hi", times=2) == toy.Echo("hihi", "main", os.getpid())  # type: ignore[attr-defined]
    memory.close()

    # the CLI: its command, flags from the signature, help from the declaration, the JSON printed
    result = cli("echo", "hi", "--times", "3", "--shout")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "HIHIHI"
    assert "--times" in cli("echo", "--help").stdout and "In capitals." in cli("echo", "--help").stdout
    bad = cli("echo", "hi", "--times", "x")
    assert bad.returncode == 2 and "--times must be an integer" in bad.stderr

    # MCP: the tool listed with its schema, and called
    from openclaw_memory.mcp.server import MemoryTools, tool_specs

    tools = MemoryTools(open_memory(settings, in_process=True))
    spec = next(s for s in tool_specs(settings, tools) if s.name == "memory_echo")
    listing = spec.listing()
    assert listing["inputSchema"]["required"] == ["text"]
    assert listing["inputSchema"]["properties"]["times"] == {"type": "integer", "description": "How many times.", "default": 1}
    assert listing["annotations"]["readOnlyHint"] is True
    assert json.loads(spec.call(None, {"text": "ab", "times": 2}))["text"] == "abab"
    tools.close()

    # through the service: a real service process answers it
    service = _serve_with_toy(workspace, state_dir)
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(service.stderr), daemon=True).start()
    try:
        wait_for(lambda: any(line.startswith("serving ") for line in lines) or service.poll() is not None, 120)
        assert service.poll() is None, "".join(lines)
        through = open_memory(settings)
        assert isinstance(through, ServiceMemory)
        answer = through.echo("hey", shout=True)  # type: ignore[attr-defined]
        assert answer == toy.Echo("HEY", "main", service.pid) and through.connected
        through.close()
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(120)
