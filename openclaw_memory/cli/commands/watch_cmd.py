"""``openclaw-memory watch``: the workspace's service with live sync on, printing each applied change."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...extras import require
from .serve_cmd import run_serve

if TYPE_CHECKING:
    from ...settings import Settings


def run_watch(settings: Settings, json_out: bool, poll: bool) -> int:
    require("watch")
    return run_serve(settings, live_sync=True, poll=poll, json_out=json_out, watch_lines=True)
