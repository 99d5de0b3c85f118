"""``rollback --to SNAPSHOT|TIME``: a workspace of 20 memory files edited, added to and removed from
after a watchdog snapshot (or a time) comes back byte for byte, and goes forward again with a
second rollback to the moment its result names; ``--dry-run`` changes nothing; a session that has
not read the files is blocked unless ``--force``; a SIGKILL at any step leaves every byte in the
files or the history, and ``doctor --fix`` (or the next rollback) finishes it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xxhash

from conftest import NOBODY, env_for, fault, run_paused, settings_for, write
from openclaw_memory.fsutil.fsclock import guard_ns
from openclaw_memory.history.store import HistoryStore
from openclaw_memory.rollback.journal import read_intent
from openclaw_memory.rollback.plan import iso_moment
from openclaw_memory.types import typed_moment


def version_of(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def memory_files(workspace: Path) -> dict[str, bytes]:
    """Every file under the workspace (memory or not, hidden leftovers too), by relative path."""
    return {str(p.relative_to(workspace)): p.read_bytes() for p in sorted(workspace.rglob("*")) if p.is_file()}


def make_twenty(workspace: Path) -> None:
    write(workspace / "MEMORY.md", "# Memory\n\n- the user prefers tea\n")
    write(workspace / "USER.md", "# User\n\nName: Ada\n")
    for i in range(18):
        write(workspace / "memory" / f"topic-{i:02d}.md", f"# Topic {i}\n\nFact number {i}.\n" * (i + 1))


def change_everything(workspace: Path, cli) -> None:
    """7 files edited (4 by the agent, 3 by hand), 5 added (2 by the agent), 4 removed (2 with rm)."""
    for i in range(4):
        assert cli("write", f"memory/topic-{i:02d}.md", "--append", f"agent line {i}", "--no-index").returncode == 0
    write(workspace / "memory" / "topic-04.md", "rewritten by hand\n")
    write(workspace / "memory" / "topic-05.md", b"bytes \xff\xfe that are not UTF-8\n")
    write(workspace / "MEMORY.md", "# Memory\n\n- the user prefers coffee now\n")
    for name in ("new-a", "new-b"):
        assert cli("write", f"memory/{name}.md", "--append", f"made by the agent: {name}", "--no-index").returncode == 0
    write(workspace / "memory" / "2026-12-05.md", "a daily note\n")
    write(workspace / "memory" / "deep" / "er" / "nested.md", "nested\n")
    write(workspace / "memory" / "new-c.md", "")  # an empty file is a file too
    assert cli("rm", "memory/topic-10.md", "--no-index").returncode == 0
    assert cli("rm", "memory/topic-11.md", "--no-index").returncode == 0
    os.remove(workspace / "memory" / "topic-12.md")
    os.remove(workspace / "memory" / "topic-13.md")


def read_all(cli, workspace: Path) -> None:
    for rel in memory_files(workspace):
        assert cli("read", rel).returncode == 0, rel


def rows(state_dir: Path, workspace: Path) -> int:
    store = HistoryStore.for_settings(settings_for(workspace, state_dir))
    return store.db.one("SELECT COUNT(*) FROM versions")[0]


def test_twenty_files_come_back_as_at_a_snapshot_byte_for_byte_and_go_forward_again(cli, workspace, state_dir):
    make_twenty(workspace)
    read_all(cli, workspace)
    assert cli("watchdog", "snapshot", "before-session").returncode == 0
    at_snapshot = memory_files(workspace)
    change_everything(workspace, cli)
    after_session = memory_files(workspace)
    assert after_session != at_snapshot

    # --dry-run: each file's fate, nothing changed (the files, the history).
    logged = rows(state_dir, workspace)
    dry = cli("rollback", "--to", "before-session", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    fates = {f["path"]: f["fate"] for f in dry.json()["files"]}
    assert sorted(p for p, f in fates.items() if f == "rewrite") == sorted(
        ["MEMORY.md", *(f"memory/topic-{i:02d}.md" for i in range(6))])
    assert sorted(p for p, f in fates.items() if f == "archive") == sorted(
        ["memory/new-a.md", "memory/new-b.md", "memory/new-c.md", "memory/2026-12-05.md", "memory/deep/er/nested.md"])
    assert sorted(p for p, f in fates.items() if f == "bring-back") == [f"memory/topic-{i}.md" for i in range(10, 14)]
    assert list(fates.values()).count("unchanged") == 20 - 7 - 4
    assert memory_files(workspace) == after_session and rows(state_dir, workspace) == logged

    # Files edited by hand since this session read them: blocked (exit 3), nothing changed.
    blocked = cli("rollback", "--to", "before-session")
    assert blocked.returncode == 3 and "has not read as they are now" in blocked.stderr and "--force" in blocked.stderr
    assert memory_files(workspace) == after_session

    done = cli("rollback", "--to", "before-session", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert memory_files(workspace) == at_snapshot  # byte for byte, and no leftover anywhere
    result = done.json()
    assert result["moment"] == "before-session" and result["undo"]
    memory = cli("log", "--json").json()
    origins = {(e["path"], e["origin"]) for e in memory["entries"]}
    assert ("memory/topic-04.md", "restore") in origins and ("memory/new-a.md", "remove") in origins
    assert ("memory/topic-12.md", "restore") in origins  # brought back: a restore

    # A second rollback to the moment just before the first one undoes it (this session wrote every
    # file it replaces, so no --force), and nothing was lost on the way.
    again = cli("rollback", "--to", result["undo"], "--json")
    assert again.returncode == 0, again.stderr
    assert memory_files(workspace) == after_session
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None


def test_a_time_rolls_back_by_the_history_and_the_next_rollback_undoes_it(cli, workspace, state_dir):
    make_twenty(workspace)
    assert cli("state").returncode == 0  # the history sees every file as it is now
    read_all(cli, workspace)
    at_then = memory_files(workspace)
    moment = time.time()
    while time.time() <= moment + 0.001:  # every later entry after the moment
        time.sleep(0.001)
    change_everything(workspace, cli)
    after_session = memory_files(workspace)
    iso = iso_moment(moment + 2e-6)

    done = cli("rollback", "--to", iso, "--force", "--json")
    assert done.returncode == 0, done.stderr
    # The notes written by hand since, which the history never saw before, may as well be notes of then
    # changed since (their first sighting's dates are after the moment): left as they are, each named.
    made_by_hand = ("memory/2026-12-05.md", "memory/deep/er/nested.md", "memory/new-c.md")
    assert memory_files(workspace) == {**at_then, **{p: after_session[p] for p in made_by_hand}}
    assert sorted(w.split(" left as it is: ")[0] for w in done.json()["warnings"] if " is unknown (" in w) == sorted(made_by_hand)
    assert cli("rollback", "--to", done.json()["undo"], "--json").returncode == 0
    assert memory_files(workspace) == after_session


def test_a_clock_stepped_back_between_two_writes_replays_them_in_the_order_made(cli, workspace, monkeypatch):
    """A rollback replays a path's entries in time order (1c597cd, for an import's earlier-dated
    versions): write A at t, the clock stepped back, write B at t-3; a rollback to any moment after
    t rewrote the file to A, though it held B."""
    import openclaw_memory.history.store as store_module

    class Clock:
        now = time.time() - 1000

        def __getattr__(self, name):
            return getattr(time, name)

        def time(self):
            return self.now

    clock = Clock()
    monkeypatch.setattr(store_module, "time", clock)
    write(workspace / "memory" / "a.md", "# A\n")
    assert cli("read", "memory/a.md").returncode == 0
    clock.now += 100
    assert cli("write", "memory/a.md", "--append", "- first", "--no-index").returncode == 0
    clock.now -= 3  # the clock steps back (NTP, a VM restored)
    assert cli("write", "memory/a.md", "--append", "- second", "--no-index").returncode == 0
    held = (workspace / "memory" / "a.md").read_text()
    done = cli("rollback", "--to", iso_moment(clock.now + 50), "--json")
    assert done.returncode == 0, done.stderr
    assert (workspace / "memory" / "a.md").read_text() == held == "# A\n- first\n- second\n"
    # A clock that ran far ahead and was set right: the writes after it are dated now, not in that
    # future (a rollback to now would leave them out).
    clock.now += 10 * 365 * 86400
    assert cli("write", "memory/a.md", "--append", "- from the future", "--no-index").returncode == 0
    clock.now -= 10 * 365 * 86400 - 100
    assert cli("write", "memory/a.md", "--append", "- third", "--no-index").returncode == 0
    latest = cli("history", "memory/a.md", "--json").json()["versions"]
    assert sorted(v["time"] for v in latest)[-2] < iso_moment(clock.now + 1) < sorted(v["time"] for v in latest)[-1]


def test_a_time_before_moves_puts_each_file_back_under_the_name_it_had(cli, workspace, state_dir):
    """A moved file's history follows it to its new path, each entry keeping the name it had: a
    rollback to a time before the move left the file at its new path (unchanged) and its old name
    empty; a forced move's replaced file and a name used again after a move too."""
    write(workspace / "memory" / "a.md", "# A\n")
    write(workspace / "memory" / "b.md", "# B\n")
    write(workspace / "memory" / "c.md", "# C\n")
    write(workspace / "MEMORY.md", "# Memory\n")
    read_all(cli, workspace)
    at_then = memory_files(workspace)
    moment = time.time()
    while time.time() <= moment + 0.001:  # every later entry after the moment
        time.sleep(0.001)
    assert cli("mv", "memory/a.md", "memory/projects/a.md", "--no-index").returncode == 0
    assert cli("mv", "memory/projects/a.md", "memory/projects/renamed.md", "--no-index").returncode == 0
    assert cli("read", "memory/b.md").returncode == 0
    assert cli("mv", "memory/c.md", "memory/b.md", "--force", "--no-index").returncode == 0
    assert cli("write", "memory/a.md", "--append", "a new note under the old name", "--no-index").returncode == 0
    after = memory_files(workspace)

    dry = cli("rollback", "--to", iso_moment(moment + 2e-6), "--dry-run", "--json")
    assert {f["path"]: f["fate"] for f in dry.json()["files"]} == {
        "MEMORY.md": "unchanged", "memory/a.md": "rewrite", "memory/b.md": "rewrite", "memory/c.md": "bring-back",
        "memory/projects/renamed.md": "archive"}
    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert memory_files(workspace) == at_then
    assert cli("rollback", "--to", done.json()["undo"], "--force", "--json").returncode == 0
    assert memory_files(workspace) == after


