"""``openclaw-memory serve``: the workspace's warm memory service (``watch`` is the same process)."""

from __future__ import annotations

import io
import os
import select
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ... import faults
from ...errors import UsageError
from ...extras import require
from ...memory import to_json
from ..output import OutputLost, one_line, print_json, printable, say, silence, warn

if TYPE_CHECKING:
    from ...settings import Settings

# Bytes written to stdout at once, once select says it takes some: no write blocks then (a pipe
# takes a page, a terminal's queue about this much), so a stop signal is never stuck behind one.
_PIECE = 512
_SLICE_S = 0.25  # how often a wait for stdout's reader looks up from select (a signal cuts it short)


def _emit_json(data: dict) -> None:
    # One object per line, flushed: a program reads the stream as it comes (print_json's escapes: a
    # name that is not UTF-8, a stdout that does not write UTF-8).
    print_json(data, one_line=True)
    sys.stdout.flush()


class _ChangeLines:
    """The service's lines on stdout (each change, with --json each object), never a write that
    blocks a stop: a stdout nobody reads (a pipe whose reader stopped, a terminal paused with
    Ctrl-S) held the watch in its write, deaf to SIGTERM, SIGINT and SIGHUP (``serve --stop``
    failed). A line waits for its reader in slices, which a stop signal cuts short (the watcher's
    handler raises there: what was not printed is dropped, the index's work is done); the last
    line, after the stop, is printed only where stdout takes it at once."""

    def __init__(self) -> None:
        self.unsent = b""  # the rest of a line a stop cut short: the last words finish it first
        self.lost = False  # stdout took not all of it: the last words went to stderr

    def put(self, write: Callable[[], object]) -> None:
        data = _rendered(write)
        if data is not None:
            self._write(self.unsent + data, wait=True)
            return
        write()  # stdout is no file (the tests' in-process CLI): as it is
        sys.stdout.flush()

    def last(self, write: Callable[[], object]) -> bool:
        """``write()``'s words if stdout takes them now; False (stdout silenced) where it does not."""
        data = _rendered(write)
        if data is None:
            write()
            sys.stdout.flush()
            return True
        if self._write(self.unsent + data, wait=False):
            return True
        self.lost = True
        silence(sys.stdout)
        return False

    def _write(self, data: bytes, *, wait: bool) -> bool:
        fd = sys.stdout.fileno()
        view = memoryview(data)
        self.unsent = data
        try:
            while view:
                if not select.select([], [fd], [], _SLICE_S if wait else 0)[1]:
                    if not wait:
                        return False
                    continue
                view = view[os.write(fd, view[:_PIECE]):]
                self.unsent = bytes(view)
        except BrokenPipeError:  # the reader went away: as GuardedStdout says it
            raise
        except OSError as exc:
            silence(sys.stdout)
            raise OutputLost(exc) from None
        return True


def _rendered(write: Callable[[], object]) -> bytes | None:
    """The bytes ``write()`` puts on stdout (its encoding, its escapes), or None where stdout is no file."""
    stream = sys.stdout
    try:
        stream.flush()
        stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None
    held = io.BytesIO()
    wrapper = io.TextIOWrapper(held, encoding=stream.encoding, errors=stream.errors, write_through=True)
    sys.stdout = wrapper
    try:
        write()
        wrapper.flush()
    finally:
        sys.stdout = stream
        wrapper.detach()
    return held.getvalue()


def _said_last(text: str) -> None:
    """``text`` on stderr where it takes it now: after a stop (its signals ignored to the end) a
    terminal paused with Ctrl-S held the process at its last line, and ``serve --stop`` failed."""
    try:
        fd = sys.stderr.fileno()
    except (OSError, ValueError, AttributeError):
        fd = None
    if fd is not None and not select.select([], [fd], [], 0)[1]:
        silence(sys.stderr)
        return
    say(text)


