"""The Pythons the product starts of its own (the background service of ``mcp --serve``, the index's
shard probe) run none of the code in the caller's current folder.

``python -m`` and ``python -c`` put the current folder first on the module path: a ``json.py`` in the
folder an MCP client started from ran inside the long-lived service (review D2, item 3). Each test
plants a ``json.py`` that leaves a marker file when imported, then starts the process from that folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from conftest import FAKE_MODEL, settings_for, write

PLANTED = """\
import os, sys
open({marker!r}, "a").write(f"imported in pid {{os.getpid()}}\\n")
here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
del sys.modules["json"]
import json as _real
sys.modules["json"] = _real
"""


def _plant(folder: Path, marker: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "json.py").write_text(PLANTED.format(marker=str(marker)))
    return folder


def test_a_service_started_for_an_mcp_client_imports_nothing_from_the_clients_folder(
        workspace, state_dir, tmp_path, monkeypatch, cli):
    """Started from a folder holding a json.py and a relative OPENCLAW_CONFIG_PATH: the service runs in
    /, the planted module is never imported, and it answers its caller (the relative config names the
    same file for both: the caller's extra path, from that config, is the service's too)."""
    from openclaw_memory.memory.client import ServiceClient
    from openclaw_memory.memory.launch import ensure_service
    from openclaw_memory.service_files import read_info
    from openclaw_memory.settings import Overrides, resolve_settings

    marker = tmp_path / "imported-from-cwd"
    client_dir = _plant(tmp_path / "client", marker)
    write(workspace / "MEMORY.md", "# Memory\n")
    notes = write(tmp_path / "notes" / "a.md", "# A\n").parent
    write(client_dir / "conf" / "openclaw.json", json.dumps(
        {"agents": {"defaults": {"memorySearch": {"extraPaths": [str(notes)]}}}}))
    for name, value in {**FAKE_MODEL, "OPENCLAW_CONFIG_PATH": "conf/openclaw.json"}.items():
        monkeypatch.setenv(name, value)  # the service inherits this process's environment
    monkeypatch.chdir(client_dir)
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)),
                                environ={**FAKE_MODEL, "OPENCLAW_CONFIG_PATH": "conf/openclaw.json"})
    assert [str(e) for e in settings.extra_paths] == [str(notes)]
    ensure_service(settings)
    try:
        info = read_info(settings)
        assert info is not None and os.readlink(f"/proc/{info['pid']}/cwd") == "/"
        client = ServiceClient(settings, timeout=60)
        try:
            status = client.call("service")  # answered, not refused for other settings (ServiceUnavailable)
            assert status.info is not None and status.info.pid == info["pid"]
        finally:
            client.close()
    finally:
        monkeypatch.chdir(workspace)
        assert cli("serve", "--stop").returncode == 0
    assert not marker.exists(), marker.read_text()


def test_the_shard_probe_imports_nothing_from_the_current_folder(workspace, state_dir, tmp_path, monkeypatch, cli):
    """An index command run from a folder holding a json.py: the probe of a shard whose files another
    program touched (a child ``python -c``) does not import it."""
    import qdrant_edge as qe

    from openclaw_memory.index.store.edge import EdgeStore

    write(workspace / "MEMORY.md", "# Memory\n\nThe roof was fixed in May.\n")
    assert cli("index").returncode == 0
    store = EdgeStore(settings_for(workspace, state_dir).data_dir / "index")
    shards = [p for p in store.shard_path("x").parent.iterdir() if (p / "edge_config.json").is_file()]
    assert shards
    qe.EdgeShard.load(str(shards[0])).close()  # another program: its files' stat moved, so it is probed
    marker = tmp_path / "imported-from-cwd"
    monkeypatch.chdir(_plant(tmp_path / "here", marker))
    probed: list[str] = []
    real_probe = EdgeStore._probe
    monkeypatch.setattr(EdgeStore, "_probe", lambda self, name, expected: probed.append(name) or real_probe(self, name, expected))
    assert store.damage(shards[0].name, None) is None and probed == [shards[0].name]
    assert not marker.exists(), marker.read_text()


def test_the_services_environment_names_the_callers_relative_folders_absolutely(workspace, state_dir, tmp_path,
                                                                               monkeypatch):
    """The service runs in / (above): a relative OPENCLAW_INCLUDE_ROOTS made openclaw.json's $include
    refused there, a relative PYTHONPATH named other folders, and `python -m openclaw_memory` in a
    source checkout (the package found in the current folder, which -P leaves out) failed every call
    ("No module named openclaw_memory", review R4)."""
    import openclaw_memory
    from openclaw_memory.memory.launch import service_environment

    settings = settings_for(workspace, state_dir)
    monkeypatch.chdir(tmp_path)
    env = service_environment(settings, {"OPENCLAW_INCLUDE_ROOTS": f"other{os.pathsep}~/shared{os.pathsep}/abs",
                                         "PYTHONPATH": f"lib{os.pathsep}/opt/x"})
    assert env["OPENCLAW_INCLUDE_ROOTS"] == os.pathsep.join([str(tmp_path / "other"), "~/shared", "/abs"])
    assert env["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "lib"), "/opt/x"])
    checkout = Path(openclaw_memory.__file__).resolve().parent.parent
    monkeypatch.chdir(checkout)
    assert service_environment(settings, {})["PYTHONPATH"] == str(checkout)


def test_a_service_that_could_not_start_is_named_with_what_it_said(workspace, state_dir, tmp_path, monkeypatch):
    """The model and the host saw only "did not start (exit 2); see service.log": the reason (a config
    the service refused) was in that log alone. The error now quotes its last line."""
    import sys

    import pytest

    from openclaw_memory.errors import MemoryToolError
    from openclaw_memory.memory import launch

    settings = settings_for(workspace, state_dir)
    said = "error: /x/openclaw.json: $include '../other.json5' is outside the folder of openclaw.json"
    monkeypatch.setattr(launch, "service_command", lambda _s: [sys.executable, "-c", f"import sys; print({said!r}); sys.exit(2)"])
    monkeypatch.setattr(launch, "_answers", lambda _s: False)
    with pytest.raises(MemoryToolError) as refused:
        launch.ensure_service(settings)
    assert f"did not start (exit 2: {said});" in refused.value.message


def test_clients_starting_the_service_together_start_one(workspace, state_dir, monkeypatch, cli):
    """Four MCP clients started together (a host opening its sessions) each started a service: one
    served, the others wrote "error: a memory service ... is already running" to service.log and
    exited. The starters now take turns: one service is started, the others find it answering."""
    import threading

    from openclaw_memory.memory import launch
    from openclaw_memory.service_files import read_info

    write(workspace / "MEMORY.md", "# Memory\n")
    for name, value in FAKE_MODEL.items():
        monkeypatch.setenv(name, value)  # the service inherits this process's environment
    settings = settings_for(workspace, state_dir)
    started: list[int] = []
    real_popen = launch.subprocess.Popen

    def counted(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        started.append(proc.pid)
        return proc

    monkeypatch.setattr(launch.subprocess, "Popen", counted)
    failed: list[BaseException] = []

    def start() -> None:
        try:
            launch.ensure_service(settings)
        except BaseException as exc:  # (reported below, with the log)
            failed.append(exc)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for each in threads:
        each.start()
    for each in threads:
        each.join()
    try:
        log = (settings.data_dir / "service.log").read_text()
        assert not failed and len(started) == 1, (failed, started, log)
        assert read_info(settings)["pid"] == started[0] and "error" not in log, log
    finally:
        assert cli("serve", "--stop").returncode == 0
    assert not (settings.data_dir / "service" / "start.lock").exists()
