"""Incremental, idempotent indexing with the real engine; crash healing and locks.

Nothing here is about ranking, so vectors come from the model-free hash embedder. The crash and
lock tests run real processes (SIGKILL, a second process holding a shard).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pytest

from conftest import REPO, env_for, fault, run_in_process, settings_for, tmpfs, write
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.collections import resolve_collections
from openclaw_memory.index.config import IndexConfig
from openclaw_memory.index.lender import Models
from openclaw_memory.index.manifest import load_manifest

PARAGRAPH = "Paragraph {i} of {name}: the {topic} notes say {detail}, and we keep them for later reference.\n\n"
TOPICS = ["gardening", "kubernetes", "espresso", "sailing", "taxes", "guitar", "hiking", "databases"]


def note(name: str, n: int = 12, topic: str = "misc") -> str:
    body = "".join(PARAGRAPH.format(i=i, name=name, topic=topic, detail=f"detail {i} about {topic} {name}") for i in range(n))
    return f"# {name}\n\n## Section\n\n{body}"


@pytest.fixture(scope="module")
def models():
    return Models(IndexConfig(embedding_backend="hash"))  # the tokenizer is loaded once for the module


def store_points(index: MemoryIndex) -> list[tuple[str, str, int, int, str]]:
    """Every point of every collection: (id, path, startLine, endLine, hash)."""
    points = []
    with index.store.held():  # one load per shard, not one to count and one to scroll
        for c in index.collections():
            if c.points is None:
                continue
            with index.store.open(c.name) as shard:
                for hit in shard.scroll(["path", "startLine", "endLine", "hash"]):
                    p = hit.payload
                    points.append((hit.id, p["path"], p["startLine"], p["endLine"], p["hash"]))
    return points


def assert_consistent(index: MemoryIndex) -> list[tuple[str, str, int, int, str]]:
    """Store and manifests agree exactly: no duplicate, no orphan, nothing missing. Returns the
    store's points (each look at the store loads every shard)."""
    points = store_points(index)
    ids = [p[0] for p in points]
    assert len(ids) == len(set(ids))
    expected = {}
    for c in resolve_collections(index.settings):
        m = load_manifest(index.settings.data_dir, c.name)
        if m is not None:
            for path, entry in m.files.items():
                for pid, h in entry.chunks:
                    expected[pid] = (path, h)
    assert {p[0]: (p[1], p[4]) for p in points} == expected
    return points


def test_incremental_edit_rename_move_delete(workspace, state_dir, tmp_path, models):
    for i, topic in enumerate(TOPICS[:4]):
        write(workspace / "memory" / f"n{i}.md", note(f"n{i}", topic=topic))
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers tea\n")
    extra = tmp_path / "extra"
    extra.mkdir()
    index = MemoryIndex(settings_for(workspace, state_dir, extra=(str(extra),)), models=models)

    first = index.sync()
    assert first.files_scanned == 5 and first.files_changed == 5
    assert first.chunks_reused == 0 and first.chunks_deleted == 0
    assert first.chunks_embedded == len(assert_consistent(index)) > 5

    again = index.sync()
    assert (again.files_changed, again.chunks_embedded, again.chunks_deleted) == (0, 0, 0)

    # Edit: only the new chunk text is embedded.
    path = workspace / "memory" / "n1.md"
    path.write_text(path.read_text() + "## Added\n\nA brand new fact about lighthouse keepers.\n")
    edit = index.sync()
    assert edit.files_changed == 1
    assert 1 <= edit.chunks_embedded < first.chunks_embedded / 4
    before = Counter(p[1] for p in assert_consistent(index))

    # Rename and move into a sub-folder: nothing re-embedded.
    os.rename(workspace / "memory" / "n2.md", workspace / "memory" / "renamed.md")
    (workspace / "memory" / "sub").mkdir()
    os.rename(workspace / "memory" / "n3.md", workspace / "memory" / "sub" / "n3.md")
    moved = index.sync()
    assert moved.chunks_embedded == 0
    assert moved.files_changed == 2 and moved.files_removed == 2
    assert moved.chunks_reused == before["memory/n2.md"] + before["memory/n3.md"] == moved.chunks_deleted
    assert_consistent(index)

    # Move across collections (memory/ -> extra path): still nothing re-embedded.
    os.rename(workspace / "memory" / "renamed.md", extra / "renamed.md")
    across = index.sync()
    assert across.chunks_embedded == 0 and across.chunks_reused == before["memory/n2.md"]
    assert {p[1] for p in assert_consistent(index)} >= {os.path.relpath(extra / "renamed.md", workspace), "memory/sub/n3.md"}

    # Delete: its chunks leave the index.
    os.unlink(workspace / "memory" / "n0.md")
    gone = index.sync()
    assert gone.files_removed == 1 and gone.chunks_deleted == before["memory/n0.md"]
    assert "memory/n0.md" not in {p[1] for p in assert_consistent(index)}

    # Touch without change: re-read, nothing written.
    os.utime(workspace / "MEMORY.md", ns=(1, 1))
    touched = index.sync()
    assert (touched.files_changed, touched.chunks_embedded, touched.chunks_deleted) == (0, 0, 0)


