"""doctor: every check and fix on real files, the OpenClaw messages, exit codes, JSON, prompts, the lock."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xxhash

from conftest import doctor_journal, env_for, fault, run_paused, set_doctor_journal, tmpfs, wait_for_line, write
from openclaw_memory.doctor.check_files import text_faults
from openclaw_memory.doctor.merge import HEADING, SENTENCE, marker
from openclaw_memory.settings import Overrides, resolve_settings
from openclaw_memory.watchdog.checkpoint import pending_checkpoint

CANON = "# Durable memory\n- prefers tea ☕\n"
LEGACY = "# old notes\n- lives in Zürich\n- 喝绿茶\n"
STAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


# ---------------------------------------------------------------- helpers (also used by test_doctor_crash.py)

def spawn(workspace: Path, state_dir: Path, *args: str, env: dict | None = None, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "openclaw_memory", *args],
        env=env_for(workspace, state_dir, **(env or {})), cwd=workspace,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )


def archives(workspace: Path) -> list[Path]:
    return sorted((workspace / ".openclaw-repair" / "root-memory").glob("*/memory.md"))


def stamp_dirs(workspace: Path) -> list[Path]:
    root = workspace / ".openclaw-repair" / "root-memory"
    return sorted(p for p in root.iterdir()) if root.exists() else []


def as_shown(path: Path) -> str:
    """A path as OpenClaw shows it: the home folder as ``~`` (the suite may run under it)."""
    home = os.path.expanduser("~").rstrip(os.sep)
    return "~" + str(path)[len(home):] if str(path).startswith(home + os.sep) else str(path)


def expected_merge(canon: bytes, legacy_text: str, archive_rel: str, workspace: Path | None = None) -> bytes:
    """OpenClaw's layout: trimmed canonical text, blank line, heading, blank line, marker (the
    archive's absolute path, :func:`as_shown`), OpenClaw's sentence, blank line, trimmed legacy
    text, newline."""
    shown = as_shown(workspace / archive_rel) if workspace is not None else archive_rel
    return (canon.decode().rstrip() + f"\n\n{HEADING}\n\n{marker(shown)}\n{SENTENCE}\n\n{legacy_text.strip()}\n").encode()


def tree(path: Path) -> dict:
    """Every entry under ``path`` with type, size, mtime and content: equal trees mean nothing was written."""
    if not path.exists():
        return {}
    out = {}
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            content = Path(p).read_bytes() if stat.S_ISREG(st.st_mode) else (os.readlink(p) if stat.S_ISLNK(st.st_mode) else None)
            out[os.path.relpath(p, path)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, content)
    return out


def data_dir(workspace: Path, state_dir: Path) -> Path:
    return resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir))).data_dir


def ids(result) -> list[str]:
    """Finding ids, without OpenClaw's "memory system not found" note (most workspaces here have no MEMORY.md)."""
    return [f["id"] for f in result.json()["findings"] if f["id"] != "memory-system-not-found"]


def problems(result) -> list[dict]:
    """The findings that are warnings or errors (notes left out)."""
    return [f for f in result.json()["findings"] if f["severity"] != "info"]


def split(workspace: Path, canon: str | bytes = CANON, legacy: str | bytes = LEGACY) -> None:
    write(workspace / "MEMORY.md", canon)
    write(workspace / "memory.md", legacy)


# ---------------------------------------------------------------- clean workspace, JSON shape, exit codes

def test_clean_workspace_exits_0(workspace, cli):
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory/2020-01-01.md", "old note\n")
    result = cli("doctor")
    assert result.returncode == 0, result.stderr
    assert "No problems found." in result.stdout
    data = cli("doctor", "--json").json()
    assert data == {"workspace": str(workspace), "findings": [], "repairs": [], "remaining": [], "ok": True}


def test_json_shape_of_findings_and_repairs(workspace, cli):
    split(workspace)
    plain = cli("doctor", "--json")
    assert plain.returncode == 1
    data = plain.json()
    assert set(data) == {"workspace", "findings", "repairs", "remaining", "ok"}
    assert data["ok"] is False and data["repairs"] == [] and data["remaining"] == data["findings"]
    (finding,) = data["findings"]
    assert set(finding) == {"id", "severity", "message", "fixable", "paths", "fixHint"}
    assert finding["message"].endswith(finding["fixHint"])
    assert finding["id"] == "split-root" and finding["severity"] == "warning" and finding["fixable"] is True
    assert finding["paths"] == ["MEMORY.md", "memory.md"]

    fixed = cli("doctor", "--fix", "--json")
    assert fixed.returncode == 0, fixed.stderr
    data = fixed.json()
    (repair,) = data["repairs"]
    assert set(repair) == {"id", "action", "status", "detail", "paths"}
    assert (repair["id"], repair["action"], repair["status"]) == ("split-root", "merge", "done")
    assert data["ok"] is True and data["remaining"] == [] and [f["id"] for f in data["findings"]] == ["split-root"]


def test_usage_error_exits_2(cli):
    assert cli("doctor", "--no-such-flag").returncode == 2


# ---------------------------------------------------------------- split root

def test_split_root_warning_is_openclaws_line_by_line(workspace, cli):
    split(workspace)
    result = cli("doctor")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    start = lines.index("Split root durable memory files detected:")
    assert lines[start: start + 6] == [
        "Split root durable memory files detected:",
        f"- canonical: {as_shown(workspace / 'MEMORY.md')} ({len(CANON.encode())} bytes)",
        f"- legacy: {as_shown(workspace / 'memory.md')} ({len(LEGACY.encode())} bytes)",
        "OpenClaw uses MEMORY.md as the canonical durable memory file.",
        "Dreaming writes durable promotions to MEMORY.md, so older facts in memory.md can be shadowed.",
        'Run "openclaw-memory doctor --fix" to merge the legacy file into MEMORY.md with a backup.',
    ]


def test_fix_merges_different_files_then_archives(workspace, state_dir, cli):
    split(workspace)
    result = cli("doctor", "--fix")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No problems remain." in result.stdout
    (archive,) = archives(workspace)
    assert STAMP_RE.match(archive.parent.name)
    assert archive.read_text(encoding="utf-8") == LEGACY
    rel = archive.relative_to(workspace).as_posix()
    assert (workspace / "MEMORY.md").read_bytes() == expected_merge(CANON.encode(), LEGACY, rel, workspace)
    assert not (workspace / "memory.md").exists()
    checkpoint = pending_checkpoint(data_dir(workspace, state_dir))
    assert checkpoint.startswith("# ⚠️ Workspace Changes Detected")
    assert f"merged memory.md into MEMORY.md; archive at {rel}" in checkpoint
    again = cli("doctor", "--json")
    assert again.returncode == 0 and again.json()["findings"] == []


def test_archive_stamp_is_javascript_iso_with_dashes():
    from openclaw_memory.doctor.archive import archive_rel
    from openclaw_memory.files.paths import archive_stamp

    when = dt.datetime(2026, 11, 30, 12, 55, 1, 427_999, tzinfo=dt.UTC)
    assert archive_stamp(when) == "2026-11-30T12-55-01-427Z"
    assert archive_rel("2026-11-30T12-55-01-427Z") == ".openclaw-repair/root-memory/2026-11-30T12-55-01-427Z/memory.md"


def test_second_split_gets_a_new_archive_and_keeps_the_first(workspace, cli):
    split(workspace)
    assert cli("doctor", "--fix").returncode == 0
    (first,) = archives(workspace)
    write(workspace / "memory.md", "another legacy text\n")
    assert cli("doctor", "--fix").returncode == 0
    both = archives(workspace)
    assert len(both) == 2 and first in both
    assert first.read_text(encoding="utf-8") == LEGACY
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.count(HEADING) == 2 and text.count(LEGACY) == 1 and text.count("another legacy text") == 1


def test_identical_files_archive_only(workspace, cli):
    split(workspace, CANON, CANON)
    before = os.stat(workspace / "MEMORY.md")
    data = cli("doctor", "--fix", "--json").json()
    assert [(r["action"], r["status"]) for r in data["repairs"]] == [("archive", "done")]
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON
    assert os.stat(workspace / "MEMORY.md").st_ino == before.st_ino  # not even rewritten
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == CANON
    assert not (workspace / "memory.md").exists()


