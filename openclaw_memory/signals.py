"""Stop signals noted, not acted on, in the handler: the service (SIGINT, SIGTERM) and the MCP
server over stdio (SIGTERM) each check a list and stop cleanly between their own steps; a command's
own Ctrl-C rule (:func:`interrupt_once`)."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable


def note_signals(noted: list[str], *signals: signal.Signals, said: bytes = b"") -> Callable[[], None]:
    """Each of ``signals`` appended to ``noted`` by name (``said`` written to stderr) from now on; the
    function that puts back the handlers they had. Off the main thread nothing is caught (Python runs
    handlers there only) and putting back does nothing."""
    def handler(signum, _frame):
        # Only a list append and a raw write: the handler runs between any two bytecodes, and an
        # Event.set() here would take the lock the Event.wait() it interrupts may hold, forever.
        noted.append(signal.Signals(signum).name)
        if said:
            os.write(2, said)

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.signal(sig, handler) for sig in signals}

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


def interrupt_once() -> None:
    """From now on the first SIGINT stops the command (KeyboardInterrupt) and every later one is
    ignored, until the process ends: several quick Ctrl-Cs interrupted the unwind (what an index
    saves, the locks it lets go) and printed a second line, or a traceback, after the first's. The
    CLI's whole process only (``cli.main.run``); a command that holds Ctrl-C back for a while (a
    write: :func:`note_signals`) puts this back after."""
    def once(_signum, _frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, once)