def test_names_a_note_was_moved_through_are_no_memory_files_of_a_rollback(cli, workspace, state_dir):
    """After a -> b -> c, a rollback to a time after the moves (or before them) lists only the
    names that hold a note now or held one then: a.md and b.md, empty both then and now, were
    listed "unchanged" (JSON version null) and counted in "N of M memory files"."""
    write(workspace / "memory" / "a.md", "# A\n")
    write(workspace / "memory" / "x.md", "# X\n")
    read_all(cli, workspace)
    before = time.time()
    while time.time() <= before + 0.001:
        time.sleep(0.001)
    assert cli("mv", "memory/a.md", "memory/b.md", "--no-index").returncode == 0
    assert cli("mv", "memory/b.md", "memory/c.md", "--no-index").returncode == 0
    moved = memory_files(workspace)
    after = time.time()
    while time.time() <= after + 0.001:
        time.sleep(0.001)

    dry = cli("rollback", "--to", iso_moment(after), "--dry-run", "--json")
    assert {f["path"]: f["fate"] for f in dry.json()["files"]} == {"memory/c.md": "unchanged", "memory/x.md": "unchanged"}
    text = cli("rollback", "--to", iso_moment(after), "--dry-run")
    assert "memory/a.md" not in text.stdout and "memory/b.md" not in text.stdout
    assert "0 of 2 memory files would change" in text.stdout
    back = cli("rollback", "--to", iso_moment(before), "--dry-run", "--json")
    assert {f["path"]: f["fate"] for f in back.json()["files"]} == {
        "memory/a.md": "bring-back", "memory/c.md": "archive", "memory/x.md": "unchanged"}
    done = cli("rollback", "--to", iso_moment(before), "--json")
    assert done.returncode == 0, done.stderr
    assert memory_files(workspace) == {"memory/a.md": b"# A\n", "memory/x.md": b"# X\n"}
    assert "memory/b.md" not in {f["path"] for f in done.json()["files"]}
    assert cli("rollback", "--to", done.json()["undo"], "--json").returncode == 0
    assert memory_files(workspace) == moved


@pytest.mark.parametrize(("other", "fates"), [
    # `mv a x`, then `mv b x --force`: x's history holds both files' entries, interleaved, and the
    # first move emptied every name of it, b's too: a rollback to a time between the two moves left
    # b.md out ("unchanged", absent), though it held "# B" then.
    ("# B\n", {"memory/b.md": "bring-back", "memory/x.md": "rewrite"}),
    # b.md a copy of a.md (the same bytes): the first move emptied every name holding its bytes,
    # b.md's too, though only a.md moved.
    ("# A\n", {"memory/b.md": "bring-back", "memory/x.md": "unchanged"}),
], ids=["another-note", "a-copy"])
def test_a_note_whose_history_a_later_forced_move_merged_is_kept_at_a_time_between(cli, workspace, state_dir, other, fates):
    write(workspace / "memory" / "a.md", "# A\n")
    write(workspace / "memory" / "b.md", other)
    read_all(cli, workspace)
    assert cli("mv", "memory/a.md", "memory/x.md", "--no-index").returncode == 0
    between = memory_files(workspace)
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    assert cli("read", "memory/x.md").returncode == 0
    assert cli("mv", "memory/b.md", "memory/x.md", "--force", "--no-index").returncode == 0
    after = memory_files(workspace)

    done = cli("rollback", "--to", iso_moment(moment), "--json")
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]} == fates
    assert memory_files(workspace) == between == {"memory/b.md": other.encode(), "memory/x.md": b"# A\n"}
    assert cli("rollback", "--to", done.json()["undo"], "--json").returncode == 0
    assert memory_files(workspace) == after


def test_a_time_whose_entries_retention_dropped_is_refused_whole(cli, workspace, state_dir):
    """Before a path's oldest entry kept (`[history] keep_per_path` dropped the older ones), what it
    held is not known: refused in one line, nothing changed (never taken for "not made yet")."""
    write(state_dir / "openclaw-memory.toml", "[history]\nkeep_per_path = 2\n")
    write(workspace / "memory" / "a.md", "v0\n")
    assert cli("read", "memory/a.md").returncode == 0
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    for i in range(1, 4):
        assert cli("write", "memory/a.md", "--append", f"v{i}", "--no-index").returncode == 0
    before = memory_files(workspace)
    refused = cli("rollback", "--to", iso_moment(moment), "--force")
    assert refused.returncode == 1 and "retention dropped those entries" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and memory_files(workspace) == before


def test_a_note_moved_from_where_it_cannot_come_back_is_left_where_it_is_never_archived(cli, workspace, tmp_path):
    """Moved out of a folder that is a file now: a rollback to before the move cannot bring it back
    there, and archived it where it is, so the note left the memory. Moved out of an extra path
    naming one file (gone since), it goes back there: that name was refused as no memory path, so
    the note was left where it was, with a warning."""
    solo = tmp_path / "solo.md"
    write(solo, "# Solo\n")
    write(workspace / "memory" / "sub" / "a.md", "# A\n")
    extra = ("--extra", str(solo))
    assert cli("read", str(solo), *extra).returncode == 0 and cli("read", "memory/sub/a.md", *extra).returncode == 0
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    assert cli("mv", str(solo), "memory/solo.md", "--no-index", *extra).returncode == 0
    assert cli("mv", "memory/sub/a.md", "memory/a.md", "--no-index", *extra).returncode == 0
    (workspace / "memory" / "sub").rmdir()
    write(workspace / "memory" / "sub", "a file where the folder was\n")

    done = cli("rollback", "--to", iso_moment(moment), "--json", *extra)
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]} == {
        "memory/a.md": "unchanged", "memory/solo.md": "archive", "../solo.md": "bring-back"}
    assert solo.read_text() == "# Solo\n" and not (workspace / "memory" / "solo.md").exists()
    assert (workspace / "memory" / "a.md").read_text() == "# A\n"
    warnings = " ".join(done.json()["warnings"])
    assert "memory/sub/a.md left as it is" in warnings and "memory/a.md left as it is" in warnings
    assert "solo" not in warnings


def test_a_note_moved_to_an_extra_path_configured_no_more_comes_back_to_the_workspace(cli, workspace, tmp_path):
    """Its history lives under the extra path's file now, and that path is no memory of this
    workspace any more; the name it had at the moment is, and gets the note back (the extra path's
    file is not this workspace's memory: left alone)."""
    extra = tmp_path / "notes"
    extra.mkdir()
    write(workspace / "memory" / "a.md", "# A\n")
    assert cli("read", "memory/a.md").returncode == 0
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    assert cli("mv", "memory/a.md", str(extra / "a.md"), "--extra", str(extra), "--no-index").returncode == 0
    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--json")
    assert done.returncode == 0, done.stderr
    assert [(f["path"], f["fate"]) for f in done.json()["files"]] == [("memory/a.md", "bring-back")]
    assert (workspace / "memory" / "a.md").read_text() == "# A\n" and (extra / "a.md").read_text() == "# A\n"


def test_a_note_whose_folder_is_a_file_now_is_left_with_a_warning_never_journaled(cli, workspace, state_dir):
    """`memory/sub` a file where the removed note's folder was: the bring-back was planned, its step
    failed after the intent was journaled, and every later rollback and doctor --fix failed on it again."""
    write(workspace / "memory" / "sub" / "a.md", "# A\n")
    write(workspace / "MEMORY.md", "# Memory\n")
    read_all(cli, workspace)
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    assert cli("rm", "memory/sub/a.md", "--no-index").returncode == 0
    (workspace / "memory" / "sub").rmdir()
    write(workspace / "memory" / "sub", "a file where the folder was\n")
    assert cli("write", "memory/new.md", "--stdin", "--no-index", input="made since\n").returncode == 0

    done = cli("rollback", "--to", iso_moment(moment + 2e-6), "--json")
    assert done.returncode == 0, done.stderr
    result = done.json()
    assert [(f["path"], f["fate"]) for f in result["files"]] == [("MEMORY.md", "unchanged"), ("memory/new.md", "archive")]
    assert any("memory/sub/a.md left as it is: a folder on its path is a file" in w for w in result["warnings"])
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None
    assert (workspace / "memory" / "sub").read_text() == "a file where the folder was\n"
    assert not (workspace / "memory" / "new.md").exists()


