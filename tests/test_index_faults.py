"""The index under a running index, a rebuild and a full disk: real processes and engine (the hash
embedder: nothing here is about ranking).

- a search while `index` runs answers at once from the last complete index (no wait, no "locked");
- `index --full` builds beside the live index: searches meanwhile use the old one, then the new;
- a state dir on a full (real, small) tmpfs: `index` says the disk is full, where, and that
  nothing changed; no SIGBUS, no temp folder left, the previous index still answers.

The paused `index` is a real process (its hook stops the process), and so is every command while
the disk is full: a SIGBUS there would kill the test process. The other commands run in this process.
"""

from __future__ import annotations

import os
import resource
import shlex
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import CliResult, env_for, fault, run_paused, tmpfs, write
from openclaw_memory.database import forget_connections

FACTS = "# Memory\n\n## Preferences\n\n- likes green tea in the morning\n"
# A batch of 2 chunks makes a small note need several: it is built beside the live shard.
TOML = "[index]\nembed_batch = 2\n"


def _note(word: str, n: int) -> str:
    line = f"The {word} fact number {{i}} is worth keeping around, with enough words to fill a chunk of its own. "
    return f"# {word}\n\n" + "".join(f"## Part {i}\n\n" + line.format(i=i) * 12 + "\n\n" for i in range(n))


