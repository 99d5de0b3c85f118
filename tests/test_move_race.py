"""doctor --fix moving memory.md to an archive on another file system while others write it.

The archive folder is a real tmpfs (conftest ``tmpfs``), so the move is a real
cross-device copy (EXDEV). Each case changes memory.md behind the repair's back, at its
own ``move:*`` hook or with real processes writing, and then looks for every byte in
every file of the workspace: nothing may be found nowhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_doctor import archives, paused_then_resumed, spawn

from conftest import tmpfs, wait_for, write
from openclaw_memory.doctor.merge import HEADING

CANON = "# Durable memory\n- prefers tea\n"
LEGACY = "# old notes\n- lives in Zürich\n"
EDIT = "- appended by the agent while the repair copied the file\n"


def every_file(workspace: Path) -> dict[str, bytes]:
    """Every regular file under the workspace (hidden ones and the tmpfs archive included)."""
    out = {}
    for root, _dirs, files in os.walk(workspace):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                out[os.path.relpath(path, workspace)] = Path(path).read_bytes()
    return out


@pytest.fixture
def tmpfs_archive(workspace):
    with tmpfs(workspace / ".openclaw-repair", "32m") as mount_point:
        assert os.stat(mount_point).st_dev != os.stat(workspace).st_dev
        yield mount_point


def merge_until_clean(cli, runs: int = 3) -> None:
    for _ in range(runs):
        if cli("doctor", "--fix", "--json").json()["ok"]:
            return
    raise AssertionError(cli("doctor", "--json").stdout)


def test_an_append_during_the_copy_is_kept(workspace, state_dir, tmpfs_archive, cli):
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)

    def append() -> None:
        with open(workspace / "memory.md", "a", encoding="utf-8") as fh:
            fh.write(EDIT)

    data = paused_then_resumed(workspace, state_dir, "move:copy-written", append)
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "changed while it was moved" in repair["detail"], repair
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY + EDIT  # kept, with the edit
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY  # what was copied is kept too
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON  # the merge was undone

    assert "split-root" in [f["id"] for f in cli("doctor", "--json").json()["findings"]]
    merge_until_clean(cli)
    merged = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert merged.count(EDIT.strip()) == 1 and merged.count("- lives in Zürich") == 1 and merged.count(HEADING) == 1


def test_an_editors_atomic_save_during_the_copy_is_kept(workspace, state_dir, tmpfs_archive, cli):
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)
    saved = "# old notes, rewritten in an editor\n- lives in Basel now\n"

    def save_as_an_editor_does() -> None:  # a new file, renamed over the old name
        write(workspace / ".memory.md.swp-new", saved)
        os.rename(workspace / ".memory.md.swp-new", workspace / "memory.md")

    data = paused_then_resumed(workspace, state_dir, "move:copy-written", save_as_an_editor_does)
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "was replaced while it was moved" in repair["detail"], repair
    assert (workspace / "memory.md").read_text(encoding="utf-8") == saved
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY  # the file the editor replaced: only here now
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON

    merge_until_clean(cli)
    assert "- lives in Basel now" in (workspace / "MEMORY.md").read_text(encoding="utf-8")


def test_an_editors_atomic_save_between_link_and_unlink_of_a_rename_is_kept(workspace, state_dir, cli):
    """The same-file-system move links memory.md into the archive, then drops the name: only
    while that name is still the linked file."""
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)
    saved = "- saved by an editor between the link and the unlink\n"

    def save() -> None:
        write(workspace / ".memory.md.swp-new", saved)
        os.rename(workspace / ".memory.md.swp-new", workspace / "memory.md")

    data = paused_then_resumed(workspace, state_dir, "move:linked", save)
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "was replaced" in repair["detail"], repair
    assert (workspace / "memory.md").read_text(encoding="utf-8") == saved
    assert [a.read_text(encoding="utf-8") for a in archives(workspace)] == [LEGACY]
    merge_until_clean(cli)
    assert saved.strip() in (workspace / "MEMORY.md").read_text(encoding="utf-8")


HOLDER = textwrap.dedent("""
    import os, sys
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    print("open", flush=True)
    sys.stdin.readline()
    os.write(fd, sys.argv[2].encode())
    os.close(fd)
