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
as ``links`` takes one: which links may name the two paths is asked once for each distinct target
a link gives, and no resolution builds the words of a link's problem (a broken link's look-alike
is a search of every file's name) since only whether it names a note, and which, is compared.

A link ``mv --update-links`` rewrote is read as it was before the rewrite: it named the moved note
there, and its new text may have found another note (``[[memory/people/notes/todo]]``, written to
name the note moved there, found a note of an extra path whose path ends so).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..files.read import resolve_memory_path
from .report import given_name, link_state, names_of
from .resolve import OK, LinkTarget

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings
    from .parse import ParsedLink
    from .report import LinkState
    from .rewrite import Rewritten


def shifted_links(settings: Settings, gone: str, moved_to: str | None = None, *, replaced: bool = False,
                  own_links: bool = True, rewritten: Iterable[Rewritten] = ()) -> tuple[str, ...]:
    """A warning for each link that named a note before the removal of ``gone`` (or its move to
    ``moved_to``; both as the result shows them) and names another now. ``replaced``: the move
    replaced a file at ``moved_to`` (``--force``); ``own_links``: the moved note's own links are
    looked at too (``--update-links`` rewrote them already); ``rewritten``: the links its rewrites made."""
    workspace, extra = str(settings.workspace), settings.extra_paths
    old = resolve_memory_path(gone, workspace, extra).abs_path
    new = resolve_memory_path(moved_to, workspace, extra).abs_path if moved_to is not None else None
    state = link_state(settings)
    wanted = _may_have_shifted(state, old, new, own_links)
    if not wanted:
        return ()
    written: dict[tuple[str, int, str], list[ParsedLink]] = {}
    for made in rewritten:
        written.setdefault((made.path, made.line, made.text), []).append(made.was)
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
        # A link the rewrite made is read as it was written before (the same line, its old text).
        earlier = written.get((f.abs_path, link.line, link.text))
        before = then.resolve(earlier.pop() if earlier else link, old if f.abs_path == new else f.abs_path)
        after = now.resolve(link, f.abs_path)
        if before.status != OK or after.status != OK or before.target is None or after.target is None:
            continue  # it named no one note then, or names none now (`links --broken` lists it)
        was = new if before.target.abs_path == old and new is not None else before.target.abs_path
        if after.target.abs_path != was:
            then_named = f"{gone}, {went}" if before.target.abs_path == old else f"{before.target.display} {what}"
            said.append(f"{f.path}:{link.line} {link.text} named {then_named}; it names {after.target.display} now")
    return tuple(said)


def _may_have_shifted(state: LinkState, old: str, new: str | None, own_links: bool) -> list[tuple[MemoryFile, ParsedLink]]:
    """The links that may name ``old`` or ``new`` (or are the moved note's own, with ``own_links``).
    Another note's ``[[#heading]]`` names its own note, before as after. The test is made once for
    each distinct target (links repeat a few names many times), so its cost is a look at each link."""
    names = {*names_of(old), *(names_of(new) if new is not None else ())}
    gives: dict[str, bool] = {}
    out = []
    for f, link in state.links():
        if f.abs_path == new:
            if own_links:
                out.append((f, link))
            continue
        hit = gives.get(link.target)
        if hit is None:
            hit = gives[link.target] = bool(link.target) and given_name(link.target) in names
        if hit:
            out.append((f, link))
    return out
