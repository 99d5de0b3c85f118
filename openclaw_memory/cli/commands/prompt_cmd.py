"""``openclaw-memory prompt``: the memory section for an agent's startup prompt."""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from ...memory import open_memory
from ..output import CLOSED_STREAMS, for_stdout, printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings, StartupContext


def run_prompt(settings: Settings, today: dt.date | None, consume: bool, json_out: bool) -> int:
    # A pending checkpoint is consumed once the section is out (a full disk, a reader gone, a closed
    # stdout: it stays pending for the next prompt).
    memory = open_memory(settings, notice=warn, shard_idle_s=0)
    section = memory.prompt(today=today, consume=False)
    cuts = [f"{printable(cut.path)} was cut for the startup prompt ({cut.reason}: kept {cut.kept_chars:,} of {cut.original_chars:,} "
            "characters)" for cut in section.truncated]
    from ...settings import timezone_problem

    zone = timezone_problem(settings.prompt.startup.user_timezone)
    if zone:
        section = replace(section, warnings=(*section.warnings, zone))
    if not section.text.strip():  # exit 0 (nothing is wrong), but not a silent nothing, with --json too
        section = replace(section, warnings=(
            *section.warnings, f"the startup memory section is empty: {printable(str(settings.workspace))} has no "
                               f"MEMORY.md or USER.md with text and {_no_daily_notes(settings.prompt.startup)}"))
    # The same warnings on stderr and in --json's "warnings" (the cuts are its "truncated").
    if not reported(section, json_out, [*section.warnings, *cuts]):
        sys.stdout.write(for_stdout(section.text))
    sys.stdout.flush()  # (a failure is raised here, before the news is consumed)
    if consume and "stdout" not in CLOSED_STREAMS and section.checkpoint_upto is not None:
        memory.consume_shown(upto=section.checkpoint_upto)
    return 0


def _no_daily_notes(startup: StartupContext) -> str:
    """Why the section has no daily note: the setting that keeps them out of a new session, else none is there."""
    if not startup.enabled:
        return "daily notes are not loaded (agents.defaults.startupContext.enabled is false, as OpenClaw has it)"
    if startup.apply_on and "new" not in startup.apply_on:
        return (f"daily notes are not loaded into a new session (agents.defaults.startupContext.applyOn is "
                f"{json.dumps(list(startup.apply_on))}, without \"new\")")
    return f"no daily note of the last {startup.daily_memory_days} day(s) (memory/YYYY-MM-DD.md)"
