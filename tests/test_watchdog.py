"""The workspace watchdog on real files: snapshot, verify, heartbeat, and their edge cases."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pathspec
import pytest

from conftest import settings_for, wait_for, write
from openclaw_memory.database import Database
from openclaw_memory.errors import UsageError
from openclaw_memory.fsutil.fsclock import LOCAL_GUARD_NS, REMOTE_GUARD_NS, guard_ns
from openclaw_memory.watchdog.checkpoint import HEADING, pending_checkpoint
from openclaw_memory.watchdog.heartbeat import heartbeat
from openclaw_memory.watchdog.ignore import DEFAULT_PATTERNS, compile_rules
from openclaw_memory.watchdog.snapshot import refresh_baseline, take_snapshot
from openclaw_memory.watchdog.store import RACY, SnapshotStore, has_baseline
from openclaw_memory.watchdog.verify import NoBaseline, verify_workspace
from openclaw_memory.wire import to_json


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "2026-01-01.md", "day one\n")
    return settings_for(workspace, state_dir)


def settle(workspace: Path) -> None:
    """Wait until the clock is past the racy guard of every file's timestamps, so a snapshot trusts
    what was just written. A wait, not os.utime: the ctime counts too, and only time moves it."""
    guard = guard_ns(workspace)
    entries = (p.lstat() for p in workspace.rglob("*"))
    newest = max(max(st.st_mtime_ns, st.st_ctime_ns) for st in entries if not stat.S_ISDIR(st.st_mode))
    wait_for(lambda: time.time_ns() - guard > newest, timeout=30, step=guard / 1e9)


def _looked(note: Path) -> dict:
    """The stat a caller's own look took of a note (doctor's scan), as verify is handed it."""
    from openclaw_memory.database.observations import FileStat

    st = os.lstat(note)
    return {"memory/note.md": FileStat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, False, st.st_mode)}


# --- correctness of change detection -------------------------------------------------


def test_same_size_rewrite_right_after_snapshot_is_detected(settings, workspace):
    # Whatever the file system's timestamp granularity, a same-size rewrite right after
    # the snapshot must be found: by a stat difference, or by the racy rule when the stat
    # came out identical.
    target = workspace / "memory" / "note.md"
    for attempt in range(5):
        write(target, f"version-{attempt}-a")
        info = take_snapshot(settings)
        before = os.lstat(target)
        write(target, f"version-{attempt}-b")
        after = os.lstat(target)
        identical = (before.st_mtime_ns, before.st_ctime_ns, before.st_size, before.st_ino) == (
            after.st_mtime_ns, after.st_ctime_ns, after.st_size, after.st_ino)
        if identical:
            assert info.racy >= 1, "an identical stat must have been recorded as racy"
        result = verify_workspace(settings)
        assert [c.path for c in result.changed] == ["memory/note.md"], attempt


def test_racy_flag_is_what_catches_an_identical_stat(settings, workspace):
    # Reproduce a coarse-timestamp file system: after a same-size rewrite, give the
    # baseline row the file's new stat, as if the clock had not ticked. With the racy
    # flag set the rewrite is still found; without it, the stat is trusted and it is not.
    target = workspace / "memory" / "note.md"
    write(target, "aaaa")
    take_snapshot(settings)
    write(target, "bbbb")
    st = os.lstat(target)
    store = SnapshotStore(settings.data_dir)

    def rewrite_baseline(racy: bool) -> None:
        table = store.load(store.latest_label())
        i = table.index["memory/note.md"]
        table.mtime[i], table.ctime[i], table.size[i], table.ino[i], table.mode[i] = (
            st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, st.st_mode)
        table.flags[i] = (table.flags[i] | RACY) if racy else (table.flags[i] & ~RACY)
        store.save(table, 20)

    rewrite_baseline(racy=True)
    assert [c.path for c in verify_workspace(settings).changed] == ["memory/note.md"]
    assert [c.path for c in verify_workspace(settings, _looked(target)).changed] == ["memory/note.md"]  # doctor's way
    rewrite_baseline(racy=False)
    assert verify_workspace(settings).changed == ()


def test_verify_takes_a_stat_the_callers_own_look_took_only_where_the_change_rule_would(settings, workspace):
    """doctor hands verify its scan's stats of the notes (one lstat a note per doctor, not two): an
    entry whose given stat is the baseline's, hashed and not racy, is unchanged as of that look;
    one given another stat is stat'ed and hashed here, as is every entry not given."""
    from openclaw_memory.database.observations import FileStat

    target = workspace / "memory" / "note.md"
    write(target, "aaaa")
    settle(workspace)
    take_snapshot(settings)
    st = os.lstat(target)
    looked = {"memory/note.md": FileStat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, False, st.st_mode)}
    write(target, "bbbbbb")  # after the caller's look
    assert verify_workspace(settings, looked).changed == ()
    st = os.lstat(target)
    now = {"memory/note.md": FileStat(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, False, st.st_mode)}
    assert [c.path for c in verify_workspace(settings, now).changed] == ["memory/note.md"]
    assert [c.path for c in verify_workspace(settings).changed] == ["memory/note.md"]


