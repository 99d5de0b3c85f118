"""Full disks, bad input and honest results: a message and a true exit status, never a traceback.

Disk-full cases run on a real small tmpfs (we mount one; skipped with the reason where
mounting is not allowed), filled to the last block, under the workspace or the state dir.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from conftest import CliResult, env_for, fill_disk, run_in_process, tmpfs, write
from openclaw_memory.database import forget_connections


def run_cli(workspace: Path, state_dir: Path, *args: str, input: str | None = None) -> CliResult:
    return run_in_process(args, env_for(workspace, state_dir), cwd=workspace, input=input)


def no_traceback(res: CliResult) -> CliResult:
    assert "Traceback" not in res.stderr and "Traceback" not in res.stdout, res.stderr
    return res


def temp_files(*folders: Path) -> list[str]:
    return [str(p) for folder in folders for p in folder.rglob("*.tmp")]


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs; ``fill()`` takes every free block."""
    with tmpfs(tmp_path / "small-disk", "1m") as mount:

        class Disk:
            path = mount

            def fill(self) -> None:
                fill_disk(mount, f"filler-{uuid.uuid4().hex}")

            def free(self) -> None:
                for filler in mount.glob("filler-*"):
                    filler.unlink()

        yield Disk()


def tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file() and not p.name.startswith("filler-")}


BIG = "x" * 9_000  # a filled tmpfs has no page left; under the prompt's per-file cap once merged


# -- workspace full ---------------------------------------------------------------------------

def test_workspace_full_write_says_so_and_changes_nothing(small_disk, tmp_path):
    ws, state = small_disk.path / "ws", tmp_path / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory/notes.md", "# Notes\n")
    assert run_cli(ws, state, "read", "MEMORY.md").returncode == 0
    assert run_cli(ws, state, "read", "memory/notes.md").returncode == 0
    before = tree_bytes(ws)
    small_disk.fill()
    for args in (("write", "MEMORY.md", "--append", BIG), ("write", "memory/new/deep.md", "--append", BIG),
                 ("write", "memory/notes.md", "--stdin"), ("write", "memory/b.md", "--stdin")):
        res = no_traceback(run_cli(ws, state, *args, input=BIG if "--stdin" in args else None))
        assert res.returncode == 1, res.stderr
        assert "disk is full" in res.stderr and "workspace" in res.stderr
        # A new note is not said to be "unchanged": there was none (`nothing was written: memory/b.md is unchanged`).
        outcome = "is unchanged" if (ws / args[1]).exists() else "was not created"
        assert f"nothing was written: {args[1]} {outcome}." in res.stderr, res.stderr
    assert tree_bytes(ws) == before
    assert temp_files(ws, state) == []
    small_disk.free()
    assert run_cli(ws, state, "write", "MEMORY.md", "--append", "after").returncode == 0  # the guard was not confused


def test_workspace_full_doctor_fix_rolls_back_and_says_so(small_disk, tmp_path):
    ws, state = small_disk.path / "ws", tmp_path / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory.md", "legacy " + BIG + "\n")
    before = tree_bytes(ws)
    small_disk.fill()
    res = no_traceback(run_cli(ws, state, "doctor", "--fix"))
    assert res.returncode == 1 and "disk is full" in res.stdout + res.stderr
    assert tree_bytes(ws) == before
    assert temp_files(ws, state) == []
    small_disk.free()
    assert run_cli(ws, state, "doctor", "--fix").returncode == 0
    assert "legacy " + BIG in (ws / "MEMORY.md").read_text()


# -- state dir full ---------------------------------------------------------------------------

@pytest.mark.parametrize("free_inodes", [1, 2, 4])
def test_a_workspace_out_of_inodes_leaves_no_empty_folders_behind(tmp_path, free_inodes):
    with tmpfs(tmp_path / "ws", "1m,nr_inodes=64") as ws:
        state = tmp_path / "state"
        write(ws / "MEMORY.md", "# Memory\n")
        (ws / "memory").mkdir()
        fillers = []
        try:
            while True:
                fillers.append(ws / f"filler-{len(fillers)}")
                fillers[-1].touch()
        except OSError:
            fillers.pop()
        for filler in fillers[:free_inodes]:
            filler.unlink()
        res = no_traceback(run_cli(ws, state, "write", "memory/p/q/r/s.md", "--append", "x", "--no-index"))
        assert res.returncode == 1 and "disk is full" in res.stderr, res.stderr
        assert sorted(p.name for p in (ws / "memory").iterdir()) == []
        forget_connections()


