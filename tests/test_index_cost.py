"""What a sync costs against the memory's size, counted on the real functions (no timing): a
write's index update reads, hashes and loads the manifest rows of the file it wrote alone; a
sync without a hint lstats every file but reads, hashes and loads the entries of the changed
ones only (docs/guarantees.md, costs against the memory's size)."""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest
from test_index import TOPICS, assert_consistent, note

from conftest import settings_for, sql_statements, wait_for, write
from openclaw_memory.database import Database
from openclaw_memory.files.scan import scan_paths, scan_workspace
from openclaw_memory.fsutil.fsclock import guard_ns
from openclaw_memory.index import sync as sync_module
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.bm25 import load_stats, scan_stats
from openclaw_memory.index.collections import resolve_collections
from openclaw_memory.index.filters import SearchFilters
from openclaw_memory.index.manifest import FileEntry, manifest_chunk_count, mark_dirty
from openclaw_memory.memory.local import LocalMemory

NOTES = 200


def daily(i: int) -> str:
    return f"memory/{dt.date(2026, 1, 1) + dt.timedelta(days=i):%Y-%m-%d}.md"


@pytest.fixture
def memory(workspace, state_dir):
    """An indexed workspace of ``NOTES`` daily notes and a MEMORY.md, as a LocalMemory."""
    write(workspace / "MEMORY.md", note("memory", n=4, topic="taxes"))
    for i in range(NOTES):
        write(workspace / daily(i), note(f"day {i}", n=3, topic=TOPICS[i % len(TOPICS)]))
    settled = time.time_ns() + guard_ns(workspace)  # past it, a sighting of these files is not racy
    wait_for(lambda: time.time_ns() > settled, 30)
    m = LocalMemory(settings_for(workspace, state_dir))
    assert m.index().files_changed == NOTES + 1
    yield m
    m.close()


class Counted:
    """Calls of the real functions a sync uses to list, read and load, counted."""

    def __init__(self, monkeypatch):
        self.calls: dict[str, list] = {}
        for name in ("scan_workspace", "read_version", "load_manifest", "diff_known", "lookup_chunks", "chunk_map"):
            self._wrap(monkeypatch, sync_module, name)
        entries = self.calls.setdefault("FileEntry", [])
        real_init = FileEntry.__init__

        def init(entry, *args, **kwargs):
            real_init(entry, *args, **kwargs)
            entries.append(entry.abs_path)

        monkeypatch.setattr(FileEntry, "__init__", init)

    def _wrap(self, monkeypatch, module, name: str) -> None:
        real = getattr(module, name, None)
        calls = self.calls.setdefault(name, [])
        if real is None:  # (a version of the sync without it)
            return

        def counted(*args, **kwargs):
            calls.append(args[0] if name == "read_version" else name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)

    def __getitem__(self, name: str) -> list:
        return self.calls[name]


def test_a_write_reads_hashes_and_loads_only_the_file_it_wrote(memory, workspace, monkeypatch):
    target, other = daily(17), daily(90)
    with open(workspace / other, "a", encoding="utf-8") as fh:  # stale too, edited behind the product's back
        fh.write("- an edit no write made\n")
    memory.read(target)  # an append to a daily note needs a read first
    counted = Counted(monkeypatch)
    result = memory.write(target, append="- the sailing club meets on Thursdays")
    assert result.index is not None and result.index.updated and result.index.sync is not None
    assert result.index.sync.files_changed == 1 and result.index.sync.files_scanned == 1
    assert counted["scan_workspace"] == [] and counted["diff_known"] == [] and counted["load_manifest"] == []
    assert counted["read_version"] == [str(workspace / target)]  # read and hashed: the written file alone
    # Its manifest row, and the entry made of what was read: nothing of the other 200 files.
    assert set(counted["FileEntry"]) == {str(workspace / target)}
    assert counted["lookup_chunks"] == [] and counted["chunk_map"] == []  # vectors lent by its own old chunks only
    monkeypatch.undo()
    index = MemoryIndex(memory.settings)
    try:
        assert_consistent(index)
        assert index.search("sailing club thursdays", sync=False).stale_paths == (other,)  # left to the next sync
        caught_up = index.sync()
        assert caught_up.files_changed == 1 and caught_up.files_scanned == NOTES + 1
        assert_consistent(index)
        assert not index.search("sailing club thursdays", sync=False).stale_paths
    finally:
        index.close()


