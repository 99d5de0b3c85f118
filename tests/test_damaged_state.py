"""Every kind of file under the state dir, truncated, zeroed or garbled: no command traces back,
each one works or says what is damaged and that `doctor --fix` repairs it, plain `doctor` names
the damage, and `doctor --fix` leaves a clean doctor without touching a memory file.

The real engine, the hash embedder. One state is built per module (an index, reads and writes, a
watchdog snapshot, a checkpoint); each case restores it at the same paths (the data dir is named
after the workspace path), damages one file and runs the commands in this process: a command
loads a shard whose files are not as our last process left them only after a child process has
probed it (where the engine may abort), so a damaged shard cannot take the command, here pytest,
down. The two ONNX roles are about the real
model's cached export: their state is built with the real model and a private copy of the
machine's model cache, which they damage, and their commands run in real processes, since
onnxruntime loads the damaged file in the command's own process.
"""

from __future__ import annotations

import glob
import os
import random
import re
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import (
    CliResult,
    doctor_journal,
    env_for,
    fault,
    run_in_process,
    run_process,
    set_doctor_journal,
    settings_for,
    skip_without_torch_extra,
    wait_for,
    write,
)

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
MODEL_CACHE_ENV = "OPENCLAW_MEMORY_MODEL_CACHE"