def test_memory_md_hard_linked_to_memory_md_loses_its_second_name_not_archived(workspace, state_dir, cli):
    """memory.md another name of MEMORY.md's file (``ln MEMORY.md memory.md``): archiving it made a
    third name in the archive, so MEMORY.md stayed hard-linked (``prompt-file-hardlinked``, unloaded,
    exit 1, worded as a link that may be on purpose though it was doctor's own). The name memory.md
    goes, checked as that file; MEMORY.md has one name again and is loaded."""
    write(workspace / "MEMORY.md", CANON)
    os.link(workspace / "MEMORY.md", workspace / "memory.md")
    before = os.stat(workspace / "MEMORY.md")
    (linked,) = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "prompt-file-hardlinked"]
    assert "second name is the legacy memory.md" in linked["message"] and "on purpose" not in linked["message"]
    result = cli("doctor", "--fix", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    data = result.json()
    assert [(r["id"], r["action"], r["status"]) for r in data["repairs"]] == [("split-root", "unlink", "done")], data
    assert "hard link" in data["repairs"][0]["detail"] and data["remaining"] == []
    after = os.stat(workspace / "MEMORY.md")
    assert (after.st_ino, after.st_nlink) == (before.st_ino, 1) and (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON
    assert sorted(os.listdir(workspace)) == ["MEMORY.md"] and archives(workspace) == []
    assert "memory.md" in pending_checkpoint(data_dir(workspace, state_dir))


@pytest.mark.parametrize("exchange", [True, False], ids=["exchanged", "renamed"])
def test_a_merge_into_a_hard_linked_memory_md_says_its_other_name_keeps_the_old_text(workspace, state_dir, cli, tmp_path,
                                                                                     monkeypatch, exchange):
    """MEMORY.md with a second name outside the workspace: the merge replaces the file (never written in
    place), so that name keeps MEMORY.md's text before the merge, and the link was split with no word,
    though prompt-file-hardlinked leaves such a link alone as possibly on purpose. The report says so,
    in a write's words (a file system that cannot exchange: the rename's replaced file counted too)."""
    from openclaw_memory.history import swap

    write(workspace / "MEMORY.md", CANON)
    os.link(workspace / "MEMORY.md", tmp_path / "MEMORY-link.md")
    write(workspace / "memory.md", LEGACY)
    if not exchange:
        monkeypatch.setattr(swap, "exchange", lambda dir_fd, a, b: None)  # (what one that cannot answers)
    (merged,) = cli("doctor", "--fix", "--json").json()["repairs"]
    assert (merged["action"], merged["status"]) == ("merge", "done"), merged
    assert "; MEMORY.md had 2 hard links: the other name(s) keep the text it had (a merge replaces the file)" in \
        merged["detail"], merged
    assert (tmp_path / "MEMORY-link.md").read_text(encoding="utf-8") == CANON
    assert os.stat(workspace / "MEMORY.md").st_nlink == 1 and LEGACY.split("\n")[1] in (workspace / "MEMORY.md").read_text()
    again = cli("doctor", "--fix", "--json").json()
    assert "hard link" not in json.dumps(again), again


def test_a_hard_linked_memory_md_replaced_meanwhile_is_kept(workspace, state_dir, cli):
    """The name memory.md goes only while it is still MEMORY.md's file: an editor's save over it in
    between is a text of its own, kept, and the next run merges it."""
    write(workspace / "MEMORY.md", CANON)
    os.link(workspace / "MEMORY.md", workspace / "memory.md")
    data = paused_then_resumed(workspace, state_dir, "merge:second-name", lambda: editor_save(workspace / "memory.md", LEGACY))
    (failed,) = data["repairs"]
    assert (failed["action"], failed["status"]) == ("unlink", "failed") and "still memory.md" in failed["detail"], failed
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON
    assert sorted(os.listdir(workspace)) == ["MEMORY.md", "memory.md"]
    (merged,) = cli("doctor", "--fix", "--json").json()["repairs"]
    assert (merged["action"], merged["status"]) == ("merge", "done"), merged
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith(CANON.strip()) and LEGACY.strip() in text and os.stat(workspace / "MEMORY.md").st_nlink == 1


def test_empty_legacy_archive_only(workspace, cli):
    split(workspace, CANON, "")
    data = cli("doctor", "--fix", "--json").json()
    assert [(r["action"], r["status"]) for r in data["repairs"]] == [("archive", "done")]
    assert "empty" in data["repairs"][0]["detail"]
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON
    (archive,) = archives(workspace)
    assert archive.read_bytes() == b""


def test_merge_adds_missing_newlines(workspace, cli):
    split(workspace, "no newline at end", "legacy without newline")
    assert cli("doctor", "--fix").returncode == 0
    (archive,) = archives(workspace)
    rel = archive.relative_to(workspace).as_posix()
    assert (workspace / "MEMORY.md").read_bytes() == expected_merge(b"no newline at end", "legacy without newline", rel, workspace)
    assert archive.read_bytes() == b"legacy without newline"


def test_non_utf8_legacy_is_merged_with_fffd_and_archived_raw(workspace, cli):
    raw = b"caf\xe9 au lait\n\xff\xfe end\n"
    split(workspace, CANON, raw)
    data = cli("doctor", "--fix", "--json").json()
    (repair,) = data["repairs"]
    assert repair["status"] == "done" and "not valid UTF-8" in repair["detail"] and "U+FFFD" in repair["detail"]
    merged = (workspace / "MEMORY.md").read_bytes()
    merged.decode("utf-8")  # still valid UTF-8
    assert "caf\ufffd au lait\n\ufffd\ufffd end\n" in merged.decode("utf-8")
    (archive,) = archives(workspace)
    assert archive.read_bytes() == raw


def test_a_nul_byte_in_the_legacy_file_is_not_merged_into_memory_md(workspace, cli):
    """MEMORY.md with a NUL byte is binary to the index: the merge would have dropped it from search."""
    raw = b"fact B \x00nul\n"
    split(workspace, CANON, raw)
    (repair,) = cli("doctor", "--fix", "--json").json()["repairs"]
    assert repair["status"] == "done" and "U+FFFD" in repair["detail"]
    merged = (workspace / "MEMORY.md").read_bytes()
    assert b"\x00" not in merged and "fact B \ufffdnul" in merged.decode("utf-8")
    (archive,) = archives(workspace)
    assert archive.read_bytes() == raw  # the raw bytes, NUL included


def test_non_utf8_canonical_bytes_are_kept_exactly(workspace, cli):
    canon = b"# mine \xe9\xe9\n"
    split(workspace, canon, LEGACY)
    assert cli("doctor", "--fix").returncode == 1  # merged, but MEMORY.md itself is still not UTF-8
    assert (workspace / "MEMORY.md").read_bytes().startswith(canon + b"\n" + HEADING.encode())


def test_text_merged_earlier_is_not_merged_twice(workspace, cli):
    split(workspace)
    assert cli("doctor", "--fix").returncode == 0
    merged = (workspace / "MEMORY.md").read_bytes()
    (first,) = archives(workspace)
    write(workspace / "memory.md", first.read_bytes())  # e.g. restored from the archive by a backup tool
    data = cli("doctor", "--fix", "--json").json()
    (repair,) = data["repairs"]
    assert (repair["action"], repair["status"]) == ("archive", "done")
    assert "earlier merge" in repair["detail"]
    assert (workspace / "MEMORY.md").read_bytes() == merged
    assert len(archives(workspace)) == 2


def test_split_root_with_symlinked_canonical_is_not_merged(workspace, tmp_path, cli):
    target = write(tmp_path / "elsewhere.md", CANON)
    os.symlink(target, workspace / "MEMORY.md")
    write(workspace / "memory.md", LEGACY)
    before = tree(workspace)
    result = cli("doctor", "--fix", "--json")
    assert result.returncode == 1
    found = {f["id"]: f for f in result.json()["findings"]}
    assert found["memory-md-symlink"]["fixable"] is False
    assert found["split-root"]["fixable"] is False and "by hand" in found["split-root"]["message"]
    assert result.json()["repairs"] == []
    assert tree(workspace) == before and target.read_text(encoding="utf-8") == CANON


def test_symlinked_archive_folder_is_refused(workspace, tmp_path, cli):
    split(workspace)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, workspace / ".openclaw-repair")
    result = cli("doctor", "--fix", "--json")
    assert result.returncode == 1
    (repair,) = result.json()["repairs"]
    assert repair["status"] == "failed" and "symlink" in repair["detail"]
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY
    assert list(outside.iterdir()) == []


def paused_then_resumed(workspace, state_dir, step: str, meanwhile) -> dict:
    """Run doctor --fix --json, pause it at ``step``, call ``meanwhile()``, let it carry on; return its JSON."""
    _, out, _ = run_paused(workspace, state_dir, ("doctor", "--fix", "--json"), step, meanwhile)
    return json.loads(out)


def test_memory_md_edited_during_the_merge_is_not_overwritten(workspace, state_dir, cli):
    split(workspace)
    edit = CANON + "- written by the agent just now\n"
    data = paused_then_resumed(workspace, state_dir, "merge:write-canonical", lambda: write(workspace / "MEMORY.md", edit))
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "MEMORY.md changed under the repair" in repair["detail"]
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == edit
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY
    assert stamp_dirs(workspace) == []  # the reserved archive folder was removed
    assert doctor_journal(data_dir(workspace, state_dir)) is None
    assert cli("doctor", "--fix").returncode == 0  # the next run merges the edited file
    assert "- written by the agent just now" in (workspace / "MEMORY.md").read_text(encoding="utf-8")


def editor_save(path: Path, text: str) -> None:
    """What an editor does: the whole text to a temp file beside the note, renamed over it."""
    temp = path.with_name(f".{path.name}.editor~")
    temp.write_text(text, encoding="utf-8")
    os.rename(temp, path)


def test_an_editor_save_of_memory_md_between_the_merges_compare_and_its_rename_is_kept(workspace, state_dir, cli):
    """An editor saved MEMORY.md after the merge compared it and before the merged text took its name:
    a plain rename put the merged text (the bytes before the save, plus memory.md's) in place, and
    the save was gone, from the workspace and the history. The merged text goes in by exchange: what
    came off the name is not the version compared, so the save is put back, logged in the history,
    and the merge stops with nothing changed; the next run merges the saved text."""
    split(workspace)
    saved = CANON + "- saved in an editor while doctor merged\n"
    data = paused_then_resumed(workspace, state_dir, "merge:checked", lambda: editor_save(workspace / "MEMORY.md", saved))
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "MEMORY.md changed under the repair" in repair["detail"], repair
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == saved
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY
    assert sorted(p.name for p in workspace.iterdir() if p.name.startswith(".MEMORY.md")) == []
    assert stamp_dirs(workspace) == [] and doctor_journal(data_dir(workspace, state_dir)) is None
    history = cli("history", "MEMORY.md", "--json").json()["versions"]
    assert xxhash.xxh3_128_hexdigest(saved.encode()) in {v["version"] for v in history}
    assert cli("doctor", "--fix").returncode == 0  # the next run merges the saved text
    merged = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert merged.startswith(saved) and LEGACY.strip() in merged


def test_the_merge_holds_the_write_lock_so_no_agent_write_lands_between_its_check_and_its_rename(workspace, state_dir):
    from openclaw_memory.errors import LockTimeout
    from openclaw_memory.fsutil.lock import FileLock

    split(workspace)
    lock = FileLock(str(data_dir(workspace, state_dir) / "write.lock"), timeout=0.2)

    def try_the_lock() -> None:
        with pytest.raises(LockTimeout):
            lock.acquire()

    data = paused_then_resumed(workspace, state_dir, "merge:write-canonical", try_the_lock)
    (repair,) = data["repairs"]
    assert repair["status"] == "done"
    lock.acquire()  # released once the repair is over
    lock.release()


def test_memory_md_edited_while_it_is_archived_is_put_back_not_lost(workspace, state_dir, cli):
    split(workspace)
    edit = LEGACY + "- added while doctor ran\n"
    data = paused_then_resumed(workspace, state_dir, "merge:archive", lambda: write(workspace / "memory.md", edit))
    (repair,) = data["repairs"]
    assert repair["status"] == "failed" and "memory.md changed under the repair" in repair["detail"], repair
    assert (workspace / "memory.md").read_text(encoding="utf-8") == edit
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == CANON  # the merge was undone
    assert stamp_dirs(workspace) == []
    assert doctor_journal(data_dir(workspace, state_dir)) is None
    assert cli("doctor", "--fix").returncode == 0  # the next run merges the edited file, once
    merged = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert merged.count("- added while doctor ran") == 1 and merged.count("- lives in Zürich") == 1


def test_memory_md_created_during_the_migration_is_never_replaced(workspace, state_dir, cli):
    write(workspace / "memory.md", LEGACY)
    data = paused_then_resumed(workspace, state_dir, "migrate:at-temp", lambda: write(workspace / "MEMORY.md", CANON))
    failed, merged = data["repairs"]
    assert (failed["id"], failed["status"]) == ("legacy-root", "failed") and "put back" in failed["detail"]
    # the run looks again after each repair: the new split root is merged, never replaced
    assert (merged["id"], merged["action"], merged["status"]) == ("split-root", "merge", "done")
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY
    rel = archive.relative_to(workspace).as_posix()
    assert (workspace / "MEMORY.md").read_bytes() == expected_merge(CANON.encode(), LEGACY, rel, workspace)
    assert sorted(os.listdir(workspace)) == [".openclaw-repair", "MEMORY.md"]
    assert data["ok"] is True


def test_an_editor_save_of_memory_md_while_the_migration_links_it_keeps_both(workspace, state_dir, cli):
    """An editor saved MEMORY.md between the migration's link (its temporary name to MEMORY.md) and the
    unlink of the temporary name: the unlink took memory.md's text with it (in no file, not in the
    history) and the editor's save was logged as doctor's own version. The temporary name goes only
    while MEMORY.md is still that file; else memory.md is put back, and the run merges it."""
    write(workspace / "memory.md", LEGACY)
    saved = "# saved in an editor while doctor migrated\n"
    data = paused_then_resumed(workspace, state_dir, "migrate:linked", lambda: editor_save(workspace / "MEMORY.md", saved))
    failed, merged = data["repairs"]
    assert (failed["id"], failed["status"]) == ("legacy-root", "failed"), failed
    assert "memory.md was put back" in failed["detail"] and "saved" in failed["detail"]
    assert (merged["id"], merged["action"], merged["status"]) == ("split-root", "merge", "done"), merged
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY
    text = (workspace / "MEMORY.md").read_text(encoding="utf-8")
    assert text.startswith(saved) and LEGACY.strip() in text
    assert sorted(os.listdir(workspace)) == [".openclaw-repair", "MEMORY.md"] and data["ok"] is True
    history = cli("history", "MEMORY.md", "--json").json()["versions"]
    origins = {v["version"]: v["origin"] for v in history}
    assert origins[xxhash.xxh3_128_hexdigest(saved.encode())] == "external-edit"  # never doctor's


def test_os_error_mid_repair_is_rolled_back_at_once(tmp_path, state_dir, cli):
    with tmpfs(tmp_path / "ro-ws", "4m") as ws:
        split(ws)
        subprocess.run(["mount", "-o", "remount,ro", str(ws)], check=True)
        result = cli("doctor", "--fix", "--json", env={"OPENCLAW_WORKSPACE": str(ws)})
        assert result.returncode == 1
        (repair,) = result.json()["repairs"]
        assert repair["status"] == "failed" and "Read-only file system" in repair["detail"]
        assert "rolled-back" in repair["detail"]
        assert doctor_journal(data_dir(ws, state_dir)) is None
        assert (ws / "MEMORY.md").read_text(encoding="utf-8") == CANON
        assert (ws / "memory.md").read_text(encoding="utf-8") == LEGACY
        assert ids(cli("doctor", "--json", env={"OPENCLAW_WORKSPACE": str(ws)})) == ["split-root"]
        shown = cli("doctor", "--fix", env={"OPENCLAW_WORKSPACE": str(ws)}).stdout
        # The repair just failed: the remaining finding does not send the user to run it again.
        assert "merge failed" in shown and 'Run "openclaw-memory doctor --fix"' not in shown
        assert "(fixable with --fix)" not in shown


def test_state_dir_that_cannot_be_created_is_an_error_not_a_traceback(workspace, state_dir, cli):
    split(workspace)
    write(state_dir / "openclaw-memory", "a file where the data folder should be")
    result = cli("doctor", "--fix")
    assert result.returncode == 2 and "cannot take the lock" in result.stderr
    assert "Traceback" not in result.stderr


# ---------------------------------------------------------------- legacy-only root

def test_legacy_only_is_migrated_by_rename(workspace, state_dir, cli):
    write(workspace / "memory.md", LEGACY)
    inode = os.stat(workspace / "memory.md").st_ino
    plain = cli("doctor", "--json")
    assert plain.returncode == 1
    (finding,) = problems(plain)
    assert (finding["id"], finding["fixable"], finding["paths"]) == ("legacy-root", True, ["memory.md"])
    assert "never loaded" in finding["message"]

    data = cli("doctor", "--fix", "--json").json()
    assert [(r["id"], r["action"], r["status"]) for r in data["repairs"]] == [("legacy-root", "migrate", "done")]
    assert data["ok"] is True
    assert sorted(os.listdir(workspace)) == ["MEMORY.md"]  # no temp name left, exact entry name
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == LEGACY
    assert os.stat(workspace / "MEMORY.md").st_ino == inode  # renamed, not copied
    assert "renamed the legacy root memory.md to MEMORY.md" in pending_checkpoint(data_dir(workspace, state_dir))


@pytest.fixture
def casefold_dir(tmp_path):
    """A case-insensitive folder: ext4 with casefold on a loop device (Linux 5.2+ built with unicode support)."""
    image, mount_point = tmp_path / "cf.img", tmp_path / "cf"
    mount_point.mkdir()
    steps = [
        ["truncate", "-s", "8M", str(image)],
        ["mkfs.ext4", "-q", "-O", "casefold", str(image)],
        ["mount", "-o", "loop", str(image), str(mount_point)],
    ]
    for cmd in steps:
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except FileNotFoundError:
            pytest.skip(f"{cmd[0]} is not installed: no case-insensitive file system to test on")
        if proc.returncode != 0:
            pytest.skip(f"no case-insensitive file system here: `{' '.join(cmd[:3])}` failed "
                        f"({proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else proc.returncode}); "
                        "this kernel lacks ext4 casefold or loop mounts")
    try:
        folder = mount_point / "ws"
        folder.mkdir()
        subprocess.run(["chattr", "+F", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_legacy_only_migration_on_a_case_insensitive_file_system(casefold_dir, cli):
    write(casefold_dir / "memory.md", LEGACY)
    assert (casefold_dir / "MEMORY.md").exists()  # stat() finds it under either name: the trap
    plain = cli("doctor", "--json", env={"OPENCLAW_WORKSPACE": str(casefold_dir)})
    assert [f["id"] for f in plain.json()["findings"]] == ["legacy-root"]  # exact entry, not a split root
    fixed = cli("doctor", "--fix", "--json", env={"OPENCLAW_WORKSPACE": str(casefold_dir)})
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert os.listdir(casefold_dir) == ["MEMORY.md"]  # the entry now has the canonical spelling
    assert (casefold_dir / "MEMORY.md").read_text(encoding="utf-8") == LEGACY


def test_symlinked_legacy_only_is_not_migrated(workspace, tmp_path, cli):
    os.symlink(write(tmp_path / "x.md", "x"), workspace / "memory.md")
    result = cli("doctor", "--fix", "--json")
    assert result.returncode == 1
    (finding,) = problems(result)
    assert finding["id"] == "legacy-root" and finding["fixable"] is False
    assert os.path.islink(workspace / "memory.md") and not os.path.lexists(workspace / "MEMORY.md")


# ---------------------------------------------------------------- symlinks, extra paths, UTF-8, prompt caps

def test_symlinked_memory_md_is_reported_as_ignored(workspace, tmp_path, cli):
    os.symlink(write(tmp_path / "real.md", CANON), workspace / "MEMORY.md")
    result = cli("doctor", "--json")
    assert result.returncode == 1
    (finding,) = result.json()["findings"]
    assert (finding["id"], finding["severity"], finding["fixable"]) == ("memory-md-symlink", "warning", False)
    assert "ignore" in finding["message"] and "never loaded" in finding["message"]
    assert cli("doctor", "--fix").returncode == 1  # nothing doctor can do: still 1


def test_symlinked_memory_dir_and_files(workspace, tmp_path, cli):
    notes = tmp_path / "notes"
    write(notes / "a.md", "a")
    os.symlink(notes, workspace / "memory")
    result = cli("doctor", "--json")
    assert result.returncode == 1
    (finding,) = problems(result)
    assert (finding["id"], finding["fixable"], finding["paths"]) == ("memory-dir-symlink", False, ["memory"])
    assert "ignore" in finding["message"]

    os.unlink(workspace / "memory")
    write(workspace / "memory/real.md", "r")
    os.symlink(notes / "a.md", workspace / "memory/linked.md")
    (finding,) = problems(cli("doctor", "--json"))
    assert finding["id"] == "memory-file-symlink" and finding["paths"] == ["memory/linked.md"]


def test_a_fifo_named_like_a_note_is_named(workspace, cli):
    """`files` listed it as skipped ("not a regular file"), and doctor found nothing wrong."""
    write(workspace / "memory/real.md", "r")
    os.mkfifo(workspace / "memory/pipe.md")
    (finding,) = problems(cli("doctor", "--json"))
    assert (finding["id"], finding["fixable"], finding["paths"]) == ("memory-file-not-regular", False, ["memory/pipe.md"])
    assert "never opened" in finding["message"]


def test_memory_md_that_is_a_folder(workspace, cli):
    (workspace / "MEMORY.md").mkdir()
    result = cli("doctor", "--json")
    assert result.returncode == 1 and ids(result) == ["memory-md-not-file"]


@pytest.mark.parametrize("make", [lambda p: p.mkdir(), lambda p: os.mkfifo(p), lambda p: os.symlink("/nonexistent", p)],
                         ids=["folder", "fifo", "dangling-symlink"])
def test_memory_md_beside_an_unusable_memory_md_is_named_with_what_to_do(workspace, cli, make):
    make(workspace / "MEMORY.md")
    write(workspace / "memory.md", LEGACY)
    (finding,) = problems(cli("doctor", "--json"))
    assert finding["paths"] == ["MEMORY.md", "memory.md"] and "is never loaded either" in finding["message"]
    canonical = workspace / "MEMORY.md"
    canonical.rmdir() if canonical.is_dir() and not canonical.is_symlink() else canonical.unlink()
    assert cli("doctor", "--fix").returncode == 0  # as the message says: then the rename goes through
    assert (workspace / "MEMORY.md").read_text(encoding="utf-8") == LEGACY


def test_memory_dir_that_is_a_file(workspace, cli):
    write(workspace / "memory", "oops")
    assert ids(cli("doctor", "--json")) == ["memory-dir-not-folder"]


def test_extra_paths_missing_symlinked_unreadable(workspace, tmp_path, cli):
    ok = write(tmp_path / "ok/n.md", "fine\n").parent
    missing = tmp_path / "gone"
    link = tmp_path / "link"
    os.symlink(ok, link)
    loop = tmp_path / "loop"
    os.symlink(loop, loop)  # ELOOP on any path through it: unreadable even for root
    unreadable = loop / "notes"
    result = cli("doctor", "--json", "--extra", str(ok), "--extra", str(missing), "--extra", str(link), "--extra", str(unreadable))
    assert result.returncode == 1
    found = {f["id"]: f for f in problems(result)}
    assert set(found) == {"extra-path-missing", "extra-path-symlink", "extra-path-unreadable"}
    # Paths relative to the workspace, as OpenClaw shows them.
    assert found["extra-path-missing"]["paths"] == ["../gone"]
    assert found["extra-path-symlink"]["paths"] == ["../link"] and "ignored" in found["extra-path-symlink"]["message"]
    assert found["extra-path-unreadable"]["paths"] == ["../loop/notes"]
    assert not any(f["fixable"] for f in found.values())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a chmod-000 folder anyway; the ELOOP case above covers root")
def test_extra_folder_without_permission(tmp_path, cli):
    folder = write(tmp_path / "private/n.md", "x").parent
    folder.chmod(0)
    try:
        assert ids(cli("doctor", "--json", "--extra", str(folder))) == ["extra-path-unreadable"]
    finally:
        folder.chmod(0o755)


def test_non_utf8_memory_file(workspace, cli):
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory/bad.md", b"good line\nbad \xc3\x28 here\n")
    (finding,) = cli("doctor", "--json").json()["findings"]
    assert (finding["id"], finding["paths"], finding["fixable"]) == ("not-utf8", ["memory/bad.md"], False)
    assert "offset 14" in finding["message"]


def test_utf8_check_takes_what_the_index_found_without_a_record_per_file(workspace, state_dir, cli, monkeypatch):
    """A note the index read unchanged since is not opened, and its row is compared as SQLite gives
    it: a TextCheck built per row was half the check's CPU at 30,000 notes (128 -> 68 ms)."""
    from conftest import wait_for
    from openclaw_memory.database import observations, read_only
    from openclaw_memory.doctor import check_files
    from openclaw_memory.doctor.model import CheckContext
    from openclaw_memory.fsutil.fsclock import guard_ns

    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(20):
        write(workspace / f"memory/2026-01-{i + 1:02d}.md", f"# Day {i}\nfine\n")
    write(workspace / "memory/2026-02-01.md", b"# Day\nbad \xc3\x28 and \x00\n")
    newest = max(p.stat().st_ctime_ns for p in workspace.rglob("*.md"))
    wait_for(lambda: time.time_ns() > newest + guard_ns(workspace), 30)  # sightings after it are not racy
    assert cli("index").returncode == 0
    built: list[object] = []
    real_init = observations.TextCheck.__init__
    monkeypatch.setattr(observations.TextCheck, "__init__", lambda self, *a: built.append(a) or real_init(self, *a))
    opened: list[int] = []
    real_faults = check_files._faults
    monkeypatch.setattr(check_files, "_faults", lambda fd: opened.append(fd) or real_faults(fd))
    with read_only():
        found = check_files.check_utf8(CheckContext(resolve_settings(
            Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={})))
    assert sorted((f.id, f.paths) for f in found) == [("memory-file-not-text", ("memory/2026-02-01.md",)),
                                                      ("not-utf8", ("memory/2026-02-01.md",))]
    assert "(first at offset 17)" in found[1].message and "(first invalid byte at offset 10)" in found[0].message
    assert opened == [] and built == []  # before: a TextCheck for each of the 22 files


def test_utf8_check_opens_each_folder_once_and_reads_every_note(workspace, state_dir, tmp_path, monkeypatch):
    """One descriptor walk: each folder opened once from its root, each note by name from it (not
    its whole path resolved again per note), across the workspace and the extra paths."""
    from openclaw_memory.database import read_only
    from openclaw_memory.doctor import check_files
    from openclaw_memory.doctor.model import CheckContext
    from openclaw_memory.settings import Overrides, resolve_settings

    write(workspace / "MEMORY.md", b"# Memory\nbad \xff\n")
    for i in range(12):
        write(workspace / f"memory/2026-01-{i + 1:02d}.md", f"# Day {i}\nfine\n")
    write(workspace / "memory/2026-01-05.md", b"# Day\nbad \xc3\x28\n")
    write(workspace / "memory/deep/a.md", b"nul \x00\n")
    single = write(tmp_path / "runbook.md", b"\xfe")
    folder = write(tmp_path / "notes/x.md", b"ok\n").parent
    write(folder / "y.md", b"\xff")
    opened = []
    real_under = check_files.Folder.under
    monkeypatch.setattr(check_files.Folder, "under", classmethod(
        lambda cls, root, parts=(), **kw: opened.append((root, tuple(parts))) or real_under(root, parts, **kw)))
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir),
                                          extra=(str(single), str(folder))), environ={})
    with read_only():
        ctx = CheckContext(settings)
        ctx.scan  # noqa: B018 - the scan, before the count
        opened.clear()
        findings = check_files.check_utf8(ctx)
    found = sorted((f.id, f.paths) for f in findings)
    assert found == [("memory-file-not-text", ("memory/deep/a.md",)), ("not-utf8", ("../notes/y.md",)),
                     ("not-utf8", ("../runbook.md",)), ("not-utf8", ("MEMORY.md",)),
                     ("not-utf8", ("memory/2026-01-05.md",))]
    assert len(opened) == len(set(opened)) == 5  # the workspace, memory/, memory/deep/, two extra folders


