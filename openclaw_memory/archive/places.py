"""Where a memory file sits, as an archive names it: a root (``workspace``, or ``extra/N``: the N-th
configured extra path) and a path below it; and back, in the importing workspace.

A file of an extra path is placed in the importing workspace's extra path that matches the
exported one (:func:`match_roots`): the same absolute path, or else the one of the same folder
name (several of one name paired in the order each configuration lists them, where as many are
here); never by position otherwise (two extra paths configured in the other order put a private
note in a shared folder). A root that matches none, or more than one, refuses the import, giving
the command that imports it at the archive's own path. A path below a root is the file's as the product resolves it
(:func:`~openclaw_memory.files.read.resolve_memory_path`): never outside the root, never a symlink
on the way, only a memory path.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING

from ..errors import PathRefused
from ..files.paths import is_memory_path
from ..files.read import ResolvedPath
from ..history.guard import refuse_dream_twin
from ..history.placing import resolve_writable
from .manifest import WORKSPACE, Root

if TYPE_CHECKING:
    from ..settings import Settings


def roots_of(settings: Settings) -> tuple[tuple[str, str], ...]:
    """The roots an archive of ``settings``'s memory names: (name, absolute path)."""
    return ((WORKSPACE, str(settings.workspace)),
            *((f"extra/{n}", str(extra)) for n, extra in enumerate(settings.extra_paths)))


def place_of(settings: Settings, abs_path: str) -> tuple[str, str] | None:
    """(root, path below it) of a memory file or a path with a history; None when under no root
    (an extra path configured once and no more)."""
    workspace = str(settings.workspace)
    rel = os.path.relpath(abs_path, workspace)
    if rel != os.curdir and not rel.startswith(os.pardir) and is_memory_path(rel):
        return WORKSPACE, rel.replace(os.sep, "/")
    for n, extra in enumerate(settings.extra_paths):
        if abs_path == extra:
            return f"extra/{n}", ""
        rel = os.path.relpath(abs_path, extra)
        if not rel.startswith(os.pardir) and rel != os.curdir:
            return f"extra/{n}", rel.replace(os.sep, "/")
    return None


def match_roots(settings: Settings, roots: Iterable[Root], needed: Collection[str], again: str,
                ) -> tuple[dict[str, str], tuple[str, ...]]:
    """Each of the archive's roots -> this workspace's folder for it, and the notes to give: the
    workspace for the workspace; for an extra path, this workspace's extra path of the same absolute
    path, or else (of those no other root took by its path) the one of the same folder name; where
    several of the archive's share a folder name and as many here do (``~/notes`` and
    ``~/work/notes``, exported, and two ``notes`` here), they are paired in the order each
    configuration lists them, said in a note. PathRefused (one line naming both lists and the
    command that imports it: ``again``, with an extra path configured at the archive's own path for
    each root in question; nothing written) when a root ``needed`` (one the archive has files in)
    matches none, or those of its name here are not as many, or two match one; a root that is not
    needed and matches none is left out (its histories are skipped)."""
    here = [os.path.normpath(str(e)) for e in settings.extra_paths]
    extras = [r for r in roots if r.name != WORKSPACE]
    matched: dict[str, str] = {WORKSPACE: str(settings.workspace)}
    exact = {r.name: os.path.normpath(r.path) for r in extras if os.path.normpath(r.path) in here}
    matched.update(exact)
    taken = set(exact.values())
    groups: dict[str, list[Root]] = {}
    for root in extras:
        if root.name not in exact:
            groups.setdefault(os.path.basename(os.path.normpath(root.path)), []).append(root)
    notes: list[str] = []
    refusal: tuple[Root, str] | None = None
    unmatched: list[Root] = []  # needed roots that match nothing: each configured at its own path in the advice
    for name, theirs in groups.items():
        ours = list(dict.fromkeys(e for e in here if e not in taken and name and os.path.basename(e) == name))
        if len(ours) == len(theirs):
            matched.update((root.name, place) for root, place in zip(theirs, ours, strict=True))
            taken.update(ours)
            if len(ours) > 1:
                notes.append(f"the archive's extra paths {', '.join(r.path for r in theirs)} and this workspace's "
                             f"{', '.join(ours)} share the folder name {name}: paired in the order each configuration "
                             f"lists them ({'; '.join(f'{r.path} -> {p}' for r, p in zip(theirs, ours, strict=True))})")
            continue
        wanted = [root for root in theirs if root.name in needed]
        if not wanted:
            continue
        unmatched += wanted
        if refusal is None:
            if not ours:
                refusal = (wanted[0], "matches none of this workspace's by its path or its folder name")
            elif len(theirs) == 1:
                refusal = (wanted[0], f"matches {len(ours)} of this workspace's by its folder name ({name})")
            else:
                refusal = (wanted[0], f"and {len(theirs) - 1} other(s) of the archive's share their folder name ({name}) "
                                      f"with {len(ours)} of this workspace's")
    if refusal is not None:
        _refuse_roots(settings, *refusal, extras, here, unmatched, again)
    by_place: dict[str, Root] = {}
    for root in extras:
        place = matched.get(root.name)
        if place is not None and place in by_place:
            _refuse_roots(settings, root, f"and {by_place[place].path} both match {place}", extras, here,
                          [root], again)
        if place is not None:
            by_place[place] = root
    return matched, tuple(notes)


