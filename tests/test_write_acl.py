"""A note replaced by a write (``write --append``/``--stdin``, ``restore``, a move's copy across file
systems) keeps its POSIX ACL and its other extended attributes: the temp file swapped in got the old
``st_mode`` bits alone, and with an ACL the group bits are the ACL's mask, so ``user:nobody:r--,
group::---, mask::r--`` became ``group::r--`` (the file's group could read a private note, the named
user could not). A new note gets what the shell's ``printf x > f`` gets in its folder: a folder's
default ACL applied (the write chmodded the umask's mode over it, ``other::r--`` where the shell gave
``other::---``). Skipped where ``setfacl`` is missing or the file system keeps no ACLs."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import fault, write

ACL = "system.posix_acl_access"
DIARY = "private diary\n"


def setfacl(*args: str) -> None:
    subprocess.run(["setfacl", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def acls(tmp_path: Path) -> None:
    """Skip unless ``setfacl`` is here and the test's file system keeps ACLs and ``user.*`` xattrs."""
    if shutil.which("setfacl") is None:
        pytest.skip("setfacl is not installed (the acl package)")
    probe = tmp_path / "acl-probe"
    probe.write_text("x")
    done = subprocess.run(["setfacl", "-m", "u:nobody:r", str(probe)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"no POSIX ACLs on this file system: {done.stderr.strip()}")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except OSError as exc:
        pytest.skip(f"no user.* extended attributes on this file system: {exc}")
    probe.unlink()


def xattrs(path: Path) -> dict[str, bytes]:
    return {name: os.getxattr(path, name) for name in sorted(os.listxattr(path))}


def private_diary(workspace: Path) -> Path:
    """A 0600 note that one other user (nobody) may read by an ACL, with a ``user.*`` attribute."""
    note = write(workspace / "memory" / "diary.md", DIARY)
    os.chmod(note, 0o600)
    setfacl("-m", "u:nobody:r", str(note))
    os.setxattr(note, "user.origin", b"journal app")
    assert note.stat().st_mode & 0o777 == 0o640  # the mask shows as the group bits
    return note


def assert_kept(note: Path, before: dict[str, bytes], mode: int) -> None:
    assert xattrs(note) == before
    assert note.stat().st_mode & 0o7777 == mode


def test_an_append_keeps_the_notes_acl_and_attributes(acls, cli, workspace):
    note = private_diary(workspace)
    before, mode = xattrs(note), note.stat().st_mode & 0o7777
    assert cli("read", "memory/diary.md").returncode == 0
    done = cli("write", "memory/diary.md", "--append", "agent line")
    assert done.returncode == 0, done.stderr
    assert note.read_text().startswith(DIARY) and "agent line" in note.read_text()
    assert_kept(note, before, mode)
    assert ACL in before


def test_a_replacing_write_and_a_restore_keep_the_notes_acl(acls, cli, workspace):
    note = private_diary(workspace)
    before, mode = xattrs(note), note.stat().st_mode & 0o7777
    assert cli("read", "memory/diary.md").returncode == 0
    done = cli("write", "memory/diary.md", "--stdin", input="all new\n")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "all new\n"
    assert_kept(note, before, mode)

    listed = cli("history", "memory/diary.md", "--json").json()
    first = next(v for v in listed["versions"] if v["size"] == len(DIARY))["version"]
    done = cli("restore", "memory/diary.md", first)
    assert done.returncode == 0, done.stderr
    assert note.read_text() == DIARY
    assert_kept(note, before, mode)


def test_a_move_across_file_systems_keeps_the_notes_acl(acls, cli, workspace):
    note = private_diary(workspace)
    before, mode = xattrs(note), note.stat().st_mode & 0o7777
    assert cli("read", "memory/diary.md").returncode == 0
    done = cli("mv", "memory/diary.md", "memory/kept/diary.md", "--no-index", env=fault("move:rename=fail"))
    assert done.returncode == 0, done.stderr
    moved = workspace / "memory" / "kept" / "diary.md"
    assert not note.exists() and moved.read_text() == DIARY
    assert_kept(moved, before, mode)


def test_an_acl_that_cannot_be_copied_refuses_the_write(acls, cli, workspace, monkeypatch):
    """Rather than a note readable by its group: nothing is replaced, no temp file is left."""
    note = private_diary(workspace)
    before, mode = xattrs(note), note.stat().st_mode & 0o7777
    assert cli("read", "memory/diary.md").returncode == 0
    setxattr = os.setxattr

    def refused(target, name, value, *args, **kw):
        if name == ACL:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM))
        return setxattr(target, name, value, *args, **kw)

    monkeypatch.setattr(os, "setxattr", refused)
    done = cli("write", "memory/diary.md", "--append", "agent line")
    monkeypatch.undo()
    assert done.returncode == 1 and "ACL" in done.stderr and "nothing was written" in done.stderr, done.stderr
    assert note.read_text() == DIARY
    assert_kept(note, before, mode)
    assert sorted(p.name for p in note.parent.iterdir()) == ["diary.md"]