# (role, glob under the data dir or the model cache, commands beyond doctor)
ROLES = [
    ("state database", "state.db", LIGHT),
    ("write lock", "write.lock", LIGHT),
    ("doctor lock", "doctor.lock", LIGHT),
    ("watch presence lock", "watch/*.lock", LIGHT),
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
# The roles about the real model's cached export: built and run with the real model.
MODEL_ROLES = {"ONNX export", "ONNX meta"}


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
    """The pristine state (and, for the real model, its model cache), and the paths it must be
    restored to."""

    def __init__(self, root: Path, real_model: bool):
        self.root = root
        self.real_model = real_model
        live = root / "live"
        self.ws, self.sd, self.models = live / "ws", live / "sd", live / "models"
        self.pristine = root / "pristine"

    def restore(self) -> None:
        shutil.rmtree(self.root / "live", ignore_errors=True)
        shutil.copytree(self.pristine, self.root / "live", symlinks=True, copy_function=_copy_sparse)
        _record_shards(_data_dir(self.sd))

    def env(self, **extra: str) -> dict:
        # Never the machine's model cache: the cases damage the one they use.
        return env_for(self.ws, self.sd, real_model=self.real_model, **{MODEL_CACHE_ENV: str(self.models)}, **extra)

    def run(self, *args: str, process: bool = False, env: dict | None = None) -> CliResult:
        full = self.env(**(env or {}))
        if process:
            return run_process(args, env=full, cwd=self.ws, timeout=900)
        return run_in_process(args, env=full, cwd=self.ws)


def _copy_sparse(src: str, dst: str, *, follow_symlinks: bool = True) -> None:
    """``shutil.copy2`` keeping the file's holes: the engine creates its files (WAL, mmaps) as
    32 MiB holes, which a plain copy would write out in full (~360 MB a case instead of ~1 MB)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        size = os.fstat(fin.fileno()).st_size
        start = 0
        while start < size:
            try:
                start = os.lseek(fin.fileno(), start, os.SEEK_DATA)
            except OSError:  # ENXIO: nothing but a hole after start
                break
            end = os.lseek(fin.fileno(), start, os.SEEK_HOLE)
            fin.seek(start)
            fout.seek(start)
            fout.write(fin.read(end - start))
            start = end
        fout.truncate(size)
    shutil.copystat(src, dst, follow_symlinks=follow_symlinks)


def _record_shards(data_dir: Path) -> None:
    """Record each restored shard as the process that last closed it did: its record names the
    files' inodes, which a copy changes, and a shard whose record does not match is probed in a
    child process (~0.5 s) by every command, several times by `doctor --fix`. Damaging a shard
    file after this still changes its stat, so a damaged shard is probed as in real life."""
    from openclaw_memory.index.store.edge import EdgeStore

    store = EdgeStore(data_dir / "index")
    for name in store.names():
        recorded = store._recorded(name)
        if recorded is not None:
            store._record(name, store._stat_key(name), recorded[1])


def _build(root: Path, real_model: bool) -> Built:
    from openclaw_memory.index.config import DEFAULT_MODEL

    b = Built(root, real_model)
    ws, sd = b.ws, b.sd
    ws.mkdir(parents=True)
    sd.mkdir()
    if real_model:
        # The default model's export ships with the package: the cases damage the cached export of
        # any other model, here the default model's weights named by their folder.
        from openclaw_memory.index.models import resolve_model

        weights = root / "weights"
        shutil.copytree(resolve_model(DEFAULT_MODEL), weights)
        (sd / "openclaw-memory.toml").write_text(f'[index]\nmodel = "{weights}"\n')
    write(ws / "MEMORY.md", "# Memory\n\n## Preferences\n\n- likes green tea in the morning\n")
    for i, topic in enumerate(("gardening", "sailing", "espresso")):
        write(ws / "memory" / f"n{i}.md", f"# {topic}\n\n" + "".join(f"Note {j} about {topic}.\n\n" for j in range(6)))
    for args in (["index"], ["read", "MEMORY.md"], ["read", "memory/n0.md"],
                 ["write", "memory/n0.md", "--append", "more", "--no-index"], ["index"], ["watchdog", "snapshot"]):
        done = b.run(*args)
        assert done.returncode == 0, (args, done.stderr)
    write(ws / "memory" / "n1.md", "# sailing\n\nchanged outside\n")
    assert b.run("watchdog", "heartbeat").returncode == 1  # a break: leaves a checkpoint
    assert b.run("index").returncode == 0
    # A real watcher, stopped the way a user stops it, leaves its presence lock behind.
    watch = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "watch"], cwd=ws, env=b.env(),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    presence = _data_dir(sd) / "watch"
    try:
        wait_for(lambda: presence.is_dir() and any(presence.iterdir()), timeout=120)
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(timeout=60)
    if real_model:  # the one export the cases damage is the one the commands load
        assert len(list((b.models / "onnx").iterdir())) == 1
    fixed = b.run("doctor", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # the pristine state is clean (and doctor.lock exists)
    shutil.copytree(b.root / "live", b.pristine, symlinks=True, copy_function=_copy_sparse)
    return b


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Built:
    return _build(tmp_path_factory.mktemp("damaged"), real_model=False)


@pytest.fixture(scope="module")
def built_real(tmp_path_factory) -> Built:
    skip_without_torch_extra()  # the damaged export is made from the default model's weights
    return _build(tmp_path_factory.mktemp("damaged-model"), real_model=True)


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


def _damage_bytes(data_dir: Path, way: str, record: bytes) -> None:
    """The doctor's journal row damaged the ways a file is (it is a row of the state database)."""
    if way == "truncated":
        damaged = record[: len(record) // 2]
    elif way == "zeroed":
        damaged = b"\0" * len(record)
    else:
        rnd = random.Random("journal")
        damaged = bytes(rnd.getrandbits(8) for _ in range(len(record)))
    set_doctor_journal(data_dir, damaged)


def _target(built: Built, pattern: str) -> Path:
    base = built.models if pattern.startswith("MODELS/") else _data_dir(built.sd)
    matches = sorted(glob.glob(str(base / pattern.removeprefix("MODELS/"))))
    assert matches, pattern
    return Path(matches[-1])  # the newest snapshot, the last log: any one will do


def _clean(result: CliResult) -> None:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode >= 0, f"killed by signal {-result.returncode}: {result.stderr}"


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("role,pattern,commands", [
    pytest.param(*r, id=r[0], marks=[pytest.mark.slow] if r[0] in MODEL_ROLES else []) for r in ROLES
])
def test_damaged_state_file(request, role, pattern, commands, way):
    real_model = role in MODEL_ROLES
    built = request.getfixturevalue("built_real" if real_model else "built")
    built.restore()
    target = _target(built, pattern)
    before = _memory_files(built.ws)
    _damage(target, way)

    def run(*args: str) -> CliResult:
        return built.run(*args, process=real_model)

    plain = run("doctor", "--json")
    _clean(plain)
    reported = plain.returncode != 0
    for args in commands:
        result = run(*args)
        _clean(result)
        if result.returncode != 0:
            said = result.stderr + result.stdout
            assert "damaged" in said and "doctor --fix" in said, (args, said)
            assert reported, f"{args} refused ({said.strip()}) but plain doctor found nothing"

    fixed = run("doctor", "--fix", "--json")
    _clean(fixed)
    assert all(r["status"] in ("done", "completed") for r in fixed.json()["repairs"]), fixed.stdout
    after = run("doctor", "--json")
    _clean(after)
    remaining = {f["id"] for f in after.json()["remaining"] if f["severity"] != "info"}
    assert remaining == set(), after.stdout
    now = _memory_files(built.ws)
    now.pop("memory/new-note.md", None)
    assert now == before  # no memory file was touched by any repair


SHARD_ROLES = [r for r in ROLES if r[2] is SEARCH]


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("role,pattern", [r[:2] for r in SHARD_ROLES], ids=[r[0] for r in SHARD_ROLES])
def test_a_search_never_answers_from_a_damaged_shard_as_if_it_were_whole(built, role, pattern, way):
    built.restore()
    query = ("search", "note about sailing", "--mode", "text", "--no-sync", "--json")
    whole = built.run(*query)
    assert whole.returncode == 0 and whole.json()["results"], whole.stderr
    built.restore()
    _damage(_target(built, pattern), way)
    result = built.run(*query)
    _clean(result)
    if result.returncode == 0:
        assert result.json()["results"] == whole.json()["results"], "answered from a damaged shard"
    else:
        assert result.returncode == 1 and "damaged" in result.stderr and "doctor --fix" in result.stderr, result.stderr


def test_a_payload_whose_lines_were_changed_in_place_is_damaged_not_a_wrong_citation(built):
    """The payload pages hold no checksum: a start line rewritten in place (one byte, the page still
    decodes) was read as it stood, and the search cited other lines than its snippet shows."""
    built.restore()
    query = ("search", "note about sailing", "--mode", "text", "--no-sync", "--json")
    changed = 0
    for page in glob.glob(str(_data_dir(built.sd) / "index/edge/memory-dir-main/segments/*/payload_storage/page_0.dat")):
        data = bytearray(Path(page).read_bytes())
        for m in re.finditer(rb'"startLine":(1)\D', data):  # the pages are compressed: the first number is literal
            data[m.start(1)] = ord("3")  # the chunk now claims to start at line 3, its body unchanged
            changed += 1
        Path(page).write_bytes(bytes(data))
    assert changed
    result = built.run(*query)
    _clean(result)
    assert result.returncode == 1 and "damaged" in result.stderr and "doctor --fix" in result.stderr, result.stdout
    assert "index-damaged" in {f["id"] for f in built.run("doctor", "--json").json()["findings"]}
    assert built.run("doctor", "--fix").returncode == 0
    for hit in built.run(*query).json()["results"]:
        for passage in hit["passages"]:
            read = built.run("read", passage["citation"], "--json").json()["text"]
            assert read.split("\n\n[More content available.")[0] == passage["snippet"], (passage["citation"], read)


def test_damaged_journal_is_set_aside_and_the_interrupted_rename_recovered(built):
    built.restore()
    ws = built.ws
    (ws / "MEMORY.md").rename(ws / "memory.md")  # a legacy root: doctor --fix renames it
    killed = built.run("doctor", "--fix", process=True, env=fault("migrate:at-temp=kill"))
    assert killed.returncode == -signal.SIGKILL
    (temp,) = [p for p in ws.iterdir() if p.name.startswith(".memory.md.migrate-")]
    legacy_bytes = temp.read_bytes()
    data_dir = _data_dir(built.sd)
    saved = doctor_journal(data_dir)
    assert isinstance(saved, str)
    for way in WAYS:
        _damage_bytes(data_dir, way, saved.encode())
        plain = built.run("doctor", "--json")
        _clean(plain)
        finding = next(f for f in plain.json()["findings"] if f["id"] == "interrupted-repair")
        assert finding["fixable"] and "damaged" in finding["message"]
        if way != WAYS[-1]:
            set_doctor_journal(data_dir, saved)
    damaged = doctor_journal(data_dir)
    fixed = built.run("doctor", "--fix", "--json")
    _clean(fixed)
    assert doctor_journal(data_dir) is None and not temp.exists()
    assert (ws / "MEMORY.md").read_bytes() == legacy_bytes
    kept = list((data_dir / "damaged").rglob("doctor-journal.json"))
    assert len(kept) == 1 and kept[0].read_bytes() == damaged  # its bytes, kept


@pytest.mark.parametrize("keep", [1000, 4096, 0x2000])
def test_a_state_database_damaged_in_its_first_pages_is_found_and_rebuilt(workspace, state_dir, cli_process, keep):
    """Damage where the doctor's journal is read (the first pages, no WAL to read them from): the
    database check reports it and --fix rebuilds, instead of the journal check stopping the run."""
    write(workspace / "MEMORY.md", "# Memory\n\n- likes tea\n")
    assert cli_process("read", "MEMORY.md").returncode == 0
    db = _data_dir(state_dir) / "state.db"
    for suffix in ("-wal", "-shm"):  # as a clean close leaves it: everything in the main file
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    os.truncate(db, keep)
    plain = cli_process("doctor", "--json")
    _clean(plain)
    assert "state-db-damaged" in {f["id"] for f in plain.json()["findings"]}, plain.stdout + plain.stderr
    fixed = cli_process("doctor", "--fix", "--json")
    _clean(fixed)
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"] == ["done"], fixed.stdout
    assert cli_process("state").returncode == 0
    assert list((_data_dir(state_dir) / "damaged").glob("*/state.db"))


# -- the state database's own files, damaged beside a running service -----------------------------
#
# Versions are counted with `history --json` before the damage and after `doctor --fix`. Every
# command runs in its own process (as a user's would), beside a real `serve` process.

SERVICE_WAIT = 120


class _Service:
    """A real `openclaw-memory serve --no-watch`; stderr kept."""

    def __init__(self, workspace: Path, state_dir: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve", "--no-watch"], cwd=workspace,
                                     env=env_for(workspace, state_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        self.stderr: list[str] = []
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        wait_for(lambda: any(line.startswith("serving ") for line in self.stderr) or self.proc.poll() is not None,
                 SERVICE_WAIT)
        assert self.proc.poll() is None, "".join(self.stderr)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(SERVICE_WAIT)


@pytest.fixture
def service(workspace, state_dir):
    started: list[_Service] = []

    def start() -> _Service:
        started.append(_Service(workspace, state_dir))
        return started[-1]

    yield start
    for s in started:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait(SERVICE_WAIT)


IN_PROCESS = {"OPENCLAW_MEMORY_SERVICE": "off"}


def _edit(cli_process, line: str, env: dict | None = None) -> None:
    """One new version of MEMORY.md by an agent: read, then append."""
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", line, "--no-index")):
        done = cli_process(*args, env=env)
        _clean(done)
        assert done.returncode == 0, (args, done.stderr)


def _versions(cli_process) -> int:
    listed = cli_process("history", "MEMORY.md", "--json", env=IN_PROCESS)
    _clean(listed)
    assert listed.returncode == 0, listed.stderr
    return len(listed.json()["versions"])


def _held(db: Path, scratch: Path, wal: bool = True) -> int:
    """The versions the database file (and its WAL) hold as they are now, as SQLite reads a copy of
    them (the index left out: SQLite rebuilds it from what the WAL holds)."""
    scratch.mkdir()
    shutil.copyfile(db, scratch / "state.db")
    if wal and Path(f"{db}-wal").exists():
        shutil.copyfile(f"{db}-wal", scratch / "state.db-wal")
    conn = sqlite3.connect(scratch / "state.db")
    try:
        return conn.execute("SELECT COUNT(*) FROM versions WHERE display = ?", (b"MEMORY.md",)).fetchone()[0]
    finally:
        conn.close()


def _with_a_service(workspace, state_dir, cli_process, service, before: int = 3, during: int = 3):
    """``before`` versions committed with no service (in the database file), then ``during``
    through a running service (in its WAL); the service, the database's path, and the count."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(before):
        _edit(cli_process, f"before the service {i}", IN_PROCESS)
    running = service()
    for i in range(during):
        _edit(cli_process, f"through the service {i}")
    db = _data_dir(state_dir) / "state.db"
    assert Path(f"{db}-wal").stat().st_size > 0
    return running, db, _versions(cli_process)


def _fix_and_count(cli_process) -> int:
    fixed = cli_process("doctor", "--fix", "--json")
    _clean(fixed)
    assert all(r["status"] in ("done", "completed") for r in fixed.json()["repairs"]), fixed.stdout
    after = cli_process("doctor", "--json")
    assert {f["id"] for f in after.json()["remaining"] if f["severity"] != "info"} == set(), after.stdout
    return _versions(cli_process)


def _rebuilt(cli_process) -> dict:
    """``doctor --fix``'s repair of the damaged database, one line at most on stderr."""
    fixed = cli_process("doctor", "--fix", "--json")
    _clean(fixed)
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    return repair


def _findings(cli_process) -> set[str]:
    plain = cli_process("doctor", "--json")
    _clean(plain)
    return {f["id"] for f in plain.json()["findings"]}


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
@pytest.mark.parametrize("way", ["zeroed", "truncated"])
def test_a_damaged_wal_under_the_service_is_found_and_never_checkpointed(workspace, state_dir, cli_process, service,
                                                                          tmp_path, way, stop):
    running, db, _ = _with_a_service(workspace, state_dir, cli_process, service)
    in_file = _held(db, tmp_path / "file", wal=False)  # committed before the service: in the file itself
    _damage(Path(f"{db}-wal"), way)
    held = _held(db, tmp_path / "held")  # what the file and the damaged WAL still hold
    assert running.stop(stop) == (0 if stop == signal.SIGTERM else -signal.SIGKILL), "".join(running.stderr)
    assert "state-db-damaged" in _findings(cli_process)  # the WAL lost committed frames: said, not silently dropped
    assert _fix_and_count(cli_process) >= max(held, in_file) >= 3
    assert list((_data_dir(state_dir) / "damaged").glob("*/state.db-wal"))  # the damaged log, kept


@pytest.mark.parametrize("way", ["zeroed", "truncated"])
def test_the_service_keeps_working_when_its_wal_is_damaged(workspace, state_dir, cli_process, service, tmp_path, way):
    running, db, _ = _with_a_service(workspace, state_dir, cli_process, service)
    _damage(Path(f"{db}-wal"), way)
    held = _held(db, tmp_path / "held")
    said = cli_process("read", "MEMORY.md")  # the service finds it before SQLite reads the log
    _clean(said)
    if said.returncode != 0:
        assert "damaged" in said.stderr and "write-ahead log" in said.stderr, said.stderr
    _edit(cli_process, "after the damage")
    assert running.stop() == 0, "".join(running.stderr)
    assert _findings(cli_process) == set()
    assert _fix_and_count(cli_process) >= held + 1


def test_a_deleted_shm_with_commands_writing_beside_the_service_loses_nothing(workspace, state_dir, cli_process, service):
    running, db, count = _with_a_service(workspace, state_dir, cli_process, service)
    os.unlink(f"{db}-shm")
    other = sqlite3.connect(db)  # another process with the database open (a long command) keeps the new index
    try:
        other.execute("SELECT COUNT(*) FROM versions").fetchone()
        for i in range(4):  # in-process commands and the service take turns
            _edit(cli_process, f"after the index went {i}", IN_PROCESS if i % 2 == 0 else None)
        assert other.execute("PRAGMA quick_check").fetchone() == ("ok",)
    finally:
        other.close()
    assert running.proc.poll() is None
    assert running.stop() == 0, "".join(running.stderr)
    assert _findings(cli_process) == set()
    assert _fix_and_count(cli_process) == count + 4


def test_a_truncated_shm_does_not_kill_the_service(workspace, state_dir, cli_process, service):
    running, db, count = _with_a_service(workspace, state_dir, cli_process, service)
    os.truncate(f"{db}-shm", 0)
    for i in range(2):
        _edit(cli_process, f"after the index was cut {i}")
    assert running.proc.poll() is None, "the service died: " + "".join(running.stderr)
    assert running.stop() == 0, "".join(running.stderr)
    assert _fix_and_count(cli_process) == count + 2


def test_a_deleted_wal_under_the_service_is_copied_in_and_writes_go_on(workspace, state_dir, cli_process, service):
    running, db, count = _with_a_service(workspace, state_dir, cli_process, service)
    os.unlink(f"{db}-wal")
    for i in range(2):
        _edit(cli_process, f"after the log went {i}")  # through the service, which still reads the log it opened
    assert running.stop() == 0, "".join(running.stderr)
    assert _findings(cli_process) == set()
    assert _fix_and_count(cli_process) == count + 2


def test_a_wal_deleted_under_a_service_then_killed_is_found(workspace, state_dir, cli_process, service, tmp_path):
    running, db, _ = _with_a_service(workspace, state_dir, cli_process, service)
    in_file = _held(db, tmp_path / "file", wal=False)
    os.unlink(f"{db}-wal")
    assert running.stop(signal.SIGKILL) == -signal.SIGKILL
    assert "state-db-damaged" in _findings(cli_process)  # its index says committed frames were never copied in
    assert _fix_and_count(cli_process) >= in_file >= 3


def test_a_command_beside_the_service_never_deletes_the_wal_under_it(workspace, state_dir, cli_process, service):
    """Closing a descriptor of the database drops every POSIX lock the process holds on it: a
    service thread that opened the file that way let the next command's last close checkpoint
    and delete the WAL and its index under the running service."""
    running, db, count = _with_a_service(workspace, state_dir, cli_process, service)
    assert _versions(cli_process) == count  # an in-process command's last close
    assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
    _edit(cli_process, "after the command")
    assert running.stop() == 0, "".join(running.stderr)
    assert _fix_and_count(cli_process) == count + 1


def _damage_a_middle_frame(wal: Path, way: str) -> int:
    """One frame halfway through the WAL (not the last committed one) damaged in place, the file's
    size unchanged: its page zeroed, or 16 bytes inside it overwritten; which frame (from 1)."""
    data = wal.read_bytes()
    page_size = int.from_bytes(data[8:12], "big")
    frames = (len(data) - 32) // (24 + page_size)
    assert frames >= 20, frames
    n = frames // 2
    at = 32 + (n - 1) * (24 + page_size) + 24
    with open(wal, "r+b") as fh:
        if way == "zeroed":
            fh.seek(at)
            fh.write(b"\0" * page_size)
        else:
            fh.seek(at + page_size // 2)
            fh.write(random.Random("frame").randbytes(16))
    return n


def _file_is_sound(db: Path, scratch: Path) -> None:
    """The database file alone (its WAL left out) passes SQLite's integrity check: nothing damaged
    was checkpointed into it."""
    scratch.mkdir()
    shutil.copyfile(db, scratch / "state.db")
    conn = sqlite3.connect(scratch / "state.db")
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


@pytest.mark.parametrize("when,way", [("stopped", "zeroed"), ("killed", "overwritten"), ("killed, no index", "zeroed")])
def test_a_frame_damaged_in_the_middle_of_the_wal_is_found_and_never_checkpointed(workspace, state_dir, cli_process,
                                                                                   service, tmp_path, when, way):
    """SQLite's WAL checksums are cumulative: a frame damaged halfway breaks the chain for every
    frame after it, which SQLite then drops. Checking only the last committed frame missed it: the
    service's last close checkpointed the zeros over good pages, or the next command did."""
    running, db, _ = _with_a_service(workspace, state_dir, cli_process, service, before=3, during=12)
    wal = Path(f"{db}-wal")
    if when.startswith("killed"):
        assert running.stop(signal.SIGKILL) == -signal.SIGKILL
    if when == "killed, no index":  # SQLite rebuilds it from the WAL up to the first broken frame
        os.unlink(f"{db}-shm")
    _damage_a_middle_frame(wal, way)
    if when == "stopped":
        assert running.stop() == 0, "".join(running.stderr)
    assert wal.exists()  # not checkpointed and deleted
    _file_is_sound(db, tmp_path / "file")
    assert "state-db-damaged" in _findings(cli_process)
    written = cli_process("write", "MEMORY.md", "--append", "after the damage", "--no-index", env=IN_PROCESS)
    _clean(written)
    assert written.returncode == 1 and "doctor --fix" in written.stderr, written.stderr  # refused, never checkpointed
    _file_is_sound(db, tmp_path / "still")
    repair = _rebuilt(cli_process)
    assert repair["status"] == "done" and "every row was recovered" not in repair["detail"], repair
    assert "write-ahead log" in repair["detail"], repair
    assert list((_data_dir(state_dir) / "damaged").glob("*/state.db-wal"))  # the damaged log, kept
    assert _versions(cli_process) >= 3


def test_a_wal_deleted_under_the_service_is_copied_in_when_it_stops(workspace, state_dir, cli_process, service):
    """The service still holds the WAL it opened: a clean stop copies it in, whatever came next."""
    running, db, count = _with_a_service(workspace, state_dir, cli_process, service, during=8)
    os.unlink(f"{db}-wal")
    assert running.stop() == 0, "".join(running.stderr)
    assert _findings(cli_process) == set()
    assert _versions(cli_process) == count


def test_what_a_killed_service_left_is_a_finding_fix_removes_and_a_running_one_is_never_touched(workspace, state_dir,
                                                                                               cli_process, service):
    """Its socket, info file and lock stayed: every command said the service is not running, each
    time, while doctor found nothing and --fix had nothing to repair."""
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "a line", IN_PROCESS)
    folder = _data_dir(state_dir) / "service"
    running = service()
    assert "service-left-over" not in _findings(cli_process)  # the control: a running service's files
    assert cli_process("doctor", "--fix").returncode == 0
    assert (folder / "sock").exists()
    running.stop(signal.SIGKILL)
    left = cli_process("read", "MEMORY.md")
    assert left.returncode == 0 and "not running" in left.stderr, left.stderr
    plain = cli_process("doctor", "--json")
    _clean(plain)
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "service-left-over"]
    assert str(folder / "sock") in finding["paths"] and (folder / "sock").exists()  # plain doctor removed nothing
    fixed = cli_process("doctor", "--fix", "--json")
    _clean(fixed)
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "service-left-over"] == ["done"], fixed.stdout
    assert sorted(os.listdir(folder)) == []
    quiet = cli_process("read", "MEMORY.md")
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert "service-left-over" not in _findings(cli_process)


@pytest.mark.parametrize("kind", ["folder", "link"])
def test_a_folder_or_link_where_a_killed_service_kept_a_file_is_set_aside_by_the_next_serve(workspace, state_dir,
                                                                                             cli_process, service, kind):
    """The finding says the next `serve` removes what a killed service left: a folder or link in the
    info file's place made it fail ('Is a directory'); it is kept under damaged/ and the service runs."""
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "a line", IN_PROCESS)
    service().stop(signal.SIGKILL)
    info = _data_dir(state_dir) / "service" / "info.json"
    assert info.exists()
    info.unlink()
    if kind == "folder":
        info.mkdir()
        (info / "kept.txt").write_text("a person's file\n")
    else:
        info.symlink_to(workspace / "MEMORY.md")
    running = service()
    assert running.stop() == 0, "".join(running.stderr)
    kept = list((_data_dir(state_dir) / "damaged").rglob("info.json"))
    assert len(kept) == 1 and (kept[0].is_symlink() or (kept[0] / "kept.txt").read_text() == "a person's file\n")
    assert (workspace / "MEMORY.md").read_text().startswith("# Memory")


def test_doctor_fix_never_rebuilds_under_a_service_that_holds_the_deleted_wal(workspace, state_dir, cli_process, service):
    """Following doctor's advice with the service still running rebuilt from the file alone and
    said "every row was recovered": the versions only the service still held were gone."""
    running, db, count = _with_a_service(workspace, state_dir, cli_process, service, during=8)
    os.unlink(f"{db}-wal")
    plain = cli_process("doctor", "--json")
    _clean(plain)
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "state-db-damaged"]
    assert f"pid {running.proc.pid}" in finding["message"] and "serve --stop" in finding["message"], finding
    repair = _rebuilt(cli_process)
    assert repair["status"] == "failed" and f"pid {running.proc.pid}" in repair["detail"], repair
    assert not (_data_dir(state_dir) / "damaged").exists()  # nothing moved
    assert running.stop() == 0, "".join(running.stderr)
    assert _findings(cli_process) == set()
    assert _versions(cli_process) == count


