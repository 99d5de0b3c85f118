"""The state database closed to its user: its mode taken away (chmod 000), or another user's (a
command once run with sudo). Run as a real other user (uid 65534, in a forked child), under a
``mkdtemp`` folder made 0755: pytest's own temporary folders are 0700, where that user reaches
nothing and every check would pass whatever the product did. Each case has its control: the user
reads the workspace's MEMORY.md beside it."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path

import pytest
from test_private_state import NOBODY, as_nobody

from conftest import env_for, run_in_process, settings_for, write

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534)")


def _cli(base: Path, *args: str) -> dict:
    """``openclaw-memory ARGS`` in this process, as uid 65534."""
    ws, sd = base / "ws", base / "state"
    return as_nobody(lambda: dataclasses.asdict(run_in_process(args, env=env_for(ws, sd), cwd=ws)))


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> None:
    """Every module the commands import, imported here first: the child acting as uid 65534 may
    not reach the interpreter's own library folder (under /root) to import one."""
    folder = tmp_path_factory.mktemp("warm")
    ws, sd = folder / "ws", folder / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "x", "--no-index"), ("history", "MEMORY.md", "--json"),
                 ("doctor", "--json"), ("doctor", "--fix", "--json")):
        run_in_process(args, env=env_for(ws, sd), cwd=ws)


@pytest.fixture
def db(base: Path, warm) -> Path:
    """A workspace and state dir of uid 65534's, with three versions of MEMORY.md in the history."""
    write(base / "ws" / "MEMORY.md", "# Memory\n")
    for path in (base / "ws", base / "ws" / "MEMORY.md"):
        os.chown(path, NOBODY, NOBODY)
    (base / "state").mkdir(mode=0o700)
    os.chown(base / "state", NOBODY, NOBODY)
    for line in ("one", "two"):
        read = _cli(base, "read", "MEMORY.md")
        assert read["returncode"] == 0, read["stderr"]
        done = _cli(base, "write", "MEMORY.md", "--append", line, "--no-index")
        assert done["returncode"] == 0, done["stderr"]
    path = settings_for(base / "ws", base / "state").data_dir / "state.db"
    assert path.stat().st_uid == NOBODY
    return path


def _versions(base: Path) -> int:
    listed = _cli(base, "history", "MEMORY.md", "--json")
    assert listed["returncode"] == 0, listed["stderr"]
    return len(json.loads(listed["stdout"])["versions"])


def test_its_own_database_chmod_000_is_named_by_doctor_and_given_0600_back(base, db):
    """SQLite said "unable to open database file": every command refused "(is the state dir
    writable?)", which it was, and doctor too."""
    os.chmod(db, 0)
    assert as_nobody(lambda: (base / "ws" / "MEMORY.md").read_text()).startswith("# Memory")  # the control

    plain = _cli(base, "doctor", "--json")

    assert plain["returncode"] == 1, plain["stderr"]
    assert "Traceback" not in plain["stderr"]
    (finding,) = [f for f in json.loads(plain["stdout"])["findings"] if f["id"] == "state-db-closed"]
    assert finding["fixable"] and finding["paths"] == [str(db)]
    assert stat.S_IMODE(db.stat().st_mode) == 0  # plain doctor changes nothing

    fixed = _cli(base, "doctor", "--fix", "--json")

    assert fixed["returncode"] == 0, fixed["stdout"]  # (its repair, or its first open of the database, gave it back)
    assert not [f for f in json.loads(fixed["stdout"])["remaining"] if f["id"] == "state-db-closed"]
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert _versions(base) == 3
    # And a command that meets it gives the mode back itself.
    os.chmod(db, 0)
    assert _versions(base) == 3
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_another_users_database_is_one_line_saying_whose_it_is_and_doctor_names_it(base, db):
    os.chown(db, 0, 0)  # a command once run with sudo
    assert as_nobody(lambda: (base / "ws" / "MEMORY.md").read_text()).startswith("# Memory")  # the control

    refused = _cli(base, "history", "MEMORY.md")
    plain = _cli(base, "doctor", "--json")

    lines = refused["stderr"].strip().splitlines()
    assert refused["returncode"] == 2 and len(lines) == 1, refused["stderr"]
    assert "owner uid 0" in lines[0] and "chown" in lines[0], lines
    assert plain["returncode"] == 1, plain["stderr"]
    (finding,) = [f for f in json.loads(plain["stdout"])["findings"] if f["id"] == "state-db-closed"]
    assert not finding["fixable"] and "chown" in finding["message"]
    assert db.stat().st_uid == 0  # another user's file is never changed
    os.chown(db, NOBODY, NOBODY)
    assert _versions(base) == 3


@pytest.mark.parametrize("how", ["chmod 000", "root's"])
def test_a_lock_file_closed_to_its_user_is_named_by_doctor_and_set_aside_by_the_next_writer(base, db, how):
    """Every write refused "cannot take the lock ... Permission denied (is the state dir writable?)"."""
    lock = db.parent / "write.lock"
    if how == "chmod 000":
        os.chmod(lock, 0)
    else:
        os.chown(lock, 0, 0)
    assert as_nobody(lambda: (base / "ws" / "MEMORY.md").read_text()).startswith("# Memory")  # the control

    plain = _cli(base, "doctor", "--json")

    assert plain["returncode"] == 1, plain["stderr"]
    (finding,) = [f for f in json.loads(plain["stdout"])["findings"] if f["id"] == "lock-not-a-file"]
    assert finding["paths"] == [str(lock)] and "cannot open" in finding["message"]

    written = _cli(base, "write", "memory/new.md", "--append", "a new line", "--no-index")

    assert written["returncode"] == 0, written["stderr"]
    (kept,) = (db.parent / "damaged").glob("*/write.lock")  # set aside, never deleted
    assert lock.stat().st_uid == NOBODY and stat.S_IMODE(lock.stat().st_mode) == 0o600
    assert kept.stat().st_uid == (NOBODY if how == "chmod 000" else 0)
