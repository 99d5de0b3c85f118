"""What a write is given that is not UTF-8: a text given as a string (--append, the tools' append and
content) holding bytes that are not UTF-8 (surrogate escapes) or lone surrogates is refused, as a NUL
is; a new file whose name is not UTF-8 (a write creating it, a move's destination) is refused, since
the index never takes it; a file already so named stays addressable. Content given as bytes
(--stdin, --replace-file) is written as given."""

from __future__ import annotations

import os

import pytest

from conftest import settings_for, write
from openclaw_memory.errors import PathRefused, UsageError
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.wire import to_json

MEMORY = "# Memory\n\n- the roof was fixed in May by Alvarez\n"
CAFE = os.fsdecode(b"caf\xe9")  # a command-line argument holding the Latin-1 byte 0xE9


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / "MEMORY.md", MEMORY)
    return settings_for(workspace, state_dir)


# -- the text -----------------------------------------------------------------------------------


def test_an_append_argument_that_is_not_utf8_is_refused_and_nothing_is_written(cli, workspace):
    write(workspace / "MEMORY.md", MEMORY)
    assert cli("read", "MEMORY.md").returncode == 0
    refused = cli("write", "MEMORY.md", "--append", f"- {CAFE} latin1")
    assert refused.returncode == 2, refused.stderr
    assert "refused: the text to append holds a byte that is not UTF-8 (0xE9) at byte 5" in refused.stderr
    assert "nothing was written" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert (workspace / "MEMORY.md").read_text() == MEMORY
    # Nothing of it kept: the same write in UTF-8 is a first write, not a replay.
    done = cli("write", "MEMORY.md", "--append", "- café latin1")
    assert done.returncode == 0 and "appended to MEMORY.md" in done.stdout, done.stderr
    assert (workspace / "MEMORY.md").read_text() == MEMORY + "- café latin1\n"


@pytest.mark.parametrize("mode", ["append", "content"])
@pytest.mark.parametrize("bad", ["\udce9", "\ud800", "\udfff"])
def test_a_tool_text_holding_a_lone_surrogate_is_refused(settings, workspace, mode, bad):
    memory = LocalMemory(settings)
    memory.read("MEMORY.md")
    text = f"- caf{bad} é\n" if mode == "append" else MEMORY + f"- caf{bad} é\n"
    with pytest.raises(UsageError) as refused:
        memory.write("MEMORY.md", **{mode: text})
    offset = len(text[: text.index(bad)].encode())
    what = "the text to append" if mode == "append" else "the new content"
    held = "a byte that is not UTF-8 (0xE9)" if bad == "\udce9" else f"a lone surrogate (U+{ord(bad):04X})"
    assert f"refused: {what} holds {held}" in refused.value.message
    assert f"at byte {offset}; " in refused.value.message and refused.value.exit_code == 2
    assert (workspace / "MEMORY.md").read_text() == MEMORY
    done = memory.write("MEMORY.md", append="- caf\u00e9\n")
    assert "replayed" not in to_json(done)


def test_content_given_as_bytes_is_written_as_given(cli, workspace, tmp_path):
    write(workspace / "MEMORY.md", MEMORY)
    assert cli("read", "MEMORY.md").returncode == 0
    given = write(tmp_path / "new.md", MEMORY.encode() + b"- caf\xe9\n")
    done = cli("write", "MEMORY.md", "--replace-file", str(given))
    assert done.returncode == 0, done.stderr
    assert (workspace / "MEMORY.md").read_bytes() == MEMORY.encode() + b"- caf\xe9\n"


# -- the name -----------------------------------------------------------------------------------


def test_a_write_creating_a_file_whose_name_is_not_utf8_is_refused(cli, workspace):
    refused = cli("write", f"memory/{CAFE}.md", "--append", "- note")
    assert refused.returncode == 2, refused.stderr
    assert "refused: memory/caf\\xe9.md: its name is not UTF-8 (the byte 0xE9)" in refused.stderr
    assert "nothing was written" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (workspace / "memory").exists()  # not even its folder
    refused = cli("write", f"memory/{CAFE}/a.md", "--append", "- note")  # a folder so named
    assert refused.returncode == 2 and "its name is not UTF-8" in refused.stderr, refused.stderr
    assert not (workspace / "memory").exists()


def test_a_file_already_named_so_stays_writable(cli, workspace, settings):
    named = write(workspace / "memory" / os.fsdecode(b"caf\xe9.md"), "# cafe\n")
    assert cli("read", f"memory/{CAFE}.md").returncode == 0
    done = cli("write", f"memory/{CAFE}.md", "--append", "- more")
    assert done.returncode == 0, done.stderr
    assert named.read_text() == "# cafe\n- more\n"
    with pytest.raises(PathRefused):  # created, not replaced: refused as the command line's
        LocalMemory(settings).write(f"memory/{CAFE}2.md", content="# new\n")


def test_a_move_to_a_name_that_is_not_utf8_is_refused(cli, workspace):
    write(workspace / "memory" / "a.md", "# a\n")
    refused = cli("mv", "memory/a.md", f"memory/{CAFE}.md")
    assert refused.returncode == 2, refused.stderr
    assert "refused: memory/caf\\xe9.md: its name is not UTF-8 (the byte 0xE9)" in refused.stderr
    assert "nothing was moved: memory/a.md is unchanged" in refused.stderr
    assert sorted(os.listdir(workspace / "memory")) == ["a.md"]
    # A file so named moves out to a UTF-8 name.
    write(workspace / "memory" / os.fsdecode(b"b\xe9.md"), "# b\n")
    assert cli("read", os.fsdecode(b"memory/b\xe9.md")).returncode == 0
    done = cli("mv", os.fsdecode(b"memory/b\xe9.md"), "memory/b.md")
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(workspace / "memory")) == ["a.md", "b.md"]