def test_back_dated_mtime_is_caught_by_ctime(settings, workspace):
    target = workspace / "memory" / "note.md"
    write(target, "original")
    original = os.lstat(target)
    settle(workspace)
    info = take_snapshot(settings)
    assert info.racy == 0
    write(target, "FORGERY!")  # same size
    os.utime(target, ns=(original.st_atime_ns, original.st_mtime_ns))
    now = os.lstat(target)
    assert (now.st_mtime_ns, now.st_size) == (original.st_mtime_ns, original.st_size)
    for looked in (None, _looked(target)):  # verify's own stat, and doctor's scan's
        result = verify_workspace(settings, looked)
        assert [c.path for c in result.changed] == ["memory/note.md"]
        assert result.changed[0].old_hash != result.changed[0].new_hash


def test_file_replaced_by_a_folder(settings, workspace):
    target = workspace / "notes.md"
    write(target, "x")
    take_snapshot(settings)
    target.unlink()
    write(target / "inside.md", "y")
    result = verify_workspace(settings)
    assert [(c.path, c.new_hash) for c in result.changed] == [("notes.md", None)]
    assert result.changed[0].old_hash is not None
    assert result.new == ("notes.md/inside.md",)
    assert result.break_count == 1


def test_deleted_folder_lists_its_files(settings, workspace):
    for name in ("a.md", "b.md", "sub/c.md"):
        write(workspace / "project" / name, name)
    take_snapshot(settings)
    import shutil

    shutil.rmtree(workspace / "project")
    result = verify_workspace(settings)
    assert result.deleted == ("project/a.md", "project/b.md", "project/sub/c.md")
    assert result.break_count == 3


def test_chmod_alone_and_same_bytes_rewrite_are_not_changes(settings, workspace):
    target = workspace / "MEMORY.md"
    take_snapshot(settings)
    os.chmod(target, 0o600)
    data = target.read_bytes()
    tmp = workspace / "MEMORY.md.new"
    tmp.write_bytes(data)
    os.replace(tmp, target)  # an atomic save of the same bytes: new inode, same content
    result = verify_workspace(settings)
    assert result.rehashed >= 1  # the stat differed, so it was read again
    assert result.break_count == 0 and result.new == ()


def test_new_files_do_not_count_as_breaks(settings, workspace):
    take_snapshot(settings)
    write(workspace / "memory" / "2026-01-02.md", "day two\n")
    result = verify_workspace(settings)
    assert result.new == ("memory/2026-01-02.md",)
    assert result.break_count == 0


def test_fifo_in_the_tree_does_not_hang(settings, workspace):
    fifo = workspace / "memory" / "pipe"
    os.mkfifo(fifo)
    done = {}

    def run():
        done["snapshot"] = take_snapshot(settings)
        done["verify"] = verify_workspace(settings)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(20)
    assert not worker.is_alive(), "snapshot or verify blocked on a FIFO"
    assert done["verify"].break_count == 0
    fifo.unlink()
    write(fifo, "now a regular file")
    result = verify_workspace(settings)
    assert [c.path for c in result.changed] == ["memory/pipe"]


def test_symlinks_are_entries_never_followed(settings, workspace, tmp_path):
    outside = write(tmp_path / "outside.md", "secret v1")
    link = workspace / "linked.md"
    os.symlink(outside, link)
    os.symlink(tmp_path, workspace / "linked-dir")
    take_snapshot(settings)
    write(outside, "secret v2, longer")  # the target changes: the link itself did not
    write(tmp_path / "elsewhere.md", "z")  # inside the linked folder, which is not walked
    assert verify_workspace(settings).break_count == 0
    link.unlink()
    os.symlink(tmp_path / "elsewhere.md", link)
    result = verify_workspace(settings)
    assert [c.path for c in result.changed] == ["linked.md"]


