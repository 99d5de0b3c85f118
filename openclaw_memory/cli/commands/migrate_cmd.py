"""``migrate``: copy the workspace's index between the embedded engine and a Qdrant server."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...memory import open_memory
from ..output import draws, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def _progress(stack):
    """A rich bar per collection on a terminal that draws one (not TERM=dumb); nothing otherwise (the summary follows)."""
    if not draws(sys.stderr):
        return None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from ..output import stderr_console

    bar = stack.enter_context(
        Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=stderr_console(), transient=True)
    )
    tasks: dict[str, int] = {}

    def report(name: str, done: int, total: int) -> None:
        if name not in tasks:
            tasks[name] = bar.add_task(f"copying {name}", total=total)
        bar.update(tasks[name], completed=done, total=total)

    return report


def run_migrate(settings: Settings, to: str, source: str | None, json_out: bool) -> int:
    from contextlib import ExitStack

    with ExitStack() as stack:
        report = None if json_out else _progress(stack)
        result = open_memory(settings, notice=warn, shard_idle_s=0).migrate(to, source, progress=report)
    if reported(result, json_out, result.notes):
        return 0
    for c in result.collections:
        how = "already copied" if c.resumed else f"{c.copied} copied, {c.already} already there, {c.removed} removed"
        print(f"{c.name}: {c.points} points ({how}), verified")
    print(f"Migrated {sum(c.points for c in result.collections)} points from {result.source} to {result.target} in {result.seconds:.2f} s.")
    if result.target_backend == "edge":
        print("The index now answers from the embedded engine once no Qdrant URL is set (--qdrant-url, OPENCLAW_MEMORY_QDRANT_URL, [index] backend).")
    else:
        print(f'To use it: export OPENCLAW_MEMORY_QDRANT_URL={to}, or set [index] backend = "qdrant" and url = "{to}" in openclaw-memory.toml.')
    return 0
