"""``openclaw-memory files``: list the memory files."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import suggested
from ...memory import open_memory
from ...settings import command_line
from ..output import printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def run_files(settings: Settings, json_out: bool) -> int:
    result = open_memory(settings, notice=warn, shard_idle_s=0).files()
    if reported(result, json_out):
        return 0
    if not result.files:
        print(f"No memory files in {printable(str(result.workspace))} (agent {printable(result.agent)}).")
    for f in result.files:
        print(f"{printable(f.path)}\t{f.source}\t{f.kind}\t{f.size}")
    program = command_line(settings)
    for s in result.skipped:  # a reason naming a command (doctor --fix) names it with the flags given
        print(f"skipped: {printable(s.path)} ({suggested(s.reason, program)})")
    return 0