def test_two_gigabyte_sparse_file_is_streamed(settings, workspace):
    big = workspace / "big.bin"
    with open(big, "wb") as fh:
        fh.truncate(2 * 1024**3)
    code = (
        "import json, sys\n"
        # VmHWM is this process's own peak: ru_maxrss would carry over the pytest parent's
        # peak through fork and exec (the model loaded by earlier tests: about 2 GB).
        "def peak_kib():\n"
        "    with open('/proc/self/status') as fh:\n"
        "        return next(int(l.split()[1]) for l in fh if l.startswith('VmHWM:'))\n"
        "from openclaw_memory.settings import Overrides, resolve_settings\n"
        "from openclaw_memory.watchdog.snapshot import take_snapshot\n"
        "s = resolve_settings(Overrides(workspace=sys.argv[1], state_dir=sys.argv[2]), environ={})\n"
        "info = take_snapshot(s)\n"
        "print(json.dumps({'unhashed': info.unhashed, 'entries': info.entries,"
        " 'maxrss_kib': peak_kib()}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(workspace), str(settings.state_dir)],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["unhashed"] == 0 and report["entries"] == 3
    assert report["maxrss_kib"] < 300 * 1024, report  # far below the 2 GiB it would take whole


def test_file_changing_while_hashed_is_recorded_without_hash(settings, workspace, monkeypatch):
    """Another writer appends to the file each time the snapshot hashes it: no hash is recorded.
    (Appended from the hash itself: a writer thread racing a 64 MiB hash went unscheduled under
    load, 1 run in 7, and the snapshot rightly hashed a file that held still.)"""
    from openclaw_memory.watchdog import observe as observe_module

    target = write(workspace / "growing.log.md", b"x" * 4096)
    hash_fd = observe_module.digest_fd
    writing = threading.Event()

    def hashed_while_another_writer_appends(fd: int, size: int):
        if writing.is_set() and os.fstat(fd).st_ino == os.stat(target).st_ino:
            with open(target, "ab") as other:
                other.write(b"x")
        return hash_fd(fd, size)

    monkeypatch.setattr(observe_module, "digest_fd", hashed_while_another_writer_appends)
    writing.set()
    info = take_snapshot(settings)
    writing.clear()  # the writer stops
    assert info.unhashed == 1
    assert any("growing.log.md" in w and "kept changing" in w for w in info.warnings)
    result = verify_workspace(settings)  # it changed after the recorded stat: a change, old hash unknown
    assert [(c.path, c.old_hash is None) for c in result.changed] == [("growing.log.md", True)]
    settle(workspace)
    assert take_snapshot(settings).unhashed == 0  # rechecked: hashed once it holds still


# --- ignore rules ----------------------------------------------------------------------


@pytest.mark.parametrize("make, words", [
    (lambda p: p.write_bytes(b"build/\nnotes\\\n"), "line 2: 'notes\\\\' is not a valid gitignore pattern"),
    (lambda p: os.mkfifo(p), "not a regular file"),
    (lambda p: p.symlink_to("/dev/zero"), "is a symlink"),
    (lambda p: p.write_bytes(b"#" * (2 << 20)), "larger than 1024 KiB"),
])
def test_an_unusable_ignore_file_is_a_clear_error_never_a_hang(workspace, cli, make, words):
    write(workspace / "MEMORY.md", "m\n")
    make(workspace / ".openclaw-memoryignore")
    for command in (("watchdog", "snapshot"), ("watchdog", "heartbeat")):
        result = cli(*command, "--json")
        assert result.returncode == 2, result
        assert words in result.json()["error"]


def test_binary_bytes_in_the_ignore_file_are_patterns_like_any_other(workspace, cli):
    write(workspace / "MEMORY.md", "m\n")
    (workspace / ".openclaw-memoryignore").write_bytes(b"\x00\xff\xfe\n*.bin\n")
    write(workspace / "blob.bin", "b\n")
    assert cli("watchdog", "snapshot").returncode == 0
    write(workspace / "blob.bin", "changed\n")
    assert cli("watchdog", "verify").returncode == 0


def test_default_and_workspace_ignore_rules(settings, workspace):
    ignored = [
        "scratch.tmp", "memory/run.log", ".git/config", "node_modules/pkg/index.js",
        "memory/__pycache__/m.pyc", ".openclaw/agents/main/sessions/s1.jsonl", "build/out.md", "old.bak",
    ]
    for rel in ignored:
        write(workspace / rel, "v1")
    write(workspace / "keep.bak", "kept")
    write(workspace / ".openclaw/agents/main/config.json", "{}")
    write(workspace / ".openclaw-memoryignore", "# ours\nbuild/\n*.bak\n!keep.bak\n")
    info = take_snapshot(settings)
    store = SnapshotStore(settings.data_dir)
    recorded = set(store.load(info.label).paths)
    assert recorded == {
        "MEMORY.md", "memory/2026-01-01.md", "keep.bak", ".openclaw/agents/main/config.json", ".openclaw-memoryignore",
    }
    for rel in ignored:
        write(workspace / rel, "v2 changed")
    assert verify_workspace(settings).break_count == 0
    # The rules in force are the baseline's: ignoring a file now does not hide its change,
    # and the ignore file itself is tracked.
    with open(workspace / ".openclaw-memoryignore", "a") as fh:
        fh.write("MEMORY.md\n")
    write(workspace / "MEMORY.md", "# Memory, edited\n")
    result = verify_workspace(settings)
    assert [c.path for c in result.changed] == [".openclaw-memoryignore", "MEMORY.md"]


def test_memory_files_in_folders_only_the_default_rules_leave_out_are_watched_and_kept(settings, workspace):
    # OpenClaw lists memory/node_modules/a.md and memory/x.tmp/d.md as memory: the defaults left them out
    # of every snapshot, so an edit was no break (verify, doctor) and a rollback left it.
    notes = ["memory/node_modules/a.md", "memory/x.tmp/d.md", "memory/.git/sub/g.md", "memory/__pycache__/p.md"]
    for rel in notes:
        write(workspace / rel, "v1\n")
    clutter = ["memory/.git/objects/ab", "memory/x.tmp/e.txt", "node_modules/n.md", "memory/run.log"]
    for rel in clutter:
        write(workspace / rel, "v1\n")
    info = take_snapshot(settings, "base")
    store = SnapshotStore(settings.data_dir)
    assert set(store.load("base").paths) == {"MEMORY.md", "memory/2026-01-01.md", *notes}
    assert set(store.files("base")) == {"MEMORY.md", "memory/2026-01-01.md", *notes} and info.kept == 6
    for rel in notes + clutter:
        write(workspace / rel, "edited behind the agent's back\n")
    result = verify_workspace(settings)
    assert sorted(c.path for c in result.changed) == sorted(notes) and result.break_count == 4
    rules = compile_rules(list(DEFAULT_PATTERNS))
    assert [rules.ignores_path(p) for p in notes + clutter] == [False] * 4 + [True] * 4
    # The workspace's own ignore file still decides for memory files as it did.
    write(workspace / ".openclaw-memoryignore", "node_modules/\n")
    take_snapshot(settings, "own")
    assert "memory/node_modules/a.md" not in store.load("own").paths and "memory/x.tmp/d.md" in store.load("own").paths
    # A snapshot of an earlier release (its defaults stored without the line that marks these rules)
    # keeps its rules: the defaults left such a note out of it.
    assert compile_rules(list(DEFAULT_PATTERNS[1:])).ignores_path("memory/node_modules/a.md")


def test_ignore_matching_agrees_with_pathspec():
    patterns = list(DEFAULT_PATTERNS) + ["/build", "docs/*.md", "x*.md", "*.b~k", "a/**/b", "\\#lit"]
    paths = [
        "a.tmp", "x/a.tmp", "build", "x/build", "docs/a.md", "docs/x/a.md", "a.md", "x.log", "a.b~k",
        "xa.md", "d/xa.md", ".tmp", "tmp", "a/b", "a/q/r/b", "#lit", "d/#lit", "MEMORY.md",
    ]
    for extra in ([], ["!keep.tmp", "!x/a.tmp"]):
        rules = compile_rules(patterns + extra)
        spec = pathspec.GitIgnoreSpec.from_lines(patterns + extra)
        for p in paths + ["keep.tmp"]:
            assert rules.ignores_file(p, p.rpartition("/")[2]) == spec.match_file(p), (extra, p)
    rules = compile_rules(patterns)
    assert rules.ignores_dir("node_modules/") and rules.ignores_dir("a/.git/") and not rules.ignores_dir("memory/")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH: its own matching is the reference")
@pytest.mark.parametrize("negation", [[], ["!keep"]])
def test_bracket_expressions_never_match_a_folder_separator_as_in_git(tmp_path, negation):
    # git's wildmatch never matches "/" by [...]; pathspec's [!x] did, where a negation made the whole
    # path be judged at once (a/b ignored by "a[!x]b": a file changed behind the agent's back unreported).
    patterns = ["a[!x]b", "e[^y]f", "h[+-0]k", "m[ab]n", "*[!z]*[!z]*q", *negation]
    paths = ["a/b", "azb", "axb", "e/f", "eqf", "h/k", "h.k", "m/n", "man", "c/d/q", "cdq", "keep"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("\n".join(patterns) + "\n")
    git = subprocess.run(["git", "-C", str(tmp_path), "check-ignore", "--no-index", "--stdin"], input="\n".join(paths),
                         capture_output=True, text=True)
    by_git = set(git.stdout.split())
    rules = compile_rules(patterns)
    assert {p for p in paths if rules.ignores_path(p)} == by_git


def test_state_dir_inside_the_workspace_is_excluded(workspace):
    write(workspace / "MEMORY.md", "# Memory\n")
    settings = settings_for(workspace, workspace / ".state")
    assert heartbeat(settings).status == "HEARTBEAT_OK"
    second = heartbeat(settings)
    assert second.status == "HEARTBEAT_OK"
    assert second.verify.new == () and second.verify.entries == 1


# --- snapshots: labels, retention, refresh --------------------------------------------


@pytest.mark.parametrize("label", ["", ".hidden", "a/b", "x" * 101, "sp ace", "é"])
def test_invalid_labels_are_refused(settings, label):
    with pytest.raises(UsageError):
        take_snapshot(settings, label)


def test_labels_and_retention(settings, workspace, state_dir):
    write(state_dir / "openclaw-memory.toml", "[watchdog]\nkeep = 3\n")
    settings = settings_for(workspace, state_dir)
    assert not has_baseline(settings)
    for label in ("one", "two.2", "three_3", "four-4", "x" * 100):
        assert take_snapshot(settings, label).label == label
    store = SnapshotStore(settings.data_dir)
    assert [e.label for e in store.entries()] == ["three_3", "four-4", "x" * 100]
    assert [r[0] for r in store.db.rows("SELECT label FROM snapshots ORDER BY seq")] == ["three_3", "four-4", "x" * 100]
    assert has_baseline(settings)
    take_snapshot(settings, "three_3")  # a reused label becomes the newest again
    assert store.latest_label() == "three_3"
    assert verify_workspace(settings).baseline == "three_3"


def test_verify_without_baseline_and_verify_writes_nothing(settings):
    with pytest.raises(NoBaseline) as err:
        verify_workspace(settings)
    assert "watchdog snapshot" in err.value.message and err.value.exit_code == 2
    take_snapshot(settings)
    before = sorted((p, p.stat().st_mtime_ns) for p in settings.data_dir.rglob("*"))
    verify_workspace(settings)
    assert sorted((p, p.stat().st_mtime_ns) for p in settings.data_dir.rglob("*")) == before


def test_refresh_baseline_rerecords_exactly_the_given_paths(settings, workspace):
    write(workspace / "other.md", "o1")
    take_snapshot(settings)
    write(workspace / "MEMORY.md", "# Memory, repaired by doctor\n")
    (workspace / "memory" / "2026-01-01.md").unlink()
    write(workspace / ".openclaw-repair" / "root-memory" / "t" / "memory.md", "archived")
    write(workspace / "other.md", "o2, not refreshed")
    refresh_baseline(settings, ["MEMORY.md", "memory/2026-01-01.md", ".openclaw-repair/root-memory/t/memory.md"])
    result = verify_workspace(settings)
    assert [c.path for c in result.changed] == ["other.md"]
    assert result.deleted == () and result.new == ()
    with pytest.raises(UsageError):
        refresh_baseline(settings, ["../escape.md"])


def test_guard_follows_the_mount_table():
    local = [("/", "ext4"), ("/tmp", "tmpfs")]
    assert guard_ns(Path("/tmp/ws"), mounts=local) == LOCAL_GUARD_NS
    assert guard_ns(Path("/mnt/share/ws"), mounts=local + [("/mnt/share", "cifs")]) == REMOTE_GUARD_NS
    assert guard_ns(Path("/data/ws"), mounts=[("/", "ext4"), ("/data/ws/remote", "nfs4")]) == REMOTE_GUARD_NS
    assert guard_ns(Path("/x"), mounts=[]) == REMOTE_GUARD_NS
    # a workspace and its extra paths: the widest of their file systems
    assert guard_ns(Path("/tmp/ws"), Path("/mnt/share/notes"), mounts=local + [("/mnt/share", "cifs")]) == REMOTE_GUARD_NS


# --- heartbeat and the command line -----------------------------------------------------


def test_heartbeat_api_first_run_then_break(settings, workspace):
    first = heartbeat(settings)
    assert (first.status, first.verify, first.checkpoint) == ("HEARTBEAT_OK", None, None)
    assert first.snapshot.startswith("heartbeat-")
    (workspace / "MEMORY.md").unlink()
    result = heartbeat(settings)
    assert result.status == "BREAK" and result.verify.deleted == ("MEMORY.md",)
    assert result.checkpoint == Path(Database(settings.data_dir).path)
    text = pending_checkpoint(settings.data_dir)
    assert text.startswith(HEADING) and "`MEMORY.md`" in text
    assert set(to_json(result)) == {"status", "verify", "snapshot", "checkpoint"}
    assert heartbeat(settings).status == "HEARTBEAT_OK"  # the break is in the new baseline


def test_checkpoint_goes_to_the_agent_whose_heartbeat_wrote_it(cli, workspace):
    # The data dir is the workspace's, which agents may share: agent b's prompt showed the break agent a's
    # heartbeat found and consumed it, and a's prompt, which the heartbeat named, had nothing.
    write(workspace / "MEMORY.md", "# shared\n")
    assert cli("--agent", "a", "watchdog", "snapshot").returncode == 0
    write(workspace / "MEMORY.md", "# shared\ntampered\n")
    beat = cli("--agent", "a", "watchdog", "heartbeat")
    assert beat.returncode == 1 and "--agent a prompt` includes it once" in beat.stdout
    assert "Workspace Changes" not in cli("--agent", "b", "prompt").stdout
    assert cli("--agent", "b", "prompt", "--json").json()["checkpoint"] is None
    shown = cli("--agent", "a", "prompt").stdout
    assert "Workspace Changes" in shown and "`MEMORY.md`" in shown
    assert "Workspace Changes" not in cli("--agent", "a", "prompt").stdout  # once


def test_the_prompt_a_heartbeat_names_is_its_agents_whatever_openclaw_json_says_later(cli, workspace, state_dir):
    # With no --agent the agent is openclaw.json's default, which may change before the prompt runs:
    # the line printed names the agent whose prompt shows the section.
    write(workspace / "MEMORY.md", "# shared\n")
    assert cli("watchdog", "snapshot").returncode == 0
    write(workspace / "MEMORY.md", "# shared\ntampered\n")
    beat = cli("watchdog", "heartbeat")
    assert beat.returncode == 1 and "--agent main prompt` includes it once" in beat.stdout, beat.stdout
    (state_dir / "openclaw.json").write_text('{"agents": {"entries": {"main": {}, "ops": {"default": true}}}}')
    line = beat.stdout.split("the next `", 1)[1].split("` includes", 1)[0]
    shown = cli(*shlex.split(line)[1:]).stdout
    assert "Workspace Changes" in shown and "`MEMORY.md`" in shown


def test_checkpoint_written_before_schema_16_goes_to_any_agent(settings, cli):
    # A section with no agent (written before the column) is the next prompt's, whichever agent's.
    from openclaw_memory.watchdog.checkpoint import append_checkpoint

    append_checkpoint(settings.data_dir, "## Break\n- changed: `MEMORY.md`", None)
    assert "## Break" in cli("--agent", "b", "prompt").stdout
    assert "## Break" not in cli("--agent", "a", "prompt").stdout


def _main_holding_ops(tmp_path: Path, state_dir: Path) -> Path:
    """OpenClaw's default layout: agents.defaults.workspace is main's, ops's is its folder ops/ in it."""
    agent = tmp_path / "agent"
    write(agent / "MEMORY.md", "# main\n")
    write(agent / "ops" / "MEMORY.md", "# ops\n")
    (agent / "memory").mkdir()
    (agent / "ops" / "memory").mkdir()
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"workspace": str(agent)},
                                                                    "entries": {"main": {"default": True}, "ops": {}}}}))
    return agent