def test_settings_change_reembeds_and_says_why(workspace, state_dir, models):
    """doctor and the re-embedding sync name the settings that changed, then and now (they said the
    model, the same both sides, and the fingerprints cut to 12 characters: "model=senten" both sides)."""
    from openclaw_memory.index.status import index_findings

    write(workspace / "memory" / "a.md", note("a", n=20, topic="sailing"))
    MemoryIndex(settings_for(workspace, state_dir), models=models).sync()
    budget, overlap = models.budget
    (state_dir / "openclaw-memory.toml").write_text("[index]\nchunk_tokens = 64\noverlap_tokens = 8\n")
    settings = settings_for(workspace, state_dir)
    (found,) = [f for f in index_findings(settings) if f.id == "index-fingerprint"]
    assert found.message.startswith("the embedding settings changed since the last index: chunk size (chunk_tokens) "
                                    "default -> 64, overlap (overlap_tokens) default -> 8; "), found.message
    index = MemoryIndex(settings)
    summary = index.sync()
    said = [n for n in summary.notes if "embedding settings changed" in n]
    assert said and all(n.endswith(f"embedding settings changed (chunk size (chunk_tokens) {budget} -> 64, overlap "
                                   f"(overlap_tokens) {overlap} -> 8): re-embedding every chunk") for n in said), said
    assert summary.chunks_embedded == len(assert_consistent(index)) > 0


@pytest.mark.parametrize("server", [False, True], ids=["edge", "qdrant-local"])
def test_new_chunking_rules_chunk_every_file_again_and_embed_only_new_texts(workspace, state_dir, tmp_path, monkeypatch, server):
    import openclaw_memory.index.blocks as blocks
    import openclaw_memory.index.chunking as chunking

    url = f"file://{tmp_path / 'qdrant'}" if server else None  # the server backend's client, on its local mode

    write(workspace / "memory" / "a.md", note("a", n=20, topic="sailing"))
    turns = "".join(f"**{who}:** turn {i} about the {topic}\n\n" for i, (who, topic) in
                    enumerate(zip(["Sam", "Lena"] * 4, ["boat", "sail", "mast", "keel"] * 2)))
    write(workspace / "memory" / "2025-01-06.md", f"# 2025-01-06\n\n{turns}")
    # Built by the rules before this version: no turns in a log with a blank line after each.
    with monkeypatch.context() as old:
        old.setattr(chunking, "CHUNKER_VERSION", chunking.CHUNKER_VERSION - 1)
        old.setattr(blocks, "_spaced_turns", lambda lines, found: found)
        MemoryIndex(settings_for(workspace, state_dir, qdrant_url=url)).sync()
    index = MemoryIndex(settings_for(workspace, state_dir, qdrant_url=url))
    # Its vectors hold: not reported as other embedding settings, and a search without a sync answers.
    assert not any(c.settings_changed for c in index.status().collections)
    assert index.search("keel", sync=False).results
    summary = index.sync()
    assert any("chunking rules changed" in n for n in summary.notes), summary.notes
    # Only the log's eight turns are new texts: its section keeps its vector, and a.md is unchanged.
    assert summary.chunks_embedded == 8 and summary.chunks_reused == 1 and summary.files_changed == 1, summary
    assert_consistent(index)
    again = index.sync()
    assert again.chunks_embedded == 0 and again.files_changed == 0 and not again.notes