def _paused_index(ws: Path, sd: Path, *args: str) -> subprocess.Popen:
    """`index` stopped by the test hook after its first batch is written."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "openclaw_memory", "index", *args], cwd=ws, text=True,
        env=fault("index:batch:1=pause", env=env_for(ws, sd)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    for line in proc.stderr:
        if line.startswith("test-hook: paused at index:batch:1"):
            return proc
    proc.wait()
    raise AssertionError(f"index ended without pausing: {proc.returncode}")


def _resume(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGUSR1)
    proc.stderr.read()
    assert proc.wait(timeout=900) == 0


def _paths(result: CliResult) -> set[str]:
    assert result.returncode == 0, result.stderr
    return {r["path"] for r in result.json()["results"]}


def _edge(sd: Path) -> Path:
    (data,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return data / "index" / "edge"


@pytest.fixture
def indexed(workspace, state_dir, cli):
    write(state_dir / "openclaw-memory.toml", TOML)
    write(workspace / "MEMORY.md", FACTS)
    write(workspace / "memory" / "sailing.md", _note("sailing", 3))
    assert cli("index").returncode == 0
    return workspace, state_dir


def test_search_while_index_runs_answers_from_the_last_complete_index(indexed, cli):
    ws, sd = indexed
    write(ws / "memory" / "zeppelin.md", _note("zeppelin", 12))  # more than one batch: built beside
    proc = _paused_index(ws, sd)
    try:
        during = cli("search", "green tea", "--json")
        assert "MEMORY.md" in _paths(during)
        assert during.json()["updating"] is True and not during.stderr, during.stderr  # routine: no warning
        assert "memory/zeppelin.md" not in _paths(cli("search", "zeppelin fact", "--mode", "text", "--json"))
    finally:
        _resume(proc)
    assert "memory/zeppelin.md" in _paths(cli("search", "zeppelin fact", "--mode", "text", "--json"))
    assert not [p for p in _edge(sd).iterdir() if p.name.startswith(".")]


def test_search_while_index_embeds_a_small_change_answers_at_once(indexed, cli):
    """A change of one batch is embedded with no shard held, then written in one short step: the
    index took the vectors of the note's unchanged chunks from the live shard and, in a store that
    keeps its shards open (every command's), held it through the embedding: a search meanwhile
    waited the lock timeout and failed ("held by another openclaw-memory process ... waited 5 s")."""
    ws, sd = indexed
    write(sd / "openclaw-memory.toml", TOML + "lock_timeout = 0.5\n")
    sailing = ws / "memory" / "sailing.md"
    sailing.write_text(sailing.read_text().replace("fact number 1 ", "fact number one "))
    seen = {}

    def meanwhile():
        seen["search"] = cli("search", "green tea", "--json")

    code, _out, err = run_paused(ws, sd, ("index",), "index:embedded:1", meanwhile)
    assert code == 0, err
    assert "MEMORY.md" in _paths(seen["search"]), seen["search"].stderr


def test_full_rebuild_is_built_beside_and_swapped_in(indexed, cli):
    ws, sd = indexed
    before = sorted(p.name for p in _edge(sd).iterdir())
    proc = _paused_index(ws, sd, "--full")
    try:
        assert any(p.name.startswith(".stage-") for p in _edge(sd).iterdir())
        assert {"MEMORY.md", "memory/sailing.md"} <= _paths(cli("search", "green tea sailing fact", "--mode", "text", "--json"))
    finally:
        _resume(proc)
    assert sorted(p.name for p in _edge(sd).iterdir()) == before
    assert {"MEMORY.md", "memory/sailing.md"} <= _paths(cli("search", "green tea sailing fact", "--mode", "text", "--json"))
    assert cli("doctor").returncode == 0


@pytest.fixture
def small_tmpfs(tmp_path):
    with tmpfs(tmp_path / "full", "600m") as mount:
        yield mount


def _fill(folder: Path, leave: int) -> None:
    st = os.statvfs(folder)
    free = st.f_bavail * st.f_frsize
    with open(folder / f"filler-{len(list(folder.glob('filler*')))}", "wb") as fh:
        fh.write(b"\1" * max(0, free - leave))


def _manifest_rows(sd: Path) -> list[tuple]:
    (db,) = sd.rglob("state.db")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT * FROM manifests ORDER BY collection").fetchall() + conn.execute(
            "SELECT * FROM manifest_files ORDER BY collection, path").fetchall()
    finally:
        conn.close()


def _leftovers(sd: Path) -> list[str]:
    return [str(p) for p in sd.rglob("*") if p.name.startswith(".stage-") or p.name.endswith(".tmp")]


def test_index_on_a_full_state_dir_says_so_and_changes_nothing(workspace, small_tmpfs, cli, cli_process):
    sd = small_tmpfs / "state"
    sd.mkdir()
    on_full = {"OPENCLAW_STATE_DIR": str(sd)}
    write(sd / "openclaw-memory.toml", TOML)
    write(workspace / "MEMORY.md", FACTS)
    write(workspace / "memory" / "sailing.md", _note("sailing", 3))
    assert cli("index", env=on_full).returncode == 0
    manifests = _manifest_rows(sd)
    assert manifests

    write(workspace / "memory" / "zeppelin.md", _note("zeppelin", 12))
    _fill(small_tmpfs, 130 << 20)  # room to open the index (64 MiB), not to copy a shard beside it (~85 MiB more)
    result = cli_process("index", env=on_full)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    message = result.stderr
    assert "full" in message and str(sd) in message and "nothing was changed" in message
    assert _leftovers(sd) == []
    assert _manifest_rows(sd) == manifests

    search = cli_process("search", "green tea", "--json", env=on_full)
    assert "MEMORY.md" in _paths(search)  # the previous index still answers
    assert "index not refreshed" in search.stderr and "full" in search.stderr
    # Said as OpenClaw's memory_search says a sync that failed: stale true, with a warning and an action.
    said = search.json()
    assert said["stale"] is True and said["stalePaths"] == ["memory/zeppelin.md"], said
    assert "Search results may be incomplete" in said["warning"] and said["action"].endswith(" index`")
    # And through MCP, its action the command with the workspace, state dir and agent the server serves (the
    # model's shell lacks its environment).
    from test_mcp import payload, run_session

    async def script(session):
        return await session.call_tool("memory_search", {"query": "green tea"})

    told = payload(run_session(workspace, sd, script))
    assert told["stale"] is True and told["stalePaths"] == ["memory/zeppelin.md"] and told["warning"] == said["warning"]
    assert told["action"] == f"Run: `openclaw-memory -w {shlex.quote(str(workspace))} --state-dir {shlex.quote(str(sd))} --agent main index`"

    _fill(small_tmpfs, 1 << 20)  # now not even room to open it: a message, not a SIGBUS
    for args in (["search", "green tea"], ["index"], ["doctor"]):
        refused = cli_process(*args, env=on_full)
        assert refused.returncode in (0, 1) and "Traceback" not in refused.stderr, (args, refused.stderr)
    assert _leftovers(sd) == []

    for filler in small_tmpfs.glob("filler*"):
        filler.unlink()
    assert cli("index", env=on_full).returncode == 0
    assert "memory/zeppelin.md" in _paths(cli("search", "zeppelin fact", "--mode", "text", "--json", env=on_full))


def test_first_index_on_a_full_state_dir(workspace, small_tmpfs, cli_process):
    sd = small_tmpfs / "state"
    sd.mkdir()
    on_full = {"OPENCLAW_STATE_DIR": str(sd)}
    write(sd / "openclaw-memory.toml", TOML)
    write(workspace / "MEMORY.md", FACTS)
    _fill(small_tmpfs, 1 << 20)
    result = cli_process("index", env=on_full)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "full" in result.stderr and "nothing was changed" in result.stderr
    # No index to keep answering: it said "the last complete index is still in use", and search then found none.
    assert "there is no search index yet" in result.stderr and "still in use" not in result.stderr, result.stderr
    assert _leftovers(sd) == []


def test_a_rebuilt_state_database_costs_a_reread_of_the_files_not_an_embedding(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", FACTS)
    write(workspace / "memory" / "sailing.md", _note("sailing", 3))
    first = cli("index", "--json")
    assert first.returncode == 0 and first.json()["chunksEmbedded"] > 0, first.stderr
    before = _paths(cli("search", "green tea", "--json"))
    (db,) = state_dir.rglob("state.db")
    forget_connections()
    with open(db, "r+b") as fh:  # garbled past the header: SQLite's integrity check fails
        fh.seek(4096)
        fh.write(b"\xa5" * 8192)
    assert "state-db-damaged" in {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    fixed = cli("doctor", "--fix", "--json")
    assert fixed.returncode == 0 and fixed.json()["remaining"] == [], fixed.stdout
    again = cli("index", "--json")
    assert again.returncode == 0, again.stderr
    assert again.json()["chunksEmbedded"] == 0 and again.json()["chunksDeleted"] == 0, again.stdout
    assert _paths(cli("search", "green tea", "--json")) == before


def test_a_damaged_shard_dropped_by_fix_on_a_full_disk_is_said_dropped(workspace, small_tmpfs, cli, cli_process):
    """The rebuild dropped the damaged shard, then its re-index failed for want of room, and the
    repair said "nothing was changed, the last complete index is still in use; ... nothing was
    deleted": the shard was gone, and the next doctor named no damage, only stale files."""
    sd = small_tmpfs / "state"
    sd.mkdir()
    on_full = {"OPENCLAW_STATE_DIR": str(sd)}
    write(workspace / "MEMORY.md", FACTS)
    write(workspace / "memory" / "sailing.md", _note("sailing", 3))
    assert cli("index", env=on_full).returncode == 0
    (config,) = [p for p in sd.rglob("edge_config.json") if p.parent.name.startswith("memory-dir-")]
    config.write_text("garbage")
    notes = {p: p.read_bytes() for p in workspace.rglob("*.md")}
    _fill(small_tmpfs, 100 << 20)  # room to open the index (64 MiB), not to rebuild one (160 MiB)

    fixed = cli_process("doctor", "--fix", "--json", env=on_full)

    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "index-damaged"]
    assert repair["status"] == "failed" and "full" in repair["detail"], repair
    assert f"dropped {config.parent.name}" in repair["detail"] and "nothing was deleted" not in repair["detail"], repair
    assert not config.parent.exists()
    for filler in small_tmpfs.glob("filler*"):
        filler.unlink()
    assert cli_process("doctor", "--fix", env=on_full).returncode == 0
    assert "memory/sailing.md" in _paths(cli("search", "sailing fact", "--mode", "text", "--json", env=on_full))
    assert {p: p.read_bytes() for p in workspace.rglob("*.md")} == notes


