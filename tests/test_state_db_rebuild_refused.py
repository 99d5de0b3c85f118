"""`doctor --fix` whose rebuild of a damaged state database cannot be done: refused (``damaged/``
belongs to another user), or out of space (or inodes) at any step, on a real full tmpfs. The
repair fails saying why, with the rest of the report; the damaged files are where they were, byte
for byte; nothing of the rebuild is left (no scratch folder, no record: a record left locked every
command out as "a rebuild ... was interrupted"); once the cause is gone, ``doctor --fix`` rebuilds.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from conftest import CliResult, fill_disk, fill_inodes, run_paused, tmpfs, write


def _data_dir(state_dir: Path) -> Path:
    (found,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    return found


def _damaged(workspace: Path, run) -> Path:
    """A history and a watchdog baseline, then one page of the state database overwritten; the data dir."""
    write(workspace / "MEMORY.md", "# Memory\n- fact\n")
    assert run("watchdog", "snapshot").returncode == 0
    assert run("history", "MEMORY.md").returncode == 0
    data_dir = _data_dir(run.state_dir)
    conn = sqlite3.connect(data_dir / "state.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # (every page in the file: this process keeps its connection)
    conn.close()
    with open(data_dir / "state.db", "r+b") as fh:
        fh.seek(4096 * 20)
        fh.write(b"\xff" * 4096)
    found = run("doctor", "--json")  # (doctor's own files made before the listing is taken)
    assert "state-db-damaged" in {f["id"] for f in found.json()["findings"]}, found.stdout
    return data_dir


def _files(data_dir: Path) -> dict[str, bytes | None]:
    """Every path under the data dir, with the bytes of the state database and its WAL."""
    from openclaw_memory.database.connection import forget_connections

    forget_connections()  # (this process's connections closed, as a command's are when it ends)
    found: dict[str, bytes | None] = {}
    for path in sorted(data_dir.rglob("*")):
        rel = str(path.relative_to(data_dir))
        if rel in ("doctor.lock", "state.db-shm"):  # (doctor --fix's own lock; SQLite's index, any reader's)
            continue
        if rel == "state.db-wal" and not path.stat().st_size:
            continue  # (an empty WAL is none: a reader's, left by its read-only connection)
        found[rel] = path.read_bytes() if rel in ("state.db", "state.db-wal") else None
    return found


def _runner(cli, state_dir: Path):
    def run(*args: str):
        return cli(*args, env={"OPENCLAW_STATE_DIR": str(state_dir)})

    run.state_dir = state_dir  # type: ignore[attr-defined]
    return run


def _failed_cleanly(fixed, data_dir: Path, before: dict[str, bytes | None], says: str) -> None:
    """The rebuild failed saying ``says`` within the doctor report; nothing of it is left."""
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    report = fixed.json()
    (repair,) = [r for r in report["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "failed" and says in repair["detail"], repair
    assert "state-db-damaged" in {f["id"] for f in report["remaining"]}, report
    assert _files(data_dir) == before, sorted(set(_files(data_dir)) ^ set(before))
    assert not list(data_dir.glob(".rebuild-*")) and not (data_dir / "state.db.rebuild").exists()


def _usable_after(run, data_dir: Path) -> None:
    """Commands are not locked out; with the cause gone, --fix rebuilds."""
    history = run("history", "MEMORY.md")
    assert history.returncode == 0 and "interrupted" not in history.stderr, history.stdout + history.stderr
    verify = run("watchdog", "verify")
    assert "interrupted" not in verify.stdout + verify.stderr, verify.stdout + verify.stderr


def test_a_rebuild_refused_by_a_damaged_folder_of_another_user_leaves_nothing_behind(workspace, state_dir, cli):
    if os.geteuid() != 0:
        pytest.skip("giving damaged/ to another user needs root")
    run = _runner(cli, state_dir)
    data_dir = _damaged(workspace, run)
    (data_dir / "damaged").mkdir()
    os.chown(data_dir / "damaged", 12345, 12345)
    history = run("history", "MEMORY.md")
    assert history.returncode == 0, history.stderr
    before = _files(data_dir)

    for _ in range(2):  # (the second found no record of the first to sweep, and leaves none either)
        fixed = run("doctor", "--fix", "--yes", "--json")
        _failed_cleanly(fixed, data_dir, before, "belongs to uid 12345")
    again = run("history", "MEMORY.md")
    assert again.returncode == 0 and again.stdout == history.stdout, again.stdout + again.stderr
    _usable_after(run, data_dir)

    os.chown(data_dir / "damaged", os.getuid(), os.getgid())
    fixed = run("doctor", "--fix", "--yes", "--json")
    assert fixed.returncode == 0 and fixed.json()["repairs"][0]["status"] == "done", fixed.stdout


@pytest.mark.parametrize(("step", "lacking"), [("before", "space"), ("commit", "space"), ("building", "space"), ("built", "space"),
                                               ("building", "inodes"), ("built", "inodes")])
def test_a_rebuild_out_of_space_says_so_and_leaves_nothing_behind(workspace, tmp_path, cli, step, lacking):
    """``before``: the disk has room for the check but not the rebuild; ``commit``: for the copy of
    the damaged file but not the new database (it failed at its COMMIT, said as "the state database
    is damaged ... run doctor --fix", the report gone); else the disk fills (its blocks, or its inodes) at that step of the rebuild: after its
    scratch folder is made (the copy), after the new database is complete (the folder under
    damaged/, the record naming it)."""
    with tmpfs(tmp_path / "st", "4m", inodes=400) as st:
        run = _runner(cli, st)
        data_dir = _damaged(workspace, run)
        before = _files(data_dir)

        def fill() -> None:
            (fill_disk if lacking == "space" else fill_inodes)(st)

        if step in ("before", "commit"):  # (commit: room for the copy, not for the new database)
            vfs = os.statvfs(st)
            left = (data_dir / "state.db").stat().st_size + (96 << 10) if step == "commit" else 400 << 10
            with open(st / "filler", "wb") as fh:
                fh.write(b"\0" * (vfs.f_bfree * vfs.f_frsize - left))
            fixed = run("doctor", "--fix", "--yes", "--json")
        else:
            code, out, err = run_paused(workspace, st, ("doctor", "--fix", "--yes", "--json"),
                                        f"state-db-rebuild:{step}", fill)
            fixed = CliResult(code, out, err)
        says = "the disk is full" if lacking == "space" else "no inode is left"
        _failed_cleanly(fixed, data_dir, before, says)
        assert "nothing of the rebuild is left behind" in fixed.json()["repairs"][0]["detail"]
        if step in ("before", "commit"):
            assert "up to about" in fixed.json()["repairs"][0]["detail"]
        _usable_after(run, data_dir)

        for filler in st.iterdir():
            if filler.name == "filler" or filler.name.startswith("inode-filler-"):
                filler.unlink()
        fixed = run("doctor", "--fix", "--yes", "--json")
        assert fixed.returncode == 0 and fixed.json()["repairs"][0]["status"] == "done", fixed.stdout
        assert not list(data_dir.glob(".rebuild-*")) and not (data_dir / "state.db.rebuild").exists()


def test_a_failure_to_keep_the_damaged_file_aside_puts_everything_back(workspace, state_dir, cli, monkeypatch):
    """The damaged file's copy under damaged/ (where the file system has no hard links) on a full
    disk: the new database is complete and the record names where the damaged files go; they are
    put back (its WAL moved back beside it) and the rebuild undone, not left for every command to
    refuse until there is room."""
    import openclaw_memory.database.repair as repair

    run = _runner(cli, state_dir)
    data_dir = _damaged(workspace, run)
    _files(data_dir)  # (this process's connections closed first: the last one removes its WAL)
    (data_dir / "state.db-wal").write_bytes(bytes(32))  # a WAL beside it (one SQLite reads as empty)
    before = _files(data_dir)
    assert "state.db-wal" in before

    def full(path: str, kept: Path) -> None:
        os.rename(path + "-wal", f"{kept}-wal")  # (as if its WAL had gone aside first)
        with open(f"{kept.parent}/.{kept.name}.copy", "wb") as fh:
            fh.write(b"SQLite format 3\0")  # a copy cut short
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(repair, "_keep", full)
    fixed = run("doctor", "--fix", "--yes", "--json")
    _failed_cleanly(fixed, data_dir, before, "the disk is full")
    monkeypatch.undo()
    history = run("history", "MEMORY.md")  # (refused for its WAL, as before: not for a rebuild left half done)
    assert "write-ahead log" in history.stderr and "interrupted" not in history.stderr, history.stderr
    fixed = run("doctor", "--fix", "--yes", "--json")
    assert fixed.returncode == 0 and fixed.json()["repairs"][0]["status"] == "done", fixed.stdout


def test_sqlite_out_of_space_is_never_said_as_the_damage(workspace, state_dir, cli, monkeypatch):
    """A failure no layer worded, SQLite's "database or disk is full", where the state database is
    damaged: said as a full disk, not as the damage ("run doctor --fix" from doctor --fix)."""
    import openclaw_memory.database.repair as repair

    run = _runner(cli, state_dir)
    _damaged(workspace, run)

    def full(db) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(repair, "rebuild", full)
    fixed = run("doctor", "--fix", "--yes")
    assert fixed.returncode == 1
    assert "the disk is full" in fixed.stderr and "damaged" not in fixed.stderr, fixed.stderr


def test_a_fault_of_the_code_is_never_said_as_the_damage(workspace, state_dir, cli, monkeypatch):
    """An import that fails (a release installed half way) where the state database is damaged:
    shown as what it is, not as the damage with "run doctor --fix" (which is what failed)."""
    import openclaw_memory.database.repair as repair

    run = _runner(cli, state_dir)
    _damaged(workspace, run)

    def broken(db) -> None:
        raise ImportError("cannot import name 'Left' from 'openclaw_memory.watchdog.snapshot'")

    monkeypatch.setattr(repair, "rebuild", broken)
    fixed = run("doctor", "--fix", "--yes")
    assert fixed.returncode != 0
    said = fixed.stdout + fixed.stderr
    assert "cannot import name 'Left'" in said and "is damaged" not in said, said