@pytest.mark.parametrize(("at", "size"), [(0, 16), (16, 8), (0, 100)], ids=["magic", "page size and versions", "whole header"])
def test_a_garbled_header_is_restored_and_every_row_kept(workspace, state_dir, cli_process, at, size):
    """Past the 16-byte magic (the page size, the fixed bytes SQLite checks: an editor's save over the
    file), only the magic was put back: the copy did not open, and the rebuilt database held nothing
    (review)."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(4):
        _edit(cli_process, f"line {i}")
    assert cli_process("watchdog", "snapshot").returncode == 0
    count = _versions(cli_process)
    db = _data_dir(state_dir) / "state.db"
    assert not Path(f"{db}-wal").exists()  # a clean close: everything is in the file
    with open(db, "r+b") as fh:
        fh.seek(at)
        fh.write(random.Random("header").randbytes(size))
    assert "state-db-damaged" in _findings(cli_process)
    assert _fix_and_count(cli_process) == count
    verified = cli_process("watchdog", "verify", "--json")
    assert verified.returncode in (0, 1) and "no watchdog baseline" not in verified.stdout + verified.stderr, verified.stdout


# -- what is at the state database's path is not a database ---------------------------------------

def _fifo(db: Path) -> None:
    os.mkfifo(db)


def _folder(db: Path) -> None:
    db.mkdir()
    (db / "inside").write_text("kept")


def _dangling(db: Path) -> None:
    db.symlink_to(db.parent / "nowhere.db")


def _device(db: Path) -> None:
    os.mknod(db, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # /dev/null's numbers


@pytest.mark.parametrize("make", [_fifo, _folder, _dangling, _device], ids=["fifo", "folder", "dangling link", "device"])
def test_a_state_db_that_is_not_a_file_is_a_finding_set_aside_by_fix(workspace, state_dir, cli_process, make):
    if make is _device and os.geteuid() != 0:
        pytest.skip("only root makes a device node")
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "a line", IN_PROCESS)
    db = _data_dir(state_dir) / "state.db"
    os.unlink(db)
    make(db)
    # Each in its own process with a deadline: an open of a FIFO would block forever.
    plain = run_process(["doctor", "--json"], env=env_for(workspace, state_dir), cwd=workspace, timeout=60)
    _clean(plain)
    assert "state-db-not-a-file" in {f["id"] for f in plain.json()["findings"]}, plain.stdout + plain.stderr
    refused = run_process(["history", "MEMORY.md"], env=env_for(workspace, state_dir), cwd=workspace, timeout=60)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "not a database file" in refused.stderr and "doctor --fix" in refused.stderr
    fixed = run_process(["doctor", "--fix", "--json"], env=env_for(workspace, state_dir), cwd=workspace, timeout=60)
    _clean(fixed)
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "state-db-not-a-file"] == ["done"], fixed.stdout
    (kept,) = [d / "state.db" for d in (_data_dir(state_dir) / "damaged").iterdir() if os.path.lexists(d / "state.db")]
    assert db.is_file() and not db.is_symlink() or not os.path.lexists(db)  # moved, never deleted
    if make is _folder:
        assert (kept / "inside").read_text() == "kept"
    _edit(cli_process, "a new line")  # a new state database
    assert _versions(cli_process) >= 1


def test_a_state_db_that_is_a_link_to_a_database_is_never_opened_and_fix_keeps_its_rows(workspace, state_dir, tmp_path,
                                                                                         cli_process):
    """SQLite opened the file the link named and kept its -wal and -shm beside that file, outside the
    owner-only data dir, where nothing checked the WAL."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(3):
        _edit(cli_process, f"line {i}", IN_PROCESS)
    count = _versions(cli_process)
    db = _data_dir(state_dir) / "state.db"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    target = elsewhere / "state.db"
    os.rename(db, target)
    db.symlink_to(target)
    before = target.read_bytes()
    plain = cli_process("doctor", "--json")
    _clean(plain)
    assert "state-db-not-a-file" in {f["id"] for f in plain.json()["findings"]}, plain.stdout
    for args in (("history", "MEMORY.md"), ("write", "MEMORY.md", "--append", "more", "--no-index")):
        refused = cli_process(*args)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "symbolic link" in refused.stderr and "doctor --fix" in refused.stderr, refused.stderr
    assert sorted(os.listdir(elsewhere)) == ["state.db"]  # no -wal or -shm made beside it
    fixed = cli_process("doctor", "--fix", "--json")
    _clean(fixed)
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-not-a-file"]
    assert repair["status"] == "done" and "every row was recovered" in repair["detail"], repair
    assert target.read_bytes() == before  # the file it named is left as it is
    (kept,) = (_data_dir(state_dir) / "damaged").glob("*/state.db")
    assert os.readlink(kept) == str(target)  # the link itself, moved
    assert db.is_file() and not db.is_symlink()
    assert _versions(cli_process) == count
    assert _findings(cli_process) <= {"memory-system-not-found"}


