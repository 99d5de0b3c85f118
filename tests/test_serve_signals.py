"""``watch`` and ``serve`` stopped by signals at the moments a person sends them: during the first
sync's opening of the index, and again while the service is already stopping."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from conftest import env_for, fault, settings_for, wait_for, write
from openclaw_memory.service_files import service_dir

T = TypeVar("T")


def service_files(workspace, state_dir) -> list[str]:
    folder = service_dir(settings_for(workspace, state_dir))
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_a_sigterm_while_the_first_sync_opens_the_index_only_stops_the_watch(workspace, state_dir, cli, monkeypatch):
    """The watch's stop (WatchStopped, a BaseException) raised inside the engine's load was worded as
    damage: 'index not updated, will retry: ... cannot be opened (); rebuild it with `openclaw-memory
    index --full`', advice that costs a full re-embed of a whole index."""
    import openclaw_memory.index.store.edge as edge
    from openclaw_memory.watch.watcher import Watcher

    write(state_dir / "openclaw-memory.toml", "[index]\nembed_batch = 2\n")  # more than a batch: built outside a commit
    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    for i in range(4):
        write(workspace / "memory" / f"n{i}.md", f"# n{i}\n\nword {i}\n")
    real = edge.load_engine
    sent: list[int] = []
    real_warm = Watcher._warm

    def warm_or_stop(self, index):  # after the first sync: a watch that never loaded the shard stops (no hang)
        if not sent:
            os.kill(os.getpid(), signal.SIGTERM)
        return real_warm(self, index)

    monkeypatch.setattr(Watcher, "_warm", warm_or_stop)

    def load_then_sigterm(path, *args):
        if not sent:
            sent.append(signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)  # its handler runs at the next bytecode, inside the load
        return real(path, *args)

    monkeypatch.setattr(edge, "load_engine", load_then_sigterm)
    result = cli("watch")
    assert sent
    assert result.returncode == 0, result.stderr
    assert "rebuild" not in result.stderr and "warning" not in result.stderr, result.stderr
    assert result.stderr.startswith("stopped (SIGTERM)"), result.stderr
    monkeypatch.setattr(edge, "load_engine", real)
    assert cli("search", "lemur", "--json").returncode == 0


@pytest.mark.parametrize("stop", [KeyboardInterrupt, SystemExit])
def test_a_stop_raised_inside_the_engines_load_goes_through_untouched(workspace, state_dir, monkeypatch, stop):
    import openclaw_memory.index.store.edge as edge
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.signals import Stopping

    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    MemoryIndex(settings_for(workspace, state_dir)).sync()
    for raised in (stop, Stopping):
        write(workspace / "memory" / f"{raised.__name__}.md", "a change: the next sync loads the shard\n")

        def load(_path, *_args, raised=raised):
            raise raised()

        monkeypatch.setattr(edge, "load_engine", load)
        with pytest.raises(raised):
            MemoryIndex(settings_for(workspace, state_dir)).sync()


def test_a_stop_inside_the_reopen_after_an_optimize_goes_through_untouched(tmp_path, monkeypatch):
    """The reopen after an optimize let only KeyboardInterrupt and SystemExit through: a watch's or
    service's stop (Stopping, WatchStopped) met there was worded "could not be reopened ... run
    `openclaw-memory index` again"."""
    import qdrant_edge as qe

    from openclaw_memory.index.store.edge_shard import EdgeShard, engine_config
    from openclaw_memory.signals import Stopping

    path = tmp_path / "shard"
    path.mkdir()
    shard = EdgeShard("memory-dir-main", path, qe.EdgeShard.create(str(path), engine_config(4)), 4)

    def load(_path):
        raise Stopping()

    monkeypatch.setattr(qe.EdgeShard, "load", staticmethod(load))
    with pytest.raises(Stopping):
        shard._reopen()
    assert shard.closed


def test_a_panic_of_the_engine_is_still_worded_as_a_shard_that_cannot_be_opened(workspace, state_dir, monkeypatch):
    import openclaw_memory.index.store.edge as edge
    from openclaw_memory.errors import MemoryToolError
    from openclaw_memory.index.api import MemoryIndex

    class PanicException(BaseException):  # pyo3's: a BaseException by that name
        pass

    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    MemoryIndex(settings_for(workspace, state_dir)).sync()
    write(workspace / "memory" / "new.md", "a change: the next sync loads the shard\n")

    def load(_path, *_args):
        raise PanicException("segment file missing")

    monkeypatch.setattr(edge, "load_engine", load)
    with pytest.raises(MemoryToolError, match="cannot be opened .segment file missing.; rebuild it"):
        MemoryIndex(settings_for(workspace, state_dir)).sync()


class Running:
    """``openclaw-memory ARGS`` as a real process (the CLI's own signal rules), its stderr lines kept."""

    def __init__(self, workspace: Path, state_dir: Path, *args: str, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace,
                                     env=env_for(workspace, state_dir, **env), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def said(self, needle: str) -> None:
        """Wait until a line holds ``needle``; fail at once where the process ended without it."""
        wait_for(lambda: any(needle in line for line in self.lines) or self.proc.poll() is not None, WAIT)
        if not any(needle in line for line in self.lines):
            self._reader.join(WAIT)
            assert any(needle in line for line in self.lines), (self.proc.returncode, "".join(self.lines))

    def signal(self, *sigs: signal.Signals) -> None:
        for sig in sigs:
            self.proc.send_signal(sig)

    def end(self) -> int:
        code = self.proc.wait(WAIT)
        self._reader.join(WAIT)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(WAIT)


WAIT = 120


@pytest.mark.parametrize(("command", "first", "later"), [
    (("watch",), signal.SIGINT, (signal.SIGINT, signal.SIGINT)),
    (("serve",), signal.SIGTERM, (signal.SIGTERM, signal.SIGINT, signal.SIGTERM)),
])
def test_signals_after_the_first_while_it_stops_leave_one_clean_stop(workspace, state_dir, command, first, later):
    """Ctrl-C pressed twice (or SIGTERM sent twice) while watch/serve stops: the handlers were put
    back before the shutdown (which waits up to 10 s for requests in flight), and the second one
    killed it: exit 130 'error: interrupted' or 143 with nothing said, its socket, info and lock file
    left behind; one after its last line exited 130 too. Paused in its shutdown, then after it."""
    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    run = Running(workspace, state_dir, *command, env=fault("serve:stopping=pause", "serve:stopped=pause"))
    try:
        run.said("watching " if command == ("watch",) else "serving ")
        run.signal(first)
        run.said("test-hook: paused at serve:stopping")
        run.signal(*later)
        run.said("already stopping")  # said once, at the first of them
        run.signal(signal.SIGUSR1)
        run.said("test-hook: paused at serve:stopped")  # its handlers put back: the process only ends now
        run.signal(*later)
        run.signal(signal.SIGUSR1)
        code = run.end()
    finally:
        run.kill()
    err = "".join(run.lines)
    assert code == 0, err
    assert err.count("already stopping") == 1, err
    assert [line.split(")")[0] for line in run.lines if line.startswith("stopped (")] == [f"stopped ({first.name}"], err
    assert "error" not in err and "Traceback" not in err, err
    assert service_files(workspace, state_dir) == []


def test_a_ctrl_c_between_the_watch_lock_and_its_handlers_stops_the_watch(workspace, state_dir):
    """The service's handlers noted a stop signal into a list the watcher never read: one that came
    after the watch took its lock (the moment the tests, and a person, see it running) and before its
    own handlers were in place was lost, and the watch ran on (a CI run's 60 s wait for it timed out)."""
    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    run = Running(workspace, state_dir, "watch", env=fault("watch:held=pause"))
    try:
        run.said("test-hook: paused at watch:held")
        run.signal(signal.SIGINT)
        run.signal(signal.SIGUSR1)
        code = run.end()
    finally:
        run.kill()
    err = "".join(run.lines)
    assert code == 0, err
    assert any(line.startswith("stopped (SIGINT)") for line in run.lines), err
    assert service_files(workspace, state_dir) == []


def _unread(fd: int) -> int:
    import fcntl
    import struct
    import termios

    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


@pytest.mark.parametrize("json_out", [False, True], ids=["text", "json"])
def test_serve_stop_stops_a_watch_whose_stdout_nobody_reads(workspace, state_dir, cli, json_out):
    """A watch whose change lines filled a pipe nobody read (a reader that stopped reading, a
    terminal paused with Ctrl-S) sat in its write: SIGTERM, SIGINT and SIGHUP were each retried
    past, and `serve --stop` said it "did not stop within 30 s". The lines it could not print are
    dropped; the sync before them is done."""
    import fcntl

    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    for i in range(40):  # the first sync's change lines: more than the pipe holds
        write(workspace / "memory" / f"n{i:02d}_{'x' * 150}.md", f"note {i}\n")
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)  # F_SETPIPE_SZ: one page
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "watch", *(["--json"] if json_out else [])],
                            cwd=workspace, env=env_for(workspace, state_dir), stdin=subprocess.DEVNULL,
                            stdout=write_end, stderr=subprocess.PIPE, text=True)
    try:
        # Its lines fill the pipe: the next one waits for a reader (the pipe takes no more).
        wait_for(lambda: not select.select([], [write_end], [], 0)[1] or proc.poll() is not None, WAIT)
        assert proc.poll() is None and _unread(read_end) > 0
        stopped = cli("serve", "--stop")
        code = proc.wait(WAIT)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()
        os.close(read_end)
        os.close(write_end)
    assert stopped.returncode == 0, (stopped.stderr, err)
    assert code == 0, err
    assert any(line.startswith("stopped (SIGTERM): 41 change(s) applied in 1 sync(s)") for line in err.splitlines()), err
    assert "Traceback" not in err and "error" not in err, err
    assert service_files(workspace, state_dir) == []
    assert "41 files scanned, 0 changed" in cli("index").stdout  # the sync before them was done


def _started_with_sigint_ignored(start: Callable[[], T]) -> T:
    """``start()`` with SIGINT ignored, as a script's shell starts a background job (``serve &``):
    the child inherits it (the suite's own SIGINT stays its own)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize(("args", "started"), [(("serve", "--no-watch"), "serving "), (("watch",), "watching ")])
def test_a_service_started_with_sigint_ignored_runs_on_at_a_ctrl_c(workspace, state_dir, args, started):
    """`serve &` in a script (SIGINT ignored, so that a Ctrl-C at the script's foreground does not
    reach it) was stopped by a SIGINT all the same: the service set its own handler over the ignore.
    It runs on, as under nohup for SIGHUP; SIGTERM stops it."""
    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    run = _started_with_sigint_ignored(lambda: Running(workspace, state_dir, *args, env={}))
    try:
        run.said(started)
        run.signal(signal.SIGINT, signal.SIGTERM)  # (both pending: SIGINT, the lower, is handled first)
        code = run.end()
    finally:
        run.kill()
    err = "".join(run.lines)
    assert code == 0, err
    assert [line.split(")")[0] for line in run.lines if line.startswith("stopped (")] == ["stopped (SIGTERM"], err
    assert service_files(workspace, state_dir) == []


def test_an_index_started_with_sigint_ignored_is_not_interrupted(workspace, state_dir, cli):
    """The CLI's Ctrl-C rule (interrupt_once) set its handler over an ignored SIGINT: `index &` in a
    script was "interrupted" (exit 130) by a Ctrl-C meant for the script's foreground."""
    for i in range(4):
        write(workspace / "memory" / f"n{i}.md", f"# n{i}\n\nword {i}\n")
    proc = _started_with_sigint_ignored(lambda: subprocess.Popen(
        [sys.executable, "-m", "openclaw_memory", "index"], cwd=workspace, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=fault("index:embedded:1=pause", env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off"))))
    assert proc.stderr is not None
    try:
        said = []
        while "test-hook: paused at index:embedded:1" not in (line := proc.stderr.readline()):
            assert line, "the index ended without pausing"
            said.append(line)
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGUSR1)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, "".join(said) + err
    assert "Indexed agent main: 4 files scanned, 4 changed" in out, out


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_before_the_services_handlers_stops_it_cleanly(workspace, state_dir, sig):
    """Sent in the first half second (the settings, the imports), before the service's handlers
    were in place, SIGTERM and SIGHUP killed it (143, 129) with nothing said. The CLI notes them from
    the command line parsed on, and the service, once started, stops as on one sent later."""
    write(workspace / "MEMORY.md", "# Memory\n\nlemur facts\n")
    run = Running(workspace, state_dir, "watch", env=fault("serve:starting=pause"))
    try:
        run.said("test-hook: paused at serve:starting")
        run.signal(sig, signal.SIGUSR1)
        code = run.end()
    finally:
        run.kill()
    err = "".join(run.lines)
    assert code == 0, err
    assert [line.split(")")[0] for line in run.lines if line.startswith("stopped (")] == [f"stopped ({sig.name}"], err
    assert service_files(workspace, state_dir) == []


def test_a_sigterm_before_the_stdio_servers_handlers_ends_it_cleanly(workspace, state_dir):
    """The MCP server over stdio, the same: SIGTERM before its handlers (its imports) killed it, 143."""
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], cwd=workspace, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=fault("mcp:starting=pause", env=env_for(workspace, state_dir)))
    assert proc.stderr is not None
    try:
        while "test-hook: paused at mcp:starting" not in (line := proc.stderr.readline()):
            assert line, "the server ended without pausing"
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGUSR1)
        _out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    assert "stopping (SIGTERM): answering the calls already read" in err and "Traceback" not in err, err
