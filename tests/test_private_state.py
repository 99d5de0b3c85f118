"""The data dir is this user's alone, checked with a real other user (uid 65534, ``nobody``).

Everything runs under a ``mkdtemp`` folder made world-traversable (0755), as a home folder or
``/tmp`` is: pytest's own temporary folders are 0700, where another user reaches nothing whatever
the product does. Each check has a positive control: the other user does read (and lock) the
workspace's MEMORY.md beside it, so a check that finds nothing reachable can fail.
"""

from __future__ import annotations

import fcntl
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NOBODY, as_nobody, env_for, settings_for, wait_for_line, write

WAIT = 120  # seconds for a process to start or stop: the machine may be loaded
SECRET = "The vault code is 4-8-15-16."

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user (uid 65534) needs root")


def run(base: Path, *args: str, umask: int = 0o022, input: str | None = None) -> subprocess.CompletedProcess:
    """``openclaw-memory ARGS`` in a new process started with ``umask``."""
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], cwd=base / "ws", env=env_for(base / "ws", base / "state"),
                          input=input, capture_output=True, text=True, umask=umask, timeout=WAIT)


def ok(done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert done.returncode == 0, done.stderr
    return done


def data_dir(base: Path) -> Path:
    return settings_for(base / "ws", base / "state").data_dir


def reach(paths: list[str]) -> dict[str, list[str]]:
    """What the calling user can do to each path: stat it, open it to read, to write, flock it."""
    can: dict[str, list[str]] = {}
    for path in paths:
        done = []
        try:
            os.lstat(path)
            done.append("stat")
        except OSError:
            pass
        for what, flags in (("read", os.O_RDONLY), ("write", os.O_WRONLY)):
            try:
                fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOFOLLOW)
            except OSError:
                continue
            done.append(what)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                done.append("lock")
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                pass
            finally:
                os.close(fd)
        can[path] = done
    return can


def tree(top: Path) -> dict[str, int]:
    """Every entry under ``top`` (itself included) with its permission bits."""
    found = {str(top): stat.S_IMODE(os.lstat(top).st_mode)}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found[path] = stat.S_IMODE(os.lstat(path).st_mode)
    return found


def assert_private(base: Path) -> None:
    """Every folder of ``openclaw-memory/`` 0700, every other entry 0600, and nobody can open, write
    or lock any of them, or even see what is below ``openclaw-memory/``; nobody can read and lock
    MEMORY.md beside it (the control)."""
    product = base / "state" / "openclaw-memory"
    modes = tree(product)
    assert len(modes) > 40, sorted(modes)  # the database, shards, locks: a real data dir
    wrong = {p: f"{m:04o}" for p, m in modes.items() if m != (0o700 if os.path.isdir(p) and not os.path.islink(p) else 0o600)}
    assert wrong == {}
    locks = [p for p in modes if p.endswith(".lock") or p.endswith("/service/lock")]
    assert len(locks) >= 4, locks  # the write lock, the index's, the doctor's, the running service's
    control = str(base / "ws" / "MEMORY.md")
    can = as_nobody(reach, [control, *modes])
    assert isinstance(can, dict)
    assert {"stat", "read", "lock"} <= set(can.pop(control))
    assert [p for p, done in can.items() if set(done) - {"stat"}] == []
    assert [p for p, done in can.items() if done and p != str(product)] == []


