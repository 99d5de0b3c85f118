"""Crash safety of doctor --fix: SIGKILL at every named step, then check no byte is lost and nothing is merged twice.

Each case runs the real CLI in a subprocess that is killed at one step (by the
test-only hook killing itself, or paused there and killed by the test), checks
that every byte of both root files is reachable, then reruns ``doctor --fix``.
"""

from __future__ import annotations

import os
import signal

import pytest
from test_doctor import archives, data_dir, expected_merge, spawn, stamp_dirs

from conftest import doctor_journal, fault, wait_for_line, write
from openclaw_memory.doctor.merge import HEADING, MARKER_PREFIX
from openclaw_memory.watchdog.checkpoint import pending_checkpoint

CANON = "# Durable memory\n- canonical fact ✓\n"
LEGACY = "# legacy notes\n- legacy fact: 喝绿茶 in Zürich\n- second line\n"

MERGE_STEPS = [
    "merge:begin", "merge:archive-dir", "merge:write-canonical", "merge:checked", "merge:canonical-written",
    "merge:archive", "move:rename", "move:linked", "merge:archived",
    "finalize:baseline", "finalize:checkpoint", "finalize:clear",
]
EXDEV_STEPS = ["move:rename", "move:copy-written", "move:unlink-source", "move:source-aside", "merge:archived"]
IDENTICAL_STEPS = ["merge:begin", "merge:archive-dir", "merge:archive", "move:rename", "move:linked", "finalize:checkpoint", "finalize:clear"]
MIGRATE_STEPS = ["migrate:begin", "migrate:at-temp", "migrate:linked", "migrate:renamed", "finalize:baseline", "finalize:checkpoint", "finalize:clear"]


def workspace_files(workspace) -> dict[str, bytes]:
    """Every regular file under the workspace, by relative path."""
    out = {}
    for root, _dirs, files in os.walk(workspace):
        for name in files:
            path = os.path.join(root, name)
            if os.path.isfile(path) and not os.path.islink(path):
                out[os.path.relpath(path, workspace)] = open(path, "rb").read()
    return out


def assert_all_bytes_reachable(workspace, canon: bytes, legacy: bytes) -> None:
    files = workspace_files(workspace)
    memory = files.get("MEMORY.md", b"")
    # canonical bytes: MEMORY.md is only ever appended to, atomically
    assert memory.startswith(canon), f"MEMORY.md lost its own bytes: {memory!r}"
    # legacy bytes: at memory.md, in an archive (or a journaled temp name), or merged into MEMORY.md
    holders = [name for name, data in files.items() if data == legacy and name != "MEMORY.md"]
    merged = legacy in memory[len(canon):] if canon != legacy else False
    assert holders or merged, f"legacy bytes lost; files now: {sorted(files)}"


def kill_at(workspace, state_dir, step: str, env: dict, how: str) -> None:
    """Run doctor --fix and SIGKILL it at ``step``."""
    if how == "self":
        proc = spawn(workspace, state_dir, "doctor", "--fix", env=fault(f"{step}=kill", env=env))
        out, err = proc.communicate(timeout=120)
    else:
        proc = spawn(workspace, state_dir, "doctor", "--fix", env=fault(f"{step}=pause", env=env))
        wait_for_line(proc.stderr, f"test-hook: paused at {step}")
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {step}: rc={proc.returncode}\n{out}\n{err}"


