"""``watch`` and ``serve`` stopped by signals at the moments a person sends them: during the first
sync's opening of the index, and again while the service is already stopping."""

from __future__ import annotations

import os
import signal

import pytest

from conftest import write


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
    from conftest import settings_for
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


def test_a_panic_of_the_engine_is_still_worded_as_a_shard_that_cannot_be_opened(workspace, state_dir, monkeypatch):
    import openclaw_memory.index.store.edge as edge
    from conftest import settings_for
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
