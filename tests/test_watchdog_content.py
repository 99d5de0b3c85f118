"""Snapshots that keep content: each memory file's bytes go into the history's object store (one
object per content, shared), pinned against the history's eviction, pruned with the snapshots by
count and by bytes; an older snapshot's hash-only record still verifies."""

from __future__ import annotations

import dataclasses
import json
import os

from conftest import settings_for, write
from openclaw_memory.database import Database
from openclaw_memory.history.objects import ObjectStore
from openclaw_memory.watchdog.snapshot import refresh_baseline, take_snapshot
from openclaw_memory.watchdog.store import SnapshotStore, Table
from openclaw_memory.watchdog.verify import verify_workspace


def _objects(settings) -> set[str]:
    return {v for (v,) in Database(settings.data_dir).rows("SELECT version FROM objects")}


def _read(settings, version: str) -> bytes | None:
    return ObjectStore(Database(settings.data_dir), 1 << 30).read_bytes(version)


def test_a_snapshots_content_reads_back_byte_for_byte_after_the_files_changed(workspace, state_dir):
    originals = {"MEMORY.md": b"# Memory\n- first\n", "memory/2026-01-01.md": "day \u00e9t\u00e9\r\n".encode(),
                 "USER.md": b"\x00binary\xff bytes\n"}
    for rel, data in originals.items():
        write(workspace / rel, data)
    write(workspace / "notes.txt", "not memory\n")
    write(workspace / "memory" / "picture.png", b"not memory without multimodal")
    settings = settings_for(workspace, state_dir)
    info = take_snapshot(settings, "before")
    assert info.kept == 3

    for rel in originals:
        write(workspace / rel, "rewritten\n")
    (workspace / "USER.md").unlink()
    take_snapshot(settings, "after")

    store = SnapshotStore(settings.data_dir)
    kept = store.files("before")
    assert sorted(kept) == sorted(originals)  # memory files only
    for rel, data in originals.items():
        version, size = kept[rel]
        assert size == len(data)
        assert _read(settings, version) == data
    assert sorted(store.files("after")) == ["MEMORY.md", "memory/2026-01-01.md"]


def test_a_snapshot_keeps_the_media_files_openclaw_json_names_as_memory_and_no_other(workspace, state_dir):
    """openclaw.json's memory.search.multimodal.modalities ["image"]: the scan lists images only, and
    a snapshot kept the bytes of every media kind (it asked the multimodal switch alone)."""
    write(state_dir / "openclaw.json", json.dumps({"memory": {"search": {"multimodal": {"enabled": True, "modalities": ["image"]}}}}))
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "picture.png", b"an image")
    write(workspace / "memory" / "voice.mp3", b"a recording")
    settings = settings_for(workspace, state_dir)
    assert settings.media == ("image",)
    take_snapshot(settings, "one")
    assert sorted(SnapshotStore(settings.data_dir).files("one")) == ["MEMORY.md", "memory/picture.png"]

