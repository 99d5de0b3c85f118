"""A workspace folder renamed leaves its history under the old path: doctor names it
(``history-left-behind``) and its steps, run as printed, bring that history here; ``restore
--last`` does not claim the note was never removed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import env_for, fault, write

NOTE = "keep me\n"
FINDING = "history-left-behind"


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


def _renamed_after_a_removal(tmp_path: Path, cli) -> tuple[Path, Path]:
    """The reviewer's steps: a note read and removed in ``agent``, then ``agent`` renamed ``agent-main``."""
    old, new = tmp_path / "agent", tmp_path / "agent-main"
    write(old / "memory" / "todo.md", NOTE)
    write(old / "MEMORY.md", "# M\n")
    assert cli("-w", old, "read", "memory/todo.md").returncode == 0
    assert cli("-w", old, "rm", "memory/todo.md").returncode == 0
    old.rename(new)
    return old, new


def _findings(cli, workspace: Path) -> dict[str, dict]:
    done = cli("-w", workspace, "doctor", "--json")
    return {f["id"]: f for f in json.loads(done.stdout)["findings"]}


def _steps(message: str) -> list[str]:
    return [line[2:] for line in message.splitlines() if line.startswith("  ")]


def _pasted(message: str, shell: str, workspace: Path, state_dir: Path, **env: str) -> subprocess.CompletedProcess:
    """The finding's command as a user pastes it: its lines, as printed (indented), into ``shell``,
    with this checkout's ``openclaw-memory`` on the PATH."""
    script = "\n".join(line for line in message.splitlines() if line.startswith("  ")) + "\n"
    path = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    return subprocess.run([shell], input=script, capture_output=True, text=True,
                          env=env_for(workspace, state_dir, PATH=path, **env), cwd=workspace.parent)


def test_restore_last_in_a_renamed_workspace_does_not_say_never_removed(tmp_path, cli):
    _, new = _renamed_after_a_removal(tmp_path, cli)
    done = cli("-w", new, "restore", "memory/todo.md", "--last")
    assert done.returncode == 2
    assert "never removed" not in done.stderr
    assert f"no removal of memory/todo.md is recorded for this workspace ({new})" in done.stderr
    assert "`openclaw-memory -w" in done.stderr and "doctor` names" in done.stderr


def test_doctor_names_the_history_left_under_the_old_path_and_its_steps_bring_it_here(tmp_path, state_dir, cli):
    old, new = _renamed_after_a_removal(tmp_path, cli)
    (data,) = [p for p in (state_dir / "openclaw-memory" / "workspaces").iterdir()]
    plain = cli("-w", new, "doctor")
    assert plain.returncode == 0 and FINDING in plain.stdout  # said, but no problem: a deleted workspace leaves one too
    finding = _findings(cli, new)[FINDING]
    assert finding["severity"] == "info" and finding["fixable"] is False
    assert finding["paths"] == [str(data)]
    assert f"- {old}: 2 versions of 1 memory file, kept in {data}" in finding["message"]
    steps = _steps(finding["message"])
    archive = tmp_path / "agent-history.tar.gz"
    assert steps == [
        f"mv {new} {old} &&",
        f"{{ openclaw-memory -w {old} export {archive}; rc=$?; mv {old} {new}; }} &&",
        '[ "$rc" = 0 ] &&',
        f"openclaw-memory -w {new} import {archive} &&",
        f"rm -r {data}",
    ]
    assert cli("-w", new, "doctor", "--fix").returncode == 0  # nothing is moved, merged or removed for it
    assert data.is_dir() and not old.exists()

    done = _pasted(finding["message"], "bash", new, state_dir)  # as printed
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not data.exists() and not old.exists() and archive.is_file()

    back = cli("-w", new, "restore", "memory/todo.md", "--last")
    assert back.returncode == 0, back.stderr
    assert (new / "memory" / "todo.md").read_text() == NOTE
    assert FINDING not in _findings(cli, new)


