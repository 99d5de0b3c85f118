"""The links a move or a removal made name another note: said, never left silent.

A link names a note by its name or by its path, so when the note leaves that name another may take
its place: ``[[alice]]`` that found ``memory/people/alice.md`` beside it finds
``memory/projects/alice.md`` once that note is moved or removed, and a moved note's own ``[b](b.md)``
finds the ``b.md`` of its new folder. Such a link names a note, so ``links --broken`` does not list
it; the warnings of :func:`shifted_links` name each.

They are worked out after the change, from the links as they are now: each link that may name the
note's old path or its new one (or is the moved note's own) is resolved as it reads now and as it
read before, against the same memory files with the note put back where it was; one that named a
note then (the moved note at its new path counting as the same) and names another now is said.
Only those links are resolved twice, so a move or a removal costs a look at the memory's links,
as ``links`` takes one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..files.read import resolve_memory_path
from .report import link_state, may_name
from .resolve import OK, LinkTarget

if TYPE_CHECKING:
    from ..settings import Settings


def shifted_links(settings: Settings, gone: str, moved_to: str | None = None, *, replaced: bool = False,
                  own_links: bool = True) -> tuple[str, ...]:
    """A warning for each link that named a note before the removal of ``gone`` (or its move to
    ``moved_to``; both as the result shows them) and names another now. ``replaced``: the move
    replaced a file at ``moved_to`` (``--force``); ``own_links``: the moved note's own links are
    looked at too (``--update-links`` rewrote them already)."""
    workspace, extra = str(settings.workspace), settings.extra_paths
    old = resolve_memory_path(gone, workspace, extra).abs_path
    new = resolve_memory_path(moved_to, workspace, extra).abs_path if moved_to is not None else None
    state = link_state(settings)
    wanted = [(f, link) for f, link in state.links()
              if (f.abs_path == new and own_links) or (f.abs_path != new and (
                  may_name(link, old) or (new is not None and may_name(link, new))))]
    if not wanted:
        return ()
    now = state.resolver
    moved = now.targets.get(new) if new is not None else None
    # The memory as it was: the note back at its old path (its text as it is at the new one), and
    # the file the move replaced, if any, at the new path (its text is not known: it is archived).
    then = now.replaced(
        gone=(new,) if new is not None else (),
        added=(LinkTarget(old, gone, moved.inode if moved else 0, moved.text if moved else None),
               *((LinkTarget(new, moved_to, 0, None),) if replaced and new is not None and moved_to is not None else ())))
    what = f"before the move of {gone} to {moved_to}" if moved_to is not None else f"before the removal of {gone}"
    went = f"moved to {moved_to}" if moved_to is not None else "removed"
    said = []
    for f, link in wanted:
        before = then.resolve(link, old if f.abs_path == new else f.abs_path)
        after = now.resolve(link, f.abs_path)
        if before.status != OK or after.status != OK or before.target is None or after.target is None:
            continue  # it named no one note then, or names none now (`links --broken` lists it)
        was = new if before.target.abs_path == old and new is not None else before.target.abs_path
        if after.target.abs_path != was:
            then_named = f"{gone}, {went}" if before.target.abs_path == old else f"{before.target.display} {what}"
            said.append(f"{f.path}:{link.line} {link.text} named {then_named}; it names {after.target.display} now")
    return tuple(said)