def rerun(cli, env: dict) -> dict:
    plain = cli("doctor", "--json")
    assert plain.returncode == 1  # something is still to do (an interrupted repair or the split itself)
    result = cli("doctor", "--fix", "--json", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    data = result.json()
    assert data["ok"] is True and data["remaining"] == []
    return data


def assert_no_leftovers(workspace, state_dir) -> None:
    assert doctor_journal(data_dir(workspace, state_dir)) is None
    stray = [n for n in workspace_files(workspace) if n.endswith(".tmp") or ".aside-" in n]  # temp copies, a move's private name
    assert stray == [], stray
    assert [d for d in stamp_dirs(workspace) if not any(d.iterdir())] == []  # no empty archive folders


def checkpoint_text(workspace, state_dir) -> str:
    return pending_checkpoint(data_dir(workspace, state_dir)) or ""


@pytest.mark.parametrize(
    "step,exdev",
    [(s, False) for s in MERGE_STEPS] + [(s, True) for s in EXDEV_STEPS],
    ids=[f"{s}-rename" for s in MERGE_STEPS] + [f"{s}-exdev" for s in EXDEV_STEPS],
)
def test_merge_killed_at_each_step(workspace, state_dir, cli, step, exdev):
    env = fault("move:rename=fail") if exdev else {}
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)
    kill_at(workspace, state_dir, step, env, "self")
    assert_all_bytes_reachable(workspace, CANON.encode(), LEGACY.encode())

    data = rerun(cli, env)
    first = data["repairs"][0]
    assert first["id"] == "interrupted-repair" and first["status"] in ("completed", "rolled-back")
    if first["status"] == "rolled-back":  # nothing was merged yet: the rerun merges afresh
        assert [(r["id"], r["status"]) for r in data["repairs"][1:]] == [("split-root", "done")]
    else:
        assert len(data["repairs"]) == 1

    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY
    rel = archive.relative_to(workspace).as_posix()
    merged = (workspace / "MEMORY.md").read_bytes()
    assert merged == expected_merge(CANON.encode(), LEGACY, rel, workspace)
    text = merged.decode("utf-8")
    assert text.count(HEADING) == 1 and text.count(MARKER_PREFIX) == 1 and text.count(LEGACY) == 1
    assert not (workspace / "memory.md").exists()
    assert_no_leftovers(workspace, state_dir)
    assert checkpoint_text(workspace, state_dir).count("merged memory.md into MEMORY.md") == 1
    assert cli("doctor").returncode == 0


@pytest.mark.parametrize("step", ["merge:canonical-written", "move:rename"])
def test_merge_paused_then_killed_from_outside(workspace, state_dir, cli, step):
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)
    kill_at(workspace, state_dir, step, {}, "external")
    assert_all_bytes_reachable(workspace, CANON.encode(), LEGACY.encode())
    rerun(cli, {})
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.count(LEGACY) == 1 and len(archives(workspace)) == 1
    assert_no_leftovers(workspace, state_dir)


@pytest.mark.parametrize("step", IDENTICAL_STEPS)
def test_identical_archive_killed_at_each_step(workspace, state_dir, cli, step):
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", CANON)
    kill_at(workspace, state_dir, step, {}, "self")
    assert_all_bytes_reachable(workspace, CANON.encode(), CANON.encode())
    rerun(cli, {})
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON  # never merged
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == CANON
    assert not (workspace / "memory.md").exists()
    assert_no_leftovers(workspace, state_dir)


@pytest.mark.parametrize("step", MIGRATE_STEPS)
def test_migration_killed_at_each_step(workspace, state_dir, cli, step):
    write(workspace / "memory.md", LEGACY)
    kill_at(workspace, state_dir, step, {}, "self")
    files = workspace_files(workspace)
    assert LEGACY.encode() in files.values(), f"legacy bytes lost; files now: {sorted(files)}"

    data = rerun(cli, {})
    assert data["repairs"][0]["id"] == "interrupted-repair"
    assert data["repairs"][0]["status"] in ("completed", "rolled-back")
    assert sorted(os.listdir(workspace)) == ["MEMORY.md"]
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == LEGACY
    assert_no_leftovers(workspace, state_dir)
    assert checkpoint_text(workspace, state_dir).count("renamed the legacy root memory.md") == 1


