"""Faults the tests inject at named steps of the product: one switch, read from the environment.

The product calls :func:`reach` at each step where a test may stop it or make it fail: the steps
of a repair (``merge:begin``, ``move:rename``, ``finalize:clear``, ... listed in docs/doctor.md),
of a keyed write (``write:key-recorded``, ``write:checked`` before its exchange, ``write:exchanged``
right after it, ``write:swapped``), the N-th batch an ``index`` writes to a
shard (``index:batch:N``, taken before the commit for a live shard: paused inside it, searches
and a signal to stop would wait), the N-th embedding step (``index:embedded:N``), the N-th
upsert to a Qdrant server (``qdrant:upsert:N``), the end of a read's N-th pass over its file
(``read:scanned:N``, before the stat that says whether the file held still) and an atomic
replacement of a file NAME between its temp file's write and its rename (``atomic:renaming:NAME``),
doctor's record of a clean check before its files are looked at again (``state-checked:keeping``),
a watch's start, its lock held and its signal handlers not yet in place (``watch:held``), and the
start of a service or of an MCP server over stdio before their handlers are (``serve:starting``,
``mcp:starting``).

``OPENCLAW_MEMORY_TEST_FAULTS`` holds comma-separated ``STEP=ACTION`` entries. At STEP, ``kill``
SIGKILLs the process; ``pause`` writes ``test-hook: paused at STEP (pid P)`` to stderr and waits for
SIGUSR1 (the test kills it, or changes files behind its back and lets it carry on); ``fail`` makes
``reach`` return True, and the caller fails as it would for real there (a rename across file
systems, ``EXDEV``; a Qdrant server gone from that upsert on). Unset (always, outside the tests),
``reach`` is one environment lookup.
"""

from __future__ import annotations

import os
import time

ENV = "OPENCLAW_MEMORY_TEST_FAULTS"
ACTIONS = ("kill", "pause", "fail")


def reach(step: str) -> bool:
    """Called at ``step``; True when a test asked this step to fail (after any pause it asked for)."""
    spec = os.environ.get(ENV)
    if not spec:
        return False
    import signal  # only with a test's hook set: every write and doctor calls this
    failed = False
    for entry in spec.split(","):
        name, _, action = entry.strip().rpartition("=")
        if name != step:
            continue
        if action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "pause":
            _pause(step)
        elif action == "fail":
            failed = True
        else:
            raise ValueError(f"{ENV}: {entry!r} names no action of {ACTIONS}")
    return failed


def _pause(step: str) -> None:
    import signal

    resumed: list[bool] = []
    signal.signal(signal.SIGUSR1, lambda *_: resumed.append(True))
    # Raw write to fd 2: the test waits for this exact line before acting.
    os.write(2, f"test-hook: paused at {step} (pid {os.getpid()})\n".encode())
    while not resumed:
        time.sleep(0.05)