def test_the_watchdog_leaves_out_another_agents_workspace_nested_in_this_one(tmp_path, state_dir, cli):
    # ops's note was a break of main's heartbeat (exit 1) and main's prompt quoted it.
    agent = _main_holding_ops(tmp_path, state_dir)
    env = {"OPENCLAW_WORKSPACE": ""}
    snap = cli("--agent", "main", "watchdog", "snapshot", "--json", env=env)
    assert snap.returncode == 0 and snap.json()["entries"] == 1  # MEMORY.md: not ops/MEMORY.md
    assert cli("--agent", "ops", "write", "memory/d.md", "--append", "ops diary", env=env).returncode == 0
    beat = cli("--agent", "main", "watchdog", "heartbeat", env=env)
    assert (beat.returncode, beat.stdout.strip()) == (0, "HEARTBEAT_OK")
    assert "Workspace Changes" not in cli("--agent", "main", "prompt", env=env).stdout
    write(agent / "memory" / "n.md", "main's\n")
    write(agent / "MEMORY.md", "# main, changed\n")
    beat = cli("--agent", "main", "watchdog", "heartbeat", env=env)
    assert beat.returncode == 1 and "changed: MEMORY.md" in beat.stdout and "ops/" not in beat.stdout
    # ops's own watchdog sees its own files.
    assert cli("--agent", "ops", "watchdog", "snapshot", "--json", env=env).json()["entries"] == 2


