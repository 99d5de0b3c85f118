"""The root repair shows nothing to another user: a private ``memory.md`` merged into a
``MEMORY.md`` others may read makes ``MEMORY.md`` as private (OpenClaw's migration keeps 0644).

The mode is the real file's, and the check as another user (uid 65534, ``nobody``) reads the file
for real; the new mode is on the temp file before it takes the name ``MEMORY.md``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_doctor import CANON, LEGACY, paused_then_resumed, split
from test_private_state import as_nobody

from conftest import env_for, run_in_process, write

SECRET = "bank PIN 4711\n"


def _mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def _merge(cli) -> dict:
    done = cli("doctor", "--fix", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    (repair,) = done.json()["repairs"]
    assert (repair["id"], repair["status"]) == ("split-root", "done"), repair
    return repair


def test_a_private_memory_md_merged_makes_memory_md_private(workspace, cli):
    split(workspace, legacy=SECRET)
    (workspace / "MEMORY.md").chmod(0o644)
    (workspace / "memory.md").chmod(0o600)
    repair = _merge(cli)
    assert "bank PIN 4711" in (workspace / "MEMORY.md").read_text()
    assert _mode(workspace / "MEMORY.md") == 0o600  # was 0o644: every user read the PIN
    assert "MEMORY.md's mode is now 0600 (was 0644)" in repair["detail"], repair


@pytest.mark.parametrize(("canonical", "legacy", "merged"), [(0o664, 0o640, 0o640), (0o600, 0o666, 0o600)])
def test_memory_md_keeps_no_more_than_memory_md_gave_its_group_and_others(workspace, cli, canonical, legacy, merged):
    """The group keeps what memory.md gave it; a MEMORY.md more private than memory.md keeps its own mode."""
    split(workspace)
    (workspace / "MEMORY.md").chmod(canonical)
    (workspace / "memory.md").chmod(legacy)
    repair = _merge(cli)
    assert _mode(workspace / "MEMORY.md") == merged
    said = f"MEMORY.md's mode is now {merged:04o} (was {canonical:04o})"
    assert (said in repair["detail"]) == (merged != canonical), repair


def test_an_equally_open_pair_is_left_as_it_was(workspace, cli):
    split(workspace)
    (workspace / "MEMORY.md").chmod(0o644)
    (workspace / "memory.md").chmod(0o644)
    repair = _merge(cli)
    assert _mode(workspace / "MEMORY.md") == 0o644 and "mode is now" not in repair["detail"], repair


def test_a_private_legacy_only_file_stays_private_as_memory_md(workspace, cli):
    write(workspace / "memory.md", SECRET)
    (workspace / "memory.md").chmod(0o600)
    done = cli("doctor", "--fix", "--json")
    assert [(r["id"], r["status"]) for r in done.json()["repairs"]] == [("legacy-root", "done")], done.stdout
    assert _mode(workspace / "MEMORY.md") == 0o600


def test_the_merged_text_never_has_memory_md_s_old_mode(workspace, state_dir):
    """The mode is on the temp file before the exchange gives it the name: paused there, the temp
    file holding the PIN is already 0600 (a chmod after the rename left an instant at 0644)."""
    split(workspace, legacy=SECRET)
    (workspace / "MEMORY.md").chmod(0o644)
    (workspace / "memory.md").chmod(0o600)
    seen: list[tuple[str, int, bool]] = []

    def look() -> None:
        for name in os.listdir(workspace):
            if name.startswith(".MEMORY.md.") and name.endswith((".tmp", ".swp")):
                temp = workspace / name
                seen.append((name, _mode(temp), "bank PIN" in temp.read_text()))

    data = paused_then_resumed(workspace, state_dir, "merge:checked", look)
    assert [r["status"] for r in data["repairs"]] == ["done"], data
    assert [(mode, holds) for _, mode, holds in seen] == [(0o600, True)], seen
    assert _mode(workspace / "MEMORY.md") == 0o600


def test_an_undone_merge_gives_memory_md_its_mode_back(workspace, state_dir, cli):
    split(workspace)
    (workspace / "MEMORY.md").chmod(0o644)
    (workspace / "memory.md").chmod(0o600)
    edit = LEGACY + "- added while doctor ran\n"
    data = paused_then_resumed(workspace, state_dir, "merge:archive", lambda: write(workspace / "memory.md", edit))
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "memory.md changed under the repair" in repair["detail"], repair
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON
    assert _mode(workspace / "MEMORY.md") == 0o644  # as it was before: it holds none of memory.md's text


@pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user (uid 65534) needs root")
def test_another_user_cannot_read_the_merged_private_text(base):
    """Under a folder every user may reach: before the repair uid 65534 reads MEMORY.md (the
    control) but not memory.md; after it, it reads neither."""
    ws, sd = base / "ws", base / "state"
    ws.mkdir()
    ws.chmod(0o755)
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory.md", SECRET)
    (ws / "MEMORY.md").chmod(0o644)
    (ws / "memory.md").chmod(0o600)

    def reads(path: str) -> str:
        try:
            return Path(path).read_text()
        except PermissionError:
            return "refused"

    assert as_nobody(reads, str(ws / "MEMORY.md")) == "# Memory\n"
    assert as_nobody(reads, str(ws / "memory.md")) == "refused"
    old = os.umask(0o022)
    try:
        done = run_in_process(["doctor", "--fix", "--json"], env=env_for(ws, sd), cwd=ws)
    finally:
        os.umask(old)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["status"] for r in json.loads(done.stdout)["repairs"]] == ["done"]
    assert SECRET.strip() in (ws / "MEMORY.md").read_text()
    assert as_nobody(reads, str(ws / "MEMORY.md")) == "refused"
