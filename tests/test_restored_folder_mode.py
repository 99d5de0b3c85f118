"""A folder made to put a note back (``restore --last`` or a rollback bringing back a note removed
with its folder, ``mv`` into a new folder) is no more open than the note: a private ``0600`` note
in a ``0700`` folder, both removed, came back in a ``0755`` folder, and every user of the machine
listed its name (``memory/priv/divorce-lawyer.md``). Checked as another user (uid 65534), so these
run as root only; the workspace lies in a folder every user may reach (:func:`conftest.base`)."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import NOBODY, as_nobody, settings_for, write
from openclaw_memory.history.placing import folder_mode_for
from openclaw_memory.history.versions import FileMode
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.rollback.plan import iso_moment

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user (uid 65534) needs root")

TEXT = "# Lawyer\n\nThe divorce lawyer's number.\n"


@pytest.fixture
def workspace(base: Path) -> Path:
    ws = base / "ws"
    (ws / "memory").mkdir(parents=True, mode=0o755)
    os.chmod(ws, 0o755)
    os.chmod(ws / "memory", 0o755)
    write(ws / "MEMORY.md", "# M\n")
    return ws


@pytest.fixture
def state_dir(base: Path) -> Path:
    sd = base / "state"
    sd.mkdir()
    return sd


@pytest.fixture(autouse=True)
def umask_022() -> Iterator[None]:
    """The common umask: a folder made for a note gets 0755 from it unless the product narrows it."""
    before = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(before)


def lists(folder: str) -> object:
    """What another user sees listing ``folder``: its names, or the error."""
    try:
        return sorted(os.listdir(folder))
    except OSError as exc:
        return type(exc).__name__


def remove(cli, note: Path, rel: str) -> None:
    """``rm`` the note, then its folder (``rmdir``), as its user does."""
    assert cli("rm", rel, "--no-index").returncode == 0
    note.parent.rmdir()


def mode_of(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def private_note(workspace: Path, rel: str = "memory/priv/divorce-lawyer.md", mode: int = 0o600) -> Path:
    note = workspace / rel
    note.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(note.parent, 0o700 if mode & 0o077 == 0 else 0o755)
    write(note, TEXT)
    os.chmod(note, mode)
    return note


def test_restore_last_of_a_private_note_removed_with_its_folder_makes_the_folder_private(cli, workspace):
    note = private_note(workspace)
    assert lists(str(workspace / "memory")) == as_nobody(lists, str(workspace / "memory"))  # the control: others list memory/
    assert cli("read", "memory/priv/divorce-lawyer.md").returncode == 0
    remove(cli, note, "memory/priv/divorce-lawyer.md")

    done = cli("restore", "memory/priv/divorce-lawyer.md", "--last", "--no-index")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == TEXT and mode_of(note) == 0o600
    assert mode_of(note.parent) == 0o700
    assert as_nobody(lists, str(note.parent)) == "PermissionError"


def test_a_rollback_bringing_back_a_private_note_removed_with_its_folder_makes_the_folder_private(cli, workspace):
    note = private_note(workspace)
    assert cli("read", "memory/priv/divorce-lawyer.md").returncode == 0
    moment = time.time()
    while time.time() <= moment + 0.001:  # every later entry after the moment
        time.sleep(0.001)
    shutil.rmtree(note.parent)

    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == TEXT and mode_of(note) == 0o600
    assert mode_of(note.parent) == 0o700
    assert as_nobody(lists, str(note.parent)) == "PermissionError"


def test_a_private_note_moved_into_new_folders_gets_private_folders(cli, workspace):
    note = private_note(workspace)
    assert cli("read", "memory/priv/divorce-lawyer.md").returncode == 0
    done = cli("mv", "memory/priv/divorce-lawyer.md", "memory/a/b/lawyer.md", "--no-index")
    assert done.returncode == 0, done.stderr
    assert mode_of(workspace / "memory/a") == mode_of(workspace / "memory/a/b") == 0o700
    assert as_nobody(lists, str(workspace / "memory/a")) == "PermissionError"
    assert not note.exists()


def test_an_ordinary_note_brought_back_gets_an_ordinary_folder(cli, workspace):
    note = private_note(workspace, "memory/shared/plan.md", 0o644)
    assert cli("read", "memory/shared/plan.md").returncode == 0
    remove(cli, note, "memory/shared/plan.md")

    assert cli("restore", "memory/shared/plan.md", "--last", "--no-index").returncode == 0
    assert mode_of(note) == 0o644 and mode_of(note.parent) == 0o755  # 0755 less the umask, as before
    assert as_nobody(lists, str(note.parent)) == ["plan.md"]


def test_a_note_its_group_may_read_gets_a_folder_its_group_may_enter(cli, workspace):
    note = private_note(workspace, "memory/team/plan.md", 0o640)
    assert cli("read", "memory/team/plan.md").returncode == 0
    remove(cli, note, "memory/team/plan.md")

    assert cli("restore", "memory/team/plan.md", "--last", "--no-index").returncode == 0
    assert mode_of(note) == 0o640 and mode_of(note.parent) == 0o750
    assert as_nobody(lists, str(note.parent)) == "PermissionError"


def test_a_users_private_note_restored_by_root_is_in_a_private_folder_of_the_users(cli, workspace):
    """Root's folder in a user's tree is the user's (give_to_folder_owner): the user still reaches it."""
    for path in (workspace, workspace / "memory", workspace / "MEMORY.md"):
        os.chown(path, NOBODY, NOBODY)
    note = private_note(workspace)
    os.chown(note.parent, NOBODY, NOBODY)
    os.chown(note, NOBODY, NOBODY)
    assert cli("read", "memory/priv/divorce-lawyer.md").returncode == 0
    remove(cli, note, "memory/priv/divorce-lawyer.md")

    assert cli("restore", "memory/priv/divorce-lawyer.md", "--last", "--no-index").returncode == 0
    st = note.parent.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (NOBODY, NOBODY, 0o700)
    assert as_nobody(lists, str(note.parent)) == ["divorce-lawyer.md"]


def test_the_folder_is_made_private_at_its_mkdir(workspace, state_dir, monkeypatch):
    """Never a moment wider: the mode given to mkdir itself (a program that imports the package keeps
    its own umask: nothing narrows the folder after)."""
    note = private_note(workspace)
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read("memory/priv/divorce-lawyer.md")
    memory.remove("memory/priv/divorce-lawyer.md", update_index=False)
    note.parent.rmdir()
    made: list[tuple[str, int]] = []
    mkdir = os.mkdir

    def spy(path, mode=0o777, *args, **kwargs):
        made.append((os.fsdecode(path), mode))
        return mkdir(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", spy)
    memory.restore("memory/priv/divorce-lawyer.md", last=True, update_index=False)
    assert ("priv", 0o700) in made and all(mode == 0o700 for name, mode in made if name == "priv")
    assert mode_of(note.parent) == 0o700


@pytest.mark.parametrize(("note", "folder"), [
    (None, 0o755), (0o644, 0o755), (0o600, 0o700), (0o400, 0o700), (0o640, 0o750), (0o620, 0o750), (0o604, 0o705),
])
def test_the_folder_mode_for_a_note(note, folder):
    assert folder_mode_for(None if note is None else FileMode(note, 0, 0)) == folder