@pytest.mark.parametrize(("umask", "state_made"), [(0o000, True), (0o022, False)], ids=["umask-000-new-state-dir", "umask-022"])
def test_nothing_in_the_data_dir_is_reachable_by_another_user(base, umask, state_made):
    """After index, read, write, doctor --fix, search, snapshot, mv, rm, links, log, rollback, and with serve running (a write through it,
    live-synced): every folder 0700, every file 0600, the other user opens and locks nothing. A
    state dir the product makes is 0700 too; one that was there keeps its mode."""
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    write(base / "ws" / "memory.md", "# legacy twin\n\nmerged by doctor --fix\n")
    if not state_made:
        (base / "state").mkdir(0o755)
    ok(run(base, "index", umask=umask))
    ok(run(base, "read", "MEMORY.md", umask=umask))
    ok(run(base, "write", "MEMORY.md", "--append", "- another line", umask=umask))
    ok(run(base, "doctor", "--fix", "--yes", umask=umask))
    ok(run(base, "search", "vault code", umask=umask))
    # What mv, rm, links, log, snapshots and a rollback keep in the data dir (intents, link table, pinned bytes).
    write(base / "ws" / "memory" / "note.md", "# Note\n\nsee [[other]]\n")
    ok(run(base, "watchdog", "snapshot", "before", umask=umask))
    ok(run(base, "read", "memory/note.md", umask=umask))
    ok(run(base, "mv", "memory/note.md", "memory/moved.md", umask=umask))
    ok(run(base, "read", "memory/moved.md", umask=umask))
    ok(run(base, "rm", "memory/moved.md", umask=umask))
    ok(run(base, "links", "--broken", umask=umask))
    ok(run(base, "log", umask=umask))
    ok(run(base, "rollback", "--to", "before", "--force", umask=umask))
    service = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "serve"], cwd=base / "ws",
                               env=env_for(base / "ws", base / "state"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, umask=umask)
    try:
        wait_for_line(service.stderr, "watching ", WAIT)
        ok(run(base, "write", "memory/live/new.md", "--stdin", input="# Live\n\nwritten through the service\n", umask=umask))
        ok(run(base, "search", "written through the service", umask=umask))
        assert service.poll() is None
        assert_private(base)
        assert stat.S_IMODE(os.stat(base / "state").st_mode) == (0o700 if state_made else 0o755)
        # The workspace is the user's: a folder a write made there has the user's umask, not the service's 0077.
        assert stat.S_IMODE(os.stat(base / "ws" / "memory" / "live").st_mode) == 0o755 & ~umask
    finally:
        service.send_signal(signal.SIGTERM)
        service.wait(WAIT)


def test_a_data_dir_left_open_is_closed(base):
    """Folders 0755 and files 0644 (a process under umask 022, its lock files included):
    the next command makes them 0700 and 0600, and the other user reaches nothing any more."""
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    ok(run(base, "index"))
    ok(run(base, "read", "MEMORY.md"))
    ok(run(base, "write", "MEMORY.md", "--append", "- more"))
    ok(run(base, "doctor", "--fix", "--yes"))
    for path in tree(base / "state"):
        os.chmod(path, 0o755 if os.path.isdir(path) else 0o644)
    assert "read" in as_nobody(reach, [str(data_dir(base) / "state.db")])[str(data_dir(base) / "state.db")]  # open now
    ok(run(base, "history", "MEMORY.md"))
    ok(run(base, "serve", "--stop"))  # takes the service's lock: a lock file of each kind is there
    assert_private(base)