def test_full_rebuild(workspace, state_dir, models):
    write(workspace / "memory" / "a.md", note("a", topic="guitar"))
    index = MemoryIndex(settings_for(workspace, state_dir), models=models)
    first = index.sync()
    full = index.sync(full=True)
    assert full.chunks_embedded == first.chunks_embedded and full.chunks_reused == 0
    assert full.notes == ()  # asked for: no note (the CLI printed "warning: --full: rebuilt ...")
    assert_consistent(index)


def test_index_force_says_it_rebuilt_with_no_warning(cli, workspace):
    write(workspace / "memory" / "a.md", note("a", topic="guitar"))
    assert cli("index").returncode == 0
    rebuilt = cli("index", "--force")  # OpenClaw's spelling of --full
    assert rebuilt.returncode == 0 and "warning" not in rebuilt.stderr, rebuilt.stderr  # (progress lines only)
    assert rebuilt.stdout.startswith("Rebuilt the index of agent main:"), rebuilt.stdout


def test_a_process_keeping_shards_open_syncs_again(workspace, state_dir, models):
    """What ``watch`` and ``serve`` do: shards (and their locks) kept open between syncs.

    The second sync checks the shards it already holds; it must not wait on its own lock.
    """
    write(workspace / "memory" / "a.md", note("a", topic="guitar"))
    index = MemoryIndex(settings_for(workspace, state_dir), models=models, keep_open=True)
    try:
        index.sync()
        write(workspace / "memory" / "a.md", note("a", topic="violin"))
        again = index.sync()
        assert again.files_changed == 1
        assert_consistent(index)
    finally:
        index.close()


def test_noop_index_never_loads_the_model(workspace, state_dir, cli):
    for i in range(5):
        write(workspace / "memory" / f"n{i}.md", note(f"n{i}", n=3))
    assert cli("index", "--json").returncode == 0
    # A fresh process, so that sys.modules shows what the no-op sync loaded: neither the tokenizer
    # nor any embedder (the hash one included).
    probe = textwrap.dedent(
        """
        import sys
        from openclaw_memory.index.api import MemoryIndex
        from openclaw_memory.settings import resolve_settings
        s = MemoryIndex(resolve_settings()).sync()
        print(s.files_changed, s.chunks_embedded, *(m in sys.modules for m in (
            "torch", "sentence_transformers", "tokenizers", "onnxruntime", "openclaw_memory.index.hash_embedding")))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True,
                         env=env_for(workspace, state_dir)).stdout.split()
    assert out == ["0", "0", "False", "False", "False", "False", "False"]


def test_sigkill_mid_index_then_rerun_heals(workspace, state_dir, tmp_path, cli, cli_process):
    for i, topic in enumerate(TOPICS):
        write(workspace / "memory" / f"n{i}.md", note(f"n{i}", n=30, topic=topic))
    (state_dir / "openclaw-memory.toml").write_text("[index]\nembed_batch = 8\n")
    killed = cli_process("index", "--json", env=fault("index:batch:2=kill"))
    assert killed.returncode == -9, killed.stderr
    settings = settings_for(workspace, state_dir)
    partial = MemoryIndex(settings)
    assert 0 < len(store_points(partial)) and all(load_manifest(settings.data_dir, c.name) is None for c in partial.collections())
    partial.close()
    # doctor names a killed first index as interrupted (it said no index was there: "index-missing")
    found = [f["id"] for f in cli("doctor", "--json").json()["findings"]]
    assert "index-interrupted" in found and "index-missing" not in found

    # Meanwhile the user edits a file and deletes another: the rerun must converge anyway.
    write(workspace / "memory" / "n1.md", note("n1-edited", n=30, topic="changed"))
    os.unlink(workspace / "memory" / "n2.md")
    rerun = cli("index", "--json")
    assert rerun.returncode == 0, rerun.stderr
    healed = MemoryIndex(settings)
    got = sorted(p[1:] for p in assert_consistent(healed))

    fresh_state = tmp_path / "fresh-state"
    fresh_state.mkdir()
    fresh = cli("index", "--json", env={"OPENCLAW_STATE_DIR": str(fresh_state)})
    assert fresh.returncode == 0, fresh.stderr
    clean = MemoryIndex(settings_for(workspace, fresh_state))
    assert got == sorted(p[1:] for p in store_points(clean))
    assert "memory/n2.md" not in {p[0] for p in got}


def test_a_search_does_not_wait_for_a_writer_of_the_state_database(workspace, state_dir, cli):
    """The probe cache a search writes is only a cache: with another process writing the state
    database, the search answers without it instead of waiting on the database."""
    import sqlite3
    import threading

    from openclaw_memory.database.failures import BUSY_TIMEOUT_S

    write(workspace / "MEMORY.md", "# Memory\n\n- likes green tea\n")
    write(workspace / "memory/notes.md", "# Notes\n\nsailing on Sunday\n")
    assert cli("index").returncode == 0
    db = settings_for(workspace, state_dir).data_dir / "state.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("DELETE FROM probes")  # every shard is probed, and its probe recorded, again
    holder.execute("BEGIN IMMEDIATE")
    outcome: list = []
    search = threading.Thread(target=lambda: outcome.append(cli("search", "sailing", "--no-sync", "--json")))
    try:
        search.start()
        search.join(timeout=BUSY_TIMEOUT_S / 2)
        assert not search.is_alive(), "the search waited for the writer"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        search.join()
    (result,) = outcome
    assert result.returncode == 0 and result.json()["results"][0]["path"] == "memory/notes.md"


def test_lock_contention_gives_a_clear_message(workspace, state_dir, cli):
    write(workspace / "memory" / "a.md", note("a", n=2))
    assert cli("index").returncode == 0
    (state_dir / "openclaw-memory.toml").write_text("[index]\nlock_timeout = 1\n")
    # Another process holds the shard until its stdin closes.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import sys
                from openclaw_memory.index.api import MemoryIndex
                from openclaw_memory.settings import resolve_settings
                with MemoryIndex(resolve_settings()).store.open("memory-dir-main"):
                    print("held", flush=True)
                    sys.stdin.read()
                """
            ),
        ],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO, env=env_for(workspace, state_dir),
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        blocked = cli("search", "fact", "--mode", "text", "--json")
        assert blocked.returncode == 2
        assert "Traceback" not in blocked.stderr and "WouldBlock" not in blocked.stderr
        assert f"pid {holder.pid}" in blocked.json()["error"]
        assert "waiting" in blocked.stderr
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    assert cli("search", "fact", "--mode", "text", "--json").returncode == 0


