"""The scan's walk: its hot path (a regular ``*.md`` file listed in the loop itself) lists exactly
what the general path and a plain reference listing list, in JavaScript's order, on generated
trees of odd names, ``.md`` folders, symlinks and FIFOs; and a plain note costs no general-path
call (counted on the real functions, no timing)."""

from __future__ import annotations

import dataclasses
import gc
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import write
from openclaw_memory.files import jstext, scan
from openclaw_memory.files.jstext import sort_utf16, utf16_sort_key
from openclaw_memory.files.paths import ExtraPath
from openclaw_memory.files.scan import MemoryFile, scan_memory_files


def js_order(text: str) -> bytes:
    """JavaScript's order, independent of the code under test: UTF-16 code units compared one by
    one are the big-endian encoding's bytes compared one by one."""
    return text.encode("utf-16-be", "surrogatepass")


# ASCII, BMP letters on both sides of the surrogates, U+E000..U+FFFF (above the surrogates an
# astral character becomes), astral characters, and a lone surrogate (an undecodable file name byte).
CHARS = ["a", "b", "-", ".", "/", "é", "绿", "\ue000", "\uffff", "😀", "𝄞", "\udcff"]


@given(st.lists(st.text(st.sampled_from(CHARS), max_size=5), max_size=12))
@example(["\uffff", "😀"])  # astral: below U+FFFF in UTF-16, above it in code points
@example(["memory/a/z.md", "memory/a.md", "memory/a-b.md"])
def test_sort_utf16_is_javascripts_order(texts):
    expected = sorted(texts, key=js_order)
    assert sorted(texts, key=utf16_sort_key) == expected
    items = [(t,) for t in texts]  # sorted by a key of each item, as the scan sorts its files
    sort_utf16(items, lambda item: item[0])
    assert [t for (t,) in items] == expected


def test_a_scanned_file_is_the_dataclass_its_constructor_makes(tmp_path):
    st_ = os.lstat(write(tmp_path / "a.md", "abc"))
    made = scan._memory_file("memory/a.md", str(tmp_path / "a.md"), "memory", "markdown", st_)
    built = MemoryFile("memory/a.md", str(tmp_path / "a.md"), "memory", "markdown", st_.st_size, st_.st_mtime_ns,
                       st_.st_ctime_ns, st_.st_ino, st_.st_mode)
    assert type(made) is MemoryFile and made == built and hash(made) == hash(built) and repr(made) == repr(built)
    assert list(vars(made).items()) == list(vars(built).items())
    assert list(vars(made)) == [f.name for f in dataclasses.fields(MemoryFile)]  # every field, in order
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.size = 0  # type: ignore[misc]


NAME_CHARS = ["a", "b", "-", ".", "é", "绿", "\ue000", "\uffff", "😀", "𝄞", "\udcff"]
# No name starts with a dot: the general path is taken through a "**" pattern, which admits
# every file but a dot file (minimatch).
NAMES = st.one_of(
    st.tuples(st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=3).filter(lambda s: not s.startswith(".")),
              st.sampled_from(["", ".md", ".md"])).map("".join),
    st.just(".openclaw-repair"),
)
LEAVES = st.sampled_from(["file", "file", "file", "fifo", "link-file", "link-folder", "dangling", "loop"])
TREES = st.dictionaries(NAMES, st.recursive(LEAVES, lambda inner: st.dictionaries(NAMES, inner, max_size=4), max_leaves=12),
                        max_size=8)


def build(folder: str, tree: dict, outside: str) -> None:
    os.mkdir(folder)
    for name, node in tree.items():
        path = os.path.join(folder, name)
        if isinstance(node, dict):
            build(path, node, outside)
        elif node == "file":
            with open(path, "wb") as out:
                out.write(name.encode("utf-8", "surrogateescape") * 3)
        elif node == "fifo":
            os.mkfifo(path)
        elif node == "link-file":
            os.symlink(os.path.join(outside, "t.md"), path)
        elif node == "link-folder":
            os.symlink(outside, path)
        elif node == "dangling":
            os.symlink(os.path.join(outside, "nowhere.md"), path)
        else:
            os.symlink(name, path)  # a loop of one