@pytest.mark.parametrize("suffix,make", [("-wal", _folder), ("-shm", _fifo)], ids=["wal folder", "shm fifo"])
def test_a_companion_that_is_not_a_file_is_a_finding_set_aside_by_fix(workspace, state_dir, cli_process, suffix, make):
    """A folder at the -wal failed every rebuild ("Is a directory"); a FIFO at the -shm made every
    command, plain doctor included, say "disk I/O error"."""
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "a line", IN_PROCESS)
    count = _versions(cli_process)
    db = _data_dir(state_dir) / "state.db"
    assert not os.path.lexists(f"{db}{suffix}")  # a clean close: everything is in the file
    make(Path(f"{db}{suffix}"))
    env = env_for(workspace, state_dir)
    plain = run_process(["doctor", "--json"], env=env, cwd=workspace, timeout=60)
    _clean(plain)
    assert "state-db-companion-not-a-file" in {f["id"] for f in plain.json()["findings"]}, plain.stdout + plain.stderr
    refused = run_process(["history", "MEMORY.md"], env=env, cwd=workspace, timeout=60)
    assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"state.db{suffix}" in refused.stderr and "doctor --fix" in refused.stderr, refused.stderr
    fixed = run_process(["doctor", "--fix", "--json"], env=env, cwd=workspace, timeout=60)
    _clean(fixed)
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "state-db-companion-not-a-file"] == ["done"], \
        fixed.stdout
    (kept,) = (_data_dir(state_dir) / "damaged").glob(f"*/state.db{suffix}")
    assert kept.is_dir() if make is _folder else stat.S_ISFIFO(os.lstat(kept).st_mode)  # moved, never deleted
    assert _versions(cli_process) == count  # the database itself kept
    assert _findings(cli_process) == set()