def test_the_progress_total_never_grows_during_a_run(workspace, state_dir, cli):
    """Chunks are counted as files are read: until the last file is read no total is shown."""
    import re

    for i in range(40):
        write(workspace / "memory" / f"n{i:02}.md", "\n\n".join(f"# Part {j}\n" + f"note {i} {j} " * 40 for j in range(6)))
    (workspace / "openclaw-memory.toml").write_text("[index]\nembed_batch = 16\n")
    done = cli("index")
    assert done.returncode == 0, done.stderr
    totals = {int(m.group(1)) for m in re.finditer(r"embedded \d+/(\d+) chunks", done.stderr)}
    assert len(totals) == 1, done.stderr  # one total, given only once it is known
    assert "still counting chunks" in done.stderr
    counted = [line for line in done.stderr.splitlines() if "still counting" in line]
    assert all("ETA" not in line for line in counted)


def test_a_same_size_rewrite_that_keeps_the_mtime_is_reembedded(workspace, state_dir, models):
    """The index's change rule is the watchdog's: size, ns mtime, ns ctime, inode, and a read
    too close to the mtime (racy) is checked again; a rewrite that restores the mtime is still seen."""
    note = workspace / "memory" / "fact.md"
    write(note, "# Fact\nthe code is 1234\n")
    settings = settings_for(workspace, state_dir)
    with MemoryIndex(settings, models=models) as index:
        index.sync()
        st = note.stat()
        note.write_text("# Fact\nthe code is 9876\n")  # same size
        os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime, as `cp -p` or a fast editor gives
        assert note.stat().st_size == st.st_size and note.stat().st_mtime_ns == st.st_mtime_ns
        again = index.sync()
        assert again.files_changed == 1 and again.chunks_embedded >= 1
        hits = index.search("code 9876", mode="text", min_score=0.0).results
        assert hits and "9876" in hits[0].snippet


