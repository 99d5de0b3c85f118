"""Objects stored again in one transaction, and frames SQLite wrote without their checksums.

SQLite 3.40 writes frames without salts and checksums while it owes a transaction a checksum pass
at commit, and keeps owing it across a ``ROLLBACK TO`` that undid the frames it was owed for: a
transaction that stored many objects it held already (each inserted, then rolled back to its
savepoint: ``import --force`` of an archive imported before) committed frames that way, 4 runs in
5, and the WAL check called the healthy database damaged (the import's history was not logged, the
files were copied under damaged/ each time)."""

from __future__ import annotations

import base64
import os
import random
import sqlite3
import struct
from pathlib import Path

from conftest import settings_for, sql_statements
from openclaw_memory.database.handles import close_all
from openclaw_memory.history.store import HistoryStore


def _damaged(state_dir: Path) -> list[Path]:
    return list(state_dir.rglob("damaged"))


def test_storing_again_what_is_stored_inserts_nothing_and_never_reads_as_damage(workspace, state_dir):
    settings = settings_for(workspace, state_dir)
    rng = random.Random(7)
    datas = [b"# M\n"] + [base64.b64encode(rng.randbytes(1_500_000)) for _ in range(3)]
    store = HistoryStore.for_settings(settings)
    versions = [store.objects.put_bytes(d) for d in datas]
    for _ in range(10):  # each round a new process would be: its connections closed first
        close_all()
        store = again = HistoryStore.for_settings(settings)
        with store.lock():
            said = sql_statements(store.data_dir, lambda s=again: [s.objects.put_bytes(d) for d in datas])
            assert not [s for s in said if "object_parts" in s], said  # looked up, never written again
            for d, v in zip(datas, versions, strict=True):
                with open(Path(store.data_dir) / "x", "wb") as fh:
                    fh.write(d)
                fd = os.open(Path(store.data_dir) / "x", os.O_RDONLY)
                try:
                    assert store.objects.put_fd(fd) == v  # unknown beforehand: stored, then deleted, not rolled back
                finally:
                    os.close(fd)
        with store.lock():
            assert [store.objects.read_bytes(v) for v in versions] == datas
    assert not _damaged(state_dir)


def _unseal(wal: Path, frames: int) -> None:
    """What SQLite 3.40 leaves: the committed frames' salts and checksums zero, their pages intact."""
    data = bytearray(wal.read_bytes())
    frame = 24 + struct.unpack(">I", data[8:12])[0]
    for n in range(frames):
        data[32 + n * frame + 8:32 + n * frame + 24] = bytes(16)
    wal.write_bytes(bytes(data))


def test_frames_sqlite_wrote_without_checksums_are_copied_in_not_called_damage(workspace, state_dir):
    settings = settings_for(workspace, state_dir)
    store = HistoryStore.for_settings(settings)
    version = store.objects.put_bytes(b"kept\n" * 100)
    db = Path(store.data_dir) / "state.db"
    (mx,) = struct.unpack("=I", Path(f"{db}-shm").read_bytes()[16:20])
    assert mx > 0
    _unseal(Path(f"{db}-wal"), mx)
    assert store.objects.read_bytes(version) == b"kept\n" * 100  # not StateDamaged: copied into the file
    from openclaw_memory.database.companions import wal_damage

    assert wal_damage(str(db), full=True) is None  # the log begun again: every frame in it sound
    close_all()
    conn = sqlite3.connect(db)  # a new process rebuilds the index: nothing was lost
    try:
        assert conn.execute("SELECT COUNT(*) FROM objects WHERE version = ?", (version,)).fetchone() == (1,)
    finally:
        conn.close()
    assert not _damaged(state_dir)


def test_a_frame_zeroed_whole_is_still_damage(workspace, state_dir):
    """The control: damage zeroes a frame's page number too."""
    from openclaw_memory.database.companions import wal_damage

    settings = settings_for(workspace, state_dir)
    store = HistoryStore.for_settings(settings)
    store.objects.put_bytes(b"kept\n" * 100)
    db = Path(store.data_dir) / "state.db"
    wal = Path(f"{db}-wal")
    data = bytearray(wal.read_bytes())
    data[32:32 + 24] = bytes(24)
    wal.write_bytes(bytes(data))
    why = wal_damage(str(db), full=True)
    assert why is not None and "no longer reads back" in why and type(why) is str


def test_a_frame_zeroed_from_its_salts_on_is_damage_never_copied_in(workspace, state_dir):
    """A zeroed 4 KiB block that begins 8 bytes into a frame keeps its page number (and commit size)
    but zeroes its salts and checksums, like a frame SQLite wrote unsealed: the sealed frames after
    it tell it is damage, and the database file is never checkpointed from it."""
    import pytest

    from openclaw_memory.errors import StateDamaged

    settings = settings_for(workspace, state_dir)
    store = HistoryStore.for_settings(settings)
    version = store.objects.put_bytes(base64.b64encode(random.Random(1).randbytes(900_000)))
    db = Path(store.data_dir) / "state.db"
    wal = Path(f"{db}-wal")
    frame = 24 + struct.unpack(">I", wal.read_bytes()[8:12])[0]
    (mx,) = struct.unpack("=I", Path(f"{db}-shm").read_bytes()[16:20])
    assert mx > 100
    with open(wal, "r+b") as fh:
        fh.seek(32 + (mx // 2) * frame + 8)
        fh.write(bytes(4096))
    with pytest.raises(StateDamaged):
        store.objects.read_bytes(version)
    close_all()
    assert _damaged(state_dir)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


def test_the_last_frame_zeroed_from_its_salts_on_is_damage(workspace, state_dir):
    """The commit frame itself so zeroed: its page is zeros from its start, never what SQLite wrote."""
    from openclaw_memory.database.companions import wal_damage

    settings = settings_for(workspace, state_dir)
    store = HistoryStore.for_settings(settings)
    store.objects.put_bytes(base64.b64encode(random.Random(2).randbytes(300_000)))
    db = Path(store.data_dir) / "state.db"
    wal = Path(f"{db}-wal")
    frame = 24 + struct.unpack(">I", wal.read_bytes()[8:12])[0]
    (mx,) = struct.unpack("=I", Path(f"{db}-shm").read_bytes()[16:20])
    with open(wal, "r+b") as fh:
        fh.seek(32 + (mx - 1) * frame + 8)
        fh.write(bytes(4096))
    why = wal_damage(str(db), full=True)
    assert why is not None and "no longer reads back" in why and type(why) is str
