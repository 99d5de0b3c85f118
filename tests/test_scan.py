"""The scanner matches OpenClaw's listMemoryFiles, on real files, symlinks and FIFOs."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import write
from openclaw_memory.files.scan import scan_memory_files
from openclaw_memory.settings import normalize_extra_paths


def paths(result):
    """The listed paths, after checking each against its absolute path (the scan builds them apart)."""
    from openclaw_memory.files.paths import display_path

    for f in result.files:
        assert f.path == display_path(f.abs_path, result.workspace), f
    return [f.path for f in result.files]


def reasons(result):
    return {s.path: s.reason for s in result.skipped}


def test_order_root_then_memory_sorted_then_extras(workspace, tmp_path):
    write(workspace / "MEMORY.md", "# root\n")
    write(workspace / "memory/b.md", "b")
    write(workspace / "memory/a/z.md", "z")
    write(workspace / "memory/a.md", "a")
    write(workspace / "memory/c.txt", "not markdown")
    extra = write(tmp_path / "outside/notes.md", "n")
    result = scan_memory_files(workspace, extra_paths=[str(extra.parent)])
    # Full paths sorted as JavaScript sorts strings: "a.md" < "a/z.md" ('.' < '/').
    assert paths(result) == ["MEMORY.md", "memory/a.md", "memory/a/z.md", "memory/b.md", "../outside/notes.md"]
    assert [f.source for f in result.files] == ["root", "memory", "memory", "memory", "extra"]
    assert result.files[0].size == len("# root\n")


def test_md_extension_is_case_sensitive(workspace):
    write(workspace / "memory/upper.MD", "x")
    write(workspace / "memory/ok.md", "x")
    assert paths(scan_memory_files(workspace)) == ["memory/ok.md"]


def test_legacy_root_is_never_listed_and_is_reported(workspace):
    write(workspace / "memory.md", "legacy")
    result = scan_memory_files(workspace)
    assert paths(result) == []
    assert "memory.md" in reasons(result)


def test_both_root_files_lists_only_canonical(workspace):
    write(workspace / "MEMORY.md", "canon")
    write(workspace / "memory.md", "legacy")
    result = scan_memory_files(workspace)
    assert paths(result) == ["MEMORY.md"]


def test_symlinked_root_file_is_ignored(workspace, tmp_path):
    target = write(tmp_path / "elsewhere.md", "secret")
    os.symlink(target, workspace / "MEMORY.md")
    result = scan_memory_files(workspace)
    assert paths(result) == []
    assert reasons(result)["MEMORY.md"].startswith("symlink")


def test_symlinked_memory_dir_is_not_walked(workspace, tmp_path):
    write(tmp_path / "real/x.md", "x")
    os.symlink(tmp_path / "real", workspace / "memory")
    result = scan_memory_files(workspace)
    assert paths(result) == []
    assert reasons(result)["memory"].startswith("symlink")


def test_symlinks_inside_memory_are_skipped(workspace, tmp_path):
    write(workspace / "memory/real.md", "r")
    write(tmp_path / "t.md", "t")
    os.symlink(tmp_path / "t.md", workspace / "memory/link.md")
    os.symlink(tmp_path, workspace / "memory/linkdir")
    result = scan_memory_files(workspace)
    assert paths(result) == ["memory/real.md"]
    assert set(reasons(result)) == {"memory/link.md", "memory/linkdir"}


def test_symlink_loop_does_not_hang(workspace):
    write(workspace / "memory/a.md", "a")
    os.symlink(workspace / "memory", workspace / "memory/loop")
    assert paths(scan_memory_files(workspace)) == ["memory/a.md"]


def test_repair_archives_are_never_listed(workspace):
    write(workspace / ".openclaw-repair/root-memory/2026-01-01T00-00-00-000Z/memory.md", "old")
    write(workspace / "memory/.openclaw-repair/x.md", "old")
    write(workspace / "memory/keep.md", "k")
    result = scan_memory_files(workspace, extra_paths=[str(workspace / ".openclaw-repair")])
    assert paths(result) == ["memory/keep.md"]
    assert "memory/.openclaw-repair" in reasons(result)


def test_fifo_is_never_opened(workspace):
    write(workspace / "memory/ok.md", "ok")
    os.mkfifo(workspace / "memory/pipe.md")
    result = scan_memory_files(workspace)  # would block forever if it opened the FIFO
    assert paths(result) == ["memory/ok.md"]
    assert "not a regular file" in reasons(result)["memory/pipe.md"]


def test_dream_diary_follows_memory_md(workspace):
    write(workspace / "MEMORY.md", "m")
    write(workspace / "dreams.md", "d")
    write(workspace / "memory/a.md", "a")
    assert paths(scan_memory_files(workspace)) == ["MEMORY.md", "dreams.md", "memory/a.md"]
    write(workspace / "DREAMS.md", "D")
    result = scan_memory_files(workspace)
    assert paths(result) == ["MEMORY.md", "DREAMS.md", "memory/a.md"]
    assert "dreams.md" in reasons(result)


def test_extra_paths_dedupe_by_real_path_and_single_files(workspace, tmp_path):
    write(workspace / "memory/a.md", "a")
    single = write(tmp_path / "x/single.md", "s")
    result = scan_memory_files(
        workspace, extra_paths=[str(workspace / "memory"), str(single), str(single)]
    )
    assert paths(result) == ["memory/a.md", "../x/single.md"]


def test_extra_inside_workspace_is_relative_and_skips_legacy_root(workspace):
    write(workspace / "notes/n.md", "n")
    write(workspace / "memory.md", "legacy")
    result = scan_memory_files(workspace, extra_paths=[str(workspace)])
    assert "memory.md" not in paths(result)
    assert "notes/n.md" in paths(result)


def test_symlinked_extra_root_is_reported(workspace, tmp_path):
    write(tmp_path / "real/n.md", "n")
    os.symlink(tmp_path / "real", tmp_path / "link")
    result = scan_memory_files(workspace, extra_paths=[str(tmp_path / "link")])
    assert paths(result) == []
    assert reasons(result)["../link"].startswith("symlink")


def test_multimodal_applies_to_extra_paths_only(workspace, tmp_path):
    write(workspace / "memory/photo.png", b"\x89PNG")
    write(tmp_path / "media/photo.PNG", b"\x89PNG")
    write(tmp_path / "media/voice.mp3", b"ID3")
    write(tmp_path / "media/huge.jpg", b"")
    os.truncate(tmp_path / "media/huge.jpg", 10 * 1024 * 1024 + 1)  # over OpenClaw's maxFileBytes: listed all the same
    extra = [str(tmp_path / "media")]
    assert paths(scan_memory_files(workspace, extra_paths=extra)) == []
    result = scan_memory_files(workspace, extra_paths=extra, multimodal=True)
    assert [(f.path.rsplit("/", 1)[1], f.kind) for f in result.files] == [
        ("huge.jpg", "image"), ("photo.PNG", "image"), ("voice.mp3", "audio")]
    assert not result.skipped


def test_a_media_name_is_typed_by_how_it_ends_as_openclaw_types_it(workspace, tmp_path):
    # OpenClaw: the name trimmed and lower-cased ends with the extension. '..jpg', '...wav', '.jpg'
    # and 'a.png ' are media to it (Python's splitext, skipping leading dots, found no extension).
    for name in ("..jpg", "...wav", ".a.png", ".jpg", "a.png ", "x.", "a.jpg.txt", "b.OGG"):
        write(tmp_path / "media" / name, b"media")
    result = scan_memory_files(workspace, extra_paths=[str(tmp_path / "media")], multimodal=True)
    assert sorted((f.path.rsplit("/", 1)[1], f.kind) for f in result.files) == [
        ("...wav", "audio"), ("..jpg", "image"), (".a.png", "image"), (".jpg", "image"), ("a.png ", "image"),
        ("b.OGG", "audio")]


def test_a_folder_named_memory_md_is_never_walked_through_an_extra_path(workspace):
    # OpenClaw passes over the workspace's path memory.md, whatever it is: an extra path holding the
    # workspace, or naming the folder itself, lists nothing below it (both listed memory.md/inner.md).
    write(workspace / "memory.md/inner.md", "inner")
    write(workspace / "notes/n.md", "n")
    for extra in (".", "memory.md", "./memory.md/"):
        result = scan_memory_files(workspace, extra_paths=normalize_extra_paths([extra], workspace))
        assert "memory.md/inner.md" not in paths(result), extra
        assert reasons(result)["memory.md"].startswith("named like the legacy root file but not a file")
    assert "notes/n.md" in paths(scan_memory_files(workspace, extra_paths=normalize_extra_paths(["."], workspace)))


def test_the_workspace_reached_from_an_extra_path_above_it_keeps_its_own_paths(workspace):
    # Extra '..' walks the workspace too: its notes are shown as OpenClaw shows them, relative to the
    # workspace (they were ../ws/notes/n.md); the folder beside it stays ../<name>/.
    write(workspace / "notes/n.md", "n")
    write(workspace.parent / "beside/b.md", "b")
    result = scan_memory_files(workspace, extra_paths=normalize_extra_paths([".."], workspace))
    assert "notes/n.md" in paths(result) and "../beside/b.md" in paths(result)
    assert not [p for p in paths(result) if p.startswith(f"../{workspace.name}/")]


def test_unreadable_folder_is_reported_not_dropped(tmp_path):
    """Root reads every folder, so when the tests run as root the scan runs in a child process
    that drops to user nobody after importing: the interpreter lives under /root, and the checkout
    may sit in a folder nobody cannot enter (a 0700 ``mktemp -d``), so every module of the package
    is imported first, not only the ones this command imports at its start (it imports others when
    it needs them, as ``service_files``)."""
    import json
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp(prefix="ocm-perm-"))
    os.chmod(base, 0o755)
    ws = base / "ws"
    write(ws / "memory/locked/x.md", "x")
    write(ws / "memory/open.md", "o")
    os.chmod(ws / "memory/locked", 0)
    child = (
        "import importlib, os, pkgutil, sys\n"
        "import openclaw_memory, openclaw_memory.cli.main as app, openclaw_memory.cli.parse\n"
        "for module in pkgutil.walk_packages(openclaw_memory.__path__, 'openclaw_memory.'):\n"
        "    if not module.name.endswith('__main__'):  # the one module that runs on import\n"
        "        importlib.import_module(module.name)\n"
        "import json, json5, tomllib, encodings.idna\n"
        "openclaw_memory.cli.parse.parse(sys.argv[1:])  # warm the parser's lazy imports\n"
        "if os.geteuid() == 0:\n"
        "    os.setgid(65534); os.setuid(65534)\n"
        "sys.exit(app.main(sys.argv[1:]))\n"
    )
    cmd = [sys.executable, "-c", child, "files", "--json", "-w", str(ws), "--state-dir", str(base / "state")]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.chmod(ws / "memory/locked", 0o755)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [f["path"] for f in data["files"]] == ["memory/open.md"]
    assert {s["path"]: s["reason"] for s in data["skipped"]}["memory/locked"].startswith("unreadable")
    assert "memory/locked" in proc.stderr  # a warning, not silence


def _later(monkeypatch) -> None:
    """Every ScanCache scan taken as if past the widest timestamp guard of the changes before it
    (a scan within it is never reused: see test_a_scan_within_a_clock_tick_of_a_change_is_walked_again)."""
    from openclaw_memory.files import scan as scan_module
    from openclaw_memory.fsutil.fsclock import WIDEST_GUARD_NS

    real = scan_module.time_ns
    monkeypatch.setattr(scan_module, "time_ns", lambda: real() + WIDEST_GUARD_NS + 1_000_000_000)


def test_scan_cache_check_is_bounded_and_still_sees_every_edit(workspace, tmp_path, monkeypatch):
    """A check stats the folders and FILES_PER_CHECK files in rotation, not every file: an edit in
    place is seen within ceil(files / FILES_PER_CHECK) checks, or by the next one after changed()."""
    from openclaw_memory.files import scan as scan_module
    from openclaw_memory.settings import Overrides, resolve_settings

    for i in range(25):
        write(workspace / f"memory/2026-01-{i + 1:02d}.md", f"note {i}")
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(tmp_path / "state")), environ={})
    _later(monkeypatch)
    cache = scan_module.ScanCache(settings, files_per_check=10)
    first = cache.scan()
    stats = []
    real_lstat = os.lstat
    monkeypatch.setattr(scan_module.os, "lstat", lambda path, *a, **k: stats.append(path) or real_lstat(path, *a, **k))
    assert cache.scan() is first
    assert len(stats) == 10  # one turn of the rotation, not all 25 files
    (workspace / "memory/2026-01-20.md").write_text("note 19, edited in place")
    seen = [cache.scan() is not first for _ in range(3)]  # 25 files, 10 a check: three checks at most
    assert any(seen)
    monkeypatch.setattr(scan_module.os, "lstat", real_lstat)
    current = cache.scan()
    assert cache.scan() is current
    (workspace / "memory/2026-01-01.md").write_text("note 0, edited in place")
    cache.changed()  # what the service's watch does on an event
    assert cache.scan() is not current


def test_scan_cache_reuses_a_scan_only_while_nothing_it_saw_changed(workspace, tmp_path, monkeypatch):
    from openclaw_memory.files.scan import ScanCache
    from openclaw_memory.settings import Overrides, resolve_settings

    write(workspace / "MEMORY.md", "# root\n")
    write(workspace / "memory/a/one.md", "one")
    extra = tmp_path / "outside" / "runbook.md"  # a single-file extra path, missing at first
    extra.parent.mkdir()
    settings = resolve_settings(
        Overrides(workspace=str(workspace), state_dir=str(tmp_path / "state"), extra=(str(extra),)), environ={}
    )
    _later(monkeypatch)
    cache = ScanCache(settings)
    first = cache.scan()
    assert cache.scan() is first

    def changed_to(expected):
        result = cache.scan()
        assert paths(result) == expected
        assert cache.scan() is result
        return result

    write(workspace / "memory/a/two.md", "two")  # a new entry in a nested folder
    changed_to(["MEMORY.md", "memory/a/one.md", "memory/a/two.md"])
    edited = cache.scan()
    (workspace / "memory/a/one.md").write_text("one, longer now")  # same folders, new size
    assert cache.scan() is not edited and cache.scan().files[1].size == len("one, longer now")
    os.rename(workspace / "memory/a/two.md", workspace / "memory/a/three.md")
    changed_to(["MEMORY.md", "memory/a/one.md", "memory/a/three.md"])
    os.unlink(workspace / "MEMORY.md")
    os.symlink(workspace / "memory/a/one.md", workspace / "MEMORY.md")  # swapped for a symlink
    changed_to(["memory/a/one.md", "memory/a/three.md"])
    write(extra, "the VPN password rotates monthly")
    changed_to(["memory/a/one.md", "memory/a/three.md", "../outside/runbook.md"])


def test_a_same_size_rewrite_that_keeps_the_mtime_is_seen_by_the_next_check(workspace, tmp_path, monkeypatch):
    """`touch -r`, `cp -p`, `rsync -t`: the size and mtime as they were, the ctime (and with a copy
    the inode) not. The check compared size and mtime only, so a service's search went on with the
    last scan (and its stale answer) while `status`, by the change rule's key, listed the file stale."""
    from openclaw_memory.files.scan import ScanCache
    from openclaw_memory.settings import Overrides, resolve_settings

    note = write(workspace / "memory/codes.md", "the door code is 1234\n")
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(tmp_path / "state")), environ={})
    _later(monkeypatch)
    cache = ScanCache(settings)
    first = cache.scan()
    assert cache.scan() is first
    before = note.stat()
    note.write_text("the door code is 9876\n")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (note.stat().st_size, note.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = cache.scan()
    assert again is not first and again.files[0].ctime_ns == note.stat().st_ctime_ns


def test_a_scan_within_a_clock_tick_of_a_change_is_walked_again(workspace, tmp_path):
    """On a whole-second clock (ext2, ext3, ext4 with 128-byte inodes) a note created in the same
    second as the scan before it leaves its folder's mtime as that scan saw it: such a scan is not
    reused. The clock tick is made here by setting the folder's mtime back."""
    from openclaw_memory.files.scan import ScanCache
    from openclaw_memory.settings import Overrides, resolve_settings

    write(workspace / "memory/one.md", "one")
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(tmp_path / "state")), environ={})
    cache = ScanCache(settings)
    assert paths(cache.scan()) == ["memory/one.md"]
    folder = (workspace / "memory").stat()
    write(workspace / "memory/two.md", "two")
    os.utime(workspace / "memory", ns=(folder.st_atime_ns, folder.st_mtime_ns))  # the same tick
    assert paths(cache.scan()) == ["memory/one.md", "memory/two.md"]


