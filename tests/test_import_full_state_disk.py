"""An import whose history fills the state dir's disk: the files are placed, and the error says so.

Clearing the import's record after the failure wrote to the full database too: its "the disk is
full ... nothing was changed" replaced "the files were imported, but their history could not be
logged", after every file was written."""

from __future__ import annotations

import base64
import json
import random

from conftest import tmpfs, write


def test_an_import_that_fills_the_state_disk_says_the_files_were_imported(workspace, state_dir, tmp_path, cli):
    rng = random.Random(5)
    write(workspace / "MEMORY.md", "# A\n")
    for i in range(3):
        write(workspace / "memory" / f"n{i}.md", f"# n{i}\n" + base64.b64encode(rng.randbytes(3_500_000)).decode())
    archive = tmp_path / "e.tgz"
    assert cli("export", str(archive)).returncode == 0
    ws = tmp_path / "b" / "ws"
    ws.mkdir(parents=True)
    with tmpfs(tmp_path / "b" / "st", "12m") as st:
        env = {"OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(st)}
        done = cli("import", str(archive), env=env)
        assert done.returncode == 1, done.stderr
        assert "the files were imported, but their history could not be logged" in done.stderr, done.stderr
        assert "nothing was changed" not in done.stderr and "is full" in done.stderr, done.stderr
        assert "doctor --fix" in done.stderr  # the record left: what runs it again
        assert sorted(p.name for p in (ws / "memory").iterdir()) == ["n0.md", "n1.md", "n2.md"]
        doctor = cli("doctor", "--json", env=env)
        found = json.loads(doctor.stdout)["findings"]
        assert any("interrupted import" in f["message"] for f in found), doctor.stdout
