"""Stop signals noted, not acted on, in the handler: the service (SIGINT, SIGTERM) and the MCP
server over stdio (SIGTERM) each check a list and stop cleanly between their own steps."""

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
