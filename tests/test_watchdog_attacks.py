"""The watchdog against what a stranger does to a workspace between a snapshot and a verify:
the cases a sweep of odd edits, odd ignore files and odd names found wrong."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

import pathspec
import pytest
import xxhash

from conftest import settings_for, write
from openclaw_memory.watchdog.heartbeat import heartbeat
from openclaw_memory.watchdog.ignore import IgnoreRules, compile_rules
from openclaw_memory.watchdog.snapshot import take_snapshot
from openclaw_memory.watchdog.store import SnapshotStore
from openclaw_memory.watchdog.verify import verify_workspace


@pytest.fixture
def settings(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    return settings_for(workspace, state_dir)


# --- ignore files as editors save them --------------------------------------------------------


def test_a_byte_order_mark_at_the_start_of_the_ignore_file_is_not_part_of_the_first_pattern(settings, workspace):
    # Notepad saves UTF-8 with a BOM; git skips it, so "*.bak" on the first line still ignores.
    (workspace / ".openclaw-memoryignore").write_bytes(b"\xef\xbb\xbf*.bak\r\nbuild/\r\n")
    write(workspace / "old.bak", "b\n")
    write(workspace / "build" / "out.md", "o\n")
    write(workspace / "keep.md", "k\n")
    recorded = set(SnapshotStore(settings.data_dir).load(take_snapshot(settings).label).paths)
    assert recorded == {"MEMORY.md", "keep.md", ".openclaw-memoryignore"}


def _recorded_and_git(settings, workspace: Path, rules: str | bytes, files) -> tuple[set[str], set[str]]:
    """``rules`` as both ignore files, ``files`` made: what a snapshot records, and what git does not
    ignore (``git ls-files --others --exclude-standard``), the .gitignore itself left out of both."""
    for name in (".gitignore", ".openclaw-memoryignore"):
        (workspace / name).write_bytes(rules if isinstance(rules, bytes) else rules.encode())
    for rel in files:
        write(workspace / rel, "x\n")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    listed = subprocess.run(["git", "-C", str(workspace), "ls-files", "-z", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode()
    recorded = set(SnapshotStore(settings.data_dir).load(take_snapshot(settings).label).paths)
    return recorded - {".gitignore"}, {p for p in listed.split("\0") if p} - {".gitignore"}


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_ignore_file_ignores_what_git_ignores_with_the_same_lines(settings, workspace):
    """The same bytes as .gitignore: the files the watchdog records are those git does not ignore
    (a BOM, CRLF, trailing spaces, negations, ``**``, anchors, escapes)."""
    rules = (b"\xef\xbb\xbf*.txt\r\n!keep.txt\r\nfoo  \r\nbar\\ \r\n**/deep/**\r\n!**/deep/x.md\r\n/top.md\r\n"
             b"\\#hash\r\nlogs/*\r\n!logs/keep.md\r\nl/**\r\n!l/keep.md\r\n!l/sub/\r\n!l/sub/keep.md\r\n"
             b"tmp/\r\n!notes\r\n")  # a negated name re-included a folder below one of that name (notes/tmp/)
    recorded, git_keeps = _recorded_and_git(settings, workspace, rules, (
        "a.txt", "keep.txt", "d/b.txt", "foo", "foo  ", "bar ", "bar", "d/deep/y.md", "d/deep/x.md", "top.md", "d/top.md",
        "#hash", "logs/keep.md", "logs/other.md", "plain.md", "l/keep.md", "l/o.md", "l/sub/keep.md", "l/sub/o.md",
        "notes/tmp/x.md", "notes/x.md", "tmp/y.md"))
    assert recorded == git_keeps


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_an_ignore_file_splits_its_lines_at_line_feeds_only_as_git_does(settings, workspace):
    """It was read with str.splitlines(), which also ends a line at a lone CR (an old Mac save), a
    form feed, \\x1c-\\x1e, NEL and U+2028/9: "*.bak<CR>MEMORY.md" left MEMORY.md out of every
    snapshot, so a change to it was never reported, where git ignores nothing by that line."""
    rules = "old.bak\rMEMORY.md\rnotes.md\x0cplan.md\nx\x1cy.md\nfa\u2028fb.md\nlast.md\r".encode()
    recorded, git_keeps = _recorded_and_git(settings, workspace, rules, (
        "old.bak", "notes.md", "plan.md", "x", "y.md", "fa", "fb.md", "last.md", "memory/day.md"))
    assert "MEMORY.md" in recorded and "last.md" not in recorded  # a trailing CR is a line end's, as in git
    assert recorded == git_keeps


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@pytest.mark.parametrize("rules", ["*\n", "**\n", "*/\n", "**/\n", "*/\n!d/\n", "**\n!MEMORY.md\n", "!\nd/\n!  \n"])
def test_a_pattern_of_stars_alone_leaves_out_what_git_does(settings, workspace, rules):
    """pathspec compiles "*" and "**" to ".", which was kept to folders (the files at the top stayed
    watched), and "*/" and "**/" to the bare folder ending, which matched no folder at all; a "!"
    alone, which git passes over, refused the whole file ("not a valid gitignore pattern")."""
    recorded, git_keeps = _recorded_and_git(settings, workspace, rules, ("top.md", "d/a.md", "d/e/f.md", "x/y.md"))
    assert recorded == git_keeps


# --- a long ignore file -----------------------------------------------------------------------


def _long_patterns(count: int) -> list[str]:
    """``count`` patterns, every third a negation (so verdicts alternate along the file)."""
    return [f"!n{i}.md" if i % 3 == 0 else f"d{i}/**/f{i}_*.md" for i in range(count)]


def test_the_compiled_rules_hold_no_capturing_group():
    # ``re`` saves and restores every group's marks at each alternative it tries: one group per
    # pattern made each match cost the square of the pattern count (a 1 MiB ignore file of
    # 47,000 patterns: 4 minutes for a snapshot of 200 files; 8 s now, its compilation).
    rules = compile_rules(_long_patterns(300) + ["*.bak", "docs/*.md", "x*.md"])
    plain = compile_rules(["*.bak", "docs/*.md", "x*.md", "build/"])
    expressions = [
        value for r in (rules, plain) for f in dataclasses.fields(IgnoreRules)
        for value in _patterns_in(getattr(r, f.name))
    ]
    assert expressions, "the rules compile to regular expressions"
    assert [e.pattern[:60] for e in expressions if e.groups] == []


def _patterns_in(value) -> list[re.Pattern[str]]:
    if isinstance(value, re.Pattern):
        return [value]
    if isinstance(value, tuple):
        return [p for item in value for p in _patterns_in(item)]
    return []


def test_a_long_ignore_file_with_alternating_negations_decides_as_pathspec():
    patterns = _long_patterns(600) + ["*.md", "!keep*.md", "keep9.md", "build/", "!build/"]
    rules = compile_rules(patterns)
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    paths = ["a.md", "keep1.md", "keep9.md", "n3.md", "x/n3.md", "n4.md", "d4/q/f4_z.md", "d3/q/f3_z.md",
             "d598/f598_.md", "d599/f599_.md", "build/x.txt", "plain.txt", "n0.md"]
    for p in paths:
        assert rules.ignores_file(p, p.rpartition("/")[2]) == spec.match_file(p), p
    assert rules.ignores_dir("build/") is False  # "!build/" is newest


# --- a damaged snapshot -----------------------------------------------------------------------


@pytest.mark.parametrize("damage, status", [
    # the same bytes, stored as text (a restore through a tool that typed the column): still sound
    ("CAST(body AS TEXT)", 0),
    # text, and its bytes changed (an edit in the sqlite3 shell)
    ("CAST(substr(body, 1, length(body) - 8) AS TEXT) || 'garbage!'", 2),
])
def test_a_snapshot_body_made_text_is_read_by_its_checksum(settings, workspace, cli, damage, status):
    import sqlite3

    write(workspace / "notes.txt", "n\n")
    assert cli("watchdog", "snapshot", "first").returncode == 0
    assert cli("watchdog", "snapshot", "second").returncode == 0
    with sqlite3.connect(SnapshotStore(settings.data_dir).path) as conn:
        conn.execute(f"UPDATE snapshots SET body = {damage} WHERE label = 'second'")
        assert conn.execute("SELECT typeof(body) FROM snapshots WHERE label = 'second'").fetchone() == ("text",)
    result = cli("watchdog", "verify", "--json")
    assert result.returncode == status, result
    if status:
        error = result.json()["error"]
        assert "snapshot 'second'" in error and "is damaged (checksum mismatch)" in error and "doctor --fix" in error
        assert "garbage" not in error and len(result.stderr.splitlines()) == 1
        assert cli("doctor", "--fix").returncode == 0
        assert cli("watchdog", "verify", "--json").json()["baseline"] == "first"


# --- names a stranger chose -------------------------------------------------------------------


def test_doctor_shows_a_name_with_a_newline_or_a_terminal_escape_on_one_line(settings, workspace, cli):
    """Anyone who can write in the workspace names files: a newline in a name forged a line of doctor's
    report ("- deleted: MEMORY.md" while MEMORY.md is there) and an escape sequence reached the terminal."""
    assert cli("watchdog", "snapshot").returncode == 0
    write(workspace / "memory" / "x\n- deleted: MEMORY.md", "forged\n")
    write(workspace / "memory" / "clear\x1b[2Jscreen.md", "escape\n")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    result = cli("doctor")
    out = result.stdout + result.stderr
    assert "\x1b" not in out
    assert "- deleted: MEMORY.md" not in out.splitlines()
    assert "- new: memory/x\\x0a- deleted: MEMORY.md" in out.splitlines()
    assert "- new: memory/clear\\x1b[2Jscreen.md" in out.splitlines()
    if shutil.which("git"):  # the git check names them too (untracked memory files)
        assert "- untracked: memory/clear\\x1b[2Jscreen.md" in out.splitlines()
    findings = {f["id"]: f for f in cli("doctor", "--json").json()["findings"]}
    assert "memory/x\\x0a- deleted: MEMORY.md" in findings["watchdog-changes"]["paths"]


# --- huge sparse files ------------------------------------------------------------------------


def _bytes_read() -> int:
    with open("/proc/self/io") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("rchar:"))


def _zeros(digest, count: int) -> None:
    block = bytes(1 << 20)
    while count:
        step = min(count, len(block))
        digest.update(block[:step])
        count -= step


def test_a_sparse_file_where_the_file_system_cannot_tell_its_holes_is_hashed_and_copied_whole(tmp_path, monkeypatch):
    """A file system without SEEK_DATA/SEEK_HOLE (EINVAL: some network and FUSE ones) cannot say
    where the holes are: the hash reads every byte and the copy copies them. The hash re-raised,
    and the file was called unreadable. (The errno is injected: no such file system here.)"""
    import errno

    from openclaw_memory.fsutil import hashing, sparse

    sparse_file = tmp_path / "disk.img"
    with open(sparse_file, "wb") as fh:
        fh.write(b"header")
        fh.truncate(4 << 20)
        fh.seek(2 << 20)
        fh.write(b"middle")
    whole = sparse_file.read_bytes()
    real_lseek = os.lseek

    def no_holes(fd, pos, how):
        if how in (os.SEEK_DATA, os.SEEK_HOLE):
            raise OSError(errno.EINVAL, "Invalid argument")
        return real_lseek(fd, pos, how)

    monkeypatch.setattr(os, "lseek", no_holes)
    monkeypatch.setattr(os, "fstat", lambda fd, real=os.fstat: _looks_sparse(real(fd)))
    assert hashing.hash_file(sparse_file) == xxhash.xxh3_128_hexdigest(whole)
    sparse.copy_sparse(str(sparse_file), str(tmp_path / "copy.img"))
    assert (tmp_path / "copy.img").read_bytes() == whole


def _looks_sparse(st: os.stat_result) -> os.stat_result:
    """``st`` with no blocks allocated, so the hash takes its holes' path whatever this file system keeps."""
    fields = list(st)
    return os.stat_result((*fields[:10],), {"st_blocks": 0, "st_blksize": st.st_blksize, "st_rdev": st.st_rdev,
                                             "st_atime_ns": st.st_atime_ns, "st_mtime_ns": st.st_mtime_ns,
                                             "st_ctime_ns": st.st_ctime_ns})


