"""What reaches a terminal: colour only where the terminal takes it (not with NO_COLOR, not on
TERM=dumb), and on a dumb terminal the plain progress lines instead of a bar it cannot draw."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys

import pytest

from conftest import env_for, wait_for_line, write


def on_a_terminal(workspace, state_dir, args: tuple[str, ...], stream: str, **env: str) -> tuple[int, str]:
    """``openclaw-memory ARGS`` with a pseudo-terminal as its stdout or stderr (``stream``), the
    other one a pipe: its exit status and what reached the terminal."""
    master, slave = pty.openpty()
    pipes = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: slave}
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", *args], cwd=workspace, stdin=subprocess.DEVNULL,
                            env=env_for(workspace, state_dir, **env), **pipes)
    os.close(slave)
    seen = b""
    try:
        while True:  # read while it runs: a full terminal buffer would block it
            ready, _, _ = select.select([master], [], [], 120)
            if not ready:
                raise AssertionError(f"no output within 120 s; got {seen!r}")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        return proc.wait(timeout=120), seen.decode("utf-8", "replace")
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.fixture
def indexed(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n\n- The kestrel nests on the north tower.\n")
    for i in range(3):
        write(workspace / "memory" / f"2026-11-0{i + 1}.md", f"# Day {i}\n\nNothing about birds on day {i}.\n")
    assert cli("index").returncode == 0
    return workspace


@pytest.mark.parametrize("env, coloured", [
    ({"TERM": "xterm-256color"}, True),  # the control: a terminal that takes colour gets it
    ({"TERM": "xterm-256color", "NO_COLOR": "1"}, False),
    ({"TERM": "dumb"}, False),
])
def test_search_highlights_only_where_the_terminal_takes_colour(indexed, state_dir, env, coloured):
    """The query's terms were bold yellow on any terminal: NO_COLOR and TERM=dumb were ignored."""
    code, out = on_a_terminal(indexed, state_dir, ("search", "kestrel"), "stdout", **env)
    assert code == 0 and "MEMORY.md#L3  " in out, out  # one line cited as OpenClaw cites it
    assert ("\x1b[" in out) is coloured, repr(out)
    assert "kestrel nests" in out or "\x1b[1;33mkestrel\x1b[0m nests" in out


@pytest.mark.parametrize("term, drawn", [("xterm-256color", True), ("dumb", False)])
def test_a_dumb_terminal_gets_the_progress_lines_not_a_bar(indexed, state_dir, term, drawn):
    """On TERM=dumb the bar (cursor movements) showed nothing at all: an index ran without progress."""
    code, err = on_a_terminal(indexed, state_dir, ("index", "--full"), "stderr", TERM=term)
    assert code == 0, err
    assert ("\x1b[" in err) is drawn, repr(err)
    if not drawn:
        assert re.search(r"^embedded (\d+)/\1 chunks of 4 files", err, re.M), repr(err)


def test_write_stdin_on_a_terminal_says_what_it_waits_for(workspace, state_dir):
    """`write PATH --stdin` typed without a pipe waited in silence for the new content."""
    write(workspace / "MEMORY.md", "# Memory\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "write", "memory/typed.md", "--stdin"], cwd=workspace,
                            stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(workspace, state_dir))
    os.close(slave)
    try:
        said = wait_for_line(proc.stderr, "from the terminal", timeout=30)  # before any input: it says so first
        assert "reading the new content of memory/typed.md from the terminal" in said and "Ctrl-D" in said, said
        os.write(master, b"- typed by hand\n\x04")  # a line, then Ctrl-D (end of input)
        out, _err = proc.communicate(timeout=120)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "created memory/typed.md" in out
    assert (workspace / "memory" / "typed.md").read_text() == "- typed by hand\n"


def test_read_diff_on_a_terminal_shows_a_notes_control_characters_escaped(workspace, state_dir, cli):
    """`read` escapes a note's control characters on a terminal; `read --diff` sent them raw (a
    note's \\x1b[2J cleared the screen of whoever looked at what changed)."""
    write(workspace / "MEMORY.md", "# Memory\n")
    assert cli("read", "MEMORY.md").returncode == 0
    write(workspace / "MEMORY.md", "# Memory\n- \x1b[2Jgone\x07\n")
    code, out = on_a_terminal(workspace, state_dir, ("read", "MEMORY.md", "--diff"), "stdout", TERM="xterm")
    assert code == 0 and "+- \\x1b[2Jgone\\x07" in out and "\x1b" not in out and "\x07" not in out, repr(out)


def test_prompt_on_a_terminal_shows_a_notes_control_characters_escaped(workspace, state_dir):
    """`prompt` wrote MEMORY.md and the daily notes to a terminal raw: a note's escape sequences drove it."""
    write(workspace / "MEMORY.md", "# Memory\n- \x1b]0;owned\x07 title\n")
    write(workspace / "memory" / "2026-11-30.md", "- \x1b[2J cleared\n")
    code, out = on_a_terminal(workspace, state_dir, ("prompt", "--date", "2026-11-30", "--peek"), "stdout", TERM="xterm")
    assert code == 0 and "\\x1b]0;owned\\x07 title" in out and "\\x1b[2J cleared" in out, repr(out)
    assert "\x1b" not in out and "\x07" not in out, repr(out)