def test_a_racy_entry_is_a_suspect_until_read_safely_after_its_mtime(workspace, state_dir):
    from openclaw_memory.files.scan import scan_workspace
    from openclaw_memory.index.manifest import FileEntry, Manifest, diff_files, read_version

    write(workspace / "memory" / "n.md", "# N\nnew\n")
    settings = settings_for(workspace, state_dir)
    (f,) = [m for m in scan_workspace(settings).files if m.path == "memory/n.md"]
    roots = (str(workspace),)
    soon = read_version(f.abs_path, roots, racy_guard_ns=10**12)  # a granularity wider than its age
    later = read_version(f.abs_path, roots, racy_guard_ns=0)
    assert soon is not None and later is not None and soon.stat.racy and not later.stat.racy

    def manifest(content) -> Manifest:
        m = Manifest("c", "main")
        m.files["memory/n.md"] = FileEntry(content.stat, content.hash, [])
        return m

    assert diff_files(manifest(soon), [f]).suspects == [f]  # hashed again: a same-size rewrite may hide
    assert diff_files(manifest(later), [f]).suspects == []


def test_a_binary_file_named_md_is_left_out_of_the_index_and_named(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n- real text\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "blob.md").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64)
    done = cli("index", "--json")
    assert done.returncode == 0
    summary = json.loads(done.stdout)
    assert "memory/blob.md is not text" in done.stderr
    status = json.loads(cli("status", "--json").stdout)
    (collection,) = [c for c in status["collections"] if c["name"].startswith("memory-dir")]
    assert collection["chunks"] == 0 and collection["staleFiles"] == []  # not re-read at every search
    assert summary["chunksEmbedded"] >= 1  # MEMORY.md still is


def test_index_and_state_share_one_observation_per_file_and_drop_it_when_the_file_goes(workspace, state_dir, models):
    from openclaw_memory.database import Database, dec
    from openclaw_memory.history.report import file_states

    note = write(workspace / "memory" / "kept.md", "# Kept\n\nthe garden gate is blue\n")
    gone = write(workspace / "memory" / "gone.md", "# Gone\n\na note that will be deleted\n")
    old = time.time() - 60  # past every timestamp granularity: the sightings are trusted
    for path in (note, gone):
        os.utime(path, (old, old))
    settings = settings_for(workspace, state_dir)
    db = Database(settings.data_dir)

    def observed() -> dict[str, str]:
        return {dec(p): h for p, h in db.rows("SELECT path, hash FROM observations")}

    with MemoryIndex(settings, models=models) as index:
        index.sync()
        seen = observed()
        assert {str(note), str(gone)} <= set(seen)  # the index recorded what it hashed
        states = {f.path: f.version for f in file_states(settings).files}
        assert states["memory/kept.md"] == seen[str(note)]  # `state` took the index's sighting, same hash
        assert observed() == seen
        gone.unlink()
        assert index.sync().files_removed == 1
        assert str(gone) not in observed() and str(note) in observed()


def test_a_search_while_the_first_index_is_built_says_so(workspace, state_dir):
    from openclaw_memory.errors import IndexMissing
    from openclaw_memory.index.agent_lock import agent_lock
    from openclaw_memory.memory.local import LocalMemory

    write(workspace / "MEMORY.md", "# Memory\n\n- likes tea\n")
    settings = settings_for(workspace, state_dir)
    with pytest.raises(IndexMissing, match="build it with `openclaw-memory index`"):
        LocalMemory(settings).search("tea", sync=False)
    lock = agent_lock(settings, 0)
    lock.acquire()  # as the sync of a service that just started holds it
    try:
        with pytest.raises(IndexMissing, match=r"being built right now \(pid \d+\); search again"):
            LocalMemory(settings).search("tea")
    finally:
        lock.release()


def test_progress_counts_as_saved_only_what_an_interrupted_run_keeps(workspace, state_dir):
    """A first index is written in place (kept if stopped); changes past one batch to an existing
    index are built beside it and swapped in at the end (not kept): Ctrl-C must not call them saved."""
    from openclaw_memory.memory.local import LocalMemory

    (state_dir / "openclaw-memory.toml").write_text("[index]\nembed_batch = 2\n")
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(6):
        write(workspace / "memory" / f"n{i}.md", f"# Note {i}\n\nAbout topic {i}.\n")
    memory = LocalMemory(settings_for(workspace, state_dir))
    first: list = []
    memory.index(progress=first.append)
    embedded = [p for p in first if p.phase == "embed"]
    assert embedded and embedded[-1].chunks_written == embedded[-1].chunks_done > 0
    for i in range(6):
        write(workspace / "memory" / f"n{i}.md", f"# Note {i}\n\nAbout topic {i}, changed.\n")
    again: list = []
    memory.index(progress=again.append)
    embedded = [p for p in again if p.phase == "embed"]
    assert embedded and embedded[-1].chunks_done > 0 and all(p.chunks_written == 0 for p in embedded)


