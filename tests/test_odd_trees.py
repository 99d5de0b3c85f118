"""Trees a person or a tool can make that no scan should trip on: symlink loops of any name, and a
chain of folders deeper than Python's recursion limit. Every command that scans the workspace
answers; a loop is listed as a skipped symlink, the deep file as memory. The open-file limit is the
caller's, not raised for the chain: the walk holds a bounded number of folder descriptors (2166f33;
at 1024 the deep note was skipped, 'Too many open files')."""

from __future__ import annotations

import os

import pytest

from conftest import write

DEPTH = 1100  # past sys.getrecursionlimit() (1000)
SCANNING = [["files", "--json"], ["index", "--json"], ["search", "walrus", "--json"], ["status", "--json"],
            ["state", "--json"], ["prompt", "--json"], ["doctor", "--json"]]


def _deep_chain(folder, depth: int) -> str:
    """``folder/d/d/.../d`` made one level at a time (os.makedirs itself recurses)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
        with open(os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as out:
            out.write("# Deep\n\nA note about a walrus at the bottom of the tree.\n")
    finally:
        os.close(fd)
    return "memory/" + "d/" * depth + "deep.md"


def _remove_chain(folder, depth: int) -> None:
    """Bottom up, one level at a time: pytest's own clean-up of old temp folders recurses."""
    path = os.path.join(folder, *["d"] * depth)
    os.unlink(os.path.join(path, "deep.md"))
    for _ in range(depth):
        os.rmdir(path)
        path = os.path.dirname(path)


@pytest.fixture
def odd_tree(workspace):
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    write(workspace / "memory" / "a.md", "# A\n\nA plain note.\n")
    (workspace / "memory" / "sub").mkdir()
    os.symlink("self", workspace / "memory" / "sub" / "self")  # a loop of one, no .md name
    os.symlink("b", workspace / "memory" / "a2")  # a -> b -> a
    os.symlink("a2", workspace / "memory" / "b")
    yield _deep_chain(workspace / "memory", DEPTH)
    _remove_chain(workspace / "memory", DEPTH)


@pytest.mark.parametrize("args", SCANNING, ids=lambda a: a[0])
def test_every_scanning_command_answers(cli, odd_tree, args):
    if args[0] == "search":
        assert cli("index").returncode == 0
    res = cli(*args)
    assert res.returncode in (0, 1), res.stderr  # doctor: 1 = problems found (the symlinks)
    assert "Traceback" not in res.stderr and "Too many levels" not in res.stdout + res.stderr
    assert "RecursionError" not in res.stderr


def test_loops_are_skipped_symlinks_and_the_deep_note_is_memory(cli, odd_tree):
    data = cli("files", "--json").json()
    assert {f["path"] for f in data["files"]} == {"MEMORY.md", "memory/a.md", odd_tree}
    skipped = {s["path"]: s["reason"] for s in data["skipped"]}
    assert skipped == {p: "symlink (ignored)" for p in ("memory/a2", "memory/b", "memory/sub/self")}
    assert cli("index").returncode == 0
    found = cli("search", "walrus at the bottom", "--json").json()["results"]
    assert found and found[0]["path"] == odd_tree
    assert cli("read", odd_tree, "--json").json()["text"].startswith("# Deep")


def test_a_listed_file_with_a_name_of_255_bytes_can_be_written(cli, workspace):
    name = "n" * 252 + ".md"  # NAME_MAX: the temp file beside it must still fit
    note = write(workspace / "memory" / name, "# Long\n\nfirst line\n")
    assert f"memory/{name}" in {f["path"] for f in cli("files", "--json").json()["files"]}
    assert cli("read", f"memory/{name}").returncode == 0
    done = cli("write", f"memory/{name}", "--append", "second line", "--json")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "# Long\n\nfirst line\nsecond line\n"
    assert [p.name for p in note.parent.iterdir()] == [name]  # no temp file left beside it
    assert cli("write", f"memory/{name}", "--replace-file", str(note), "--json").returncode == 0