def test_an_emacs_lock_link_beside_a_note_being_edited_is_no_skipped_note(workspace, cli):
    """Emacs marks a note it has unsaved changes to with a link ``.#NAME`` to ``user@host.pid:boot``.
    The scanner listed it as a skipped symlinked note: `files` printed it and `doctor` told the person
    to replace it with a regular file (exit 1) for as long as the note was open in Emacs."""
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "projects.md", "# Projects\n")
    os.symlink("me@laptop.4242:1764900000", workspace / "memory" / ".#projects.md")
    os.symlink("projects.md", workspace / "memory" / "alias.md")  # the control: a link to a note is still said
    assert reasons(scan_memory_files(workspace)) == {"memory/alias.md": "symlink (ignored)"}
    doctor = cli("doctor", "--json")
    links = [f for f in doctor.json()["findings"] if f["id"] == "memory-file-symlink"]
    assert [f["paths"] for f in links] == [["memory/alias.md"]], doctor.stdout


def _chain(folder, depth: int, note: str = "A note about a quokka at the bottom of the tree.\n") -> str:
    """``folder/d/d/.../d/deep.md`` made one level at a time (os.makedirs recurses); its path."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            fd, parent = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), fd
            os.close(parent)
        with open(os.open("deep.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as out:
            out.write(note)
    finally:
        os.close(fd)
    return "memory/" + "d/" * depth + "deep.md"


@pytest.fixture
def chain(workspace):
    """A note below a chain of folders (``chain(depth)``), taken down bottom up afterwards: pytest's
    own clean-up of temp folders recurses."""
    made: list[int] = []

    def make(depth: int) -> str:
        write(workspace / "MEMORY.md", "# Memory\n")
        (workspace / "memory").mkdir(exist_ok=True)
        made.append(depth)
        return _chain(workspace / "memory", depth)

    yield make
    for depth in made:
        path = os.path.join(workspace, "memory", *["d"] * depth)
        os.unlink(os.path.join(path, "deep.md"))
        for _ in range(depth):
            os.rmdir(path)
            path = os.path.dirname(path)


def limited(workspace, state_dir, limit: int, *args: str) -> subprocess.CompletedProcess:
    """``openclaw-memory ARGS`` in a process whose soft ``ulimit -n`` is ``limit``."""
    import resource
    import sys

    from conftest import env_for

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], capture_output=True, text=True,
                          env=env_for(workspace, state_dir), cwd=workspace,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard)))


@pytest.mark.parametrize("limit", [256, 1024])
def test_a_folder_chain_deeper_than_the_open_file_limit_is_walked_whole(workspace, state_dir, chain, limit):
    """The walk held a descriptor for every folder on its way down: under `ulimit -n 1024` a chain of
    1,100 folders ran out, its note was skipped as 'unreadable: Too many open files' and `index` took
    it out of the index, exit 0. The walk now holds at most HELD_FOLDERS of them, opening a folder
    again as it climbs back to it: the note is listed and indexed at any depth."""
    import json

    deep = chain(1100)
    listing = limited(workspace, state_dir, limit, "files", "--json")
    assert listing.returncode == 0 and not listing.stderr, listing.stderr
    data = json.loads(listing.stdout)
    assert [f["path"] for f in data["files"]] == ["MEMORY.md", deep] and data["skipped"] == []
    assert limited(workspace, state_dir, limit, "index").returncode == 0
    assert limited(workspace, state_dir, limit, "index").returncode == 0  # again: nothing to remove
    found = limited(workspace, state_dir, limit, "search", "quokka", "--mode", "text", "--no-sync", "--json")
    assert [r["path"] for r in json.loads(found.stdout)["results"]] == [deep], found.stderr


def test_running_out_of_descriptors_in_the_scan_says_so_and_removes_nothing(workspace, state_dir, chain, cli, tmp_path):
    """Out of descriptors, the scan skipped the folder it could not open as 'unreadable' and went on:
    `index` removed the notes below it from the index, `files` and `export` (its notes left out of the
    archive) exited 0. A limit is no note gone: each command now stops with the limit named, one line,
    and the index keeps the note."""
    deep = chain(60)  # deeper than the walk holds descriptors for (HELD_FOLDERS): it runs out in the walk at 16
    assert cli("index").returncode == 0
    for args in (["files"], ["index"], ["export", str(tmp_path / "backup.tar")]):
        done = limited(workspace, state_dir, 16, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        [said] = done.stderr.splitlines()
        assert said.startswith("error: cannot list memory/d/d/"), said
        assert said.endswith("too many open files (the limit is 16: raise it with `ulimit -n`)"), said
    assert not (tmp_path / "backup.tar").exists()
    found = cli("search", "quokka", "--mode", "text", "--no-sync", "--json").json()["results"]
    assert [r["path"] for r in found] == [deep]


def _mutating_visit(monkeypatch, mutate) -> None:
    """The walk's general path calling ``mutate()`` once, when it visits the entry ``x.txt``."""
    from openclaw_memory.files import scan

    visit = scan._Collector._visit
    done: list[bool] = []

    def visiting(self, folder, entry, *args):
        if entry.name == "x.txt" and not done:
            done.append(True)
            mutate()
        return visit(self, folder, entry, *args)

    monkeypatch.setattr(scan._Collector, "_visit", visiting)