def test_workspaces_that_exist_and_folders_without_history_are_not_named(tmp_path, state_dir, cli):
    one, two, gone = tmp_path / "one", tmp_path / "two", tmp_path / "gone"
    for ws in (one, two, gone):
        write(ws / "MEMORY.md", f"# {ws.name}\n")
    assert cli("-w", one, "history", "MEMORY.md").returncode == 0
    assert cli("-w", two, "history", "MEMORY.md").returncode == 0
    assert cli("-w", gone, "doctor", "--fix").returncode == 0  # a data folder with no history in it
    assert len(list((state_dir / "openclaw-memory" / "workspaces").iterdir())) == 3
    for ws in (one, two):
        os.remove(ws / "MEMORY.md")
    gone.joinpath("MEMORY.md").unlink()
    gone.rmdir()
    assert FINDING not in _findings(cli, one)
    assert FINDING not in _findings(cli, two)


def test_the_check_only_reads(tmp_path, state_dir, cli):
    """Plain doctor and --fix leave the old data folder's database as it was (a read-only
    connection; SQLite's reader files beside it aside) and never touch the old path."""
    old, new = _renamed_after_a_removal(tmp_path, cli)
    (data,) = [p for p in (state_dir / "openclaw-memory" / "workspaces").iterdir()]
    before = _tree(data)["state.db"]
    assert FINDING in _findings(cli, new)
    cli("-w", new, "doctor", "--fix")
    assert _tree(data)["state.db"] == before and not old.exists()


def test_a_damaged_old_database_is_passed_over(tmp_path, state_dir, cli):
    _, new = _renamed_after_a_removal(tmp_path, cli)
    (data,) = [p for p in (state_dir / "openclaw-memory" / "workspaces").iterdir()]
    for name in os.listdir(data):
        if name.startswith("state.db"):
            os.remove(data / name)
    (data / "state.db").write_bytes(b"not a database" * 100)
    findings = _findings(cli, new)
    assert FINDING not in findings and "check-failed" not in findings


def test_a_renamed_parent_folder_gets_its_folders_made_and_removed_again_and_the_flags_kept(tmp_path, state_dir, cli):
    """The folder above the workspace renamed (``a`` -> ``c``): the steps make ``a/b`` for the move
    back and remove it after; the state dir given on the command line is in each command."""
    old, new = tmp_path / "a" / "b" / "agent", tmp_path / "c" / "b" / "agent"
    write(old / "memory" / "todo.md", NOTE)
    assert cli("-w", old, "read", "memory/todo.md").returncode == 0
    assert cli("-w", old, "rm", "memory/todo.md").returncode == 0
    (tmp_path / "a").rename(tmp_path / "c")
    done = cli("--state-dir", state_dir, "-w", new, "doctor", "--json", env={"OPENCLAW_STATE_DIR": "/nonexistent"})
    (finding,) = [f for f in json.loads(done.stdout)["findings"] if f["id"] == FINDING]
    steps = _steps(finding["message"])
    assert steps[0] == f"mkdir -p {tmp_path / 'a' / 'b'} &&"
    assert steps[3] == f"{{ rmdir {tmp_path / 'a' / 'b'} {tmp_path / 'a'} || true; }} &&"
    assert all(f"--state-dir {state_dir}" in line for line in steps if "openclaw-memory -w" in line)
    ran = _pasted(finding["message"], "sh", new, state_dir, OPENCLAW_STATE_DIR="/nonexistent")
    assert ran.returncode == 0, (ran.stdout, ran.stderr)
    assert not (tmp_path / "a").exists()
    assert cli("-w", new, "restore", "memory/todo.md", "--last").returncode == 0
    assert (new / "memory" / "todo.md").read_text() == NOTE


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_step_that_fails_stops_the_rest_and_the_old_history_is_kept(tmp_path, state_dir, cli, shell):
    """The reviewer's data loss: the lines, pasted, ran each whatever the one before did: an export
    refused (its archive existed, from an earlier run of the same advice) left the folder at the old
    path, the import failed, and ``rm -r`` removed the old history. Now an archive that exists when
    doctor runs gets another name; one made after stops the export, the folder comes back here, and
    nothing after runs; an import that fails (killed) keeps the old data folder too."""
    old, new = _renamed_after_a_removal(tmp_path, cli)
    (data,) = [p for p in (state_dir / "openclaw-memory" / "workspaces").iterdir()]
    write(tmp_path / "agent-history.tar.gz", "junk\n")  # an earlier run's
    message = _findings(cli, new)[FINDING]["message"]
    archive = tmp_path / "agent-history-2.tar.gz"
    assert f"export {archive};" in message and f"import {archive} &&" in message

    write(archive, "made since doctor ran\n")
    done = _pasted(message, shell, new, state_dir)
    assert done.returncode != 0 and "exists" in done.stderr
    assert new.is_dir() and not old.exists() and data.is_dir()  # back here, the old history kept
    assert archive.read_text() == "made since doctor ran\n"

    archive.unlink()
    done = _pasted(message, shell, new, state_dir, **fault("import:staged=kill"))  # the import killed
    assert done.returncode != 0
    assert new.is_dir() and not old.exists() and data.is_dir() and archive.is_file()

    archive.unlink()
    done = _pasted(message, shell, new, state_dir)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert not data.exists() and cli("-w", new, "restore", "memory/todo.md", "--last").returncode == 0
    assert (new / "memory" / "todo.md").read_text() == NOTE