def test_a_migration_killed_after_its_link_with_its_journal_lost_leaves_memory_md_one_name(workspace, state_dir, cli,
                                                                                              tmp_path):
    """Killed between the link to MEMORY.md and the unlink of its temporary name, the journal then
    lost (a new or rebuilt state dir): the temporary name is MEMORY.md's second name, and is removed
    (checked as the object removed). It was named memory.md again and merged as a split root, into
    an archive sharing MEMORY.md's inode: prompt-file-hardlinked for ever, MEMORY.md never loaded."""
    write(workspace / "memory.md", LEGACY)
    kill_at(workspace, state_dir, "migrate:linked", {}, "self")
    (temp,) = [n for n in os.listdir(workspace) if n.startswith(".memory.md.migrate-")]
    assert os.path.samefile(workspace / temp, workspace / "MEMORY.md")
    fresh = {"OPENCLAW_STATE_DIR": str(tmp_path / "fresh-state")}
    fixed = cli("doctor", "--fix", "--json", env=fresh).json()
    assert [(r["id"], r["status"]) for r in fixed["repairs"]] == [("interrupted-repair", "completed")], fixed
    assert "second name of MEMORY.md" in fixed["repairs"][0]["detail"] and fixed["remaining"] == []
    assert sorted(os.listdir(workspace)) == ["MEMORY.md"]  # no archive: nothing to keep
    assert os.stat(workspace / "MEMORY.md").st_nlink == 1
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == LEGACY
    prompt = cli("prompt", env=fresh)
    assert prompt.returncode == 0 and "UNREADABLE" not in prompt.stdout and LEGACY.strip() in prompt.stdout
    assert cli("doctor", "--json", env=fresh).json()["findings"] == []


def test_an_editor_save_of_memory_md_while_a_killed_migration_is_finished_keeps_the_legacy_bytes(workspace, state_dir,
                                                                                                 cli, monkeypatch):
    """Finishing a migration killed after its link, the temporary name (MEMORY.md's second name) was
    unlinked after a separate look: an editor's save over MEMORY.md between the two left it the legacy
    bytes' last name, and the unlink took them. Now unlinked only while it still is MEMORY.md's file."""
    from test_doctor import editor_save

    import openclaw_memory.doctor.recovery as recovery

    write(workspace / "memory.md", LEGACY)
    kill_at(workspace, state_dir, "migrate:linked", {}, "self")
    real = recovery.same_file

    def look_then_save(root, a, b):
        answer = real(root, a, b)
        editor_save(workspace / "MEMORY.md", CANON)  # right after the look
        return answer

    monkeypatch.setattr(recovery, "same_file", look_then_save)
    fixed = cli("doctor", "--fix", "--json")
    monkeypatch.setattr(recovery, "same_file", real)
    assert "Traceback" not in fixed.stderr
    assert_all_bytes_reachable(workspace, CANON.encode(), LEGACY.encode())
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8").startswith(CANON)
    cli("doctor", "--fix", "--json")  # the split root the save made is merged as any
    assert_all_bytes_reachable(workspace, CANON.encode(), LEGACY.encode())


@pytest.mark.parametrize("beside", [None, "MEMORY.md"])
def test_a_rename_killed_at_its_temp_name_is_found_again_by_a_state_dir_without_its_journal(workspace, state_dir, cli,
                                                                                               tmp_path, beside):
    """The journal is in the state dir: a new one (or one rebuilt after damage) has none, and the
    file waiting at its temporary name must still be found and named again."""
    write(workspace / "memory.md", LEGACY)
    kill_at(workspace, state_dir, "migrate:at-temp", {}, "self")
    if beside:
        write(workspace / beside, CANON)  # MEMORY.md made meanwhile: the bytes go back to memory.md
    fresh = {"OPENCLAW_STATE_DIR": str(tmp_path / "fresh-state")}
    plain = cli("doctor", "--json", env=fresh)
    assert plain.returncode == 1
    found = [f for f in plain.json()["findings"] if f["id"] == "interrupted-repair"]
    assert found and found[0]["fixable"] and ".memory.md.migrate-" in found[0]["message"]
    fixed = cli("doctor", "--fix", "--json", env=fresh).json()
    assert fixed["repairs"][0]["status"] == "completed" and fixed["remaining"] == [], fixed
    if beside:  # named memory.md again, then merged as the split root it makes, in the same run
        assert [r["id"] for r in fixed["repairs"]] == ["interrupted-repair", "split-root"]
        memory = (workspace / "MEMORY.md").read_text(encoding="utf-8")
        assert memory.startswith(CANON) and LEGACY.strip() in memory
    else:
        assert sorted(os.listdir(workspace)) == ["MEMORY.md"]
        assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == LEGACY
    assert not [n for n in os.listdir(workspace) if n.endswith(".tmp")]
