"""`export`: what a killed export left beside its archive, and a file whose name no memory path may hold."""

from __future__ import annotations

import json
import os
import tarfile
import time

from conftest import write


def test_export_removes_the_temp_archives_dead_exports_of_that_name_left(workspace, tmp_path, cli):
    """A SIGKILLed export left `.NAME.<hex>.tmp` (its partial archive, hidden) that nothing removed."""
    write(workspace / "MEMORY.md", "# Memory\n")
    out = tmp_path / "out"
    out.mkdir()
    old = time.time() - 3600
    dead = out / ".b.tgz.0123abcd.tmp"
    recent = out / ".b.tgz.89abcdef.tmp"  # an export still running
    other = out / ".c.tgz.0123abcd.tmp"  # another archive's
    odd = out / ".b.tgz.0123abcd.tmp.keep"  # no temp name of ours
    for each in (dead, recent, other, odd):
        each.write_bytes(b"partial")
    for each in (dead, other, odd):
        os.utime(each, (old, old))
    link = out / ".b.tgz.fedcba98.tmp"
    link.symlink_to(workspace / "MEMORY.md")
    os.utime(link, (old, old), follow_symlinks=False)
    assert cli("export", str(out / "b.tgz")).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["b.tgz", recent.name, other.name, odd.name, link.name])
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n"


def test_a_file_with_a_backslash_in_its_name_is_left_out_and_said_the_rest_exported(workspace, tmp_path, cli):
    """One such file refused the whole export (exit 2, no archive)."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", "keep\n")
    write(workspace / "memory" / "win\\name.md", "x\n")
    archive = tmp_path / "b.tgz"
    done = cli("export", str(archive), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["files"] == ["MEMORY.md", "memory/a.md"]
    (warning,) = result["warnings"]
    assert "memory/win\\name.md" in warning and "backslash" in warning, warning
    with tarfile.open(archive) as tar:
        assert "files/memory/a.md" in tar.getnames()
    ws = tmp_path / "b" / "ws"
    ws.mkdir(parents=True)
    env = {"OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(tmp_path / "b" / "st")}
    assert cli("import", str(archive), env=env).returncode == 0  # the archive imports
    assert (ws / "memory" / "a.md").read_text() == "keep\n"


def test_export_names_the_symlinked_notes_it_leaves_out(workspace, state_dir, cli, tmp_path):
    """It said "exported 1 memory files" and nothing of memory/sl.md, a symlink `files` lists as skipped."""
    write(workspace / "MEMORY.md", "# Memory\n")
    outside = write(tmp_path / "outside.md", "not a memory file here\n")
    (workspace / "memory").mkdir(exist_ok=True)
    (workspace / "memory" / "sl.md").symlink_to(outside)
    done = cli("export", str(tmp_path / "a.tgz"))
    assert done.returncode == 0, done.stderr
    assert "warning: memory/sl.md was left out of the archive: symlink (ignored)" in done.stderr
    as_json = cli("export", str(tmp_path / "b.tgz"), "--json")
    assert "memory/sl.md was left out of the archive: symlink (ignored)" in as_json.json()["warnings"]