def test_state_dir_full_write_and_read_say_so(small_disk, tmp_path):
    ws, state = tmp_path / "ws", small_disk.path / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory/notes.md", "# Notes\n")
    assert run_cli(ws, state, "read", "MEMORY.md").returncode == 0
    before = tree_bytes(ws)
    small_disk.fill()
    res = no_traceback(run_cli(ws, state, "write", "MEMORY.md", "--append", BIG))
    assert res.returncode == 1 and "disk is full" in res.stderr and "state dir" in res.stderr and "unchanged" in res.stderr
    res = no_traceback(run_cli(ws, state, "read", "memory/notes.md"))
    assert res.returncode == 0 and res.stdout == "# Notes\n" and "not recorded" in res.stderr and "disk is full" in res.stderr
    for args in (("history", "MEMORY.md"), ("state",), ("prompt",), ("files",)):
        res = no_traceback(run_cli(ws, state, *args))
        assert res.returncode == 0, (args, res.stderr)
    assert "disk is full" in run_cli(ws, state, "state").stderr
    assert tree_bytes(ws) == before
    assert temp_files(ws, state) == []


def test_state_dir_full_before_any_process_opened_the_database_still_reads(small_disk, tmp_path):
    """A fresh process must make SQLite's -shm to open the database: with no space for it the
    database is read as it is on disk, and what cannot be written is named as a full disk."""
    ws, state = tmp_path / "ws", small_disk.path / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    assert run_cli(ws, state, "read", "MEMORY.md").returncode == 0
    assert run_cli(ws, state, "watchdog", "snapshot").returncode == 0
    forget_connections()  # the last connection closes: SQLite removes its -wal and -shm
    small_disk.fill()
    for args in (("watchdog", "verify"), ("history", "MEMORY.md"), ("state",), ("read", "MEMORY.md"), ("prompt",)):
        res = no_traceback(run_cli(ws, state, *args))
        assert res.returncode == 0, (args, res.stderr)
        assert "I/O error" not in res.stderr, (args, res.stderr)
        forget_connections()
    listed = run_cli(ws, state, "state")  # every version recorded already: only the sightings' times are not kept
    assert listed.stdout.count("MEMORY.md") == 1 and "disk is full" not in listed.stderr, listed
    forget_connections()
    res = no_traceback(run_cli(ws, state, "doctor", "--json"))  # the full disk and nothing else
    assert res.returncode == 1 and [f["id"] for f in res.json()["findings"]] == ["disk-full"], res.stdout
    forget_connections()
    res = no_traceback(run_cli(ws, state, "write", "MEMORY.md", "--append", "more"))
    assert res.returncode == 1 and "the disk is full: no space left to write in the state dir" in res.stderr
    forget_connections()
    small_disk.free()
    assert run_cli(ws, state, "write", "MEMORY.md", "--append", "more").returncode == 0  # writable again at once


def test_state_dir_full_doctor_fix_changes_nothing(small_disk, tmp_path):
    ws, state = tmp_path / "ws", small_disk.path / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory.md", "legacy text\n")
    assert run_cli(ws, state, "doctor").returncode == 1  # found, not fixed: creates the data dir
    before = tree_bytes(ws)
    small_disk.fill()
    res = no_traceback(run_cli(ws, state, "doctor", "--fix"))
    assert res.returncode == 1 and "disk is full" in res.stdout + res.stderr and "state dir" in res.stdout + res.stderr
    assert tree_bytes(ws) == before
    assert temp_files(ws, state) == []


def test_state_dir_full_watchdog_snapshot_keeps_the_baseline(small_disk, tmp_path):
    ws, state = tmp_path / "ws", small_disk.path / "state"
    write(ws / "MEMORY.md", "# Memory\n")
    assert run_cli(ws, state, "watchdog", "snapshot").returncode == 0
    write(ws / "memory/later.md", "added after the baseline\n" * 2000)
    small_disk.fill()
    for command in ("snapshot", "heartbeat"):
        res = no_traceback(run_cli(ws, state, "watchdog", command))
        assert res.returncode == 1 and "disk is full" in res.stderr and "previous baseline is unchanged" in res.stderr
    assert temp_files(ws, state) == []
    verify = run_cli(ws, state, "watchdog", "verify", "--json")
    assert "memory/later.md" in verify.json()["new"]  # still judged against the old baseline


# -- wrong results ----------------------------------------------------------------------------

