"""A data dir written by the release whose index manifests were files is upgraded with nothing lost.

That release (the last commit before the index moved into the state database, from this
repository's git history) kept its history in the database, schema 2, with `state`'s stat cache
in ``sightings``, and each collection's manifest, keyword statistics and dirty mark as files
under ``index/manifests/`` (and the probe records under ``index/probes/``). This release migrates the schema, imports the manifests, moves the
folder under ``before-state-db/`` and searches as the old one did, embedding nothing again.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import env_for, release_checkout, write

OLD = "7fc3fad"  # the last commit whose index manifests lived in files
pytestmark = pytest.mark.slow  # two releases in real processes


@pytest.fixture(scope="module")
def old_release(tmp_path_factory):
    return release_checkout(tmp_path_factory, OLD)


def _run(workspace, state_dir, *args, python_path=None):
    env = env_for(workspace, state_dir)
    if python_path:
        env["PYTHONPATH"] = python_path
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", *args, "--json"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stderr)
    return json.loads(done.stdout)


def _hits(found: dict) -> list[tuple]:
    # Paths and lines, not scores: the two releases rank with different fusions.
    return [(r["path"], r["startLine"], r["endLine"]) for r in found["results"]]


def test_old_manifests_are_imported_and_nothing_is_embedded_again(workspace, state_dir, old_release):
    write(workspace / "MEMORY.md", "# Memory\n- The user's sailboat is called Marlin.\n- Green tea, no sugar.\n")
    write(workspace / "memory" / "2026-11-30.md", "# Day\n\nRepainted the hull of the sailboat.\n")
    write(workspace / "memory" / "trips.md", "# Trips\n\nA hiking trip to Zermatt in March.\n")
    _run(workspace, state_dir, "index", python_path=old_release)
    state_before = _run(workspace, state_dir, "state", python_path=old_release)
    queries = ("sailboat hull", "green tea", "Zermatt")
    before = {q: _hits(_run(workspace, state_dir, "search", q, python_path=old_release)) for q in queries}
    assert all(before.values()) and len(state_before["files"]) == 3
    (data_dir,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    manifests = sorted(p.name for p in (data_dir / "index" / "manifests").iterdir())
    probes = sorted(p.name for p in (data_dir / "index" / "probes").iterdir())
    assert probes
    assert any(n.endswith(".terms.json") for n in manifests) and any(n.endswith(".json") for n in manifests)
    with sqlite3.connect(data_dir / "state.db") as conn:
        sightings = conn.execute("SELECT COUNT(*) FROM sightings").fetchone()[0]
    conn.close()

    synced = _run(workspace, state_dir, "index")
    assert synced["chunksEmbedded"] == 0 and synced["filesChanged"] == 0, synced
    assert {q: _hits(_run(workspace, state_dir, "search", q)) for q in queries} == before
    state_after = _run(workspace, state_dir, "state")
    assert [(f["path"], f["state"], f["version"]) for f in state_after["files"]] == \
        [(f["path"], f["state"], f["version"]) for f in state_before["files"]]

    assert not (data_dir / "index" / "manifests").exists()
    kept = data_dir / "before-state-db" / "index" / "manifests"
    assert sorted(p.name for p in kept.iterdir()) == manifests  # never deleted
    with sqlite3.connect(data_dir / "state.db") as conn:
        names = [row[0] for row in conn.execute("SELECT collection FROM manifests ORDER BY collection")]
        counts = json.loads(conn.execute("SELECT counts FROM imports WHERE source = 'index/manifests'").fetchone()[0])
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        observed = conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0]
        probed = [row[0] + ".key" for row in conn.execute("SELECT collection FROM probes ORDER BY collection")]
    conn.close()
    assert [n + ".json" for n in names] == [n for n in manifests if not n.endswith(".terms.json")]
    assert counts["manifests"] == len(names) and counts["term_stats"] == len(names) and counts["unreadable"] == 0
    assert probed == probes and not (data_dir / "index" / "probes").exists()  # a shard found as left is not probed
    assert "sightings" not in tables and observed >= sightings  # `state`'s cache became observations


def test_an_old_releases_interrupted_repair_is_finished_after_the_upgrade(workspace, state_dir, old_release):
    legacy = "# Memory\n- the boat is called Marlin\n"
    write(workspace / "memory.md", legacy)  # a legacy root: doctor --fix renames it, journaled
    env = env_for(workspace, state_dir, OPENCLAW_MEMORY_TEST_DOCTOR_KILL_AT="migrate:at-temp")
    env["PYTHONPATH"] = old_release
    killed = subprocess.run([sys.executable, "-m", "openclaw_memory", "doctor", "--fix"], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=120)
    assert killed.returncode == -9, killed.stderr
    (data_dir,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    journal = (data_dir / "doctor-journal.json").read_bytes()

    env = env_for(workspace, state_dir)
    plain = subprocess.run([sys.executable, "-m", "openclaw_memory", "doctor", "--json"], cwd=workspace, env=env,
                           capture_output=True, text=True, timeout=120)
    assert "interrupted-repair" in {f["id"] for f in json.loads(plain.stdout)["findings"]}, plain.stdout
    fixed = _run(workspace, state_dir, "doctor", "--fix")
    assert fixed["ok"] is True, fixed
    assert (workspace / "MEMORY.md").read_text() == legacy and not (workspace / "memory.md").exists()
    assert (data_dir / "before-state-db" / "doctor-journal.json").read_bytes() == journal  # kept as it was
    with sqlite3.connect(data_dir / "state.db") as conn:
        left = conn.execute("SELECT COUNT(*) FROM journal").fetchone()[0]
    conn.close()
    assert left == 0  # the repair is finished
