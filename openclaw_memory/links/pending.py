"""``mv --update-links`` as one journaled operation: killed between its move and its last rewrite,
it is finished, links and all.

The rewrites follow the move, each its own guarded write. They used to be outside the move's
intent, so a process killed between them left the note moved and the links of the notes not yet
rewritten naming a path that held nothing, which neither ``doctor --fix`` nor the next ``mv``
finished. Now the backlinks (each with the content hash its links were read from) ride in the
move's intent (:class:`~openclaw_memory.history.fileops.FileOp` ``links``), committed before the
rename; the transaction that records the move moves the intent on to
:data:`~openclaw_memory.history.fileops.LINKS_STEP` instead of dropping it, and it is dropped after
the last rewrite. The write lock is held from the reading of the links to that last rewrite, so an
intent found while nobody holds it is one a killed process left.

:func:`finish_pending_rewrites` (``doctor --fix``, the next ``mv``, ``rm`` or ``rollback``) lets the
move's own recovery finish or undo the move first: undone, the intent goes with it (no link is
rewritten before the move); finished, the rewrites run from the intent, each still guarded by the
version its links were read from, so a note the killed run rewrote already, or someone edited
since, is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import MemoryToolError, finished_first, shell_word
from ..files.read import resolve_memory_path
from ..history.fileops import IMPORT_OP, LINKS_STEP, FileOp, UnreadableIntent, clear_intent, read_intent
from ..history.moves import finish_pending_op
from ..history.store import HistoryStore
from .parse import ParsedLink
from .rewrite import WRITE_FAILED, Backlink, Rewritten, links_before, rewrite_backlinks
from .shifted import shifted_links

if TYPE_CHECKING:
    from ..history.moves import MoveResult
    from ..settings import Settings


def move(settings: Settings, source: str, destination: str, update_links: bool,
         move_file: Callable[[list | None], MoveResult]) -> MoveResult:
    """``move_file(links)`` (the move of ``source`` to ``destination``, the backlinks to rewrite in its
    intent), then with ``update_links`` the links that named the note rewritten; an interrupted
    move's rewrites are finished first, whichever move this is."""
    store = HistoryStore.for_settings(settings)
    with store.write_lock():  # one mover from the reading of the links to the last rewrite
        earlier = finish_pending_rewrites(settings)
        with finished_first(earlier[1] if earlier else None):
            result, made = _move_and_rewrite(settings, source, destination, move_file) if update_links \
                else (move_file(None), ())
    # A link that named a note and names another now (the old name found another note, or the new
    # one took a name a link found elsewhere) is said: `links --broken` cannot list it. Worked out
    # with the lock let go (a look at every link: other writers need not wait on it): a change made
    # meanwhile only makes the warning describe the memory a moment later (it writes no memory file).
    shifted = moved_links_said(settings, result.source, result.path, replaced=result.replaced is not None,
                               own_links=not update_links, rewritten=made)
    warnings = (*((earlier[1],) if earlier else ()), *result.warnings, *shifted)
    return replace(result, warnings=warnings) if warnings != result.warnings else result


def moved_links_said(settings: Settings, source: str, destination: str | None, *, replaced: bool = False,
                     own_links: bool = True, rewritten: Iterable[Rewritten] = ()) -> tuple[str, ...]:
    """:func:`~.shifted.shifted_links` after the move (or, ``destination`` None, the removal) of
    ``source``, made already: one that cannot be worked out is said so, never a failure of it."""
    try:
        return shifted_links(settings, source, destination, replaced=replaced, own_links=own_links,
                             rewritten=rewritten)
    except MemoryToolError as exc:
        done = f"moved {source} to {destination}" if destination is not None else f"removed {source}"
        return (f"{done}, but which links name another note now could not be worked out ({exc.message}): "
                "`openclaw-memory links` lists what each names",)