@pytest.mark.parametrize("held", [1, 2, 100])
def test_a_folder_moved_away_mid_walk_leaves_its_parent_listed(workspace, tmp_path, monkeypatch, held):
    """A folder let go on the way down (HELD_FOLDERS) is opened again from its sub-folder's ``..``
    when that is still it, else by its names from the nearest folder held: a sub-folder moved out
    while the walk was in it leaves the rest of its parent listed, as a descriptor held all along
    would (100: every one held)."""
    from openclaw_memory.files import scan

    monkeypatch.setattr(scan, "HELD_FOLDERS", held)
    write(workspace / "memory/a/b/c/d/n.md", "n")
    write(workspace / "memory/a/b/c/d/x.txt", "x")
    write(workspace / "memory/a/b/z.md", "z")
    write(workspace / "memory/a/zz.md", "zz")
    write(workspace / "memory/zzz.md", "zzz")
    (tmp_path / "away").mkdir()
    _mutating_visit(monkeypatch, lambda: os.rename(workspace / "memory/a/b/c", tmp_path / "away/c"))
    result = scan_memory_files(workspace)
    assert paths(result) == ["memory/a/b/c/d/n.md", "memory/a/b/z.md", "memory/a/zz.md", "memory/zzz.md"]
    assert result.skipped == ()