def test_an_unchanged_file_costs_a_row_not_an_object(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", "a\n")
    settings = settings_for(workspace, state_dir)
    take_snapshot(settings, "one")
    first = _objects(settings)
    assert len(first) == 2

    take_snapshot(settings, "two")
    assert _objects(settings) == first
    rows = Database(settings.data_dir).rows("SELECT COUNT(*) FROM snapshot_files")
    assert rows == [(4,)]

    write(workspace / "memory" / "a.md", "a, changed\n")
    take_snapshot(settings, "three")
    assert len(_objects(settings) - first) == 1


def test_the_same_text_in_the_history_and_a_snapshot_is_one_object(workspace, state_dir):
    from openclaw_memory.history.store import HistoryStore

    write(workspace / "MEMORY.md", "# Memory\n- shared\n")
    settings = settings_for(workspace, state_dir)
    HistoryStore.for_settings(settings).observe_file(str(workspace / "MEMORY.md"), "MEMORY.md")
    before = _objects(settings)
    take_snapshot(settings)
    assert _objects(settings) == before


def test_the_historys_eviction_and_removals_leave_what_a_snapshot_keeps(workspace, state_dir):
    write(workspace / "MEMORY.md", os.urandom(2000))
    settings = settings_for(workspace, state_dir)
    take_snapshot(settings)
    (pinned,) = _objects(settings)
    loose = ObjectStore(Database(settings.data_dir), max_bytes=1).put_bytes(os.urandom(2000))
    assert ObjectStore(Database(settings.data_dir), max_bytes=3000).evict() == []  # the pinned one is not counted
    objects = ObjectStore(Database(settings.data_dir), max_bytes=1)
    assert objects.evict() == [loose]
    assert objects.remove([pinned]) == 0
    assert _objects(settings) == {pinned}


def test_pruning_counts_kept_bytes_and_drops_what_no_one_else_names(workspace, state_dir):
    settings = settings_for(workspace, state_dir)
    settings = dataclasses.replace(settings, watchdog=dataclasses.replace(settings.watchdog, max_bytes=16_000))
    versions = []
    for n in range(12):
        write(workspace / "MEMORY.md", os.urandom(1500))  # incompressible: ~1.5 KB stored each
        take_snapshot(settings, f"s{n}")
        versions.append(SnapshotStore(settings.data_dir).files(f"s{n}")["MEMORY.md"][0])
    store = SnapshotStore(settings.data_dir)
    labels = [e.label for e in store.entries()]
    assert 0 < store.content_bytes() <= 16_000
    assert labels[-1] == "s11" and len(labels) < 12  # by bytes, not the count (keep is 20)
    assert labels == [f"s{n}" for n in range(12 - len(labels), 12)]  # the oldest went first
    assert _objects(settings) == set(versions[-len(labels):])  # a pruned snapshot's objects went with it


def test_pruning_keeps_an_object_the_history_still_names(workspace, state_dir):
    from openclaw_memory.history.store import HistoryStore

    settings = settings_for(workspace, state_dir)
    settings = dataclasses.replace(settings, watchdog=dataclasses.replace(settings.watchdog, keep=1))
    write(workspace / "MEMORY.md", "# Memory\n- logged\n")
    take_snapshot(settings, "one")
    (logged,) = _objects(settings)
    HistoryStore.for_settings(settings).observe_file(str(workspace / "MEMORY.md"), "MEMORY.md")
    write(workspace / "MEMORY.md", "# Memory\n- next\n")
    take_snapshot(settings, "two")
    assert logged in _objects(settings) and _read(settings, logged) == b"# Memory\n- logged\n"


def test_a_hash_only_snapshot_of_an_earlier_release_still_verifies(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    settings = settings_for(workspace, state_dir)
    take_snapshot(settings, "old")
    db = Database(settings.data_dir)
    (body,) = db.rows("SELECT body FROM snapshots WHERE label = 'old'")[0]
    header, _, rest = bytes(body).partition(b"\n")
    fields = json.loads(header)
    del fields["git_head"]  # what an earlier release wrote: no HEAD, no content rows
    old = Table.from_bytes(json.dumps(fields).encode() + b"\n" + rest, "old")
    with db.transaction() as conn:
        conn.execute("UPDATE snapshots SET body = ? WHERE label = 'old'", (old.to_bytes(),))
        conn.execute("DELETE FROM snapshot_files")

    assert SnapshotStore(settings.data_dir).files("old") == {}
    assert verify_workspace(settings).break_count == 0
    write(workspace / "MEMORY.md", "# Memory\n- changed\n")
    assert [c.path for c in verify_workspace(settings).changed] == ["MEMORY.md"]


def test_a_doctor_refresh_keeps_the_repaired_files_new_content(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", "a\n")
    settings = settings_for(workspace, state_dir)
    take_snapshot(settings, "base")
    write(workspace / "memory" / "a.md", "a, repaired\n")
    assert refresh_baseline(settings, ["memory/a.md"]) == []
    kept = SnapshotStore(settings.data_dir).files("base")
    assert _read(settings, kept["memory/a.md"][0]) == b"a, repaired\n"
    assert _read(settings, kept["MEMORY.md"][0]) == b"# Memory\n"


def test_a_heartbeat_keeps_content_as_a_snapshot_does(workspace, state_dir):
    from openclaw_memory.watchdog.heartbeat import heartbeat

    write(workspace / "MEMORY.md", "# Memory\n- before the break\n")
    settings = settings_for(workspace, state_dir)
    first = heartbeat(settings).snapshot
    write(workspace / "MEMORY.md", "# Memory\n- after\n")
    beat = heartbeat(settings)
    assert beat.status == "BREAK"
    store = SnapshotStore(settings.data_dir)
    assert _read(settings, store.files(first)["MEMORY.md"][0]) == b"# Memory\n- before the break\n"
    assert _read(settings, store.files(beat.snapshot)["MEMORY.md"][0]) == b"# Memory\n- after\n"


def test_a_damaged_snapshot_set_aside_takes_its_rows_and_only_its_own_objects(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n- kept by both\n")
    write(workspace / "memory" / "a.md", "only in the damaged one\n")
    settings = settings_for(workspace, state_dir)
    take_snapshot(settings, "damaged")
    (workspace / "memory" / "a.md").unlink()
    take_snapshot(settings, "sound")
    only_damaged = SnapshotStore(settings.data_dir).files("damaged")["memory/a.md"][0]
    db = Database(settings.data_dir)
    with db.transaction() as conn:
        conn.execute("UPDATE snapshots SET body = CAST('garbled' AS BLOB) WHERE label = 'damaged'")
    moved, baseline = SnapshotStore(settings.data_dir).rebuild(settings.watchdog.keep)
    assert len(moved) == 1 and baseline == "sound"
    assert db.rows("SELECT COUNT(*) FROM snapshot_files WHERE label = 'damaged'") == [(0,)]
    kept = SnapshotStore(settings.data_dir).files("sound")["MEMORY.md"][0]
    assert _objects(settings) == {kept} and only_damaged not in _objects(settings)