REFUSALS = {
    "data-dir-0777": (lambda d: os.chmod(d, 0o777), "data dir", "{data}", "`chmod -R go-rwx {data}`"),
    "data-dir-group-writable": (lambda d: (os.chown(d, 0, NOBODY), os.chmod(d, 0o770)), "data dir", "{data}", "`chmod -R go-rwx {data}`"),
    "data-dir-of-another-user": (lambda d: os.chown(d, NOBODY, NOBODY), "data dir", "{data}", "`chown -R 0 {data}`"),
    "workspaces-0777": (lambda d: os.chmod(d.parent, 0o777), "folder", "{data_parent}", "`chmod -R go-rwx {data_parent}`"),
    "state-dir-0777": (lambda d: os.chmod(d.parents[2], 0o777), "state dir", "{state}", "`chmod go-w {state}`"),
    "state-dir-of-another-user": (lambda d: os.chown(d.parents[2], NOBODY, NOBODY), "state dir", "{state}", "`chown 0 {state}`"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_data_dir_another_user_could_have_changed_is_refused(base, case):
    """Writable by others, or another user's: write, search and serve each refuse it in one line
    that names the folder and the command that mends it, and change nothing (no tightening either)."""
    spoil, role, where, fix = REFUSALS[case]
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    ok(run(base, "index"))
    data = data_dir(base)
    spoil(data)
    names = {"data": str(data), "data_parent": str(data.parent), "state": str(base / "state")}
    before = tree(base / "state")
    for args in (("write", "memory/new.md", "--stdin"), ("search", "vault"), ("serve", "--no-watch")):
        done = run(base, *args, input="# New\n")
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"error: refusing the {role} {where.format(**names)}: ")
        assert fix.format(**names) in lines[0]
    assert not (base / "ws" / "memory").exists()
    assert tree(base / "state") == before


@pytest.mark.parametrize("case", ["sticky-state-dir", "own-group-writable"])
def test_a_folder_only_the_user_can_change_is_used(base, case):
    """The controls of the refusals: a state dir like /tmp (1777: others may add, never rename
    ours), and a data dir writable by the user's own private group (root's here), are used; the
    data dir is tightened."""
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    ok(run(base, "index"))
    data = data_dir(base)
    if case == "sticky-state-dir":
        os.chmod(base / "state", 0o1777)
    else:
        os.chmod(data, 0o770)
    ok(run(base, "write", "memory/new.md", "--stdin", input="# New\n"))
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700


def test_a_service_started_in_the_background_keeps_the_users_umask_for_the_workspace(base, monkeypatch):
    """``mcp --serve`` starts the service from a process whose own umask is 077: the service gets the
    user's, so a folder it makes in the workspace is as the user's umask makes it."""
    from conftest import FAKE_MODEL
    from openclaw_memory.fsutil.private import private_umask
    from openclaw_memory.memory.launch import ensure_service, stop_service
    from openclaw_memory.service_files import read_info

    for name, value in FAKE_MODEL.items():  # the service inherits this process's environment
        monkeypatch.setenv(name, value)
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    settings = settings_for(base / "ws", base / "state")
    old = os.umask(0o022)
    try:
        with private_umask():
            ensure_service(settings)
    finally:
        os.umask(old)
    try:
        assert (read_info(settings) or {}).get("pid")
        done = ok(run(base, "write", "memory/bg/new.md", "--stdin", input="# New\n"))
        assert "warning" not in done.stderr  # answered by the service, not in this process
        assert stat.S_IMODE(os.stat(base / "ws" / "memory" / "bg").st_mode) == 0o755
    finally:
        stop_service(settings)


def plant_link(link: str, target: str) -> str:
    os.symlink(target, link)
    return os.readlink(link)


def test_a_data_dir_planted_as_a_link_by_another_user_is_refused(base):
    """In a state dir others may add to (1777, as /tmp), another user makes ``openclaw-memory`` a
    link of theirs, to a folder of the user's: write, search and serve refuse it in one line naming
    the link and the fix, and nothing is made through it (followed, the data would go where the
    link's owner chooses, and they could change it under a running service)."""
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    (base / "state").mkdir()
    os.chmod(base / "state", 0o1777)
    victim = base / "vict"
    victim.mkdir()  # the user's own folder: followed, it passed every check of the owner and mode
    link = base / "state" / "openclaw-memory"
    assert as_nobody(plant_link, str(link), str(victim)) == str(victim)
    assert os.lstat(link).st_uid == NOBODY
    for args in (("write", "memory/new.md", "--stdin"), ("search", "vault"), ("serve", "--no-watch"), ("read", "MEMORY.md")):
        done = run(base, *args, input="# New\n")
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"error: refusing the folder {link}: it is a symbolic link (to {victim}, made by uid {NOBODY})")
        assert f"`rm {link}`" in lines[0]
    assert os.listdir(victim) == []
    assert not (base / "ws" / "memory").exists()
    os.unlink(link)  # the control: the same commands with the link gone make a data dir of the user's
    ok(run(base, "write", "memory/new.md", "--stdin", input="# New\n"))
    assert not os.path.islink(link) and os.lstat(link).st_uid == 0 and os.listdir(victim) == []


