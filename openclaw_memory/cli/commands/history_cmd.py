"""``history``, ``restore`` and ``state``: versions of memory files and what this agent has seen."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

from ...memory import open_memory
from ...settings import command_line
from ..output import given_path, printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def run_history(settings: Settings, path: str, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, path):
        result = memory.history(path)
    if reported(result, json_out):
        return 0
    if not result.versions:  # (a file there whose sighting was not recorded: the warning said why)
        print(f"{printable(result.path)} has no recorded version." if result.current
              else f"{printable(result.path)} does not exist and has no history.")
    for v in result.versions:
        marks = [m for m, on in (("current", v.current), ("evicted", not v.available)) if on]
        who = f" by {v.agent}" if v.agent else ""
        tail = f"  [{', '.join(marks)}]" if marks else ""
        print(f"{v.version[:12]}  {v.time}  {v.size:>9} B  {v.origin}{who}{tail}")
    return 0


def run_restore(settings: Settings, path: str, version: str | None, last: bool, update_index: bool, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, path):
        result = memory.restore(path, version, last=last, update_index=update_index)
    if result.index is not None and result.index.failed:
        warn(result.index.reason or "the index was not updated")
    if reported(result, json_out):  # the restore's warnings too (a NUL in the version put back)
        return 0
    if not result.changed:
        print(f"{printable(result.path)} is already at version {result.version[:12]}; nothing to restore.")
    else:
        head = f"restored {printable(result.path)} to version {result.version[:12]} ({result.size} bytes)"
        if result.previous:
            print(f"{head}; it was at {result.previous[:12]}, which `{command_line(settings)} restore` can bring back.")
        else:
            print(f"{head}; the file did not exist, so it was recreated.")
    return 0


def run_state(settings: Settings, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        report = memory.state()
    if reported(report, json_out):
        return 0
    if not report.files:
        print(f"No memory files in {printable(str(report.workspace))} (agent {printable(report.agent)}).")
    for f in report.files:
        gone = "  (deleted)" if f.version is None else ""
        if f.seen_lines == ():
            gone = "  (no whole line read: read it to replace it)"
        elif f.seen_lines is not None:
            first, last = f.seen_lines
            gone = f"  (only lines {first}-{last if last is not None else 'end'} read: read the rest to replace it)"
        print(f"{f.state:<18} {printable(f.path)}{gone}")
    return 0
