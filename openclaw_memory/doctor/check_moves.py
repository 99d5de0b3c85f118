"""Check and repair: a move or removal of a memory file that was interrupted (``mv`` or ``rm`` killed).

The intent is in the state database (:mod:`openclaw_memory.history.fileops`); the repair finishes
what got past its deciding step (the rename, the unlink) and undoes the rest
(:func:`openclaw_memory.history.moves.recover_pending`), under the write lock every mover holds.
"""

from __future__ import annotations

from ..errors import MemoryToolError, StateDamaged
from ..fsutil.lock import lock_holder
from ..history.fileops import UnreadableIntent, describe, read_intent
from ..history.store import HistoryStore
from ..settings import Settings
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "interrupted-move"
FIX_HINT = 'Run "openclaw-memory doctor --fix" to finish or undo it.'


def check_interrupted_move(ctx: CheckContext) -> list[Finding]:
    settings = ctx.settings
    try:
        op = read_intent(settings.data_dir)
    except StateDamaged:
        return []  # the database check reports it
    except UnreadableIntent as exc:
        return [Finding(ID, "error", f"{exc}.\n{FIX_HINT}", True, (), FIX_HINT)]
    if op is None:
        return []
    paths = tuple(p for p in (op.display, op.target_display) if p)
    holder = lock_holder(HistoryStore.for_settings(settings).write_lock_path)
    if holder is not None:
        return [Finding(ID, "warning", f"A {op.op} is running right now (pid {holder}): {describe(op)}.", False, paths)]
    message = (f"An interrupted {describe(op)}.\nEvery byte is still reachable: the file is at one of its paths, "
               f"and version {op.version[:12]} is in the history.\n{FIX_HINT}")
    return [Finding(ID, "error", message, True, paths, FIX_HINT)]


def finish_move(settings: Settings, finding: Finding) -> Repair:
    from ..history.moves import recover_pending

    try:
        with HistoryStore.for_settings(settings).write_lock():
            done = recover_pending(settings)
    except MemoryToolError as exc:
        return Repair(ID, "finish", "failed", f"{exc.message}; the record is kept, every byte is still reachable", finding.paths)
    except OSError as exc:
        return Repair(ID, "finish", "failed", f"{exc.strerror or exc}; the record is kept, every byte is still reachable",
                      finding.paths)
    if done is None:
        return Repair(ID, "finish", "completed", "the interrupted move or removal was already finished by another run", finding.paths)
    finished, detail = done
    return Repair(ID, "finish", "completed" if finished else "rolled-back", detail, finding.paths)


CHECKS = [check_interrupted_move]
REPAIRS = {ID: RepairSpec(action="finish", describe=lambda f: "finish or undo the interrupted move or removal",
                          apply=finish_move)}
