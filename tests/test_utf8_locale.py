"""File names are UTF-8 whatever the locale: under a Latin-1 locale one note had two names (indexed
again as ``memory/cafÃ©.md``, its links broken, its history split), and an ASCII one (``LANG=C`` with
``PYTHONUTF8=0 PYTHONCOERCECLOCALE=0``) dropped it. The entry point starts the process again in
Python's UTF-8 mode (cli.main.utf8_file_names); the terminal keeps the locale's encoding. Real
processes: the locale is the subject."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import env_for, write


@pytest.fixture(scope="module")
def latin1(tmp_path_factory) -> dict:
    """The environment of a real ``en_US.ISO-8859-1`` locale (built with localedef here)."""
    if shutil.which("localedef") is None:
        pytest.skip("localedef is missing: no Latin-1 locale can be built here")
    folder = tmp_path_factory.mktemp("locales")
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(folder / "en_US.ISO-8859-1")],
                          capture_output=True, text=True)
    if made.returncode not in (0, 1) or not (folder / "en_US.ISO-8859-1").exists():  # (1: warnings only)
        pytest.skip(f"localedef could not build en_US.ISO-8859-1: {made.stderr.strip()}")
    return {"LOCPATH": str(folder), "LANG": "en_US.ISO-8859-1", "LC_ALL": "en_US.ISO-8859-1"}


def _run(workspace: Path, state_dir: Path, locale: dict, *args: str, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in env_for(workspace, state_dir).items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8",
                                                                                       "PYTHONCOERCECLOCALE", "PYTHONIOENCODING"))}
    return subprocess.run([sys.executable, "-m", "openclaw_memory", *args], capture_output=True, env={**env, **locale},
                          cwd=workspace, timeout=300, **kw)


@pytest.fixture
def cafe(workspace: Path) -> Path:
    write(workspace / "MEMORY.md", "# M\n- see [[café]]\n")
    write(workspace / "memory" / "café.md", "# c\n- one\n")
    return workspace


def test_a_latin1_locale_names_a_note_as_utf8_does(cafe, state_dir, latin1):
    utf8 = {"LANG": "C.UTF-8"}
    first = _run(cafe, state_dir, utf8, "index", "--json")
    assert first.returncode == 0, first.stderr
    again = _run(cafe, state_dir, latin1, "index", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["filesChanged"] == 0, again.stdout  # not indexed again
    files = _run(cafe, state_dir, latin1, "files", "--json")
    assert "memory/café.md" in [f["path"] for f in json.loads(files.stdout)["files"]], files.stdout
    broken = _run(cafe, state_dir, latin1, "links", "--broken", "--json")
    assert json.loads(broken.stdout)["outgoing"] == [], broken.stdout
    # A name given on the command line is UTF-8 too, and the terminal still gets Latin-1.
    assert _run(cafe, state_dir, latin1, "read", "memory/café.md").returncode == 0
    wrote = _run(cafe, state_dir, latin1, "write", "memory/café.md", "--append", "- two")
    assert wrote.returncode == 0 and b"memory/caf\xe9.md" in wrote.stdout, wrote
    listed = _run(cafe, state_dir, latin1, "files")
    assert b"memory/caf\xe9.md\t" in listed.stdout, listed.stdout
    history = _run(cafe, state_dir, utf8, "history", "memory/café.md", "--json")
    current = [v for v in json.loads(history.stdout)["versions"] if v["current"]]
    assert [v["size"] for v in current] == [len("# c\n- one\n- two\n")], history.stdout


def test_an_ascii_locale_outside_utf8_mode_keeps_non_ascii_names(cafe, state_dir):
    ascii_only = {"LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    files = _run(cafe, state_dir, ascii_only, "files", "--json")
    assert files.returncode == 0, files.stderr
    assert "memory/café.md" in [f["path"] for f in json.loads(files.stdout)["files"]], files.stdout
    plain = _run(cafe, state_dir, ascii_only, "files")
    assert b"memory/caf\\u00e9.md\t" in plain.stdout, plain.stdout  # an ASCII terminal gets the escape


def test_a_utf8_process_is_not_started_again(cafe, state_dir):
    # Started again, the marker would be gone by the time the command runs; here it stays (never read).
    probe = subprocess.run(
        [sys.executable, "-c", "import os, sys; from openclaw_memory.cli.main import utf8_file_names, UTF8_REEXEC; "
         "utf8_file_names(); print(sys.flags.utf8_mode, UTF8_REEXEC in os.environ)"],
        capture_output=True, text=True, env={**os.environ, "LANG": "C.UTF-8", "PYTHONUTF8": "0"}, timeout=60)
    assert probe.stdout.split() == ["0", "False"], probe


def test_the_processes_it_starts_are_in_utf8_mode_too(tmp_path, latin1):
    # The service and the index's shard probe are started as `python ...`: without PYTHONUTF8 they
    # decoded names with the locale again.
    code = ("from openclaw_memory.cli.main import utf8_file_names; utf8_file_names(); import subprocess, sys; "
            "print(sys.getfilesystemencoding(), subprocess.run([sys.executable, '-c', 'import sys; "
            "print(sys.getfilesystemencoding())'], capture_output=True, text=True).stdout.strip())")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONUTF8", "PYTHONCOERCECLOCALE"))}
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, **latin1},
                           cwd=tmp_path, timeout=60)
    assert probe.stdout.split() == ["utf-8", "utf-8"], probe


def test_a_state_dir_whose_path_is_not_utf8_keeps_every_command_working(workspace, tmp_path, cli):
    """A home folder named in Latin-1 (/home/jos\\xe9, the default state dir below it): the new state
    database's path failed to decode ("Could not decode to UTF-8 column 'file'"), so every write,
    history, index and doctor --fix failed while plain doctor found nothing. A hint names the folder
    as bash takes it back ($'...\\xe9'), not with U+FFFD."""
    state_dir = Path(os.fsdecode(os.fsencode(tmp_path) + b"/jos\xe9"))
    env = {"OPENCLAW_STATE_DIR": str(state_dir)}
    write(workspace / "MEMORY.md", "- a fact\n")
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "- another"), ("history", "MEMORY.md"),
                 ("index",), ("doctor", "--fix")):
        done = cli(*args, env=env)
        assert done.returncode == 0, (args, done.stderr)
    assert len(cli("history", "MEMORY.md", "--json", env=env).json()["versions"]) == 2
    status = cli("--state-dir", str(state_dir), "status")
    assert "$'" in status.stdout and "jos\\xe9'" in status.stdout and "\ufffd" not in status.stdout, status.stdout