def _restored(cli, new: Path) -> None:
    back = cli("-w", new, "restore", "memory/todo.md", "--last")
    assert back.returncode == 0, back.stderr
    assert (new / "memory" / "todo.md").read_text() == NOTE


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_a_symbolic_link_left_at_the_old_path_does_not_hide_the_history_left_behind(tmp_path, state_dir, cli, shell):
    """The workspace moved and a symbolic link left at the old path: every command given the old
    path follows it (the workspace is its real path), so the old history is out of reach all the
    same; doctor said "No problems found" (os.path.isdir followed the link). The steps set the link
    aside for the export (a ``mv`` onto it moved this folder into itself) and put it back."""
    old, new = _renamed_after_a_removal(tmp_path, cli)
    old.symlink_to(new)
    (data,) = [p for p in (state_dir / "openclaw-memory" / "workspaces").iterdir()]
    for ws in (new, old):  # the link resolves to the new path: the same workspace
        finding = _findings(cli, ws)[FINDING]
        assert f"{old} is now a symbolic link to this workspace" in finding["message"], finding["message"]
        assert finding["paths"] == [str(data)]
    aside = f"{old}.set-aside"
    assert _steps(finding["message"])[:2] == [f"mv {old} {aside} &&", f"{{ mv {new} {old} || {{ mv {aside} {old}; false; }}; }} &&"]
    done = _pasted(finding["message"], shell, new, state_dir)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert old.is_symlink() and os.readlink(old) == str(new) and new.is_dir() and not os.path.lexists(aside)
    assert not data.exists()
    _restored(cli, new)
    assert FINDING not in _findings(cli, new)


def test_an_empty_folder_made_again_at_the_old_path_does_not_hide_the_history_left_behind(tmp_path, state_dir, cli):
    """OpenClaw makes its default workspace anew: a folder at the old path again, holding no memory
    file (its bootstrap files only). This workspace has no history of its own yet: it moved here."""
    old, new = _renamed_after_a_removal(tmp_path, cli)
    write(old / "AGENTS.md", "# Agents\n")
    finding = _findings(cli, new)[FINDING]
    assert f"{old} is a folder again but holds no memory file" in finding["message"]
    done = _pasted(finding["message"], "sh", new, state_dir)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert (old / "AGENTS.md").read_text() == "# Agents\n" and not (old / "MEMORY.md").exists()
    _restored(cli, new)


def test_an_empty_folder_at_the_old_path_is_named_only_where_this_workspace_looks_moved_here(tmp_path, state_dir, cli):
    """A workspace of its own whose notes were all removed is not named from one with notes and a
    history of its own; it is when a memory file here holds the bytes the old history last recorded
    for the same name (the workspace moved here and was used since), or when it holds memory again."""
    old, new = tmp_path / "agent", tmp_path / "agent-main"
    write(old / "MEMORY.md", "# M\n")
    assert cli("-w", old, "history", "MEMORY.md").returncode == 0  # the old history records it
    old.rename(new)
    old.mkdir()
    write(new / "memory" / "other.md", "other\n")
    assert cli("-w", new, "read", "memory/other.md").returncode == 0  # a history of its own
    assert cli("-w", new, "history", "MEMORY.md").returncode == 0
    assert FINDING in _findings(cli, new)  # MEMORY.md here holds what the old history recorded
    write(new / "MEMORY.md", "# M\n- since the move\n")
    assert FINDING not in _findings(cli, new)
    write(old / "MEMORY.md", "# M\n")
    assert FINDING not in _findings(cli, new)  # a workspace with memory at the old path