def test_an_unreadable_note_is_named_not_stale_and_comes_back_once_readable(workspace, state_dir):
    """Run as a user without root's override (a user namespace where this uid is 1000): a note of
    mode 000 cannot be read. It was treated as removed, then listed as stale forever with advice
    (`run index`) that could not help."""
    import shutil
    import subprocess
    import sys

    from conftest import env_for

    unshare = shutil.which("unshare")
    as_user = [unshare or "unshare", "-U", "--map-user=1000", "--map-group=1000"]
    if not unshare or subprocess.run([*as_user, "true"], capture_output=True).returncode != 0:
        pytest.skip("needs `unshare -U --map-user` to run without root's permission override")

    def run(*args: str) -> dict:
        done = subprocess.run([*as_user, sys.executable, "-m", "openclaw_memory", *args, "--json"], capture_output=True,
                              text=True, env=env_for(workspace, state_dir), cwd=workspace, timeout=120)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    write(workspace / "MEMORY.md", "# Memory\n")
    note = write(workspace / "memory" / "locked.md", "# Locked\n\nThe okapi enclosure code.\n")
    write(workspace / "memory" / "sub" / "in.md", "# In\n\nA folder that turns unreadable.\n")
    assert run("index")["filesScanned"] == 3
    note.chmod(0)
    (workspace / "memory" / "sub").chmod(0)
    try:
        indexed = run("index")
        assert "not indexed: memory/locked.md (permission denied: it is indexed again once it can be read)" in indexed["notes"]
        assert any("memory/sub" in n and "not indexed" in n for n in indexed["notes"])
        assert all(c["staleFiles"] == [] for c in run("status")["collections"])
    finally:
        note.chmod(0o644)
        (workspace / "memory" / "sub").chmod(0o755)
    run("index")
    assert run("search", "okapi enclosure", "--mode", "text")["results"][0]["path"] == "memory/locked.md"


def test_a_cold_search_loads_each_manifest_once_and_the_shard_check_counts_in_the_database(workspace, state_dir, models,
                                                                                          monkeypatch):
    """Opening a shard checks its point count against the manifest's: counted by the database, not
    by loading the whole manifest a second time (at 30,000 notes, 45% of a cold search)."""
    from openclaw_memory.index import api, manifest

    for i in range(4):
        write(workspace / "memory" / f"n{i}.md", note(f"n{i}", n=4, topic=TOPICS[i]))
    settings = settings_for(workspace, state_dir)
    MemoryIndex(settings, models=models).sync()
    for c in resolve_collections(settings):
        loaded = load_manifest(settings.data_dir, c.name)
        assert manifest.manifest_chunk_count(settings.data_dir, c.name) == (loaded.chunk_count if loaded else None)
    assert manifest.manifest_chunk_count(settings.data_dir, "no-such-collection") is None
    loads = []
    real_load = manifest.load_manifest

    def counted(data_dir, name):
        loads.append(name)
        return real_load(data_dir, name)

    monkeypatch.setattr(manifest, "load_manifest", counted)
    monkeypatch.setattr(api, "load_manifest", counted)
    fresh = MemoryIndex(settings, models=models)  # a new process's index: shards closed, probes recorded
    assert fresh.search("kubernetes notes", sync=False).results
    assert sorted(loads) == sorted(set(loads))  # one load per collection, the search's own


def test_a_sync_maps_old_chunks_only_for_what_it_embeds(workspace, state_dir, models, monkeypatch):
    """A sync that changes nothing builds no hash -> point map; one that embeds a note looks up its
    own hashes alone; a large one builds the map once. Vectors are lent the same way by each."""
    from openclaw_memory.index import sync as sync_module

    built = []
    real_map = sync_module.chunk_map
    monkeypatch.setattr(sync_module, "chunk_map", lambda *args: built.append(1) or real_map(*args))
    (state_dir / "openclaw-memory.toml").write_text("[index]\nembed_batch = 1\n")  # a piece per chunk
    for i in range(6):
        write(workspace / "memory" / f"n{i}.md", note(f"n{i}", n=3, topic=TOPICS[i]))
    index = MemoryIndex(settings_for(workspace, state_dir), models=models)
    index.sync()
    built.clear()  # the first index: nothing to lend
    assert index.sync().files_changed == 0 and built == []
    write(workspace / "memory" / "copy.md", (workspace / "memory" / "n1.md").read_text())  # one piece: one lookup
    one = index.sync()
    assert one.chunks_embedded == 0 and one.chunks_reused >= 1 and built == []
    for i in range(2, 6):  # several pieces: the map, built once
        os.rename(workspace / "memory" / f"n{i}.md", workspace / "memory" / f"moved-{i}.md")
    many = index.sync()
    assert many.chunks_embedded == 0 and many.chunks_reused >= 4 and built == [1]
    assert_consistent(index)