def test_where_no_attribute_can_be_set_the_group_gets_no_more_than_the_acl_gave_it(acls, cli, workspace,
                                                                                    monkeypatch):
    """A file system that keeps no attributes (ENOTSUP) is written as before, but the group bits are
    the ACL's ``group::`` entry, not its mask: the named user loses access, the group gains none."""
    note = private_diary(workspace)
    assert cli("read", "memory/diary.md").returncode == 0

    def unsupported(*args, **kw):
        raise OSError(errno.ENOTSUP, os.strerror(errno.ENOTSUP))

    monkeypatch.setattr(os, "setxattr", unsupported)
    done = cli("write", "memory/diary.md", "--append", "agent line")
    monkeypatch.undo()
    assert done.returncode == 0, done.stderr
    assert "agent line" in note.read_text()
    assert note.stat().st_mode & 0o7777 == 0o600 and xattrs(note) == {}


def test_a_note_without_an_acl_in_a_folder_with_a_default_acl_gets_none(acls, cli, workspace):
    """The temp file is created in the folder, which gives it the default ACL: the note it replaces
    had none, and the mode's group bits, set over it, let the named user read."""
    folder = workspace / "memory"
    folder.mkdir()
    setfacl("-m", "d:u:nobody:rwx", str(folder))
    note = write(folder / "plain.md", DIARY)
    setfacl("-b", str(note))
    os.chmod(note, 0o640)
    assert xattrs(note) == {}
    assert cli("read", "memory/plain.md").returncode == 0
    done = cli("write", "memory/plain.md", "--append", "agent line")
    assert done.returncode == 0, done.stderr
    assert xattrs(note) == {} and note.stat().st_mode & 0o7777 == 0o640


def test_an_append_to_a_sparse_note_keeps_its_holes(cli, workspace):
    note = write(workspace / "memory" / "sparse.md", "head\n")
    size = 64 << 20
    os.truncate(note, size)
    if note.stat().st_blocks * 512 >= size:
        pytest.skip("this file system makes no sparse files")
    assert cli("read", "memory/sparse.md").returncode == 0
    done = cli("write", "memory/sparse.md", "--append", "tail")
    assert done.returncode == 0, done.stderr
    st = note.stat()
    assert st.st_size == size + len("\ntail\n") or st.st_size == size + len("tail\n"), st.st_size
    assert st.st_blocks * 512 < 4 << 20, st.st_blocks  # the 64 MiB of zeros are still holes
    with open(note, "rb") as f:
        assert f.read(5) == b"head\n"
        f.seek(size - 1)
        assert f.read(1) == b"\0" and f.read().strip(b"\n") == b"tail"


def shell_made(folder: Path) -> tuple[int, dict[str, bytes]]:
    """The mode and attributes the shell's ``printf x > f`` gets in ``folder`` (this process's umask)."""
    made = folder / "shell-made"
    subprocess.run(["sh", "-c", 'printf x > "$1"', "sh", str(made)], check=True)
    got = made.stat().st_mode & 0o7777, xattrs(made)
    made.unlink()
    return got


def test_a_new_note_gets_its_folders_default_acl_as_the_shells_file_does(acls, cli, workspace):
    folder = workspace / "memory" / "shared"
    folder.mkdir(parents=True)
    setfacl("-m", "d:u::rwx,d:g::---,d:o::---,d:u:nobody:r-x", str(folder))
    mode, attrs = shell_made(folder)
    assert mode & 0o007 == 0 and ACL in attrs  # the control: the default ACL, not the umask, made it
    done = cli("write", "memory/shared/new.md", "--stdin", input="hello\n")
    assert done.returncode == 0, done.stderr
    note = folder / "new.md"
    assert note.read_text() == "hello\n"
    assert (note.stat().st_mode & 0o7777, xattrs(note)) == (mode, attrs)


def test_a_new_note_without_a_default_acl_gets_the_umasks_mode(acls, cli, workspace):
    folder = workspace / "memory"
    folder.mkdir(parents=True)
    mode, attrs = shell_made(folder)
    done = cli("write", "memory/new.md", "--stdin", input="hello\n")
    assert done.returncode == 0, done.stderr
    note = folder / "new.md"
    assert (note.stat().st_mode & 0o7777, xattrs(note)) == (mode, attrs) == (mode, {})


def test_an_import_over_a_note_keeps_its_acl_narrowed_to_the_archives_bits(acls, cli, workspace, tmp_path):
    note = private_diary(workspace)
    archive = tmp_path / "notes.tar.gz"
    assert cli("read", "memory/diary.md").returncode == 0
    assert cli("export", str(archive)).returncode == 0, "export"
    before, mode = xattrs(note), note.stat().st_mode & 0o7777
    assert cli("write", "memory/diary.md", "--append", "since").returncode == 0
    done = cli("import", str(archive), "--force")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == DIARY
    assert_kept(note, before, mode)


