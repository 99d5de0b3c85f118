"""Every kind of file under the state dir, truncated, zeroed or garbled: no command traces back,
each one works or says what is damaged and that `doctor --fix` repairs it, plain `doctor` names
the damage, and `doctor --fix` leaves a clean doctor without touching a memory file.

Real processes, the real engine and model. One state is built per module (an index, reads and
writes, a watchdog snapshot, a checkpoint); each case restores it at the same paths (the data dir
is named after the workspace path), damages one file and runs the commands.
"""

from __future__ import annotations

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, env_for, write

pytestmark = pytest.mark.slow

WAYS = ("truncated", "zeroed", "garbled")
LIGHT = [
    ["watchdog", "verify"],
    ["state"],
    ["history", "MEMORY.md"],
    ["read", "MEMORY.md"],
    ["prompt"],
    ["write", "memory/new-note.md", "--append", "a new line", "--no-index"],
]
SEARCH = [["search", "green tea"], ["index"]]

# (role, glob under the data dir or the models folder, commands beyond doctor)
ROLES = [
    ("snapshot list", "snapshots/index.json", LIGHT),
    ("snapshot", "snapshots/*.snap", LIGHT),
    ("checkpoint", "checkpoint.md", LIGHT),
    ("history log", "history/logs/*.json", LIGHT),
    ("read records", "history/reads/*.json", LIGHT),
    ("history object", "history/objects/*/*.z", LIGHT),
    ("object usage", "history/objects/usage", LIGHT),
    ("history lock", "history/lock", LIGHT),
    ("doctor lock", "doctor.lock", LIGHT),
    ("watch presence lock", "watch/*.lock", LIGHT),
    ("collection registry", "index/collections.json", SEARCH),
    ("manifest", "index/manifests/memory-dir-main.json", SEARCH),
    ("probe record", "index/probes/memory-dir-main.key", SEARCH),
    ("shard config", "index/edge/memory-dir-main/edge_config.json", SEARCH),
    ("segment config", "index/edge/memory-dir-main/segments/*/segment.json", SEARCH),
    ("id tracker", "index/edge/memory-dir-main/segments/*/mutable_id_tracker.mappings", SEARCH),
    ("id versions", "index/edge/memory-dir-main/segments/*/mutable_id_tracker.versions", SEARCH),
    ("payload page", "index/edge/memory-dir-main/segments/*/payload_storage/page_0.dat", SEARCH),
    ("path index", "index/edge/memory-dir-main/segments/*/payload_index/*-path-map/tracker.dat", SEARCH),
    ("vectors", "index/edge/memory-dir-main/segments/*/vector_storage-dense/vectors/chunk_0.mmap", SEARCH),
    ("WAL", "index/edge/memory-dir-main/wal/open-1", SEARCH),
    ("ONNX export", "MODELS/onnx/*/model.int8.onnx", [["search", "green tea"]]),
    ("ONNX meta", "MODELS/onnx/*/meta.json", [["search", "green tea"]]),
]


def _env(ws: Path, sd: Path, extra: dict | None = None) -> dict:
    return env_for(ws, sd, PYTHONPATH=str(REPO), **(extra or {}))


def _run(ws: Path, sd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openclaw_memory", *args],
        capture_output=True, text=True, cwd=ws, env=_env(ws, sd, env), timeout=900,
    )


def _data_dir(sd: Path) -> Path:
    (found,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return found


def _memory_files(ws: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(ws)): p.read_bytes()
        for p in ws.rglob("*")
        if p.is_file() and ".openclaw-repair" not in p.parts
    }


