"""docs/guarantees.md, *The state database*, *Durability*: readers never wait for a writer; a writer
waits up to 10 s for another, then says the database is busy (exit 2), having changed nothing. The
other writer is a real process holding SQLite's write lock on ``state.db``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import settings_for, wait_for_line, write

HOLD = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@pytest.mark.slow
def test_a_writer_held_off_past_the_timeout_says_busy_and_changes_nothing_and_readers_do_not_wait(
        cli, cli_process, workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\n- tea\n")
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "- coffee").returncode == 0
    logged = cli("log", "--json").json()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(settings_for(workspace, state_dir).data_dir / "state.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        wait_for_line(holder.stdout, "holding")
        listed = cli_process("log", "--json")  # a reader that waited would be refused as busy after 10 s
        assert listed.returncode == 0 and listed.json() == logged, listed.stderr
        held_off = cli_process("write", "MEMORY.md", "--append", "- juice")
        assert held_off.returncode == 2, (held_off.returncode, held_off.stderr)
        said = held_off.stderr.strip()
        assert "is busy" in said and "nothing was changed" in said and len(said.splitlines()) == 1, said
        assert (workspace / "MEMORY.md").read_text() == "# Memory\n\n- tea\n- coffee\n"
    finally:
        holder.communicate("")
    assert cli("log", "--json").json() == logged  # no version, no key, no record: nothing was changed
    assert cli("write", "MEMORY.md", "--append", "- juice").returncode == 0  # the lock gone, the write goes through