def test_first_invalid_utf8_across_block_boundaries(tmp_path):
    block = 1 << 20
    # a valid 3-byte character split across the first block boundary, then an invalid byte later
    data = b"a" * (block - 1) + "€".encode() + b"b" * 10 + b"\xff" + b"c"
    path = write(tmp_path / "big.md", data)
    assert text_faults(str(path), (str(tmp_path),))[0] == block - 1 + 3 + 10
    write(path, b"a" * (block - 2) + "€".encode())
    assert text_faults(str(path), (str(tmp_path),))[0] is None
    write(path, b"a" * (block - 1) + b"\xe2\x82")  # truncated at end of file
    assert text_faults(str(path), (str(tmp_path),))[0] == block - 1


def test_prompt_caps(workspace, state_dir, cli):
    (state_dir / "openclaw-memory.toml").write_text("[prompt]\nfile_chars = 300\ntotal_chars = 400\n", encoding="utf-8")
    for name in ("AGENTS.md", "SOUL.md", "IDENTITY.md"):  # OpenClaw's other startup files: one character each
        write(workspace / name, name[0])
    write(workspace / "USER.md", "u" * 320 + "\n\n")  # over its cap: 320 characters once trailing white space goes
    write(workspace / "MEMORY.md", "m" * 250 + "\n")  # under its cap, but only 97 of the total are left
    write(workspace / "memory/2001-01-01.md", "x" * 5000)  # not loaded at startup: never cut
    found = cli("doctor", "--json").json()["findings"]
    by_id = {}
    for f in found:
        by_id.setdefault(f["id"], []).append(f)
    assert by_id["prompt-file-cap"][0]["paths"] == ["USER.md"]
    assert "320 characters" in by_id["prompt-file-cap"][0]["message"] and "300" in by_id["prompt-file-cap"][0]["message"]
    assert by_id["prompt-total-cap"][0]["paths"] == ["MEMORY.md"]
    assert re.search(r"cut to 9\d of 250 characters", by_id["prompt-total-cap"][0]["message"])  # 97 left, marker inside
    (budget,) = by_id["bootstrap-budget"]
    assert budget["severity"] == "info"
    assert "- USER.md: 320 raw / 300 injected (6% truncated; max/file)" in budget["message"]
    assert re.search(r"- MEMORY\.md: 250 raw / 9\d injected \(6\d% truncated; max/total\)", budget["message"])
    assert re.search(r"Total bootstrap injected chars: 39\d \(\d+% of max/total 400\)\.", budget["message"])
    assert all("2001-01-01" not in p for f in found for p in f["paths"])