def test_a_file_name_that_is_not_utf8_works_in_every_command(cli, workspace):
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    raw = os.path.join(os.fsencode(workspace), b"memory", b"bad\xff\xfe.md")
    os.makedirs(os.path.dirname(raw))
    with open(raw, "wb") as out:
        out.write(b"# Odd\n\nA note with an odd name.\n")
    name = os.fsdecode(b"memory/bad\xff\xfe.md")  # as a process gets it in argv
    indexed = cli("index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert "not indexed: memory/bad\\xff\\xfe.md (its name is not UTF-8: rename it)" in indexed.stderr
    for args in (["state", "--json"], ["status", "--json"], ["doctor", "--fix", "--json"], ["search", "green tea"],
                 ["files"], ["prompt"]):
        res = cli(*args)
        assert res.returncode == (1 if args[0] == "doctor" else 0), (args, res.stderr)
        assert "Traceback" not in res.stderr
    # The left-out file is not a stale index (nothing --fix could do): it is named, for the user to rename.
    assert [f["id"] for f in cli("doctor", "--json").json()["remaining"]] == ["index-left-out"]
    assert cli("read", name).returncode == 0
    first = cli("write", name, "--append", "one more line", "--json")
    again = cli("write", name, "--append", "one more line", "--json")  # a retry
    assert first.returncode == 0 and again.returncode == 0, first.stderr + again.stderr
    assert again.json()["replayed"] is True
    with open(raw, "rb") as back:
        assert back.read() == b"# Odd\n\nA note with an odd name.\none more line\n"


def test_a_file_over_the_index_limit_is_named_and_left_out_and_the_rest_indexed(cli, workspace):
    from openclaw_memory.index.collections import MAX_INDEXED_BYTES

    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    line = b"- a line of a huge log that nobody split\n"
    huge = workspace / "memory" / "huge.md"
    huge.parent.mkdir()
    with open(huge, "wb") as out:
        for _ in range(MAX_INDEXED_BYTES // len(line) + 1):
            out.write(line)
    indexed = cli("index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert "not indexed: memory/huge.md (16.0 MiB, over the 16 MiB an indexed file may have: split it)" in indexed.stderr
    assert indexed.json()["filesScanned"] == 1
    assert [f["id"] for f in cli("doctor", "--json").json()["remaining"]] == ["index-left-out"]  # not a stale index
    assert cli("read", "memory/huge.md", "--lines", "1", "--json").json()["text"].startswith(line.decode())
    assert cli("search", "green tea", "--json").json()["results"][0]["path"] == "MEMORY.md"


def test_a_name_with_a_backslash_is_left_out_of_the_index_and_named(cli, workspace):
    # `read` and `memory_get` refuse a path with a backslash (OpenClaw reads another name than it
    # checks): indexed, its search results were citations that no read could give back.
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    write(workspace / "memory" / "plain.md", "# Plain\n\nThe heron nests by the weir.\n")
    write(workspace / "memory" / "a\\b.md", "# Slashed\n\nThe heron was ringed in May.\n")
    indexed = cli("index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert "not indexed: memory/a\\b.md (its name has a backslash, which no memory path may hold: rename it)" in indexed.stderr
    found = cli("search", "heron ringed", "--mode", "text", "--json", "--min-score", "0")
    assert [r["path"] for r in found.json()["results"]] == ["memory/plain.md"]
    for r in found.json()["results"]:
        assert cli("read", r["citation"]).returncode == 0
    assert "stalePaths" not in found.json()  # left out, not stale
    # status and doctor name it too: a note search never finds was said only by the `index` run.
    why = "its name has a backslash, which no memory path may hold: rename it"
    assert cli("status", "--json").json()["leftOut"] == [{"path": "memory/a\\b.md", "reason": why}]
    findings = cli("doctor", "--json").json()["findings"]
    assert [(f["id"], f["severity"], f["fixable"], f["paths"]) for f in findings] == [
        ("index-left-out", "warning", False, ["memory/a\\b.md"])], findings
    assert f"memory/a\\b.md ({why})" in findings[0]["message"]


def test_a_note_whose_path_is_past_the_systems_limit_is_left_out_of_the_index_and_named(cli, workspace):
    """The scan reaches it one folder at a time, but no command takes a path that long: search cited
    it, and `read` and `rm` of the citation were refused ("longer than the system allows"), while doctor
    said nothing."""
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    write(workspace / "memory" / "plain.md", "# Plain\n\nThe walrus sleeps on the ice.\n")
    fd = os.open(workspace / "memory", os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(18):  # each folder made and entered from its parent's descriptor
            name = f"{i:0250d}"
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        note = os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(note, b"# Deep\n\nThe walrus dives deep.\n")
        os.close(note)
    finally:
        os.close(fd)
    indexed = cli("index", "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert "its path is longer than the system allows" in indexed.stderr
    found = cli("search", "walrus", "--mode", "text", "--json", "--min-score", "0")
    assert [r["path"] for r in found.json()["results"]] == ["memory/plain.md"]
    (left,) = cli("status", "--json").json()["leftOut"]
    assert left["path"].endswith("/deep.md") and left["reason"].startswith("its path is longer than the system allows")
    assert [f["id"] for f in cli("doctor", "--json").json()["findings"]] == ["index-left-out"]


def test_a_workspace_whose_own_path_is_not_utf8_works_like_any_other(tmp_path, state_dir):
    """Its path names the data dir (a hash of the path's bytes): every command answers."""
    from conftest import env_for, run_in_process

    workspace = tmp_path / os.fsdecode(b"notes-\xff")
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    env = env_for(workspace, state_dir)
    for args in SCANNING + [["read", "MEMORY.md"], ["write", "memory/a.md", "--append", "x"], ["watchdog", "snapshot"]]:
        res = run_in_process(args, env=env, cwd=workspace)
        assert res.returncode == 0, (args, res.stderr)
    assert run_in_process(["search", "green tea", "--json"], env=env, cwd=workspace).json()["results"][0]["path"] == "MEMORY.md"