def test_an_agents_memory_write_over_mcp_keeps_the_notes_acl(acls, workspace, state_dir):
    from test_mcp import payload, run_session

    note = private_diary(workspace)
    before, mode = xattrs(note), note.stat().st_mode & 0o7777

    async def script(session):
        payload(await session.call_tool("memory_get", {"path": "memory/diary.md"}))
        return payload(await session.call_tool("memory_write", {"path": "memory/diary.md", "append": "agent line"}))

    run_session(workspace, state_dir, script)
    assert "agent line" in note.read_text()
    assert_kept(note, before, mode)


def shared_note(workspace: Path) -> Path:
    """The reviewer's note: private (group::---), readable by one named user (nobody) alone, its mask
    r-- (the mode's group bits: 0640)."""
    note = write(workspace / "memory" / "p.md", "secret\n")
    os.chmod(note, 0o600)
    setfacl("-m", "u:nobody:r,g::-,m::r", str(note))
    assert note.stat().st_mode & 0o777 == 0o640
    return note


def assert_no_wider(note: Path) -> None:
    """Brought back without its ACL (the history keeps modes), the note gives its group nothing:
    the mask was r--, and the bits alone turned it into group::r-- (the named user lost access)."""
    assert note.read_text().startswith("secret")
    assert note.stat().st_mode & 0o777 == 0o600, oct(note.stat().st_mode)


def test_a_removed_note_with_an_acl_comes_back_readable_by_no_one_it_was_not(acls, cli, workspace):
    note = shared_note(workspace)
    assert cli("read", "memory/p.md").returncode == 0
    assert cli("rm", "memory/p.md").returncode == 0
    done = cli("restore", "memory/p.md", "--last")
    assert done.returncode == 0, done.stderr
    assert_no_wider(note)


def test_an_older_version_of_a_removed_note_with_an_acl_comes_back_no_wider(acls, cli, workspace):
    note = shared_note(workspace)
    assert cli("read", "memory/p.md").returncode == 0
    assert cli("write", "memory/p.md", "--append", "later").returncode == 0
    assert note.stat().st_mode & 0o777 == 0o640 and ACL in xattrs(note)  # the ACL kept by the write
    assert cli("rm", "memory/p.md").returncode == 0
    listed = cli("history", "memory/p.md", "--json").json()
    first = next(v for v in listed["versions"] if v["size"] == len("secret\n"))["version"]
    done = cli("restore", "memory/p.md", first)
    assert done.returncode == 0, done.stderr
    assert_no_wider(note)


def test_a_rollback_brings_back_a_removed_note_with_an_acl_no_wider(acls, cli, workspace):
    note = shared_note(workspace)
    assert cli("read", "memory/p.md").returncode == 0
    seen = cli("history", "memory/p.md", "--json").json()["versions"][0]["time"]
    assert cli("rm", "memory/p.md").returncode == 0
    done = cli("rollback", "--to", seen, "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert_no_wider(note)


def test_a_note_with_an_acl_replaced_by_a_move_comes_back_no_wider(acls, cli, workspace):
    """mv --force removes the note it replaces as rm does, and logs its mode as rm does: narrowed.
    A rollback to before the move brings it back no wider than its ACL gave."""
    note = shared_note(workspace)
    other = write(workspace / "memory" / "q.md", "other\n")
    assert cli("read", "memory/p.md").returncode == 0
    assert cli("read", "memory/q.md").returncode == 0
    seen = cli("history", "memory/q.md", "--json").json()["versions"][0]["time"]
    done = cli("mv", "memory/q.md", "memory/p.md", "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert not other.exists() and note.read_text() == "other\n"
    done = cli("rollback", "--to", seen, "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert other.read_text() == "other\n"
    assert_no_wider(note)


def test_a_rollback_undoing_a_move_brings_back_a_note_with_an_acl_no_wider(acls, cli, workspace):
    """A move, and mv --force's removal of the note it replaced, are logged with the narrowed mode too:
    a rollback to before them brings each note back no wider than its ACL gave."""
    note = shared_note(workspace)
    other = write(workspace / "memory" / "q.md", "other\n")
    assert cli("read", "memory/p.md").returncode == 0
    assert cli("read", "memory/q.md").returncode == 0
    seen = cli("history", "memory/p.md", "--json").json()["versions"][0]["time"]
    done = cli("mv", "memory/p.md", "memory/r.md", "--no-index")
    assert done.returncode == 0, done.stderr
    done = cli("mv", "memory/q.md", "memory/r.md", "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert not note.exists() and not other.exists()
    done = cli("rollback", "--to", seen, "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert_no_wider(note)
    assert not (workspace / "memory" / "r.md").exists()
