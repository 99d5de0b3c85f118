"""The guarded write never unlinks what another program still writes to, never replaces a file that
appears under a name it renames to, and gives a new file the user's umask (docs/guarantees.md)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import env_for, run_paused, settings_for, write
from openclaw_memory.errors import WriteBlocked
from openclaw_memory.fsutil import move
from openclaw_memory.fsutil.safeopen import Folder
from openclaw_memory.history import placing
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.memory.local import LocalMemory

DAY = "memory/2026-12-05.md"

# Holds the file open for appending (as a logger does) and writes one line for each line on stdin.
APPENDER = textwrap.dedent("""
    import sys
    with open(sys.argv[1], "a") as f:
        for i, _ in enumerate(iter(sys.stdin.readline, "")):
            f.write("appender line %d\\n" % i)
            f.flush()
            print("wrote", i, flush=True)
""")


def _append_one(proc: subprocess.Popen) -> None:
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert proc.stdout.readline().startswith("wrote")


@pytest.mark.parametrize("action", ["append", "replace"])
def test_a_file_held_open_for_writing_is_not_displaced_and_loses_no_line(workspace, state_dir, action):
    path = write(workspace / DAY, "# day\n")
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read(DAY)
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        _append_one(proc)
        memory.read(DAY)
        with pytest.raises(WriteBlocked) as blocked:
            if action == "append":
                memory.write(DAY, append="agent note", update_index=False)
            else:
                memory.write(DAY, content="# replaced\n", update_index=False)
        assert "held open for writing by another program" in str(blocked.value)
        for _ in range(3):  # what it writes after the attempt lands in the file
            _append_one(proc)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert path.read_text() == "# day\n" + "".join(f"appender line {i}\n" for i in range(4))
    assert not [n for n in os.listdir(path.parent) if n.startswith(".")], "a swap file was left behind"
    memory.read(DAY)  # closed now: the write goes through
    memory.write(DAY, append="agent note", update_index=False)
    assert path.read_text().endswith("appender line 3\nagent note\n")


def test_a_file_held_open_only_for_reading_is_written(workspace, state_dir):
    path = write(workspace / DAY, "# day\n")
    memory = LocalMemory(settings_for(workspace, state_dir))
    memory.read(DAY)
    with open(path) as reader:
        memory.write(DAY, append="agent note", update_index=False)
        assert reader.read() == "# day\n"
    assert path.read_text() == "# day\nagent note\n"


@pytest.mark.parametrize("umask", [0o077, 0o022])
def test_a_new_memory_file_gets_the_users_umask_and_an_existing_one_keeps_its_mode(workspace, state_dir, umask):
    env = env_for(workspace, state_dir)
    run = [sys.executable, "-m", "openclaw_memory", "write"]
    made = subprocess.run([*run, DAY, "--append", "first"], env=env, umask=umask, capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert os.stat(workspace / DAY).st_mode & 0o777 == 0o666 & ~umask
    assert os.stat(workspace / "memory").st_mode & 0o777 == 0o777 & ~umask
    os.chmod(workspace / DAY, 0o640)
    again = subprocess.run([*run, DAY, "--append", "second"], env=env, umask=umask, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert os.stat(workspace / DAY).st_mode & 0o777 == 0o640


def test_a_new_memory_file_gets_the_umask_of_a_program_importing_the_package(workspace, state_dir):
    old = os.umask(0o027)
    try:
        LocalMemory(settings_for(workspace, state_dir)).write(DAY, append="first", update_index=False)
    finally:
        os.umask(old)
    assert os.stat(workspace / DAY).st_mode & 0o777 == 0o640


def test_without_hard_links_a_file_saved_at_the_destination_meanwhile_is_never_replaced(tmp_path, monkeypatch):
    """A file system without hard links: the rename must refuse a destination that appears after any
    check (here, an editor's save landing right after the existence check a plain rename needs)."""
    write(tmp_path / "new", "ours\n")
    real_stat = os.stat

    def no_link(*_a, **_k):
        raise OSError(errno.EPERM, "no hard links here")

    def save():
        write(tmp_path / "target", "an editor's save\n")

    def stat_then_save(path, *args, **kwargs):  # after the existence check, where there is one
        try:
            return real_stat(path, *args, **kwargs)
        except FileNotFoundError:
            if path == "target":
                save()
            raise

    def save_then_rename(*args):  # just before the rename itself
        save()
        return real_noreplace(*args)

    real_noreplace = move.rename_noreplace
    monkeypatch.setattr(os, "link", no_link)
    monkeypatch.setattr(os, "stat", stat_then_save)
    monkeypatch.setattr(move, "rename_noreplace", save_then_rename)
    with Folder.under(tmp_path) as folder, pytest.raises(FileExistsError):
        move.link_noreplace(folder.fd, "new", folder.fd, "target")
    assert (tmp_path / "target").read_text() == "an editor's save\n"
    assert (tmp_path / "new").read_text() == "ours\n"


def test_the_swap_name_never_replaces_a_swap_file_a_killed_write_left(tmp_path):
    write(tmp_path / ".MEMORY.md.0123abcd.tmp", "new version\n")
    write(tmp_path / ".MEMORY.md.0123abcd.swp", "displaced version, not recorded yet\n")
    with Folder.under(tmp_path) as folder:
        swap = placing.swap_name(folder, ".MEMORY.md.0123abcd.tmp")
    assert swap != ".MEMORY.md.0123abcd.swp" and swap.startswith(".MEMORY.md.") and swap.endswith(".swp")
    assert (tmp_path / swap).read_text() == "new version\n"
    assert (tmp_path / ".MEMORY.md.0123abcd.swp").read_text() == "displaced version, not recorded yet\n"
    assert sorted(os.listdir(tmp_path)) == sorted([swap, ".MEMORY.md.0123abcd.swp"])


def test_a_swap_file_a_killed_write_left_is_swept_only_once_no_program_holds_it_open(workspace, state_dir):
    path = write(workspace / DAY, "# day\n")
    left = write(workspace / "memory/.2026-12-05.md.0123abcd.swp", "# day as a killed write displaced it\n")
    memory = LocalMemory(settings_for(workspace, state_dir))
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, str(left)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        _append_one(proc)
        memory.read(DAY)
        memory.write(DAY, append="agent note", update_index=False)  # its sweep meets the open swap file
        for _ in range(3):
            _append_one(proc)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert left.read_text() == "# day as a killed write displaced it\n" + "".join(
        f"appender line {i}\n" for i in range(4))
    memory.read(DAY)
    memory.write(DAY, append="another note", update_index=False)  # closed now: recorded, then swept
    assert not left.exists()
    assert path.read_text() == "# day\nagent note\nanother note\n"
    store = HistoryStore.for_settings(settings_for(workspace, state_dir))
    kept = [store.objects.read_bytes(e.version) for e in store.entries(str(path))]
    assert b"# day as a killed write displaced it\n" + b"".join(b"appender line %d\n" % i for i in range(4)) in kept


def test_a_writer_opening_the_note_while_a_restore_swaps_it_blocks_the_restore_saying_so(workspace, state_dir, cli):
    """A restore paused after its checks while a program appends to the note (its open breaks the
    restore's lease): the restore sees the writer, or the version it did not check, and gives the note
    back, exit 3. Letting go of a lease being broken was refused (EAGAIN, Linux 6.18), and that took
    the place of the answer: exit 1, "cannot write in the workspace (...): Resource temporarily
    unavailable". The append lands; nothing is lost."""
    path = write(workspace / DAY, "v1\n")
    if not _leases_granted(path):
        pytest.skip("this file system grants no leases: a restore cannot see a writer's open")
    assert cli("read", DAY).returncode == 0
    assert cli("write", DAY, "--append", "v2", "--no-index").returncode == 0
    first = cli("history", DAY, "--json").json()["versions"][-1]["version"]

    def meanwhile():  # `echo appended >> note` in another process, done before the restore goes on
        subprocess.run([sys.executable, "-c", f"open({str(path)!r}, 'a').write('appended\\n')"], check=True, timeout=120)

    code, _out, err = run_paused(workspace, state_dir, ("restore", DAY, first, "--no-index"), "write:checked", meanwhile)
    assert code == 3, err
    assert ("memory/2026-12-05.md is held open for writing by another program" in err
            or "memory/2026-12-05.md changed while it was being restored" in err), err
    assert path.read_text() == "v1\nv2\nappended\n"


def _leases_granted(path) -> bool:
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        return True
    except (OSError, AttributeError):
        return False
    finally:
        os.close(fd)