@pytest.mark.parametrize("held", [1, 2])
def test_a_folder_let_go_and_swapped_for_a_symlink_is_never_walked_through_it(workspace, tmp_path, monkeypatch, held):
    """A folder let go on the way down is opened again one name at a time with O_NOFOLLOW and must
    be the very folder listed: swapped for a symlink meanwhile, the rest of it is not listed (never
    what the link leads to: nothing outside the workspace shows up as memory) and the link is
    reported as the walk reports one; the folders above it go on."""
    from openclaw_memory.files import scan

    monkeypatch.setattr(scan, "HELD_FOLDERS", held)
    write(workspace / "memory/a/b/c/d/x.txt", "x")
    write(workspace / "memory/a/b/z.md", "z")
    write(workspace / "memory/a/zz.md", "zz")
    write(tmp_path / "outside/z.md", "outside")

    def swap() -> None:
        os.rename(workspace / "memory/a/b/c", tmp_path / "c")  # (its `..` is not b any more)
        os.rename(workspace / "memory/a/b", tmp_path / "b-aside")
        os.symlink(tmp_path / "outside", workspace / "memory/a/b")

    _mutating_visit(monkeypatch, swap)
    result = scan_memory_files(workspace)
    assert paths(result) == ["memory/a/zz.md"]
    assert reasons(result) == {"memory/a/b": "symlink (ignored)"}