@pytest.mark.skipif(not os.path.exists("/proc/self/io"), reason="counts reads through /proc/self/io (Linux)")
def test_a_sparse_file_is_hashed_without_reading_its_holes(settings, workspace):
    """A 4 GiB sparse file (a VM image, a database preallocated) was read whole, the kernel making
    4 GiB of zeros: a snapshot took a minute on 8 GiB. Counted in bytes read, not timed."""
    big = workspace / "disk.img"
    with open(big, "wb") as fh:
        fh.write(b"header")
        fh.seek(3 << 30)
        fh.write(b"data in the middle" * 100)
        fh.truncate(4 << 30)
    if big.stat().st_blocks * 512 > 1 << 20:
        pytest.skip("this file system does not keep holes")
    before = _bytes_read()
    info = take_snapshot(settings)
    assert _bytes_read() - before < 64 << 20, "the holes were read"
    table = SnapshotStore(settings.data_dir).load(info.label)
    digest = xxhash.xxh3_128(b"header")  # the digest is that of every byte, the holes' zeros included
    middle = b"data in the middle" * 100
    _zeros(digest, (3 << 30) - len(b"header"))
    digest.update(middle)
    _zeros(digest, (1 << 30) - len(middle))
    assert table.digest(table.index["disk.img"]) == digest.digest()
    # an edit inside a hole is a change, and verify reads no more than the data either
    with open(big, "r+b") as fh:
        fh.seek(1 << 30)
        fh.write(b"x")
    before = _bytes_read()
    assert [c.path for c in verify_workspace(settings).changed] == ["disk.img"]
    assert _bytes_read() - before < 64 << 20


