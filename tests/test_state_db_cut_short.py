"""A state database cut short (its last pages gone: a copy or a write cut off): ``doctor --fix``
keeps every row the pages still there hold, as the same file zero-padded back to the length its
header declares reads, and names only what was lost (a cut file does not open as it is: "database
disk image is malformed", which once made the new database empty)."""

from __future__ import annotations

import base64
import os
import random
import shutil
import sqlite3
import zlib
from pathlib import Path

from conftest import write


def _data_dir(sd: Path) -> Path:
    (found,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return found


def _readable(db: Path) -> tuple[int, int]:
    """(versions rows, objects whose bytes read back) in ``db``, looked up one version at a time."""
    conn = sqlite3.connect(db)
    try:
        versions = conn.execute("SELECT COUNT(*) FROM versions").fetchone()[0]
        good = 0
        for (v,) in conn.execute("SELECT version FROM objects").fetchall():
            try:
                parts = conn.execute("SELECT data FROM object_parts WHERE version = ? ORDER BY seq", (v,)).fetchall()
                zlib.decompress(b"".join(p[0] for p in parts))
                good += 1
            except (sqlite3.Error, zlib.error):
                pass
    finally:
        conn.close()
    return versions, good


def test_a_state_db_cut_short_keeps_every_row_its_remaining_pages_hold(workspace, state_dir, tmp_path, cli, cli_process):
    from openclaw_memory.database import forget_connections

    rng = random.Random("cut")
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(40):  # incompressible lines: each version's bytes fill pages of their own
        done = cli("write", f"memory/n{i % 5}.md", "--append", f"line {i} {base64.b64encode(rng.randbytes(2250)).decode()}",
                   "--no-index")
        assert done.returncode == 0, done.stderr
    forget_connections()  # this process's connection closed: everything is in the file
    db = _data_dir(state_dir) / "state.db"
    assert not Path(f"{db}-wal").exists()
    declared = os.path.getsize(db)
    os.truncate(db, declared - 8192)  # the last two pages gone

    padded = tmp_path / "padded.db"  # what the pages still there hold, as SQLite reads them
    shutil.copyfile(db, padded)
    os.truncate(padded, declared)
    versions, objects = _readable(padded)
    assert versions == 40 and 0 < objects < 40, (versions, objects)

    fixed = cli_process("doctor", "--fix", "--json")
    assert "Traceback" not in fixed.stderr, fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "done", repair
    detail = repair["detail"]
    assert "holds nothing" not in detail and "does not open" not in detail, detail
    assert "cut short: its last 8192 bytes" in detail, detail
    assert f"{40 - objects} stored version(s) whose bytes no longer read back" in detail, detail
    assert "versions:" not in detail, detail  # every row of the history was kept: not named as lost
    assert _readable(db) == (40, objects)
    (aside,) = (_data_dir(state_dir) / "damaged").glob("*/state.db")
    assert os.path.getsize(aside) == declared - 8192  # set aside as it was, never padded in place


def test_a_header_that_declares_an_absurd_length_makes_no_huge_file(tmp_path):
    from openclaw_memory.database.repair import _scratch_copy

    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with open(db, "r+b") as fh:  # 2^31 pages of 64 KiB declared, the header otherwise as SQLite trusts it
        fh.seek(16)
        fh.write(b"\x00\x01")
        fh.seek(28)
        fh.write((1 << 31).to_bytes(4, "big"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    copy, said = _scratch_copy(db, scratch)
    assert copy.stat().st_size == db.stat().st_size
    assert "too many to read it as a cut file" in said
