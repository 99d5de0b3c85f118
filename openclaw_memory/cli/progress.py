"""Progress of an index run on stderr: a rich bar on a terminal (not TERM=dumb), plain lines otherwise (``index``,
and ``write`` when its index update covers more than the file written).

Files are read, embedded and written in batches, so the number of chunks is known only once every
file has been read: until then the count is shown as still counting (no total, no ETA), never as a
total that later grows.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..index.results import SyncProgress

_clock = time.monotonic  # (the tests' clock)


class _Rate:
    """Chunks embedded per second, over the whole embedding: timed from the first report of a chunk
    embedded (the model loaded, the first batch done) to now. It was timed from the end of the file
    count, with every chunk embedded by then as its base: the last few chunks over the whole
    write's seconds ("7.8 chunks/s" of a run at 290)."""

    def __init__(self) -> None:
        self.start: float | None = None
        self.base = 0

    def __call__(self, done: int) -> float | None:
        now = _clock()
        if self.start is None:
            if done > 0:
                self.start, self.base = now, done
            return None
        if done <= self.base or now <= self.start:
            return None
        return (done - self.base) / (now - self.start)


def _chunk_rate_column():
    """A rich column: chunks embedded per second (blank while files are read), :class:`_Rate`'s."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class ChunkRate(ProgressColumn):
        def render(self, task):
            rate = task.fields.get("rate")
            if task.fields.get("phase") != "embed" or not rate:
                return Text("")
            return Text(f"{rate:.1f} chunks/s")

    return ChunkRate()


PLAIN_EVERY_S = 2.0  # how often plain progress lines may come when stderr is not a terminal


def _counting(p) -> bool:
    """Whether files remain to be read: their chunks are not in ``chunks_total`` yet."""
    return p.files_done < p.files_total


def progress_reporter(stack):
    """A callback for sync progress: a rich bar on a terminal that can draw one, plain lines otherwise."""
    from .output import draws, silence

    if draws(sys.stderr):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from .output import stderr_console

        progress = stack.enter_context(
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _chunk_rate_column(),
                TimeRemainingColumn(),
                console=stderr_console(),
                transient=True,
            )
        )
        task = progress.add_task("reading files", total=None)
        phase = {"embed": False}
        rate = _Rate()

        def report(p):
            if off["lost"]:
                return
            try:
                draw(p)
            except OSError:  # the terminal went away (a closed pty): the bar stops, the index goes on
                off["lost"] = True
                silence(sys.stderr)

        off = {"lost": False}

        def draw(p):
            if p.phase == "model":
                progress.update(task, total=None, description="loading model")
            elif p.chunks_total:
                if not phase["embed"]:
                    phase["embed"] = True
                    progress.reset(task, total=None, phase="embed")
                speed = rate(p.chunks_done)
                if _counting(p):
                    progress.update(task, total=None, completed=p.chunks_done, rate=speed,
                                    description=f"embedding (counting chunks: {p.files_done}/{p.files_total} files read)")
                else:
                    progress.update(task, total=p.chunks_total, completed=p.chunks_done, rate=speed,
                                    description=f"embedding ({p.files_total} files)")
            else:
                progress.update(task, total=p.files_total, completed=p.files_done, description="reading files")

        return report

    last = {"line": "", "at": 0.0, "done": False, "lost": False}
    rate = _Rate()

    def plain(p):
        if last["lost"]:
            return
        if p.phase == "model":
            line = "loading model"
        elif p.chunks_total and _counting(p):
            speed = rate(p.chunks_done)
            line = f"embedded {p.chunks_done} chunks so far" + (f" ({speed:.1f} chunks/s)" if speed else "") + (
                f"; {p.files_done}/{p.files_total} files read (still counting chunks)")
        elif p.chunks_total:
            speed = rate(p.chunks_done)
            line = f"embedded {p.chunks_done}/{p.chunks_total} chunks of {p.files_total} files"
            if speed:
                line += f", {speed:.1f} chunks/s"
            if p.chunks_done >= p.chunks_total:  # what the seconds after it are spent on (no line came for them)
                line += "; writing the index"
            elif speed:
                line += f", ETA {(p.chunks_total - p.chunks_done) / speed:.0f} s"
        else:
            line = f"read {p.files_done}/{p.files_total} files"
        done = p.chunks_total and not _counting(p) and p.chunks_done >= p.chunks_total
        now = _clock()
        # A log, not a bar: a line every few seconds at most, and the last one of each part of the run,
        # once (the embedding's last batch and the write after it both report every chunk done: the
        # line came twice, with two rates).
        if line != last["line"] and not (done and last["done"]) and (
                p.chunks_total or p.phase == "model" or p.files_done == p.files_total) and (
                now - last["at"] >= PLAIN_EVERY_S or done or p.phase == "model"):
            last["line"], last["at"], last["done"] = line, now, bool(done)
            try:
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            except OSError:
                # Its reader went away (``index 2>&1 | head -1``) or its file is full: the progress
                # lines stop, the index goes on (a BrokenPipeError here stopped it half-done, exit 0).
                last["lost"] = True
                silence(sys.stderr)

    return plain


def said_then_shown(stack, first_line: Callable[[SyncProgress], str | None]) -> Callable[[SyncProgress], None]:
    """Progress of a sync a command runs on the way (a write's index update, a search's first index):
    nothing until ``first_line`` gives a line for it, said once as a warning, then :func:`progress_reporter`'s."""
    shown: list = []

    def report(p: SyncProgress) -> None:
        if not shown:
            line = first_line(p)
            if line is None:
                return
            from .output import warn

            warn(line)
            shown.append(progress_reporter(stack))
        shown[0](p)

    return report