def test_prompt_checks_list_memory_once_and_report_what_the_whole_section_says(workspace, state_dir, tmp_path):
    """The prompt checks take the section `prompt` builds, daily notes and all; its prelude finds the
    day's notes in the scan's listing of memory/ (a second listing cost 22 ms of CPU at 30,000 notes),
    which holds exactly the day's `*.md` entries a listing of memory/ shows (regular, with their mtime,
    and symlinks), and the cap findings are those of the whole section, the prelude's own cuts aside."""
    from openclaw_memory.database import read_only
    from openclaw_memory.doctor import check_files
    from openclaw_memory.doctor.model import CheckContext
    from openclaw_memory.files.scan import scan_workspace
    from openclaw_memory.prompt import build_prompt_section, startup

    (state_dir / "openclaw-memory.toml").write_text("[prompt]\nfile_chars = 300\ntotal_chars = 400\n", encoding="utf-8")
    write(workspace / "USER.md", "u" * 320 + "\n")
    write(workspace / "MEMORY.md", "m" * 250 + "\n")
    stamps = startup.date_stamps(dt.datetime.now(dt.UTC), 2, None)
    for stamp in stamps:  # the day's notes, over the daily cap
        write(workspace / f"memory/{stamp}.md", "x" * 5000 + "\n")
        write(workspace / f"memory/{stamp}-slug.md", "s\n")
    write(workspace / "memory/2000-01-01.md", "another day\n")
    write(tmp_path / "target.md", "t\n")
    os.symlink(tmp_path / "target.md", workspace / f"memory/{stamps[0]}-linked.md")
    (workspace / f"memory/{stamps[0]}-folder.md").mkdir()
    write(workspace / f"memory/{stamps[0]}-folder.md/deeper.md", "d\n")
    os.mkfifo(workspace / f"memory/{stamps[0]}-pipe.md")
    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={})
    with os.scandir(workspace / "memory") as it:
        listed = sorted((e.name, e.is_file(follow_symlinks=False), e.is_symlink(),
                         e.stat(follow_symlinks=False).st_mtime_ns if e.is_file(follow_symlinks=False) else 0)
                        for e in it if e.name.endswith(".md") and e.name[:10] in stamps
                        and (e.is_file(follow_symlinks=False) or e.is_symlink()))
    assert len(listed) == 5 and sorted(startup._day_entries(scan_workspace(settings), set(stamps))) == listed
    with read_only():
        ctx = CheckContext(settings)
        found = [(f.id, f.paths, f.message) for f in check_files.check_prompt_caps(ctx)]
    limits = settings.prompt
    whole = build_prompt_section(scan_workspace(settings), file_cap=limits.file_chars, total_cap=limits.total_chars,
                                 startup=limits.startup)
    assert ctx.prompt.prelude == whole.prelude and any(cut.reason == "daily-cap" for cut in whole.truncated)
    assert [(cut.path, cut.reason) for cut in whole.truncated if cut.reason != "daily-cap"] == [
        (paths[0], "file-cap" if finding_id == "prompt-file-cap" else "total-cap")
        for finding_id, paths, _ in found if finding_id != "bootstrap-budget"]
    assert found[-1] == ("bootstrap-budget", ("USER.md", "MEMORY.md"), "\n".join(whole.budget or ()))