def test_out_of_descriptors_anywhere_in_the_scan_is_never_a_skip(workspace, monkeypatch):
    """EMFILE or ENFILE opening any folder of the walk (its root, a sub-folder, a folder climbed back
    to) or a write's own note (scan_paths) raises OutOfFiles, the limit named: never a folder skipped
    as unreadable, nor a note not listed, which a sync takes for notes gone."""
    import errno
    from types import SimpleNamespace

    from openclaw_memory.errors import OutOfFiles
    from openclaw_memory.files import scan

    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory/a/b/n.md", "n")
    real_open = os.open
    limit = r"too many open files \(the limit is [0-9]+: raise it with `ulimit -n`\)"
    for code in (errno.EMFILE, errno.ENFILE):
        for folder in ("memory", "a", "b", ".."):
            def refusing(path, *args, _folder=folder, _code=code, **kwargs):
                if os.path.basename(path) == _folder:
                    raise OSError(_code, os.strerror(_code), path)
                return real_open(path, *args, **kwargs)

            with monkeypatch.context() as patched:
                patched.setattr(scan.os, "open", refusing)
                patched.setattr(scan, "HELD_FOLDERS", 1)  # back from b, a is opened again: its `..`
                with pytest.raises(OutOfFiles, match=limit):
                    scan_memory_files(workspace)
                if folder != "..":
                    with pytest.raises(OutOfFiles, match="cannot open memory/a/b/n.md: " + limit):
                        scan.scan_paths(SimpleNamespace(workspace=workspace), ["memory/a/b/n.md"])
    assert [f.path for f in scan_memory_files(workspace).files] == ["MEMORY.md", "memory/a/b/n.md"]


def test_a_cached_scan_is_tuples_no_caller_can_change_for_the_next(workspace, tmp_path, monkeypatch):
    """ScanResult, "frozen", held lists: a caller appending to ``files`` (or ``skipped``) changed the
    cached scan every later caller (search's stale check, ``files``) was given, and its JSON."""
    from openclaw_memory.files.scan import ScanCache
    from openclaw_memory.settings import Overrides, resolve_settings
    from openclaw_memory.wire import to_json

    write(workspace / "MEMORY.md", "# root\n")
    write(workspace / "memory/a.md", "a")
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(tmp_path / "state")), environ={})
    _later(monkeypatch)
    cache = ScanCache(settings)
    first = cache.scan()
    for name in ("files", "skipped", "folders"):
        assert isinstance(getattr(first, name), tuple), name
    with pytest.raises(AttributeError):
        first.files.append(first.files[0])  # type: ignore[attr-defined]
    assert cache.scan() is first and paths(first) == ["MEMORY.md", "memory/a.md"]
    assert [f["path"] for f in to_json(first)["files"]] == ["MEMORY.md", "memory/a.md"]
    assert to_json(first.suggesting("openclaw-memory"))["skipped"] == []