def test_file_too_big_for_the_history_is_still_guarded_and_the_status_is_true(cli, workspace, state_dir):
    write(state_dir / "openclaw-memory.toml", "[history]\nmax_bytes = 80000\n")  # keeps files of at most 10 kB
    big = "line of an oversized memory file\n" * 2000
    write(workspace / "MEMORY.md", big)
    blocked = cli("write", "MEMORY.md", "--append", "unread")
    assert blocked.returncode == 3 and (workspace / "MEMORY.md").read_text() == big
    assert no_traceback(cli("read", "MEMORY.md", "--lines", "1")).returncode == 0
    done = no_traceback(cli("write", "MEMORY.md", "--append", "once", "--json"))
    assert done.returncode == 0 and done.json()["size"] == len(big) + 5
    assert (workspace / "MEMORY.md").read_text() == big + "once\n"
    write(workspace / "MEMORY.md", big + "edited by hand\n")
    stale = cli("write", "MEMORY.md", "--append", "again")
    assert stale.returncode == 3 and "changed since" in stale.stderr  # guarded by its hash
    versions = cli("history", "MEMORY.md", "--json").json()["versions"]
    assert [v["available"] for v in versions] == [False] * len(versions)


def test_write_to_the_legacy_dream_twin_is_refused_naming_the_memory_file(cli, workspace):
    write(workspace / "DREAMS.md", "# Dreams\n")
    res = no_traceback(cli("write", "dreams.md", "--append", "a dream"))
    assert res.returncode == 2 and "DREAMS.md" in res.stderr
    assert not (workspace / "dreams.md").exists()
    assert cli("write", "dreams.md", "--append", "x", "--json").returncode == 2
    (workspace / "DREAMS.md").unlink()
    assert cli("write", "dreams.md", "--append", "a dream").returncode == 0  # the diary while DREAMS.md is absent
    # A DREAMS.md that is a link is no diary to the scan (skipped as a symlink), so dreams.md is the
    # diary and takes writes: the guard asked only whether the name DREAMS.md was there.
    (workspace / "DREAMS.md").symlink_to(workspace / "dreams.md")
    assert [f["path"] for f in cli("files", "--json").json()["files"]] == ["dreams.md"]
    assert cli("write", "dreams.md", "--append", "another dream").returncode == 0


def test_a_dream_diary_in_another_letter_case_is_never_written_and_is_reported_as_skipped(cli, workspace):
    """``write Dreams.md`` was written (exit 0) to a file the scan never lists (it takes DREAMS.md, or
    dreams.md without it): never indexed, never searched, and missing from `files`' skipped list,
    which names everything it passes over. Now refused naming DREAMS.md, with DREAMS.md there or not;
    one made by hand is reported as skipped, still read as OpenClaw reads the diary in any case, and
    `mv` gives it its name."""
    for name in ("Dreams.md", "DrEaMs.md"):
        res = no_traceback(cli("write", name, "--append", "a dream"))
        assert res.returncode == 2 and "DREAMS.md" in res.stderr, res.stderr
        assert not (workspace / name).exists()
    write(workspace / "DREAMS.md", "# Dreams\n")
    assert cli("write", "Dreams.md", "--append", "a dream").returncode == 2
    (workspace / "DREAMS.md").unlink()
    write(workspace / "Dreams.md", "# Dreams by hand\n")
    listed = cli("files", "--json").json()
    assert "Dreams.md" not in [f["path"] for f in listed["files"]]
    (skipped,) = [s for s in listed["skipped"] if s["path"] == "Dreams.md"]
    assert "DREAMS.md" in skipped["reason"], skipped
    assert cli("read", "Dreams.md").stdout.startswith("# Dreams by hand")
    assert cli("mv", "Dreams.md", "DREAMS.md").returncode == 0
    assert [f["path"] for f in cli("files", "--json").json()["files"]] == ["DREAMS.md"]


def _drop_file_access_override() -> None:
    """In the child, before exec: root loses CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, so a
    mode-000 file is unreadable to it as to anyone (capabilities outside the bounding set
    are not granted at exec)."""
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


@pytest.fixture
def unreadable_memory(tmp_path):
    ws, state = tmp_path / "ws", tmp_path / "state"
    write(ws / "MEMORY.md", "# Memory\nsecret root\n")
    write(ws / "memory/open.md", "# Open\n")
    write(ws / "memory/locked.md", "# Locked\n")
    state.mkdir()
    os.chmod(ws / "MEMORY.md", 0)
    os.chmod(ws / "memory/locked.md", 0)
    drop = _drop_file_access_override if os.geteuid() == 0 else None
    if drop is not None:
        probe = subprocess.run(["cat", str(ws / "MEMORY.md")], preexec_fn=drop, capture_output=True)
        if probe.returncode == 0:
            pytest.skip("cannot make a file unreadable here (root keeps its file-access override)")

    def cli(*args):
        # A real process: the capability drop happens between fork and exec.
        proc = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], capture_output=True, text=True,
                              env=env_for(ws, state), cwd=ws, timeout=120, preexec_fn=drop)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return cli


