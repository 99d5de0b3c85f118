"""``rollback --to TIME`` and a folder renamed by hand since: renaming a folder leaves each file's
ctime as it was, so a note under the new name, first seen after the moment, was taken to have held
its bytes there then: the rollback brought the old path back and left the new one, the note at
both. A folder on the path whose ctime is after the moment means the note may not have been there:
it is archived where the rollback brings its bytes back under its name elsewhere (the undo of the
rename), and otherwise left as it is, said where the folder was renamed. The moment lies between
the file system's timestamps, found by writing (no sleeps), its guard set to none."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from conftest import write
from openclaw_memory.rollback.plan import iso_moment


class Clock:
    """The history's clock: the real one, or a time set by hand."""

    now: float | None = None

    def __getattr__(self, name):
        return getattr(time, name)

    def time(self):
        return time.time() if self.now is None else self.now


@pytest.fixture
def clock(monkeypatch):
    import openclaw_memory.history.store as store_module
    import openclaw_memory.rollback.plan as plan_module

    monkeypatch.setattr(plan_module, "guard_ns", lambda *roots: 0)  # the moment placed between two ticks
    clock = Clock()
    monkeypatch.setattr(store_module, "time", clock)
    return clock


def a_moment_after(made: Path, scratch: Path) -> float:
    """A moment after ``made``'s ctime and before any status change from now on, a millisecond from each:
    the file system's clock moved on (a file written until its ctime is later), no sleep."""
    since = os.stat(made).st_ctime_ns
    while (later := os.stat(write(scratch, "tick\n")).st_ctime_ns) < since + 2_000_000:
        pass
    return (since + later) / 2e9


def test_a_note_whose_folder_was_renamed_by_hand_since_is_not_left_at_both_paths(cli, workspace, tmp_path, clock):
    write(workspace / "memory" / "p" / "x.md", "project notes\n")
    moment = a_moment_after(workspace / "memory" / "p" / "x.md", tmp_path / "tick")
    clock.now = moment - 1
    assert cli("read", "memory/p/x.md").returncode == 0  # seen before the moment
    clock.now = None
    os.rename(workspace / "memory" / "p", workspace / "memory" / "q")  # in a shell or a file manager

    planned = cli("rollback", "--to", iso_moment(moment), "--dry-run", "--json")
    assert planned.returncode == 0, planned.stderr
    assert {f["path"]: f["fate"] for f in planned.json()["files"]} == {"memory/p/x.md": "bring-back",
                                                                       "memory/q/x.md": "archive"}
    said = [w for w in planned.json()["warnings"] if w.startswith("memory/q/x.md archived: it was not there at ")]
    assert len(said) == 1 and "(memory/q was renamed or moved at " in said[0], planned.json()["warnings"]
    assert said[0].endswith("and memory/p/x.md, which held its bytes then, is brought back"), said

    done = cli("rollback", "--to", iso_moment(moment), "--force", "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*.md")) == ["memory/p/x.md"]
    assert (workspace / "memory" / "p" / "x.md").read_text() == "project notes\n"
    undone = cli("rollback", "--to", done.json()["undo"], "--force", "--no-index")  # the rename again
    assert undone.returncode == 0, undone.stderr
    assert sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*.md")) == ["memory/q/x.md"]


def test_a_note_the_history_never_saw_in_a_folder_renamed_since_is_left_and_named(cli, workspace, tmp_path, clock):
    """Nothing comes back in its place: it is left as it is (nothing says where it was then), with a warning."""
    write(workspace / "memory" / "p" / "x.md", "project notes\n")
    write(workspace / "memory" / "kept.md", "by hand\n")
    # After the last one written: after x.md's alone, kept.md's ctime was past the moment under load
    # (its bytes "unknown" then: a second warning).
    moment = a_moment_after(workspace / "memory" / "kept.md", tmp_path / "tick")
    os.rename(workspace / "memory" / "p", workspace / "memory" / "q")

    done = cli("rollback", "--to", iso_moment(moment), "--force", "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]} == {"memory/kept.md": "unchanged",
                                                                    "memory/q/x.md": "unchanged"}
    unknown = [w for w in done.json()["warnings"] if "unknown" in w]
    assert len(unknown) == 1 and unknown[0].startswith(f"memory/q/x.md left as it is: what it held at {iso_moment(moment)} "
                                                       "is unknown (memory/q was renamed or moved at "), unknown
    assert (workspace / "memory" / "q" / "x.md").read_text() == "project notes\n"  # kept.md: said nothing of


