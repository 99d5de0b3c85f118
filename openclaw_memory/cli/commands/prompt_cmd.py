"""``openclaw-memory prompt``: the memory section for an agent's startup prompt."""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING

from ...memory import open_memory
from ..output import CLOSED_STREAMS, for_stdout, printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def run_prompt(settings: Settings, today: dt.date | None, consume: bool, json_out: bool) -> int:
    # A pending checkpoint is consumed once the section is out (a full disk, a reader gone, a closed
    # stdout: it stays pending for the next prompt).
    memory = open_memory(settings, notice=warn, shard_idle_s=0)
    section = memory.prompt(today=today, consume=False)
    cuts = [f"{printable(cut.path)} was cut for the startup prompt ({cut.reason}: kept {cut.kept_chars:,} of {cut.original_chars:,} "
            "characters)" for cut in section.truncated]
    from ...settings import timezone_problem

    zone = timezone_problem(settings.prompt.startup.user_timezone)
    empty = []  # exit 0 (nothing is wrong), but not a silent nothing, with --json too (it said nothing there)
    if not section.text.strip():
        days = settings.prompt.startup.daily_memory_days
        empty.append(f"the startup memory section is empty: {printable(str(settings.workspace))} has no MEMORY.md or USER.md "
                     f"with text and no daily note of the last {days} day(s) (memory/YYYY-MM-DD.md)")
    if not reported(section, json_out, [*section.warnings, *cuts, *([zone] if zone else []), *empty]):
        sys.stdout.write(for_stdout(section.text))
    sys.stdout.flush()  # (a failure is raised here, before the news is consumed)
    if consume and "stdout" not in CLOSED_STREAMS and section.checkpoint_upto is not None:
        memory.consume_shown(upto=section.checkpoint_upto)
    return 0
