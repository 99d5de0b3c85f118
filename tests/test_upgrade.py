"""A data dir written by the release before the state database is upgraded with nothing lost.

The previous release (the commit before the database, from this repository's git history) writes
a history, read records, a `state` cache and write keys as files; this release imports them on
its first run, moves the old folders under ``before-state-db/`` and answers exactly as the old
one did. A SIGKILL at each step of the upgrade leaves a data dir that the next run uses whole.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys

import pytest

from conftest import env_for, release_checkout, write

OLD = "89dac6e"  # the last commit whose history lived in files
pytestmark = pytest.mark.slow  # two releases in real processes


@pytest.fixture(scope="module")
def old_release(tmp_path_factory):
    return release_checkout(tmp_path_factory, OLD)


def _run(workspace, state_dir, *args, python_path=None, extra=None, stdin=None):
    env = env_for(workspace, state_dir, **(extra or {}))
    if python_path:
        env["PYTHONPATH"] = python_path
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace, env=env, input=stdin,
                          capture_output=True, text=True, timeout=120)


def _written_by_the_old_release(workspace, state_dir, old):
    """What users have today: versions of two files, reads, a keyed write, a `state` cache."""
    write(workspace / "MEMORY.md", "# Memory\n- one\n")
    write(workspace / "memory" / "2026-11-30.md", "# Day\n")
    steps = [
        ("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "- two"), ("write", "MEMORY.md", "--append", "- three"),
        ("read", "memory/2026-11-30.md"), ("write", "memory/2026-11-30.md", "--append", "- boat", "--idempotency-key", "k1"),
        ("state",), ("index",),
    ]
    for args in steps:
        done = _run(workspace, state_dir, *args, "--no-index" if args[0] == "write" else "--json", python_path=old)
        assert done.returncode == 0, (args, done.stderr)
    (data_dir,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    assert (data_dir / "history" / "logs").is_dir() and (data_dir / "idempotency").is_dir()
    assert (data_dir / "index" / "collections.json").is_file()
    return data_dir


def _watched_by_the_old_release(workspace, state_dir, old, data_dir):
    """Watchdog snapshots, a checkpoint the old `prompt` consumed and one still pending."""
    assert _run(workspace, state_dir, "watchdog", "snapshot", "first", python_path=old).returncode == 0
    for n, (rel, text) in enumerate((("memory/2026-11-30.md", "# Day, rewritten elsewhere\n"), ("memory/2026-11-30.md", "# Day, again\n"))):
        write(workspace / rel, text)
        beat = _run(workspace, state_dir, "watchdog", "heartbeat", python_path=old)
        assert beat.returncode == 1, beat.stdout + beat.stderr  # a break: a checkpoint section
        if n == 0:
            assert _run(workspace, state_dir, "prompt", python_path=old).returncode == 0  # consumed
    (workspace / "MEMORY.md").unlink()  # what `verify` reports after the upgrade
    assert (data_dir / "snapshots" / "index.json").is_file() and (data_dir / "checkpoint.md").is_file()
    assert list((data_dir / "consumed").iterdir())


def _watchdog_answers(workspace, state_dir, python_path=None) -> dict:
    verify = _run(workspace, state_dir, "watchdog", "verify", "--json", python_path=python_path)
    assert verify.returncode == 1, verify.stderr
    prompt = _run(workspace, state_dir, "prompt", "--peek", "--json", python_path=python_path)
    assert prompt.returncode == 0, prompt.stderr
    return {"verify": json.loads(verify.stdout), "checkpoint": json.loads(prompt.stdout)["checkpoint"]}


def _answers(workspace, state_dir, python_path=None) -> dict:
    out = {}
    for name, args in {"history": ("history", "MEMORY.md"), "day": ("history", "memory/2026-11-30.md"),
                       "state": ("state",)}.items():
        done = _run(workspace, state_dir, *args, "--json", python_path=python_path)
        assert done.returncode == 0, (args, done.stderr)
        out[name] = json.loads(done.stdout)
    return out


def _comparable(answers: dict) -> dict:
    """What both releases print the same (this release adds keys, e.g. ``absPath``)."""
    keep = {"history": ("version", "time", "size", "origin", "agent", "available", "current")}
    return {
        "history": [{k: v[k] for k in keep["history"]} for v in answers["history"]["versions"]],
        "day": [{k: v[k] for k in keep["history"]} for v in answers["day"]["versions"]],
        "state": sorted((f["path"], f["state"], f["version"], f["seenVersion"], f["seenAs"]) for f in answers["state"]["files"]),
    }


def test_an_old_data_dir_is_imported_whole_and_set_aside(workspace, state_dir, old_release):
    data_dir = _written_by_the_old_release(workspace, state_dir, old_release)
    before = _comparable(_answers(workspace, state_dir, old_release))
    after = _comparable(_answers(workspace, state_dir))
    assert after == before
    assert not (data_dir / "history").exists() and not (data_dir / "idempotency").exists()
    kept = data_dir / "before-state-db"
    assert (kept / "history" / "logs").is_dir() and (kept / "idempotency").is_dir()  # never deleted
    assert (kept / "index" / "collections.json").is_file() and not (data_dir / "index" / "collections.json").exists()
    # The collections kept their names: the index is still up to date, nothing is embedded again.
    synced = _run(workspace, state_dir, "index", "--json")
    assert synced.returncode == 0 and json.loads(synced.stdout)["chunksEmbedded"] == 0, synced.stdout + synced.stderr
    # The imported read record guards the next write; the imported key answers a retry.
    diff = _run(workspace, state_dir, "read", "MEMORY.md", "--diff", "--json")
    assert json.loads(diff.stdout)["mode"] == "unchanged", diff.stderr
    retry = _run(workspace, state_dir, "write", "memory/2026-11-30.md", "--append", "- boat", "--idempotency-key", "k1",
                 "--no-index", "--json")
    assert retry.returncode == 0 and json.loads(retry.stdout)["replayed"] is True, retry.stderr
    assert (workspace / "memory" / "2026-11-30.md").read_text().count("- boat") == 1
    # An old version's bytes came along: restore brings back the first MEMORY.md.
    first = before["history"][-1]["version"]
    assert _run(workspace, state_dir, "restore", "MEMORY.md", first[:12], "--no-index").returncode == 0
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n- one\n"


@pytest.mark.parametrize("step", ["imported", "committed"])
def test_a_kill_during_the_upgrade_leaves_a_usable_data_dir(workspace, state_dir, old_release, step):
    data_dir = _written_by_the_old_release(workspace, state_dir, old_release)
    before = _comparable(_answers(workspace, state_dir, old_release))
    killed = _run(workspace, state_dir, "history", "MEMORY.md", extra={"OPENCLAW_MEMORY_TEST_UPGRADE_KILL_AT": step})
    assert killed.returncode == -signal.SIGKILL
    # Killed before the commit: the old layout, whole; after it: the new one, the old folders still there.
    assert (data_dir / "history" / "logs").is_dir()
    assert _comparable(_answers(workspace, state_dir)) == before
    assert not (data_dir / "history").exists() and (data_dir / "before-state-db" / "history").is_dir()
    assert not (data_dir / "before-state-db" / "history.2").exists()  # imported once, moved once


def test_old_snapshots_and_checkpoint_are_imported_with_nothing_lost(workspace, state_dir, old_release):
    data_dir = _written_by_the_old_release(workspace, state_dir, old_release)
    _watched_by_the_old_release(workspace, state_dir, old_release, data_dir)
    listed = [e["label"] for e in json.loads((data_dir / "snapshots" / "index.json").read_text())["snapshots"]]
    files = {label: (data_dir / "snapshots" / f"{label}.snap").read_bytes() for label in listed}
    consumed = sorted(p.name for p in (data_dir / "consumed").iterdir())
    before = _watchdog_answers(workspace, state_dir, old_release)
    assert before["checkpoint"].count("Workspace Changes Detected") == 1 and before["checkpoint"].count("2026-11-30.md") == 1
    after = _watchdog_answers(workspace, state_dir)
    assert after == before  # the same baseline, the same delta, the same pending text
    kept = data_dir / "before-state-db"
    assert not (data_dir / "snapshots").exists() and not (data_dir / "checkpoint.md").exists()
    assert (kept / "snapshots" / "index.json").is_file() and (kept / "checkpoint.md").is_file()  # never deleted
    assert sorted(p.name for p in (data_dir / "consumed").iterdir()) == consumed  # the archive stays
    with sqlite3.connect(data_dir / "state.db") as conn:
        rows = conn.execute("SELECT label, body FROM snapshots ORDER BY seq").fetchall()
        counts = json.loads(conn.execute("SELECT counts FROM imports WHERE source = 'snapshots'").fetchone()[0])
    conn.close()
    assert [(label, bytes(body)) for label, body in rows] == list(files.items())  # every one, in order, byte for byte
    assert counts == {"snapshots": len(listed), "unreadable": 0}
    # Consumed when shown, as before; the next heartbeat judges against the imported baseline.
    assert "Workspace Changes Detected" in _run(workspace, state_dir, "prompt").stdout
    assert _run(workspace, state_dir, "prompt", "--json").stdout.count("Workspace Changes Detected") == 0
    beat = _run(workspace, state_dir, "watchdog", "heartbeat", "--json")
    assert beat.returncode == 1 and json.loads(beat.stdout)["verify"]["deleted"] == ["MEMORY.md"], beat.stdout


def test_a_damaged_old_snapshot_is_counted_and_kept(workspace, state_dir, old_release):
    data_dir = _written_by_the_old_release(workspace, state_dir, old_release)
    _watched_by_the_old_release(workspace, state_dir, old_release, data_dir)
    listed = [e["label"] for e in json.loads((data_dir / "snapshots" / "index.json").read_text())["snapshots"]]
    newest = data_dir / "snapshots" / f"{listed[-1]}.snap"
    damaged = newest.read_bytes()[:-1] + b"\xff"
    newest.write_bytes(damaged)
    verify = _run(workspace, state_dir, "watchdog", "verify", "--json")
    assert verify.returncode == 1 and json.loads(verify.stdout)["baseline"] == listed[-2], verify.stderr
    assert (data_dir / "before-state-db" / "snapshots" / newest.name).read_bytes() == damaged
    with sqlite3.connect(data_dir / "state.db") as conn:
        counts = json.loads(conn.execute("SELECT counts FROM imports WHERE source = 'snapshots'").fetchone()[0])
    conn.close()
    assert counts == {"snapshots": len(listed) - 1, "unreadable": 1}