def test_memory_system_not_found_is_a_note(workspace, cli):
    """OpenClaw's check: no MEMORY.md file and AGENTS.md does not name it (exact word)."""
    assert "memory-system-not-found" in [f["id"] for f in cli("doctor", "--json").json()["findings"]]
    write(workspace / "AGENTS.md", "Keep notes in MEMORY.mdx only\n")
    result = cli("doctor", "--json")
    (note,) = [f for f in result.json()["findings"] if f["id"] == "memory-system-not-found"]
    assert note["severity"] == "info" and result.returncode == 0
    assert note["message"].startswith("Memory system not found in workspace.\nPaste this into your agent:")
    # OpenClaw's doctor flag leaves the suggestion out (it was "no such option").
    quiet = cli("doctor", "--no-workspace-suggestions")
    assert quiet.returncode == 0 and "Memory system not found" not in quiet.stdout and "No problems found" in quiet.stdout
    assert cli("doctor", "--fix", "--no-workspace-suggestions", "--json").json()["remaining"] == []
    write(workspace / "AGENTS.md", "Read MEMORY.md first.\n")
    assert "memory-system-not-found" not in [f["id"] for f in cli("doctor", "--json").json()["findings"]]


def test_retired_qmd_settings_reported_not_rewritten(workspace, state_dir, cli):
    config = state_dir / "openclaw.json"
    config.write_text(
        '{memory: {backend: "qmd", qmd: {paths: [{path: "~/notes", pattern: "**/*.md"}, {path: " "}]},'
        ' search: {qmd: {extraCollections: [{path: "/srv/wiki"}]}}},'
        ' agents: {list: [{id: "ops", memory: {search: {qmd: {}}}}]}}',
        encoding="utf-8",
    )
    before = config.read_bytes()
    write(workspace / "MEMORY.md", "m\n")
    result = cli("doctor", "--fix", "--json")
    (finding,) = [f for f in result.json()["remaining"] if f["id"] == "retired-qmd-settings"]
    assert finding["severity"] == "warning" and finding["fixable"] is False and result.returncode == 1
    message = finding["message"]
    assert "memory.backend is retired" in message
    assert 'Add {"path": "~/notes", "pattern": "**/*.md"} to memory.search.extraPaths, then remove memory.qmd.' in message
    assert 'Add "/srv/wiki" to memory.search.extraPaths, then remove memory.search.qmd.' in message
    assert "agents.list[0] (ops).memory.search.qmd is retired" in message
    assert config.read_bytes() == before  # OpenClaw's file: read, never written