def test_bad_moments_are_refused_in_one_line(cli, workspace, state_dir):
    write(workspace / "memory" / "a.md", "a\n")
    for to, words in (("no-such-snapshot", "is neither a watchdog snapshot's label nor a time"),
                      # A day the calendar has not: why, as the date flags say it.
                      ("2026-13-45", "names no day: there is no month 13; nothing was changed"),
                      ("2026-02-30", "names no day: February 2026 has 28 days; nothing was changed"),
                      ("2027-02-29T10:00Z", "names no day: February 2027 has 28 days (2027 is not a leap year)"),
                      ("2026-12-06T23:60Z", "names no time: there is no minute 60 (a day's minutes run 0-59)"),
                      ("2026-12-06T24:00Z", "names no time: there is no hour 24 (a day's hours run 0-23)"),
                      ("2026-12-06T10:00+25:00", "names no time: an offset from UTC is less than a day, not +25:00"),
                      ("2026-12-06T12:00+01:99", "names no time: an offset from UTC is less than a day, not +01:99"),
                      ("2026-12-06T12:00-00:60", "names no time: an offset from UTC is less than a day, not -00:60"),
                      ("2026-W48-1", "is neither a watchdog snapshot's label nor a time"),  # (was 2026-11-23)
                      ("20261201", "is neither a watchdog snapshot's label nor a time"),
                      ("２０２６-11-03", "is neither a watchdog snapshot's label nor a time"),
                      ("", "is neither a watchdog snapshot's label nor a time"),
                      ("0001-01-01T00:00:00+05:00", "lies before 0001-01-01T00:00:00Z"),
                      # A leap second: said so (it was "neither a watchdog snapshot's label nor a time").
                      ("2016-12-31T23:59:60Z", "names a leap second (:60), which times here do not count: give 23:59:59.999999"),
                      ("9999-12-31T23:59:59Z", "is in the future"),
                      (iso_moment(time.time() + 3600), "is in the future")):
        refused = cli("rollback", "--to", to)
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1 and "Traceback" not in refused.stderr
    # A time to come archived every note the history had not seen yet (written by hand, never read).
    write(workspace / "memory" / "by-hand.md", "written by hand\n")
    assert cli("rollback", "--to", "2099-01-01", "--force").returncode == 2
    assert (workspace / "memory" / "by-hand.md").read_text() == "written by hand\n"
    said = cli("restore", "--all", "--to", "x")  # the spelling of the same command
    assert said.returncode == 2 and "is neither a watchdog snapshot's label nor a time" in said.stderr, said.stderr


@pytest.mark.parametrize("label", ["2026-12-01", "2020-01-01T10Z", "2026-12-01t10-05"])
def test_a_snapshot_label_that_reads_as_a_time_is_refused_saying_why(cli, workspace, label):
    """`rollback --to 2026-12-01` took a snapshot so labelled for the snapshot without a word, where
    the time was as likely meant: such a label is refused, by the parser `rollback --to` reads times with."""
    write(workspace / "memory" / "a.md", "v1\n")
    refused = cli("watchdog", "snapshot", label)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr
    assert "it reads as a time" in refused.stderr and f"before-{label}" in refused.stderr, refused.stderr
    assert cli("watchdog", "snapshot", f"before-{label}").returncode == 0
    assert cli("watchdog", "snapshot", "20261201").returncode == 0  # no time to `rollback --to` (refused there)


def test_a_snapshot_labelled_as_a_time_before_keeps_working_and_rollback_says_which_it_took(cli, workspace, monkeypatch):
    from openclaw_memory.watchdog import snapshot

    write(workspace / "memory" / "a.md", "v1\n")
    with monkeypatch.context() as m:  # as a release before this one took such a label
        m.setattr(snapshot, "validate_label", lambda label: label)
        assert cli("watchdog", "snapshot", "2020-01-01").returncode == 0
    write(workspace / "memory" / "a.md", "v2\n")
    write(workspace / "memory" / "b.md", "b\n")
    taken = cli("rollback", "--to", "2020-01-01", "--dry-run")
    assert taken.returncode == 0, taken.stderr
    assert "rewrite     memory/a.md" in taken.stdout and "archive     memory/b.md" in taken.stdout  # the snapshot's
    time_meant = iso_moment(typed_moment("2020-01-01"))
    assert (f"warning: 2020-01-01 is taken as the watchdog snapshot of that label, not as the time {time_meant} it also "
            f"reads as; for that time, give --to {time_meant}") in taken.stderr, taken.stderr
    as_json = cli("rollback", "--to", "2020-01-01", "--dry-run", "--json").json()
    assert as_json["snapshot"] is True and any("taken as the watchdog snapshot" in w for w in as_json["warnings"])
    at_the_time = cli("rollback", "--to", time_meant, "--dry-run")  # the history began after it: unknown
    assert "unchanged   memory/a.md" in at_the_time.stdout and "unchanged   memory/b.md" in at_the_time.stdout
    assert f"warning: memory/b.md left as it is: what it held at {time_meant} is unknown" in at_the_time.stderr
    assert "taken as the watchdog snapshot" not in at_the_time.stderr
    assert cli("rollback", "--to", "2020-01-01", "--force").returncode == 0
    assert (workspace / "memory" / "a.md").read_text() == "v1\n" and not (workspace / "memory" / "b.md").exists()


def test_a_snapshot_that_did_not_keep_every_file_is_refused_whole(cli, workspace, state_dir):
    write(workspace / "memory" / "a.md", "a\n")
    write(workspace / "memory" / "b.md", "b\n")
    assert cli("watchdog", "snapshot", "partial").returncode == 0
    assert cli("watchdog", "snapshot", "hashes-only").returncode == 0
    db = HistoryStore.for_settings(settings_for(workspace, state_dir)).db
    with db.transaction() as conn:  # as a file too big to keep, and as an earlier release's snapshot
        conn.execute("DELETE FROM snapshot_files WHERE label = 'partial' AND path = CAST('memory/b.md' AS BLOB)")
        conn.execute("DELETE FROM snapshot_files WHERE label = 'hashes-only'")
    write(workspace / "memory" / "a.md", "changed\n")
    write(workspace / "memory" / "b.md", "changed too\n")  # what partial did not keep
    for label, words in (("partial", "did not keep the bytes of memory/b.md (too large to keep, or changing while it "
                                     "was taken), and it has changed since"),
                         ("hashes-only", "was taken before snapshots kept the files' content")):
        refused = cli("rollback", "--to", label, "--force")
        assert refused.returncode == 1 and words in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert (workspace / "memory" / "a.md").read_text() == "changed\n"


