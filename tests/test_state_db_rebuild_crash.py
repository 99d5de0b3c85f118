"""`doctor --fix` killed (SIGKILL, a real process) at each step of a state database's rebuild: the
damaged file is never gone before the new database is in place, the next doctor names the
interrupted rebuild, `doctor --fix` finishes it (or rebuilds again from the damaged file) with the
same rows as a rebuild that was never interrupted, and nothing of the rebuild is left behind. A
command run while a rebuild is under way says so instead of using the state database.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import env_for, fault, run_paused, write

TABLES = ("objects", "versions", "reads", "snapshots", "snapshot_files")
STEPS = ("building", "built", "kept", "companions", "swapped")

# The reviewer's way: the rows' copy itself SIGKILLs the process (no fault point needed).
KILLED_IN_COPY = """
import os, signal, sys
import openclaw_memory.database.repair as repair
repair._copy_all = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
from openclaw_memory.cli import run
sys.argv = ["openclaw-memory", "doctor", "--fix", "--yes"]
run()
"""


def _data_dir(state_dir: Path) -> Path:
    (found,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    return found


def _damaged(workspace: Path, state_dir: Path, cli_process) -> bytes:
    """A history, a read and a watchdog baseline, then one page of the state database overwritten;
    the damaged file's bytes."""
    write(workspace / "MEMORY.md", "canon\n")
    for i in range(1, 4):
        write(workspace / "memory" / f"n{i}.md", f"n{i}\n")
    assert cli_process("read", "memory/n1.md").returncode == 0
    assert cli_process("write", "--append", "agent line", "--no-index", "memory/n1.md").returncode == 0
    assert cli_process("watchdog", "snapshot", "base").returncode == 0
    db = _data_dir(state_dir) / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    with open(db, "r+b") as fh:
        fh.seek(4096 * 4)
        fh.write(b"\xff" * 4096)
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db.read_bytes()


def _counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}  # noqa: S608
    finally:
        conn.close()


