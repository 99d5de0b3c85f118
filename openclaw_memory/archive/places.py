"""Where a memory file sits, as an archive names it: a root (``workspace``, or ``extra/N``: the N-th
configured extra path) and a path below it; and back, in the importing workspace.

A file of an extra path is placed in the importing workspace's extra path that matches the
exported one (:func:`match_roots`): the same absolute path, or else the one of the same folder
name; never by position (two extra paths configured in the other order put a private note in a
shared folder). A root that matches none, or more than one, refuses the import. A path below a root is the file's as the product resolves it
(:func:`~openclaw_memory.files.read.resolve_memory_path`): never outside the root, never a symlink
on the way, only a memory path.
"""

from __future__ import annotations

import os
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


def match_roots(settings: Settings, roots: Iterable[Root], needed: Collection[str]) -> dict[str, str]:
    """Each of the archive's roots -> this workspace's folder for it: the workspace for the
    workspace; for an extra path, this workspace's extra path of the same absolute path, or else the
    one (of those no other root took by its path) of the same folder name. PathRefused (one line
    naming both lists, nothing written) when a root ``needed`` (one the archive has files in)
    matches none, or one matches more than one, or two the same; a root that is not needed and
    matches none is left out (its histories are skipped)."""
    here = [os.path.normpath(str(e)) for e in settings.extra_paths]
    extras = [r for r in roots if r.name != WORKSPACE]
    matched: dict[str, str] = {WORKSPACE: str(settings.workspace)}
    exact = {r.name: os.path.normpath(r.path) for r in extras if os.path.normpath(r.path) in here}
    taken = set(exact.values())
    for root in extras:
        if root.name in exact:
            matched[root.name] = exact[root.name]
            continue
        name = os.path.basename(os.path.normpath(root.path))
        same = [e for e in here if e not in taken and name and os.path.basename(e) == name]
        if len(same) == 1:
            matched[root.name] = same[0]
        elif same:
            _refuse_roots(root, f"matches {len(same)} of this workspace's by its folder name ({name})", extras, here)
        elif root.name in needed:
            _refuse_roots(root, "matches none of this workspace's by its path or its folder name", extras, here)
    by_place: dict[str, Root] = {}
    for root in extras:
        place = matched.get(root.name)
        if place is not None and place in by_place:
            _refuse_roots(root, f"and {by_place[place].path} both match {place}", extras, here)
        if place is not None:
            by_place[place] = root
    return matched


def _refuse_roots(root: Root, why: str, extras: list[Root], here: list[str]) -> None:
    raise PathRefused(
        f"refused: the archive's extra path {root.path} {why} (the archive's extra paths: "
        f"{', '.join(r.path for r in extras)}; this workspace's: {', '.join(here) or 'none'}); its files go to "
        "the extra path of the same path, or else of the same folder name, never by position: configure "
        "one (--extra, or extra_paths in openclaw-memory.toml); nothing was written")


def resolve_place(settings: Settings, roots: dict[str, str], root: str, path: str) -> ResolvedPath:
    """The importing workspace's memory file for (root, path), ``roots`` being what
    :func:`match_roots` matched; PathRefused (this workspace's configuration, not the archive, is
    at fault) when the root matched none or the path is not a memory path here (a symlink on the
    way, a file where a folder should be, a name of the dream diary a write refuses)."""
    workspace = str(settings.workspace)
    base = roots.get(root)
    if base is None:
        raise PathRefused(f"refused: the archive's {root} matches no extra path here; nothing was written")
    wanted = os.path.normpath(os.path.join(base, *path.split("/"))) if path else base
    try:
        resolved = resolve_writable(wanted, workspace, settings.extra_paths)
        refuse_dream_twin(resolved, workspace)  # as a write: `Dreams.md`, or `dreams.md` beside `DREAMS.md`
    except PathRefused as exc:
        raise PathRefused(f"refused: {path or base} cannot be imported here ({exc.message}); nothing was written") from None
    if resolved.abs_path != wanted or (root == WORKSPACE) != resolved.in_workspace:
        raise PathRefused(f"refused: {path or base} would not land in its own root here; nothing was written")
    return resolved
