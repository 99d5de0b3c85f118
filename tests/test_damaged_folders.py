"""Something other than a folder where the data dir keeps one of its own (a file, a symbolic link):
plain doctor names it (and still says what every other check found), ``doctor --fix`` moves it
under ``damaged/`` and builds the index again where its shards were, and a command that meets it
says one line naming doctor; a change already made is never reported as failed because of it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import settings_for, write

FOLDERS = ["index", "index/edge", "index/locks", "watch", "service"]


@pytest.fixture
def data_dir(workspace: Path, state_dir: Path, cli) -> Path:
    write(workspace / "MEMORY.md", "# Memory\n- likes green tea\n")
    assert cli("index").returncode == 0
    data_dir = settings_for(workspace, state_dir).data_dir
    for rel in FOLDERS:  # every folder made once (watch/ and service/ by serve)
        (data_dir / rel).mkdir(exist_ok=True)
    return data_dir


def _replace(data_dir: Path, rel: str, kind: str, outside: Path) -> Path:
    import shutil

    path = data_dir / rel
    shutil.rmtree(path)
    if kind == "file":
        write(path, "a person's note\n")
    else:
        path.symlink_to(outside)
    return path


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.mark.parametrize("kind", ["file", "link"])
@pytest.mark.parametrize("rel", FOLDERS)
def test_plain_doctor_names_it_and_fix_moves_it_aside_and_search_works_again(rel, kind, data_dir, outside, cli):
    path = _replace(data_dir, rel, kind, outside)

    plain = cli("doctor", "--json")

    assert plain.returncode == 1 and "Traceback" not in plain.stderr, plain.stderr
    found = {f["id"]: f for f in plain.json()["findings"]}
    assert found["state-folder-not-a-folder"]["paths"] == [str(path)]
    assert os.path.islink(path) if kind == "link" else path.is_file()  # plain doctor moved nothing

    fixed = cli("doctor", "--fix", "--json")

    assert "Traceback" not in fixed.stderr, fixed.stderr
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "state-folder-not-a-folder"] == ["done"]
    (kept,) = (data_dir / "damaged").glob(f"*/{rel}")
    if kind == "file":
        assert kept.read_text() == "a person's note\n"
    else:
        assert os.readlink(kept) == str(outside) and os.listdir(outside) == []  # nothing made through the link
    assert {f["id"] for f in fixed.json()["remaining"]} <= {"memory-system-not-found"}, fixed.stdout
    searched = cli("search", "green tea", "--json")
    assert searched.returncode == 0 and searched.json()["results"], searched.stderr
    assert cli("doctor").returncode == 0


def test_a_command_that_meets_it_says_one_line_naming_doctor_and_a_write_is_still_a_success(data_dir, outside, cli,
                                                                                           workspace):
    _replace(data_dir, "index/edge", "file", outside)

    status = cli("status")
    written = cli("write", "memory/new.md", "--append", "a new line")

    assert status.returncode == 1 and len(status.stderr.strip().splitlines()) == 1, status.stderr
    assert "Not a directory" in status.stderr and "doctor --fix" in status.stderr, status.stderr
    # The file is written: the index not being updated is a warning, not the write's failure.
    assert written.returncode == 0 and "index not updated" in written.stderr, written.stderr
    assert (workspace / "memory" / "new.md").read_text() == "a new line\n"


def test_a_folder_where_the_service_keeps_its_info_file_is_kept_aside_by_fix(data_dir, cli):
    """--fix unlinked what a killed service left, and failed on a folder there: "Is a directory"."""
    info = data_dir / "service" / "info.json"
    write(info / "kept.txt", "a person's note\n")

    plain = cli("doctor", "--json")
    fixed = cli("doctor", "--fix", "--json")

    assert "service-left-over" in {f["id"] for f in plain.json()["findings"]}
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "service-left-over"] == ["done"], fixed.stdout
    (kept,) = (data_dir / "damaged").glob("*/service/info.json")
    assert (kept / "kept.txt").read_text() == "a person's note\n" and not info.exists()
    assert cli("doctor").returncode == 0


def test_a_lock_whose_folder_is_a_file_names_doctor(data_dir, outside, cli):
    """It said "File exists (is the state dir writable?)", which it was."""
    _replace(data_dir, "index/locks", "file", outside)

    searched = cli("search", "green tea")

    assert searched.returncode == 2 and len(searched.stderr.strip().splitlines()) == 1, searched.stderr
    assert "cannot take the lock" in searched.stderr and "doctor --fix" in searched.stderr, searched.stderr


@pytest.mark.parametrize("kind", ["file", "link"])
def test_a_shard_folder_that_is_something_else_is_index_damage_rebuilt_by_fix(kind, data_dir, outside, cli):
    """doctor called it a stale index, whose re-index failed at each --fix: "Not a directory"."""
    path = _replace(data_dir, "index/edge/memory-root-main", kind, outside)

    plain = cli("doctor", "--json")
    fixed = cli("doctor", "--fix", "--json")

    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "index-damaged"]
    assert "not a shard's folder" in finding["message"]
    assert [r["status"] for r in fixed.json()["repairs"] if r["id"] == "index-damaged"] == ["done"], fixed.stdout
    (kept,) = (data_dir / "damaged").glob("*/index/edge/memory-root-main")
    assert kept.read_text() == "a person's note\n" if kind == "file" else os.readlink(kept) == str(outside)
    assert os.listdir(outside) == [] and path.is_dir()
    searched = cli("search", "green tea", "--json")
    assert searched.returncode == 0 and searched.json()["results"], searched.stderr
    assert cli("doctor").returncode == 0


def test_a_data_dir_that_is_a_file_says_to_move_it_not_doctor(data_dir, cli, workspace):
    """doctor cannot repair what holds its own lock: the user is told what is in the way."""
    import shutil

    shutil.rmtree(data_dir)
    write(data_dir, "a person's note\n")

    fixed = cli("doctor", "--fix")
    written = cli("write", "memory/new.md", "--append", "a new line")

    for done in (fixed, written):
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"{data_dir} is not a folder: move it away" in done.stderr, done.stderr
    assert data_dir.read_text() == "a person's note\n" and not (workspace / "memory" / "new.md").exists()
