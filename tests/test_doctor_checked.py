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

from conftest import fault, run_paused, settings_for, write
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


def _zeroed_mtime_put_back(db: Path) -> None:
    """A page zeroed in place, then the file's mtime put back (``touch -r``): only its ctime says so."""
    before = os.lstat(db)
    _zero_a_page(db)
    os.utime(db, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.lstat(db)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


@pytest.mark.parametrize("damage", [_zero_a_page, _wrong_type, _truncated, _zeroed_mtime_put_back],
                         ids=["page-zeroed", "wrong-type", "truncated", "page-zeroed-mtime-put-back"])
@pytest.mark.parametrize("wait", [False, True], ids=["at-once", "past-the-guard"])
def test_damage_made_after_a_clean_check_was_recorded_is_found(checked, cli_process, damage, wait):
    """At once the sighting is racy (no record vouches for it); past the guard the stat differs."""
    record = _kept(checked)
    damage(checked)
    if wait:
        _past_the_guard(checked)
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


def test_a_record_matching_a_racy_sighting_vouches_for_nothing(checked, cli_process):
    """A sighting within the timestamp guard may match a record whatever was written in that
    instant (a coarse clock): the database is read whole. Its mtime set a day ahead keeps it racy."""
    ahead = time.time_ns() + 86_400 * 10**9
    os.utime(checked, ns=(ahead, ahead))
    seen = Sighting.of(str(checked))
    assert seen is not None and seen.racy
    (checked.parent / NAME).write_text(json.dumps({"files": seen.key, "counted": _kept(checked)["counted"]}))
    assert cli_process("doctor", "--json", env=fault(READ_WHOLE)).returncode == -signal.SIGKILL


def test_no_record_is_kept_when_the_database_changed_between_its_check_and_the_keeping(
        checked, workspace, state_dir, cli_process):
    (checked.parent / NAME).unlink()

    def a_write() -> None:
        assert cli_process("write", "memory/meanwhile.md", "--append", "meanwhile", "--no-index").returncode == 0

    returncode, out, err = run_paused(workspace, state_dir, ("doctor", "--json"), "state-checked:keeping", a_write)
    assert returncode == 0, out + err
    assert _kept(checked) is None  # what that check read is not what the files hold now


def test_a_value_of_the_wrong_type_written_only_to_the_wal_is_found(checked, cli_process):
    """Frames a live connection holds in the -wal (it never checkpoints them): a record of the files
    with sound frames, then a wrong value committed into the -wal alone, state.db's stat unchanged.
    The record is written here as a user's doctor keeps it: root's never holds beside a live writer
    (SQLite run by root fchowns the -wal at every open, moving its ctime; docs/doctor.md)."""
    conn = sqlite3.connect(checked, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("UPDATE versions SET size = size + 1")  # frames in the -wal, the values as they were
        conn.execute("UPDATE versions SET size = size - 1")
        _past_the_guard(checked)
        seen = Sighting.of(str(checked))
        assert seen is not None and not seen.racy and seen.key[1] is not None
        (checked.parent / NAME).write_text(json.dumps({"files": seen.key, "counted": _kept(checked)["counted"]}))
        conn.execute("UPDATE versions SET time = 'yesterday'")
        assert Sighting.of(str(checked)).key[0] == seen.key[0]  # state.db itself unchanged
        _past_the_guard(checked)
        result = cli_process("doctor", "--json")
        assert result.returncode == 1, result.stdout + result.stderr
        assert "state-db-damaged" in {f["id"] for f in result.json()["findings"]}, result.stdout
    finally:
        conn.close()
