"""What a write is given, checked before anything is written: a NUL in its text, its path spelled
in any of the ways that name one file (for its idempotency key), a search citation where the file
goes. Real files, the CLI called in this process, and LocalMemory as the tools call it."""

from __future__ import annotations

import json

import pytest

from conftest import settings_for, write
from openclaw_memory.errors import NulInText, PathRefused, UsageError
from openclaw_memory.history.idempotency import IdempotencyStore, default_key
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.wire import to_json

MEMORY = "# Memory\n\n- the roof was fixed in May by Alvarez\n"


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / "MEMORY.md", MEMORY)
    return settings_for(workspace, state_dir)


# -- a NUL in the text ---------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["append", "content"])
def test_a_nul_in_the_text_of_a_write_is_refused_and_nothing_is_written(settings, workspace, mode):
    memory = LocalMemory(settings)
    memory.read("MEMORY.md")
    before = (workspace / "MEMORY.md").read_bytes()
    text = "- call Bob \u0000 tomorrow\n" if mode == "append" else MEMORY + "- call Bob \u0000 tomorrow\n"
    with pytest.raises(NulInText) as refused:
        memory.write("MEMORY.md", **{mode: text})
    offset = text.encode().index(b"\0")
    assert refused.value.fields() == {"mode": "append" if mode == "append" else "replace", "offset": str(offset)}
    assert refused.value.exit_code == 2 and isinstance(refused.value, UsageError)
    assert f"holds a NUL character (U+0000) at byte {offset}" in refused.value.message
    assert "nothing was written" in refused.value.message
    assert (workspace / "MEMORY.md").read_bytes() == before
    # Nothing of it kept: the same write without the NUL is a first write, not a replay.
    done = memory.write("MEMORY.md", append="- call Bob tomorrow")
    assert "replayed" not in to_json(done) and b"\0" not in (workspace / "MEMORY.md").read_bytes()


def test_a_nul_in_a_new_file_or_from_stdin_is_refused_on_the_command_line(cli, workspace):
    refused = cli("write", "memory/new.md", "--append", "a\u0000b")
    assert refused.returncode == 2 and "the text to append holds a NUL character (U+0000) at byte 1" in refused.stderr
    assert not (workspace / "memory" / "new.md").exists()
    write(workspace / "MEMORY.md", MEMORY)
    assert cli("read", "MEMORY.md").returncode == 0
    refused = cli("write", "MEMORY.md", "--stdin", input=MEMORY + "x\u0000\n")
    assert refused.returncode == 2 and f"the new content holds a NUL character (U+0000) at byte {len(MEMORY) + 1}" in \
        refused.stderr, refused.stderr
    assert (workspace / "MEMORY.md").read_text() == MEMORY


def test_a_restore_of_a_version_holding_a_nul_is_not_refused(cli, workspace):
    """A restore puts back bytes the history holds: what the file held, NUL or not."""
    write(workspace / "MEMORY.md", b"# Memory\n\x00kept\n")
    assert cli("history", "MEMORY.md").returncode == 0  # the history sees that version
    held = cli("read", "MEMORY.md", "--json")
    assert held.returncode == 0
    version = json.loads(held.stdout)["version"]
    write(workspace / "MEMORY.md", MEMORY)
    restored = cli("restore", "MEMORY.md", version[:12])
    assert restored.returncode == 0, restored.stderr
    assert (workspace / "MEMORY.md").read_bytes() == b"# Memory\n\x00kept\n"


# -- the idempotency key names the file, not the spelling -----------------------------------------


@pytest.mark.parametrize("spelling", ["./memory/2026-12-06.md", "{ws}/memory/2026-12-06.md", "memory/2026-12-06.md ",
                                      "memory//2026-12-06.md"])
def test_a_retry_naming_the_file_another_way_is_replayed(settings, workspace, spelling):
    first = LocalMemory(settings).write("memory/2026-12-06.md", append="- bought milk")
    again = LocalMemory(settings).write(spelling.format(ws=workspace), append="- bought milk")
    assert to_json(again)["replayed"] is True and again.path == first.path == "memory/2026-12-06.md"
    assert (workspace / "memory" / "2026-12-06.md").read_text() == "- bought milk\n"


def test_a_retry_by_the_abs_path_the_write_answered_is_replayed_with_an_explicit_key(settings, workspace):
    first = LocalMemory(settings).write("memory/2026-12-07.md", append="- x", idempotency_key="retry-1")
    again = LocalMemory(settings).write(first.abs_path, append="- x", idempotency_key="retry-1")
    assert to_json(again)["replayed"] is True
    assert (workspace / "memory" / "2026-12-07.md").read_text() == "- x\n"
    # Another file with that key is still refused, naming the file as the first write did.
    with pytest.raises(UsageError, match="'retry-1' was first used for an append of memory/2026-12-07.md; this write "
                                         "differs in its path"):
        LocalMemory(settings).write("memory/2026-12-08.md", append="- x", idempotency_key="retry-1")


