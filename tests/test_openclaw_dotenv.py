"""OpenClaw's own .env files count for the settings, as OpenClaw reads them (its environment is the
process's plus ``<state dir>/.env`` and, for the default state dir, ``~/.config/openclaw/gateway.env``).
Read without them, a workspace OpenClaw's agent finds through ``OPENCLAW_WORKSPACE_DIR`` or a
``${NAME}`` kept in ``~/.openclaw/.env`` was another folder here, without a word. The expected
values of the grammar were asked of OpenClaw 2026.9.6 (``tests/conformance/test_dotenv.py``
compares generated files with it)."""

from __future__ import annotations

import os

import pytest

from conftest import write
from openclaw_memory.errors import StateDirError
from openclaw_memory.openclaw_dotenv import parse
from openclaw_memory.settings import Overrides, resolve_settings


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A home of its own (the system's home is the one ``~`` names) with OpenClaw's default workspace."""
    home = tmp_path / "home"
    (home / ".openclaw" / "workspace").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    return home


def test_the_state_dirs_env_file_names_the_workspace_and_a_variable_of_the_process_wins(tmp_path, home):
    notes = tmp_path / "notes"
    notes.mkdir()
    write(home / ".openclaw" / ".env", f"# OpenClaw's variables\nexport OPENCLAW_WORKSPACE_DIR=\"{notes}\"\n")
    assert resolve_settings(Overrides(), environ={"HOME": str(home)}).workspace == notes
    # One the process has, even empty, is kept (and an empty one is unset: OpenClaw's default).
    assert resolve_settings(Overrides(), environ={"HOME": str(home), "OPENCLAW_WORKSPACE_DIR": ""}).workspace == \
        home / ".openclaw" / "workspace"


def test_a_value_of_the_env_file_is_said_to_come_from_it(tmp_path, home, cli):
    """`workspace not found: … (from OPENCLAW_WORKSPACE_DIR)` sent the user to a shell that has no such variable."""
    write(home / ".openclaw" / ".env", f"OPENCLAW_WORKSPACE_DIR={tmp_path / 'nope'}\n")
    res = cli("files", "--json", env={"OPENCLAW_WORKSPACE": "", "OPENCLAW_STATE_DIR": "", "HOME": str(home)})
    assert res.returncode == 2
    assert res.json()["error"] == (f"workspace not found: {tmp_path / 'nope'} (from OPENCLAW_WORKSPACE_DIR in "
                                   f"{home / '.openclaw' / '.env'}); make it (`mkdir -p {tmp_path / 'nope'}`) or name "
                                   "the folder that holds MEMORY.md"), res.json()
    (tmp_path / "link").symlink_to(tmp_path / "gone")  # mkdir -p of the link itself fails: "File exists"
    res = cli("files", "--json", env={"OPENCLAW_WORKSPACE": str(tmp_path / "link"), "HOME": str(home)})
    assert res.json()["error"].endswith(f"(a symbolic link to {tmp_path / 'gone'}); make it (`mkdir -p "
                                        f"{tmp_path / 'gone'}`) or name the folder that holds MEMORY.md"), res.json()


def test_a_profile_or_state_dir_of_the_env_file_is_said_to_come_from_it(tmp_path, home, cli):
    """OPENCLAW_PROFILE and OPENCLAW_STATE_DIR set by a ``.env`` sent the user to a shell without them."""
    env_file = home / ".openclaw" / ".env"
    write(env_file, "OPENCLAW_PROFILE=not a name\n")
    res = cli("files", "--json", env={"OPENCLAW_WORKSPACE": "", "OPENCLAW_STATE_DIR": "", "HOME": str(home)})
    assert res.returncode == 2 and f"OPENCLAW_PROFILE 'not a name' in {env_file} is not a profile name" in res.json()["error"]
    write(env_file, "OPENCLAW_PROFILE=work\n")
    res = cli("files", "--json", env={"OPENCLAW_WORKSPACE": "", "OPENCLAW_STATE_DIR": "", "HOME": str(home)})
    assert f"OpenClaw's default for OPENCLAW_PROFILE=work in {env_file}, as no workspace" in res.json()["error"]
    write(tmp_path / "a-file", "")
    write(env_file, f"OPENCLAW_STATE_DIR={tmp_path / 'a-file'}\n")  # read where the process has none, not even empty
    with pytest.raises(StateDirError) as refused:
        resolve_settings(Overrides(), environ={"HOME": str(home)})
    assert str(refused.value).startswith(
        f"the state dir {tmp_path / 'a-file'} (from OPENCLAW_STATE_DIR in {env_file}) is not a folder"), refused.value


def test_a_variable_of_openclaw_json_comes_from_the_env_file(tmp_path, home):
    (tmp_path / "data" / "ws").mkdir(parents=True)
    write(home / ".openclaw" / "openclaw.json", '{agents: {defaults: {workspace: "${NOTES_HOME}/ws"}}}')
    write(home / ".openclaw" / ".env", f"NOTES_HOME={tmp_path / 'data'}\n")
    assert resolve_settings(Overrides(), environ={"HOME": str(home)}).workspace == tmp_path / "data" / "ws"


def test_gateway_env_counts_for_the_default_state_dir_only_and_after_the_state_dirs(tmp_path, home):
    a, b, c = (tmp_path / n for n in "abc")
    for folder in (a, b, c):
        folder.mkdir()
    write(home / ".config" / "openclaw" / "gateway.env", f"OPENCLAW_WORKSPACE_DIR={a}\nOPENCLAW_MEMORY_EXTRA_PATHS={c}\n")
    env = {"HOME": str(home)}
    s = resolve_settings(Overrides(), environ=env)
    assert (s.workspace, s.extra_paths) == (a, (str(c),))
    write(home / ".openclaw" / ".env", f"OPENCLAW_WORKSPACE_DIR={b}\n")
    assert resolve_settings(Overrides(), environ=env).workspace == b
    other = tmp_path / "other"
    (other / "workspace").mkdir(parents=True)
    assert resolve_settings(Overrides(state_dir=str(other)), environ=env).workspace == other / "workspace"


def test_the_env_files_state_dir_is_the_state_dir(tmp_path, home):
    """OpenClaw loads the file, then resolves its state dir again from the environment it made."""
    moved = tmp_path / "moved"
    (moved / "workspace").mkdir(parents=True)
    write(home / ".openclaw" / ".env", f"OPENCLAW_STATE_DIR={moved}\n")
    s = resolve_settings(Overrides(), environ={"HOME": str(home)})
    assert (s.state_dir, s.workspace, s.config_file) == (moved, moved / "workspace", moved / "openclaw.json")


@pytest.mark.parametrize("make", ["fifo", "folder", "too large", "unreadable"])
def test_an_env_file_openclaw_leaves_out_is_left_out_without_a_word(tmp_path, home, make):
    path = home / ".openclaw" / ".env"
    if make == "fifo":
        os.mkfifo(path)  # opened, it would block every command
    elif make == "folder":
        path.mkdir()
    elif make == "too large":
        write(path, f"OPENCLAW_WORKSPACE_DIR={tmp_path}\n" + "#" * (1 << 20))
    else:
        write(path, f"OPENCLAW_WORKSPACE_DIR={tmp_path}\n")
        path.chmod(0)
        if os.access(path, os.R_OK):
            pytest.skip("root reads a file of mode 000")
    assert resolve_settings(Overrides(), environ={"HOME": str(home)}).workspace == home / ".openclaw" / "workspace"


# (file text, what OpenClaw 2026.9.6 adds to an empty environment)
GRAMMAR = [
    ("A=1\nA=2\n", {"A": "2"}),
    ("export B = \"two\\nlines\" # c\n", {"B": "two\nlines"}),
    ("C='x\\ny' # single quotes keep \\n\n", {"C": "x\\ny"}),
    ("D.E=3\nF-G=4\n1N=5\n_ok=6\n", {"_ok": "6"}),  # names that are no portable variable name: dropped
    ("H: colon\nI:no-space\n", {"H": "colon"}),
    ("J=\"multi\nline\"\r\nK=a #b\r\n", {"J": "multi\nline", "K": "a"}),
    ("L=`back`\nM='a'\u2028'b\n", {"L": "back", "M": "a"}),  # U+2028 ends a line in JavaScript
    ("\ufeffN=bom\n", {"N": "bom"}),
]


@pytest.mark.parametrize(("text", "expected"), GRAMMAR)
def test_the_grammar_is_the_dotenv_packages(text, expected):
    assert parse(text) == expected
