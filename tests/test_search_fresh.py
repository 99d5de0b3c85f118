"""A search answers what the files say now: through the service (live sync, ``--no-watch``) as
in-process, on a whole-second clock, after a same-size rewrite that keeps the mtime, and without
citing a file that is gone.

The service tests start the real ``openclaw-memory serve`` (tests/test_serve.py's helpers) and wait
on conditions, never on time. The whole-second clock is a real one: ext4 made with 128-byte inodes
(``mke2fs -t ext4 -I 128``), loop-mounted, which needs root.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_serve import WAIT, start

from conftest import env_for, indexed_notes, run_in_process, wait_for, write


@contextlib.contextmanager
def whole_second_fs(folder: Path) -> Iterator[Path]:
    """An ext4 with 128-byte inodes (whole-second timestamps) loop-mounted at ``folder``; skips the
    test where this machine cannot make or mount one (mounting needs root)."""
    if shutil.which("mke2fs") is None or shutil.which("mount") is None:
        pytest.skip("mke2fs or mount is not installed")
    if os.geteuid() != 0:
        pytest.skip("loop-mounting a file system needs root")
    image = folder.parent / f"{folder.name}.img"
    with open(image, "wb") as fh:
        fh.truncate(32 << 20)
    made = subprocess.run(["mke2fs", "-q", "-F", "-t", "ext4", "-I", "128", str(image)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot make an ext4 image here: {made.stderr.strip() or 'mke2fs failed'}")
    folder.mkdir()
    done = subprocess.run(["mount", "-o", "loop", str(image), str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot loop-mount a file system here: {done.stderr.strip() or 'mount failed'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _codes(ws: Path, state: Path, *extra: str) -> list[str]:
    """The snippets a search finds (hybrid: a text search syncs nothing), through the service where one runs."""
    r = run_in_process(["search", "door code", "--min-score", "0", "--json", *extra], env_for(ws, state), ws)
    assert r.returncode == 0, r.stderr
    return [h["snippet"] for h in json.loads(r.stdout)["results"]]


def _stale(ws: Path, state: Path) -> list[str]:
    r = run_in_process(["status", "--json"], env_for(ws, state), ws)
    assert r.returncode == 0, r.stderr
    return [path for c in json.loads(r.stdout)["collections"] for path in c["staleFiles"]]


@pytest.mark.parametrize("mode", ["live", "no-watch"])
def test_a_same_size_save_in_the_same_second_is_searchable_through_the_service(tmp_path, services, mode):
    """On a 1-second clock two saves of one size within a second leave the same stat. The first
    save's sync saw a stat 10 ms old by the mount's guard (ext4: 10 ms) and trusted it, so the
    service (its live sync, or `--no-watch`'s search) never indexed the second: search kept the old
    text, status listed nothing stale, while the history had the new version. A sighting of a file
    whose mtime has no sub-second part is now racy for a second."""
    with whole_second_fs(tmp_path / "mnt") as mnt:
        ws, state = mnt / "ws", tmp_path / "state"
        note = write(ws / "memory" / "codes.md", "the door code is 00000\n")
        assert run_in_process(["index"], env_for(ws, state), ws).returncode == 0
        service = start(services, ws, state, *(() if mode == "live" else ("--no-watch",)))
        if mode == "live":
            wait_for(lambda: any(line.startswith("watching ") for line in service.stderr), WAIT)
        search = (lambda: _codes(ws, state, "--no-sync")) if mode == "live" else (lambda: _codes(ws, state))
        for attempt in range(1, 10):
            wait_for(lambda: time.time() % 1 < 0.2, step=0.005)  # early in a second, to save twice within it
            first, second = f"the door code is {attempt}1111\n", f"the door code is {attempt}9999\n"
            note.write_text(first)
            before = note.stat()
            wait_for(lambda first=first: search() == [first.strip()], WAIT)
            note.write_text(second)
            after = note.stat()
            if (after.st_mtime_ns, after.st_ctime_ns) != (before.st_mtime_ns, before.st_ctime_ns):
                continue  # the second save fell in another second: not the case; try again
            assert after.st_mtime_ns % 1_000_000_000 == 0  # a whole-second clock indeed
            wait_for(lambda second=second: search() == [second.strip()], WAIT)
            assert _stale(ws, state) == []
            break
        else:
            pytest.skip("this machine never saved twice within one second here (too loaded)")


def test_a_same_size_rewrite_that_keeps_the_mtime_is_synced_by_a_no_watch_service_search(workspace, state_dir, cli, services):
    """`touch -r`, `cp -p`, `rsync -t` keep the size and mtime: `serve --no-watch` compared only those
    before reusing its last scan, so its search returned the old text for ever while `status`
    through it listed the file stale. docs/serve.md: `search` syncs stale files first."""
    note = write(workspace / "memory" / "codes.md", "the door code is 1234\n")
    assert cli("index").returncode == 0
    start(services, workspace, state_dir, "--no-watch")
    assert _codes(workspace, state_dir) == ["the door code is 1234"]
    before = note.stat()
    note.write_text("the door code is 9876\n")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert _codes(workspace, state_dir) == ["the door code is 9876"]
    assert _stale(workspace, state_dir) == []


def test_a_hit_whose_file_is_gone_is_left_out_and_listed_stale(workspace, state_dir, cli):
    """An index not synced (`--no-sync` here; through the service, a search while its live sync
    holds the index, `updating: true`) still holds a note removed or moved out: its hit cited a
    file that no longer exists."""
    write(workspace / "memory" / "kept.md", "the boiler pressure is 1.5 bar\n")
    write(workspace / "memory" / "gone.md", "the boiler was serviced in March\n")
    assert cli("index").returncode == 0
    (workspace / "memory" / "gone.md").unlink()
    r = cli("search", "boiler", "--mode", "text", "--no-sync", "--json")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert [h["path"] for h in data["results"]] == ["memory/kept.md"]
    assert data["stalePaths"] == ["memory/gone.md"]


def test_a_file_removed_after_the_stale_check_is_left_out(workspace, state_dir, monkeypatch):
    """The file goes between the stale check (which found nothing stale) and the answer: one lstat of
    each hit's file, by the name the scan listed, leaves it out and names it stale."""
    from openclaw_memory.index.api import MemoryIndex

    index = indexed_notes(workspace, state_dir, {"memory/kept.md": "the boiler pressure is 1.5 bar\n",
                                                 "memory/gone.md": "the boiler was serviced in March\n"})
    real = MemoryIndex._stale

    def then_removed(self, collections, manifests):
        stale = real(self, collections, manifests)
        (workspace / "memory" / "gone.md").unlink(missing_ok=True)
        return stale

    monkeypatch.setattr(MemoryIndex, "_stale", then_removed)
    with index:
        result = index.search("boiler", mode="text")
    assert [h.path for h in result.results] == ["memory/kept.md"]
    assert result.stale_paths == ("memory/gone.md",)


def test_a_hit_whose_folder_became_a_symlink_is_left_out(workspace, state_dir, tmp_path):
    """A folder of the hit swapped for a symlink (to a copy of the note outside the workspace): the
    note is no memory file the product reads, and its lookup follows no symlink."""
    index = indexed_notes(workspace, state_dir, {"memory/sub/gone.md": "the boiler was serviced in March\n"})
    outside = tmp_path / "outside"
    write(outside / "gone.md", "the boiler was serviced in March\n")
    shutil.rmtree(workspace / "memory" / "sub")
    os.symlink(outside, workspace / "memory" / "sub")
    with index:
        result = index.search("boiler", mode="text", sync=False)
    assert [h.path for h in result.results] == []
    assert result.stale_paths == ("memory/sub/gone.md",)
