"""A write that the state dir's full disk stops at any step leaves no phantom version (docs/watch.md).

The history must never list an agent-write version the file never held. The state dir is on a real
tmpfs, filled so that only ``free`` pages are left, for every ``free`` from none to enough for the
whole write: each step of the write meets a full disk in one of these runs.
"""

from __future__ import annotations

import os
import shutil

from conftest import env_for, run_in_process, settings_for, tmpfs, write
from openclaw_memory.database import forget_connections
from openclaw_memory.fsutil.hashing import hash_bytes
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.history.versions import AGENT_WRITE

PAGE = 4096


def leave_free(folder, pages: int) -> None:
    """Fill the file system of ``folder`` up, then give back ``pages`` pages."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            while True:
                os.write(fd, b"\0" * PAGE)
        except OSError:
            pass
        os.ftruncate(fd, max(0, os.fstat(fd).st_size - pages * PAGE))
    finally:
        os.close(fd)


def test_a_write_stopped_by_a_full_state_dir_never_leaves_a_phantom_version(tmp_path):
    outcomes = set()
    with tmpfs(tmp_path / "state-disk", "2m") as disk:
        for free in range(0, 40):
            ws, state = tmp_path / f"ws-{free}", disk / f"state-{free}"
            write(ws / "MEMORY.md", "# Memory\n")
            env = env_for(ws, state)
            assert run_in_process(("read", "MEMORY.md"), env, cwd=ws).returncode == 0
            leave_free(disk, free)
            try:
                res = run_in_process(("write", "MEMORY.md", "--append", f"line {free}", "--no-index"), env, cwd=ws)
            finally:
                (disk / "filler").unlink()
            assert "Traceback" not in res.stderr, res.stderr
            assert res.returncode in (0, 1), res.stderr
            outcomes.add(res.returncode)
            assert [p.name for p in ws.iterdir()] == ["MEMORY.md"]  # no temp file left beside it
            held = (ws / "MEMORY.md").read_bytes()
            assert held == (b"# Memory\n" if res.returncode else f"# Memory\nline {free}\n".encode())
            forget_connections()  # the write's connection may be the read-only one of a full disk
            store = HistoryStore.for_settings(settings_for(ws, state))
            written = [e.version for e in store.entries(str(ws / "MEMORY.md")) if e.origin == AGENT_WRITE]
            assert set(written) <= {hash_bytes(held)}, f"{free} pages free: a phantom agent-write version"
            forget_connections()
            shutil.rmtree(state)  # room for the next run
    assert outcomes == {0, 1}  # some runs were stopped, and the last ones had room for the whole write