# ---------------------------------------------------------------- plain doctor writes nothing

def test_plain_doctor_writes_nothing(workspace, tmp_path, cli):
    split(workspace)
    write(workspace / "memory/bad.md", b"\xff")
    state = tmp_path / "absent-state"
    env = {"OPENCLAW_STATE_DIR": str(state)}
    before = tree(workspace)
    for args in (("doctor",), ("doctor", "--json"), ("doctor", "--yes"), ("doctor", "--non-interactive")):
        result = cli(*args, env=env)
        assert result.returncode == 1, (args, result.stderr)
    assert not state.exists()
    assert tree(workspace) == before


def test_plain_doctor_reports_an_interrupted_repair_without_touching_it(workspace, state_dir, cli, cli_process):
    split(workspace)
    killed = cli_process("doctor", "--fix", env=fault("merge:canonical-written=kill"))
    assert killed.returncode == -signal.SIGKILL
    before_ws, before_state = tree(workspace), tree(state_dir)
    result = cli("doctor", "--json")
    assert result.returncode == 1
    finding = next(f for f in result.json()["findings"] if f["id"] == "interrupted-repair")
    assert finding["severity"] == "error" and finding["fixable"] is True
    assert "merge:canonical-written" not in finding["message"] and "interrupted at step 'write-canonical'" in finding["message"]
    # SQLite's shared-memory index of the state database is where any reader leaves its marks.
    assert tree(workspace) == before_ws and _unmarked(tree(state_dir)) == _unmarked(before_state)


def _unmarked(entries: dict) -> dict:
    """Less what any reader leaves (SQLite's -shm index and its empty -wal) and doctor's record of the state
    database's last clean check (database/checked.py: written once the database settled, like the link table),
    and so less the time of a folder, which making or renaming those sets (a file made or removed for good
    shows as an entry of its own)."""
    return {path: (kind, size, None if stat.S_ISDIR(kind) else mtime, content)
            for path, (kind, size, mtime, content) in entries.items()
            if not path.endswith(("state.db-shm", "state-checked.json")) and not (path.endswith("state.db-wal") and size == 0)}


def test_damaged_journal_is_set_aside_and_nothing_else_changes(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", CANON)
    set_doctor_journal(data_dir(workspace, state_dir), "{not json")
    before = tree(workspace)
    plain = cli("doctor", "--json")
    (finding,) = plain.json()["findings"]
    assert (finding["id"], finding["severity"], finding["fixable"]) == ("interrupted-repair", "error", True)
    result = cli("doctor", "--fix", "--json")
    assert result.returncode == 0, result.stdout
    assert result.json()["repairs"][0]["status"] == "completed"
    assert doctor_journal(data_dir(workspace, state_dir)) is None and tree(workspace) == before
    (kept,) = (data_dir(workspace, state_dir) / "damaged").rglob("doctor-journal.json")
    assert kept.read_text() == "{not json"


# ---------------------------------------------------------------- moves across file systems

def test_injected_exdev_copies_verifies_then_unlinks(workspace, cli):
    split(workspace)
    result = cli("doctor", "--fix", "--json", env=fault("move:rename=fail"))
    assert result.returncode == 0, result.stderr
    (repair,) = result.json()["repairs"]
    assert "another file system" in repair["detail"] and "hash-verified" in repair["detail"]
    (archive,) = archives(workspace)
    assert archive.read_text(encoding="utf-8") == LEGACY
    assert os.listdir(archive.parent) == ["memory.md"]  # no temp copy left
    assert not (workspace / "memory.md").exists()


@pytest.fixture
def tmpfs_archive(workspace):
    """A tmpfs as the archive location: a real cross-device move (the injected-EXDEV test covers
    the copy path where none can be mounted)."""
    with tmpfs(workspace / ".openclaw-repair", "8m") as mount_point:
        yield mount_point


def test_real_cross_device_move_to_tmpfs(workspace, tmpfs_archive, cli):
    assert os.stat(tmpfs_archive).st_dev != os.stat(workspace).st_dev
    split(workspace)
    result = cli("doctor", "--fix", "--json")
    assert result.returncode == 0, result.stderr
    (repair,) = result.json()["repairs"]
    assert repair["status"] == "done" and "another file system" in repair["detail"]
    (archive,) = archives(workspace)
    assert os.stat(archive).st_dev == os.stat(tmpfs_archive).st_dev
    assert archive.read_text(encoding="utf-8") == LEGACY
    assert not (workspace / "memory.md").exists()


# ---------------------------------------------------------------- prompts

def run_on_tty(workspace, state_dir, *args, answer: str = "") -> tuple[int, str, str]:
    """Run doctor with a pseudo-terminal as stdin, typing ``answer``."""
    master, slave = pty.openpty()
    try:
        proc = spawn(workspace, state_dir, *args, stdin=slave)
        os.write(master, answer.encode())
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(slave)
        os.close(master)
    return proc.returncode, out, err


def test_tty_prompt_declined_changes_nothing(workspace, state_dir):
    split(workspace)
    before = tree(workspace)
    code, out, err = run_on_tty(workspace, state_dir, "doctor", "--fix", answer="n\n")
    assert code == 1
    assert "Repair split-root" in err and "[Y/n]" in err
    assert "split-root: merge declined" in out
    assert tree(workspace) == before


def test_tty_prompt_defaults_to_yes(workspace, state_dir):
    split(workspace)
    code, out, err = run_on_tty(workspace, state_dir, "doctor", "--repair", answer="\n")
    assert code == 0, out + err
    assert "Repair split-root" in err
    assert len(archives(workspace)) == 1


@pytest.mark.parametrize("flag", ["--yes", "--non-interactive", "--json"])
def test_tty_flags_suppress_the_prompt(workspace, state_dir, flag):
    split(workspace)
    code, out, err = run_on_tty(workspace, state_dir, "doctor", "--fix", flag)
    assert code == 0, out + err
    assert "Repair split-root" not in err
    assert len(archives(workspace)) == 1


def test_without_tty_fix_alone_applies(workspace, cli):
    split(workspace)
    result = cli("doctor", "--fix")
    assert result.returncode == 0 and "Repair split-root" not in result.stderr
    assert "split-root: merge done" in result.stdout


# ---------------------------------------------------------------- the lock

def test_second_fix_waits_then_exits_2_naming_the_holder(workspace, state_dir, cli):
    split(workspace)
    first = spawn(workspace, state_dir, "doctor", "--fix", env=fault("locked=pause"))
    try:
        wait_for_line(first.stderr, "test-hook: paused at locked")
        started = time.monotonic()
        second = cli("doctor", "--fix")
        waited = time.monotonic() - started
        assert second.returncode == 2
        assert f"pid {first.pid}" in second.stderr and "waited 5 s" in second.stderr
        assert waited >= 5
        as_json = cli("doctor", "--fix", "--json")
        assert as_json.returncode == 2 and f"pid {first.pid}" in as_json.json()["error"]
        plain = cli("doctor")  # takes no lock: answers at once
        assert plain.returncode == 1 and "Split root durable memory files detected:" in plain.stdout
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert (workspace / "memory.md").read_text(encoding="utf-8") == LEGACY  # the paused run changed nothing
    assert cli("doctor", "--fix").returncode == 0  # the kernel dropped the dead holder's lock


# ---------------------------------------------------------------- the watchdog

def test_watchdog_changes_are_reported_and_repairs_refresh_the_baseline(workspace, state_dir, cli):
    from openclaw_memory.watchdog.snapshot import take_snapshot
    from openclaw_memory.watchdog.verify import verify_workspace

    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)))
    write(workspace / "MEMORY.md", CANON)
    write(workspace / "memory/a.md", "a\n")
    write(workspace / "notes.txt", "n\n")
    assert cli("doctor", "--json").json()["findings"] == []  # no baseline: no watchdog finding
    take_snapshot(settings, "base")
    assert cli("doctor").returncode == 0  # keeps the links it parsed (its one write: a cache), now there is a state database
    before = tree(state_dir)
    assert cli("doctor").returncode == 0
    assert _unmarked(tree(state_dir)) == _unmarked(before)  # verify inside plain doctor writes nothing either

    write(workspace / "new.txt", "new\n")
    result = cli("doctor", "--json")
    (finding,) = result.json()["findings"]
    assert (finding["id"], finding["severity"], finding["paths"]) == ("watchdog-changes", "info", ["new.txt"])
    assert result.returncode == 0  # new files alone are low risk: info does not fail

    write(workspace / "notes.txt", "edited\n")
    result = cli("doctor", "--json")
    (finding,) = result.json()["findings"]
    assert finding["severity"] == "warning" and finding["paths"] == ["notes.txt", "new.txt"]
    assert "'base'" in finding["message"] and "- changed: notes.txt" in finding["message"]
    assert result.returncode == 1

    write(workspace / "memory.md", LEGACY)
    take_snapshot(settings, "base2")
    write(workspace / "notes.txt", "edited again\n")  # an unrelated change doctor must not hide
    data = cli("doctor", "--fix", "--json").json()
    assert [r["status"] for r in data["repairs"]] == ["done"]
    assert "watchdog baseline updated" in data["repairs"][0]["detail"]
    (left,) = data["remaining"]
    assert left["id"] == "watchdog-changes" and left["paths"] == ["notes.txt"]
    assert cli("doctor", "--fix").stdout.rstrip().endswith("1 problem remains.")
    after = verify_workspace(settings)
    assert [c.path for c in after.changed] == ["notes.txt"] and after.deleted == () and after.new == ()