""")


def test_a_writer_holding_memory_md_open_keeps_it(workspace, state_dir, tmpfs_archive, cli_process):
    """A process that holds memory.md open writes after the repair: unlinked, its write would land
    in a file no name reaches. The move sees the open file (a lease is refused) and keeps it."""
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)
    late = "- written through a descriptor opened before the repair\n"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(workspace / "memory.md"), late],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "open\n"
        result = cli_process("doctor", "--fix", "--json")
        (repair,) = result.json()["repairs"]
        assert repair["status"] == "failed" and "held open by another process" in repair["detail"], repair
        holder.communicate("go\n", timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert holder.returncode == 0
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY + late
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON


def test_a_source_kept_where_a_new_memory_md_took_its_name_is_reported_then_merged(workspace, state_dir, tmpfs_archive, cli):
    """Changed after the move took it aside, while a new memory.md was made: it stays at its private
    name, which plain doctor reports and --fix gives back once the name is free."""
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", LEGACY)
    fresh = "- a new memory.md, made while the old one was aside\n"

    def change_both() -> None:
        (aside,) = [p for p in workspace.iterdir() if p.name.startswith(".memory.md.aside-")]
        with open(aside, "a", encoding="utf-8") as fh:  # a descriptor opened before the move took it aside
            fh.write(EDIT)
        write(workspace / "memory.md", fresh)

    data = paused_then_resumed(workspace, state_dir, "move:source-aside", change_both)
    repair = data["repairs"][0]
    assert repair["status"] == "failed" and ".memory.md.aside-" in repair["detail"], repair
    texts = every_file(workspace)
    assert [n for n, b in texts.items() if b == (LEGACY + EDIT).encode()][0].startswith(".memory.md.aside-")
    assert texts["memory.md"] == fresh.encode()

    found = {f["id"]: f for f in cli("doctor", "--json").json()["findings"]}
    assert ".memory.md.aside-" in found["interrupted-repair"]["message"]
    merge_until_clean(cli)
    merged = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert merged.count(EDIT.strip()) == 1 and merged.count(fresh.strip()) == 1
    assert not [p for p in workspace.iterdir() if p.name.startswith(".memory.md.aside-")]


APPENDER = textwrap.dedent("""
    import os, select, sys
    path, n = sys.argv[1], 0
    print("started", flush=True)
    while not select.select([sys.stdin], [], [], 0.002)[0]:  # every 2 ms until stdin closes
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, b"appended line %06d\\n" % n)
        os.close(fd)
        n += 1
    print(n, flush=True)
""")


def lost_lines(workspace: Path, written: int) -> set[int]:
    found = set()
    for data in every_file(workspace).values():
        found.update(int(m) for m in re.findall(rb"appended line (\d{6})", data))
    return set(range(written)) - found


def appender_round(workspace: Path, state_dir: Path, legacy: bytes) -> tuple[str, set[int]]:
    """One doctor --fix while a process appends a line to memory.md every 2 ms: its outcome, and the lines found nowhere."""
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory.md", legacy)
    with tmpfs(workspace / ".openclaw-repair", "64m"):
        appender = subprocess.Popen([sys.executable, "-c", APPENDER, str(workspace / "memory.md")],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            assert appender.stdout.readline() == "started\n"
            wait_for(lambda: b"appended line" in (workspace / "memory.md").read_bytes()[-64:])
            out, err = spawn(workspace, state_dir, "doctor", "--fix", "--json").communicate(timeout=300)
            written = int(appender.communicate("", timeout=60)[0])
        finally:
            if appender.poll() is None:
                appender.kill()
                appender.wait()
        assert "Traceback" not in err, err
        (repair,) = [r for r in json.loads(out)["repairs"] if r["id"] == "split-root"]
        return repair["status"], lost_lines(workspace, written)


@pytest.mark.slow
def test_an_appender_every_2_ms_loses_no_line_during_a_cross_device_merge(tmp_path):
    legacy = b"".join(b"legacy line %07d of a large legacy root file\n" % i for i in range(4 * 1024 * 1024 // 44))
    outcomes, lost = [], {}
    for r in range(15):
        (tmp_path / f"ws{r}").mkdir()
        (tmp_path / f"state{r}").mkdir()
        status, lost[r] = appender_round(tmp_path / f"ws{r}", tmp_path / f"state{r}", legacy)
        outcomes.append(status)
    print(f"\n15 rounds: outcomes {outcomes}; lines lost per round {[len(v) for v in lost.values()]}")
    assert not any(lost.values()), {r: sorted(v)[:5] for r, v in lost.items() if v}
