"""What ``rollback --to TIME`` means: the end of the unit the time is written to (a millisecond, a
second, a minute, an hour), so the time ``log`` or ``history`` prints for a version (to the
millisecond, cut, never rounded up) goes back to that version; a date alone is its start. The
versions are logged at times set through the history's clock, no sleeps."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time

import pytest

from conftest import write
from openclaw_memory.history.versions import iso_time
from openclaw_memory.rollback.plan import iso_moment, time_meant


class Clock:
    """The history's clock (``time`` of the store's module), set by hand."""

    def __init__(self, now: float):
        self.now = now

    def __getattr__(self, name):
        return getattr(time, name)

    def time(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    import openclaw_memory.history.store as store_module

    clock = Clock(0.0)
    monkeypatch.setattr(store_module, "time", clock)
    return clock


def versions(cli, workspace, clock, times: tuple[float, ...]) -> list[str]:
    """v1 (first read), v2, ... of memory/a.md logged at ``times``; each version's time as ``log --json`` prints it."""
    clock.now = times[0]
    write(workspace / "memory" / "a.md", "v1\n")
    assert cli("read", "memory/a.md").returncode == 0
    for i, at in enumerate(times[1:], 2):
        clock.now = at
        assert cli("write", "memory/a.md", "--append", f"v{i}", "--no-index").returncode == 0
    clock.now = times[-1] + 10  # what the rollbacks log comes later
    printed = [e["time"] for e in cli("log", "--json").json()["entries"] if e["path"] == "memory/a.md"]
    assert len(printed) == len(times), printed
    return sorted(printed)


