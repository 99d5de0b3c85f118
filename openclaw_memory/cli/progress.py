"""Progress of an index run on stderr: a rich bar on a terminal (not TERM=dumb), plain lines otherwise (``index``,
and ``write`` when its index update covers more than the file written).

Files are read, embedded and written in batches, so the number of chunks is known only once every
file has been read: until then the count is shown as still counting (no total, no ETA), never as a
total that later grows.
"""

from __future__ import annotations

import sys


def _chunk_rate_column():
    """A rich column: chunks embedded per second (blank while files are read)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class ChunkRate(ProgressColumn):
        def render(self, task):
            if task.fields.get("phase") != "embed" or not task.speed:
                return Text("")
            return Text(f"{task.speed:.1f} chunks/s")

    return ChunkRate()


PLAIN_EVERY_S = 2.0  # how often plain progress lines may come when stderr is not a terminal


def _counting(p) -> bool:
    """Whether files remain to be read: their chunks are not in ``chunks_total`` yet."""
    return p.files_done < p.files_total


def progress_reporter(stack):
    """A callback for sync progress: a rich bar on a terminal that can draw one, plain lines otherwise."""
    from .output import draws

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

        def report(p):
            if p.phase == "model":
                progress.update(task, total=None, description="loading model")
            elif p.chunks_total:
                if not phase["embed"]:
                    phase["embed"] = True
                    progress.reset(task, total=None, phase="embed")
                if _counting(p):
                    progress.update(task, total=None, completed=p.chunks_done,
                                    description=f"embedding (counting chunks: {p.files_done}/{p.files_total} files read)")
                else:
                    progress.update(task, total=p.chunks_total, completed=p.chunks_done,
                                    description=f"embedding ({p.files_total} files)")
            else:
                progress.update(task, total=p.files_total, completed=p.files_done, description="reading files")

        return report

    import time

    last = {"line": "", "start": None, "base": 0, "at": 0.0, "done": False}

    def plain(p):
        if p.phase == "model":
            line = "loading model"
        elif p.chunks_total and _counting(p):
            line = f"embedded {p.chunks_done} chunks so far; {p.files_done}/{p.files_total} files read (still counting chunks)"
        elif p.chunks_total:
            if last["start"] is None:
                last["start"], last["base"] = time.monotonic(), p.chunks_done
            line = f"embedded {p.chunks_done}/{p.chunks_total} chunks of {p.files_total} files"
            elapsed = time.monotonic() - last["start"]
            if p.chunks_done > last["base"] and elapsed > 0:
                rate = (p.chunks_done - last["base"]) / elapsed
                line += f", {rate:.1f} chunks/s, ETA {(p.chunks_total - p.chunks_done) / rate:.0f} s"
        else:
            line = f"read {p.files_done}/{p.files_total} files"
        done = p.chunks_total and not _counting(p) and p.chunks_done >= p.chunks_total
        now = time.monotonic()
        # A log, not a bar: a line every few seconds at most, and the last one of each part of the run,
        # once (the embedding's last batch and the write after it both report every chunk done: the
        # line came twice, with two rates).
        if line != last["line"] and not (done and last["done"]) and (
                p.chunks_total or p.phase == "model" or p.files_done == p.files_total) and (
                now - last["at"] >= PLAIN_EVERY_S or done or p.phase == "model"):
            last["line"], last["at"], last["done"] = line, now, bool(done)
            sys.stderr.write(line + "\n")

    return plain
