"""Check and repair: a rollback of the memory files that was interrupted (``rollback`` killed).

The intent, naming every step, is in the state database (:mod:`openclaw_memory.rollback.journal`);
the repair runs the steps again (:func:`openclaw_memory.rollback.apply.recover_pending`): a file
already done is left, one still as the rollback found it is done, one changed since is left as it is
and named. Under the write lock every writer of a memory file holds.
"""

from __future__ import annotations

from ..errors import StateDamaged
from ..fsutil.lock import lock_holder
from ..history.store import HistoryStore
from ..rollback.journal import UnreadableRollback, describe, read_intent
from ..settings import Settings
from ..types import RepairStatus
from .check_moves import finish_journaled
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "interrupted-rollback"
FIX_HINT = 'Run "openclaw-memory doctor --fix" (or the next "openclaw-memory rollback") to finish it.'


def check_interrupted_rollback(ctx: CheckContext) -> list[Finding]:
    settings = ctx.settings
    try:
        intent = read_intent(settings.data_dir)
    except StateDamaged:
        return []  # the database check reports it
    except UnreadableRollback as exc:
        return [Finding(ID, "error", f"{exc}.\n{FIX_HINT}", True, (), FIX_HINT)]
    if intent is None:
        return []
    paths = tuple(s.display for s in intent.steps)
    holder = lock_holder(HistoryStore.for_settings(settings).write_lock_path)
    if holder is not None:
        return [Finding(ID, "warning", f"A rollback is running right now (pid {holder}): {describe(intent)}.", False, paths)]
    message = (f"An interrupted {describe(intent)}.\nEvery byte is still reachable: each file holds what it held or "
               f"what the rollback puts there, and both versions are in the history.\n{FIX_HINT}")
    return [Finding(ID, "error", message, True, paths, FIX_HINT)]


def finish_rollback(settings: Settings, finding: Finding) -> Repair:
    from ..rollback.apply import recover_pending

    def recover() -> tuple[RepairStatus, str] | None:
        done = recover_pending(settings)
        return None if done is None else ("completed", done)  # a rollback is always finished, never undone

    return finish_journaled(settings, finding, recover, "rollback")


CHECKS = [check_interrupted_rollback]
REPAIRS = {ID: RepairSpec(action="finish", describe=lambda f: "finish the interrupted rollback", apply=finish_rollback)}
