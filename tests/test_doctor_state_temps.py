"""What a process killed between writing a temp file of its own state-dir files and renaming it
leaves (``.state-checked.json.<hex>.tmp``, ``service/.info.json.<hex>.tmp``): doctor names it once it
is no live write's, ``--fix`` removes it and nothing that only looks like it. Real processes, a
real SIGKILL at the fault step between the write and the rename."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import fault, settings_for, write
from openclaw_memory.doctor.check_state_temps import ID
from openclaw_memory.fsutil.atomic import LEFTOVER_AGE_S
from openclaw_memory.fsutil.fsclock import guard_ns


def _killed_doctor(cli_process, data_dir: Path) -> str:
    """A plain doctor killed at its record's rename (it writes the record once the state database
    is past the timestamp guard and held still through the check: waited out, not timed)."""
    db = data_dir / "state.db"
    for _ in range(4):
        newest = max(max(st.st_mtime_ns, st.st_ctime_ns)
                     for st in (os.lstat(p) for p in (db, Path(f"{db}-wal")) if os.path.lexists(p)))
        while time.time_ns() - guard_ns(data_dir) <= newest:
            time.sleep(guard_ns(data_dir) / 1e9)
        if cli_process("doctor", env=fault("atomic:renaming:state-checked.json=kill")).returncode == -signal.SIGKILL:
            return ".state-checked.json."
    raise AssertionError("no doctor reached the record's rename")


def _killed_serve(cli_process, data_dir: Path) -> str:
    result = cli_process("serve", "--no-watch", env=fault("atomic:renaming:info.json=kill"))
    assert result.returncode == -signal.SIGKILL, result.stdout + result.stderr
    return "service/.info.json."


def _temps(data_dir: Path, prefix: str) -> list[Path]:
    folder, _, stem = prefix.rpartition("/")
    return sorted(p for p in (data_dir / folder).iterdir() if p.name.startswith(stem) and p.name.endswith(".tmp"))


def _aged(path: Path) -> None:
    """Last written before the leftover age (a write going on now is younger)."""
    then = time.time() - LEFTOVER_AGE_S - 60
    os.utime(path, (then, then), follow_symlinks=False)


@pytest.mark.parametrize("killed", [_killed_doctor, _killed_serve], ids=["doctor-record", "service-info"])
def test_a_temp_file_a_killed_write_left_in_the_state_dir_is_named_and_removed_and_nothing_else(
        workspace, state_dir, cli_process, killed, tmp_path):
    write(workspace / "MEMORY.md", "# Memory\n\n- likes tea\n")
    assert cli_process("write", "memory/a.md", "--append", "a line", "--no-index").returncode == 0
    data_dir = settings_for(workspace, state_dir).data_dir
    prefix = killed(cli_process, data_dir)
    (left,) = _temps(data_dir, prefix)

    young = cli_process("doctor", "--json")
    assert ID not in {f["id"] for f in young.json()["findings"]}  # as young as a write going on now: left alone

    _aged(left)
    folder = left.parent
    outside = write(tmp_path / "outside.txt", "not ours")
    lookalikes = [folder / f"{left.name[:-13]}.zzzzzzzz.tmp", folder / ".other.json.0123abcd.tmp",
                  folder / f"{left.name[:-13]}.0123abcd.tmp"]
    write(lookalikes[0], "no hex tag")
    write(lookalikes[1], "another file's")
    os.symlink(outside, lookalikes[2])  # the name of one, a link
    fifo = folder / f"{left.name[:-13]}.4567cdef.tmp"
    os.mkfifo(fifo)
    lookalikes.append(fifo)
    if os.geteuid() == 0:  # another user's file by the name of one
        other = write(folder / f"{left.name[:-13]}.89abcdef.tmp", "theirs")
        os.chown(other, 65534, 65534)
        lookalikes.append(other)
    for path in lookalikes:
        _aged(path)

    found = [f for f in cli_process("doctor", "--json").json()["findings"] if f["id"] == ID]
    assert [(f["severity"], f["fixable"], f["paths"]) for f in found] == [("info", True, [str(left)])]

    fixed = cli_process("doctor", "--fix", "--json")
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == ID] == ["done"], fixed.stdout
    assert not left.exists()
    assert all(os.path.lexists(p) for p in lookalikes) and outside.read_text() == "not ours"
    assert ID not in {f["id"] for f in cli_process("doctor", "--json").json()["findings"]}


def test_a_new_database_a_killed_creation_left_is_named_and_removed(workspace, state_dir, cli):
    # The next creation sweeps it only while state.db is missing or empty: once one is in place,
    # nothing else did (helper review of 45d1529: still there after doctor --fix).
    from openclaw_memory.database.connection import NEW_PREFIX

    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("write", "memory/a.md", "--append", "a line", "--no-index").returncode == 0
    data_dir = settings_for(workspace, state_dir).data_dir
    left = write(data_dir / f"{NEW_PREFIX}4242-0123abcd", "x" * 4096)
    young = write(data_dir / f"{NEW_PREFIX}4243-4567cdef", "y" * 4096)
    _aged(left)
    found = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == ID]
    assert [f["paths"] for f in found] == [[str(left)]]
    assert cli("doctor", "--fix").returncode == 0
    assert not left.exists() and young.exists()
