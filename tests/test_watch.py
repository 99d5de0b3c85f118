"""``watch`` with real processes: a running watch, edits from other processes, real searches.

Every test starts ``openclaw-memory watch --json`` in a subprocess and checks what other
processes see (``search --no-sync``, so the search itself never re-indexes: whatever it finds,
the watch put there). Waits are on the watch's own output lines or on what a search finds, with
generous deadlines; nothing asserts a duration. The watch embeds with the hash backend: what is
tested is that it follows the files, not what the model makes of them.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import env_for, fault, settings_for, tmpfs, wait_for, write
from openclaw_memory.database import Database
from openclaw_memory.fsutil.hashing import hash_file
from openclaw_memory.fsutil.lock import FileLock
from openclaw_memory.history.store import HistoryStore

WAIT = 120  # a loaded machine: generous, never a measure


class Watch:
    """A running ``openclaw-memory watch --json``; stdout lines parsed, stderr kept."""

    def __init__(self, workspace: Path, state_dir: Path, prefix: list[str] | None = None, args: tuple[str, ...] = (),
                 **env: str):
        cmd = (prefix or []) + [sys.executable, "-m", "openclaw_memory", "watch", "--json", *args]
        self.proc = subprocess.Popen(
            cmd, cwd=workspace, env=env_for(workspace, state_dir, **env), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        self.changes: list[dict] = []
        self.started: dict | None = None
        self.stopped: dict | None = None
        self.stderr: list[str] = []
        self._threads = [
            threading.Thread(target=self._read_out, daemon=True),
            threading.Thread(target=self._read_err, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _read_out(self):
        for line in self.proc.stdout:  # JSON lines: the changes, between a started and a stopped object
            data = json.loads(line)
            if "path" in data:
                self.changes.append(data)
            elif "stoppedBy" in data:
                self.stopped = data
            else:
                self.started = data

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def said(self, prefix: str) -> bool:
        return any(line.startswith(prefix) for line in self.stderr)

    def wait_said(self, prefix: str) -> None:
        wait_for(lambda: self.said(prefix) or self.proc.poll() is not None, WAIT)
        assert self.proc.poll() is None, "".join(self.stderr)

    def wait_started(self):
        wait_for(lambda: self.started is not None or self.proc.poll() is not None, WAIT)
        assert self.proc.poll() is None, "".join(self.stderr)
        assert {"pid", "socket", "liveSync", "mode", "folders", "files"} <= set(self.started)

    def change_for(self, path: str, action: str) -> dict | None:
        return next((c for c in self.changes if c["path"] == path and c["action"] == action), None)

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=WAIT)
        for t in self._threads:
            t.join(10)
        assert rc != 0 or (self.stopped is not None and {"batches", "changes", "seconds"} <= set(self.stopped))
        return rc


@pytest.fixture
def watch(workspace, state_dir):
    started: list[Watch] = []

    def start(prefix: list[str] | None = None, wait: bool = True, args: tuple[str, ...] = (), **env: str) -> Watch:
        w = Watch(workspace, state_dir, prefix, args, **env)
        started.append(w)
        if wait:
            w.wait_started()
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()


def results(cli, query: str, mode: str = "text") -> list[str]:
    r = cli("search", query, "--mode", mode, "--no-sync", "--json", "--min-score", "0")
    assert r.returncode == 0, r.stderr  # a search arriving during a batch waits for it, then runs
    return [hit["path"] for hit in r.json()["results"]]


def found(cli, query: str, path: str, mode: str = "text") -> bool:
    return path in results(cli, query, mode)


def top(cli, query: str, mode: str) -> str | None:
    return next(iter(results(cli, query, mode)), None)


def seed(workspace: Path) -> None:
    write(workspace / "MEMORY.md", "# Memory\n\nThe user prefers tea over coffee.\n")
    write(workspace / "memory" / "projects.md", "# Projects\n\nThe garden shed needs a new roof before winter.\n")


@contextlib.contextmanager
def watching(settings, **options):
    """A watch running in a thread of this process, started (its backstop sync an hour away: only
    events count); yields the changes it syncs, in order."""
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.watch.watcher import Watcher

    changes: list = []
    started = threading.Event()
    with MemoryIndex(settings) as index:
        watcher = Watcher(settings, index=index, index_session=lambda _i: contextlib.nullcontext(),
                          on_change=changes.append, on_start=lambda _s: started.set(), backstop_s=3600, **options)
        runner = threading.Thread(target=watcher.run)
        runner.start()
        try:
            assert started.wait(WAIT)
            yield changes
        finally:
            watcher.stop()
            runner.join(WAIT)


def synced(changes: list, path: str, action: str | None = None) -> None:
    """Wait until the watch has synced ``path`` (as ``action``: added, updated, removed)."""
    wait_for(lambda: any(c.path == path and action in (None, c.action) for c in changes), WAIT)


@pytest.mark.slow  # an index in this process, a watch, then the service's shard_idle to wait out: about 8 s
def test_edit_from_another_process_becomes_searchable(workspace, state_dir, cli, watch):
    write(state_dir / "openclaw-memory.toml", "[service]\nshard_idle = 1\n")  # not the 10 s default: a shorter wait below
    seed(workspace)
    assert cli("index").returncode == 0
    w = watch()
    note = workspace / "memory" / "trips" / "2026-lisbon.md"
    write(note, "# Lisbon\n\nWe rode the quixotic funicular up to the miradouro at dusk.\n")

    wait_for(lambda: found(cli, "quixotic funicular", "memory/trips/2026-lisbon.md"), WAIT)
    # The watch embedded it too: a vector search with the note's own words ranks it first.
    assert top(cli, "quixotic funicular miradouro dusk", mode="vector") == "memory/trips/2026-lisbon.md"
    change = wait_for(lambda: w.change_for("memory/trips/2026-lisbon.md", "added"), WAIT)
    assert change["chunksEmbedded"] >= 1 and change["chunks"] >= 1 and change["ms"] >= 0

    # The version the watch saw is in the history as an outside edit (read without a new sighting).
    store = HistoryStore(settings_for(workspace, state_dir).data_dir)
    entries = store.entries(str(note))
    assert entries and entries[-1].version == hash_file(str(note))
    assert {e.origin for e in entries} == {"external-edit"}

    # Between batches the watch holds no index or history lock (only its own presence lock); it
    # keeps shards open for other processes' searches and closes them after [service] shard_idle
    # (1 s in this test's config) unused, so a tool that opens them directly gets them.
    assert_unlocked(state_dir, timeout=30, but="watch")
    # Other commands work while the watch runs; a second watch for the agent is refused.
    status = cli("status", "--json")
    assert status.returncode == 0 and status.json()["indexed"], status.stderr
    second = cli("watch", "--json")
    assert second.returncode == 2 and "already running" in second.json()["error"]
    assert len(second.stdout.splitlines()) == 1  # JSON lines, as the stream a running watch prints
    assert w.stop() == 0


def test_atomic_rename_save_is_picked_up(workspace, state_dir, cli, watch):
    seed(workspace)
    w = watch()  # the watch's own first sync builds the index
    wait_for(lambda: found(cli, "shed roof", "memory/projects.md"), WAIT)
    target = workspace / "memory" / "projects.md"
    tmp = workspace / "memory" / ".projects.md.tmp-save"
    tmp.write_text("# Projects\n\nThe marmalade workshop opens on Saturday.\n", encoding="utf-8")
    os.replace(tmp, target)

    wait_for(lambda: found(cli, "marmalade workshop", "memory/projects.md"), WAIT)
    wait_for(lambda: not found(cli, "shed roof", "memory/projects.md"), WAIT)
    change = wait_for(lambda: w.change_for("memory/projects.md", "updated"), WAIT)
    assert change["chunksRemoved"] >= 1
    assert w.stop() == 0


def test_a_note_of_an_extra_folder_beside_the_workspace_is_watched_and_its_versions_kept(workspace, state_dir, cli, watch):
    """Its name is `../notes/trip.md`: the versions' record joined that to the workspace and opened
    `ws/../notes/trip.md` from the workspace's descriptor, a ValueError that ended the watch (and
    `serve`) at its first sync with a traceback."""
    seed(workspace)
    notes = workspace.parent / "notes"
    write(notes / "trip.md", "# Trip\n\nThe ferry to Hydra leaves at nine.\n")
    extra = {"OPENCLAW_MEMORY_EXTRA_PATHS": str(notes)}
    w = watch(**extra)
    wait_for(lambda: "../notes/trip.md" in results(lambda *a: cli(*a, env=extra), "ferry Hydra"), WAIT)
    write(notes / "trip.md", "# Trip\n\nThe ferry to Hydra leaves at ten.\n")
    wait_for(lambda: w.change_for("../notes/trip.md", "updated"), WAIT)
    history = cli("history", "../notes/trip.md", "--json", env=extra)
    assert history.returncode == 0, history.stderr
    assert len(history.json()["versions"]) == 2
    assert w.stop() == 0


def test_a_file_name_that_is_not_utf8_does_not_stop_the_watch(workspace, state_dir, cli, watch):
    seed(workspace)
    w = watch()
    bad = os.path.join(os.fsencode(workspace / "memory"), b"notes\xff.md")
    for n in range(3):  # watchfiles gives up on its whole watch at each event for this name
        with open(bad, "ab") as f:
            f.write(b"line %d\n" % n)
        wait_for(lambda: any("cannot follow" in line for line in w.stderr) or w.proc.poll() is not None, WAIT)
    write(workspace / "memory" / "projects.md", "# Projects\n\nThe pomegranate tree needs pruning.\n")
    wait_for(lambda: found(cli, "pomegranate pruning", "memory/projects.md"), WAIT)
    told = [line for line in w.stderr if "not UTF-8" in line and "watcher" in line]
    assert len(told) == 1, w.stderr  # said once, not at every restart
    # The search above may have indexed the edit itself (it syncs first) before the watch's sync,
    # which names the file it cannot index, ran: wait for that one.
    wait_for(lambda: any("not indexed" in line for line in w.stderr), WAIT)
    assert len([line for line in w.stderr if "not indexed" in line]) == 1, w.stderr  # nor at every sync
    assert not any("a folder watcher stopped" in line for line in w.stderr), w.stderr
    assert w.stop() == 0


def test_vim_and_jetbrains_saves_are_picked_up(workspace, state_dir, cli, watch):
    seed(workspace)
    w = watch()
    mem = workspace / "memory"
    # vim (backupcopy=no): probe the folder with "4913", rename the file to a backup, write anew, drop the backup.
    probe = mem / "4913"
    probe.write_bytes(b"")
    probe.unlink()
    os.rename(mem / "projects.md", mem / "projects.md~")
    write(mem / "projects.md", "# Projects\n\nThe xylophone repair is booked for March.\n")
    (mem / "projects.md~").unlink()
    # JetBrains safe write: new text in a temp file, old file moved aside, temp renamed in place.
    root = workspace / "MEMORY.md"
    write(workspace / "MEMORY.md___jb_tmp___", "# Memory\n\nThe user now prefers yerba mate.\n")
    os.rename(root, workspace / "MEMORY.md___jb_old___")
    os.rename(workspace / "MEMORY.md___jb_tmp___", root)
    (workspace / "MEMORY.md___jb_old___").unlink()

    wait_for(lambda: found(cli, "xylophone repair", "memory/projects.md"), WAIT)
    wait_for(lambda: found(cli, "yerba mate", "MEMORY.md"), WAIT)
    assert not found(cli, "tea over coffee", "MEMORY.md")
    # Editor temp names are never indexed nor reported.
    assert not [c for c in w.changes if "4913" in c["path"] or "___jb_" in c["path"] or c["path"].endswith("~")]
    assert w.stop() == 0


def test_deleting_a_file_removes_its_chunks(workspace, state_dir, cli, watch):
    seed(workspace)
    write(workspace / "memory" / "old.md", "# Old\n\nThe obsolete pager number was 5550199.\n")
    w = watch()
    wait_for(lambda: found(cli, "obsolete pager", "memory/old.md"), WAIT)
    (workspace / "memory" / "old.md").unlink()

    change = wait_for(lambda: w.change_for("memory/old.md", "removed"), WAIT)
    assert change["chunksRemoved"] >= 1 and change["version"] is None
    assert not found(cli, "obsolete pager", "memory/old.md")
    assert w.stop() == 0


def test_memory_folder_created_later_is_watched(workspace, state_dir, cli, watch):
    write(workspace / "MEMORY.md", "# Memory\n\nOnly the root file exists at first.\n")
    w = watch()
    write(workspace / "memory" / "2026-02-03.md", "# Notes\n\nThe porcupine sanctuary visit went well.\n")
    wait_for(lambda: found(cli, "porcupine sanctuary", "memory/2026-02-03.md"), WAIT)
    # A later file deeper in the new folder arrives through the re-armed recursive watch.
    write(workspace / "memory" / "deep" / "er" / "n.md", "# Deep\n\nA quetzal was seen near the river.\n")
    wait_for(lambda: found(cli, "quetzal", "memory/deep/er/n.md"), WAIT)
    assert w.stop() == 0


def lock_files(state_dir: Path) -> list[Path]:
    return sorted(state_dir.rglob("*.lock"))


def assert_unlocked(state_dir: Path, timeout: float = 0, but: str | None = None) -> None:
    for path in lock_files(state_dir):
        if but is not None and path.parent.name == but:
            continue
        lock = FileLock(str(path), timeout=timeout, what=path.name)
        lock.acquire()  # raises LockTimeout if anyone still holds it
        lock.release()


@pytest.mark.slow  # two watches and two indexes of 150 notes: about 9 s
def test_sigterm_leaves_no_lock_behind(workspace, state_dir, cli, watch):
    seed(workspace)
    w = watch()
    write(workspace / "memory" / "x.md", "# X\n\nThe walrus choir rehearses on Tuesdays.\n")
    wait_for(lambda: w.change_for("memory/x.md", "added"), WAIT)
    assert w.stop() == 0
    assert lock_files(state_dir)
    assert_unlocked(state_dir)
    r = cli("index", "--json")
    assert r.returncode == 0 and "waiting" not in r.stderr, r.stderr

    # SIGTERM while the first sync is busy embedding many files: it stops, and still leaves no lock.
    for i in range(150):
        write(workspace / "memory" / "bulk" / f"n{i:03}.md", f"# Note {i}\n\n" + f"Sentence {i} about topic {i % 7}.\n" * 30)
    # The index's test hook holds the first sync right after its first write to the shard.
    busy = watch(wait=False, **fault("index:batch:1=pause"))
    busy.wait_said("test-hook: paused at index:batch:1")
    assert Database(settings_for(workspace, state_dir).data_dir).rows("SELECT collection FROM index_dirty"), \
        "the sync was not under way"
    assert busy.started is None
    assert busy.stop() == 0
    assert_unlocked(state_dir)
    r = cli("index", "--json")
    assert r.returncode == 0 and "waiting" not in r.stderr, r.stderr
    assert r.json()["filesScanned"] >= 152


def test_falls_back_to_polling_when_inotify_watches_run_out(workspace, state_dir, cli, watch):
    unshare = shutil.which("unshare")
    probe = subprocess.run(
        [unshare or "unshare", "-Ur", "sh", "-c", "echo 2 > /proc/sys/user/max_inotify_watches"], capture_output=True
    ) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("needs `unshare -Ur` to lower the inotify watch limit in a user namespace")
    seed(workspace)
    for sub in ("a", "b", "c", "d"):
        write(workspace / "memory" / sub / "n.md", f"# {sub}\n\nFolder {sub}.\n")
    # A user namespace of our own with room for 2 inotify watches: the real limit, really reached.
    prefix = [unshare, "-Ur", "sh", "-c", 'echo 2 > /proc/sys/user/max_inotify_watches && exec "$@"', "sh"]
    w = watch(prefix)
    assert any("falling back to polling" in line for line in w.stderr), "".join(w.stderr)
    assert w.started["mode"] == "polling"
    write(workspace / "memory" / "c" / "n.md", "# c\n\nThe narwhal tusk measurement arrived.\n")
    wait_for(lambda: found(cli, "narwhal tusk", "memory/c/n.md"), WAIT)
    assert w.stop() == 0


def test_the_feed_tells_an_atomic_save_from_a_write_in_place(tmp_path):
    """An atomic save (a temporary renamed over the note) or a new file is synced at once; a write
    in place or a removal waits the quiet time: the feed marks which paths are which."""
    import queue

    from openclaw_memory.watch.feeds import Feed

    folder = tmp_path / "memory"
    folder.mkdir()
    note = folder / "note.md"
    note.write_text("# Note\n\nfirst\n", encoding="utf-8")
    out: queue.Queue = queue.Queue()
    feed = Feed([str(folder)], recursive=True, polling=False, out=out).start()
    try:
        out.get(timeout=WAIT)  # armed

        def next_with(path: Path):
            while True:
                message = out.get(timeout=WAIT)
                assert message.error is None, message.error
                if str(path) in message.paths:
                    return message

        tmp = folder / ".note.md.save"
        tmp.write_text("# Note\n\nsaved whole\n", encoding="utf-8")
        os.replace(tmp, note)
        saved = next_with(note)
        assert not saved.unsettled, saved  # the note renamed into place, its temporary gone: all settled

        fresh = folder / "fresh.md"
        fresh.write_text("# Fresh\n", encoding="utf-8")
        assert not next_with(fresh).unsettled

        with open(note, "a", encoding="utf-8") as fh:  # an editor writing the file itself
            fh.write("appended\n")
        assert str(note) in next_with(note).unsettled

        fresh.unlink()
        assert str(fresh) in next_with(fresh).unsettled
    finally:
        feed.stop()


def test_memory_folder_removed_and_made_again_is_watched_again_even_with_its_old_inode(workspace, state_dir):
    """ext4 gives a folder made right after one was removed the same inode number, so the folder's
    identity alone does not show that its watch is gone. The backstop sync is an hour away here:
    only the re-arm can find the new note."""
    write(workspace / "MEMORY.md", "# Memory\n")
    (workspace / "memory").mkdir()
    rearmed = threading.Event()
    with watching(settings_for(workspace, state_dir),
                  on_notice=lambda text: rearmed.set() if "re-arming" in text else None) as changes:
        (workspace / "memory").rmdir()
        (workspace / "memory").mkdir()
        assert rearmed.wait(WAIT)
        write(workspace / "memory" / "2026-02-04.md", "# Notes\n\nThe pangolin keeper called back.\n")
        synced(changes, "memory/2026-02-04.md")


def search_in(workspace: Path, state_dir: Path, query: str, prefix: tuple[str, ...] = ()) -> list[str]:
    """The paths a keyword search (no sync of its own) finds, from a new process (run under ``prefix``)."""
    r = subprocess.run([*prefix, sys.executable, "-m", "openclaw_memory", "search", query, "--mode", "text", "--no-sync",
                        "--json", "--min-score", "0"], env=env_for(workspace, state_dir), cwd=workspace,
                       capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr
    return [hit["path"] for hit in json.loads(r.stdout)["results"]]


@pytest.mark.parametrize("how", ["renamed", "removed"])
def test_a_workspace_renamed_or_removed_under_the_watch_stops_it_in_one_line(workspace, state_dir, watch, how):
    """Its sync met the workspace missing and the process ended on an unworded OSError: `error: No
    such file or directory (/…/ws)`. Now it says what happened, once, and stops cleanly (status 1,
    as a service whose socket was removed: a supervisor restarting failed services tries again)."""
    seed(workspace)
    w = watch()
    if how == "renamed":
        moved = workspace.with_name("ws-renamed")
        workspace.rename(moved)
        write(moved / "memory" / "later.md", "# Later\n\nThe heron came back.\n")  # the watch on the folder follows it
    else:
        shutil.rmtree(workspace)
    assert w.proc.wait(timeout=WAIT) == 1, "".join(w.stderr)
    assert w.stop() == 1
    said = [line for line in w.stderr if "is gone" in line]
    assert len(said) == 1 and str(workspace) in said[0], w.stderr
    assert not any("Traceback" in line or line.startswith("error:") for line in w.stderr), w.stderr
    assert w.stopped is not None and w.stopped["stoppedBy"] == "its workspace is gone"
    assert not list(state_dir.rglob("sock")) and not list(state_dir.rglob("info.json"))  # a clean stop
    assert_unlocked(state_dir)


def test_a_workspace_unreadable_for_a_while_does_not_stop_the_watch(tmp_path):
    """A workspace made unreadable (chmod 000) under a watch run by its owner: the sync's scan fails
    with EACCES, which ended the process (`error: Permission denied (/…/ws)`). Now that failure is
    said once and retried; made readable again, the edit made meanwhile is found."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the watch as another user (uid 65534), for whom chmod 000 bites")
    nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    probe = subprocess.run([*nobody, sys.executable, "-c", "import openclaw_memory.cli.main, watchfiles"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("uid 65534 cannot import the package from this checkout (a folder only its owner enters)")
    root = Path(tempfile.mkdtemp())  # not under pytest's 0700 tmp_path: uid 65534 must reach it
    try:
        root.chmod(0o755)
        workspace, state_dir = root / "ws", root / "state"
        seed(workspace)
        state_dir.mkdir()
        subprocess.run(["chown", "-R", "65534:65534", str(root)], check=True)
        w = Watch(workspace, state_dir, list(nobody))
        try:
            w.wait_started()
            workspace.chmod(0)
            write(workspace / "memory" / "projects.md", "# Projects\n\nThe quince tree was grafted.\n")  # as root
            w.wait_said("warning: index not updated")  # and still running (wait_said checks)
            assert "Permission denied" in next(line for line in w.stderr if "index not updated" in line)
            workspace.chmod(0o755)
            wait_for(lambda: "memory/projects.md" in search_in(workspace, state_dir, "quince grafted", nobody), WAIT)
            assert w.stop() == 0
            assert not any("Traceback" in line for line in w.stderr), w.stderr
        finally:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def fill(path: Path, step: int) -> None:
    """Write ``path`` ``step`` bytes at a time until its disk is full."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * step)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.mark.slow  # a 300 MiB tmpfs, filled: about 10 s
def test_versions_are_recorded_while_the_index_cannot_be_updated_and_the_failure_is_said_once(workspace, tmp_path):
    """The state dir's disk fills up under a running watch: the index needs room it does not have
    (its preflight margin), the history needs a few KiB. Every save the watch saw meanwhile was
    left out of the history (only the version found after the disk was freed was recorded), and
    the index's failure was printed at every retry, once a second. Now each version seen is
    recorded, the failure is said once, and its end too; with no room even for the history, that is
    said and the watch goes on."""
    with tmpfs(tmp_path / "small", "300m") as state_dir:
        seed(workspace)
        w = Watch(workspace, state_dir)
        try:
            w.wait_started()
            filler = state_dir / "filler"
            fill(filler, 1 << 20)
            os.truncate(filler, filler.stat().st_size - (16 << 20))  # room for the history, not for the index
            note = workspace / "memory" / "projects.md"
            store = HistoryStore(settings_for(workspace, state_dir).data_dir)
            for text in ("The quince jam set overnight.", "The medlar jelly did not set."):
                write(note, f"# Projects\n\n{text}\n")
                version = hash_file(str(note))
                wait_for(lambda v=version: v in {e.version for e in store.entries(str(note))}, WAIT)
            assert len([line for line in w.stderr if "index not updated" in line]) == 1, w.stderr
            assert w.proc.poll() is None
            # No room left even for the history: said, and the watch goes on (recording there ended it).
            fill(state_dir / "last-bytes", 512)
            write(note, f"# Projects\n\nThe rowan syrup, {os.urandom(1 << 17).hex()}\n")
            w.wait_said("warning: versions not recorded in the history this time")
            filler.unlink()
            wait_for(lambda: "memory/projects.md" in search_in(workspace, state_dir, "rowan syrup"), WAIT)
            wait_for(lambda: w.said("warning: the index is up to date again"), WAIT)
            assert hash_file(str(note)) in {e.version for e in store.entries(str(note))}  # the recovery recorded it
            assert w.stop() == 0
        finally:
            if w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()


# A Watcher with its backstop an hour away, run in this child as uid 65534 (for whom chmod 000
# bites): every change and notice printed as it comes.
_WATCHER_CHILD = """
import contextlib, json, sys
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.settings import Overrides, resolve_settings
from openclaw_memory.watch.watcher import Watcher

settings = resolve_settings(Overrides(workspace=sys.argv[1], state_dir=sys.argv[2]),
                            environ={"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "hash"})
say = lambda **kw: print(json.dumps(kw), flush=True)
with MemoryIndex(settings) as index:
    Watcher(settings, index=index, index_session=lambda _i: contextlib.nullcontext(), backstop_s=3600,
            on_change=lambda c: say(change=c.path), on_notice=lambda n: say(notice=n),
            on_start=lambda _s: say(started=True)).run()
"""


def test_a_folder_unreadable_when_the_watch_started_is_watched_once_it_can_be_read(tmp_path):
    """The watchers skip a folder they cannot read; made readable later, it stayed unwatched, so
    each edit in it waited for the 30 s backstop sync, for as long as the watch ran. Now the sync
    that finds the folder readable (its chmod is an event of its parent's watch) re-arms them."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the watch as another user (uid 65534), for whom chmod 000 bites")
    nobody = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
    probe = subprocess.run([*nobody, sys.executable, "-c", "import openclaw_memory.watch.watcher, watchfiles"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("uid 65534 cannot import the package from this checkout (a folder only its owner enters)")
    root = Path(tempfile.mkdtemp())  # not under pytest's 0700 tmp_path: uid 65534 must reach it
    proc = None
    try:
        root.chmod(0o755)
        workspace, state_dir = root / "ws", root / "state"
        seed(workspace)
        sub = workspace / "memory" / "sub"
        write(sub / "s.md", "# Sub\n\nThe first line.\n")
        state_dir.mkdir()
        subprocess.run(["chown", "-R", "65534:65534", str(root)], check=True)
        sub.chmod(0)
        proc = subprocess.Popen([*nobody, sys.executable, "-c", _WATCHER_CHILD, str(workspace), str(state_dir)],
                                cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[dict] = []
        threading.Thread(target=lambda: lines.extend(json.loads(line) for line in proc.stdout), daemon=True).start()

        def seen(key: str, value) -> bool:
            assert proc.poll() is None, proc.stderr.read()
            return any(line.get(key) == value for line in lines)

        wait_for(lambda: seen("started", True), WAIT)
        assert any("unreadable folder" in line.get("notice", "") for line in lines), lines  # the control
        sub.chmod(0o755)
        wait_for(lambda: seen("change", "memory/sub/s.md"), WAIT)  # the chmod's own sync finds it
        write(sub / "s.md", "# Sub\n\nThe persimmon ripened.\n")  # in place: an event of the folder's own watch
        before = sum(1 for line in lines if line.get("change") == "memory/sub/s.md")
        wait_for(lambda: sum(1 for line in lines if line.get("change") == "memory/sub/s.md") > before, WAIT)
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)


def test_a_note_added_under_polling_does_not_re_arm_the_watchers(workspace, state_dir, watch):
    """Polling reports the folder a note is added to as modified (its mtime moved), and the watch
    took that for the folder itself replaced: it re-armed its watchers after every new or removed
    note (a new walk of the whole tree, and `the watched folders changed` on stderr each time).
    Only a watched folder added or removed is a new folder."""
    seed(workspace)
    w = watch(args=("--poll",))
    for name in ("a.md", "b.md"):  # the second change line comes after the first sync's re-arm, if any
        write(workspace / "memory" / name, f"# {name}\n\nThe otter counted {name}.\n")
        wait_for(lambda n=name: w.change_for(f"memory/{n}", "added"), WAIT)
    (workspace / "memory" / "a.md").unlink()
    wait_for(lambda: w.change_for("memory/a.md", "removed"), WAIT)
    write(workspace / "memory" / "c.md", "# c\n\nThe otter left.\n")
    wait_for(lambda: w.change_for("memory/c.md", "added"), WAIT)
    assert not any("re-arming" in line for line in w.stderr), w.stderr
    # memory/ removed and made again is still followed (polling follows paths, not inodes).
    shutil.rmtree(workspace / "memory")
    write(workspace / "memory" / "d.md", "# d\n\nThe otter came back.\n")
    wait_for(lambda: w.change_for("memory/d.md", "added"), WAIT)
    write(workspace / "memory" / "e.md", "# e\n\nAnd stayed.\n")
    wait_for(lambda: w.change_for("memory/e.md", "added"), WAIT)
    assert w.stop() == 0


def test_under_polling_a_second_save_within_the_same_second_is_synced(workspace, state_dir):
    """watchfiles' poller compares modification times to the second: a save made in the same second
    as the one it last saw of a note is no event, and waited for the backstop sync (30 s; an hour
    here). Found as edits in a folder just moved in, missed one time in two. Now a sync that had
    events under polling is followed by one more once that second is past."""
    import time

    seed(workspace)
    with watching(settings_for(workspace, state_dir), polling=True) as changes:
        same_second = 0
        for k in range(20):
            wait_for(lambda: time.time() % 1 < 0.1, 2, 0.005)  # early in a second: room for both saves
            note = write(workspace / "memory" / f"n{k}.md", f"# N\n\nThe lark sang {k}.\n")
            synced(changes, f"memory/n{k}.md")
            first = os.stat(note).st_mtime_ns
            with open(note, "a", encoding="utf-8") as fh:  # in place: the poller's only sign is the time
                fh.write("And flew off.\n")
            if os.stat(note).st_mtime_ns // 10**9 == first // 10**9:
                same_second += 1
            synced(changes, f"memory/n{k}.md", "updated")
            if same_second >= 2:
                break
        assert same_second >= 2, "no second save landed in its first one's second: nothing was tried"


def test_an_extra_path_missing_or_removed_is_watched_from_its_parent_until_it_is_back(workspace, state_dir):
    """An extra folder or file that did not exist when the watch armed (or was removed later) had no
    watch at all: nothing watched its parent, so the folder made again or the file saved again waited
    for the backstop sync (30 s; an hour here). Now its nearest existing parent is watched for its name."""
    seed(workspace)
    later, notes, single = (workspace.parent / name for name in ("later", "notes", "single.md"))
    write(notes / "a.md", "# A\n\nThe heron stood still.\n")
    write(single, "# Single\n\nThe wren sang.\n")
    with watching(settings_for(workspace, state_dir, extra=(str(later / "deep"), str(notes), str(single)))) as changes:
        write(later / "deep" / "l.md", "# L\n\nThe lark came late.\n")  # two missing levels
        synced(changes, "../later/deep/l.md", "added")
        shutil.rmtree(notes)
        synced(changes, "../notes/a.md", "removed")
        write(notes / "b.md", "# B\n\nThe heron came back.\n")
        synced(changes, "../notes/b.md", "added")
        single.unlink()
        synced(changes, "../single.md", "removed")
        write(single, "# Single\n\nThe wren sang again.\n")
        synced(changes, "../single.md", "added")


@pytest.mark.skipif(os.geteuid() == 0, reason="root looks into any folder: nothing is out of its reach")
def test_an_extra_path_out_of_reach_is_not_watched_through_a_folder_never_named(workspace, state_dir, tmp_path):
    """An extra path there but out of reach (in a folder this user may not enter) was taken for
    missing and watched through its nearest folder above: a folder the user never named (and a
    watch there that may not list it: 'unreadable folder ...: not watched')."""
    from openclaw_memory.watch.targets import watch_targets

    locked = tmp_path / "locked"
    write(locked / "notes" / "a.md", "# A\n")
    locked.chmod(0o000)
    try:
        targets = watch_targets(settings_for(workspace, state_dir, extra=(str(locked / "notes"),)))
        assert str(tmp_path) not in targets.paths() and str(locked) not in targets.paths(), targets
        # A path that is missing (not out of reach) is still waited for from the folder above it.
        targets = watch_targets(settings_for(workspace, state_dir, extra=(str(tmp_path / "later" / "notes"),)))
        assert str(tmp_path) in targets.paths(), targets
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("name", ["2025", "drafts~", "old.tmp"])
def test_a_folder_of_notes_moved_in_or_out_under_a_name_editors_use_for_temporaries_is_synced(workspace, state_dir, tmp_path, name):
    """Events on names like vim's `4913` probe, a backup `x~` or a `.tmp` file are editors' noise and
    were dropped whatever they named: a year folder (`memory/2025`) of notes moved in or out is one
    event on that name, and its notes waited for the backstop sync (30 s; an hour here)."""
    seed(workspace)
    outside = tmp_path / "outside" / name
    write(outside / "jan.md", "# Jan\n\nThe kestrel hovered.\n")
    with watching(settings_for(workspace, state_dir)) as changes:
        os.rename(outside, workspace / "memory" / name)
        synced(changes, f"memory/{name}/jan.md", "added")
        os.rename(workspace / "memory" / name, outside)
        synced(changes, f"memory/{name}/jan.md", "removed")


def test_watch_prints_a_name_with_an_escape_sequence_or_a_newline_escaped_on_one_line(workspace, state_dir, cli, tmp_path):
    # The plain lines (not --json) are the ones a terminal shows: a name's OSC sequence retitled it,
    # and a newline in a name split "memory/a" from "b.md: added".
    seed(workspace)
    assert cli("index").returncode == 0
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("w") as stdout, err.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "watch"], cwd=workspace,
                                env=env_for(workspace, state_dir), stdout=stdout, stderr=stderr)
    try:
        wait_for(lambda: "watching" in err.read_text() or proc.poll() is not None, WAIT)
        write(workspace / "memory" / "t\x1b]0;pwned\x07.md", "y\n")
        write(workspace / "memory" / "a\nb.md", "x\n")
        wait_for(lambda: out.read_text().count(": added") == 2 or proc.poll() is not None, WAIT)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(WAIT)
    lines = out.read_text().splitlines()
    assert sorted(line.split(":")[0] for line in lines) == ["memory/a\\x0ab.md", "memory/t\\x1b]0;pwned\\x07.md"], lines
    assert not {"\x1b", "\x07"} & set(out.read_text() + err.read_text())


def test_an_inotify_limit_is_named_as_the_one_that_ran_out():
    """The notice quoted the library's error whole ("Error { kind: MaxFilesWatch, paths: [...] }") and told
    to raise max_user_watches where no inotify instance was left (max_user_instances): the texts below are
    those watchfiles gave on Linux in a user namespace with each limit set low."""
    from openclaw_memory.watch.feeds import is_watch_limit, watch_limit_said

    instances = RuntimeError("Error creating recommended watcher: Too many open files (os error 24)")
    watches = RuntimeError('OS file watch limit reached. about ["/w/memory/s3"] (Error { kind: MaxFilesWatch, '
                           'paths: ["/w/memory/s3"] })')
    assert is_watch_limit(instances) and is_watch_limit(watches)
    assert watch_limit_said(instances) == ("no inotify instance is left for this user", "fs.inotify.max_user_instances")
    assert watch_limit_said(watches) == ("the inotify watch limit was reached (at /w/memory/s3)", "fs.inotify.max_user_watches")
    assert watch_limit_said(OSError(errno.ENOSPC, "No space left on device"))[1] == "fs.inotify.max_user_watches"


@pytest.mark.skipif(shutil.which("unshare") is None, reason="unshare is not on PATH: no user namespace to set a limit in")
def test_watch_without_an_inotify_instance_says_which_limit_and_polls(workspace, state_dir, tmp_path):
    write(workspace / "memory" / "a.md", "a\n")
    script = (f"echo 0 > /proc/sys/user/max_inotify_instances && exec {shlex.quote(sys.executable)} -m openclaw_memory "
              f"-w {shlex.quote(str(workspace))} --state-dir {shlex.quote(str(state_dir))} watch")
    proc = subprocess.Popen(["unshare", "-U", "-r", "sh", "-c", script], env=env_for(workspace, state_dir),
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        said = ""
        for line in proc.stderr:  # until the notice (or the end, where the namespace is refused)
            said += line
            if "falling back to polling" in line:
                break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    if "falling back to polling" not in said:
        pytest.skip(f"no user namespace with its own inotify limits here: {said.strip()[-200:]}")
    assert ("warning: no inotify instance is left for this user; falling back to polling every 250 ms "
            "(raise fs.inotify.max_user_instances to get events again)") in said, said
    assert "os error" not in said and "Error {" not in said