def test_a_nested_agents_workspace_named_through_a_variable_of_the_state_dirs_env_is_left_out(tmp_path, state_dir, cli):
    # agents.defaults.workspace "${AGENTS_ROOT}", the variable in the state dir's .env (as OpenClaw reads it):
    # the other agents' workspaces were read with the process's environment alone, ops's was unknown, and
    # its notes were main's (snapshot: 2 entries; ops's edit was a break of main's heartbeat).
    agent = _main_holding_ops(tmp_path, state_dir)
    write(state_dir / ".env", f"AGENTS_ROOT={agent}\n")
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"workspace": "${AGENTS_ROOT}"},
                                                                    "entries": {"main": {"default": True}, "ops": {}}}}))
    env = {"OPENCLAW_WORKSPACE": ""}
    snap = cli("--agent", "main", "watchdog", "snapshot", "--json", env=env)
    assert snap.returncode == 0 and snap.json()["entries"] == 1
    write(agent / "ops" / "MEMORY.md", "# ops, edited\n")
    beat = cli("--agent", "main", "watchdog", "heartbeat", env=env)
    assert (beat.returncode, beat.stdout.strip()) == (0, "HEARTBEAT_OK")


def test_a_baseline_taken_before_the_nested_agent_was_configured_does_not_report_its_files_deleted(
        tmp_path, state_dir, cli):
    agent = _main_holding_ops(tmp_path, state_dir)
    config = (state_dir / "openclaw.json").read_text()
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"defaults": {"workspace": str(agent)}}}))
    env = {"OPENCLAW_WORKSPACE": ""}
    assert cli("watchdog", "snapshot", "--json", env=env).json()["entries"] == 2  # ops/ no agent's yet
    (state_dir / "openclaw.json").write_text(config)
    done = cli("--agent", "main", "watchdog", "verify", "--json", env=env)
    assert done.returncode == 0 and done.json()["deleted"] == []