def test_a_move_and_a_removal_update_the_index_of_their_files_alone(memory, workspace, monkeypatch):
    source, destination, gone = daily(8), "memory/projects/sailing.md", daily(9)
    memory.read(source)
    counted = Counted(monkeypatch)
    moved = memory.move(source, destination)
    assert moved.index is not None and moved.index.sync is not None
    assert (moved.index.sync.files_changed, moved.index.sync.files_removed, moved.index.sync.chunks_embedded) == (1, 1, 0)
    assert counted["scan_workspace"] == [] and counted["read_version"] == [str(workspace / destination)]
    assert set(counted["FileEntry"]) == {str(workspace / source), str(workspace / destination)}
    memory.read(gone)
    removed = memory.remove(gone)
    assert removed.index is not None and removed.index.sync is not None and removed.index.sync.files_removed == 1
    assert counted["scan_workspace"] == [] and str(workspace / gone) in counted["FileEntry"]
    monkeypatch.undo()
    with MemoryIndex(memory.settings) as index:
        assert_consistent(index)
        assert index.sync().files_changed == 0
    _assert_counts_hold(memory)  # the point counts and statistics kept by the two syncs


def test_a_write_neither_sums_every_files_chunks_nor_saves_every_term(memory, workspace):
    """A write's sync counts the collection's points from the rows it replaces (never a sum over
    every file's chunk list) and changes the rows of the terms its chunks hold (never the whole
    vocabulary); the count and the statistics still equal what the shard holds."""
    target = daily(17)
    memory.read(target)
    vocabulary = len(Database(memory.settings.data_dir).rows("SELECT term FROM term_df"))
    statements = sql_statements(memory.settings.data_dir, lambda: memory.write(target, append="- the sailing club meets on Thursdays"))
    assert any("term_df" in s for s in statements)  # the statistics were changed
    assert not [s for s in statements if "SUM(json_array_length" in s and "path IN" not in s]
    term_writes = [s for s in statements if s.startswith(("INSERT INTO term_df", "DELETE FROM term_df"))]
    assert term_writes and len(term_writes) < vocabulary / 4  # the touched terms' rows only
    _assert_counts_hold(memory)
    memory.read(daily(9))
    statements = sql_statements(memory.settings.data_dir, lambda: memory.remove(daily(9)))
    assert not [s for s in statements if "SUM(json_array_length" in s and "path IN" not in s]
    _assert_counts_hold(memory)


def test_a_writes_sync_counts_its_shards_points_once_and_a_search_never(memory, monkeypatch):
    """The statistics' check after the commit and the probe record at the close both ask for the
    shard's exact count: the engine counts once (19 ms per count at 150,000 points); a search,
    which writes nothing, takes the count its shard's check knew at the open."""
    from openclaw_memory.index.store import edge_shard

    counts: list[str] = []
    real_init = edge_shard.EdgeShard.__init__

    class Counting:
        def __init__(self, engine, name):
            self._engine, self._name = engine, name

        def __getattr__(self, attr):
            return getattr(self._engine, attr)

        def count(self, request):
            counts.append(self._name)
            return self._engine.count(request)

    def init(shard, name, path, engine, dim, view=None, count=None):
        real_init(shard, name, path, Counting(engine, name), dim, view, count)

    monkeypatch.setattr(edge_shard.EdgeShard, "__init__", init)
    memory.read(daily(17))
    result = memory.write(daily(17), append="- the sailing club meets on Thursdays")
    assert result.index is not None and result.index.updated
    assert counts == ["memory-dir-main"]
    with MemoryIndex(memory.settings) as index:  # a new process's search: its shards opened, read, closed
        assert index.search("sailing club thursdays", sync=False).results
    assert counts == ["memory-dir-main"]


def test_statistics_that_do_not_add_up_are_counted_again_from_the_shard(memory):
    """A write changes the rows of its chunks' terms only where the saved ones add up; rows that
    lost a term (never written so, but a database is a file) make the commit count every point."""
    with Database(memory.settings.data_dir).transaction() as conn:
        conn.execute("DELETE FROM term_df WHERE collection = 'memory-dir-main'")
    memory.read(daily(17))
    assert memory.write(daily(17), append="- the sailing club meets on Thursdays").index.updated
    _assert_counts_hold(memory)


def _assert_counts_hold(memory) -> None:
    with MemoryIndex(memory.settings) as index:
        for c in resolve_collections(memory.settings):
            with index.store.open(c.name) as shard:
                assert manifest_chunk_count(memory.settings.data_dir, c.name) == shard.count()
                assert load_stats(memory.settings.data_dir, c.name) == scan_stats(shard)


def test_a_cold_search_loads_the_entries_of_its_stale_suspects_alone(memory, workspace, monkeypatch):
    """A search in a new process checks what is stale from the manifest's change keys and loads
    the entries of the files whose stat moved (to compare their hash), not every file's; a path
    filter still chooses its files' points from the whole manifest."""
    from openclaw_memory.index import api

    edited = workspace / daily(42)
    with open(edited, "a", encoding="utf-8") as fh:
        fh.write("- a new line about espresso grinders\n")
    counted = Counted(monkeypatch)
    loads: list[str] = []
    real_load = api.load_manifest
    monkeypatch.setattr(api, "load_manifest", lambda data_dir, name: loads.append(name) or real_load(data_dir, name))
    with MemoryIndex(memory.settings) as index:  # a new process's index
        found = index.search("espresso grinders", sync=False)
        assert found.stale_paths == (daily(42),)
        assert loads == [] and set(counted["FileEntry"]) == {str(edited)}
        assert index.search("espresso grinders", sync=False, filters=SearchFilters.from_args((), ("memory/*",), None, None)).results
        assert loads  # a path filter reads the manifests' files