def test_prompt_warns_about_an_unreadable_memory_file(unreadable_memory):
    res = no_traceback(unreadable_memory("prompt", "--json"))
    assert res.returncode == 0
    assert "MEMORY.md" in res.stderr and "cannot read" in res.stderr
    assert any("MEMORY.md" in w and "cannot read" in w for w in res.json()["warnings"])


def test_state_reports_an_unreadable_note_instead_of_dropping_it(unreadable_memory):
    res = no_traceback(unreadable_memory("state", "--json"))
    assert res.returncode == 0
    unreadable = {u["path"] for u in res.json()["unreadable"]}
    assert unreadable == {"MEMORY.md", "memory/locked.md"}
    assert {f["path"] for f in res.json()["files"]} == {"memory/open.md"}
    assert "memory/locked.md" in res.stderr


# -- bad input --------------------------------------------------------------------------------

def _socket(ws: Path) -> None:
    # Bound through the folder's descriptor: a socket's path is limited to 108 bytes, which a
    # pytest folder under a long TMPDIR passes (the product reaches its own socket the same way).
    fd = os.open(ws / "memory", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(f"/proc/self/fd/{fd}/sock.md")
    finally:
        os.close(fd)


def _non_utf8_name(ws: Path) -> None:
    (ws / "memory").mkdir(exist_ok=True)
    with open(os.fsencode(ws / "memory") + b"/caf\xe9.md", "wb") as fh:
        fh.write(b"# latin-1 name\n")


def _deep_json(state: Path) -> None:
    write(state / "openclaw.json", "[" * 100_000 + "]" * 100_000)


def _fifo_toml(state: Path) -> None:
    os.mkfifo(state / "openclaw-memory.toml")


LONG = "memory/" + "a/" * 2100 + "x.md"

# (id, setup(ws, state) or None, argv, acceptable exit codes, words the message must hold)
BAD_INPUTS = [
    ("max-chars-huge", None, ["read", "MEMORY.md", "--max-chars", "99999999999999999999999"], {0}, ""),
    ("max-chars-huge-toml", lambda ws, st: write(st / "openclaw-memory.toml", "[read]\nmax_chars = 99999999999999999999999\n"),
     ["read", "MEMORY.md"], {0}, ""),
    ("from-huge", None, ["read", "MEMORY.md", "--from", "99999999999999999999999"], {2},
     "--from must be a positive integer (at most 9007199254740991)"),
    ("prompt-date-min", None, ["prompt", "--date", "0001-01-01"], {0}, ""),
    ("prompt-date-max", None, ["prompt", "--date", "9999-12-31"], {0}, ""),
    ("socket-read", lambda ws, st: _socket(ws), ["read", "memory/sock.md"], {2}, "not a regular file"),
    ("socket-history", lambda ws, st: _socket(ws), ["history", "memory/sock.md"], {2}, "not a regular file"),
    ("socket-write", lambda ws, st: _socket(ws), ["write", "memory/sock.md", "--append", "x"], {2}, "not a regular file"),
    ("non-utf8-name-state", lambda ws, st: _non_utf8_name(ws), ["state", "--json"], {0}, ""),
    ("non-utf8-name-files", lambda ws, st: _non_utf8_name(ws), ["files", "--json"], {0}, ""),
    ("non-utf8-name-prompt", lambda ws, st: _non_utf8_name(ws), ["prompt"], {0}, ""),
    ("path-too-long-write", None, ["write", LONG, "--append", "x"], {2}, "longer than the system allows"),
    ("path-too-long-read", None, ["read", LONG], {2}, "longer than the system allows"),
    ("name-too-long", None, ["read", "memory/" + "n" * 300 + ".md"], {2}, "too long"),
    ("openclaw-json-deep", lambda ws, st: _deep_json(st), ["files"], {2}, "nested too deeply"),
    ("toml-read-not-a-table", lambda ws, st: write(st / "openclaw-memory.toml", "read = 5\n"), ["read", "MEMORY.md"], {2}, "read must be a table"),
    ("toml-fifo", lambda ws, st: _fifo_toml(st), ["files"], {2}, "not a regular file"),
    ("toml-workspace-int", lambda ws, st: write(st / "openclaw-memory.toml", "workspace = 5\n"), ["files"], {2}, "workspace must be a string"),
    ("toml-multimodal-maybe", lambda ws, st: write(st / "openclaw-memory.toml", 'multimodal = "maybe"\n'), ["files"], {2}, "multimodal must be true or false"),
    ("toml-extra-paths-string", lambda ws, st: write(st / "openclaw-memory.toml", 'extra_paths = "x"\n'), ["files"], {2}, "extra_paths must be a list of strings"),
    ("toml-history-keep-string", lambda ws, st: write(st / "openclaw-memory.toml", '[history]\nkeep_per_path = "ten"\n'), ["history", "MEMORY.md"], {2}, "keep_per_path"),
    ("toml-watchdog-keep-float", lambda ws, st: write(st / "openclaw-memory.toml", "[watchdog]\nkeep = 1.5\n"), ["watchdog", "snapshot"], {2}, "keep"),
    ("toml-index-chunk-string", lambda ws, st: write(st / "openclaw-memory.toml", '[index]\nchunk_tokens = "many"\n'), ["search", "anything", "--mode", "text"], {1, 2}, "chunk_tokens"),
    ("json-agents-list", lambda ws, st: write(st / "openclaw.json", '{"agents": []}'), ["files"], {2}, "agents must be an object"),
    ("json-extra-paths-number", lambda ws, st: write(st / "openclaw.json", '{"agents": {"defaults": {"memorySearch": {"extraPaths": 5}}}}'),
     ["files"], {2}, "extraPaths"),
]


@pytest.mark.parametrize("setup, argv, codes, words", [b[1:] for b in BAD_INPUTS], ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_gets_a_message_never_a_traceback(cli, workspace, state_dir, setup, argv, codes, words):
    write(workspace / "MEMORY.md", "# Memory\n")
    (workspace / "memory").mkdir(exist_ok=True)
    if setup is not None:
        setup(workspace, state_dir)
    res = no_traceback(cli(*argv, timeout=60))
    assert res.returncode in codes, (res.returncode, res.stderr)
    assert words in res.stderr + res.stdout
    if argv[0] == "state" and res.returncode == 0:
        paths = {f["path"] for f in json.loads(res.stdout)["files"]}
        assert "MEMORY.md" in paths and any(p.startswith("memory/caf") for p in paths)


# -- state dir read-only -------------------------------------------------------------------------

def test_a_read_only_state_dir_still_reads_and_says_what_it_cannot_record(tmp_path):
    """The state dir on media remounted read-only (a full disk's usual end, a read-only backup)."""
    ws = tmp_path / "ws"
    write(ws / "MEMORY.md", "# Memory\n")
    with tmpfs(tmp_path / "ro-state", "4m") as mount:
        state = mount / "state"
        assert run_cli(ws, state, "read", "MEMORY.md").returncode == 0
        write(ws / "MEMORY.md", "# Memory\n- edited meanwhile\n")
        forget_connections()  # the commands ran in this process: its open database would keep the mount busy
        remounted = subprocess.run(["mount", "-o", "remount,ro", str(mount)], capture_output=True, text=True)
        if remounted.returncode != 0:
            pytest.skip(f"cannot remount the tmpfs read-only: {remounted.stderr.strip()}")
        read = no_traceback(run_cli(ws, state, "read", "MEMORY.md"))
        assert read.returncode == 0 and "edited meanwhile" in read.stdout and "not recorded" in read.stderr
        listed = no_traceback(run_cli(ws, state, "state"))
        assert listed.returncode == 0 and "read_stale" in listed.stdout and "not recorded" in listed.stderr
        history = no_traceback(run_cli(ws, state, "history", "MEMORY.md"))
        assert history.returncode == 0 and "not recorded" in history.stderr
        blocked = no_traceback(run_cli(ws, state, "write", "MEMORY.md", "--append", "- more"))
        assert blocked.returncode == 2 and "a read-only file system: remount it read-write" in blocked.stderr
        assert (ws / "MEMORY.md").read_text() == "# Memory\n- edited meanwhile\n"
        # doctor names what the write met, once, in its words (it said "No problems found." before a4bc590)
        doctor = no_traceback(run_cli(ws, state, "doctor", "--json"))
        assert doctor.returncode == 1
        assert [f["id"] for f in json.loads(doctor.stdout)["findings"]] == ["state-dir-not-writable"]