def reference(ws: str, root: str, source: str) -> tuple[list[tuple], list[tuple[str, str]]]:
    """What the scan lists of the folder ``root`` and what it skips, written plainly: a recursive
    walk by name with lstat, then the files in JavaScript's order of their full paths."""
    files: list[tuple] = []
    skipped: list[tuple[str, str]] = []

    def walk(folder: str) -> None:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            shown = os.path.relpath(path, ws)
            st_ = os.lstat(path)
            if stat.S_ISLNK(st_.st_mode):
                try:
                    to_folder = stat.S_ISDIR(os.stat(path).st_mode)
                except FileNotFoundError:
                    to_folder = False
                except OSError:
                    to_folder = True  # a loop
                if name.endswith(".md") or to_folder:
                    skipped.append((shown, "symlink (ignored)"))
            elif stat.S_ISDIR(st_.st_mode):
                if name == ".openclaw-repair":
                    skipped.append((shown, "repair archive (never memory)"))
                else:
                    walk(path)
            elif name.endswith(".md"):
                if stat.S_ISREG(st_.st_mode):
                    files.append((shown, path, source, "markdown", st_.st_size, st_.st_mtime_ns, st_.st_ctime_ns,
                                  st_.st_ino, st_.st_mode))
                else:
                    skipped.append((shown, "not a regular file (FIFO, socket or device; never opened)"))

    walk(root)
    files.sort(key=lambda f: js_order(f[1]))
    return files, skipped


def listed(result, source: str) -> tuple[list[tuple], list[tuple[str, str]]]:
    files = [dataclasses.astuple(f) for f in result.files if f.source == source]
    prefix = "memory/" if source == "memory" else "../"
    return files, [(s.path, s.reason) for s in result.skipped if s.path.startswith(prefix)]


@settings(max_examples=60, deadline=None)
@given(TREES)
def test_the_walk_lists_what_a_plain_reference_listing_lists(tree):
    """The memory folder and an extra folder (the hot path) and the same extra folder under a
    ``**`` pattern (every entry through ``_visit``) list what the reference lists, each real path
    once across sources."""
    with _workspace_and_extra(tree) as (ws, extra):
        memory_expected = reference(ws, os.path.join(ws, "memory"), "memory")
        extra_expected = reference(ws, extra, "extra")

        fast = scan_memory_files(ws, extra_paths=[ExtraPath(extra)])
        assert listed(fast, "memory") == memory_expected
        assert listed(fast, "extra") == extra_expected
        general = scan_memory_files(ws, extra_paths=[ExtraPath(extra, "**")])
        assert listed(general, "extra") == extra_expected

        # The workspace again as an extra path, then the extra folder twice: nothing listed twice.
        again = scan_memory_files(ws, extra_paths=[ExtraPath(ws), ExtraPath(extra, "**"), ExtraPath(extra)])
        assert [dataclasses.astuple(f) for f in again.files] == memory_expected[0] + extra_expected[0]


@contextmanager
def _workspace_and_extra(tree) -> Iterator[tuple[str, str]]:
    """A workspace whose memory folder is ``tree`` and an extra folder that is ``tree`` too, their
    symlinks leading to a folder outside both; removed after."""
    top = tempfile.mkdtemp()
    try:
        ws, extra, outside = (os.path.join(top, name) for name in ("ws", "extra", "outside"))
        os.mkdir(ws)
        build(outside, {"t.md": "file"}, outside)
        build(os.path.join(ws, "memory"), tree, outside)
        build(extra, tree, outside)
        yield ws, extra
    finally:
        shutil.rmtree(top)


DEEP_TREES = st.recursive(st.dictionaries(NAMES, LEAVES, max_size=3),
                          lambda inner: st.dictionaries(NAMES, st.one_of(LEAVES, inner), min_size=1, max_size=3),
                          max_leaves=24)