# (damage, whether `history` still reads, what the rebuild says it could not recover)
SCHEMA_DAMAGE = {
    "table dropped": ("DROP TABLE versions", False, "versions: the table is missing"),
    "objects dropped": ("DROP TABLE objects", False, "objects: the table is missing from the damaged file (4 row(s) made"),
    "column dropped": ("ALTER TABLE reads DROP COLUMN how", True, "reads: its column(s) how are missing"),
    "version zeroed": ("PRAGMA user_version = 0", False, None),
    "version negative": ("PRAGMA user_version = -1", False, None),
    "version lowered": ("PRAGMA user_version = 6", False, None),  # (every command said "duplicate column name: mode")
}


@pytest.mark.parametrize("damage", SCHEMA_DAMAGE)
def test_a_database_whose_schema_lost_a_table_a_column_or_its_version_is_found_and_rebuilt(workspace, state_dir,
                                                                                          cli_process, damage):
    """Quick_check passes on each: doctor found nothing, --fix repaired nothing, and every command
    that reads the table said "failed: no such table: versions" (or, with the version zeroed, "table
    objects already exists") without naming the repair."""
    sql, reads, lost = SCHEMA_DAMAGE[damage]
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(3):
        _edit(cli_process, f"line {i}")
    count = _versions(cli_process)
    db = _data_dir(state_dir) / "state.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(sql)
    conn.close()
    history = cli_process("history", "MEMORY.md")
    _clean(history)
    if not reads:
        assert history.returncode == 1 and len(history.stderr.strip().splitlines()) == 1, history.stderr
        assert "is damaged" in history.stderr and "doctor --fix" in history.stderr, history.stderr
    assert "state-db-damaged" in _findings(cli_process)
    repair = _rebuilt(cli_process)
    assert repair["status"] == "done", repair
    if lost is None:
        assert "every row was recovered" in repair["detail"], repair
    else:
        assert f"Could not be recovered: {lost}" in repair["detail"], repair  # never "every row was recovered"
    assert _findings(cli_process) <= {"memory-system-not-found"}
    assert _versions(cli_process) == (1 if damage == "table dropped" else count)  # (the file as it is, seen again)
    _edit(cli_process, "after the repair")
    # Every version's bytes are still there (the objects' rows were made again from their parts).
    assert all(v["available"] for v in cli_process("history", "MEMORY.md", "--json").json()["versions"])