def _move_and_rewrite(settings: Settings, source: str, destination: str,
                      move_file: Callable[[list | None], MoveResult]) -> tuple[MoveResult, tuple[Rewritten, ...]]:
    """The move and its rewrites: the result, and the links the rewrites made."""
    workspace, extra = str(settings.workspace), settings.extra_paths
    src = resolve_memory_path(source, workspace, extra).abs_path
    # Read before the move: afterwards the links name nothing, so nothing finds them.
    backlinks, unreadable = links_before(settings, src)
    result = move_file([_dump(b) for b in backlinks] or None)
    # A note whose links could not be read may hold one naming the moved note: said, as `links` says it.
    unread = tuple(f"cannot read {path}: its links are not listed, so none was rewritten (one naming {result.source} "
                   "names nothing now)" for path in unreadable)
    op = read_intent(settings.data_dir)
    if op is None or op.step != LINKS_STEP:
        # none to rewrite, or the move is not recorded yet (it said so): doctor --fix goes on
        return (replace(result, warnings=(*result.warnings, *unread)) if unread else result), ()
    updated, left, made = rewrite_backlinks(settings, backlinks, src, resolve_memory_path(result.path, workspace, extra).abs_path)
    clear_intent(settings.data_dir)
    failed = [link for link in left if link.failed]
    if failed:
        files = len({link.source for link in failed})
        unread += (f"moved {result.source} to {result.path}, but the rewrite of {len(failed)} link(s) in {files} file(s) "
                   f"failed ({failed[0].why.removeprefix(WRITE_FAILED)}): they still name {result.source}, which holds "
                   "nothing now (`openclaw-memory links --broken` lists them). To rewrite them once the cause is gone: "
                   "move the note back without --update-links (`openclaw-memory mv "
                   f"{shell_word(result.path)} {shell_word(result.source)}`: they name it again), then move it again "
                   "with --update-links",)
    return replace(result, links_updated=updated, links_not_updated=left, warnings=(*result.warnings, *unread)), made


def finish_pending_rewrites(settings: Settings) -> tuple[bool, str] | None:
    """Finish or undo the move or removal a killed process left, then the moved note's link rewrites,
    or run a killed import again (the caller holds the write lock): (finished, what was done), None
    when nothing was left."""
    try:
        op = read_intent(settings.data_dir)
    except UnreadableIntent:
        op = None  # the move's own recovery drops it
    if op is not None and op.op == IMPORT_OP:
        from ..archive.importer import finish_import  # tarfile, bz2, lzma: not on every doctor's start

        return finish_import(settings, op)
    moved = None
    if op is None or op.step != LINKS_STEP:
        moved = finish_pending_op(settings)  # finished, a move with links is at LINKS_STEP now
        op = read_intent(settings.data_dir)
        if op is None or op.step != LINKS_STEP:
            return moved
    first = f"{moved[1]}; " if moved else ""
    try:
        backlinks = [_load(b) for b in op.links or ()]
    except (ValueError, TypeError):
        clear_intent(settings.data_dir)  # nothing in it can be acted on: the move is done, no byte is lost
        return False, (f"{first}the unreadable link rewrites of the move of {op.display} to {op.target_display} were "
                       "dropped (`openclaw-memory links --broken` lists the links naming nothing)")
    assert op.target is not None
    updated, left, _ = rewrite_backlinks(settings.as_recorded(op.agent, op.session), backlinks, op.path, op.target)
    clear_intent(settings.data_dir)
    kept = f"; {len(left)} link(s) left as they are (`openclaw-memory links --broken` lists those naming nothing)" if left else ""
    return True, (f"{first}finished the link rewrites of the interrupted move of {op.display} to {op.target_display}: "
                  f"{len(updated)} file(s) rewritten now (a file rewritten before the kill, or edited since, is "
                  f"left as it is){kept}")


def waiting_links(op: FileOp) -> int:
    """How many files an interrupted move still has links to rewrite in, at most."""
    links = op.links if isinstance(op.links, list) else []  # a damaged record is the repair's to drop
    return len({str(b[0]) for b in links if isinstance(b, list) and b})


def _dump(b: Backlink) -> list:
    return [b.source, list(b.link), b.version, b.ambiguous, b.names]


def _load(data: list) -> Backlink:
    source, link, version, ambiguous, names = data
    line, form, target, fragment, text = link
    if not all(isinstance(v, str) for v in (source, version, ambiguous, names, form, target, text)) or \
            not isinstance(line, int) or not isinstance(fragment, (str, type(None))):
        raise ValueError(f"not a backlink: {data!r:.200}")
    return Backlink(source, ParsedLink(line, form, target, fragment, text), version, ambiguous, names)
