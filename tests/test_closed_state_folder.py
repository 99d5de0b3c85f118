"""A folder of the data dir closed to its own user (``chmod 000`` of ``index/`` or ``workspaces/``): the
message names that folder and the ``chmod`` that gives it back, never ``doctor --fix``, which goes the
same way and is refused alike (before, search, log and doctor's own findings all said "`openclaw-memory
doctor --fix` repairs it", and doctor --fix then failed the same way).

Run as the files' owner without root's override (``setpriv`` drops CAP_DAC_OVERRIDE,
CAP_DAC_READ_SEARCH and CAP_FOWNER from the bounding set), as a plain user is for their own files."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import env_for, write

AS_OWNER = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"] if os.geteuid() == 0 else []

pytestmark = pytest.mark.skipif(bool(AS_OWNER) and not shutil.which("setpriv"),
                                reason="as root, needs setpriv to drop the override a plain user does not have")


def _data_dir(sd: Path) -> Path:
    (found,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return found


def _as_owner(args: list[str], env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*AS_OWNER, sys.executable, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture
def closed(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\na note\n")
    assert cli("index").returncode == 0
    data = _data_dir(state_dir)
    assert (data / "index").is_dir()
    folders: list[Path] = []

    def close(folder: Path) -> Path:
        folders.append(folder)
        folder.chmod(0)
        return folder

    yield data, close
    for folder in folders:
        folder.chmod(0o700)


def test_doctor_names_the_closed_index_folder_and_its_chmod_never_itself(workspace, state_dir, closed):
    data, close = closed
    index = close(data / "index")
    env = env_for(workspace, state_dir)
    done = _as_owner(["-m", "openclaw_memory", "doctor", "--fix"], env, workspace)
    said = done.stdout + done.stderr
    assert "Traceback" not in said, said
    assert f"`chmod u+rwx {index}`" in said, said
    assert "doctor --fix` repairs it" not in said, said


@pytest.mark.parametrize("which", ["index", "workspaces"])
def test_a_refused_path_under_a_closed_folder_names_that_folder_and_its_chmod(workspace, state_dir, closed, which):
    data, close = closed
    folder = close(data / "index" if which == "index" else state_dir / "openclaw-memory" / "workspaces")
    path = data / "index" / "edge" / "x" / "edge_config.json"
    probe = ("import errno, sys\n"
             "from openclaw_memory.errors import describe_os_error\n"
             f"print(describe_os_error(PermissionError(errno.EACCES, 'Permission denied', {str(path)!r})))\n")
    done = _as_owner(["-c", probe], env_for(workspace, state_dir), workspace)
    assert done.returncode == 0, done.stderr
    said = done.stdout.strip()
    assert said.startswith(f"Permission denied ({path}): the folder {folder} is closed to this user"), said
    assert f"`chmod u+rwx {folder}`" in said and "doctor" not in said, said


def test_other_failures_inside_the_data_dir_still_name_doctor(tmp_path):
    from openclaw_memory.errors import describe_os_error

    path = tmp_path / "st" / "openclaw-memory" / "workspaces" / "ws-1" / "index"
    said = describe_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", str(path)))
    assert "doctor --fix` repairs it" in said, said


@pytest.mark.parametrize("command", [["search", "note"], ["log"]])
def test_a_command_names_the_closed_folder_not_the_state_dir(workspace, state_dir, closed, command):
    # The CLI's state-dir error said `chmod u+rwx <state dir>`, which was open all along.
    data, close = closed
    folder = close(state_dir / "openclaw-memory" / "workspaces")
    done = _as_owner(["-m", "openclaw_memory", *command], env_for(workspace, state_dir), workspace)
    said = done.stdout + done.stderr
    assert done.returncode == 2 and "Traceback" not in said, said
    assert f"`chmod u+rwx {folder}`" in said and f"`chmod u+rwx {state_dir}`" not in said, said
