"""Doctor's record of the state database's last clean check (``database/checked.py``): an unchanged
database is not read whole again, and whatever changes it after that check (a page zeroed, a value
of the wrong type, a truncation) is found as before. Every command runs in its own process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from conftest import fault, settings_for, write
from openclaw_memory.database.checked import NAME, Sighting
from openclaw_memory.fsutil.fsclock import guard_ns

READ_WHOLE = "state-db:read-whole=kill"  # reached only where the database is read whole


def _db(workspace: Path, state_dir: Path) -> Path:
    return settings_for(workspace, state_dir).data_dir / "state.db"


def _past_the_guard(db: Path) -> None:
    """Wait until no file of the database changed within its file system's timestamp guard: a
    sighting sooner is racy, and no check of it is kept (the rule this waits out, not a timing)."""
    guard = guard_ns(db.parent)
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns)
                 for st in (os.lstat(p) for p in (db, Path(f"{db}-wal")) if os.path.lexists(p)))
    while time.time_ns() - guard <= newest:
        time.sleep(guard / 1e9)


def _kept(db: Path) -> dict | None:
    try:
        return json.loads((db.parent / NAME).read_bytes())
    except FileNotFoundError:
        return None


def _checked(cli_process, db: Path) -> None:
    """Doctor run until its record holds for the database as it is (the first run may store the
    links it parsed, which changes the database after its check)."""
    for _ in range(4):
        _past_the_guard(db)
        result = cli_process("doctor", "--json")
        assert result.returncode == 0, result.stdout + result.stderr
        seen = Sighting.of(str(db))
        record = _kept(db)
        if seen is not None and record is not None and record["files"] == seen.key:
            return
    raise AssertionError(f"no record of a clean check holds: {_kept(db)}")


@pytest.fixture
def checked(workspace, state_dir, cli_process) -> Path:
    """A state database with versions, checked clean and recorded so."""
    write(workspace / "MEMORY.md", "# Memory\n\n- likes tea\n")
    for i in range(3):
        assert cli_process("write", f"memory/note-{i}.md", "--append", f"line {i}", "--no-index").returncode == 0
    db = _db(workspace, state_dir)
    _checked(cli_process, db)
    return db


def test_an_unchanged_database_is_not_read_whole_again_and_a_changed_one_is(checked, cli_process):
    unchanged = cli_process("doctor", "--json", env=fault(READ_WHOLE))
    assert unchanged.returncode == 0, unchanged.stderr
    assert unchanged.json()["findings"] == []
    assert cli_process("write", "memory/one-more.md", "--append", "one more", "--no-index").returncode == 0
    changed = cli_process("doctor", "--json", env=fault(READ_WHOLE))
    assert changed.returncode == -signal.SIGKILL  # read whole: the database changed since its check


def _zero_a_page(db: Path) -> None:
    """The first leaf page of the version log zeroed in place (the file's size and inode kept)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ((page,),) = conn.execute("SELECT pageno FROM dbstat WHERE name = 'versions' AND pagetype = 'leaf' "
                              "ORDER BY pageno LIMIT 1").fetchall()
    ((page_size,),) = conn.execute("PRAGMA page_size").fetchall()
    conn.close()
    with open(db, "r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(b"\0" * page_size)


def _wrong_type(db: Path) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("UPDATE versions SET time = 'yesterday'")
    conn.close()


def _truncated(db: Path) -> None:
    os.truncate(db, db.stat().st_size // 2)


@pytest.mark.parametrize("damage", [_zero_a_page, _wrong_type, _truncated], ids=["page-zeroed", "wrong-type", "truncated"])
def test_damage_made_after_a_clean_check_was_recorded_is_found(checked, cli_process, damage):
    record = _kept(checked)
    damage(checked)
    result = cli_process("doctor", "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "state-db-damaged" in {f["id"] for f in result.json()["findings"]}, result.stdout
    assert _kept(checked) == record  # a database found damaged is no clean check to keep


@pytest.mark.parametrize("garbage", ["{not json", "[" * 1000 + "]" * 1000, '{"files":' + "[" * 995],
                         ids=["not-json", "nested-deep", "nested-unclosed"])
def test_a_record_of_other_files_or_one_that_does_not_parse_is_no_record(checked, cli_process, garbage):
    (checked.parent / NAME).write_text(garbage)
    assert cli_process("doctor", "--json", env=fault(READ_WHOLE)).returncode == -signal.SIGKILL
    for args in (("doctor", "--json"), ("doctor", "--fix", "--json")):  # neither crashes on it: both read the database
        result = cli_process(*args)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.json()["findings"] == []
    assert _kept(checked)["files"] == Sighting.of(str(checked)).key  # the record written again
    record = {"files": [[1, 2, 3, 4, 5], None], "counted": "0"}
    (checked.parent / NAME).write_text(json.dumps(record))
    assert cli_process("doctor", "--json", env=fault(READ_WHOLE)).returncode == -signal.SIGKILL
