"""Where a memory file sits, as an archive names it: a root (``workspace``, or ``extra/N``: the N-th
configured extra path) and a path below it; and back, in the importing workspace.

A file of an extra path is placed in the importing workspace's extra path of the same number,
which must be configured (the machine's folders differ; the order of ``extra_paths`` is what the
two configurations share). A path below a root is the file's as the product resolves it
(:func:`~openclaw_memory.files.read.resolve_memory_path`): never outside the root, never a symlink
on the way, only a memory path.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..errors import PathRefused
from ..files.paths import is_memory_path
from ..files.read import ResolvedPath
from ..history.guard import refuse_dream_twin
from ..history.placing import resolve_writable
from .manifest import WORKSPACE

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


def resolve_place(settings: Settings, root: str, path: str) -> ResolvedPath:
    """The importing workspace's memory file for (root, path); PathRefused (this workspace's
    configuration, not the archive, is at fault) when it has no such root or the path is not a
    memory path here (a symlink on the way, a file where a folder should be, a name of the dream
    diary a write refuses)."""
    workspace = str(settings.workspace)
    if root == WORKSPACE:
        base = workspace
    else:
        n = int(root.removeprefix("extra/"))
        if n >= len(settings.extra_paths):
            raise PathRefused(f"refused: the archive holds files of extra path {n + 1}, and this workspace "
                              f"configures {len(settings.extra_paths)} extra path(s): add one where they should go "
                              "(--extra, or extra_paths in openclaw-memory.toml); nothing was written")
        base = str(settings.extra_paths[n])
    wanted = os.path.normpath(os.path.join(base, *path.split("/"))) if path else base
    try:
        resolved = resolve_writable(wanted, workspace, settings.extra_paths)
        refuse_dream_twin(resolved, workspace)  # as a write: `Dreams.md`, or `dreams.md` beside `DREAMS.md`
    except PathRefused as exc:
        raise PathRefused(f"refused: {path or base} cannot be imported here ({exc.message}); nothing was written") from None
    if resolved.abs_path != wanted or (root == WORKSPACE) != resolved.in_workspace:
        raise PathRefused(f"refused: {path or base} would not land in its own root here; nothing was written")
    return resolved