def test_a_file_too_large_for_the_snapshot_to_keep_is_left_when_unchanged_and_refuses_only_once_changed(
        cli, workspace, state_dir, tmp_path):
    """A file the snapshot recorded but could not keep (over [watchdog] max_bytes / 8) refused every
    rollback to it, unchanged since or not, sending the user to a time, which does not hold those
    bytes either: a note only the snapshot saw could not be given back. As the snapshot saw it
    (same kind, same hash), it needs nothing put back: it is unchanged and the rollback goes on."""
    write(state_dir / "openclaw-memory.toml", "[watchdog]\nmax_bytes = 8000\n")  # keeps files of at most 1000 bytes
    note, big = write(workspace / "memory" / "note.md", "keep this\n"), write(workspace / "memory" / "big.md", "x" * 1001)
    taken = cli("watchdog", "snapshot", "base")
    assert taken.returncode == 0 and "memory/big.md (1001 bytes) is too large for the snapshot" in taken.stderr, taken.stderr
    write(note, "clobbered\n")
    dry = cli("rollback", "--to", "base", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "unchanged   memory/big.md" in dry.stdout and "rewrite     memory/note.md" in dry.stdout, dry.stdout
    done = cli("rollback", "--to", "base", "--force")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "keep this\n" and big.read_text() == "x" * 1001
    # Changed since, or a symlink to those bytes now (never followed): nothing can put it back.
    write(note, "clobbered\n")
    write(tmp_path / "outside.md", "x" * 1001)
    for change in (lambda: write(big, "y" * 1001), lambda: (big.unlink(), big.symlink_to(tmp_path / "outside.md"))):
        change()
        refused = cli("rollback", "--to", "base", "--force")
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert ("snapshot base did not keep the bytes of memory/big.md (too large to keep, or changing while it was "
                "taken), and it has changed since: the rollback cannot put it back; a rollback to a time puts back "
                "only the versions the history holds") in refused.stderr, refused.stderr
        assert "give a time instead" not in refused.stderr
        assert note.read_text() == "clobbered\n"


# -- SIGKILL ---------------------------------------------------------------------------------------

STEPS = ["rollback:journaled", "rollback:step:3", "rm:journaled", "rm:unlinked", "rollback:applied"]


def run_killed(workspace: Path, state_dir: Path, step: str, *args: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace, capture_output=True, text=True,
                          env=env_for(workspace, state_dir, **fault(f"{step}=kill")), timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {step}: {proc.returncode}\n{proc.stdout}\n{proc.stderr}"


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("finisher", ["doctor", "rollback"])
def test_a_rollback_killed_at_any_step_loses_nothing_and_is_finished(cli, workspace, state_dir, step, finisher):
    make_twenty(workspace)
    read_all(cli, workspace)
    assert cli("watchdog", "snapshot", "base").returncode == 0
    at_snapshot = memory_files(workspace)
    change_everything(workspace, cli)
    after_session = memory_files(workspace)

    run_killed(workspace, state_dir, step, "rollback", "--to", "base", "--force")
    settings = settings_for(workspace, state_dir)
    assert read_intent(settings.data_dir) is not None
    # Every byte is recoverable: each version of both sides is in the history (or in the file).
    objects = HistoryStore.for_settings(settings).objects
    for data in {*at_snapshot.values(), *after_session.values()}:
        assert objects.read_bytes(version_of(data)) == data

    if finisher == "doctor":
        plain = cli("doctor", "--json")
        assert plain.returncode == 1 and "interrupted-rollback" in {f["id"] for f in plain.json()["findings"]}, plain.stdout
        fixed = cli("doctor", "--fix", "--json")
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
        assert repair["status"] == "completed"
    else:
        again = cli("rollback", "--to", "base", "--json")
        assert again.returncode == 0, again.stderr
        assert any("finished the interrupted rollback" in w for w in again.json().get("warnings", []))
    assert read_intent(settings.data_dir) is None
    assert memory_files(workspace) == at_snapshot
    assert cli("doctor").returncode == 0


def test_the_versions_an_interrupted_rollback_needs_are_not_evicted_before_it_is_finished(cli, workspace, state_dir):
    """Other writes may run between the kill and the finish; they push the history past max_bytes,
    and the least recently used objects (the rollback's old versions) would go first."""
    import base64

    (state_dir / "openclaw-memory.toml").write_text("[history]\nmax_bytes = 8192\n")

    def noise() -> str:  # about 450 bytes once compressed
        return base64.b64encode(os.urandom(450)).decode() + "\n"

    for i in range(5):
        write(workspace / "memory" / f"kept-{i}.md", noise())
    assert cli("state").returncode == 0
    at_then = memory_files(workspace)
    moment = time.time()
    while time.time() <= moment + 0.001:
        time.sleep(0.001)
    for i in range(5):
        write(workspace / "memory" / f"kept-{i}.md", noise())
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", iso_moment(moment + 2e-6), "--force")
    for i in range(20):  # the agent goes on writing other notes meanwhile
        assert cli("write", f"memory/other-{i}.md", "--append", noise(), "--no-index").returncode == 0
    others = {k: v for k, v in memory_files(workspace).items() if "other-" in k}

    fixed = cli("doctor", "--fix", "--json")
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
    assert repair["status"] == "completed", repair
    assert memory_files(workspace) == at_then | others


def test_the_service_answers_a_rollback_and_its_dry_run(workspace, state_dir, cli):
    from test_serve import Serve

    write(workspace / "memory" / "a.md", "first\n")
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("watchdog", "snapshot", "s").returncode == 0
    assert cli("write", "memory/a.md", "--append", "second", "--no-index").returncode == 0
    service = Serve(workspace, state_dir, "--no-watch")
    try:
        service.wait_ready()
        steps = [cli("rollback", "--to", "s", "--dry-run", "--json"), cli("rollback", "--to", "s", "--json")]
        requests = cli("status", "--json").json()["service"]["requests"]
    finally:
        service.kill()
    for done in steps:
        assert done.returncode == 0 and done.stderr == "", done.stderr  # answered, no fallback said
    assert [f["fate"] for f in steps[0].json()["files"]] == ["rewrite"] and steps[0].json()["dryRun"]
    assert (workspace / "memory" / "a.md").read_text() == "first\n" and steps[1].json()["undo"]
    assert requests >= 3  # they went through the service


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "apply"])
def test_a_memory_path_that_is_a_folder_now_is_left_as_it_is_with_a_warning(cli, workspace, tmp_path, dry_run):
    """`mkdir memory/x.md` where a note was: every rollback, --dry-run too, exited 2 "cannot read
    memory/x.md (not a regular file)", where a symlink there was a warning and skipped; and the
    symlink's warning named it by its absolute path."""
    write(workspace / "memory" / "x.md", "x\n")
    write(workspace / "memory" / "s.md", "s\n")
    write(workspace / "memory" / "b.md", "b\n")
    assert cli("watchdog", "snapshot", "s").returncode == 0
    os.remove(workspace / "memory" / "x.md")
    (workspace / "memory" / "x.md").mkdir()
    os.remove(workspace / "memory" / "s.md")
    os.symlink(tmp_path, workspace / "memory" / "s.md")
    write(workspace / "memory" / "b.md", "changed\n")
    done = cli("rollback", "--to", "s", "--force", "--json", *(["--dry-run"] if dry_run else []))
    assert done.returncode == 0, done.stderr
    warnings = sorted(done.json()["warnings"])
    assert [w.split(":")[0] for w in warnings] == ["memory/s.md left as it is", "memory/x.md left as it is"], warnings
    assert "not a regular file" in warnings[1]
    assert [(f["path"], f["fate"]) for f in done.json()["files"]] == [("memory/b.md", "rewrite")]
    assert (workspace / "memory" / "b.md").read_text() == ("changed\n" if dry_run else "b\n")
    assert (workspace / "memory" / "x.md").is_dir()


@pytest.mark.parametrize("removing", [False, True], ids=["rewrite", "archive"])
def test_a_note_swapped_for_a_symlink_mid_rollback_is_left_and_leaves_no_record(cli, workspace, state_dir, tmp_path,
                                                                                  removing):
    """Swapped after the rollback journaled its steps: it stopped there, exit 2, and its record refused
    every later rollback and doctor --fix ("finish failed ... goes through a symlink") until the user
    deleted the symlink."""
    write(tmp_path / "secret.md", "SECRET\n")
    write(workspace / "memory" / "b.md", "b\n")
    if not removing:
        write(workspace / "memory" / "a.md", "a\n")
    assert cli("watchdog", "snapshot", "s").returncode == 0
    write(workspace / "memory" / "a.md", "a2\n")
    write(workspace / "memory" / "b.md", "b2\n")

    def swap() -> None:
        os.rename(workspace / "memory" / "a.md", tmp_path / "a-orig.md")
        os.symlink(tmp_path / "secret.md", workspace / "memory" / "a.md")

    code, _, err = run_paused(workspace, state_dir, ("rollback", "--to", "s", "--force"), "rollback:journaled", swap)
    assert code == 0, err
    assert "memory/a.md became a symlink or something else memory never replaces while the rollback ran" in err
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None
    assert (workspace / "memory" / "b.md").read_text() == "b\n"  # the rest is rolled back
    assert (tmp_path / "secret.md").read_text() == "SECRET\n" and (tmp_path / "a-orig.md").read_text() == "a2\n"
    assert "interrupted-rollback" not in cli("doctor").stdout
    assert cli("rollback", "--to", "s", "--force").returncode == 0


def test_a_memory_path_that_is_a_symlink_now_is_left_as_it_is_with_a_warning(cli, workspace, state_dir, tmp_path):
    write(workspace / "memory" / "a.md", "a\n")
    write(workspace / "memory" / "b.md", "b\n")
    assert cli("watchdog", "snapshot", "s").returncode == 0
    write(tmp_path / "elsewhere.md", "outside\n")
    os.remove(workspace / "memory" / "a.md")
    os.symlink(tmp_path / "elsewhere.md", workspace / "memory" / "a.md")
    write(workspace / "memory" / "b.md", "changed\n")
    done = cli("rollback", "--to", "s", "--force")
    assert done.returncode == 0, done.stderr
    (warning,) = done.stderr.strip().splitlines()
    assert "memory/a.md left as it is" in warning and "never follows symlinks" in warning
    assert (workspace / "memory" / "b.md").read_text() == "b\n"  # the rest is rolled back
    assert (workspace / "memory" / "a.md").is_symlink() and (tmp_path / "elsewhere.md").read_text() == "outside\n"


def _rollback_killed_then_b_edited(cli, workspace, state_dir) -> None:
    """A rollback to snapshot s of memory/a.md and b.md killed once journaled; then a person edits b.md."""
    write(workspace / "memory" / "a.md", "a at the snapshot\n")
    write(workspace / "memory" / "b.md", "b at the snapshot\n")
    assert cli("watchdog", "snapshot", "s").returncode == 0
    write(workspace / "memory" / "a.md", "a later\n")
    write(workspace / "memory" / "b.md", "b later\n")
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "s", "--force")
    write(workspace / "memory" / "b.md", "b edited after the kill\n")


