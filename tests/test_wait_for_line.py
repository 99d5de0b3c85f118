"""The suite's wait for a child's line: two lines that come in one read are both seen (select() on a
buffered stream missed the second, and `run_paused` waited its whole timeout under load: CI's flaky
`test_a_first_index_going_on_is_running_not_interrupted`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import wait_for_line

TWO_LINES_AT_ONCE = "import sys, time; sys.stderr.write('progress\\ntest-hook: paused\\n'); sys.stderr.flush(); time.sleep(60)"


@pytest.mark.parametrize("text", [True, False])
def test_a_line_behind_another_in_one_read_is_seen(text):
    proc = subprocess.Popen([sys.executable, "-c", TWO_LINES_AT_ONCE], stderr=subprocess.PIPE, text=text)
    try:
        assert "test-hook: paused" in wait_for_line(proc.stderr, "test-hook: paused", timeout=20)
    finally:
        proc.kill()
        proc.wait()


def test_a_line_never_written_fails_naming_what_came():
    proc = subprocess.Popen([sys.executable, "-c", "print('only this', flush=True)"], stdout=subprocess.PIPE, text=True)
    with pytest.raises(AssertionError, match="never saw 'paused'; got 'only this"):
        wait_for_line(proc.stdout, "paused", timeout=20)
    proc.wait()