def test_a_link_planted_after_the_check_is_refused_when_the_folder_is_made(base):
    """``openclaw-memory`` missing when the command starts (nothing to check), then planted as a link
    by another user before the first write makes it: the folder's making refuses it, and makes
    nothing through it."""
    from openclaw_memory.errors import StateDirUnsafe
    from openclaw_memory.fsutil.private import check_data_dir, make_dirs

    state, victim = base / "state", base / "vict"
    state.mkdir()
    os.chmod(state, 0o1777)
    victim.mkdir()
    data = state / "openclaw-memory" / "workspaces" / "ws-0123456789ab"
    check_data_dir(state, data)
    as_nobody(plant_link, str(state / "openclaw-memory"), str(victim))
    with pytest.raises(StateDirUnsafe, match="it is a symbolic link"):
        make_dirs(data / "service")
    assert os.listdir(victim) == []
    os.unlink(state / "openclaw-memory")  # the control: with the link gone, the folders are made
    make_dirs(data / "service")
    assert stat.S_IMODE(os.lstat(state / "openclaw-memory").st_mode) == 0o700


OTHER = 12345  # a uid no account has: the mount namespace below gives it root's group as its primary one


def test_a_folder_writable_by_a_group_that_is_another_users_primary_one_is_refused(base):
    """Root's group has no other member listed in /etc/group, but a user whose primary group it is
    (only in /etc/passwd) may write in a 0770 data dir of root:root: the data dir is refused, not
    taken as the user's own private group. /etc/passwd with that user is bound in a mount namespace
    of the command alone."""
    write(base / "ws" / "MEMORY.md", f"# Memory\n\n{SECRET}\n")
    ok(run(base, "index"))
    data = data_dir(base)
    for folder in (data.parents[2], data.parents[1], data.parent):
        os.chmod(folder, 0o750)  # the group may reach the data dir, not change what leads to it
    os.chmod(data, 0o770)
    os.chown(data, 0, 0)
    passwd = base / "passwd"
    passwd.write_text(Path("/etc/passwd").read_text() + f"ocm-other:x:{OTHER}:0::/nonexistent:/usr/sbin/nologin\n")
    os.chmod(passwd, 0o644)
    probe = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/passwd && getent passwd ocm-other', str(passwd)],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace here to add a user in: {probe.stderr.strip()}")

    def create_in(folder: str) -> bool:  # as uid OTHER, group 0: the threat is real
        os.setgroups([])
        os.setgid(0)
        os.setuid(OTHER)
        os.close(os.open(os.path.join(folder, "planted"), os.O_CREAT | os.O_WRONLY, 0o600))
        return True

    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if create_in(str(data)) else 1
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert os.lstat(data / "planted").st_uid == OTHER
    os.unlink(data / "planted")
    before = tree(base / "state")
    done = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind "$0" /etc/passwd && exec "$@"', str(passwd),
                           sys.executable, "-m", "openclaw_memory", "write", "memory/new.md", "--stdin"],
                          cwd=base / "ws", env=env_for(base / "ws", base / "state"), input="# New\n",
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: refusing the data dir {data}: other users may write in it (mode 0770)")
    assert tree(base / "state") == before
    assert not (base / "ws" / "memory").exists()
    ok(run(base, "write", "memory/new.md", "--stdin", input="# New\n"))  # the control: without that user, root's own group
    assert stat.S_IMODE(os.stat(data).st_mode) == 0o700