def _stop(settings: Settings, json_out: bool) -> int:
    from ...memory.launch import stop_service

    pid = stop_service(settings)
    if json_out:
        _emit_json({"stopped": pid is not None, "pid": pid})
    elif pid is None:
        say(f"no memory service runs for {printable(str(settings.workspace))}\n")
    else:
        say(f"stopped the memory service (pid {pid})\n")
    return 0


def run_serve(settings: Settings, *, live_sync: bool = True, poll: bool = False, http: str | None = None,
              json_out: bool = False, watch_lines: bool = False) -> int:
    """Run the service until SIGINT/SIGTERM/SIGHUP. ``watch_lines``: print what ``watch`` prints."""
    if settings.session is not None:  # (taken and ignored: each caller's reads are its own session's)
        raise UsageError("--session names the session of one command or of a stdio MCP server; a service (serve, "
                         "watch, mcp --http) answers every session by its own name (an HTTP client's is its "
                         "mcp-session-id), so it takes none: leave --session out")
    require("search")
    faults.reach("serve:starting")  # (its stop signals noted by the CLI, its own handlers not yet in place)
    from ...serve.service import Service
    from ...service_files import token_path
    from ..log_lines import log_lines

    lines = _ChangeLines()

    def on_change(change) -> None:
        if json_out:
            lines.put(lambda: print_json(to_json(change), one_line=True))
        else:
            lines.put(lambda: sys.stdout.write(change.line() + "\n"))

    def on_notice(message: str) -> None:
        warn(one_line(message))  # a watched name it quotes may hold a newline

    started: dict = {}  # with --json: the service's half of the started object, until the watch's

    def on_start(info) -> None:
        if json_out:
            started.update(to_json(info))
            if not info.live_sync:
                lines.put(lambda: print_json(started, one_line=True))
            return
        if not watch_lines:
            line = f"serving {printable(str(info.workspace))} for agent {info.agent} on {printable(str(info.socket))} (pid {info.pid}"
            line += ", live sync on)" if info.live_sync else ", live sync off)"
            say(line + "\n")
        if info.http:
            say(f"MCP over HTTP at {info.http} (bearer token in {printable(str(token_path(settings)))})\n")

    def on_watch_start(info) -> None:
        if json_out:
            lines.put(lambda: print_json({**started, **to_json(info)}, one_line=True))
            return
        say(
            f"watching {len(info.folders)} folder(s) of {printable(str(info.workspace))} for agent {info.agent} "
            f"({info.mode}, {info.files} files indexed); Ctrl-C stops\n"
        )

    with log_lines():
        summary = Service(settings, live_sync=live_sync, polling=poll, http=http, on_change=on_change,
                          on_notice=on_notice, on_start=on_start, on_watch_start=on_watch_start).run()
    # A service that stopped because its socket or its workspace went did not stop as asked: status 1,
    # so a supervisor that restarts a failed service (systemd's Restart=on-failure) starts a new one.
    status = 1 if summary.unasked else 0
    if lines.unsent and not json_out:
        lines.last(lambda: None)  # the rest of a change line a stop cut short, where stdout takes it
    if json_out and lines.last(lambda: print_json(to_json(summary), one_line=True)):
        return status
    if watch_lines:
        said = f"stopped ({summary.stopped_by}): {summary.changes} change(s) applied in {summary.batches} sync(s)"
    else:
        said = f"stopped ({summary.stopped_by}): {summary.requests} request(s) answered, {summary.changes} change(s) applied"
    if lines.lost:  # (with --json: its stop object was one of them)
        said += "; stdout took no more lines (nobody read them): the rest were not printed"
    _said_last(said + "\n")
    return status


def run_serve_command(settings: Settings, no_watch: bool, poll: bool, http: str | None, json_out: bool,
                      stop: bool = False) -> int:
    if stop:
        return _stop(settings, json_out)
    if not no_watch:
        require("watch")
    if http is not None:
        require("mcp")
    return run_serve(settings, live_sync=not no_watch, poll=poll, http=http, json_out=json_out)
