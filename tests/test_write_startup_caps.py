"""A write that takes a startup file past what OpenClaw loads of it says so in its ``warnings``
(``write --json``, ``memory_write``): ``MEMORY.md`` or ``USER.md`` past 2 MiB is
``[UNREADABLE: ...]`` at the next session (as ``prompt`` and doctor's prompt-file-too-large say),
past bootstrapMaxChars (USER.md: its own cap) cut, a daily note of the days the session starts with
past startupContext.maxFileBytes left out. Before, each was a plain success."""

from __future__ import annotations

import datetime as dt
import json

from conftest import settings_for, write
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.prompt.loader import MAX_BOOTSTRAP_BYTES, UNREADABLE, memory_prompt
from openclaw_memory.wire import to_json


def _near(workspace, name: str, size: int) -> None:
    line = "- a remembered detail of the day, kept for later\n"
    text = "# Memory\n\n" + line * ((size - 10) // len(line))
    write(workspace / name, text + "x" * (size - len(text) - 1) + "\n")


def test_an_append_taking_memory_md_past_2_mib_warns_that_openclaw_cannot_read_it(workspace, state_dir):
    _near(workspace, "MEMORY.md", MAX_BOOTSTRAP_BYTES - 20)
    settings = settings_for(workspace, state_dir)
    memory = LocalMemory(settings)
    memory.read("MEMORY.md")
    under = memory.write("MEMORY.md", append="- small", update_index=False)  # still under: bootstrapMaxChars only
    assert not any("UNREADABLE" in w for w in under.warnings)
    over = memory.write("MEMORY.md", append="- the note that tips it over", update_index=False)
    assert over.size > MAX_BOOTSTRAP_BYTES
    warned = [w for w in over.warnings if UNREADABLE in w]
    assert len(warned) == 1, over.warnings
    assert "2,097,152 bytes" in warned[0] and "prompt-file-too-large" in warned[0]
    assert to_json(over)["warnings"] == list(over.warnings)
    again = memory.write("MEMORY.md", append="- the note that tips it over", update_index=False)  # a retry
    assert again.replay is not None and again.warnings == over.warnings
    # The prompt agrees: the file it warned of is the one the next session cannot read.
    assert [(r.path, r.reason) for r in memory_prompt(settings, consume=False).refused] == [("MEMORY.md", "too-large")]


def test_write_json_and_text_carry_the_warning(cli, workspace):
    _near(workspace, "MEMORY.md", MAX_BOOTSTRAP_BYTES - 5)
    assert cli("read", "MEMORY.md").returncode == 0
    done = cli("write", "MEMORY.md", "--append", "- one more detail", "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert any(UNREADABLE in w for w in json.loads(done.stdout)["warnings"])
    assert UNREADABLE in done.stderr  # said in text on stderr as well, as every result's warnings
    again = cli("write", "MEMORY.md", "--append", "- and another", "--no-index")
    assert again.returncode == 0 and UNREADABLE in again.stderr


def test_past_bootstrap_max_chars_is_truncated_not_unreadable(workspace, state_dir):
    settings = settings_for(workspace, state_dir)
    memory = LocalMemory(settings)
    write(workspace / "MEMORY.md", "# Memory\n\n" + "a" * 19_980 + "\n")
    memory.read("MEMORY.md")
    assert memory.write("MEMORY.md", append="- fits", update_index=False).warnings == ()
    cut = memory.write("MEMORY.md", append="- one detail too many", update_index=False).warnings
    assert len(cut) == 1 and "over the 20,000 characters" in cut[0] and "bootstrapMaxChars" in cut[0], cut
    assert "truncated" in cut[0] and "UNREADABLE" not in cut[0]
    assert [c.path for c in memory_prompt(settings, consume=False).truncated] == ["MEMORY.md"]
    # USER.md is cut at its own 4,000.
    write(workspace / "USER.md", "# User\n\n" + "b" * 3_980 + "\n")
    memory.read("USER.md")
    user = memory.write("USER.md", append="- prefers tea, and a long story about why", update_index=False).warnings
    assert len(user) == 1 and "over the 4,000 characters" in user[0] and "USER.md's own cap" in user[0], user
    # A note the prompt does not load is no startup file, whatever its size.
    write(workspace / "memory/topics/big.md", "c" * 30_000 + "\n")
    memory.read("memory/topics/big.md")
    assert memory.write("memory/topics/big.md", append="- more", update_index=False).warnings == ()


def test_a_daily_note_the_session_starts_with_past_max_file_bytes_is_said_to_be_left_out(workspace, state_dir):
    settings = settings_for(workspace, state_dir)
    memory = LocalMemory(settings)
    today = dt.datetime.now(dt.UTC).date().isoformat()
    for name in (f"memory/{today}.md", "memory/2020-01-01.md"):
        write(workspace / name, "- x\n" * 4_095)  # 16,380 bytes
        memory.read(name)
        assert memory.write(name, append="- y", update_index=False).warnings == ()  # 16,384: not over
        left = memory.write(name, append="- z", update_index=False).warnings
        if name == "memory/2020-01-01.md":  # not a day the session starts with
            assert left == ()
        else:
            assert len(left) == 1 and "startupContext.maxFileBytes (16,384)" in left[0] and "leaves it out" in left[0]
            assert f"{name} is left out of the startup prompt" in " ".join(memory_prompt(settings, consume=False).warnings)


def test_memory_write_carries_the_warning(workspace, state_dir):
    from test_mcp import payload, run_session

    _near(workspace, "MEMORY.md", MAX_BOOTSTRAP_BYTES - 5)

    async def script(session):
        await session.call_tool("memory_get", {"path": "MEMORY.md", "from": 1, "lines": 1})
        return await session.call_tool("memory_write", {"path": "MEMORY.md", "append": "- one more detail"})

    done = payload(run_session(workspace, state_dir, script))
    assert done["action"] == "append" and any(UNREADABLE in w for w in done["warnings"]), done