@settings(max_examples=60, deadline=None)
@given(DEEP_TREES)
def test_a_walk_holding_one_folder_lists_what_one_holding_every_folder_lists(tree):
    """Past HELD_FOLDERS on its way down the walk lets go of the folders furthest up and opens each
    again as it climbs back to it, its entries not visited yet listed again: holding one folder
    (every folder above the one walked let go, then climbed back to) it lists and skips exactly
    what it lists holding them all, the memory folder and an extra folder under a ``**`` pattern."""
    from unittest import mock

    with _workspace_and_extra(tree) as (ws, extra):
        extras = [ExtraPath(extra, "**")]
        with mock.patch.object(scan, "HELD_FOLDERS", 1000):
            every = scan_memory_files(ws, extra_paths=extras)
        with mock.patch.object(scan, "HELD_FOLDERS", 1):
            one = scan_memory_files(ws, extra_paths=extras)
        assert [dataclasses.astuple(f) for f in one.files] == [dataclasses.astuple(f) for f in every.files]
        assert one.skipped == every.skipped and one.folders == every.folders


class Counted:
    """Calls of the scan's general path, of the sort key and of MemoryFile's constructor, counted
    on the real functions."""

    def __init__(self, monkeypatch):
        self.calls = {"_visit": 0, "utf16_sort_key": 0, "MemoryFile": 0}
        real_visit, real_key, real_init = scan._Collector._visit, jstext.utf16_sort_key, MemoryFile.__init__

        def visit(*args, **kwargs):
            self.calls["_visit"] += 1
            return real_visit(*args, **kwargs)

        def key(text):
            self.calls["utf16_sort_key"] += 1
            return real_key(text)

        def init(*args, **kwargs):
            self.calls["MemoryFile"] += 1
            real_init(*args, **kwargs)

        monkeypatch.setattr(scan._Collector, "_visit", visit)
        monkeypatch.setattr(jstext, "utf16_sort_key", key)
        if hasattr(scan, "utf16_sort_key"):  # (a scan that imports it by name)
            monkeypatch.setattr(scan, "utf16_sort_key", key)
        monkeypatch.setattr(MemoryFile, "__init__", init)


def test_a_plain_note_costs_no_general_path_call(workspace, monkeypatch):
    """200 daily notes, a sub-folder and a symlink: the folder and the symlink go through the
    general path, the notes do not, and no sort key is computed while every path is plain
    (an astral name makes them computed)."""
    for day in range(200):
        write(workspace / f"memory/2026-{day // 28 + 1:02d}-{day % 28 + 1:02d}.md", f"day {day}\n")
    write(workspace / "memory/projects/a.md", "a\n")
    os.symlink("2026-01-01.md", workspace / "memory/link.md")
    counted = Counted(monkeypatch)
    result = scan_memory_files(workspace)
    assert len(result.files) == 201
    assert counted.calls == {"_visit": 2, "utf16_sort_key": 0, "MemoryFile": 0}

    write(workspace / "memory/😀.md", "astral\n")
    result = scan_memory_files(workspace)
    assert result.files[-1].path == "memory/😀.md"
    assert counted.calls["utf16_sort_key"] == 202


def test_the_scan_runs_no_cyclic_collection_and_leaves_the_collector_as_it_found_it(workspace):
    """Its files' objects form no cycle: the collector is off while they are made (it walked them
    again at each threshold), on again after, and still off after for a caller that paused it."""
    for day in range(300):
        write(workspace / f"memory/{day:03d}.md", "note\n")
    collections: list[int] = []

    def record(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    thresholds = gc.get_threshold()
    assert gc.isenabled()
    gc.set_threshold(10)  # a collection every 10 objects made, were the collector on
    gc.collect()  # the count of new objects starts from nothing: the pause itself is one
    gc.callbacks.append(record)
    try:
        result = scan_memory_files(workspace)
        gc.callbacks.remove(record)
        assert len(result.files) == 300
        assert collections == []
        assert gc.isenabled()
        gc.disable()
        scan_memory_files(workspace)
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.set_threshold(*thresholds)
        if record in gc.callbacks:
            gc.callbacks.remove(record)
