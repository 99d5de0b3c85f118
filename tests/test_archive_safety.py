"""``import`` of an archive whose bits, headers or temp files would hurt the importing user: a new
file gets the archive's permission bits less this user's umask (never execute, set-id or sticky,
always owner read and write); an extended tar header past a name's size is refused before tarfile
reads it; a rerun of a killed import removes the temp files the killed run left; export never
writes an archive import refuses for its size; a non-file at a file's place is refused as an import."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from conftest import settings_for, write
from openclaw_memory.memory.local import LocalMemory


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _memory(base: Path, name: str) -> LocalMemory:
    ws = base / name / "ws"
    (ws / "memory").mkdir(parents=True, exist_ok=True)
    return LocalMemory(settings_for(ws, base / name / "state"))


# -- the bits a new file gets ----------------------------------------------------------------------


@pytest.mark.parametrize(("umask", "expected"), [(0o077, 0o600), (0o022, 0o644)])
def test_a_new_note_gets_the_archives_bits_less_the_umask_never_execute_always_owner_rw(umask, expected, tmp_path):
    """A 0666 note arrived 0666 under umask 077 (any user could append to the agent's memory), a 0777
    one rwxrwxrwx, a 0000 one a note its owner could not read; restore --last of a removed 0666 note
    came back with the bits the import logged, 0666. Each gets what a write's new file gets of them."""
    src = _memory(tmp_path, "src")
    notes = src.settings.workspace / "memory"
    for name, bits in (("team.md", 0o666), ("wild.md", 0o777), ("locked.md", 0o000), ("gone.md", 0o666)):
        os.chmod(write(notes / name, f"# {name}\n"), bits)
    src.read("memory/gone.md")
    src.remove("memory/gone.md")
    archive = tmp_path / "x.tgz"
    src.export_archive(str(archive))

    dst = _memory(tmp_path, "dst")
    here = dst.settings.workspace / "memory"
    old = os.umask(umask)
    try:
        dst.import_archive(str(archive))
        dst.restore("memory/gone.md", last=True)
    finally:
        os.umask(old)
    assert {n: _mode(here / n) for n in ("team.md", "wild.md", "locked.md", "gone.md")} == {
        "team.md": expected, "wild.md": expected, "locked.md": 0o600, "gone.md": expected}
    logged = {n: _logged_bits(dst, f"memory/{n}") for n in ("team.md", "wild.md", "locked.md")}
    assert logged == {"team.md": expected, "wild.md": expected, "locked.md": 0o600}


def _logged_bits(memory: LocalMemory, rel: str) -> int | None:
    from openclaw_memory.history.store import HistoryStore

    store = HistoryStore.for_settings(memory.settings)
    seen = store.log.last_mode(str(memory.settings.workspace / rel), rel)
    return None if seen is None else seen.mode & 0o7777


# -- a killed import's temp files ------------------------------------------------------------------


def _leftovers(*roots: Path) -> list[str]:
    return sorted(str(p) for root in roots for p in root.rglob(".*") if p.name.endswith((".tmp", ".swp")))


@pytest.mark.parametrize("step", ["import:staged", "import:placed"])
def test_the_import_that_finishes_a_killed_one_removes_the_temp_files_it_left(step, tmp_path, cli_process):
    """Killed after its staging, an import left a full temp copy of each file (`.n1.md.<hex>.tmp`);
    running it again said it imported them and left those, for doctor to name as write leftovers."""
    from conftest import fault

    src = _memory(tmp_path, "src")
    for rel in ("MEMORY.md", "memory/n1.md", "memory/sub/n2.md", "memory/sub/n3.md"):
        write(src.settings.workspace / rel, f"# {rel}\n\nSome words.\n")
    archive = tmp_path / "x.tgz"
    src.export_archive(str(archive))
    dst = _memory(tmp_path, "dst")
    ws = dst.settings.workspace
    env = {"OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(dst.settings.state_dir)}
    killed = cli_process("import", str(archive), env=fault(f"{step}=kill", env=env))
    assert killed.returncode != 0
    if step == "import:staged":
        assert _leftovers(ws), "the killed run left no temp file: the test tests nothing"
    again = cli_process("import", str(archive), env=env)
    assert again.returncode == 0, again.stderr
    assert _leftovers(ws) == []
    assert (ws / "memory" / "sub" / "n3.md").read_text() == "# memory/sub/n3.md\n\nSome words.\n"


# -- export writes no archive import refuses for its size ------------------------------------------


def test_export_limits_are_the_limits_import_refuses_past():
    from openclaw_memory.archive import export, manifest

    assert (export.MEMBER_LIMIT, export.TOTAL_LIMIT, export.MANIFEST_LIMIT) == (
        manifest.MEMBER_LIMIT, manifest.TOTAL_LIMIT, manifest.MANIFEST_LIMIT)


def test_a_file_past_the_member_limit_is_left_out_naming_it_and_the_archive_imports(tmp_path):
    """A 1.1 GB note (sparse: nothing is read) was exported, "exported 2 memory files", exit 0, and
    every import refused the archive whole."""
    from openclaw_memory.archive.manifest import MEMBER_LIMIT

    src = _memory(tmp_path, "src")
    write(src.settings.workspace / "memory" / "n.md", "# n\n")
    with open(src.settings.workspace / "memory" / "huge.md", "wb") as f:
        f.truncate(MEMBER_LIMIT + 1)
    archive = tmp_path / "x.tgz"
    result = src.export_archive(str(archive))
    assert result.files == ("memory/n.md",)
    assert [w for w in result.warnings if w.startswith("memory/huge.md was left out")], result.warnings
    dst = _memory(tmp_path, "dst")
    assert dst.import_archive(str(archive)).files == ("memory/n.md",)


def test_a_stored_version_past_the_member_limit_is_listed_without_its_bytes(tmp_path, monkeypatch):
    from openclaw_memory.archive import export, manifest

    for module in (export, manifest):
        monkeypatch.setattr(module, "MEMBER_LIMIT", 1000)
    src = _memory(tmp_path, "src")
    note = write(src.settings.workspace / "memory" / "n.md", "# n\n\n" + "word " * 300)
    src.history("memory/n.md")  # its 1,505-byte version stored
    write(note, "# n\n")
    archive = tmp_path / "x.tgz"
    result = src.export_archive(str(archive))
    assert result.files == ("memory/n.md",) and result.objects == 1, result
    assert any("listed without their bytes" in w for w in result.warnings), result.warnings
    dst = _memory(tmp_path, "dst")
    dst.import_archive(str(archive))
    assert (dst.settings.workspace / "memory" / "n.md").read_text() == "# n\n"


def test_an_archive_past_the_total_limit_is_refused_in_one_line_and_not_written(tmp_path, monkeypatch):
    from openclaw_memory.archive import export
    from openclaw_memory.errors import UsageError

    monkeypatch.setattr(export, "TOTAL_LIMIT", 100)
    src = _memory(tmp_path, "src")
    for name in ("a.md", "b.md"):
        write(src.settings.workspace / "memory" / name, "# note\n\n" + "word " * 20)
    with pytest.raises(UsageError, match=r"past the 100 import takes .*; nothing was written$"):
        src.export_archive(str(tmp_path / "x.tgz"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src"]
