"""A note brought back where none is (``restore --last`` of a removed note, ``restore PATH VERSION``,
a rollback's bring-back, a removal finished by ``doctor --fix`` then restored) comes back with the
permission bits and owner the history logged with it, not the default mode and the caller's owner:
a ``0600`` note came back ``0644`` (readable by every user of the machine), and root restoring a
user's note made it root's (the user's agent could no longer write it). A version logged before
schema 7 kept no mode (NULL): it comes back as before, with a new file's mode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import env_for, fault, settings_for, write
from openclaw_memory.history.placing import new_file_mode
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.rollback.plan import iso_moment

SECRET = "# Passwords\n\nThe staging database password is kept here.\n"


def memory_for(workspace, state_dir) -> LocalMemory:
    return LocalMemory(settings_for(workspace, state_dir))


def mode_of(path) -> int:
    return path.stat().st_mode & 0o7777


def private_note(workspace, name: str = "secret.md"):
    note = write(workspace / "memory" / name, SECRET)
    os.chmod(note, 0o600)
    assert new_file_mode() != 0o600  # the control: a note made anew here is not 0600, so the test can fail
    return note


def test_a_0600_note_removed_and_restored_is_0600_again(workspace, state_dir):
    note = private_note(workspace)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/secret.md")
    removed = memory.remove("memory/secret.md", update_index=False)
    assert not note.exists()

    assert memory.restore("memory/secret.md", last=True, update_index=False).created
    assert note.read_text() == SECRET and mode_of(note) == 0o600

    memory.read("memory/secret.md")  # by its version too, once removed again
    memory.remove("memory/secret.md", update_index=False)
    memory.restore("memory/secret.md", removed.version, update_index=False)
    assert mode_of(note) == 0o600


def test_a_rollback_brings_a_removed_0600_note_back_as_0600(cli, workspace, state_dir):
    note = private_note(workspace)
    assert cli("read", "memory/secret.md").returncode == 0
    moment = time.time()
    while time.time() <= moment + 0.001:  # every later entry after the moment
        time.sleep(0.001)
    assert cli("rm", "memory/secret.md", "--no-index").returncode == 0
    assert not note.exists()

    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--json")
    assert done.returncode == 0, done.stderr
    assert [(f["path"], f["fate"]) for f in done.json()["files"]] == [("memory/secret.md", "bring-back")]
    assert note.read_text() == SECRET and mode_of(note) == 0o600


def test_a_removal_finished_by_doctor_restores_with_its_mode(workspace, state_dir, cli):
    """Killed after the unlink: the mode logged with the removal comes from the intent, kept on disk."""
    note = private_note(workspace)
    assert cli("read", "memory/secret.md").returncode == 0
    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", "rm", "memory/secret.md", "--no-index"],
                          cwd=workspace, capture_output=True, text=True, timeout=120,
                          env=env_for(workspace, state_dir, **fault("rm:unlinked=kill")))
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert cli("doctor", "--fix").returncode == 0
    assert not note.exists()
    assert cli("restore", "memory/secret.md", "--last").returncode == 0
    assert mode_of(note) == 0o600


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_as_root_a_users_note_removed_and_restored_is_the_users_again(workspace, state_dir):
    """Root running the CLI on a user's workspace: the note came back root's."""
    note = write(workspace / "memory" / "heron.md", SECRET)
    os.chown(note, 65534, 65534)
    os.chmod(note, 0o640)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")
    memory.remove("memory/heron.md", update_index=False)
    memory.restore("memory/heron.md", last=True, update_index=False)
    back = note.stat()
    assert (back.st_uid, back.st_gid, back.st_mode & 0o7777) == (65534, 65534, 0o640)


def test_a_version_logged_before_the_mode_was_kept_restores_with_a_new_files_mode(workspace, state_dir):
    note = private_note(workspace)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/secret.md")
    memory.remove("memory/secret.md", update_index=False)
    store = HistoryStore.for_settings(memory.settings)
    with store.lock() as conn:  # as schema 6 logged every row: no mode, no owner
        conn.execute("UPDATE versions SET mode = NULL, uid = NULL, gid = NULL")

    memory.restore("memory/secret.md", last=True, update_index=False)
    assert note.read_text() == SECRET
    assert (mode_of(note), note.stat().st_uid) == (new_file_mode(), os.geteuid())


def test_an_import_of_a_note_removed_here_brings_it_back_with_its_mode(workspace, state_dir, tmp_path):
    """The archive keeps no modes (they are a machine's): a note it brings back where this history
    removed one gets the mode logged here, not the default."""
    note = private_note(workspace)
    memory = memory_for(workspace, state_dir)
    archive = tmp_path / "memory.tar.gz"
    memory.export_archive(str(archive))
    memory.read("memory/secret.md")
    memory.remove("memory/secret.md", update_index=False)

    assert memory.import_archive(str(archive)).files == ("memory/secret.md",)
    assert note.read_text() == SECRET and mode_of(note) == 0o600


def test_a_rollback_to_before_a_move_brings_the_note_back_under_its_old_name_with_its_mode(cli, workspace, state_dir):
    """Its entries went with it to the new name, each logged under the name it had then."""
    note = private_note(workspace)
    assert cli("read", "memory/secret.md").returncode == 0
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    assert cli("mv", "memory/secret.md", "memory/vault.md", "--no-index").returncode == 0
    assert cli("read", "memory/vault.md").returncode == 0

    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--json")
    assert done.returncode == 0, done.stderr
    assert {(f["path"], f["fate"]) for f in done.json()["files"]} == {("memory/secret.md", "bring-back"),
                                                                     ("memory/vault.md", "archive")}
    assert note.read_text() == SECRET and mode_of(note) == 0o600


def _first_version(cli, path: str) -> str:
    return cli("history", path, "--json").json()["versions"][-1]["version"]


def _after_a_moment() -> str:
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    return iso_moment(moment + 2e-6)


def test_a_private_note_brought_back_over_a_new_file_at_its_name_is_private_again(cli, workspace, state_dir):
    """A file made at a removed (or moved away) note's name is another file: its 0644 was kept and the
    private note's text went into it, readable by every user of the machine (restore --last after rm,
    and a rollback to before a move, each with a new note written at the name meanwhile)."""
    note = private_note(workspace)
    assert cli("read", "memory/secret.md").returncode == 0
    assert cli("rm", "memory/secret.md", "--no-index").returncode == 0
    assert cli("write", "memory/secret.md", "--append", "a new public note", "--no-index").returncode == 0
    assert mode_of(note) == new_file_mode()
    assert cli("restore", "memory/secret.md", "--last", "--no-index").returncode == 0
    assert note.read_text() == SECRET and mode_of(note) == 0o600

    moment = _after_a_moment()
    assert cli("mv", "memory/secret.md", "memory/vault/secret.md", "--no-index").returncode == 0
    assert cli("write", "memory/secret.md", "--append", "another public note", "--no-index").returncode == 0
    assert cli("rollback", "--to", moment, "--force", "--no-index").returncode == 0
    assert note.read_text() == SECRET and mode_of(note) == 0o600


def test_a_private_text_swapped_by_moves_and_rolled_back_stays_private(cli, workspace):
    """A rollback of a swap (a -> t, b -> a, t -> b) puts each text back over the other's file: the
    private text over the 0644 file comes back 0600, and the shared one gets no more than its own
    file gave (here the private file's 0600: narrowed, never widened)."""
    private = private_note(workspace, "a.md")
    shared = write(workspace / "memory" / "b.md", "# Shared\n")
    assert cli("read", "memory/a.md").returncode == 0 and cli("read", "memory/b.md").returncode == 0
    moment = _after_a_moment()
    for src, dst in (("a", "t"), ("b", "a"), ("t", "b")):
        assert cli("mv", f"memory/{src}.md", f"memory/{dst}.md", "--no-index").returncode == 0
    assert cli("rollback", "--to", moment, "--force", "--no-index").returncode == 0
    assert private.read_text() == SECRET and mode_of(private) == 0o600
    assert shared.read_text() == "# Shared\n" and mode_of(shared) & ~new_file_mode() == 0


@pytest.mark.parametrize("how", ["rm", "mv"])
def test_a_note_made_private_since_an_earlier_version_stays_private_when_that_version_comes_back(cli, workspace, how):
    """chmod 600 after a version logged at 0644, then rm and restore --last (or mv): restoring the
    earlier version set the note 0644, readable by every user (the version's own bits replaced the
    file's, f3c73ff), and every later write kept 0644."""
    note = write(workspace / "memory" / "a.md", "draft\n")
    assert cli("read", "memory/a.md").returncode == 0
    first = _first_version(cli, "memory/a.md")
    os.chmod(note, 0o600)
    assert cli("write", "memory/a.md", "--append", "salary: 1234", "--no-index").returncode == 0
    if how == "rm":
        assert cli("rm", "memory/a.md", "--no-index").returncode == 0
        assert cli("restore", "memory/a.md", "--last", "--no-index").returncode == 0
    else:
        assert cli("mv", "memory/a.md", "memory/b.md", "--no-index").returncode == 0
        note = workspace / "memory" / "b.md"
    assert mode_of(note) == 0o600
    assert cli("restore", f"memory/{note.name}", first, "--no-index").returncode == 0
    assert note.read_text() == "draft\n" and mode_of(note) == 0o600


def test_a_restore_of_the_notes_own_file_keeps_the_mode_the_user_gave_it(cli, workspace):
    """A restore narrowed every note it restored to its version's group and other bits: a note the
    user had opened to its group (chmod 0644 after a version seen at 0600) became 0600 again."""
    note = write(workspace / "MEMORY.md", "v1\n")
    os.chmod(note, 0o600)
    assert cli("read", "MEMORY.md").returncode == 0
    first = _first_version(cli, "MEMORY.md")
    os.chmod(note, 0o644)
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "v2").returncode == 0
    assert cli("restore", "MEMORY.md", first).returncode == 0
    assert note.read_text() == "v1\n" and note.stat().st_mode & 0o777 == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_removed_note_comes_back_with_its_last_owner_and_owner_bits_whatever_version(cli, workspace):
    """The version's own sighting gave the owner and the owner's bits: a note last seen nobody's came
    back root's, and one whose first version was 0444 came back read-only, its next write refused."""
    note = write(workspace / "MEMORY.md", "old\n")
    os.chmod(note, 0o444)
    assert cli("read", "MEMORY.md").returncode == 0
    first = _first_version(cli, "MEMORY.md")
    os.chmod(note, 0o644)
    os.chown(note, 65534, 65534)
    assert cli("read", "MEMORY.md").returncode == 0
    assert cli("write", "MEMORY.md", "--append", "newer").returncode == 0
    assert cli("rm", "MEMORY.md", "--force").returncode == 0
    assert cli("restore", "MEMORY.md", first).returncode == 0
    st = note.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (65534, 0o644), (st.st_uid, oct(st.st_mode))
