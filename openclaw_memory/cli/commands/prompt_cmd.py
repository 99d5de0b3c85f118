"""``openclaw-memory prompt``: the memory section for an agent's startup prompt."""


import datetime as dt
import sys

from ... import api
from ...errors import UsageError
from ..output import print_json, warn


def run_prompt(settings, date: str | None, peek: bool, json_out: bool) -> int:
    today = None
    if date is not None:
        try:
            today = dt.date.fromisoformat(date)
        except ValueError:
            raise UsageError(f"--date must be a date like 2026-11-30, not {date!r}") from None
    section = api.build_prompt(settings, today=today, consume=not peek)
    for message in section.warnings:
        warn(message)
    for cut in section.truncated:
        warn(f"{cut.path} was cut for the startup prompt ({cut.reason}: kept {cut.kept_chars:,} of {cut.original_chars:,} characters)")
    if json_out:
        print_json(section.to_json())
    else:
        sys.stdout.write(section.text)
    return 0
