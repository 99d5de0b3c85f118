"""A first run whose state database cannot be made (a full disk, a quota) leaves no 0-byte state.db:
before, the fallback made an empty file at state.db anyway, and with write.lock beside it every later
command refused it as "emptied: its history is gone" until ``doctor --fix``. What killed creations
leave under the private name (``.state.db.new-*``) is swept by the next creation."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path

import pytest

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


def _no_links(*args, **kwargs):
    raise OSError(errno.EPERM, "Operation not permitted")


def _made_in_place(m) -> list[str]:
    """The O_EXCL opens of state.db itself from now on (a creation in place)."""
    made, real_open = [], os.open

    def watched(path, flags, *args, **kwargs):
        if os.path.basename(os.fspath(path)) == "state.db" and flags & os.O_EXCL:
            made.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    m.setattr(os, "open", watched)
    return made


def test_without_hard_links_or_rename_noreplace_the_database_is_made_in_place_with_its_first_page(
        workspace, state_dir, cli, monkeypatch):
    from openclaw_memory.fsutil import move

    write(workspace / "MEMORY.md", "# Memory\n")
    with monkeypatch.context() as m:
        m.setattr(os, "link", _no_links)
        m.setattr(move, "rename_noreplace", lambda *args: False)
        made = _made_in_place(m)
        ok = cli("read", "MEMORY.md")
    assert ok.returncode == 0, ok.stderr
    assert made  # the in-place fallback ran
    data = _data_dir(state_dir)
    assert (data / "state.db").stat().st_size > 0
    assert not [n for n in os.listdir(data) if n.startswith(".state.db.new-")]


def test_without_hard_links_rename_noreplace_puts_the_whole_database_in_place(workspace, state_dir, cli, monkeypatch):
    """No hard links (vfat, exfat, some FUSE mounts) but RENAME_NOREPLACE: the database made under its
    private name is renamed into place, never over one made meanwhile; state.db is never an empty file
    (before, it was made in place, 0 bytes until its first page was written)."""
    import tempfile

    from openclaw_memory.fsutil.exchange import rename_noreplace

    with tempfile.TemporaryDirectory(dir=state_dir.parent) as probe:
        open(os.path.join(probe, "a"), "w").close()
        fd = os.open(probe, os.O_RDONLY)
        try:
            if not rename_noreplace(fd, "a", fd, "b"):
                pytest.skip("no RENAME_NOREPLACE on this file system")
        finally:
            os.close(fd)
    write(workspace / "MEMORY.md", "# Memory\n")
    with monkeypatch.context() as m:
        m.setattr(os, "link", _no_links)
        made = _made_in_place(m)
        ok = cli("read", "MEMORY.md")
    assert ok.returncode == 0, ok.stderr
    assert made == []
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
    stalled = data / ".state.db.new-4244-0badc0e0"
    for each in (old, Path(f"{old}-wal"), young, stalled):
        each.write_bytes(b"")
    long_ago = time.time() - 3600
    os.utime(old, (long_ago, long_ago))
    os.utime(f"{old}-wal", (long_ago, long_ago))
    minutes_ago = time.time() - 300  # older than the sweep's minute before, younger than doctor's ten minutes
    os.utime(stalled, (minutes_ago, minutes_ago))

    ok = cli("read", "MEMORY.md")
    assert ok.returncode == 0, ok.stderr
    left = sorted(n for n in os.listdir(data) if n.startswith(".state.db.new-"))
    assert left == [young.name, stalled.name]  # a creation that may still be running (or stalled) is left alone
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
