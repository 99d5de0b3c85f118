"""``openclaw-memory files``: list the memory files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...memory import open_memory
from ...settings import command_line
from ..output import printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def run_files(settings: Settings, json_out: bool) -> int:
    # A command a skip reason names (doctor --fix) acts on this workspace run as printed, JSON too.
    result = open_memory(settings, notice=warn, shard_idle_s=0).files().suggesting(command_line(settings))
    if reported(result, json_out):
        return 0
    if not result.files:
        print(f"No memory files in {printable(str(result.workspace))} (agent {printable(result.agent)}).")
    for f in result.files:
        print(f"{printable(f.path)}\t{f.source}\t{f.kind}\t{f.size}")
    for s in result.skipped:
        print(f"skipped: {printable(s.path)} ({s.reason})")
    return 0
