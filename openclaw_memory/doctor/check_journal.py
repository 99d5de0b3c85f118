"""Check: a repair that was interrupted (or is running right now)."""

from __future__ import annotations

from ..errors import StateDamaged
from .journal import CorruptJournal, journal_place, lock_holder, read_journal
from .model import CheckContext, Finding
from .recovery import ID, describe_journal


def check_interrupted_repair(ctx: CheckContext) -> list[Finding]:
    data_dir = ctx.settings.data_dir
    try:
        state = read_journal(data_dir)
    except StateDamaged:
        return []  # the journal is in the state database, whose damage the database check reports
    except CorruptJournal as exc:
        return [Finding(
            ID, "error",
            f"The doctor journal is damaged: {exc}. `openclaw-memory doctor --fix` sets it aside and recovers from "
            "what the files show (an interrupted rename's temporary file gets its name back; a merge already done "
            "is recognised by its marker and never repeated).",
            True, (journal_place(data_dir),),
        )]
    if state is None:
        return _orphaned_renames(ctx)
    paths = tuple(p for p in (state.archive, state.temp) if p)
    holder = lock_holder(data_dir)
    if holder is not None:
        return [Finding(ID, "warning", f"A doctor --fix (pid {holder}) is repairing this workspace right now: {describe_journal(state)}.", False, paths)]
    message = (
        f"An interrupted repair was found: {describe_journal(state)}.\n"
        "Every byte is still reachable (at its original path, in the archive, merged into MEMORY.md"
        + (f", or at {state.temp}" if state.temp else "")
        + ").\n" + FIX_HINT
    )
    return [Finding(ID, "error", message, True, paths, FIX_HINT)]


FIX_HINT = 'Run "openclaw-memory doctor --fix" to complete or roll it back.'


def _orphaned_renames(ctx: CheckContext) -> list[Finding]:
    """A rename's or a move's temporary name holding memory.md with no journal naming it (a new state
    dir, one rebuilt after damage, or a move that kept memory.md there because a new memory.md was
    made meanwhile): nothing loads it, so it is reported from the files alone."""
    from .repair_state import stranded_temps

    try:
        temps = stranded_temps(ctx.workspace)
    except OSError:
        return []
    if not temps or lock_holder(ctx.settings.data_dir) is not None:
        return []
    hint = 'Run "openclaw-memory doctor --fix" to give it its name back.'
    return [Finding(
        ID, "error",
        f"An interrupted repair left the bytes of memory.md at {', '.join(temps)} (a rename's or a move's temporary "
        "name), and no journal says so: nothing loads, indexes or searches it.\n" + hint,
        True, tuple(temps), hint,
    )]

CHECKS = [check_interrupted_repair]