def test_a_file_edited_after_a_killed_rollback_is_left_as_it_is_by_the_finish(cli, workspace, state_dir):
    _rollback_killed_then_b_edited(cli, workspace, state_dir)

    fixed = cli("doctor", "--fix", "--json")
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
    assert repair["status"] == "completed" and (
        "memory files are as they were at s except: memory/b.md (changed since; left as it is). To undo: "
        in repair["detail"]), repair["detail"]
    assert "every memory file" not in repair["detail"]  # it said so, then named b.md as left
    assert (workspace / "memory" / "a.md").read_text() == "a at the snapshot\n"
    assert (workspace / "memory" / "b.md").read_text() == "b edited after the kill\n"
    objects = HistoryStore.for_settings(settings_for(workspace, state_dir)).objects
    assert objects.read_bytes(version_of(b"b later\n")) == b"b later\n"  # what the rollback found is kept


def test_the_next_rollback_finishing_a_killed_one_names_what_it_left_without_claiming_every_file(cli, workspace, state_dir):
    """The finish the next `rollback` makes says the same as doctor's: no "every memory file" when one was left."""
    _rollback_killed_then_b_edited(cli, workspace, state_dir)

    again = cli("rollback", "--to", "s", "--force", "--json")
    assert again.returncode == 0, again.stderr
    (finished,) = [w for w in again.json()["warnings"] if w.startswith("finished the interrupted")]
    assert "memory files are as they were at s except: memory/b.md (changed since; left as it is). To undo: " in finished
    assert "every memory file" not in finished


def test_a_file_saved_while_its_step_runs_is_left_as_saved_and_the_rollback_goes_on(cli, workspace, state_dir):
    """A note made since the moment is archived by its step (an rm); an editor saves it while that
    step runs (paused after its intent, before its unlink). The save is kept, the note named as
    changed, and every other file still rolled back; before, the rollback stopped there, exit 3,
    half done until doctor --fix."""
    from conftest import wait_for_line

    make_twenty(workspace)
    read_all(cli, workspace)
    assert cli("watchdog", "snapshot", "base").returncode == 0
    at_snapshot = memory_files(workspace)
    change_everything(workspace, cli)
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "rollback", "--to", "base", "--force", "--json"],
                            cwd=workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(workspace, state_dir, **fault("rm:journaled=pause")))
    try:
        line = wait_for_line(proc.stderr, "test-hook: paused at rm:journaled")
        from openclaw_memory.history.fileops import read_intent as removal_under_way

        step = removal_under_way(settings_for(workspace, state_dir).data_dir)  # the archive step paused now
        assert step is not None and step.op == "remove"
        saved = Path(step.path)
        with open(saved, "a") as f:  # an editor appending while the step runs
            f.write("saved by hand mid-rollback\n")
        kept = saved.read_bytes()
        err = line
        while line:  # each later archive step pauses too: let it go on
            if "test-hook: paused at" in line:
                os.kill(proc.pid, signal.SIGUSR1)
            line = proc.stderr.readline()
            err += line
        out = proc.stdout.read()
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    result = json.loads(out)
    assert any(step.display in w and "changed while the rollback ran" in w for w in result["warnings"]), result
    assert saved.read_bytes() == kept
    now = memory_files(workspace)
    assert {p: b for p, b in now.items() if p != step.display} == at_snapshot
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None


