"""The index's progress on stderr: the rate it shows, and a reader that goes away (``2>&1 | head -1``)."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import FAKE_MODEL, write
from openclaw_memory.cli import progress
from openclaw_memory.index.results import SyncProgress


def _plain(monkeypatch, steps):
    """The plain progress lines for ``steps`` of (seconds, SyncProgress)."""
    import io

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    now = {"t": 0.0}
    monkeypatch.setattr(progress, "_clock", lambda: now["t"])
    report = progress.progress_reporter(None)
    for at, p in steps:
        now["t"] = at
        report(p)
    return err.getvalue().splitlines()


def test_the_rate_is_over_the_whole_embedding(monkeypatch):
    # The rate was timed from the end of the file count, with every chunk embedded by then as its
    # base: 50 chunks over the seconds after it ("7.8 chunks/s" of a run at 290).
    lines = _plain(monkeypatch, [
        (0.0, SyncProgress(0, 10, 0, 0, "model")),
        (10.0, SyncProgress(1, 10, 100, 100, "embed")),  # the first batch: the clock starts
        (12.0, SyncProgress(5, 10, 500, 600, "embed")),
        (14.0, SyncProgress(9, 10, 900, 950, "embed")),
        (14.5, SyncProgress(10, 10, 950, 1000, "embed")),  # counted
        (18.0, SyncProgress(10, 10, 1000, 1000, "embed")),
    ])
    assert lines[-1] == "embedded 1000/1000 chunks of 10 files, 112.5 chunks/s; writing the index", lines
    assert "embedded 500 chunks so far (200.0 chunks/s); 5/10 files read (still counting chunks)" in lines, lines


def test_the_rate_stands_on_a_terminal_bar_too(monkeypatch):
    from contextlib import ExitStack

    from rich.console import Console

    monkeypatch.setattr("openclaw_memory.cli.output.draws", lambda stream: True)
    monkeypatch.setattr("openclaw_memory.cli.output.stderr_console", lambda: Console(file=open(os.devnull, "w"), force_terminal=True))
    now = {"t": 0.0}
    monkeypatch.setattr(progress, "_clock", lambda: now["t"])
    seen, entered = [], []

    class Stack(ExitStack):
        def enter_context(self, cm):
            entered.append(cm)
            return super().enter_context(cm)

    with Stack() as stack:
        report = progress.progress_reporter(stack)
        bar = entered[0]
        for at, p in [(10.0, SyncProgress(1, 10, 100, 100, "embed")), (14.5, SyncProgress(10, 10, 950, 1000, "embed")),
                      (18.0, SyncProgress(10, 10, 1000, 1000, "embed"))]:
            now["t"] = at
            report(p)
            seen.append(bar.tasks[0].fields.get("rate"))
    assert seen == [None, 850 / 4.5, 900 / 8], seen


def test_an_index_whose_progress_reader_went_away_finishes(tmp_path):
    # `index 2>&1 | head -1`: the progress line after the first raised BrokenPipeError out of the
    # index, which stopped half-done and exited 0 (a search then refused: the first index was interrupted).
    workspace, state = tmp_path / "ws", tmp_path / "st"
    write(workspace / "MEMORY.md", "# Memory\n\n- green tea\n")
    for i in range(30):
        write(workspace / "memory" / f"n{i}.md", "".join(f"- note {i} line {j} about backups\n\n" for j in range(20)))
    env = {**os.environ, **FAKE_MODEL, "OPENCLAW_STATE_DIR": str(state), "OPENCLAW_WORKSPACE": str(workspace)}
    read, gone = os.pipe()
    os.close(read)  # the reader went away before the first line
    try:
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], stdout=subprocess.PIPE, stderr=gone,
                              text=True, env=env, timeout=300)
    finally:
        os.close(gone)
    assert done.returncode == 0 and done.stdout.startswith("Indexed agent main: 31 files scanned"), done.stdout
    status = subprocess.run([sys.executable, "-m", "openclaw_memory", "search", "backups", "--json"], capture_output=True,
                            text=True, env=env, timeout=300)
    assert status.returncode == 0 and "interrupted" not in status.stdout + status.stderr, status.stderr