@pytest.mark.parametrize("kind", ["file", "link"])
def test_something_else_at_the_damaged_folder_is_kept_in_it_and_the_repair_works(workspace, state_dir, tmp_path, cli,
                                                                                 kind):
    """A file (or a link) named damaged/ made every set-aside fail with "Not a directory": doctor
    --fix could repair nothing it keeps a copy of."""
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli, "a line")
    data_dir = _data_dir(state_dir)
    outside = tmp_path / "outside"
    outside.mkdir()
    if kind == "file":
        write(data_dir / "damaged", "a person's note\n")
    else:
        (data_dir / "damaged").symlink_to(outside)
    conn = sqlite3.connect(data_dir / "state.db", isolation_level=None)
    conn.execute("DROP TABLE checkpoint")
    conn.close()
    fixed = cli("doctor", "--fix", "--json")
    _clean(fixed)
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"] == ["done"], fixed.stdout
    (kept,) = (data_dir / "damaged").glob("*/damaged")
    if kind == "file":
        assert kept.read_text() == "a person's note\n"
    else:
        assert os.readlink(kept) == str(outside) and os.listdir(outside) == []  # nothing was made through it
    assert list((data_dir / "damaged").glob("*/state.db"))
    assert _findings(cli) <= {"memory-system-not-found"}


def test_a_rollback_stopped_by_a_damaged_database_is_finished_by_the_same_doctor_fix_that_rebuilds_it(workspace,
                                                                                                     state_dir, cli_process):
    """--fix finished the interrupted rollback first (over the damaged database: failed), then rebuilt
    the database, whose stored versions were gone with the table: the rollback could then never be
    finished, and every doctor --fix after said so again."""
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "as it was at the snapshot")
    label = cli_process("watchdog", "snapshot", "--json").json()["label"]
    _edit(cli_process, "written after it")
    now = (workspace / "MEMORY.md").read_bytes()
    conn = sqlite3.connect(_data_dir(state_dir) / "state.db", isolation_level=None)
    conn.execute("DROP TABLE object_parts")  # every version's bytes
    conn.close()
    stopped = cli_process("rollback", "--to", label, "--force")
    _clean(stopped)
    assert stopped.returncode == 1 and len(stopped.stderr.strip().splitlines()) == 1, stopped.stderr
    assert {"interrupted-rollback", "state-db-damaged"} <= _findings(cli_process)
    fixed = cli_process("doctor", "--fix", "--json")
    _clean(fixed)
    assert {f["id"] for f in fixed.json()["remaining"]} <= {"watchdog-changes"}, fixed.stdout  # (the edit after it)
    statuses = {r["id"]: r for r in fixed.json()["repairs"]}
    assert statuses["state-db-damaged"]["status"] == "done"
    finished = statuses["interrupted-rollback"]
    assert finished["status"] == "completed" and "no longer stored" in finished["detail"] and "MEMORY.md" in finished["detail"]
    assert (workspace / "MEMORY.md").read_bytes() == now  # left as it is: what it is to be is gone
    assert _findings(cli_process) <= {"memory-system-not-found", "watchdog-changes"}
    _edit(cli_process, "after the repair")


