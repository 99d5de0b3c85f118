"""``openclaw-memory index`` stopped by Ctrl-C: what it says, and what the next run does."""

from __future__ import annotations

import re
import signal
import subprocess
import sys

import pytest

from conftest import env_for, fault, write


def notes(workspace, files: int = 12) -> None:
    """72 chunks with the hash embedder: 12 notes of 10 short sections."""
    for i in range(files):
        write(workspace / "memory" / f"note{i}.md", "".join(
            f"## Topic {i}-{j}\n\nThe note number {i} about subject {j}: tea, boats and gardens number {i * j}.\n\n"
            for j in range(10)))


@pytest.mark.parametrize("batch", [64, 1000], ids=["past-one-batch", "within-one-batch"])
def test_ctrl_c_in_a_first_index_keeps_what_was_embedded_and_says_so(workspace, state_dir, cli, batch):
    """A first index is written in place: Ctrl-C while a batch was embedding (32 of its chunks
    done) writes those 32, says so, and the next run embeds only the rest. It threw them away and
    said the changes were built beside a live index (there was none), and the next run embedded
    everything again."""
    notes(workspace)
    write(state_dir / "openclaw-memory.toml", f"[index]\nembed_batch = {batch}\n")
    # Unbuffered: a line read ahead into a buffer would not be seen by a wait on the descriptor.
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "index"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, bufsize=0, cwd=workspace,
                            env=fault("index:embedded:1=pause", env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off")))
    assert proc.stderr is not None
    try:
        while b"test-hook: paused at index:embedded:1" not in (line := proc.stderr.readline()):
            assert line, "the index ended without pausing"  # (it pauses until a signal: no wait is timed)
        proc.send_signal(signal.SIGINT)
        said = proc.stderr.read().decode()
        assert proc.wait(timeout=60) == 130
    finally:
        proc.kill()  # a paused index left behind would hold its lock (and the run) forever
    # (of the chunks counted so far: files are read while the first batches embed)
    assert re.search(r"32 new chunks were embedded and saved \(of \d+ counted so far\)", said) and "resumes" in said, said
    assert "beside" not in said and "live index" not in said
    searched = cli("search", "tea", "--no-sync")  # (a search that syncs finishes it)
    assert searched.returncode == 1 and "first index of agent main" in searched.stderr and "was interrupted" in searched.stderr
    again = cli("index", "--json")
    assert again.returncode == 0, again.stderr
    assert (again.json()["chunksEmbedded"], again.json()["chunksReused"]) == (40, 32)


def test_a_search_while_another_process_indexes_says_no_warning(workspace, state_dir, cli):
    """A watch or the service applying an edit holds the agent's index lock for a moment: a search
    then answers from the last complete index. That is routine (14 of 144 searches during a watch's
    syncs printed "warning: an index run ... is updating the index"); `--json` says it."""
    from conftest import settings_for
    from openclaw_memory.index.agent_lock import agent_lock

    write(workspace / "MEMORY.md", "# Memory\n\n- green tea in the morning\n")
    assert cli("index").returncode == 0
    write(workspace / "MEMORY.md", "# Memory\n\n- green tea in the morning\n- black tea at night\n")
    lock = agent_lock(settings_for(workspace, state_dir), 0)
    lock.acquire()  # as a running index holds it
    try:
        plain, as_json = cli("search", "tea"), cli("search", "tea", "--json")
    finally:
        lock.release()
    assert plain.returncode == 0 and "green tea" in plain.stdout and plain.stderr == "", plain.stderr
    # Being indexed now: not stale as OpenClaw says it (routine indexing is no warning); the files listed.
    assert as_json.json()["updating"] is True and as_json.json()["stalePaths"] == ["MEMORY.md"]
    assert not {"stale", "warning", "action"} & set(as_json.json())
    unsynced = cli("search", "tea", "--no-sync")  # not being indexed: the stale file is worth a warning
    assert "warning: 1 file(s) changed since the last index" in unsynced.stderr and "updating" not in cli(
        "search", "tea", "--json", "--no-sync").stdout


def test_index_prints_its_last_progress_line_once(workspace, cli):
    # The embedding's last batch and the write after it both reported every chunk done: the plain
    # progress (stderr not a terminal) printed "embedded 72/72 chunks ..." twice, with two rates.
    notes(workspace)
    run = cli("index")
    assert run.returncode == 0, run.stderr
    assert len(re.findall(r"^embedded (\d+)/\1 chunks of 12 files", run.stderr, re.M)) == 1, run.stderr