def _reference(workspace: Path, state_dir: Path, tmp_path: Path) -> dict[str, int]:
    """What an uninterrupted rebuild of the same damaged files holds (a copy of the state dir: the
    data dir is named after the workspace, so the same workspace finds it)."""
    other = tmp_path / "reference-state"
    shutil.copytree(state_dir, other)
    fixed = subprocess.run([sys.executable, "-m", "openclaw_memory", "doctor", "--fix", "--yes"], cwd=workspace,
                           env=env_for(workspace, other), capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    return _counts(_data_dir(other) / "state.db")


def _findings(cli_process) -> tuple[int, set[str]]:
    plain = cli_process("doctor", "--json")
    return plain.returncode, {f["id"] for f in plain.json()["findings"]}


def _after_the_kill(workspace: Path, state_dir: Path, cli_process, damaged: bytes, reference: dict[str, int]) -> None:
    data_dir = _data_dir(state_dir)
    # Never "no problems", never a state database that starts again empty.
    code, found = _findings(cli_process)
    assert code != 0 and "state-db-damaged" in found, found
    verify = cli_process("watchdog", "verify")
    assert verify.returncode != 0 and "no baseline" not in (verify.stdout + verify.stderr).lower(), verify.stdout + verify.stderr
    # The damaged bytes are kept somewhere: at the path or under damaged/.
    kept = [p for p in [data_dir / "state.db", *data_dir.glob("damaged/*/state.db")] if p.read_bytes() == damaged]
    assert kept, sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*"))

    fixed = cli_process("doctor", "--fix", "--yes")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    code, found = _findings(cli_process)
    assert code == 0 and not found, found
    assert _counts(data_dir / "state.db") == reference
    assert [p.read_bytes() == damaged for p in data_dir.glob("damaged/*/state.db")].count(True) >= 1
    assert not list(data_dir.glob(".rebuild-*")) and not (data_dir / "state.db.rebuild").exists()
    verify = cli_process("watchdog", "verify")
    assert verify.returncode == 0 and "since snapshot base" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.parametrize("step", STEPS)
def test_doctor_fix_killed_at_each_step_of_a_rebuild_loses_nothing(workspace, state_dir, cli_process, tmp_path, step):
    damaged = _damaged(workspace, state_dir, cli_process)
    reference = _reference(workspace, state_dir, tmp_path)
    killed = cli_process("doctor", "--fix", "--yes", env=fault(f"state-db-rebuild:{step}=kill"))
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    _after_the_kill(workspace, state_dir, cli_process, damaged, reference)


def test_doctor_fix_killed_while_copying_the_rows_loses_nothing(workspace, state_dir, cli_process, tmp_path):
    damaged = _damaged(workspace, state_dir, cli_process)
    reference = _reference(workspace, state_dir, tmp_path)
    killed = subprocess.run([sys.executable, "-c", KILLED_IN_COPY], cwd=workspace, env=env_for(workspace, state_dir),
                            capture_output=True, text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    _after_the_kill(workspace, state_dir, cli_process, damaged, reference)


@pytest.mark.parametrize("step", ["building", "companions"])
def test_commands_during_a_rebuild_say_so_and_write_nothing(workspace, state_dir, cli_process, tmp_path, step):
    _damaged(workspace, state_dir, cli_process)
    reference = _reference(workspace, state_dir, tmp_path)
    seen = {}

    def meanwhile() -> None:
        seen["doctor"] = cli_process("doctor")
        seen["verify"] = cli_process("watchdog", "verify")
        seen["heartbeat"] = cli_process("watchdog", "heartbeat")

    code, out, err = run_paused(workspace, state_dir, ("doctor", "--fix", "--yes"), f"state-db-rebuild:{step}", meanwhile)
    assert code == 0, out + err
    assert seen["doctor"].returncode != 0 and "is rebuilding the state database right now" in seen["doctor"].stdout
    for name in ("verify", "heartbeat"):
        said = seen[name].stdout + seen[name].stderr
        assert seen[name].returncode != 0 and "is rebuilding the state database right now" in said, (name, said)
    assert _counts(_data_dir(state_dir) / "state.db") == reference
    verify = cli_process("watchdog", "verify")
    assert verify.returncode == 0 and "since snapshot base" in verify.stdout, verify.stdout + verify.stderr


@pytest.mark.parametrize("record", ["garbled", "fifo"])
def test_a_record_left_over_a_sound_database_is_named_then_removed_and_nothing_rebuilt(workspace, state_dir, cli_process,
                                                                                        record):
    """A record that does not read (cut short, garbled, a FIFO: never opened to read, which would
    block) beside a sound database, and a scratch folder an earlier release's killed rebuild left:
    commands refuse, doctor names it, --fix removes both (a FIFO kept under damaged/) and leaves
    the database as it was."""
    write(workspace / "MEMORY.md", "canon\n")
    assert cli_process("watchdog", "snapshot", "base").returncode == 0
    data_dir = _data_dir(state_dir)
    before = _counts(data_dir / "state.db")
    marker = data_dir / "state.db.rebuild"
    if record == "fifo":
        os.mkfifo(marker, 0o600)
    else:
        marker.write_bytes(b'{"pid": 12, "scr')
    (data_dir / ".rebuild-old").mkdir()
    (data_dir / ".rebuild-old" / "state.db").write_bytes(b"scratch copy")
    verify = cli_process("watchdog", "verify")
    assert verify.returncode != 0 and "was interrupted" in verify.stdout + verify.stderr, verify.stdout + verify.stderr
    code, found = _findings(cli_process)
    assert code != 0 and "state-db-damaged" in found
    fixed = cli_process("doctor", "--fix", "--yes")
    assert fixed.returncode == 0 and "nothing else to do" in fixed.stdout, fixed.stdout + fixed.stderr
    assert not os.path.lexists(marker) and not (data_dir / ".rebuild-old").exists()
    assert len(list(data_dir.glob("damaged/*/state.db.rebuild"))) == (record == "fifo")
    assert not list(data_dir.glob("damaged/*/state.db"))
    assert _counts(data_dir / "state.db") == before
    assert _findings(cli_process) == (0, set())
