"""The Python API's arguments, read at the one door by their declared types: in this process and
before a call goes to the workspace's service, each value is read as the service reads the socket's
JSON (:func:`openclaw_memory.wire.as_declared`). A value of another type is BadValue naming the
parameter, the same in both modes, and the service is never blamed for the caller's mistake (one
string where a tuple of strings goes was iterated one character at a time: ``paths="memory/*.md"``
matched every file by its ``*``). And :class:`~openclaw_memory.settings.Overrides`, checked where
settings are resolved (one string for ``extra`` made "/" an extra path: every .md on the host)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import pytest
from test_serve import start

from conftest import FAKE_MODEL, settings_for, write
from openclaw_memory.errors import BadValue

MEMORY_TEXT = "# Memory\n\nThe user's cat is called Pistachio.\n"

# (what is called, the parameter BadValue names, its problem)
REFUSED = [
    (lambda m: m.search("backup", paths="memory/*.md"), "paths", "must be an array, not 'memory/*.md'"),
    (lambda m: m.search("backup", collections="memory-dir-main"), "collections", "must be an array, not 'memory-dir-main'"),
    (lambda m: m.activity(origins="restore"), "origins", "must be an array, not 'restore'"),
    (lambda m: m.search("backup", paths=("memory/*.md", 3)), "paths", "item 2 must be a string, not 3"),
    (lambda m: m.read("MEMORY.md", lines=math.nan), "lines", "must be a whole number, not nan"),
    (lambda m: m.read("MEMORY.md", lines=math.inf), "lines", "must be a whole number, not inf"),
    (lambda m: m.read("MEMORY.md", from_line=1.5), "from_line", "must be a whole number, not 1.5"),
    (lambda m: m.read("MEMORY.md", lines=True), "lines", "must be a number, not True"),
    (lambda m: m.search(None), "query", "must be a string, not None"),
    (lambda m: m.search("backup", limit="3"), "limit", "must be a whole number, not '3'"),
    (lambda m: m.write("memory/a.md", append=3), "append", "must be bytes | str | None, not 3"),
    (lambda m: m.prompt(today="the day after"), "today", "must be a date (YYYY-MM-DD), not 'the day after'"),
    (lambda m: m.prompt(today=20261130), "today", "must be a date (YYYY-MM-DD), not 20261130"),
]


@pytest.fixture(params=["in-process", "service"])
def memory(request, workspace, state_dir, services):
    """The agent's memory in this process, or through a running service; and what it was told
    (``notice``: a service blamed)."""
    from openclaw_memory.memory import open_memory
    from openclaw_memory.memory.remote import ServiceMemory

    write(workspace / "MEMORY.md", MEMORY_TEXT)
    said: list[str] = []
    if request.param == "service":
        start(services, workspace, state_dir, "--no-watch")
    mem = open_memory(settings_for(workspace, state_dir), notice=said.append, in_process=request.param == "in-process")
    assert isinstance(mem, ServiceMemory) == (request.param == "service")
    yield mem, said
    mem.close()


@pytest.mark.parametrize("call, name, problem", REFUSED)
def test_an_argument_of_another_type_is_bad_value_in_both_modes(memory, call, name, problem):
    mem, said = memory
    with pytest.raises(BadValue) as refused:
        call(mem)
    assert (refused.value.name, refused.value.problem) == (name, problem)
    assert refused.value.message == f"{name} {problem}"  # the parameter a caller gave, not a flag of the CLI
    assert said == []  # nothing sent, so no service blamed ("arguments it cannot read ...; working in-process")
    assert getattr(mem, "connected", True)


def test_what_the_socket_reads_is_taken_alike_in_both_modes(memory, workspace):
    """A path as a Path, a list for a tuple, a date as its ISO day: taken as the service takes them."""
    from openclaw_memory.memory.remote import ServiceMemory

    mem, said = memory
    read = mem.read(Path("MEMORY.md"))
    assert (read.path, read.text) == ("MEMORY.md", MEMORY_TEXT.removesuffix("\n"))
    assert mem.read("MEMORY.md", from_line=3.0).text == MEMORY_TEXT.splitlines()[2]  # a whole float is a line number
    assert mem.activity(origins=["restore"], paths=[Path("memory/*.md")]).entries == ()
    assert "Pistachio" in mem.prompt(today="2026-11-30", consume=False).text
    assert "Pistachio" in mem.prompt(today=dt.date(2026, 11, 30), consume=False).text
    assert "Pistachio" in mem.prompt(today=dt.datetime(2026, 11, 30, 23, 59), consume=False).text  # its day
    assert said == []
    if isinstance(mem, ServiceMemory):
        assert mem.connected


def test_a_window_is_clamped_not_refused_for_openclaws_reader(workspace, state_dir):
    """``clamp`` (the MCP tool's memory_get) still takes a window as OpenClaw's reader does."""
    from openclaw_memory.memory import open_memory

    write(workspace / "MEMORY.md", MEMORY_TEXT)
    mem = open_memory(settings_for(workspace, state_dir), in_process=True)
    try:
        assert mem.read("MEMORY.md", from_line=1.5, lines=math.nan, clamp=True).text == MEMORY_TEXT.removesuffix("\n")
    finally:
        mem.close()


def _resolved(**given):
    from openclaw_memory.settings import Overrides, resolve_settings

    return resolve_settings(Overrides(**given), environ=dict(FAKE_MODEL))


@pytest.mark.parametrize("given, name, problem", [
    ({"extra": "/"}, "extra", "takes a sequence of paths (extra=[PATH]), not one string: '/'"),
    ({"extra": Path("/")}, "extra", "takes a sequence of paths (extra=[PATH]), not one value: PosixPath('/')"),
    ({"extra": ["notes", 3]}, "extra", "takes a path (a str or os.PathLike), not 3"),
    ({"extra": ["notes\0x"]}, "extra", "holds a NUL character, which no path can hold: 'notes\\x00x'"),
    ({"workspace": 3}, "workspace", "takes a path (a str or os.PathLike), not 3"),
    ({"state_dir": b"/tmp"}, "state_dir", "takes a path (a str or os.PathLike), not b'/tmp'"),
    ({"agent": 3}, "agent", "takes a str, not 3"),
    ({"multimodal": "yes"}, "multimodal", "takes True, False or None, not 'yes'"),
])
def test_overrides_of_another_type_are_bad_value(workspace, state_dir, given, name, problem):
    with pytest.raises(BadValue) as refused:
        _resolved(**{"workspace": str(workspace), "state_dir": str(state_dir), **given})
    assert (refused.value.name, refused.value.problem) == (name, problem)


def test_a_nul_in_the_workspace_is_bad_value(state_dir):
    with pytest.raises(BadValue) as refused:
        _resolved(workspace="/tmp/ws\0x", state_dir=str(state_dir))
    assert refused.value.name == "workspace" and refused.value.problem.startswith("holds a NUL character")


def test_overrides_take_a_path_as_any_path_like(workspace, state_dir):
    """A Path for the workspace, the state dir and each extra path (it was an AttributeError: .strip)."""
    (workspace / "notes").mkdir()
    settings = _resolved(workspace=workspace, state_dir=state_dir, extra=[workspace / "notes", "more"])
    assert (settings.workspace, settings.state_dir) == (workspace.resolve(), state_dir.resolve())
    assert [str(p) for p in settings.extra_paths] == [str(workspace.resolve() / "notes"), str(workspace.resolve() / "more")]
    assert settings.command_flags[-4:] == ("--extra", str(workspace / "notes"), "--extra", "more")
