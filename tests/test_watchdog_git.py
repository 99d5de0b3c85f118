"""Git awareness in a real repository made by the test: `watchdog verify` and `doctor` name the
memory files git has not committed (modified, staged, untracked) or ignores, a snapshot records the
HEAD commit, and none of it writes the repository (its index keeps its bytes and mtime). No git,
no repository, or another user's repository (git's safe.directory refusal) is never an error."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import settings_for, write
from openclaw_memory.watchdog.gitstate import git_changes, memory_git_changes
from openclaw_memory.watchdog.snapshot import take_snapshot
from openclaw_memory.watchdog.verify import verify_workspace

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def _no_user_git_config(monkeypatch, tmp_path):
    """Only this test's repository: no global or system git configuration (a safe.directory=* there
    would hide the refusal tested below)."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))


def _outside_any_repository(folder: Path) -> None:
    if any((p / ".git").exists() for p in folder.parents):
        pytest.skip(f"a folder above {folder} is a git repository: 'no repository' cannot be made here")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def _index(repo: Path) -> tuple[int, bytes]:
    path = repo / ".git" / "index"
    return path.stat().st_mtime_ns, path.read_bytes()


def make_repo(repo: Path, workspace: Path) -> None:
    """A repository holding the workspace (one folder down: paths in git's output are the top's):
    one committed memory file modified, one committed and only touched, one staged, one untracked,
    one ignored."""
    git(repo, "init", "-q")
    write(workspace / "MEMORY.md", "# Memory\n")
    write(workspace / "memory" / "same.md", "unchanged\n")
    write(workspace / ".gitignore", "memory/secret.md\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    write(workspace / "MEMORY.md", "# Memory\n- changed, not committed\n")
    write(workspace / "memory" / "staged.md", "staged\n")
    git(repo, "add", str(workspace / "memory" / "staged.md"))
    write(workspace / "memory" / "new.md", "untracked\n")
    write(workspace / "memory" / "secret.md", "ignored\n")
    write(workspace / "notes.txt", "not memory: never asked about\n")
    # Same bytes, new timestamps: a plain `git status` would refresh (rewrite) the index for it.
    stamp = os.stat(workspace / "memory" / "same.md").st_mtime_ns + 5_000_000_000
    os.utime(workspace / "memory" / "same.md", ns=(stamp, stamp))


def test_verify_and_doctor_name_uncommitted_and_ignored_memory_files_without_writing_the_repository(
        tmp_path, workspace, state_dir, cli):
    make_repo(tmp_path, workspace)
    settings = settings_for(workspace, state_dir)
    info = take_snapshot(settings)
    assert info.git_head == git(tmp_path, "rev-parse", "HEAD")
    before = _index(tmp_path)

    result = verify_workspace(settings)
    (changes,) = result.git
    assert changes.root == str(workspace)
    assert changes.modified == ("MEMORY.md",)
    assert changes.staged == ("memory/staged.md",)
    assert changes.untracked == ("memory/new.md",)
    assert changes.ignored == ("memory/secret.md",)

    verify = cli("watchdog", "verify")
    assert "git modified: MEMORY.md" in verify.stdout and "git untracked: memory/new.md" in verify.stdout
    assert "git ignored: memory/secret.md" in verify.stdout and "notes.txt" not in verify.stdout
    doctor = cli("doctor", "--json").json()
    found = {f["id"]: f for f in doctor["findings"]}
    assert found["git-uncommitted"]["paths"] == ["MEMORY.md", "memory/new.md", "memory/staged.md"]
    assert found["git-ignored"]["paths"] == ["memory/secret.md"] and found["git-ignored"]["severity"] == "warning"
    (status,) = cli("status", "--json").json()["git"]
    assert (status["modified"], status["staged"], status["untracked"], status["ignored"]) == (
        ["MEMORY.md"], ["memory/staged.md"], ["memory/new.md"], ["memory/secret.md"])
    assert "git modified in" in cli("status").stdout

    assert _index(tmp_path) == before  # not one byte, not even the mtime
    git(tmp_path, "status", "--porcelain")  # the control: git's own status does rewrite this index
    assert _index(tmp_path) != before


def test_an_extra_path_in_a_repository_of_its_own_is_asked_too(tmp_path, workspace, state_dir):
    _outside_any_repository(workspace)
    notes = tmp_path / "notes"
    notes.mkdir()
    git(notes, "init", "-q")
    write(notes / "kept.md", "committed\n")
    git(notes, "add", ".")
    git(notes, "commit", "-q", "-m", "first")
    write(notes / "kept.md", "committed, then changed\n")
    write(notes / "image.bin", "not memory\n")
    write(workspace / "MEMORY.md", "# Memory\n")
    settings = settings_for(workspace, state_dir, extra=[str(notes)])
    (changes,) = memory_git_changes(settings)[0]  # the workspace is in no repository: nothing said of it
    assert (changes.root, changes.modified, changes.untracked) == (str(notes), ("kept.md",), ())


def test_a_workspace_in_no_repository_never_starts_git(tmp_path, workspace, monkeypatch):
    bin_dir = tmp_path / "bin"
    started = tmp_path / "git-started"
    write(bin_dir / "git", f"#!/bin/sh\necho started >> {started}\nexit 1\n")
    os.chmod(bin_dir / "git", 0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    _outside_any_repository(workspace)
    write(workspace / "MEMORY.md", "# Memory\n")
    assert git_changes(workspace) == (None, None) and not started.exists()
    (workspace / ".git").mkdir()  # the control: with a repository above, git is asked
    assert git_changes(workspace)[0] is None and started.exists()


def test_no_repository_or_no_git_says_nothing(tmp_path, workspace, state_dir, monkeypatch, cli):
    _outside_any_repository(workspace)
    write(workspace / "MEMORY.md", "# Memory\n")
    settings = settings_for(workspace, state_dir)
    take_snapshot(settings)
    assert git_changes(workspace) == (None, None)
    assert verify_workspace(settings).git == () and verify_workspace(settings).warnings == ()

    make_repo(workspace, workspace)  # the control: the same workspace in a repository is reported
    assert verify_workspace(settings).git != ()
    monkeypatch.setenv("PATH", str(tmp_path / "no-git-here"))
    result = verify_workspace(settings)
    assert result.git == () and result.warnings == ()
    assert take_snapshot(settings).git_head is None


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the repository to another user")
def test_another_users_repository_is_a_note_not_an_error(workspace, state_dir):
    top = Path(tempfile.mkdtemp())
    try:
        os.chmod(top, 0o755)
        repo = top / "repo"
        ws = repo / "ws"
        ws.mkdir(parents=True)
        make_repo(repo, ws)
        settings = settings_for(ws, state_dir)
        take_snapshot(settings)
        assert verify_workspace(settings).git != ()  # the control: our own repository is read
        subprocess.run(["chown", "-R", "65534:65534", str(repo)], check=True)
        result = verify_workspace(settings)
        assert result.git == ()
        (note,) = result.warnings
        assert "safe.directory" in note and str(ws) in note
    finally:
        shutil.rmtree(top)


def test_a_memory_folder_git_ignores_whole_is_named(tmp_path, workspace, state_dir):
    git(workspace, "init", "-q")
    write(workspace / ".gitignore", "memory/\n")
    write(workspace / "memory" / "a.md", "never backed up\n")
    write(workspace / "MEMORY.md", "# Memory\n")
    (changes,) = memory_git_changes(settings_for(workspace, state_dir))[0]
    assert changes.ignored == ("memory/",) and changes.untracked == ("MEMORY.md",)


def test_a_workspace_in_a_folder_its_repository_ignores_is_not_reported(tmp_path, state_dir):
    """A workspace under a repository's ignored build/ (make demo's, in a clone) is not part of
    that work tree: doctor said "git-ignored: build/" and --fix exited 1 on a clean workspace."""
    repo = tmp_path / "repo"
    ws = repo / "build" / "demo" / "ws"
    write(ws / "MEMORY.md", "# Memory\n")
    write(ws / "memory" / "a.md", "a\n")
    git(repo, "init", "-q")
    write(repo / ".gitignore", "build/\n")
    settings = settings_for(ws, state_dir)
    assert memory_git_changes(settings) == ((), ())
    write(repo / ".gitignore", "build/demo/ws/memory/\n")  # the control: a memory folder it ignores is named
    (changes,) = memory_git_changes(settings)[0]
    assert changes.ignored == ("memory/",)