def test_running_out_of_file_descriptors_names_the_limit_never_a_damaged_index(workspace, state_dir):
    # `ulimit -n 12` and `index`: the engine could not open its shard, and the message said the index
    # was damaged, "rebuild it with `openclaw-memory index --full`" (which runs out the same way).
    for i in range(30):
        write(workspace / "memory" / f"n{i}.md", f"note {i}\n")
    said = {}
    for limit in range(7, 17):
        proc = subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], cwd=workspace, capture_output=True,
                              text=True, env=env_for(workspace, state_dir), timeout=300,
                              preexec_fn=lambda limit=limit: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
        said[limit] = proc.stderr
        if proc.returncode != 0:
            last = proc.stderr.splitlines()[-1]
            assert last.startswith("error: ") and last.endswith(
                f"too many open files (the limit is {limit}: raise it with `ulimit -n`)"), proc.stderr
            assert "--full" not in proc.stderr and "damaged" not in proc.stderr and "Traceback" not in proc.stderr
    assert any("cannot be opened: too many open files" in text for text in said.values()), said  # the engine's own
    assert any(text.startswith("error: too many open files") for text in said.values()), said  # an OSError's


def _killed_first_index(ws: Path, sd: Path, batch: int) -> None:
    """A first `index` SIGKILLed after its ``batch``-th batch: its shard is left with no manifest."""
    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], cwd=ws, capture_output=True, text=True,
                          env=fault(f"index:batch:{batch}=kill", env=env_for(ws, sd)), timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def _many_notes(ws: Path, notes: int) -> None:
    for i in range(notes):
        write(ws / "memory" / f"n{i:03d}.md", _note(f"topic{i}", 8))


