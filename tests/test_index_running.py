"""An index run going on is reported as running, a killed one as interrupted (hostile review D, F7:
`status` said "(last index run interrupted)", JSON `interrupted: true`, and doctor `index-interrupted`,
exit 1, while the first `index` was still running; `search` at the same moment said "being built right
now (pid N)"). A real `index` process held mid-run by the fault switch's pause, and a real SIGKILL."""

from __future__ import annotations

import fcntl
import os

from conftest import fault, run_paused, settings_for, write
from openclaw_memory.index.agent_lock import agent_lock
from openclaw_memory.index.collections import resolve_collections
from openclaw_memory.index.manifest import is_dirty


def _notes(workspace, state_dir) -> None:
    for i in range(12):
        write(workspace / "memory" / f"n{i}.md", f"# note {i}\n\n" + f"word{i} " * 300 + "\n")
    (state_dir / "openclaw-memory.toml").write_text("[index]\nembed_batch = 8\n")


def _ids(result) -> list[str]:
    return [f["id"] for f in result.json()["findings"]]


def test_a_first_index_going_on_is_running_not_interrupted(workspace, state_dir, cli):
    _notes(workspace, state_dir)
    settings = settings_for(workspace, state_dir)
    seen = {}

    def meanwhile():
        # The run's dirty marks are there, as a killed run's would be: only the lock tells them apart.
        seen["dirty"] = [is_dirty(settings.data_dir, c.name) for c in resolve_collections(settings)]
        seen["json"], seen["plain"] = cli("status", "--json"), cli("status")
        seen["doctor"], seen["search"] = cli("doctor", "--json"), cli("search", "word1")

    code, _out, err = run_paused(workspace, state_dir, ("index",), "index:batch:2", meanwhile)
    assert code == 0, err
    assert any(seen["dirty"])
    status = seen["json"].json()
    pid = status["indexRunningPid"]
    # An integer, as every other pid in the JSON is (service.pid): it was the string "25451".
    assert status["indexRunning"] is True and type(pid) is int and pid > 0
    assert not any(c["interrupted"] for c in status["collections"])
    assert f"No index yet: being built right now (pid {pid})." in seen["plain"].stdout
    assert "interrupted" not in seen["plain"].stdout
    assert f"being built right now (pid {pid})" in seen["search"].stderr  # search's own word, the same rule
    doctor = seen["doctor"]
    assert doctor.returncode == 0, doctor.stdout
    assert "index-interrupted" not in _ids(doctor) and "index-missing" not in _ids(doctor)
    (running,) = [f for f in doctor.json()["findings"] if f["id"] == "index-running"]
    assert running["severity"] == "info" and f"(pid {pid})" in running["message"]

    after = cli("status", "--json").json()
    assert "indexRunningPid" not in after and "indexRunning" not in after
    assert not any(c["interrupted"] for c in after["collections"])


def test_a_killed_first_index_is_interrupted(workspace, state_dir, cli, cli_process):
    _notes(workspace, state_dir)
    killed = cli_process("index", env=fault("index:batch:2=kill"))
    assert killed.returncode == -9, killed.stderr
    status = cli("status", "--json").json()
    assert "indexRunningPid" not in status and any(c["interrupted"] for c in status["collections"])
    assert "(last index run interrupted)" in cli("status").stdout
    doctor = cli("doctor", "--json")
    assert doctor.returncode == 1 and "index-interrupted" in _ids(doctor) and "index-running" not in _ids(doctor)


def test_a_run_whose_lock_names_no_pid_is_running_with_no_pid(workspace, state_dir, cli):
    """A lock held whose file names no pid (not written yet, or damaged): the run is still going on;
    its pid is left out of the JSON (it was the string "unknown"), and the plain output says so."""
    _notes(workspace, state_dir)
    path = agent_lock(settings_for(workspace, state_dir), 0).path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # (another open of the file, as status makes, is refused it)
        status = cli("status", "--json").json()
        plain = cli("status").stdout
    finally:
        os.close(fd)
    assert status["indexRunning"] is True and "indexRunningPid" not in status
    assert not any(c["interrupted"] for c in status["collections"])
    assert "No index yet: being built right now (pid unknown)." in plain
