"""Test-only fault hooks: stop the process at a named step of a repair.

Switched on only by environment variables whose names say they are for tests.
``OPENCLAW_MEMORY_TEST_DOCTOR_KILL_AT=<step>`` SIGKILLs the process at that step;
``OPENCLAW_MEMORY_TEST_DOCTOR_PAUSE_AT=<step>`` announces the pause on stderr and
waits until a test kills it, or sends SIGUSR1 to let it carry on (after changing
files behind its back). Steps are listed in docs/doctor.md.
"""

from __future__ import annotations

import os
import signal
import time

KILL_ENV = "OPENCLAW_MEMORY_TEST_DOCTOR_KILL_AT"
PAUSE_ENV = "OPENCLAW_MEMORY_TEST_DOCTOR_PAUSE_AT"


def reach(step: str) -> None:
    """Called at each named step; does nothing unless a test asked to stop there."""
    if os.environ.get(KILL_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(PAUSE_ENV) == step:
        resumed: list[bool] = []
        signal.signal(signal.SIGUSR1, lambda *_: resumed.append(True))
        # Raw write to fd 2: the test waits for this exact line before acting.
        os.write(2, f"test-hook: paused at {step} (pid {os.getpid()})\n".encode())
        while not resumed:
            time.sleep(0.05)
