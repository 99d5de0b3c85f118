"""A first run whose state database cannot be made (a full disk, a quota) leaves no 0-byte state.db:
before, the fallback made an empty file at state.db anyway, and with write.lock beside it every later
command refused it as "emptied: its history is gone" until ``doctor --fix``. What killed creations
leave under the private name (``.state.db.new-*``) is swept by the next creation."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from conftest import write


def _data_dir(sd: Path) -> Path:
    (found,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return found


def test_a_first_creation_on_a_full_disk_leaves_no_state_db_and_the_next_run_works(workspace, state_dir, cli, monkeypatch):
    write(workspace / "MEMORY.md", "# Memory\n")
    real_open = os.open

    def full(path, *args, **kwargs):
        if os.path.basename(os.fspath(path)).startswith(".state.db.new-"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(os, "open", full)
        failed = cli("write", "memory/c.md", "--append", "- x", "--no-index")
    assert failed.returncode == 1, failed.stderr
    assert "the disk is full" in failed.stderr, failed.stderr
    assert not (_data_dir(state_dir) / "state.db").exists()  # nothing left to be taken for an emptied database

    ok = cli("write", "memory/c.md", "--append", "- x", "--no-index")
    assert ok.returncode == 0, ok.stderr
    assert (_data_dir(state_dir) / "state.db").stat().st_size > 0
    assert (workspace / "memory" / "c.md").read_text() == "- x\n"


def test_a_first_database_that_sqlite_cannot_write_leaves_no_0_byte_state_db(workspace, state_dir, cli, monkeypatch):
    import sqlite3

    write(workspace / "MEMORY.md", "# Memory\n")

    def full(*args, **kwargs):
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as m:
        m.setattr(sqlite3, "connect", full)
        failed = cli("write", "memory/c.md", "--append", "- x", "--no-index")
    assert failed.returncode == 1, failed.stderr
    assert "the disk is full" in failed.stderr, failed.stderr
    assert not (_data_dir(state_dir) / "state.db").exists()

    ok = cli("write", "memory/c.md", "--append", "- x", "--no-index")
    assert ok.returncode == 0, ok.stderr
    assert "emptied" not in ok.stderr


def test_without_hard_links_the_database_is_made_in_place_with_its_first_page(workspace, state_dir, cli, monkeypatch):
    write(workspace / "MEMORY.md", "# Memory\n")

    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, "Operation not permitted")

    with monkeypatch.context() as m:
        m.setattr(os, "link", no_links)
        ok = cli("read", "MEMORY.md")
    assert ok.returncode == 0, ok.stderr
    data = _data_dir(state_dir)
    assert (data / "state.db").stat().st_size > 0
    assert not [n for n in os.listdir(data) if n.startswith(".state.db.new-")]


def test_private_names_of_killed_creations_are_swept_by_the_next_creation(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    data = _data_dir(state_dir)
    for name in os.listdir(data):
        if name.startswith("state.db"):
            (data / name).unlink()  # a data dir whose database is still to be made
    old, young = data / ".state.db.new-4242-0badc0de", data / ".state.db.new-4243-0badc0df"
    for each in (old, Path(f"{old}-wal"), young):
        each.write_bytes(b"")
    long_ago = time.time() - 3600
    os.utime(old, (long_ago, long_ago))
    os.utime(f"{old}-wal", (long_ago, long_ago))

    ok = cli("read", "MEMORY.md")
    assert ok.returncode == 0, ok.stderr
    left = sorted(n for n in os.listdir(data) if n.startswith(".state.db.new-"))
    assert left == [young.name]  # a creation that may still be running is left alone
    assert (data / "state.db").stat().st_size > 0


def test_a_creation_in_place_killed_before_its_first_page_is_taken_as_new(workspace, state_dir, cli):
    """Without hard links the file is made in place: a kill before its first page was written leaves
    it 0 bytes beside write.lock, and the database made under the private name beside it. That is a
    creation cut short, not a database emptied after use: the next command makes it anew."""
    import sqlite3

    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    data = _data_dir(state_dir)
    for name in os.listdir(data):
        if name.startswith("state.db"):
            (data / name).unlink()
    made = data / ".state.db.new-4242-0badc0de"
    conn = sqlite3.connect(made)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.close()
    (data / "state.db").write_bytes(b"")
    assert (data / "write.lock").exists()

    ok = cli("read", "MEMORY.md")
    assert ok.returncode == 0 and "emptied" not in ok.stderr, ok.stderr
    assert cli("write", "MEMORY.md", "--append", "fact", "--no-index").returncode == 0
    assert (data / "state.db").stat().st_size > 0