class Built:
    """The pristine state, and the paths it must be restored to."""

    def __init__(self, root: Path):
        self.root = root
        self.ws, self.sd = root / "live" / "ws", root / "live" / "sd"
        self.pristine = root / "pristine"

    def restore(self) -> None:
        shutil.rmtree(self.root / "live", ignore_errors=True)
        shutil.copytree(self.pristine, self.root / "live", symlinks=True)

    def run(self, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
        return _run(self.ws, self.sd, *args, env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    b = Built(tmp_path_factory.mktemp("damaged"))
    ws, sd = b.ws, b.sd
    ws.mkdir(parents=True)
    sd.mkdir()
    write(ws / "MEMORY.md", "# Memory\n\n## Preferences\n\n- likes green tea in the morning\n")
    for i, topic in enumerate(("gardening", "sailing", "espresso")):
        write(ws / "memory" / f"n{i}.md", f"# {topic}\n\n" + "".join(f"Note {j} about {topic}.\n\n" for j in range(6)))
    for args in (["index"], ["read", "MEMORY.md"], ["read", "memory/n0.md"],
                 ["write", "memory/n0.md", "--append", "more", "--no-index"], ["index"], ["watchdog", "snapshot"]):
        assert b.run(*args).returncode == 0, args
    write(ws / "memory" / "n1.md", "# sailing\n\nchanged outside\n")
    assert b.run("watchdog", "heartbeat").returncode == 1  # a break: leaves a checkpoint
    assert b.run("index").returncode == 0
    watch = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "watch"], cwd=ws, env=_env(ws, sd),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    presence = _data_dir(sd) / "watch"
    for _ in range(600):
        if presence.is_dir() and any(presence.iterdir()):
            break
        subprocess.run(["sleep", "0.1"])
    watch.send_signal(signal.SIGINT)
    watch.wait(timeout=60)
    assert b.run("doctor", "--fix").returncode == 0  # the pristine state is clean (and doctor.lock exists)
    shutil.copytree(b.root / "live", b.pristine, symlinks=True)
    return b


def _damage(path: Path, way: str) -> None:
    size = path.stat().st_size
    if way == "truncated":
        os.truncate(path, size // 2)
    elif way == "zeroed":
        with open(path, "r+b") as fh:
            fh.write(b"\0" * size)
    else:
        rnd = random.Random(str(path.name))
        with open(path, "r+b") as fh:
            fh.write(bytes(rnd.getrandbits(8) for _ in range(max(1, min(size, 1 << 16)))))


def _target(built: Built, pattern: str) -> Path:
    base = built.sd / "openclaw-memory" / "models" if pattern.startswith("MODELS/") else _data_dir(built.sd)
    matches = sorted(glob.glob(str(base / pattern.removeprefix("MODELS/"))))
    assert matches, pattern
    return Path(matches[-1])  # the newest snapshot, the last log: any one will do


def _clean(result: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr}"


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("role,pattern,commands", ROLES, ids=[r[0] for r in ROLES])
def test_damaged_state_file(built, role, pattern, commands, way):
    built.restore()
    target = _target(built, pattern)
    before = _memory_files(built.ws)
    _damage(target, way)

    plain = built.run("doctor", "--json")
    _clean(plain)
    reported = plain.returncode != 0
    for args in commands:
        result = built.run(*args)
        _clean(result)
        if result.returncode != 0:
            said = result.stderr + result.stdout
            assert "damaged" in said and "doctor --fix" in said, (args, said)
            assert reported, f"{args} refused ({said.strip()}) but plain doctor found nothing"

    fixed = built.run("doctor", "--fix", "--json")
    _clean(fixed)
    assert all(r["status"] in ("done", "completed") for r in json.loads(fixed.stdout)["repairs"]), fixed.stdout
    after = built.run("doctor", "--json")
    _clean(after)
    remaining = {f["id"] for f in json.loads(after.stdout)["remaining"] if f["severity"] != "info"}
    # The newest snapshot set aside, the one before it is the baseline: the edit made since is news.
    assert remaining <= ({"watchdog-changes"} if role == "snapshot" else set()), after.stdout
    now = _memory_files(built.ws)
    now.pop("memory/new-note.md", None)
    assert now == before  # no memory file was touched by any repair


def test_damaged_journal_is_set_aside_and_the_interrupted_rename_recovered(built):
    built.restore()
    ws = built.ws
    (ws / "MEMORY.md").rename(ws / "memory.md")  # a legacy root: doctor --fix renames it
    killed = built.run("doctor", "--fix", env={"OPENCLAW_MEMORY_TEST_DOCTOR_KILL_AT": "migrate:at-temp"})
    assert killed.returncode == -signal.SIGKILL
    (temp,) = [p for p in ws.iterdir() if p.name.startswith(".memory.md.migrate-")]
    legacy_bytes = temp.read_bytes()
    journal = _data_dir(built.sd) / "doctor-journal.json"
    for way in WAYS:
        saved = journal.read_bytes()
        _damage(journal, way)
        plain = built.run("doctor", "--json")
        _clean(plain)
        finding = next(f for f in json.loads(plain.stdout)["findings"] if f["id"] == "interrupted-repair")
        assert finding["fixable"] and "damaged" in finding["message"]
        if way != WAYS[-1]:
            journal.write_bytes(saved)
    fixed = built.run("doctor", "--fix", "--json")
    _clean(fixed)
    assert not journal.exists() and not temp.exists()
    assert (ws / "MEMORY.md").read_bytes() == legacy_bytes
    kept = list((_data_dir(built.sd) / "damaged").rglob("doctor-journal.json"))
    assert len(kept) == 1