def test_an_outside_edit_of_memory_md_before_the_repair_stays_visible_to_the_watchdog(workspace, state_dir, cli):
    from openclaw_memory.watchdog.snapshot import take_snapshot

    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)))
    split(workspace)
    take_snapshot(settings, "base")
    write(workspace / "MEMORY.md", CANON + "- slipped in behind the agent's back\n")
    assert cli("watchdog", "verify").returncode == 1
    data = cli("doctor", "--fix", "--json").json()
    (repair,) = data["repairs"]
    assert repair["status"] == "done" and "baseline was left as it was: MEMORY.md had changed" in repair["detail"]
    result = cli("watchdog", "verify", "--json")
    assert result.returncode == 1 and "MEMORY.md" in [c["path"] for c in result.json()["changed"]]


def test_damaged_watchdog_baseline_is_a_finding_not_a_crash(workspace, state_dir, cli):
    import sqlite3

    from openclaw_memory.watchdog.snapshot import take_snapshot
    from openclaw_memory.watchdog.verify import verify_workspace

    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)))
    write(workspace / "MEMORY.md", CANON)
    take_snapshot(settings, "base")
    write(workspace / "MEMORY.md", CANON + "edited\n")
    info = take_snapshot(settings, "newer")
    with sqlite3.connect(info.path) as conn:  # one byte of the body flipped: the database is sound, the checksum fails
        (body,) = conn.execute("SELECT body FROM snapshots WHERE label = 'newer'").fetchone()
        damaged = body[:-1] + bytes([body[-1] ^ 0xFF])
        conn.execute("UPDATE snapshots SET body = ? WHERE label = 'newer'", (damaged,))
    conn.close()
    verify = cli("watchdog", "verify")
    assert verify.returncode == 2 and "damaged" in verify.stderr and "doctor --fix" in verify.stderr
    result = cli("doctor", "--json")
    assert result.returncode == 1
    assert ids(result) == ["watchdog-damaged"]
    (finding,) = [f for f in result.json()["findings"] if f["id"] == "watchdog-damaged"]
    assert "'newer'" in finding["message"] and "checksum mismatch" in finding["message"]
    fixed = cli("doctor", "--fix", "--json")
    assert fixed.returncode == 1, fixed.stdout  # the edit since "base" is news again
    (repair,) = fixed.json()["repairs"]
    assert repair["action"] == "set aside" and repair["status"] == "done" and "'base'" in repair["detail"]
    (kept,) = (data_dir(workspace, state_dir) / "damaged").rglob("newer.snap")
    assert kept.read_bytes() == damaged and str(kept) in repair["detail"]  # the bytes are kept, never deleted
    assert [f["id"] for f in fixed.json()["remaining"]] == ["watchdog-changes"]
    assert [c.path for c in verify_workspace(settings).changed] == ["MEMORY.md"]


def test_the_damaged_snapshot_check_builds_no_snapshots_table_and_finds_what_a_load_finds(workspace, state_dir,
                                                                                          monkeypatch):
    """doctor looks at every kept snapshot (20 by default) for damage: each is checked as a load
    checks it (header, checksum, every section's length against the file count) without its table
    built (a string a file: 17 ms CPU of doctor at 3,000 notes with 20 snapshots, growing with both),
    and what it finds is what a load finds, worded alike."""
    import sqlite3

    from openclaw_memory.doctor.check_state import check_watchdog_files
    from openclaw_memory.doctor.model import CheckContext
    from openclaw_memory.watchdog import store
    from openclaw_memory.watchdog.snapshot import take_snapshot

    settings = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={})
    write(workspace / "MEMORY.md", CANON)
    for i in range(3):
        write(workspace / f"memory/n{i}.md", f"note {i}\n")
        info = take_snapshot(settings, f"s{i}")
    built: list[str] = []
    real = store.Table.from_bytes.__func__
    monkeypatch.setattr(store.Table, "from_bytes", classmethod(lambda cls, data, where: built.append(where) or real(cls, data, where)))
    assert check_watchdog_files(CheckContext(settings)) == [] and built == []
    with sqlite3.connect(info.path) as conn:
        body = {label: bytes(b) for label, b in conn.execute("SELECT label, body FROM snapshots")}
        head, rest = body["s1"].split(b"\n", 1)
        header = json.loads(head)
        conn.execute("UPDATE snapshots SET body = ? WHERE label = 's0'", (body["s0"][:-1] + bytes([body["s0"][-1] ^ 1]),))
        header["count"] += 1  # a header that no longer matches its sound body: a load finds the columns disagree
        conn.execute("UPDATE snapshots SET body = ? WHERE label = 's1'", (json.dumps(header).encode() + b"\n" + rest,))
    conn.close()
    (finding,) = check_watchdog_files(CheckContext(settings))
    expected = []
    for label in ("s0", "s1"):
        with pytest.raises(store.SnapshotDamaged) as raised:
            store.SnapshotStore(settings.data_dir).load(label)
        expected.append(raised.value.message)
    assert "checksum mismatch" in expected[0] and "column lengths disagree" in expected[1]
    assert all(message in finding.message for message in expected) and "'s2'" not in finding.message


# ---------------------------------------------------------------- index checks


def test_index_missing_is_reported_only_where_search_is_in_use(workspace, state_dir, cli):
    from openclaw_memory.settings import Overrides, resolve_settings

    write(workspace / "MEMORY.md", "m\n")
    assert cli("doctor", "--json").json()["findings"] == []  # never indexed: healthy
    write(state_dir / "openclaw-memory.toml", "[index]\nmodel = \"all-MiniLM-L6-v2\"\n")
    (finding,) = cli("doctor", "--json").json()["findings"]
    assert (finding["id"], finding["severity"], finding["fixable"]) == ("index-missing", "info", False)
    data_dir = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={}).data_dir
    (data_dir / "index").mkdir(parents=True)  # an index existed here, this agent's is gone
    result = cli("doctor", "--json")
    (finding,) = result.json()["findings"]
    assert (finding["id"], finding["severity"], finding["fixable"]) == ("index-missing", "warning", True)
    assert result.returncode == 1


def test_a_twin_over_openclaws_read_limit_gets_manual_steps_not_a_fix_that_refuses(workspace, cli):
    big = b"# Legacy\n" + b"y" * 99 + b"\n"
    write(workspace / "MEMORY.md", "# Memory\n- short\n")
    (workspace / "memory.md").write_bytes(big * 90_000)  # 9 MB: over 8 MiB
    report = json.loads(cli("doctor", "--json").stdout)
    (split,) = [f for f in report["findings"] if f["id"] == "split-root"]
    assert split["fixable"] is False
    assert 'Run "openclaw-memory doctor --fix"' not in split["message"]  # it would refuse again
    assert "Merge by hand" in split["message"] and "mv " in split["message"]
    fixed = cli("doctor", "--fix", "--yes")
    assert (workspace / "memory.md").stat().st_size == len(big) * 90_000  # untouched
    assert "Run \"openclaw-memory doctor --fix\"" not in fixed.stdout


def test_identical_twins_over_the_limit_are_archived_by_rename(workspace, cli):
    data = b"# Memory\n" + b"z" * 99 * 90_000
    (workspace / "MEMORY.md").write_bytes(data)
    (workspace / "memory.md").write_bytes(data)
    done = cli("doctor", "--fix", "--yes", "--json")
    repairs = {r["id"]: r for r in json.loads(done.stdout)["repairs"]}
    assert repairs["split-root"]["status"] == "done"
    assert not (workspace / "memory.md").exists() and (workspace / "MEMORY.md").read_bytes() == data
    (kept,) = (workspace / ".openclaw-repair").rglob("memory.md")
    assert kept.read_bytes() == data


def test_the_doctors_merge_is_its_own_version_in_the_history(workspace, cli):
    write(workspace / "MEMORY.md", "# Memory\n- canonical\n")
    write(workspace / "memory.md", "- legacy fact\n")
    assert cli("doctor", "--fix", "--yes").returncode == 0
    versions = json.loads(cli("history", "MEMORY.md", "--json").stdout)["versions"]
    assert [v["origin"] for v in versions] == ["doctor-fix", "external-edit"]  # newest first
    assert versions[1]["available"]  # the text before the merge can be restored