def test_a_symbolic_link_above_the_old_path_is_named_without_steps_that_would_move_this_folder(tmp_path, state_dir, cli):
    """The folder above the workspace renamed and a link left in its place: the old path names this
    folder, so a ``mv`` of it would move this very folder: no command is given, the link is named."""
    old, new = tmp_path / "a" / "agent", tmp_path / "c" / "agent"
    write(old / "memory" / "todo.md", NOTE)
    assert cli("-w", old, "read", "memory/todo.md").returncode == 0
    (tmp_path / "a").rename(tmp_path / "c")
    (tmp_path / "a").symlink_to(tmp_path / "c")
    message = _findings(cli, new)[FINDING]["message"]
    assert f"{old} now leads to this workspace, through the symbolic link {tmp_path / 'a'}" in message
    assert _steps(message) == [] and "no command is given for it" in message


def _two_agents(tmp_path: Path, state_dir: Path) -> tuple[Path, Path]:
    """openclaw.json with agents a (the default) and b, each with a workspace of its own."""
    wa, wb = tmp_path / "wa", tmp_path / "wb"
    (wa / "memory").mkdir(parents=True)
    (wb / "memory").mkdir(parents=True)
    (state_dir / "openclaw.json").write_text(json.dumps({"agents": {"entries": {
        "a": {"default": True, "workspace": str(wa)}, "b": {"workspace": str(wb)}}}}))
    return wa, wb


def _agent_findings(cli, agent: str) -> dict[str, dict]:
    done = cli("--agent", agent, "doctor", "--json", env={"OPENCLAW_WORKSPACE": ""})
    return {f["id"]: f for f in json.loads(done.stdout)["findings"]}


@pytest.mark.parametrize("own_history", [False, True])
def test_another_agents_deleted_workspace_is_named_as_its_own_with_no_command_to_bring_it_here(
        tmp_path, state_dir, cli, own_history):
    # The reviewer's steps: agent a's configured workspace deleted; `--agent b doctor` gave a one-paste
    # mv/export/import chain ending in `--agent b import`, which put a's note and history in b's workspace.
    wa, wb = _two_agents(tmp_path, state_dir)
    assert cli("--agent", "a", "write", "MEMORY.md", "--stdin", input="# a: divorce lawyer is Smith\n",
               env={"OPENCLAW_WORKSPACE": ""}).returncode == 0
    if own_history:
        assert cli("--agent", "b", "write", "MEMORY.md", "--stdin", input="# b\n", env={"OPENCLAW_WORKSPACE": ""}).returncode == 0
    else:
        write(wb / "MEMORY.md", "# b\n")
    for p in sorted(wa.rglob("*"), reverse=True):
        p.unlink() if p.is_file() else p.rmdir()
    wa.rmdir()
    message = _agent_findings(cli, "b")[FINDING]["message"]
    assert f"- {wa}: 1 version of 1 memory file" in message
    assert "the workspace openclaw.json gives agent a: its history is that agent's" in message
    assert _steps(message) == [] and "import" not in message and "rm -r" not in message


def test_a_history_of_another_agents_writes_alone_gets_no_command_here_but_its_own_agent_does(tmp_path, state_dir, cli):
    old, new = tmp_path / "agent", tmp_path / "agent-moved"
    write(old / "MEMORY.md", "# M\n")
    assert cli("-w", old, "--agent", "a", "write", "memory/x.md", "--stdin", input="secret\n").returncode == 0
    old.rename(new)
    theirs = _findings(cli, new)[FINDING]["message"]  # (doctor as agent main)
    assert "its history holds writes of agent a alone" in theirs and _steps(theirs) == []
    done = cli("-w", new, "--agent", "a", "doctor", "--json")
    mine = {f["id"]: f for f in json.loads(done.stdout)["findings"]}[FINDING]["message"]
    assert _steps(mine)[-2].startswith(f"openclaw-memory -w {new} --agent a import ")
