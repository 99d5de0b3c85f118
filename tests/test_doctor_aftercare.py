"""doctor's aftercare: only what a repair wrote is its own, in the history and the watchdog baseline.

A save someone made after the repair wrote a file (while doctor was paused, or before an interrupted
repair was resumed) is an outside edit: logged as one, after the repair's own version, and reported
by the watchdog until a new snapshot takes it. Taking the file as it is when the aftercare runs gave
the person's save doctor's name and hid it from the watchdog.
"""

from __future__ import annotations

import signal

import xxhash
from test_doctor import CANON, LEGACY, archives, editor_save, expected_merge, spawn, split

from conftest import fault, run_paused, write
from openclaw_memory.doctor.journal import JournalRecord
from openclaw_memory.watchdog.snapshot import Left, refresh_baseline
from openclaw_memory.watchdog.store import RACY, SnapshotStore

PERSON = "- PERSON: rotate the API key on Friday\n"


def h(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def killed_at(workspace, state_dir, step: str) -> None:
    proc = spawn(workspace, state_dir, "doctor", "--fix", env=fault(f"{step}=kill"))
    proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL


def history(cli, rel: str = "MEMORY.md") -> list[tuple[str, str, bool]]:
    """(origin, version, available) of each version of ``rel``, oldest first."""
    versions = cli("history", rel, "--json").json()["versions"]
    return [(v["origin"], v["version"], v["available"]) for v in reversed(versions)]


def assert_save_is_someone_elses(cli, workspace, repaired: bytes, saved: bytes) -> None:
    """The repair's text is doctor's version, the save after it an outside edit the watchdog reports."""
    assert (workspace / "MEMORY.md").read_bytes() == saved  # nothing lost
    logged = history(cli)
    assert logged[-2:] == [("doctor-fix", h(repaired), True), ("external-edit", h(saved), True)], logged
    verify = cli("watchdog", "verify", "--json")
    assert verify.returncode == 1, verify.stdout
    assert [c["path"] for c in verify.json()["changed"]] == ["MEMORY.md"], verify.stdout
    found = {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    assert "watchdog-changes" in found
    # once the person's save is taken into a snapshot, all is quiet
    assert cli("watchdog", "snapshot").returncode == 0
    assert cli("watchdog", "verify").returncode == 0


def test_a_save_after_a_killed_merge_wrote_memory_md_is_an_outside_edit(workspace, state_dir, cli):
    split(workspace)
    assert cli("watchdog", "snapshot").returncode == 0
    assert cli("history", "MEMORY.md").returncode == 0
    killed_at(workspace, state_dir, "merge:archived")
    (archive,) = archives(workspace)
    merged = expected_merge(CANON.encode(), LEGACY, archive.relative_to(workspace).as_posix(), workspace)
    assert (workspace / "MEMORY.md").read_bytes() == merged
    saved = merged + PERSON.encode()
    editor_save(workspace / "MEMORY.md", saved.decode())

    done = cli("doctor", "--fix", "--json")
    (repair,) = done.json()["repairs"]
    assert repair["status"] == "completed", repair
    assert "MEMORY.md as the repair left it" in repair["detail"]
    assert_save_is_someone_elses(cli, workspace, merged, saved)


def test_a_save_while_the_merge_is_paused_after_writing_memory_md_is_an_outside_edit(workspace, state_dir, cli):
    split(workspace)
    assert cli("watchdog", "snapshot").returncode == 0
    saves: list[bytes] = []

    def save() -> None:
        saves.append((workspace / "MEMORY.md").read_bytes() + PERSON.encode())
        editor_save(workspace / "MEMORY.md", saves[0].decode())

    rc, out, err = run_paused(workspace, state_dir, ("doctor", "--fix"), "merge:archived", save)
    assert "watchdog baseline updated" in out, out + err
    (archive,) = archives(workspace)
    merged = expected_merge(CANON.encode(), LEGACY, archive.relative_to(workspace).as_posix(), workspace)
    assert saves[0] == merged + PERSON.encode()
    assert_save_is_someone_elses(cli, workspace, merged, saves[0])


def test_an_append_after_a_killed_migration_renamed_memory_md_is_an_outside_edit(workspace, state_dir, cli):
    write(workspace / "memory.md", LEGACY)
    assert cli("watchdog", "snapshot").returncode == 0  # keeps memory.md's bytes: the repair's version is restorable
    killed_at(workspace, state_dir, "migrate:renamed")
    with open(workspace / "MEMORY.md", "a", encoding="utf-8") as f:
        f.write(PERSON)
    done = cli("doctor", "--fix", "--json")
    assert [r["status"] for r in done.json()["repairs"]] == ["completed"], done.stdout
    assert_save_is_someone_elses(cli, workspace, LEGACY.encode(), (LEGACY + PERSON).encode())


def test_an_untouched_resumed_merge_is_the_doctors_alone(workspace, state_dir, cli):
    split(workspace)
    assert cli("watchdog", "snapshot").returncode == 0
    killed_at(workspace, state_dir, "merge:archived")
    merged = (workspace / "MEMORY.md").read_bytes()
    assert cli("doctor", "--fix").returncode == 0
    assert [o for o, _, _ in history(cli)][-1:] == ["doctor-fix"]
    assert history(cli)[-1][1] == h(merged)
    assert cli("watchdog", "verify").returncode == 0 and cli("doctor").returncode == 0


def test_refresh_baseline_takes_only_what_the_repair_left(workspace, state_dir, cli):
    from conftest import settings_for
    from openclaw_memory.doctor.aftercare import left_by

    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "a.md", "a\n")
    assert cli("watchdog", "snapshot").returncode == 0
    settings = settings_for(workspace, state_dir)
    repaired = b"# Memory\n- the repair's\n"
    write(workspace / "MEMORY.md", repaired + PERSON.encode())  # saved since the repair
    write(workspace / "memory.md", "made again\n")  # removed by the repair, made again since
    write(workspace / "memory" / "a.md", "b\n")  # not the repair's: taken as it is, as before
    since: list[str] = []
    left = {"MEMORY.md": Left(h(repaired), repaired), "memory.md": None}
    assert refresh_baseline(settings, ["MEMORY.md", "memory.md", "memory/a.md"], None, left, since) == []
    assert since == ["MEMORY.md", "memory.md"]
    base = SnapshotStore(settings.data_dir).baseline()
    assert base is not None
    i = base.index["MEMORY.md"]
    assert base.digest(i) == bytes.fromhex(h(repaired)) and base.flags[i] & RACY
    assert "memory.md" not in base.index
    assert base.digest(base.index["memory/a.md"]) == bytes.fromhex(h(b"b\n"))
    verify = cli("watchdog", "verify", "--json").json()
    assert [c["path"] for c in verify["changed"]] == ["MEMORY.md"] and verify["new"] == ["memory.md"]
    # a migration left memory.md's bytes at MEMORY.md; a merge, its text, known by its hash
    migrate = left_by(settings, JournalRecord("migrate", "to-canonical", legacy_hash=h(b"x")))
    assert migrate == {"memory.md": None, "MEMORY.md": Left(h(b"x"), None)}


def _no_break_after(cli) -> None:
    """doctor --fix's own repair is no change behind the agent's back: the next doctor is clean, and
    so is the next heartbeat (a break there is quoted to the agent as someone else's change)."""
    assert cli("doctor").returncode == 0
    beat = cli("watchdog", "heartbeat")
    assert beat.returncode == 0 and beat.stdout.strip() == "HEARTBEAT_OK", beat.stdout


def test_the_leftovers_sweep_takes_what_it_removed_out_of_the_watchdog_baseline(workspace, cli, cli_process):
    write(workspace / "MEMORY.md", "# M\n")
    write(workspace / "memory" / "a.md", "a1\n")
    cli("read", "memory/a.md")
    assert cli_process("write", "memory/a.md", "--append", "a2", env=fault("write:exchanged=kill")).returncode == -signal.SIGKILL
    (swp,) = (workspace / "memory").glob(".a.md.*.swp")
    cli("watchdog", "snapshot")
    fixed = cli("doctor", "--fix", "--json").json()
    assert [(r["id"], r["status"]) for r in fixed["repairs"]] == [("write-leftovers", "done")] and fixed["ok"], fixed
    assert not swp.exists()
    _no_break_after(cli)


def test_undoing_a_removal_killed_with_its_note_aside_leaves_no_watchdog_break(workspace, cli, cli_process):
    write(workspace / "MEMORY.md", "# M\n")
    write(workspace / "memory" / "a.md", "a1\n")
    cli("read", "memory/a.md")
    assert cli_process("rm", "memory/a.md", env=fault("move:source-aside=kill")).returncode == -signal.SIGKILL
    assert not (workspace / "memory" / "a.md").exists()
    cli("watchdog", "snapshot")  # the note at its private name is in the baseline
    fixed = cli("doctor", "--fix", "--json").json()
    assert ("interrupted-move", "rolled-back") in [(r["id"], r["status"]) for r in fixed["repairs"]] and fixed["ok"], fixed
    assert (workspace / "memory" / "a.md").read_text() == "a1\n"
    _no_break_after(cli)


def test_a_note_given_its_name_back_leaves_no_watchdog_break(workspace, cli):
    write(workspace / "MEMORY.md", "# M\n")
    write(workspace / "memory" / ".a.md.aside-0123456789abcdef", "a1\n")
    cli("watchdog", "snapshot")
    fixed = cli("doctor", "--fix", "--json").json()
    assert [(r["id"], r["status"]) for r in fixed["repairs"]] == [("move-leftovers", "done")] and fixed["ok"], fixed
    assert (workspace / "memory" / "a.md").read_text() == "a1\n"
    _no_break_after(cli)