def test_a_first_index_killed_part_way_is_finished_on_a_disk_where_a_fresh_one_fits(workspace, tmp_path, cli_process):
    """The next run resumed what a killed first index left beside itself: a copy of it beside it
    (and the engine's optimize of it), so on a disk where a whole fresh index fits every later
    `index` and `doctor --fix` stopped for want of room, and the leftover was never given back."""
    _many_notes(workspace, 200)
    with tmpfs(tmp_path / "fresh", "330m") as fresh_disk:  # the control: a fresh index fits there
        fresh = fresh_disk / "state"
        assert cli_process("index", env={"OPENCLAW_STATE_DIR": str(fresh)}).returncode == 0
    with tmpfs(tmp_path / "small", "330m") as small:
        sd = small / "state"
        on_small = {"OPENCLAW_STATE_DIR": str(sd)}
        _killed_first_index(workspace, sd, 3)
        assert "last index run interrupted" in cli_process("status", env=on_small).stdout
        result = cli_process("index", env=on_small)
        assert result.returncode == 0, result.stderr
        assert "an interrupted first index left" in result.stdout + result.stderr, result.stderr
        assert _leftovers(sd) == []
        assert "memory/n007.md" in _paths(cli_process("search", "topic7 fact", "--mode", "text", "--json", env=on_small))
        assert cli_process("doctor", env=on_small).returncode == 0


def test_a_killed_first_index_where_there_is_room_is_resumed_in_place(workspace, state_dir, cli):
    """Resumed where it fits: the killed run's points lend their vectors, and the build goes on in
    the shard itself (a copy beside it took its size again)."""
    _many_notes(workspace, 40)
    _killed_first_index(workspace, state_dir, 3)
    (edge,) = [p for p in _edge(state_dir).iterdir() if p.name.startswith("memory-dir-")]
    ino = edge.stat().st_ino
    result = cli("index", "--json")
    assert result.returncode == 0, result.stderr
    assert result.json()["chunksReused"] >= 256, result.stdout  # the killed run's batches, not embedded again
    assert edge.stat().st_ino == ino  # the same shard, not a copy swapped in
    assert cli("doctor").returncode == 0


def test_a_killed_first_index_is_no_index_still_in_use(workspace, state_dir):
    """A full disk's message said "the last complete index is still in use" after a killed first
    index, whose shard (with no manifest) no search uses."""
    from conftest import settings_for
    from openclaw_memory.index.store.factory import open_store
    from openclaw_memory.index.sync import _has_index

    _many_notes(workspace, 40)
    _killed_first_index(workspace, state_dir, 2)
    settings = settings_for(workspace, state_dir)
    store = open_store(settings)
    try:
        assert any(store.exists(name) for name in store.names())
        assert not _has_index(settings, store)
    finally:
        store.close()


def test_a_killed_first_index_embedded_another_way_lends_no_vector(workspace, state_dir, cli, monkeypatch):
    """A first index killed under one embedder and resumed under another (the hash backend, then the
    model) lent the killed run's vectors: 256 of 300 chunks kept hash vectors under the model's
    fingerprint, a note's own first line found other notes first, and doctor found nothing. The
    leftover is removed and every chunk embedded by the embedder of the run that finishes it (here
    the hash embedder made another, its vectors reversed)."""
    from openclaw_memory.index.hash_embedding import HashEmbedder

    _many_notes(workspace, 40)
    _killed_first_index(workspace, state_dir, 3)
    real = HashEmbedder.encode
    monkeypatch.setattr(HashEmbedder, "encode", lambda self, texts, batch_size=32: real(self, texts, batch_size)[:, ::-1])
    result = cli("index", "--json")
    assert result.returncode == 0, result.stderr
    assert result.json()["chunksReused"] == 0, result.stdout
    assert "embedded another way" in result.stderr + result.stdout
    assert cli("doctor").returncode == 0
