"""An archive's agent ids are normalized on import as ``--agent`` normalizes one (tests/test_agent_ids.py):
an archive whose versions say "Ops" (an older release recorded ``--agent Ops`` so) was logged ``by Ops``,
and neither ``log --agent ops`` nor ``log --agent Ops`` found any of it."""

from __future__ import annotations

import json

import pytest
from test_export_import import rebuilt

from conftest import write


@pytest.fixture
def archive(tmp_path, workspace, cli):
    write(workspace / "MEMORY.md", "hi\n")
    assert cli("--agent", "ops", "read", "MEMORY.md").returncode == 0
    assert cli("--agent", "ops", "write", "MEMORY.md", "--append", "x").returncode == 0
    out = tmp_path / "a.tar.gz"
    assert cli("export", str(out)).returncode == 0
    return out


def _agents(said: str):
    def edit(manifest, members):
        manifest["agent"] = said
        for history in manifest["history"]:
            for version in history["versions"]:
                if version["agent"] == "ops":
                    version["agent"] = said
    return edit


def test_an_archives_agent_ids_are_normalized_on_import(tmp_path, archive, cli):
    other = {"OPENCLAW_WORKSPACE": str(tmp_path / "ws2"), "OPENCLAW_STATE_DIR": str(tmp_path / "s2")}
    (tmp_path / "ws2").mkdir()
    imported = cli("import", str(rebuilt(archive, tmp_path / "b.tar.gz", _agents(" Ops!"))), env=other)
    assert imported.returncode == 0, imported.stderr
    assert " Ops" not in imported.stdout  # the archive's agent as recorded here
    agents = {e["agent"] for e in cli("log", "--json", env=other).json()["entries"]}
    assert "ops" in agents and agents <= {None, "main", "ops"}, agents
    for asked in ("ops", "Ops"):
        found = cli("log", "--agent", asked, env=other)
        assert found.returncode == 0 and "by ops" in found.stdout and "1 version shown" in found.stdout, (asked, found)


@pytest.mark.parametrize("said", ["!!!", "--"])
def test_an_agent_id_with_nothing_left_is_refused_in_one_line(tmp_path, archive, cli, said):
    other = {"OPENCLAW_WORKSPACE": str(tmp_path / "ws2"), "OPENCLAW_STATE_DIR": str(tmp_path / "s2")}
    (tmp_path / "ws2").mkdir()
    refused = cli("import", str(rebuilt(archive, tmp_path / "b.tar.gz", _agents(said))), env=other)
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert f"its manifest's agent {json.dumps(said)} is refused: an agent id needs a letter" in refused.stderr, refused.stderr
    assert cli("log", "--json", env=other).json()["entries"] == []
