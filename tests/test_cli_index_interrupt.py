"""``index`` stopped by Ctrl-C: one JSON line with --json, one line however many Ctrl-Cs, and words
true of a first index. Real processes: the signal is the subject."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from test_cli_index import notes

from conftest import env_for, fault


def _interrupted(workspace, state_dir, *args: str, second: bool = False) -> tuple[int, str, str]:
    """``index ARGS`` paused at its first embedding step, then sent SIGINT (``second``: paused again in
    its handling of that, sent SIGINT again, then let go): its status, stdout and stderr."""
    faults = ["index:embedded:1=pause"] + (["index:interrupted=pause"] if second else [])
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "index", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0, cwd=workspace,
                            env=fault(*faults, env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off")))
    assert proc.stderr is not None and proc.stdout is not None
    said = []
    try:
        while b"test-hook: paused at index:embedded:1" not in (line := proc.stderr.readline()):
            assert line, "the index ended without pausing"  # (it pauses until a signal: no wait is timed)
            said.append(line)
        proc.send_signal(signal.SIGINT)
        if second:
            while b"test-hook: paused at index:interrupted" not in (line := proc.stderr.readline()):
                assert line, f"the interrupted index ended without pausing in its handling: {b''.join(said)!r}"
                said.append(line)
            proc.send_signal(signal.SIGINT)  # a second Ctrl-C while the first is being handled
            proc.send_signal(signal.SIGUSR1)
        said.append(proc.stderr.read())
        out = proc.stdout.read().decode()
        code = proc.wait(timeout=60)
    finally:
        proc.kill()  # a paused index left behind would hold its lock (and the run) forever
    return code, out, b"".join(said).decode()


def test_an_interrupted_index_json_prints_one_json_line(workspace, state_dir):
    # It printed nothing on stdout (search --json prints {"error": "interrupted"}).
    notes(workspace)
    code, out, err = _interrupted(workspace, state_dir, "--json")
    assert code == 130, err
    lines = out.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["error"].startswith("interrupted: 32 new chunks were embedded"), out


def test_an_index_interrupted_before_it_saved_a_chunk_says_whether_a_live_index_is_searched(workspace, state_dir, cli):
    # A first index interrupted while its first chunks were embedding, none saved, said "the changes
    # were being built beside the live index, which is unchanged and still searched": there was none.
    from conftest import settings_for
    from openclaw_memory.cli.commands.index_cmd import _interrupted

    notes(workspace)
    settings = settings_for(workspace, state_dir)
    embedding = {"done": 0, "total": 72, "embedded": 32}
    first = _interrupted(settings, False, embedding)
    assert "live index" not in first and "beside" not in first and "the first index" in first, first
    assert cli("index").returncode == 0
    later = _interrupted(settings, True, embedding)
    assert "beside the live index, which is unchanged and still searched" in later and "--full" in later, later


def test_a_second_ctrl_c_while_the_first_is_handled_prints_no_second_line(workspace, state_dir):
    # Several quick Ctrl-Cs printed two lines: the warning, then "error: interrupted".
    notes(workspace)
    code, out, err = _interrupted(workspace, state_dir, second=True)
    assert code == 130, err
    said = [each for each in err.splitlines() if "interrupted" in each and "test-hook" not in each]
    assert len(said) == 1 and said[0].startswith("error: interrupted: 32 new chunks"), err
    assert "Traceback" not in err


def test_a_ctrl_c_while_the_cli_loads_is_the_one_line_of_any_other(workspace, state_dir):
    """A Ctrl-C in the part of a second the CLI's modules take to load was a traceback, the process
    killed by the signal. It lands there for sure here: the import of cli.main raises it."""
    code = ("import sys\n"
            "class Interrupt:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'openclaw_memory.cli.main':\n"
            "            raise KeyboardInterrupt\n"
            "sys.meta_path.insert(0, Interrupt())\n"
            "sys.argv = ['openclaw-memory', *sys.argv[1:]]\n"
            "from openclaw_memory.cli import run\n"
            "run()\n")
    for args, out, err in ((["files"], "", "error: interrupted\n"), (["files", "--json"], '{\n  "error": "interrupted"\n}\n', "")):
        done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=workspace,
                              env=env_for(workspace, state_dir))
        assert (done.returncode, done.stdout, done.stderr) == (130, out, err)


def test_a_ctrl_c_after_the_write_is_made_is_held_back_until_it_is_said(workspace, state_dir):
    """A Ctrl-C landing once the new version was in place was `error: interrupted`, exit 130, of a
    write that was made (1 run in 10 of a reviewer's timed Ctrl-Cs). It is held back: the write's
    result is said, exit 0."""
    env = fault("write:swapped=pause", env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off"))
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "write", "MEMORY.md", "--append", "kept", "--json",
                             "--no-index"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workspace, env=env)
    assert proc.stderr is not None
    while b"test-hook: paused at write:swapped" not in (line := proc.stderr.readline()):
        assert line, "the write ended without pausing"
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGUSR1)  # (the pause's own way on)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert json.loads(out)["created"] is True and (workspace / "MEMORY.md").read_text() == "kept\n"


def test_a_ctrl_c_before_the_write_is_made_cancels_it(workspace, state_dir):
    """Held back from the start, a Ctrl-C while the write waited for the history's lock (another
    process held it) did nothing, and the write was made when the lock came free, exit 0. Before its
    new version goes in place, it cancels the write."""
    (workspace / "MEMORY.md").write_text("# Memory\n")
    env = env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off")
    assert subprocess.run([sys.executable, "-m", "openclaw_memory", "read", "MEMORY.md"], env=env, cwd=workspace,
                          capture_output=True).returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "write", "MEMORY.md", "--append", "not this",
                             "--no-index"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=workspace,
                            env=fault("write:locked=pause", env=env))
    assert proc.stderr is not None
    while b"test-hook: paused at write:locked" not in (line := proc.stderr.readline()):
        assert line, "the write ended without pausing"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.decode().strip() == "error: interrupted", err
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n"