def test_a_sync_reads_and_loads_only_the_files_whose_stat_moved(memory, workspace, monkeypatch):
    counted = Counted(monkeypatch)
    assert memory.index().files_changed == 0  # nothing changed: every file lstat'ed, none read or loaded
    assert counted["read_version"] == [] and counted["FileEntry"] == [] and counted["load_manifest"] == []
    changed = workspace / daily(42)
    with open(changed, "a", encoding="utf-8") as fh:
        fh.write("- a new line about espresso grinders\n")
    summary = memory.index()
    assert summary.files_changed == 1 and summary.files_scanned == NOTES + 1
    assert counted["read_version"] == [str(changed)] and set(counted["FileEntry"]) == {str(changed)}
    assert counted["load_manifest"] == [] and counted["chunk_map"] == []
    monkeypatch.undo()
    with MemoryIndex(memory.settings) as index:
        assert_consistent(index)


def test_a_write_into_an_index_left_by_a_crash_runs_the_whole_sync(memory, workspace, monkeypatch):
    """A dirty mark (a run killed between its store writes and its manifest) needs the whole
    reconcile: a write's update does it, as the sync without a hint would."""
    for c in resolve_collections(memory.settings):
        mark_dirty(memory.settings.data_dir, c.name)
    with open(workspace / daily(3), "a", encoding="utf-8") as fh:
        fh.write("- changed before the write\n")
    memory.read(daily(5))
    counted = Counted(monkeypatch)
    result = memory.write(daily(5), append="- hiking boots resoled")
    assert result.index is not None and result.index.sync is not None
    assert counted["scan_workspace"] == ["scan_workspace"] and result.index.sync.files_changed == 2
    monkeypatch.undo()
    with MemoryIndex(memory.settings) as index:
        assert_consistent(index)
        assert not index.search("hiking boots", sync=False).stale_paths


def test_scan_paths_lists_a_file_exactly_as_the_whole_scan_does(workspace, state_dir, tmp_path):
    write(workspace / "MEMORY.md", "# memory\n")
    write(workspace / "memory" / "a.md", "a\n")
    write(workspace / "memory" / "deep" / "er" / "b.md", "b\n")
    write(workspace / "memory" / ".openclaw-repair" / "kept.md", "archived\n")
    write(tmp_path / "outside" / "c.md", "c\n")
    os.symlink(tmp_path / "outside", workspace / "memory" / "linked")  # a folder through a link: never memory
    os.symlink(workspace / "memory" / "a.md", workspace / "memory" / "alias.md")
    os.mkfifo(workspace / "memory" / "pipe.md")
    (workspace / "memory" / "folder.md").mkdir()
    settings = settings_for(workspace, state_dir)
    asked = ["MEMORY.md", "USER.md", "memory/a.md", "memory/deep/er/b.md", "memory/.openclaw-repair/kept.md",
             "memory/linked/c.md", "memory/alias.md", "memory/pipe.md", "memory/folder.md", "memory/missing.md"]
    listed = {f.path: f for f in scan_workspace(settings).files}
    assert scan_paths(settings, asked) == [listed[p] for p in asked if p in listed]
    assert [f.path for f in scan_paths(settings, asked) or ()] == ["MEMORY.md", "memory/a.md", "memory/deep/er/b.md"]
    for placed_by_the_whole_scan in ("DREAMS.md", "../outside/c.md", "notes/x.md", "memory/../MEMORY.md", "memory/a.txt"):
        assert scan_paths(settings, ["memory/a.md", placed_by_the_whole_scan]) is None


