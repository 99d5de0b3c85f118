"""Check and repair: a move or removal of a memory file that was interrupted (``mv`` or ``rm`` killed),
and an ``mv --update-links`` killed before its last link rewrite (:mod:`openclaw_memory.links.pending`).

The intent is in the state database (:mod:`openclaw_memory.history.fileops`); the repair finishes
what got past its deciding step (the rename, the unlink) and undoes the rest
(:func:`openclaw_memory.history.moves.recover_pending`), under the write lock every mover holds.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import MemoryToolError, StateDamaged
from ..fsutil.lock import lock_holder
from ..history.fileops import IMPORT_OP, LINKS_STEP, UnreadableIntent, describe, read_intent
from ..history.store import HistoryStore
from ..settings import Settings
from ..types import RepairStatus
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
    if op.op == IMPORT_OP:
        message = (f"An interrupted {describe(op)}: each file is as it was or as the archive has it, and what it "
                   f"replaced is in the history.\n{FIX_HINT}")
    elif op.step == LINKS_STEP:
        from ..links.pending import waiting_links  # the moves and links modules: only when one was interrupted

        message = (f"An interrupted {describe(op)}: links in up to {waiting_links(op)} file(s) may still name "
                   f"{op.display}.\nEach rewrite is guarded: a note edited since is left as it is.\n{FIX_HINT}")
    else:
        message = (f"An interrupted {describe(op)}.\nEvery byte is still reachable: the file is at one of its paths, "
                   f"and version {op.version[:12]} is in the history.\n{FIX_HINT}")
    return [Finding(ID, "error", message, True, paths, FIX_HINT)]


def finish_journaled(settings: Settings, finding: Finding, recover: Callable[[], tuple[RepairStatus, str] | None],
                     what: str) -> Repair:
    """Finish (or undo) a journaled operation a kill interrupted, under the write lock every writer
    holds: ``recover()`` says how it ended, None when another run finished it first."""
    try:
        with HistoryStore.for_settings(settings).write_lock():
            done = recover()
    except MemoryToolError as exc:
        return Repair(finding.id, "finish", "failed", f"{exc.message}; the record is kept, every byte is still reachable",
                      finding.paths)
    except OSError as exc:
        return Repair(finding.id, "finish", "failed",
                      f"{exc.strerror or exc}; the record is kept, every byte is still reachable", finding.paths)
    if done is None:
        return Repair(finding.id, "finish", "completed", f"the interrupted {what} was already finished by another run",
                      finding.paths)
    return Repair(finding.id, "finish", done[0], done[1], finding.paths)


def _touched(settings: Settings) -> tuple[list[str], list[str]]:
    """The workspace paths finishing or undoing the interrupted move or removal may change (its file's
    names, the notes whose links it rewrites), and among them the private names its file was taken
    aside to, which it leaves empty either way (``.NAME.aside-<hex>``). An import's are not known here."""
    import os

    from ..fsutil.move import asides_of

    try:
        op = read_intent(settings.data_dir)
    except (UnreadableIntent, StateDamaged):
        return [], []
    if op is None or op.op == IMPORT_OP:
        return [], []
    from .aftercare import inside_workspace

    workspace = str(settings.workspace)
    names = [p for p in (op.path, op.target) if p]
    asides = []
    for path in names:
        try:
            asides += [os.path.join(os.path.dirname(path), a) for a in asides_of(os.listdir(os.path.dirname(path)), os.path.basename(path))]
        except OSError:
            continue  # its folder is gone: nothing of it to record
    linking = [b[0] for b in op.links or () if isinstance(b, list) and b and isinstance(b[0], str)]
    return inside_workspace(workspace, names + asides + linking), inside_workspace(workspace, asides)


def finish_move(settings: Settings, finding: Finding) -> Repair:
    from ..links.pending import finish_pending_rewrites
    from .aftercare import held_now, refresh_watchdog

    # An import is never undone: one that could not be run again is dropped unfinished ("failed": the
    # detail says what was kept where, and the command that finishes it), nothing rolled back.
    not_done: RepairStatus = "failed" if finding.message.startswith("An interrupted import") else "rolled-back"

    def recover() -> tuple[RepairStatus, str] | None:
        # What the repair changes is its own, not a change behind the agent's back: the watchdog's
        # baseline takes it, unless one of those paths had changed since the snapshot before it began.
        touched, asides = _touched(settings)
        started = held_now(settings, touched)
        done = finish_pending_rewrites(settings)  # the move or removal, then a move's link rewrites
        if done is None:
            return None
        note = refresh_watchdog(settings, touched, started, dict.fromkeys(asides)) if touched else ""
        return ("completed" if done[0] else not_done, done[1] + note)

    return finish_journaled(settings, finding, recover, "move or removal")


CHECKS = [check_interrupted_move]
REPAIRS = {ID: RepairSpec(action="finish", describe=lambda f: "run the interrupted import again" if f.message.startswith(
    "An interrupted import") else "finish or undo the interrupted move or removal",
                          apply=finish_move)}
