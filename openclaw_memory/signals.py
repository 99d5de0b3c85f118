"""Stop signals noted, not acted on, in the handler: the service (SIGINT, SIGTERM, SIGHUP) and the MCP
server over stdio (SIGTERM) each check a list and stop cleanly between their own steps; a command's
own Ctrl-C rule (:func:`interrupt_once`)."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any


def stop_signals() -> tuple[signal.Signals, ...]:
    """The signals a long-running process (``serve``, ``watch``, ``mcp``) stops on cleanly: Ctrl-C,
    SIGTERM and SIGHUP, its terminal closed (which killed it, exit 129, its socket and info file left
    behind), but for those ignored already: SIGHUP started under ``nohup``, SIGINT in the background
    of a script (``serve &``; :func:`interrupt_once` keeps it ignored): it must run on (a Ctrl-C
    meant for the script's foreground stopped it)."""
    return tuple(sig for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
                 if sig == signal.SIGTERM or signal.getsignal(sig) is not signal.SIG_IGN)


def note_signals(noted: list[str], *signals: signal.Signals, said: bytes = b"") -> Callable[[], None]:
    """Each of ``signals`` appended to ``noted`` by name (``said`` written to stderr) from now on; the
    function that puts back the handlers they had. Off the main thread nothing is caught (Python runs
    handlers there only) and putting back does nothing."""
    def handler(signum, _frame):
        # Only a list append and a raw write: the handler runs between any two bytecodes, and an
        # Event.set() here would take the lock the Event.wait() it interrupts may hold, forever.
        noted.append(signal.Signals(signum).name)
        if said:
            try:
                os.write(2, said)
            except OSError:  # (a terminal hung up: EIO) raised here, it would be raised wherever the process was
                pass

    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    for sig, old in previous.items():
        if old is _noted_early:  # (see noted_from_the_start) what it noted is this list's now
            previous[sig] = _EARLY_PREVIOUS.pop(sig, signal.SIG_DFL)
            for name in [name for name in _EARLY_NOTED if name == sig.name]:
                _EARLY_NOTED.remove(name)
                handler(sig, None)

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


_EARLY_NOTED: list[str] = []
_EARLY_PREVIOUS: dict[signal.Signals, Any] = {}


def _noted_early(signum, _frame) -> None:
    _EARLY_NOTED.append(signal.Signals(signum).name)  # (a list append only: see note_signals)


def noted_from_the_start(*signals: signal.Signals) -> Callable[[], None]:
    """Each of ``signals`` noted from now on (main thread only) until the long-running process's own
    handlers (:func:`note_signals`) take them over, with what was noted: the CLI's process of a
    ``serve``, ``watch`` or ``mcp``, from its command line parsed on (``cli.main``). Sent before its
    handlers were in place (its settings, its imports: up to half a second), SIGTERM and SIGHUP killed
    it (143, 129) with nothing said; now it stops as on one sent later. The function that puts back
    what no handler took over (the command ended first: an error)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    for sig in signals:
        _EARLY_PREVIOUS[sig] = signal.signal(sig, _noted_early)

    def release() -> None:
        for sig, old in list(_EARLY_PREVIOUS.items()):
            if signal.getsignal(sig) is _noted_early:
                signal.signal(sig, old)
        _EARLY_PREVIOUS.clear()
        _EARLY_NOTED.clear()

    return release


def noted_once(said: bytes, *signals: signal.Signals) -> None:
    """From now on (main thread only) each of ``signals`` does nothing but write ``said`` to stderr
    the first time: a process already stopping cleanly (the service's shutdown, which may wait for
    requests in flight) that a second Ctrl-C or SIGTERM killed (exit 130 or 143, its socket and
    lock file left behind). The handlers ``note_signals`` displaced are put back by its restore."""
    if threading.current_thread() is not threading.main_thread():
        return
    told: list[bool] = []

    def handler(_signum, _frame):
        if not told:  # (a list append and a raw write only: see note_signals)
            told.append(True)
            os.write(2, said)

    for sig in signals:
        signal.signal(sig, handler)


def ignored_to_the_end(*signals: signal.Signals) -> None:
    """In the CLI's one command (:func:`interrupt_once`'s process), ``signals`` are ignored from now
    until the process ends: it stopped cleanly as asked and only says so and exits (a Ctrl-C there
    exited 130 after its last line). Anywhere else (a library, the tests' in-process CLI) nothing changes."""
    if _STATE["whole"] and threading.current_thread() is threading.main_thread():
        for sig in signals:
            signal.signal(sig, signal.SIG_IGN)


# "ignored": SIGINT was ignored when the CLI's process started (a background job of a script, which
# the shell started so): interrupt_once keeps it so, and so does every command's own rule.
_STATE: dict[str, bool] = {"committed": False, "held": False, "whole": False, "ignored": False}


def interrupt_once() -> None:
    """From now on the first SIGINT stops the command (KeyboardInterrupt) and every later one is
    ignored, until the process ends: several quick Ctrl-Cs interrupted the unwind (what an index
    saves, the locks it lets go) and printed a second line, or a traceback, after the first's. The
    CLI's whole process only (``cli.main.run``); a write's own rule
    (:func:`cancellable_until_committed`) puts this back after."""
    def once(_signum, _frame):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    _STATE["whole"] = True
    # Ignored from the start (``cmd &`` in a script: the shell asked that a Ctrl-C at the script's
    # foreground not reach it): it stays ignored, as nohup's SIGHUP does (a Ctrl-C stopped a service).
    _STATE["ignored"] = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if not _STATE["ignored"]:
        signal.signal(signal.SIGINT, once)


@contextlib.contextmanager
def cancellable_until_committed() -> Iterator[None]:
    """A command that changes a file: a Ctrl-C cancels it until the change reaches its point of no
    return (:func:`committed`, called there), and is held back after it, so the change is made and
    said (a Ctrl-C there was "interrupted", exit 130, of a write that was made; held back from the
    start, one while the write waited for its lock wrote it all the same). Work after the point that
    may stop asks :func:`interrupt_held` (a write's index update). Main thread only."""
    if threading.current_thread() is not threading.main_thread() or _STATE["ignored"]:
        yield  # (SIGINT ignored from the process's start: see interrupt_once)
        return
    _STATE.update(committed=False, held=False)

    def handler(_signum, _frame):
        if not _STATE["committed"]:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # (one Ctrl-C rule: interrupt_once's)
            raise KeyboardInterrupt
        _STATE["held"] = True

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        now = signal.getsignal(signal.SIGINT)
        if now is handler or now is signal.SIG_IGN:
            # The CLI's one command (interrupt_once's process) ignores SIGINT from here once it was
            # cancelled (one Ctrl-C rule) or made (a Ctrl-C as the process ended killed it by the
            # signal after its result was said); anywhere else the handler it had is put back.
            done = now is signal.SIG_IGN or _STATE["committed"]
            signal.signal(signal.SIGINT, signal.SIG_IGN if done and _STATE["whole"] else previous)
        _STATE.update(committed=False)


def committed() -> None:
    """The change in progress reached its point of no return (see :func:`cancellable_until_committed`)."""
    _STATE["committed"] = True


def interrupt_held() -> bool:
    return _STATE["held"]


class Stopping(BaseException):
    """Raised inside long work (a full index) when the service is asked to stop."""


class Interrupted(Stopping):
    """Raised inside the index update after a change, by a Ctrl-C the command held back until the
    change was made and said (``write``: :func:`cancellable_until_committed`)."""