def test_a_note_read_after_its_folder_was_renamed_is_not_left_at_both_paths(cli, workspace, tmp_path, clock):
    """Its first sighting, after the moment, logged its ctime, before it: taken for what it held there then."""
    write(workspace / "memory" / "p" / "x.md", "project notes\n")
    moment = a_moment_after(workspace / "memory" / "p" / "x.md", tmp_path / "tick")
    clock.now = moment - 1
    assert cli("read", "memory/p/x.md").returncode == 0
    clock.now = None
    os.rename(workspace / "memory" / "p", workspace / "memory" / "q")
    assert cli("read", "memory/q/x.md").returncode == 0  # seen at its new path, after the moment

    done = cli("rollback", "--to", iso_moment(moment), "--force", "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]} == {"memory/p/x.md": "bring-back",
                                                                    "memory/q/x.md": "archive"}
    assert sorted(str(p.relative_to(workspace)) for p in workspace.rglob("*.md")) == ["memory/p/x.md"]


def test_a_renamed_folder_written_into_since_leaves_the_note_and_says_so(cli, workspace, tmp_path, clock):
    """A folder whose names changed since (a note written in it after the rename) cannot tell a rename
    from a note added beside: the note is not archived on that guess, and the warning names both paths."""
    write(workspace / "memory" / "p" / "x.md", "project notes\n")
    moment = a_moment_after(workspace / "memory" / "p" / "x.md", tmp_path / "tick")
    clock.now = moment - 1
    assert cli("read", "memory/p/x.md").returncode == 0
    clock.now = None
    os.rename(workspace / "memory" / "p", workspace / "memory" / "q")
    write(workspace / "memory" / "q" / "y.md", "a note beside it\n")

    done = cli("rollback", "--to", iso_moment(moment), "--force", "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]}["memory/q/x.md"] == "unchanged"
    said = [w for w in done.json()["warnings"] if w.startswith("memory/q/x.md left as it is: what it held at ")]
    assert len(said) == 1 and said[0].endswith("; memory/p/x.md, which held its bytes then, is brought back)"), said


def test_a_persons_note_in_a_folder_only_chmod_ed_since_is_not_archived(cli, workspace, tmp_path, clock):
    """A note with a removed note's bytes (a template) in another folder, and memory/ chmod-ed since
    (its ctime after the moment, its mtime before: read as a rename): the rollback archived the
    person's note, bringing the removed one back, though nothing was renamed. The folder the bytes
    come back into is still there: no rename's other half, so the note is left (and said)."""
    write(workspace / "memory" / "p" / "todo.md", "# todo\n")
    write(workspace / "memory" / "q" / "todo.md", "# todo\n")  # the person's own, the same template
    moment = a_moment_after(workspace / "memory" / "q" / "todo.md", tmp_path / "tick")
    clock.now = moment - 1
    assert cli("read", "memory/p/todo.md").returncode == 0
    clock.now = None
    assert cli("rm", "memory/p/todo.md", "--no-index").returncode == 0
    os.chmod(workspace / "memory", 0o700)
    assert cli("read", "memory/q/todo.md").returncode == 0  # first seen after the moment

    done = cli("rollback", "--to", iso_moment(moment), "--force", "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]} == {"memory/p/todo.md": "bring-back",
                                                                    "memory/q/todo.md": "unchanged"}
    assert (workspace / "memory" / "q" / "todo.md").read_text() == "# todo\n"
