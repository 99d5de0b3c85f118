"""A stop signal while onnxruntime (and numpy inside it) loads is a stop, not a missing 'search' part.

numpy's C loader, run from onnxruntime's, swallows an exception raised by a signal handler during
numpy's import (printing its traceback) and raises ImportError("import numpy failed"): the service
said the 'search' part was not installed (exit 1) where it was asked to stop, and a search
interrupted by Ctrl-C did too. The fake onnxruntime below does what that loader does."""

from __future__ import annotations

import signal
import sys
import threading

import pytest

from openclaw_memory.errors import MissingExtra
from openclaw_memory.index import onnx_embedding

SWALLOWING = '''
import os, signal

def disable_telemetry_events():
    pass

try:
    os.kill(os.getpid(), signal.SIGINT)  # the stop, while the import runs
    for _ in range(1000):  # (the handler runs at the next bytecode boundary)
        pass
except BaseException:
    raise ImportError("import numpy failed") from None
LOADED_WHOLE = True
'''


class Stopped(BaseException):
    """As the watch's WatchStopped: raised by the service's handler."""


def _stop(_signum, _frame):
    raise Stopped()


@pytest.fixture
def fake_onnxruntime(tmp_path, monkeypatch):
    (tmp_path / "onnxruntime.py").write_text(SWALLOWING)
    monkeypatch.syspath_prepend(str(tmp_path))
    saved = sys.modules.pop("onnxruntime", None)
    try:
        yield
    finally:
        sys.modules.pop("onnxruntime", None)
        if saved is not None:
            sys.modules["onnxruntime"] = saved


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals reach the main thread only")
@pytest.mark.parametrize("handler, raised", [(signal.default_int_handler, KeyboardInterrupt), (_stop, Stopped)])
def test_a_stop_signal_during_the_onnxruntime_import_is_raised_as_itself(fake_onnxruntime, handler, raised):
    previous = signal.signal(signal.SIGINT, handler)
    try:
        with pytest.raises(raised):
            onnx_embedding.OnnxEmbedder.load("all-MiniLM-L6-v2", "/nonexistent", None)
    except MissingExtra as exc:  # (what it said before: the stop lost)
        pytest.fail(f"said {exc.message!r}")
    finally:
        signal.signal(signal.SIGINT, previous)
    # The import ran to its end, the signal held meanwhile: nothing is left half imported.
    assert getattr(sys.modules.get("onnxruntime"), "LOADED_WHOLE", False)
    assert signal.getsignal(signal.SIGINT) is previous


def test_a_noted_signal_is_handed_to_its_handler_once_the_import_is_done(fake_onnxruntime):
    """The service's own handler (signals.note_signals) only notes the signal: it still hears it."""
    noted: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: noted.append(signum))
    try:
        onnx_embedding._onnxruntime()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert noted == [signal.SIGINT]
    assert sys.modules["onnxruntime"].LOADED_WHOLE