def rolled_back_to(cli, workspace, to: str) -> str:
    done = cli("rollback", "--to", to, "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    return (workspace / "memory" / "a.md").read_text()


# A whole second, well in the past.
BASE = float(int(time.time()) // 60 * 60 - 3600)


@pytest.mark.parametrize("v2, v3", [(0.1234, 0.2), (0.1236, 0.1244), (0.9996, 1.0004), (0.0001, 0.0009)],
                         ids=["printed-before-it", "next-in-the-next-millisecond", "at-a-second's-end", "same-millisecond"])
def test_the_time_log_prints_for_a_version_rolls_back_to_that_version(cli, workspace, clock, v2, v3):
    """log printed each time rounded to the nearest millisecond and the rollback read it as that
    instant: a version logged at .1234 was printed .123, before it, and a rollback to it went back to
    the version before (6 of 8 runs in a shell). Printed cut and read as the end of its millisecond,
    it includes its version and none printed later; two versions of one millisecond print alike."""
    printed = versions(cli, workspace, clock, (BASE - 5, BASE + v2, BASE + v3))
    expected = "v1\nv2\nv3\n" if printed[1] == printed[2] else "v1\nv2\n"
    assert rolled_back_to(cli, workspace, printed[1]) == expected
    assert rolled_back_to(cli, workspace, printed[0]) == "v1\n"
    assert rolled_back_to(cli, workspace, printed[2]) == "v1\nv2\nv3\n"


def test_a_time_to_the_second_or_minute_means_its_end_and_a_date_alone_its_start(cli, workspace, clock):
    midnight = dt.datetime(2020, 3, 1, tzinfo=dt.UTC).timestamp()
    versions(cli, workspace, clock, (midnight - 2 * 86400 + 5, midnight - 30.5, midnight, midnight + 0.0004))
    assert rolled_back_to(cli, workspace, "2020-02-29T23:59:29") == "v1\nv2\n"  # v2 at :29.5, in that second
    assert rolled_back_to(cli, workspace, "2020-02-29T23:58") == "v1\n"
    assert rolled_back_to(cli, workspace, "2020-02-29T23:59Z") == "v1\nv2\n"
    assert rolled_back_to(cli, workspace, "2020-03-01t00:59+01:00") == "v1\nv2\n"  # 23:59 UTC
    assert rolled_back_to(cli, workspace, "2020-02-29T23") == "v1\nv2\n"
    assert rolled_back_to(cli, workspace, "2020-02-29") == "v1\n"  # a date alone is its start
    assert rolled_back_to(cli, workspace, "2020-03-01") == "v1\nv2\nv3\n"  # v3 at midnight exactly, v4 after
    assert rolled_back_to(cli, workspace, "2020-03-01T00:00:00.0003") == "v1\nv2\nv3\n"
    done = cli("rollback", "--to", "2020-03-01T00:00:00.000", "--force", "--no-index", "--json")
    assert done.returncode == 0 and done.json()["moment"] == "2020-03-01T00:00:00.000999Z", done.stdout
    assert (workspace / "memory" / "a.md").read_text() == "v1\nv2\nv3\nv4\n"


def test_the_moment_a_time_means_is_shown_and_read_back_alike():
    """One rule: each time means the last microsecond of its unit, shown so; that shown moment, given
    again, means the same; a time printed to the millisecond is never after the time it prints."""
    for given, shown in (("2026-12-01T10:00:00.123Z", "2026-12-01T10:00:00.123999Z"),
                         ("2026-12-01T10:00:00.123456", "2026-12-01T10:00:00.123456Z"),
                         ("2026-12-01T10:00:00", "2026-12-01T10:00:00.999999Z"),
                         ("2026-12-01 10:00", "2026-12-01T10:00:59.999999Z"),
                         ("2026-12-01T10Z", "2026-12-01T10:59:59.999999Z"),
                         ("2026-12-01T10-05", "2026-12-01T15:59:59.999999Z"),
                         ("2026-12-01", "2026-12-01T00:00:00.000000Z")):
        when, said = time_meant(given)
        assert said == shown == iso_moment(when), given
        assert time_meant(said)[0] == when, given
    for seconds in (BASE + 0.1234, BASE + 0.1236, BASE + 0.9996, BASE + 0.99999951):
        printed = iso_time(seconds)
        assert printed[:-1] <= iso_moment(seconds)[:-1] and time_meant(printed)[0] >= seconds, (seconds, printed)


def test_a_time_whose_unit_has_not_ended_means_now(cli, workspace):
    """A minute still running ends in the future: the rollback goes up to now (what its first look
    logs comes after), and says so; a time to come is still refused."""
    write(workspace / "memory" / "a.md", "v1\n")
    assert cli("read", "memory/a.md").returncode == 0
    this_minute = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M")
    before = time.time()
    done = cli("rollback", "--to", this_minute, "--dry-run", "--json")
    after = time.time()
    if dt.datetime.fromtimestamp(after, dt.UTC).strftime("%Y-%m-%dT%H:%M") != this_minute:
        return  # the minute ended meanwhile
    assert done.returncode == 0 and iso_moment(before) <= done.json()["moment"] <= iso_moment(after), done.stdout
    assert [f["fate"] for f in done.json()["files"]] == ["unchanged"]


def _fs_past(seconds: float, scratch) -> int:
    """Write ``scratch`` until the file system's clock (its ctime) is past ``seconds``, no sleep: its ctime."""
    while (ctime := os.stat(write(scratch, "tick\n")).st_ctime_ns) <= seconds * 1e9:
        pass
    return ctime


@pytest.mark.parametrize("case", ["written-again-after-rm", "editor-save"])
def test_a_change_by_hand_before_the_moment_first_seen_after_it_is_what_the_note_held(cli, workspace, tmp_path,
                                                                                      monkeypatch, case):
    """The review's cases: a note the history knew before the moment (the agent wrote it, then removed
    it; or the agent wrote it and a person's editor saved over it), changed by hand before the moment and
    first seen after it (a `read`; then, in the second case, the agent's write). The rollback replayed the
    entries up to the moment and took no notice of the sighting's logged dates: it archived the note
    written again, or put the agent's v1 back over the person's edit. The sighting's mtime and ctime,
    both before the moment, say what the note held then."""
    import openclaw_memory.rollback.plan as plan_module

    monkeypatch.setattr(plan_module, "guard_ns", lambda *roots: 0)  # the moment placed between two ticks
    scratch, note = tmp_path / "tick", workspace / "memory" / "n.md"
    assert cli("write", "memory/n.md", "--append", "agent v1", "--no-index").returncode == 0
    if case == "written-again-after-rm":
        assert cli("rm", "memory/n.md", "--no-index").returncode == 0
        _fs_past(time.time(), scratch)
        write(note, "written by hand\n")
    else:
        _fs_past(time.time(), scratch)
        os.replace(write(workspace / "memory" / ".n.md.swp", "written by hand\n"), note)
    since = os.stat(note).st_ctime_ns
    later = _fs_past((since + 2_000_000) / 1e9, scratch)
    moment = (since + later) / 2e9
    _fs_past(moment, scratch)
    assert cli("read", "memory/n.md").returncode == 0  # first sighting, after the moment
    if case == "editor-save":
        assert cli("write", "memory/n.md", "--append", "agent v3", "--no-index").returncode == 0
    done = cli("rollback", "--to", iso_moment(moment), "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "written by hand\n", done.stdout


def test_notes_deleted_or_moved_by_hand_that_state_found_gone_stay_gone_in_a_rollback_to_after(cli, workspace, clock):
    """`state` said "deleted" of a note removed by hand, but nothing was logged: a rollback to a moment
    after it brought the note back, and after a shell `mv a c` and the agent's `mv b a` it rewrote a.md
    with c.md's text (a.md = c.md = "alpha", a state that never was). A look at the whole workspace logs
    the removal it finds, dated then; `restore --last` brings the note back."""
    clock.now = BASE
    for name, text in (("old", "old note"), ("a", "alpha"), ("b", "bravo")):
        assert cli("write", f"memory/{name}.md", "--append", text, "--no-index").returncode == 0
    os.unlink(workspace / "memory" / "old.md")
    os.rename(workspace / "memory" / "a.md", workspace / "memory" / "c.md")
    clock.now = BASE + 10
    state = cli("state", "--json")
    assert {f["path"]: f["state"] for f in state.json()["files"]}["memory/old.md"] == "read_stale", state.stdout
    moment = iso_time(BASE + 20)
    clock.now = BASE + 30
    assert cli("mv", "memory/b.md", "memory/a.md", "--no-index").returncode == 0
    done = cli("rollback", "--to", moment, "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    held = {p.name: p.read_text() for p in (workspace / "memory").iterdir() if p.suffix == ".md"}
    assert held == {"b.md": "bravo\n", "c.md": "alpha\n"}, held
    assert cli("restore", "memory/old.md", "--last", "--no-index").returncode == 0
    assert (workspace / "memory" / "old.md").read_text() == "old note\n"


def test_a_note_back_with_the_bytes_it_had_when_removed_is_logged_there_again(cli, workspace, clock):
    """A branch switched away and back (`state` in between logged the removal): the note came back
    with the bytes the removal logged, and a sighting of the same version logged nothing, so the
    history said "removed" of a note there and just read, and a rollback to that moment archived it.
    The same for a note an `rm` removed and a person put back as it was."""
    clock.now = BASE
    note = write(workspace / "memory" / "ops.md", "deploy key rotation: every 90 days\n")
    assert cli("read", "memory/ops.md").returncode == 0
    note.unlink()
    clock.now = BASE + 10
    assert cli("state").returncode == 0
    clock.now = BASE + 20
    write(note, "deploy key rotation: every 90 days\n")
    assert cli("read", "memory/ops.md").returncode == 0
    assert [e["origin"] for e in cli("history", "memory/ops.md", "--json").json()["versions"]][0] == "external-edit"
    moment = iso_time(BASE + 30)
    clock.now = BASE + 40
    plan = cli("rollback", "--to", moment, "--dry-run", "--json")
    assert plan.returncode == 0, plan.stderr
    assert {f["path"]: f["fate"] for f in plan.json()["files"]}["memory/ops.md"] == "unchanged", plan.stdout


def test_history_of_a_note_deleted_by_hand_logs_its_removal_but_not_of_an_extra_path_not_mounted(cli, workspace, clock,
                                                                                                   tmp_path):
    """`history PATH` looks at the note: found gone, the removal is logged then (restore --last brings
    it back). A note of an extra path whose folder is empty (a disk not mounted: its mount point) is
    not, by `state` either: logged removed, the note was archived by a rollback once the disk was back."""
    clock.now = BASE
    extra = tmp_path / "usb" / "notes"
    extra.mkdir(parents=True)
    env = {"OPENCLAW_MEMORY_EXTRA_PATHS": str(extra)}
    for path in ("memory/gone.md", "memory/stays.md", str(extra / "trip.md")):
        assert cli("write", path, "--append", "kept", "--no-index", env=env).returncode == 0
    os.unlink(workspace / "memory" / "gone.md")
    (extra / "trip.md").unlink()  # the disk unmounted: its mount point an empty folder
    clock.now = BASE + 10
    origins = [v["origin"] for v in cli("history", "memory/gone.md", "--json", env=env).json()["versions"]]
    assert origins == ["remove", "agent-write"], origins
    assert cli("history", str(extra / "trip.md"), "--json", env=env).returncode == 0
    assert cli("state", env=env).returncode == 0
    logged = [(e["path"], e["origin"]) for e in cli("log", "--json", env=env).json()["entries"]]
    assert ("../usb/notes/trip.md", "remove") not in logged and ("memory/gone.md", "remove") in logged, logged
    write(extra / "trip.md", "kept\n")  # mounted again
    moment = iso_time(BASE + 20)
    clock.now = BASE + 30
    plan = cli("rollback", "--to", moment, "--dry-run", "--json", env=env)
    assert {f["path"]: f["fate"] for f in plan.json()["files"]}["../usb/notes/trip.md"] == "unchanged", plan.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="a bind mount needs root")
def test_a_note_of_a_memory_folder_mounted_from_elsewhere_is_not_logged_removed_while_unmounted(cli, workspace, clock,
                                                                                                tmp_path):
    """memory/ a mount point, the workspace holding MEMORY.md beside it: unmounted, every note under it
    was logged removed (the workspace holds something), and once it was mounted again a rollback to a
    moment after archived them."""
    disk = tmp_path / "disk"
    disk.mkdir()
    write(workspace / "MEMORY.md", "# ws\n")
    (workspace / "memory").mkdir(exist_ok=True)
    subprocess.run(["mount", "--bind", str(disk), str(workspace / "memory")], check=True)
    try:
        clock.now = BASE
        assert cli("write", "memory/project.md", "--append", "- the plan", "--no-index").returncode == 0
        subprocess.run(["umount", str(workspace / "memory")], check=True)
        clock.now = BASE + 10
        assert cli("state").returncode == 0
        assert cli("history", "memory/project.md").returncode == 0
        subprocess.run(["mount", "--bind", str(disk), str(workspace / "memory")], check=True)
        moment = iso_time(BASE + 20)
        clock.now = BASE + 30
        plan = cli("rollback", "--to", moment, "--dry-run", "--json")
        assert {f["path"]: f["fate"] for f in plan.json()["files"]}["memory/project.md"] == "unchanged", plan.stdout
    finally:
        subprocess.run(["umount", str(workspace / "memory")], capture_output=True)