def test_this_agents_extra_paths_in_a_nested_agents_workspace_stay_watched(tmp_path, state_dir, cli):
    # An extra path that is agent notes's workspace (notes/), one inside agent ops's (ops/shared) and a
    # file there (ops/f.md) are main's notes too: left out with those workspaces, a tamper was HEARTBEAT_OK.
    agent = tmp_path / "agent"
    write(agent / "MEMORY.md", "# main\n")
    write(agent / "notes" / "x.md", "team fact\n")
    write(agent / "ops" / "MEMORY.md", "# ops\n")
    write(agent / "ops" / "memory" / "d.md", "ops diary\n")
    write(agent / "ops" / "shared" / "sub" / "s.md", "shared\n")
    write(agent / "ops" / "f.md", "a file\n")
    (agent / "memory").mkdir()
    (state_dir / "openclaw.json").write_text(json.dumps({
        "agents": {"defaults": {"workspace": str(agent)}, "entries": {"main": {"default": True}, "notes": {}, "ops": {}}},
        "memory": {"search": {"extraPaths": ["notes", "ops/shared", "ops/f.md"]}}}))
    env = {"OPENCLAW_WORKSPACE": ""}
    snap = cli("--agent", "main", "watchdog", "snapshot", "--json", env=env)
    assert snap.returncode == 0 and snap.json()["entries"] == 4
    write(agent / "notes" / "x.md", "tampered\n")
    write(agent / "ops" / "shared" / "sub" / "s.md", "tampered\n")
    (agent / "ops" / "f.md").unlink()
    write(agent / "ops" / "memory" / "d.md", "ops diary, more\n")
    write(agent / "ops" / "MEMORY.md", "# ops, changed\n")
    beat = cli("--agent", "main", "watchdog", "heartbeat", env=env)
    assert beat.returncode == 1
    lines = beat.stdout.splitlines()
    assert "changed: notes/x.md" in lines and "changed: ops/shared/sub/s.md" in lines and "deleted: ops/f.md" in lines
    assert "ops/memory" not in beat.stdout and "ops/MEMORY.md" not in beat.stdout