def test_a_memory_file_with_a_nul_byte_is_reported_as_not_text(workspace, cli):
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "nul.md", b"# Note\nfact \x00 here\n")
    findings = {f["id"]: f for f in cli("doctor", "--json").json()["findings"]}
    found = findings["memory-file-not-text"]
    assert found["paths"] == ["memory/nul.md"] and "offset 12" in found["message"]


@pytest.mark.parametrize("make", ["folder", "dangling"])
def test_a_memory_md_that_is_no_file_is_named_by_doctor_and_files_says_what_to_do(cli, workspace, make):
    write(workspace / "MEMORY.md", "# Memory\n")
    if make == "folder":
        write(workspace / "memory.md" / "note.md", "a note nothing loads\n")
    else:
        os.symlink("nowhere", workspace / "memory.md")
    found = cli("doctor", "--json")
    assert found.returncode == 1
    (finding,) = found.json()["findings"]
    assert finding["id"] == "legacy-root-not-file" and finding["fixable"] is False
    assert ("Move what it holds under memory/" if make == "folder" else "Remove the link") in finding["message"]
    skipped = cli("files", "--json").json()["skipped"]
    assert [s["reason"] for s in skipped if s["path"] == "memory.md"] == [
        "named like the legacy root file but not a file, so never memory: move what it holds under memory/"]


def test_retired_qmd_settings_are_read_from_the_config_openclaw_reads(workspace, state_dir, tmp_path, cli):
    """OPENCLAW_CONFIG_PATH names OpenClaw's config: settings read it, but the check read the state
    dir's openclaw.json, and said nothing of the file in use."""
    elsewhere = write(tmp_path / "conf" / "openclaw.json", '{memory: {backend: "qmd"}}')
    write(workspace / "MEMORY.md", "m\n")
    result = cli("doctor", "--json", env={"OPENCLAW_CONFIG_PATH": str(elsewhere)})
    (finding,) = [f for f in result.json()["findings"] if f["id"] == "retired-qmd-settings"]
    assert f"{elsewhere}: memory.backend is retired" in finding["message"], finding


def test_a_dream_diary_twin_is_named(workspace, cli):
    """dreams.md beside DREAMS.md is passed over, its text never searched: `files` named it, doctor
    said "No problems found.", exit 0."""
    write(workspace / "MEMORY.md", "m\n")
    write(workspace / "DREAMS.md", "# Dreams\nnew\n")
    write(workspace / "dreams.md", "old unique dream zebra\n")
    done = cli("doctor", "--json")
    assert done.returncode == 1, done.stdout
    (found,) = [f for f in done.json()["findings"] if f["id"] == "dream-diary-twin"]
    assert found["severity"] == "warning" and found["paths"] == ["dreams.md"] and not found["fixable"], found


def test_a_split_root_whose_merge_would_pass_what_openclaw_loads_says_so_before_the_fix(workspace, cli):
    """The fix merged a 2.7 MB MEMORY.md the next session read as [UNREADABLE: File exceeds 2097152
    bytes], and only then did doctor say so (prompt-file-too-large)."""
    write(workspace / "MEMORY.md", "# Memory\nkeep me\n")
    write(workspace / "memory.md", "old fact\n" * 240_000)
    done = cli("doctor", "--json")
    (found,) = [f for f in done.json()["findings"] if f["id"] == "split-root"]
    assert "over the 2,097,152 OpenClaw loads at startup" in found["message"] and found["fixable"], found


def test_a_missing_or_cut_short_packaged_model_is_a_doctor_error(cli, workspace, tmp_path, monkeypatch):
    """Every index run and search with the default model failed on it while doctor found nothing
    (its checks read the files and the index, never the model): now a finding names the file."""
    pytest.importorskip("onnxruntime", reason="the packaged model is the onnx backend's: the search extra")
    from openclaw_memory.index import models

    shipped, copy = models.SHIPPED_DIR, tmp_path / "shipped"
    copy.mkdir()
    for source in shipped.rglob("*"):  # the shipped files, linked: the copy is the package's
        if source.is_file():
            (copy / source.relative_to(shipped)).parent.mkdir(parents=True, exist_ok=True)
            (copy / source.relative_to(shipped)).symlink_to(source)
    monkeypatch.setattr(models, "SHIPPED_DIR", copy)
    write(workspace / "MEMORY.md", "# notes\n")
    onnx = {"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "onnx"}

    def model_findings(env: dict | None = None) -> list[dict]:
        done = cli("doctor", "--json", env=env)
        return [f for f in done.json()["findings"] if f["id"] == "model-damaged"]

    assert model_findings(onnx) == []  # intact
    (copy / "tokenizer.json").unlink()
    [missing] = model_findings(onnx)
    assert missing["severity"] == "error" and "tokenizer.json is missing" in missing["message"], missing
    (copy / "tokenizer.json").symlink_to(shipped / "tokenizer.json")
    (copy / "model.int8.onnx").unlink()
    (copy / "model.int8.onnx").write_bytes((shipped / "model.int8.onnx").read_bytes()[:1 << 20])  # an interrupted copy
    [cut] = model_findings(onnx)
    assert "model.int8.onnx is damaged" in cut["message"] and "index" in cut["message"], cut
    assert cli("doctor", env=onnx).returncode == 1
    assert model_findings() == []  # the model-free embedder needs no model


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_the_repair_archive_root_makes_in_a_users_workspace_is_the_users_down_to_its_stamp_folder(base):
    # Root's doctor --fix left .openclaw-repair/root-memory/<stamp>/ root's (0755): the user could neither
    # remove nor move the archived memory.md.
    from conftest import NOBODY, run_in_process

    ws = base / "ws"
    write(ws / "memory" / "d.md", "day\n")
    write(ws / "MEMORY.md", "# c\n")
    write(ws / "memory.md", "leg\n")
    for path in (ws, *ws.rglob("*")):
        os.chown(path, NOBODY, NOBODY)
    done = run_in_process(("doctor", "--fix", "--json"), env=env_for(ws, base / "state"), cwd=base)
    assert done.returncode == 0, done.stdout + done.stderr
    made = [ws / ".openclaw-repair", *(ws / ".openclaw-repair").rglob("*")]
    assert any(p.name == "memory.md" for p in made)
    assert {p.relative_to(ws).as_posix(): (p.stat().st_uid, p.stat().st_gid) for p in made} == \
        {p.relative_to(ws).as_posix(): (NOBODY, NOBODY) for p in made}


@pytest.mark.parametrize("odd", ["folder", "symlink"])
def test_a_folder_or_link_at_doctors_own_lock_is_reported_with_where_fix_moved_it(workspace, state_dir, cli, odd):
    # Taking its own lock set the folder aside in silence: `{"findings": [], "repairs": [], "ok": true}`.
    write(workspace / "MEMORY.md", "# c\n")
    assert cli("watchdog", "snapshot").returncode == 0
    lock = data_dir(workspace, state_dir) / "doctor.lock"
    if odd == "folder":
        write(lock / "keep", "x\n")
    else:
        lock.symlink_to("/etc/passwd")
    fixed = cli("doctor", "--fix", "--json").json()
    assert [f["id"] for f in fixed["findings"]] == ["lock-not-a-file"] and fixed["ok"], fixed
    (repair,) = fixed["repairs"]
    assert (repair["id"], repair["status"]) == ("lock-not-a-file", "done")
    went = Path(re.search(r" to (/\S+/damaged/[^;]+);", repair["detail"])[1])
    assert went.parent.parent.name == "damaged" and (went / "keep" if odd == "folder" else went).is_symlink() == (odd == "symlink")
    assert (went / "keep").read_text() == "x\n" if odd == "folder" else os.readlink(went) == "/etc/passwd"
    assert lock.is_file() and not lock.is_symlink()
    assert cli("doctor", "--fix", "--json").json()["findings"] == []


@pytest.mark.parametrize("odd", ["symlink", "fifo"])
def test_a_link_or_fifo_at_a_migrations_temporary_name_is_no_memory_md_to_give_back(workspace, cli, odd):
    # A link to /etc/passwd named .memory.md.migrate-<hex>.tmp was "the bytes of memory.md", and --fix
    # made it a MEMORY.md -> /etc/passwd link.
    write(workspace / "memory" / "a.md", "x\n")
    temp = workspace / ".memory.md.migrate-0123abcd.tmp"
    if odd == "symlink":
        temp.symlink_to("/etc/passwd")
    else:
        os.mkfifo(temp)
    assert "interrupted-repair" not in [f["id"] for f in cli("doctor", "--json").json()["findings"]]
    fixed = cli("doctor", "--fix", "--json").json()
    assert fixed["repairs"] == [] and fixed["ok"], fixed
    assert not os.path.lexists(workspace / "MEMORY.md") and not os.path.lexists(workspace / "memory.md")
    assert temp.is_symlink() if odd == "symlink" else stat.S_ISFIFO(temp.lstat().st_mode)
