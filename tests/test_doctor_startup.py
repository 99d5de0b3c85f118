"""doctor names every startup file `prompt` does not load (hostile review D, F3: a hard-linked
MEMORY.md was `[UNREADABLE: path must not be hardlinked]` in the prompt, "see `openclaw-memory
doctor`", and doctor said "No problems found", exit 0). Real files, FIFOs and hard links."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
from pathlib import Path

import pytest

from conftest import write
from openclaw_memory.prompt import startup

TODAY = startup.date_stamps(dt.datetime.now(dt.UTC), 2, None)[0]
DAILY = f"memory/{TODAY}.md"


def _hard_link(path: Path, elsewhere: Path) -> None:
    write(path, "facts\n")
    os.link(path, elsewhere)


def _make(kind: str, path: Path, elsewhere: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "hard link":
        _hard_link(path, elsewhere)
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
        write(path / "inside.md", "kept\n")
    else:  # over startupContext.maxFileBytes (16,384): a daily note the prelude leaves out
        write(path, "x" * 20_000 + "\n")


# (file, what it is) -> the finding that names it: the prompt's own reason where only the prompt's
# read sees it, else the finding of the entry the scan passed over.
CASES = {
    ("MEMORY.md", "hard link"): "prompt-file-hardlinked",
    ("MEMORY.md", "FIFO"): "memory-md-not-file",
    ("MEMORY.md", "folder"): "memory-md-not-file",
    ("USER.md", "hard link"): "prompt-file-hardlinked",
    ("USER.md", "FIFO"): "memory-file-not-regular",
    ("USER.md", "folder"): "memory-file-not-regular",
    (DAILY, "hard link"): "prompt-file-hardlinked",
    (DAILY, "FIFO"): "memory-file-not-regular",
    (DAILY, "folder"): "prompt-file-not-file",
    (DAILY, "over maxFileBytes"): "prompt-file-too-large",
}


@pytest.mark.parametrize(("name", "kind"), list(CASES), ids=[f"{n} {k}" for n, k in CASES])
def test_doctor_names_each_startup_file_the_prompt_does_not_load(workspace, tmp_path, cli, name, kind):
    write(workspace / "memory/other.md", "a note\n")
    _make(kind, workspace / name, tmp_path / "elsewhere.md")
    prompt = cli("prompt", "--json")
    assert any(w.startswith(name) for w in prompt.json()["warnings"]), prompt.json()["warnings"]
    result = cli("doctor", "--json")
    named = {(f["id"], p) for f in result.json()["findings"] if f["severity"] == "warning" for p in f["paths"]}
    assert (CASES[name, kind], name) in named, result.stdout
    assert result.returncode == 1
    assert [p for _id, p in named].count(name) == 1  # named once, not by two findings


def test_a_hard_link_is_named_with_what_to_do_and_fix_leaves_every_byte(workspace, tmp_path, cli):
    _hard_link(workspace / "MEMORY.md", tmp_path / "elsewhere.md")
    (finding,) = [f for f in cli("doctor", "--json").json()["findings"] if f["id"] == "prompt-file-hardlinked"]
    assert "[UNREADABLE: path must not be hardlinked]" in finding["message"] and "cp -p" in finding["message"]
    assert not finding["fixable"]
    assert cli("doctor", "--fix", "--yes").returncode == 1
    st = os.stat(workspace / "MEMORY.md")
    assert (st.st_nlink, (workspace / "MEMORY.md").read_text()) == (2, "facts\n")
    # What the finding says to do gives the workspace a file of its own; the other link keeps its bytes.
    subprocess.run(finding["message"].split("`")[3], shell=True, check=True)
    assert os.stat(workspace / "MEMORY.md").st_nlink == 1 and (tmp_path / "elsewhere.md").read_text() == "facts\n"
    assert [f["id"] for f in cli("doctor", "--json").json()["findings"] if f["severity"] == "warning"] == []


def test_doctor_counts_the_total_cap_as_prompt_does_for_a_workspace_given_as_a_symlink(workspace, state_dir, cli,
                                                                                         tmp_path):
    """OpenClaw's [MISSING] markers name the workspace as configured (95f495e): doctor built its prompt
    section with the real path, shorter markers, so its prompt-total-cap numbers were not prompt's."""
    write(state_dir / "openclaw.json", '{agents: {defaults: {bootstrapTotalMaxChars: 900}}}')
    write(workspace / "MEMORY.md", "m" * 1000)
    link = tmp_path / ("a-much-longer-workspace-link-name-" + "x" * 40)
    os.symlink(workspace, link)
    given = {"OPENCLAW_WORKSPACE": str(link)}
    shown = cli("prompt", "--peek", "--json", env=given).json()
    (injected,) = [t["keptChars"] for t in shown["truncated"] if t["path"] == "MEMORY.md"]
    (cap,) = [f for f in cli("doctor", "--json", env=given).json()["findings"] if f["id"] == "prompt-total-cap"]
    assert f"MEMORY.md is cut to {injected:,} of 1,000 characters" in cap["message"], (injected, cap["message"])
