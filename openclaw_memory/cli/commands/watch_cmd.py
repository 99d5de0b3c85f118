"""``openclaw-memory watch``: the workspace's service with live sync on, printing each applied change."""

from ...extras import require
from .serve_cmd import run_serve


def run_watch(settings, json_out: bool, poll: bool) -> int:
    require("watch")
    return run_serve(settings, live_sync=True, poll=poll, json_out=json_out, watch_lines=True)
