"""``openclaw-memory serve``: the workspace's warm memory service (``watch`` is the same process)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...errors import UsageError
from ...extras import require
from ...memory import to_json
from ..output import one_line, print_json, printable, say, warn

if TYPE_CHECKING:
    from ...settings import Settings


def _emit_json(data: dict) -> None:
    # One object per line, flushed: a program reads the stream as it comes (print_json's escapes: a
    # name that is not UTF-8, a stdout that does not write UTF-8).
    print_json(data, one_line=True)
    sys.stdout.flush()


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
    from ...serve.service import Service
    from ...service_files import token_path
    from ..log_lines import log_lines

    def on_change(change) -> None:
        if json_out:
            _emit_json(to_json(change))
        else:
            sys.stdout.write(change.line() + "\n")
            sys.stdout.flush()

    def on_notice(message: str) -> None:
        warn(one_line(message))  # a watched name it quotes may hold a newline

    started: dict = {}  # with --json: the service's half of the started object, until the watch's

    def on_start(info) -> None:
        if json_out:
            started.update(to_json(info))
            if not info.live_sync:
                _emit_json(started)
            return
        if not watch_lines:
            line = f"serving {printable(str(info.workspace))} for agent {info.agent} on {printable(str(info.socket))} (pid {info.pid}"
            line += ", live sync on)" if info.live_sync else ", live sync off)"
            say(line + "\n")
        if info.http:
            say(f"MCP over HTTP at {info.http} (bearer token in {printable(str(token_path(settings)))})\n")

    def on_watch_start(info) -> None:
        if json_out:
            _emit_json({**started, **to_json(info)})
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
    if json_out:
        _emit_json(to_json(summary))
        return status
    if watch_lines:
        say(f"stopped ({summary.stopped_by}): {summary.changes} change(s) applied in {summary.batches} sync(s)\n")
    else:
        say(f"stopped ({summary.stopped_by}): {summary.requests} request(s) answered, "
                         f"{summary.changes} change(s) applied\n")
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