def test_the_key_of_the_common_spelling_is_the_one_earlier_releases_recorded(settings, workspace):
    """A key recorded before this change (made of the path as sent, which was the display path) still replays."""
    LocalMemory(settings).read("MEMORY.md")
    first = LocalMemory(settings).write("MEMORY.md", append="- a fact")
    keys = IdempotencyStore(settings.data_dir, settings.agent, settings.session)
    assert keys.get(default_key(settings.agent, "write", "MEMORY.md", "append", b"- a fact", settings.session)) is not None
    assert first.path == "MEMORY.md"


# -- a search citation where the file goes ------------------------------------------------------


@pytest.mark.parametrize("cited, note", [("memory/l.md#L1", "memory/l.md"), ("MEMORY.md#L1-L2", "MEMORY.md"),
                                         ("memory/l.md#l2-l3", "memory/l.md")])
def test_a_citation_given_to_write_or_links_says_to_give_the_file(settings, workspace, cli, cited, note):
    write(workspace / "memory" / "l.md", "a\nb\nc\n")
    said = f"refused: {cited} is a search citation, which names lines of {note}; give the file: {note}"
    with pytest.raises(PathRefused) as refused:
        LocalMemory(settings).write(cited, append="x")
    assert refused.value.message == said
    for args in (("write", cited, "--append", "x"), ("links", cited), ("history", cited)):
        out = cli(*args)
        assert out.returncode == 2 and said in out.stderr, (args, out.stderr)
    assert (workspace / "memory" / "l.md").read_text() == "a\nb\nc\n"
    assert cli("read", "memory/l.md#L2").stdout.startswith("b\n\n[More content")  # read still takes a citation


def test_a_note_with_another_fragment_is_still_not_a_markdown_file(settings, workspace):
    with pytest.raises(PathRefused, match="is not a Markdown"):
        LocalMemory(settings).write("memory/l.md#x", append="x")


# -- a write with neither text nor content ---------------------------------------------------------


@pytest.mark.parametrize("tool", ["write", "memory_write"])
def test_a_write_with_neither_text_nor_content_is_refused_after_an_empty_content_write(settings, workspace, tool):
    """The mode and body (replace, b"") and the default key were made before the argument check:
    after a `content: ""` write, the same call with neither was a replay of it (isError false)."""
    memory = LocalMemory(settings)
    emptied = memory.write("memory/empty.md", content="", tool=tool)
    assert emptied.created and (workspace / "memory/empty.md").read_bytes() == b""
    for neither in ({}, {"append": None}, {"content": None, "append": None}):
        with pytest.raises(UsageError, match="give exactly one of: text to append, or the new content"):
            memory.write("memory/empty.md", tool=tool, **neither)
    with pytest.raises(UsageError, match="give exactly one of"):
        memory.write("memory/empty.md", content="", append="x", tool=tool)
    assert (workspace / "memory/empty.md").read_bytes() == b""


def test_the_command_line_write_with_no_text_is_refused_after_an_empty_write(cli, workspace, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert cli("write", "memory/empty.md", "--replace-file", str(empty)).returncode == 0
    refused = cli("write", "memory/empty.md")
    assert refused.returncode == 2 and "give exactly one of" in refused.stderr
    refused = cli("write", "memory/empty.md", "--json")
    assert refused.returncode == 2 and "replayed" not in refused.stdout


@pytest.mark.parametrize(("value", "said"), [
    ("-", "--replace-file reads a file, not standard input: pipe the content in with --stdin (./- for a file named -)"),
    ("", "the file name given with --replace-file is empty; give one (an empty value does not empty the note: "
         "give an empty file for that)"),
    (" ", "the file name given with --replace-file is empty; give one"),
], ids=["dash", "empty", "blank"])
def test_replace_file_of_a_dash_or_an_empty_value_says_what_to_give(cli, workspace, value, said):
    """Both were "cannot read --replace-file -: No such file or directory", as if a file had been
    looked for; export and import say what to give instead, every other empty value that it is."""
    write(workspace / "MEMORY.md", MEMORY)
    assert cli("read", "MEMORY.md").returncode == 0
    refused = cli("write", "MEMORY.md", "--replace-file", value)
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: {said}"), refused.stderr
    assert "No such file" not in refused.stderr
    assert (workspace / "MEMORY.md").read_text() == MEMORY
    write(workspace / "-", "# Memory\n\n- a file named -\n")  # ./- names it
    assert cli("write", "MEMORY.md", "--replace-file", "./-").returncode == 0
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\n- a file named -\n"


@pytest.mark.parametrize("text", ["\n", "\r\n", "\r", "\n\r\n\r", ""])
def test_an_append_of_only_line_breaks_is_refused_as_empty(settings, workspace, text):
    memory = LocalMemory(settings)
    memory.read("MEMORY.md")
    with pytest.raises(UsageError, match="nothing to append: the text is empty"):
        memory.write("MEMORY.md", append=text)
    assert (workspace / "MEMORY.md").read_text() == MEMORY
