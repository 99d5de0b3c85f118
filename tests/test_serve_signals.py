"""``watch`` and ``serve`` stopped by signals at the moments a person sends them: during the first
sync's opening of the index, and again while the service is already stopping."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import env_for, fault, settings_for, wait_for, write
from openclaw_memory.service_files import service_dir


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