def _refuse_roots(settings: Settings, root: Root, why: str, extras: list[Root], here: list[str], unmatched: list[Root],
                  again: str) -> None:
    from ..settings import command_line

    paths = [shlex.quote(r.path) for r in unmatched]
    command = " ".join([f"mkdir -p {' '.join(paths)} &&", command_line(settings), *(f"--extra {p}" for p in paths), again])
    raise PathRefused(
        f"refused: the archive's extra path {root.path} {why} (the archive's extra paths: "
        f"{', '.join(r.path for r in extras)}; this workspace's: {', '.join(here) or 'none'}); its files go to "
        "the extra path here of the same path, or else of the same folder name (those of one name paired in the "
        "order each configuration lists them, where as many are here), never by position otherwise: configure one "
        "(--extra, or extra_paths in openclaw-memory.toml), or import them at the archive's own path: "
        f"`{command}`; nothing was written")


class NoPlaceHere(PathRefused):
    """:func:`resolve_place`'s refusal; ``why``: its reason alone, which an import that leaves out
    a history for it says (a history of ``AGENTS.md`` was "not imported: a file of that name is
    here, or its extra path is not configured", where neither was true)."""

    def __init__(self, message: str, why: str):
        self.why = why
        super().__init__(message)


def resolve_place(settings: Settings, roots: dict[str, str], root: str, path: str) -> ResolvedPath:
    """The importing workspace's memory file for (root, path), ``roots`` being what
    :func:`match_roots` matched; NoPlaceHere (this workspace's configuration, not the archive, is
    at fault) when the root matched none or the path is not a memory path here (a symlink on the
    way, a file where a folder should be, a name of the dream diary a write refuses)."""
    workspace = str(settings.workspace)
    base = roots.get(root)
    if base is None:
        why = f"the archive's {root} matches no extra path configured here"
        raise NoPlaceHere(f"refused: {why}; nothing was written", why)
    wanted = os.path.normpath(os.path.join(base, *path.split("/"))) if path else base
    try:
        resolved = resolve_writable(wanted, workspace, settings.extra_paths)
        refuse_dream_twin(resolved, workspace)  # as a write: `Dreams.md`, or `dreams.md` beside `DREAMS.md`
    except PathRefused as exc:
        raise NoPlaceHere(f"refused: {path or base} cannot be imported here ({exc.message}); nothing was written",
                          exc.message.removeprefix("refused: ")) from None
    if resolved.abs_path != wanted or (root == WORKSPACE) != resolved.in_workspace:
        raise NoPlaceHere(f"refused: {path or base} would not land in its own root here; nothing was written",
                          "it would not land in its own root here")
    return resolved