def _loose_versions(conn: sqlite3.Connection) -> None:
    """The version log made again without its constraints, as a hand-made copy would be, so a NULL fits."""
    conn.executescript("CREATE TABLE v AS SELECT * FROM versions; DROP TABLE versions; ALTER TABLE v RENAME TO versions;"
                       "UPDATE versions SET version = NULL WHERE id = (SELECT MAX(id) FROM versions)")


# (damage, the command that failed on it with a traceback, what the rebuild says of the rows)
ROW_DAMAGE = {
    "time text": ("UPDATE versions SET time = 'yesterday'", ("history", "MEMORY.md"), "left out"),
    "mode text": ("UPDATE versions SET mode = 'rw'", ("restore", "memory/old.md", "--last"), "made NULL"),
    "body text": ("UPDATE snapshots SET body = 'hello'", ("watchdog", "verify"), "left out"),
    "points text": ("UPDATE manifests SET points = 'x'", ("search", "green tea"), None),
    "version null": (_loose_versions, ("log",), "left out"),
}


@pytest.mark.parametrize("damage", ROW_DAMAGE)
def test_a_row_with_a_null_or_a_value_of_the_wrong_type_is_one_line_found_and_rebuilt(workspace, state_dir, cli_process,
                                                                                     damage):
    """SQLite keeps whatever a row is given, and quick_check passes: each command failed with a
    traceback deep in its reader (int('yesterday'), None[0]), doctor found nothing, --fix too."""
    sql, command, said = ROW_DAMAGE[damage]
    write(workspace / "MEMORY.md", "# Memory\n- likes green tea\n")
    write(workspace / "memory" / "old.md", "# Old\n")
    assert cli_process("index").returncode == 0
    for i in range(2):
        _edit(cli_process, f"line {i}")
    assert cli_process("read", "memory/old.md").returncode == 0
    assert cli_process("rm", "memory/old.md").returncode == 0
    assert cli_process("watchdog", "snapshot").returncode == 0
    conn = sqlite3.connect(_data_dir(state_dir) / "state.db", isolation_level=None)
    sql(conn) if callable(sql) else conn.execute(sql)
    conn.close()
    failed = cli_process(*command)
    _clean(failed)
    # (watchdog verify: exit 2, as a damaged snapshot; its exit 1 says that files changed)
    assert failed.returncode == (2 if command[0] == "watchdog" else 1), failed.stderr
    assert len(failed.stderr.strip().splitlines()) == 1, failed.stderr
    assert "damaged" in failed.stderr and "doctor --fix" in failed.stderr, failed.stderr
    assert "state-db-damaged" in _findings(cli_process)
    repair = _rebuilt(cli_process)
    assert repair["status"] == "done", repair
    assert ("every row was recovered" in repair["detail"]) if said is None else (said in repair["detail"]), repair
    assert _findings(cli_process) <= {"memory-system-not-found", "watchdog-changes"}
    done = cli_process(*command)
    _clean(done)
    assert done.returncode in (0, 1, 2) and "damaged" not in done.stderr, done.stderr  # (verify: no baseline left)
    _edit(cli_process, "after the repair")


def test_a_dry_run_over_an_unreadable_rollback_record_says_so(workspace, state_dir, cli_process):
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "a line")
    label = cli_process("watchdog", "snapshot", "--json").json()["label"]
    conn = sqlite3.connect(_data_dir(state_dir) / "state.db", isolation_level=None)
    conn.execute("INSERT INTO rollback_ops (id, record) VALUES (1, '[1, 2]')")
    conn.close()
    dry = cli_process("rollback", "--to", label, "--dry-run")
    _clean(dry)
    assert dry.returncode == 0 and "unreadable record of an interrupted rollback" in dry.stderr, dry.stderr


@pytest.mark.parametrize("command", [("write", "memory/new.md", "--append", "a new line"), ("rm", "memory/old.md")],
                         ids=["write", "rm"])
def test_a_change_made_is_a_success_when_the_index_update_after_it_finds_the_database_damaged(workspace, state_dir,
                                                                                            cli, command):
    """The index's look at its collections ran outside the update's error handling: the file was
    written (or removed into the history) and the command still said error, exit 1."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "old.md", "# Old\n")
    assert cli("index").returncode == 0
    assert cli("read", "memory/old.md").returncode == 0
    conn = sqlite3.connect(_data_dir(state_dir) / "state.db", isolation_level=None)
    conn.execute("DROP TABLE collections")
    conn.close()
    done = cli(*command)
    _clean(done)
    assert done.returncode == 0, done.stderr
    assert "index not updated" in done.stderr and "doctor --fix" in done.stderr, done.stderr
    assert (workspace / "memory" / "new.md").is_file() if command[0] == "write" else not (workspace / "memory" / "old.md").exists()


def test_a_newer_schema_is_a_finding_and_commands_say_one_line(workspace, state_dir, cli_process):
    write(workspace / "MEMORY.md", "# Memory\n")
    _edit(cli_process, "a line", IN_PROCESS)
    db = _data_dir(state_dir) / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    plain = cli_process("doctor", "--json")
    _clean(plain)
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "state-db-newer"]
    assert not finding["fixable"] and "schema 99" in finding["message"]
    for args in (("history", "MEMORY.md"), ("write", "MEMORY.md", "--append", "x", "--no-index")):
        refused = cli_process(*args)
        _clean(refused)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "newer openclaw-memory" in refused.stderr


@pytest.mark.parametrize("shell", [True, False], ids=["sqlite3 shell", "no shell"])
def test_a_damaged_page_loses_only_its_own_rows(workspace, state_dir, cli, cli_process, shell):
    """The first page of the version log's rows zeroed: the rows on every other page are kept, by
    SQLite's own recovery where its shell is installed, by rowid ranges where it is not."""
    from openclaw_memory.database import forget_connections

    if shell and not shutil.which("sqlite3"):
        pytest.skip("the sqlite3 shell is not installed")
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(40):
        _edit(cli, f"line {i} " + "words " * 20)
    forget_connections()  # this process's connection closed: everything is in the file
    count = _versions(cli_process)
    db = _data_dir(state_dir) / "state.db"
    conn = sqlite3.connect(db)
    leaves = conn.execute("SELECT pageno, ncell FROM dbstat WHERE name = 'versions' AND pagetype = 'leaf' "
                          "ORDER BY pageno").fetchall()
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    assert len(leaves) >= 2, leaves
    page, cells = leaves[0]
    with open(db, "r+b") as fh:
        fh.seek((page - 1) * page_size)
        fh.write(b"\0" * page_size)
    assert "state-db-damaged" in _findings(cli_process)
    env = None if shell else {"PATH": str(workspace / "no-tools-here")}
    fixed = cli_process("doctor", "--fix", "--json", env=env)
    _clean(fixed)
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"] == ["done"], fixed.stdout
    assert count - cells <= _versions(cli_process) <= count