def test_a_note_unchanged_since_before_the_moment_is_kept_though_the_history_saw_it_later(cli, workspace, state_dir):
    """A stranger's `rollback --to` ten minutes ago, in a workspace where the product never saw a note
    (written by hand, no watch running), archived that note as "made since": the history's first
    entry of it is the rollback's own look, after the moment. Its status-change time (ctime, which
    every write, rename and link of the file moves, and no `touch` can set back) says it has held
    these bytes since before the moment: it is left unchanged. A note made, or edited in place,
    after the moment, and every note for a moment before it was made, cannot tell what it held then
    (made since, or a person's note changed since): it was archived, on that guess; it is left as
    it is, and a warning names it."""
    write(workspace / "memory" / "old.md", "written by hand long ago\n")
    write(workspace / "memory" / "edited.md", "first words\n")
    made = time.time()
    moment = later_than(made, workspace)  # well past the file system's timestamp granularity, both ways
    later_than(moment, workspace)
    write(workspace / "memory" / "new.md", "made after the moment\n")
    with open(workspace / "memory" / "edited.md", "a") as edited:
        edited.write("more words\n")
    fates, warned = {}, {}
    for to in (iso_moment(moment), iso_moment(made - 1)):
        planned = cli("rollback", "--to", to, "--dry-run", "--json")
        assert planned.returncode == 0, planned.stderr
        fates[to] = {f["path"]: f["fate"] for f in planned.json()["files"]}
        warned[to] = {w.split(" left as it is: ")[0] for w in planned.json()["warnings"] if " is unknown (" in w}
    assert set(fates[iso_moment(moment)].values()) == set(fates[iso_moment(made - 1)].values()) == {"unchanged"}
    assert warned[iso_moment(moment)] == {"memory/edited.md", "memory/new.md"}
    assert warned[iso_moment(made - 1)] == {"memory/old.md", "memory/edited.md", "memory/new.md"}
    before = memory_files(workspace)
    done = cli("rollback", "--to", iso_moment(moment), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert memory_files(workspace) == before
    assert (workspace / "memory" / "old.md").read_text() == "written by hand long ago\n"


def test_a_note_the_agent_changed_removed_or_moved_after_its_first_read_comes_back_as_written_by_hand(cli, workspace,
                                                                                                           state_dir):
    """The review's case: three notes written by hand before the moment, first seen by the product after
    it (their first `read`), then appended to, removed and moved by the agent. A rollback to before the
    session archived MEMORY.md and the moved note and left the removed one gone ("are back as at"): the
    history's first entry of each came after the moment. That sighting's stat (its mtime and ctime, logged
    with it) says the bytes were already so before the moment: they are what each note held then."""
    write(workspace / "MEMORY.md", "# hand-written\n")
    write(workspace / "memory" / "p.md", "p\n")
    write(workspace / "memory" / "q.md", "q\n")
    at_moment = memory_files(workspace)
    moment = later_than(time.time(), workspace)
    later_than(moment, workspace)
    _agent_changes_removes_and_moves(cli)

    planned = cli("rollback", "--to", iso_moment(moment), "--dry-run", "--json")
    assert planned.returncode == 0, planned.stderr
    assert {f["path"]: f["fate"] for f in planned.json()["files"]} == {
        "MEMORY.md": "rewrite", "memory/p.md": "bring-back", "memory/q.md": "bring-back", "memory/q2.md": "archive"}
    done = cli("rollback", "--to", iso_moment(moment), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert memory_files(workspace) == at_moment
    # And forward again: the undo puts the agent's work back.
    assert cli("rollback", "--to", done.json()["undo"], "--force").returncode == 0
    assert sorted(memory_files(workspace)) == ["MEMORY.md", "memory/q2.md"]


def _agent_changes_removes_and_moves(cli) -> None:
    """The session the two tests above and below roll back: each note read first, then MEMORY.md
    appended to, memory/p.md removed and memory/q.md moved to memory/q2.md."""
    for name in ("MEMORY.md", "memory/p.md", "memory/q.md"):
        assert cli("read", name).returncode == 0
    assert cli("write", "MEMORY.md", "--append", "- agent note").returncode == 0
    assert cli("rm", "memory/p.md").returncode == 0
    assert cli("mv", "memory/q.md", "memory/q2.md").returncode == 0


def test_a_note_first_seen_after_the_moment_and_changed_by_then_is_left_and_named(cli, workspace, state_dir):
    """The same notes changed by hand after the moment, before the product first saw them: what they
    held at the moment is unknown (the sighting's mtime is after it). Nothing is archived or claimed on
    a guess: each is left as it is (the moved one under its new name, the removed one gone), and a
    warning names each, in text and in --json's warnings."""
    write(workspace / "MEMORY.md", "# hand-written\n")
    write(workspace / "memory" / "p.md", "p\n")
    write(workspace / "memory" / "q.md", "q\n")
    moment = later_than(time.time(), workspace)
    later_than(moment, workspace)
    for name in ("MEMORY.md", "memory/p.md", "memory/q.md"):
        with open(workspace / name, "a") as note:
            note.write("changed by hand after the moment\n")
    write(workspace / "memory" / "new.md", "made after the moment\n")
    _agent_changes_removes_and_moves(cli)
    before = memory_files(workspace)

    said = cli("rollback", "--to", iso_moment(moment), "--force")
    assert said.returncode == 0, said.stderr
    assert memory_files(workspace) == before
    names = ("MEMORY.md", "memory/p.md", "memory/q.md", "memory/q2.md", "memory/new.md")
    for name in names:
        assert f"warning: {name} left as it is: what it held at {iso_moment(moment)} is unknown" in said.stderr, said.stderr
    done = cli("rollback", "--to", iso_moment(moment), "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert {f["path"]: f["fate"] for f in done.json()["files"]} == dict.fromkeys(names, "unchanged")
    assert {w.split(" left as it is")[0] for w in done.json()["warnings"]} == set(names)
    assert memory_files(workspace) == before


def later_than(moment: float, workspace: Path) -> float:
    """Wait until the clock is past ``moment`` by five times the timestamp granularity a ctime
    compared with a moment allows for (10 ms on local file systems); the time then."""
    gap = 5 * guard_ns(workspace) / 1e9
    while time.time() <= moment + gap:
        time.sleep(gap / 10)
    return time.time()


def test_a_time_written_with_rfc_3339s_lower_case_letters_is_that_time(cli, workspace, state_dir):
    """RFC 3339 lets the ``T`` and the ``Z`` of a time be written in lower case
    (``2026-12-05t09:30:00z``); it was refused as neither a snapshot's label nor a time."""
    write(workspace / "memory" / "a.md", "a\n")
    moments = []
    for to in ("2026-01-02T03:04:05Z", "2026-01-02t03:04:05z", "2026-01-02t03:04:05+01:00"):
        planned = cli("rollback", "--to", to, "--dry-run", "--json")
        assert planned.returncode == 0, planned.stderr
        moments.append(planned.json()["moment"])
    # A time to the second means the end of that second (tests/test_rollback_moment.py).
    assert moments == ["2026-01-02T03:04:05.999999Z", "2026-01-02T03:04:05.999999Z", "2026-01-02T02:04:05.999999Z"]


def test_the_snapshot_an_interrupted_rollback_goes_back_to_is_not_pruned_of_its_bytes(cli, workspace, state_dir):
    """Snapshots taken between the kill and the finish prune the one the rollback goes back to
    (``[watchdog] keep = 1``); the content it kept of notes the history never logged (written and
    changed by hand) is held by nothing else, and went with it unless the rollback's pins hold it."""
    (state_dir / "openclaw-memory.toml").write_text("[watchdog]\nkeep = 1\n")
    for i in range(3):
        write(workspace / "memory" / f"by-hand-{i}.md", f"as at the snapshot {i}\n")
    assert cli("watchdog", "snapshot", "base").returncode == 0
    at_snapshot = memory_files(workspace)
    for i in range(3):
        write(workspace / "memory" / f"by-hand-{i}.md", f"changed by hand {i}\n")
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "base", "--force")
    for label in ("later-1", "later-2"):  # each prunes the one before: "base" goes first
        assert cli("watchdog", "snapshot", label).returncode == 0
    store = HistoryStore.for_settings(settings_for(workspace, state_dir))
    assert store.db.one("SELECT COUNT(*) FROM snapshots WHERE label = 'base'")[0] == 0

    fixed = cli("doctor", "--fix", "--json")
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
    assert repair["status"] == "completed", repair
    assert memory_files(workspace) == at_snapshot


def test_a_note_deleted_by_hand_before_the_moment_is_not_brought_back(cli, workspace, state_dir):
    """The history saw a note, then a person deleted it by hand (no command saw that): a rollback to
    a moment after the deletion brought it back, since the history's last word on it, before the
    moment, was a version. Its folder, unchanged since before the moment (an unlink moves the
    folder's ctime), says it was gone by then: it stays gone. A moment before the deletion brings it
    back, and so does one after it in a folder changed since (it cannot tell then)."""
    write(workspace / "memory" / "old" / "gone.md", "deleted by hand\n")
    write(workspace / "memory" / "kept.md", "a note\n")
    assert cli("state").returncode == 0  # the history sees both
    before = later_than(time.time(), workspace)
    later_than(before, workspace)
    os.remove(workspace / "memory" / "old" / "gone.md")
    after_deletion = later_than(time.time(), workspace)
    later_than(after_deletion, workspace)
    write(workspace / "memory" / "kept.md", "a note, edited\n")

    def fates(to: float) -> dict[str, str]:
        planned = cli("rollback", "--to", iso_moment(to), "--dry-run", "--json")
        assert planned.returncode == 0, planned.stderr
        return {f["path"]: f["fate"] for f in planned.json()["files"]}

    assert fates(after_deletion) == {"memory/kept.md": "rewrite"}  # gone then and now: no memory file of either
    assert fates(before)["memory/old/gone.md"] == "bring-back"
    write(workspace / "memory" / "old" / "new.md", "made in that folder since\n")
    assert fates(after_deletion)["memory/old/gone.md"] == "bring-back"


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_snapshot_says_which_memory_files_it_does_not_cover(cli, workspace, tmp_path, dry_run):
    """The notes a snapshot's .openclaw-memoryignore left out, and an extra path's, are left as they
    are, and a warning names them (it said `0 of 0 memory files would change`, exit 0, nothing more,
    with a note edited and read since): in text and in --json's warnings, dry run or not."""
    extra = tmp_path / "ex"
    write(extra / "e.md", "e\n")
    write(workspace / ".openclaw-memoryignore", "memory/\n")
    for i in range(7):
        write(workspace / "memory" / f"n{i}.md", f"{i}\n")
    assert cli("watchdog", "snapshot", "lab", "--extra", str(extra)).returncode == 0
    write(workspace / "memory" / "n0.md", "edited\n")
    write(extra / "e.md", "edited\n")
    args = ["rollback", "--to", "lab", "--force", "--extra", str(extra), *(["--dry-run"] if dry_run else [])]
    ignored = ("memory/n0.md, memory/n1.md, memory/n2.md, memory/n3.md, memory/n4.md and 2 more left as they are: snapshot "
               "lab does not cover them (its ignore rules left them out when the snapshot was taken (.openclaw-memoryignore, "
               "or the built-in defaults of an earlier release: *.tmp, *.log, .git/, __pycache__/, node_modules/)); give "
               "--to a time to roll them back too")
    outside = ("../ex/e.md left as it is: snapshot lab does not cover it (no watchdog snapshot covers an extra path's "
               "files); give --to a time to roll it back too")
    text = cli(*args)
    assert text.returncode == 0 and ignored in text.stderr and outside in text.stderr, text.stderr
    done = cli(*args, "--json")
    assert done.returncode == 0, done.stderr
    assert [w.split(" (see")[0] for w in done.json()["warnings"]] == [ignored, outside]
    assert (workspace / "memory" / "n0.md").read_text() == "edited\n" and (extra / "e.md").read_text() == "edited\n"



def test_a_snapshot_of_an_earlier_release_says_its_defaults_may_have_left_a_note_out(cli, workspace, monkeypatch):
    """An earlier release's default rules left memory/node_modules/a.md out of its snapshots; a rollback
    to one said `.openclaw-memoryignore ignored it`, where the workspace has no such file."""
    from openclaw_memory.watchdog import ignore

    write(workspace / "memory" / "node_modules" / "a.md", "a note\n")
    with monkeypatch.context() as patched:  # the defaults as that release stored them (no first line)
        patched.setattr(ignore, "DEFAULT_PATTERNS", ignore.DEFAULT_PATTERNS[1:])
        assert cli("watchdog", "snapshot", "old").returncode == 0
    write(workspace / "memory" / "node_modules" / "a.md", "edited\n")
    done = cli("rollback", "--to", "old", "--force", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert not (workspace / ".openclaw-memoryignore").exists()
    assert ("memory/node_modules/a.md left as it is: snapshot old does not cover it (its ignore rules left it out when "
            "the snapshot was taken (.openclaw-memoryignore, or the built-in defaults of an earlier release: *.tmp, "
            "*.log, .git/, __pycache__/, node_modules/)); give --to a time to roll it back too") in done.stderr, done.stderr

# -- a killed rollback's record, finished or dropped -----------------------------------------------


def _swap_folder_for_a_link(workspace: Path, tmp_path: Path) -> None:
    """memory/p moved away (another disk, say) and linked back under its name."""
    os.rename(workspace / "memory" / "p", tmp_path / "p-elsewhere")
    os.symlink(tmp_path / "p-elsewhere", workspace / "memory" / "p")


def _p_x_and_b_snapshotted_then_changed(cli, workspace: Path) -> None:
    write(workspace / "memory" / "p" / "x.md", "x1\n")
    write(workspace / "memory" / "b.md", "b1\n")
    assert cli("watchdog", "snapshot", "base").returncode == 0
    write(workspace / "memory" / "p" / "x.md", "x2\n")
    write(workspace / "memory" / "b.md", "b2\n")


@pytest.mark.parametrize("finisher", ["doctor", "rollback"])
def test_a_killed_rollback_whose_notes_folder_became_a_symlink_is_finished_leaving_that_note(cli, workspace, state_dir,
                                                                                            tmp_path, finisher):
    """Its step was refused ("goes through a symlink") and, the note's name itself a regular file seen
    through the link, re-raised: doctor --fix failed and every later rollback stopped on it, exit 2,
    the record kept, a loop only deleting the link ended."""
    _p_x_and_b_snapshotted_then_changed(cli, workspace)
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "base", "--force")
    _swap_folder_for_a_link(workspace, tmp_path)

    if finisher == "doctor":
        fixed = cli("doctor", "--fix", "--json")
        (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
        assert repair["status"] == "completed", repair
        said = repair["detail"]
    else:
        again = cli("rollback", "--to", "base", "--force", "--json")
        assert again.returncode == 0, again.stderr
        (said,) = [w for w in again.json()["warnings"] if w.startswith("finished the interrupted")]
    assert "except: memory/p/x.md (a folder on its path is a symlink since; left as it is)" in said, said
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None
    assert (workspace / "memory" / "b.md").read_text() == "b1\n"  # the rest is finished
    assert (tmp_path / "p-elsewhere" / "x.md").read_text() == "x2\n"  # never written through the link
    assert cli("rollback", "--to", "base", "--force").returncode == 0


def test_a_notes_folder_swapped_for_a_symlink_mid_rollback_is_left_and_leaves_no_record(cli, workspace, state_dir,
                                                                                       tmp_path):
    """It stopped there, exit 2, its record kept (and refused as above)."""
    _p_x_and_b_snapshotted_then_changed(cli, workspace)
    code, _, err = run_paused(workspace, state_dir, ("rollback", "--to", "base", "--force"), "rollback:journaled",
                              lambda: _swap_folder_for_a_link(workspace, tmp_path))
    assert code == 0, err
    assert "memory/p/x.md goes through a symlink now (a folder on its path was made one while the rollback ran)" in err
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None
    assert (workspace / "memory" / "b.md").read_text() == "b1\n"
    assert (tmp_path / "p-elsewhere" / "x.md").read_text() == "x2\n"


# Holds the file named by argv[1] open for appending, writing nothing, until stdin closes (a logger).
HOLDER = "import sys\nf = open(sys.argv[1], 'a')\nprint('open', flush=True)\nsys.stdin.read()\n"


def test_a_note_held_open_for_writing_is_left_and_said_so_never_called_changed(cli, workspace, state_dir):
    """Every WriteBlocked of a step read as "changed while the rollback ran" (plain: "changed
    meanwhile"), though nothing was written to it; restore says "held open for writing"."""
    write(workspace / "memory" / "a.md", "a1\n")
    write(workspace / "memory" / "b.md", "b1\n")
    assert cli("watchdog", "snapshot", "base").returncode == 0
    write(workspace / "memory" / "a.md", "a2\n")
    write(workspace / "memory" / "b.md", "b2\n")
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(workspace / "memory" / "a.md")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        done = cli("rollback", "--to", "base", "--force", "--json")
        plain = cli("rollback", "--to", "base", "--force")
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    result = done.json()
    files = {f["path"]: f for f in result["files"]}
    assert files["memory/a.md"].get("heldOpen") is True and "changed" not in files["memory/a.md"], files
    assert "heldOpen" not in files["memory/b.md"]
    (warning,) = [w for w in result["warnings"] if "memory/a.md" in w]
    assert warning.startswith("memory/a.md is held open for writing by another program") and "changed" not in warning
    assert "roll back again once that program has closed it" in warning
    assert (workspace / "memory" / "a.md").read_text() == "a2\n" and (workspace / "memory" / "b.md").read_text() == "b1\n"
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None
    assert plain.returncode == 0, plain.stderr
    assert "memory/a.md  (held open for writing: left as it is)" in plain.stdout
    assert "changed meanwhile" not in plain.stdout and "changed while" not in plain.stderr
    assert cli("rollback", "--to", "base", "--force").returncode == 0  # closed now: it goes through
    assert (workspace / "memory" / "a.md").read_text() == "a1\n"


@pytest.mark.parametrize("finisher", ["doctor", "rollback"])
def test_finishing_a_killed_rollback_says_how_to_undo_it(cli, workspace, state_dir, finisher):
    """The killed process never printed its `To undo:` line, and the finish said only "every memory file
    is as it was at base": the moment before it (in its record) was nowhere to be read."""
    _p_x_and_b_snapshotted_then_changed(cli, workspace)
    run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "base", "--force")
    undo = read_intent(settings_for(workspace, state_dir).data_dir).undo
    if finisher == "doctor":
        fixed = cli("doctor", "--fix", "--json")
        (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
        said = repair["detail"]
    else:
        again = cli("rollback", "--to", "base", "--force", "--json")
        (said,) = [w for w in again.json()["warnings"] if w.startswith("finished the interrupted")]
    assert said.endswith(f"every memory file is as it was at base. To undo: openclaw-memory rollback --to {undo}"), said
    assert cli("rollback", "--to", undo, "--force").returncode == 0
    assert (workspace / "memory" / "b.md").read_text() == "b2\n" and (workspace / "memory" / "p" / "x.md").read_text() == "x2\n"


WRONG_SHAPES = {
    "path-a-number": {"path": 123, "display": "memory/a.md", "before": None, "after": None},
    "display-a-list": {"path": "/w/memory/a.md", "display": ["memory/a.md"], "before": None, "after": None},
    "after-a-number": {"path": "/w/memory/a.md", "display": "memory/a.md", "before": None, "after": 7},
    "size-a-string": {"path": "/w/memory/a.md", "display": "memory/a.md", "before": None, "after": "v", "size": "9"},
    "step-a-string": "memory/a.md",
}


@pytest.mark.parametrize("finisher", ["doctor", "rollback", "dry-run"])
@pytest.mark.parametrize("shape", [*WRONG_SHAPES, "undo-a-number", "steps-an-object", "record-a-list"])
def test_a_rollback_record_of_the_wrong_shape_is_dropped_in_one_line_never_a_traceback(cli, workspace, state_dir,
                                                                                       shape, finisher):
    """`AttributeError: 'int' object has no attribute 'strip'` from doctor --fix and every rollback."""
    from openclaw_memory.database import Database

    write(workspace / "memory" / "a.md", "a\n")
    assert cli("watchdog", "snapshot", "base").returncode == 0
    record: object = {"to": "x", "moment": "x", "undo": "u", "steps": [WRONG_SHAPES.get(shape)]}
    if shape == "undo-a-number":
        record = {"to": "x", "moment": "x", "undo": 5, "steps": []}
    elif shape == "steps-an-object":
        record = {"to": "x", "moment": "x", "undo": "u", "steps": {"path": "p"}}
    elif shape == "record-a-list":
        record = ["x"]
    data_dir = settings_for(workspace, state_dir).data_dir
    with Database(data_dir).transaction() as conn:
        conn.execute("INSERT OR REPLACE INTO rollback_ops VALUES (1, ?)", (json.dumps(record),))

    plain = cli("doctor", "--json")
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "interrupted-rollback"]
    assert "is not readable" in finding["message"], finding
    if finisher == "doctor":
        fixed = cli("doctor", "--fix", "--json")
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-rollback"]
        assert repair["status"] == "completed" and "unreadable record" in repair["detail"] and "dropped" in repair["detail"]
    elif finisher == "rollback":
        done = cli("rollback", "--to", "base", "--force")
        assert done.returncode == 0 and "an unreadable record of an interrupted rollback was dropped" in done.stderr, done.stderr
    else:
        dry = cli("rollback", "--to", "base", "--dry-run")
        assert dry.returncode == 0 and "an unreadable record of an interrupted rollback is waiting" in dry.stderr, dry.stderr
        assert "Traceback" not in dry.stderr
        return
    assert read_intent(data_dir) is None


def test_a_rollback_that_would_archive_the_startup_files_asks_for_force_as_rm_does(cli, workspace, state_dir):
    """`rollback --to 2016-12-06` (a year mistyped: before any history) archived MEMORY.md and USER.md,
    no --force, no warning, exit 0, while `rm MEMORY.md` asks for --force."""
    for path, text in (("MEMORY.md", "# Memory"), ("USER.md", "# User"), ("memory/a.md", "a")):
        assert cli("write", path, "--append", text, "--no-index").returncode == 0
    assert "takes it out of the agent's startup" in cli("rm", "MEMORY.md", "--no-index").stderr

    dry = cli("rollback", "--to", "2016-12-06", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    (warning,) = dry.stderr.strip().splitlines()
    assert "would archive MEMORY.md and USER.md" in warning and "takes it out of the agent's startup" in warning, warning
    assert "--force" in warning

    refused = cli("rollback", "--to", "2016-12-06", "--json")
    assert refused.returncode == 2, refused.stdout
    error = refused.json()["error"]
    assert error.startswith("refused: the rollback to 2016-12-06") and "would archive MEMORY.md and USER.md" in error, error
    assert "OpenClaw loads MEMORY.md into every new session" in error and "pass --force" in error
    assert error.endswith("nothing was changed"), error
    assert {p: (workspace / p).exists() for p in ("MEMORY.md", "USER.md", "memory/a.md")} == dict.fromkeys(
        ("MEMORY.md", "USER.md", "memory/a.md"), True)
    assert read_intent(settings_for(workspace, state_dir).data_dir) is None

    done = cli("rollback", "--to", "2016-12-06", "--force")
    assert done.returncode == 0, done.stderr
    assert not (workspace / "MEMORY.md").exists() and not (workspace / "USER.md").exists()


def test_a_rollback_or_restore_killed_mid_exchange_leaves_no_swap_file_once_finished(cli, workspace, state_dir):
    """Killed at write:exchanged (the version in place, the one it took off in a swap file beside it):
    the next rollback finished it, logged, and left .a.md.<hex>.swp in memory/ for doctor to name; so
    did a restore run again after a killed one."""
    note = write(workspace / "memory" / "a.md", "v1\n")
    assert cli("read", "memory/a.md").returncode == 0
    assert cli("watchdog", "snapshot", "base").returncode == 0
    assert cli("write", "memory/a.md", "--append", "v2", "--no-index").returncode == 0
    first = cli("history", "memory/a.md", "--json").json()["versions"][-1]["version"]
    run_killed(workspace, state_dir, "write:exchanged", "rollback", "--to", "base", "--force", "--no-index")
    assert any(n.endswith(".swp") for n in os.listdir(note.parent))  # the control: the kill left one
    assert cli("rollback", "--to", "base", "--force", "--no-index").returncode == 0
    assert sorted(os.listdir(note.parent)) == ["a.md"] and note.read_text() == "v1\n"

    assert cli("read", "memory/a.md").returncode == 0
    assert cli("write", "memory/a.md", "--append", "v3", "--no-index").returncode == 0
    run_killed(workspace, state_dir, "write:exchanged", "restore", "memory/a.md", first, "--no-index")
    assert any(n.endswith(".swp") for n in os.listdir(note.parent))
    assert cli("restore", "memory/a.md", first, "--no-index").returncode == 0
    assert sorted(os.listdir(note.parent)) == ["a.md"] and note.read_text() == "v1\n"


# -- a note brought back keeps who may read it -----------------------------------------------------


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


@pytest.mark.parametrize("bits", [0o600, 0o640])
@pytest.mark.parametrize("killed", [False, True])
def test_a_note_only_a_snapshot_saw_comes_back_with_the_snapshots_bits(cli, workspace, state_dir, bits, killed):
    """A private note the history never logged (written by hand, never read), kept by a snapshot and
    deleted by hand, folder and all: the rollback brought it back 0644 (a new file's mode), readable by
    every user, in a 0755 folder. It comes back with the bits the snapshot saw, in a folder no more
    open; so too when the rollback was killed after its record and doctor --fix finished it."""
    from openclaw_memory.fsutil.private import umask_of_user
    from openclaw_memory.history.placing import new_file_mode

    assert new_file_mode() & 0o077 & ~bits  # the control: a note made anew here is wider, so the test can fail
    note = write(workspace / "memory" / "priv" / "s.md", "the staging password\n")
    os.chmod(note, bits)
    plain = write(workspace / "memory" / "plain.md", "a plain note\n")
    os.chmod(plain, 0o600)
    assert cli("watchdog", "snapshot", "before").returncode == 0
    os.remove(note)
    os.rmdir(note.parent)
    os.remove(plain)
    if killed:
        run_killed(workspace, state_dir, "rollback:journaled", "rollback", "--to", "before", "--no-index")
        assert not note.exists()  # (the control: killed before its first step)
        assert cli("doctor", "--fix").returncode == 0
    else:
        done = cli("rollback", "--to", "before", "--no-index", "--json")
        assert done.returncode == 0, done.stderr
        assert {f["path"]: f["fate"] for f in done.json()["files"]} == {"memory/priv/s.md": "bring-back",
                                                                       "memory/plain.md": "bring-back"}
    assert note.read_text() == "the staging password\n" and _mode(note) == bits
    assert _mode(plain) == 0o600
    assert _mode(note.parent) == {0o600: 0o700, 0o640: 0o750}[bits] & ~umask_of_user()


def test_a_note_only_a_snapshot_saw_comes_back_over_a_new_file_at_its_name_no_wider_than_the_snapshot_saw(
        cli, workspace, state_dir):
    """A 0600 note the history never logged, kept by a snapshot and deleted by hand, its name then
    taken by a new 0644 file: the rollback wrote the private text into that file's 0644. The group's
    and others' bits are those both the file there and the snapshot give."""
    note = write(workspace / "memory" / "s.md", "the staging password\n")
    os.chmod(note, 0o600)
    assert cli("watchdog", "snapshot", "before").returncode == 0
    os.remove(note)
    write(note, "a new note\n")
    os.chmod(note, 0o644)
    done = cli("rollback", "--to", "before", "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "the staging password\n" and _mode(note) == 0o600


def test_a_note_shared_after_the_snapshot_keeps_its_mode_through_a_rollback_to_it(cli, workspace, state_dir):
    """A note its user made 0644 after a snapshot saw it at 0600 (to share it), then written: the
    rollback to the snapshot (df587ec) made it 0600 again, saying nothing, and its undo left it so.
    The note's own file keeps the mode its user set, as a write keeps it."""
    assert cli("write", "memory/team.md", "--append", "draft plan", "--no-index").returncode == 0
    note = workspace / "memory" / "team.md"
    os.chmod(note, 0o600)
    assert cli("watchdog", "snapshot", "before").returncode == 0
    os.chmod(note, 0o644)
    assert cli("write", "memory/team.md", "--append", "more text", "--no-index").returncode == 0
    done = cli("rollback", "--to", "before", "--force", "--no-index")
    assert done.returncode == 0, done.stderr
    assert note.read_text() == "draft plan\n" and _mode(note) == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_as_root_a_users_note_only_a_snapshot_saw_comes_back_private_and_the_users(cli, workspace, state_dir):
    """Root rolling back a user's workspace: nobody's 0600 note, only a snapshot saw it, came back
    root's 0644, which every user could read. It comes back 0600; the snapshot keeps no owner, so it
    is the folder's owner's, as a new note root makes (nobody's memory/ here). A note the history
    logged as nobody's 0644, made 0600 before the snapshot, comes back nobody's and 0600."""
    (workspace / "memory").mkdir()
    os.chown(workspace / "memory", NOBODY, NOBODY)
    note = write(workspace / "memory" / "s.md", "nobody's secret\n")
    os.chown(note, NOBODY, NOBODY)
    os.chmod(note, 0o600)
    logged = write(workspace / "memory" / "logged.md", "logged, then made private\n")
    os.chown(logged, NOBODY, NOBODY)
    os.chmod(logged, 0o644)
    assert cli("read", "memory/logged.md").returncode == 0  # the history logs it: nobody's, 0644
    os.chmod(logged, 0o600)
    assert cli("watchdog", "snapshot", "before").returncode == 0
    os.remove(note)
    os.remove(logged)
    done = cli("rollback", "--to", "before", "--no-index")
    assert done.returncode == 0, done.stderr
    for back in (note, logged):
        seen = back.stat()
        assert (seen.st_uid, seen.st_gid, seen.st_mode & 0o7777) == (NOBODY, NOBODY, 0o600), back


def test_a_note_the_history_only_saw_comes_back_by_time_with_the_mode_it_logged(cli, workspace, state_dir):
    """A rollback to a time bringing back a note written by hand, known to the history by one sighting
    (a read) and deleted by hand: the bits (and, as root, the owner) that sighting logged."""
    from openclaw_memory.history.placing import new_file_mode

    assert new_file_mode() != 0o600
    note = write(workspace / "memory" / "s.md", "the staging password\n")
    os.chmod(note, 0o600)
    if os.geteuid() == 0:
        os.chown(note, NOBODY, NOBODY)
    assert cli("read", "memory/s.md").returncode == 0
    moment = later_than(time.time(), workspace)
    later_than(moment, workspace)
    os.remove(note)
    done = cli("rollback", "--to", iso_moment(moment), "--no-index", "--json")
    assert done.returncode == 0, done.stderr
    assert [(f["path"], f["fate"]) for f in done.json()["files"]] == [("memory/s.md", "bring-back")]
    seen = note.stat()
    assert seen.st_mode & 0o7777 == 0o600
    if os.geteuid() == 0:
        assert (seen.st_uid, seen.st_gid) == (NOBODY, NOBODY)


def test_a_hard_link_the_rollback_archives_is_no_other_name_keeping_the_old_text(cli, workspace, state_dir, tmp_path,
                                                                                  monkeypatch):
    """memory/h2.md made since the snapshot as a second name of memory/h1.md: the rollback restores
    h1.md and archives h2.md, yet warned that h1.md's other name keeps the text it had. Its other
    names are counted against the ones the rollback archives (by device and inode): nothing said when
    it archives all of them; a name outside it is still said, and one it left as it is too."""
    from openclaw_memory.rollback import apply

    h1, h2 = workspace / "memory" / "h1.md", workspace / "memory" / "h2.md"
    write(h1, "one\n")
    assert cli("watchdog", "snapshot", "base").returncode == 0
    write(h1, "two\n")
    os.link(h1, h2)
    done = cli("rollback", "--to", "base", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert "hard link" not in done.stderr and "warnings" not in done.json(), done.stderr
    assert (h1.read_text(), h2.exists()) == ("one\n", False)

    write(h1, "two\n")
    os.link(h1, h2)
    os.link(h1, tmp_path / "h3.md")  # a name no rollback touches
    done = cli("rollback", "--to", "base", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert done.json()["warnings"] == [
        "memory/h1.md had 3 hard links: the other name(s) keep the text it had (a restore replaces the file), "
        "but for memory/h2.md, which this rollback archived"]
    assert ((tmp_path / "h3.md").read_text(), h2.exists()) == ("two\n", False)

    os.remove(tmp_path / "h3.md")
    write(h1, "two\n")
    os.link(h1, h2)
    archive = apply.remove_memory_file

    def edited_first(settings, path, **kw):  # h2.md written to (in place) just before its step: left as it is
        with open(h2, "a") as f:
            f.write("edited\n")
        return archive(settings, path, **kw)

    monkeypatch.setattr(apply, "remove_memory_file", edited_first)
    done = cli("rollback", "--to", "base", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert "memory/h1.md had 2 hard links: the other name(s) keep the text it had (a restore replaces the file)" in \
        done.json()["warnings"], done.json()
    assert h2.read_text() == "two\nedited\n"
