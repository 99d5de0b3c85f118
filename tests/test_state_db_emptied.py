"""A state database emptied to 0 bytes (a crash's zero-length file, a bad copy) in a data dir that was
in use is damage, never a new database: every command says so in one line, plain ``doctor`` finds it
(``state-db-damaged``) and ``doctor --fix`` sets the empty file aside under ``damaged/``. Before, the
first opener made the schema in it: ``log`` said "No recorded version matches.", ``restore --last``
blamed a moved workspace and doctor said "No problems found."

The rule: this release never makes a 0-byte state.db (a new one is put in place with its first page
written), so a 0-byte one beside anything else in the data dir was emptied; a 0-byte state.db alone (a
crash while an earlier release made it on the first run) is a new one."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import write


def _data_dir(sd: Path) -> Path:
    (found,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return found


def _ok(result) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr


def _findings(cli_process) -> set[str]:
    plain = cli_process("doctor", "--json")
    assert "Traceback" not in plain.stderr, plain.stderr
    return {f["id"] for f in plain.json()["findings"] if f["severity"] != "info"}


def test_an_emptied_state_db_is_damage_said_by_every_command_and_set_aside_by_fix(workspace, state_dir, cli, cli_process):
    from openclaw_memory.database import forget_connections

    write(workspace / "MEMORY.md", "# Memory\n")
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "fact one", "--no-index"),
                 ("write", "memory/a.md", "--append", "a note", "--no-index"), ("rm", "memory/a.md")):
        _ok(cli(*args))
    forget_connections()
    db = _data_dir(state_dir) / "state.db"
    assert db.stat().st_size > 0
    os.truncate(db, 0)

    for args in (("log",), ("restore", "memory/a.md", "--last"), ("history", "MEMORY.md"),
                 ("write", "MEMORY.md", "--append", "fact two", "--no-index")):
        refused = cli_process(*args)
        assert "Traceback" not in refused.stderr, refused.stderr
        assert refused.returncode == 1, (args, refused.stdout, refused.stderr)
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "was emptied (0 bytes)" in refused.stderr and "doctor --fix" in refused.stderr, refused.stderr
        assert "moved or renamed" not in refused.stderr, refused.stderr
    assert db.stat().st_size == 0  # never reused as a new database
    assert (workspace / "MEMORY.md").read_text() == "# Memory\nfact one\n"

    plain = cli_process("doctor", "--json")
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "state-db-damaged"]
    assert "emptied" in finding["message"] and str(db) in finding["message"], finding
    assert db.stat().st_size == 0  # plain doctor writes nothing

    fixed = cli_process("doctor", "--fix", "--json")
    _ok(fixed)
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "done" and "emptied (0 bytes)" in repair["detail"], repair
    assert "the table is missing" not in repair["detail"], repair
    (aside,) = (_data_dir(state_dir) / "damaged").glob("*/state.db")
    assert aside.stat().st_size == 0  # kept, as other damaged databases are
    assert _findings(cli_process) == set()
    _ok(cli_process("read", "MEMORY.md"))
    _ok(cli_process("write", "MEMORY.md", "--append", "fact two", "--no-index"))
    logged = cli_process("history", "MEMORY.md", "--json")
    _ok(logged)
    assert len(logged.json()["versions"]) >= 1


def test_a_new_data_dir_never_holds_a_0_byte_state_db_and_works_at_once(workspace, state_dir, cli_process):
    write(workspace / "MEMORY.md", "# Memory\n")
    _ok(cli_process("read", "MEMORY.md"))
    data = _data_dir(state_dir)
    assert (data / "state.db").stat().st_size > 0
    assert not [n for n in os.listdir(data) if n.startswith(".state.db.new-")]  # the private name is gone
    assert _findings(cli_process) == set()


def test_a_0_byte_state_db_alone_is_a_first_run_cut_short_and_taken_as_new(workspace, state_dir, cli_process):
    """An earlier release killed while it made the file on the first run left it 0 bytes, nothing beside it."""
    write(workspace / "MEMORY.md", "# Memory\n")
    _ok(cli_process("read", "MEMORY.md"))
    data = _data_dir(state_dir)
    for name in os.listdir(data):
        if name != "state.db":
            (data / name).unlink()
    os.truncate(data / "state.db", 0)
    assert _findings(cli_process) == set()
    _ok(cli_process("read", "MEMORY.md"))
    _ok(cli_process("write", "MEMORY.md", "--append", "fact", "--no-index"))
    assert (data / "state.db").stat().st_size > 0


def test_a_state_db_cut_to_one_byte_is_emptied_too(workspace, state_dir, cli, cli_process):
    """SQLite takes a file shorter than its header for an empty database: `truncate -s 1` after three
    writes left a history of one external edit, and doctor found no problem."""
    from openclaw_memory.database import forget_connections

    write(workspace / "MEMORY.md", "# Memory\n")
    _ok(cli("read", "MEMORY.md"))
    for i in range(3):
        _ok(cli("write", "MEMORY.md", "--append", f"fact {i}", "--no-index"))
    forget_connections()
    db = _data_dir(state_dir) / "state.db"
    os.truncate(db, 1)
    refused = cli_process("history", "MEMORY.md")
    assert refused.returncode == 1 and "was emptied (cut to 1 byte" in refused.stderr, refused.stderr
    assert "doctor --fix" in refused.stderr
    assert db.stat().st_size == 1  # never reused as a new database
    plain = cli_process("doctor", "--json")
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "state-db-damaged"]
    assert "is cut to 1 byte, less than a database's header" in finding["message"], finding  # (it said "is 0 bytes")
    fixed = cli_process("doctor", "--fix", "--json")
    _ok(fixed)
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "done" and "emptied (cut to 1 byte" in repair["detail"], repair
    (aside,) = (_data_dir(state_dir) / "damaged").glob("*/state.db")
    assert aside.stat().st_size == 1
    _ok(cli_process("read", "MEMORY.md"))
    _ok(cli_process("write", "MEMORY.md", "--append", "fact again", "--no-index"))