@pytest.mark.parametrize("kind", ["fifo", "nested", "huge", "symlink", "list"])
def test_a_damaged_service_info_file_is_no_service_never_a_hang_or_a_traceback(workspace, state_dir, cli, kind):
    """The service's info file is read by every command that looks for a service: a FIFO in its
    place hung the open (no writer), arrays nested past the interpreter's depth raised
    RecursionError, and it was read whole whatever its size. Each is now no service at all."""
    from openclaw_memory.service_files import read_info, service_dir

    write(workspace / "MEMORY.md", "# Memory\n\n- tea\n")
    settings = settings_for(workspace, state_dir)
    info = Path(service_dir(settings), "info.json")
    info.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(info)
    elif kind == "nested":
        info.write_text("[" * 5000 + "]" * 5000)
    elif kind == "huge":
        info.write_text('{"pid": 1, "pad": "' + "x" * (1 << 20) + '"}')
    elif kind == "symlink":
        write(workspace / "elsewhere.json", '{"pid": 1}')
        info.symlink_to(workspace / "elsewhere.json")
    else:
        info.write_text('[{"pid": 1}]')
    assert read_info(settings) is None
    result = cli("status", "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("where", ["service", "in-process"])
def test_a_database_written_over_under_an_open_connection_stops_the_write_that_would_lose_a_note(
        workspace, state_dir, cli_process, service, where):
    """A sync or backup tool wrote over the state database's first page while a process had it open:
    the open connection read on from its WAL and cache, and a write replaced the note, its only
    earlier version committed into a file no process could open again (review: the person's text
    was gone, and `doctor --fix` could not bring it back). Now the connection looks at the file's
    header before each use: the write is refused, the note stays, the files are copied aside."""
    from openclaw_memory.errors import StateDamaged
    from openclaw_memory.memory.local import LocalMemory

    write(workspace / "MEMORY.md", "# M\nthe person wrote this, the only copy\n")
    memory = None
    if where == "service":
        running = service()
        _edit(cli_process, "read through the service")
    else:
        memory = LocalMemory(settings_for(workspace, state_dir))
        memory.read("MEMORY.md")
    before, versions = (workspace / "MEMORY.md").read_bytes(), _versions(cli_process)
    db = _data_dir(state_dir) / "state.db"
    with open(db, "r+b") as fh:
        fh.write(random.Random(7).randbytes(4096))
    if memory is not None:
        with pytest.raises(StateDamaged, match="was damaged under this process: its header is not SQLite's"):
            memory.write("MEMORY.md", content="# replaced by the agent\n")
        memory.close()
        assert list((_data_dir(state_dir) / "damaged").glob("*/state.db"))  # the file as it was, kept
    else:
        said = cli_process("write", "MEMORY.md", "--stdin", "--no-index", input="# replaced by the agent\n")
        _clean(said)
        assert said.returncode != 0 and "its header is not SQLite's" in said.stderr, said.stderr
        running.stop()
    assert (workspace / "MEMORY.md").read_bytes() == before  # nothing replaced
    # A new process is refused too (SQLite read page 1 from the WAL: it opened the file as sound),
    # doctor says so, and --fix rebuilds it with every version it holds.
    said = cli_process("write", "MEMORY.md", "--stdin", "--no-index", input="# replaced by the agent\n", env=IN_PROCESS)
    assert said.returncode != 0 and "is damaged: its header is not SQLite's" in said.stderr, said.stderr
    assert "state-db-damaged" in _findings(cli_process)
    assert _fix_and_count(cli_process) >= versions >= 1
    assert (workspace / "MEMORY.md").read_bytes() == before


@pytest.mark.parametrize("source", ["a backup of this workspace's index", "another workspace's shard"])
def test_a_shard_holding_other_points_than_its_manifest_lists_is_damaged_never_cited(workspace, state_dir, tmp_path, cli,
                                                                                      cli_process, service, source):
    """A shard restored from an older backup, or copied in from another workspace's state dir,
    held as many points as the manifest lists: its probe (new inodes) found it sound, doctor said
    "No problems found", `index` "0 changed", and search cited `memory/a.md#L1` with text the file
    does not hold (the other workspace's note). Its points are now checked against the manifest's
    (ids and chunk hashes): damaged, for the service's search too, and `index` rebuilds it."""
    write(workspace / "MEMORY.md", "# c\n")
    note = write(workspace / "memory" / "a.md", "the door code is 1111\n")
    assert cli("index").returncode == 0
    shard = _data_dir(state_dir) / "index" / "edge" / "memory-dir-main"
    if source.startswith("a backup"):
        shutil.copytree(shard, tmp_path / "copy")
        write(note, "the door code is 2222\n")
        assert cli("index").returncode == 0
    else:
        other, other_sd = tmp_path / "other", tmp_path / "other-state"
        write(other / "MEMORY.md", "# c\n")
        write(other / "memory" / "a.md", "the door code is 9999\n")
        write(note, "the door code is 2222\n")
        assert cli("index", env={"OPENCLAW_WORKSPACE": str(other), "OPENCLAW_STATE_DIR": str(other_sd)}, cwd=other).returncode == 0
        shutil.copytree(_data_dir(other_sd) / "index" / "edge" / "memory-dir-main", tmp_path / "copy")
        assert cli("index").returncode == 0
    shutil.rmtree(shard)
    shutil.copytree(tmp_path / "copy", shard)
    query = ("search", "door code", "--mode", "text", "--no-sync", "--json")

    running = service()
    served = cli_process(*query)
    _clean(served)
    assert served.returncode == 1 and "damaged" in served.stderr and "doctor --fix" in served.stderr, served.stdout
    assert running.stop() == 0
    found = cli("doctor", "--json")
    assert "index-damaged" in {f["id"] for f in found.json()["findings"]}, found.stdout
    searched = cli(*query)
    assert searched.returncode == 1 and "its manifest lists" in searched.stderr, searched.stdout
    indexed = cli("index")
    assert indexed.returncode == 0 and "memory-dir-main was damaged" in indexed.stderr, indexed.stderr
    snippets = [p["snippet"] for hit in cli(*query).json()["results"] for p in hit["passages"]]
    assert snippets == ["the door code is 2222"], snippets
    assert cli("doctor").returncode == 0