# --- where the state is kept ------------------------------------------------------------------


def test_a_state_dir_that_is_the_workspace_leaves_out_only_this_products_folder(workspace):
    """``--state-dir`` the workspace itself: the state database the watchdog writes was recorded, so
    every verify reported it changed (exit 1 forever, every heartbeat a break)."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "openclaw.json", "{}\n")  # OpenClaw's own file in its state dir: watched
    settings = settings_for(workspace, workspace)
    assert heartbeat(settings).status == "HEARTBEAT_OK"
    again = heartbeat(settings)
    assert again.status == "HEARTBEAT_OK", again.verify
    assert again.verify is not None and again.verify.entries == 2
    write(workspace / "openclaw.json", '{"changed": true}\n')
    assert [c.path for c in verify_workspace(settings).changed] == ["openclaw.json"]


@pytest.mark.parametrize("command", ["verify", "heartbeat"])
def test_a_damaged_state_database_is_no_baseline_never_a_break(settings, workspace, cli_process, command):
    """Exit 1 of verify and heartbeat says files changed: a state database whose header was zeroed
    said it too (every command's exit 1 for a damaged database)."""
    assert cli_process("watchdog", "snapshot").returncode == 0  # its own process: closed, the WAL copied in
    with open(SnapshotStore(settings.data_dir).path, "r+b") as fh:
        fh.write(bytes(100))
    result = cli_process("watchdog", command, "--json")
    assert result.returncode == 2, result
    assert "is damaged" in result.json()["error"] and "doctor --fix" in result.json()["error"]
    assert len(result.stderr.splitlines()) == 1


def test_verify_without_a_baseline_creates_nothing(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    result = cli("watchdog", "verify", "--json")
    assert result.returncode == 2 and "no watchdog baseline" in result.json()["error"]
    assert list(state_dir.iterdir()) == []  # no folder, no state database: verify writes nothing
    assert cli("watchdog", "snapshot").returncode == 0  # the control: a snapshot does make them
    assert list(state_dir.iterdir()) != []


@pytest.mark.parametrize("make", [
    lambda p: p.symlink_to("/dev/zero"),
    lambda p: os.mkfifo(p),
    lambda p: p.write_bytes(b"*.bak\nnotes\\\n"),
    lambda p: p.write_bytes(b"#" * (2 << 20)),
], ids=["symlink", "fifo", "bad-line", "too-large"])
def test_an_unusable_ignore_file_does_not_silence_the_heartbeat(settings, workspace, cli, make):
    """Anyone who can write in the workspace could leave an ignore file the snapshot refuses: every
    heartbeat then exited 2 and the next session never learned that MEMORY.md was edited."""
    (workspace / ".openclaw-memoryignore").write_text("*.bak\n")
    assert cli("watchdog", "heartbeat").returncode == 0
    (workspace / ".openclaw-memoryignore").unlink()
    make(workspace / ".openclaw-memoryignore")
    write(workspace / "MEMORY.md", "# Memory, edited behind the agent's back\n")
    write(workspace / "old.bak", "still ignored\n")
    result = cli("watchdog", "heartbeat", "--json")
    assert result.returncode == 1, result
    beat = result.json()
    assert beat["status"] == "BREAK" and beat["checkpoint"]
    assert [c["path"] for c in beat["verify"]["changed"]] == [".openclaw-memoryignore", "MEMORY.md"]
    assert beat["verify"]["new"] == []  # the baseline's rules: *.bak is still ignored
    assert "the baseline's ignore rules stay in force" in result.stderr
    assert "Workspace Changes Detected" in cli("prompt").stdout
    assert cli("watchdog", "snapshot").returncode == 2  # asked for explicitly: refused, as before


def test_a_pattern_of_many_stars_matches_without_backtracking(settings, workspace, cli_process):
    """One ignore line anyone could write, "a/**/x/**/x/.../b", and a path 40 folders deep: re tried
    every way of sharing the folders among the **s (8 of them: 6.5 s a path; 30: never done), so the
    snapshot hung; "*a*a*a*a*a*b" and a name of 250 a's likewise. Its own process, so a hang fails
    the test instead of stopping the suite."""
    (workspace / ".openclaw-memoryignore").write_text("a/" + "**/x/" * 30 + "b\n" + "*a" * 20 + "*b\n!keep\n")
    deep = workspace / "a" / Path(*["x"] * 40)
    write(deep / "c.md", "c\n")
    write(deep / "b", "ignored\n")
    write(workspace / ("a" * 250), "not ignored: no b at its end\n")
    write(workspace / ("a" * 240 + "b"), "ignored\n")
    try:
        result = cli_process("watchdog", "snapshot", "--json", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the snapshot kept matching one ignore pattern")
    assert result.returncode == 0, result
    recorded = set(SnapshotStore(settings.data_dir).load(result.json()["label"]).paths)
    folders = "a/" + "x/" * 40
    assert folders + "c.md" in recorded and folders + "b" not in recorded  # 30 of its 40 x's, then b: ignored
    assert "a" * 250 in recorded and "a" * 240 + "b" not in recorded


def test_stars_matched_once_decide_as_the_backtracking_expression():
    """The rewrite changes the cost, never the answer: random patterns of one to four ``**`` parts,
    their names with several ``*``, against random paths, files and folders, as pathspec's own
    expression decides them."""
    import random

    from openclaw_memory.watchdog.ignore import _PATHSPEC_GROUP, _translate, _without_backtracking

    rnd = random.Random(7)
    parts = ["x", "y", "x*", "*y", "?", "[xy]", "z", "*x*", "x*y*z", "*x*x*y", "?*x", "*?*", "*x?y*"]
    names = ["x", "y", "xy", "yx", "z", "xx", "q", "xxy", "yxy", "xyz", "xxxy", "xqyz"]
    compared = 0
    for _ in range(600):
        segments = ["/".join(rnd.choice(parts) for _ in range(rnd.randint(1, 2))) for _ in range(rnd.randint(1, 4))]
        pattern = ("**/" if rnd.random() < 0.3 else "") + "/**/".join(segments) + ("/**" if rnd.random() < 0.2 else "")
        regex = _translate(pattern)[1]
        assert regex is not None
        body = _PATHSPEC_GROUP.sub("(?:", regex)
        slow, fast = re.compile(body), re.compile(_without_backtracking(body))
        for _ in range(10):
            path = "/".join(rnd.choice(names) for _ in range(rnd.randint(1, 9)))
            for p in (path, path + "/"):
                assert (slow.match(p) is None) == (fast.match(p) is None), (pattern, p)
                compared += 1
    assert compared == 12000


def test_a_damaged_row_with_a_damaged_label_is_set_aside_inside_damaged(settings, workspace, state_dir, cli):
    """A row damaged in its label too ("../" in it) was written where the label led, outside the
    state dir's damaged/ folder, when doctor --fix set it aside."""
    import sqlite3

    assert cli("watchdog", "snapshot", "first").returncode == 0
    assert cli("watchdog", "snapshot", "second").returncode == 0
    escape = "../" * 6 + "outside"
    with sqlite3.connect(SnapshotStore(settings.data_dir).path) as conn:
        conn.execute("UPDATE snapshots SET label = ?, body = CAST('garbage' AS BLOB) WHERE label = 'second'", (escape,))
    assert cli("doctor", "--fix").returncode == 0
    kept = list((settings.data_dir / "damaged").rglob("*.snap"))
    assert [p.read_bytes() for p in kept] == [b"garbage"]  # set aside, byte for byte, inside damaged/
    assert not list(state_dir.parent.rglob("outside.snap"))
    assert cli("watchdog", "verify", "--json").json()["baseline"] == "first"