@pytest.mark.parametrize("late", [(2300 - 1970) * 365 * 86400 * 10**9, 10**23], ids=["2300", "far-past-2**64-ns"])
def test_a_note_dated_past_2262_is_indexed_searched_and_checked(tmp_path, state_dir, late):
    # A time past 2262-04-11 in nanoseconds does not fit SQLite's signed 64-bit INTEGER (ext4 keeps
    # dates until 2446, tmpfs any: a `touch -d` typo, an archive's bogus date): every index, every
    # search that synced, doctor and the watchdog's snapshot stopped with an OverflowError traceback.
    with tmpfs(tmp_path / "ws", "4m") as workspace:
        def cli(*args: str):
            return run_in_process(args, env=env_for(workspace, state_dir), cwd=workspace)

        far = write(workspace / "memory" / "capsule.md", "# Capsule\n\nThe time capsule opens in the far future.\n")
        write(workspace / "memory" / "near.md", "# Near\n\nThe garden gate needs oil.\n")
        os.utime(far, ns=(late, late))
        assert far.stat().st_mtime_ns == late
        first = cli("index", "--json")
        assert first.returncode == 0 and "Traceback" not in first.stderr, first.stderr
        assert json.loads(first.stdout)["filesChanged"] == 2
        found = cli("search", "time capsule", "--json")
        assert found.returncode == 0, found.stderr
        assert [r["path"] for r in found.json()["results"]][:1] == ["memory/capsule.md"]
        assert "stale" not in found.json() and "stalePaths" not in found.json()
        # Dated as late as a stored time can be (2262), not wrapped round to 1716.
        assert "memory/capsule.md" in cli("search", "time capsule", "--since", "2026-01-01").stdout
        assert "memory/capsule.md" not in cli("search", "time capsule", "--until", "2026-01-01", "--min-score", "0").stdout
        again = cli("index", "--json")  # its stat cannot be kept as it is: hashed again, the same content
        assert again.returncode == 0 and json.loads(again.stdout)["filesChanged"] == 0, again.stderr
        checked = cli("doctor")
        assert "Traceback" not in checked.stderr and checked.returncode in (0, 1), checked.stderr
        assert cli("watchdog", "snapshot").returncode == 0
        assert cli("watchdog", "verify").returncode == 0  # hashed again: unchanged
        write(far, "# Capsule\n\nOpened early.\n")
        os.utime(far, ns=(late, late))
        broken = cli("watchdog", "verify")
        assert broken.returncode == 1 and "memory/capsule.md" in broken.stdout, broken.stderr


def test_a_name_with_a_line_break_is_one_line_in_every_index_and_search_warning(workspace, cli):
    # A warning naming a file is one line: a name's newline split "not indexed: ..." and the stale
    # files' warning in two, the second looking like a line of its own.
    write(workspace / "memory" / "ok.md", "# Ok\n\nThe kettle whistles.\n")
    (workspace / "memory" / "two\nlines.md").write_bytes(b"# Binary\n\x00\x01")
    (workspace / "memory" / "tab\tname.md").write_text("# Tab\n\nThe kettle is blue.\n")
    done = cli("index")
    assert done.returncode == 0, done.stderr
    assert "warning: not indexed: memory/two\\x0alines.md is not text (it holds NUL bytes)\n" in done.stderr
    (workspace / "memory" / "tab\tname.md").write_text("# Tab\n\nThe kettle is red now.\n")
    stale = cli("search", "kettle", "--mode", "text")
    assert stale.returncode == 0
    (line,) = [x for x in stale.stderr.splitlines() if "changed since the last index" in x]
    assert "memory/tab\\x09name.md" in line
    exact = cli("search", "kettle", "--mode", "text", "--json")  # JSON keeps the name as it is
    assert exact.json()["stalePaths"] == ["memory/tab\tname.md"]
