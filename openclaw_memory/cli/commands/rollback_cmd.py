"""``rollback --to SNAPSHOT|TIME``: every memory file back as it was then (``--dry-run``: each file's fate first)."""

from __future__ import annotations

import shlex
from contextlib import closing
from typing import TYPE_CHECKING

from ...memory import open_memory
from ...settings import command_line
from ..output import printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings

_SAID = {"rewrite": "rewrite", "archive": "archive", "bring-back": "bring back", "unchanged": "unchanged"}


def run_rollback(settings: Settings, to: str, dry_run: bool, force: bool, update_index: bool, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        result = memory.restore_all(to, dry_run=dry_run, force=force, update_index=update_index)
    if result.index is not None and result.index.failed:
        warn(result.index.reason or "the index was not updated")
    if reported(result, json_out):
        return 0
    for f in result.files:
        marks = "  (not read as it is now: --force)" if f.unread and result.dry_run else ""
        if f.read_only:  # a dry run's refuses; a rollback's was made so while it ran
            marks += "  (read-only: refuses the rollback until `chmod u+w`)" if result.dry_run else "  (made read-only meanwhile: left as it is)"
        marks += "  (changed meanwhile: left as it is)" if f.changed else ""
        marks += "  (held open for writing: left as it is)" if f.held_open else ""
        print(f"{_SAID.get(f.fate, f.fate):<11} {printable(f.path)}{marks}")
    moved = [f for f in result.files
             if f.fate != "unchanged" and not f.changed and not f.held_open and not (f.read_only and not result.dry_run)]
    if result.dry_run:
        print(f"dry run: {len(moved)} of {len(result.files)} memory files would change to be as at {result.moment}; nothing was changed.")
    else:
        assert result.undo is not None  # a rollback made names the moment that undoes it (a dry run none)
        print(f"{len(moved)} of {len(result.files)} memory files are back as at {result.moment}; what they held is in the "
              f"history. To undo: {command_line(settings)} rollback --to {shlex.quote(result.undo)}")
    return 0