def test_doctor_opens_no_note_the_index_checked_unchanged_and_still_reports_each(memory, workspace, monkeypatch):
    """The index records what each file it reads is as text; doctor's UTF-8 check takes that for a
    file whose stat the sighting still vouches for, and reads only the others."""
    from openclaw_memory.database import read_only
    from openclaw_memory.doctor import check_files
    from openclaw_memory.doctor.model import CheckContext

    write(workspace / daily(30), b"# Day\nbad \xc3\x28\n")
    write(workspace / daily(31), b"# Day\nnul \x00 here\n")
    # A sighting within the file system's timestamp granularity of a change is racy, never vouched
    # for: the index reads the files once that has passed (every file of the workspace, too).
    newest = max(os.stat(workspace / daily(i)).st_ctime_ns for i in (30, 31))
    wait_for(lambda: time.time_ns() > newest + guard_ns(workspace), 30)
    assert memory.index().files_changed == 2
    opened: list[int] = []
    real_faults = check_files._faults
    monkeypatch.setattr(check_files, "_faults", lambda fd: opened.append(fd) or real_faults(fd))

    def utf8_findings() -> list[tuple[str, tuple[str, ...]]]:
        with read_only():  # as plain doctor: it writes nothing
            return sorted((f.id, f.paths) for f in check_files.check_utf8(CheckContext(memory.settings)))

    expected = [("memory-file-not-text", (daily(31),)), ("not-utf8", (daily(30),))]
    assert utf8_findings() == expected and opened == []
    with open(workspace / daily(40), "ab") as fh:  # edited behind the index's back: read again
        fh.write(b"now bad \xff\n")
    assert utf8_findings() == [*expected, ("not-utf8", (daily(40),))] and len(opened) == 1


def test_doctors_utf8_and_link_checks_read_each_notes_row_once_and_look_again_at_the_changed_ones(
        memory, workspace, monkeypatch):
    """The UTF-8 check and the link check share one read of what the state database vouches for
    (doctor.vouched: each file's sighting, what the index found of its text, whether its link row
    is of the same bytes): every note's row read once, not once per check (two full reads and two
    comparisons per note before), and only the notes changed since are looked at again, each by
    the check that must: read for its text, parsed for its links."""
    from openclaw_memory.database import read_only
    from openclaw_memory.doctor import check_files, check_links
    from openclaw_memory.doctor.model import CheckContext
    from openclaw_memory.doctor.runner import run_checks
    from openclaw_memory.links import table

    run_checks(memory.settings, plain=True)  # a plain doctor: the link table kept
    indexed, behind = workspace / daily(50), workspace / daily(60)
    with open(indexed, "ab") as fh:  # edited, then indexed: its sighting holds, its link row does not
        fh.write(b"see [[nobody-indexed]] and \xff\n")
    newest = os.stat(indexed).st_ctime_ns
    wait_for(lambda: time.time_ns() > newest + guard_ns(workspace), 30)
    assert memory.index().files_changed == 1
    with open(behind, "ab") as fh:  # edited behind the index's back: neither holds
        fh.write(b"see [[nobody-behind]] and \xc3\x28\n")
    read_rows: list[int] = []
    real_rows = Database.rows
    monkeypatch.setattr(Database, "rows", lambda db, sql, params=(): read_rows.append(len(found := real_rows(db, sql, params)))
                        or found)
    parsed: list[str] = []
    real_read = table._read
    monkeypatch.setattr(table, "_read", lambda path, *a: parsed.append(path) or real_read(path, *a))
    opened: list[int] = []
    real_faults = check_files._faults
    monkeypatch.setattr(check_files, "_faults", lambda fd: opened.append(fd) or real_faults(fd))
    with read_only():
        ctx = CheckContext(memory.settings)
        ctx.scan  # noqa: B018 - the scan, before the count
        text = sorted((f.id, f.paths) for f in check_files.check_utf8(ctx))
        links = check_links.check_links(ctx)
    assert text == [("not-utf8", (daily(50),)), ("not-utf8", (daily(60),))]
    assert len(opened) == 1  # the note the index has not read; the other's bytes were checked by the index
    assert [f.id for f in links] == ["broken-links"]
    assert "[[nobody-indexed]]" in links[0].message and "[[nobody-behind]]" in links[0].message
    assert sorted(parsed) == sorted([str(indexed), str(behind)])
    assert sum(read_rows) <= NOTES + 1 + 10  # each note's row once (and the two changed notes' again)


def test_status_and_doctor_load_the_entries_of_the_changed_files_alone(memory, workspace, monkeypatch):
    """The index's status (and doctor's index check) reads each manifest's row and change keys,
    and the entries of the files whose stat moved only (to hash them): never every file's chunk
    list. What it reports is what the whole manifest says."""
    from openclaw_memory.index.status import index_findings

    edited = workspace / daily(42)
    with open(edited, "a", encoding="utf-8") as fh:
        fh.write("- a new line about espresso grinders\n")
    os.unlink(workspace / daily(7))
    counted = Counted(monkeypatch)
    with MemoryIndex(memory.settings) as index:
        status = index.status()
    stale = [f for f in index_findings(memory.settings) if f.id == "index-stale"]
    assert status.stale == sorted([daily(7), daily(42)]) and stale[0].paths == tuple(status.stale)
    assert set(counted["FileEntry"]) == {str(edited)}  # both runs: the edited file's entry alone
    monkeypatch.undo()
    from openclaw_memory.index.manifest import load_manifest

    for row in status.collections:
        assert row.chunks == load_manifest(memory.settings.data_dir, row.name).chunk_count > 0