def test_cli_verify_exit_codes_and_json(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n")
    missing = cli("watchdog", "verify")
    assert missing.returncode == 2 and "watchdog snapshot" in missing.stderr
    assert cli("watchdog", "verify", "--json").json() == {"error": missing.stderr.strip().removeprefix("error: ")}
    snap = cli("watchdog", "snapshot", "first", "--json")
    assert snap.returncode == 0 and snap.json()["label"] == "first" and snap.json()["entries"] == 1
    clean = cli("watchdog", "verify", "--json")
    assert clean.returncode == 0
    assert {**clean.json(), "rehashed": 0} == {"baseline": "first", "changed": [], "deleted": [], "new": [],
                                               "breakCount": 0, "entries": 1, "rehashed": 0}
    write(workspace / "MEMORY.md", "# Memory, changed\n")
    write(workspace / "new.md", "n")
    broken = cli("watchdog", "verify", "--json")
    assert broken.returncode == 1
    data = broken.json()
    assert set(data) == {"baseline", "changed", "deleted", "new", "breakCount", "entries", "rehashed"}
    assert [set(c) for c in data["changed"]] == [{"path", "oldHash", "newHash"}]
    assert data["changed"][0]["path"] == "MEMORY.md" and data["new"] == ["new.md"] and data["breakCount"] == 1
    assert len(data["changed"][0]["oldHash"]) == 32 and data["changed"][0]["oldHash"] != data["changed"][0]["newHash"]
    bad = cli("watchdog", "snapshot", ".hidden")
    assert bad.returncode == 2 and "invalid snapshot label" in bad.stderr and "Traceback" not in bad.stderr


def test_cli_heartbeat_output_checkpoint_and_prompt(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "plan.md", "plan\n")
    first = cli("watchdog", "heartbeat")
    assert (first.returncode, first.stdout, first.stderr) == (0, "HEARTBEAT_OK\n", "")
    clean = cli("watchdog", "heartbeat")
    assert (clean.returncode, clean.stdout) == (0, "HEARTBEAT_OK\n")
    write(workspace / "memory" / "plan.md", "plan, rewritten elsewhere\n")
    (workspace / "MEMORY.md").unlink()
    broken = cli("watchdog", "heartbeat")
    assert broken.returncode == 1
    assert "changed: memory/plan.md" in broken.stdout and "deleted: MEMORY.md" in broken.stdout
    as_json = cli("watchdog", "heartbeat", "--json").json()
    assert as_json["status"] == "HEARTBEAT_OK" and as_json["checkpoint"] is None
    prompt = cli("prompt")
    assert prompt.returncode == 0
    assert prompt.stdout.count("Workspace Changes Detected") == 1 and "memory/plan.md" in prompt.stdout
    again = cli("prompt")
    assert "Workspace Changes Detected" not in again.stdout


def test_a_heartbeat_that_another_overtook_judges_again_and_reports_each_change_once(workspace, state_dir, monkeypatch):
    import openclaw_memory.watchdog.heartbeat as beat

    write(workspace / "MEMORY.md", "# Memory\n")
    settings = settings_for(workspace, state_dir)
    assert heartbeat(settings).ok  # the first baseline
    write(workspace / "MEMORY.md", "# Memory\n- changed behind the agent's back\n")
    walk = beat.compare_workspace
    overtaken: list = []

    def walk_then_overtaken(*args, **kwargs):
        delta = walk(*args, **kwargs)
        if not overtaken:  # another heartbeat saves its baseline while this one walked
            monkeypatch.setattr(beat, "compare_workspace", walk)
            overtaken.append(heartbeat(settings))
            monkeypatch.setattr(beat, "compare_workspace", walk_then_overtaken)
        return delta

    monkeypatch.setattr(beat, "compare_workspace", walk_then_overtaken)
    late = heartbeat(settings)
    assert not overtaken[0].ok and late.ok  # the change is the first one's; the late one found nothing new
    text = pending_checkpoint(settings.data_dir) or ""
    assert text.count("MEMORY.md") == 1, text
