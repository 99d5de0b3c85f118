"""A workspace given as its own notes folder (``-w ws/memory``): every command then found no memory
(doctor: "Memory system not found ... Install the memory system", files: "No memory files"), and
nothing said the workspace was one folder up. Said once, on stderr, before the command runs."""

from __future__ import annotations

import os
import shlex

from ..files.paths import CANONICAL_ROOT, MEMORY_DIR, USER_ROOT


def notes_folder_hint(workspace: str) -> str | None:
    """The warning for a workspace named ``memory`` that holds no memory system of its own (no
    MEMORY.md, USER.md or memory/ folder) while its parent holds MEMORY.md or USER.md, or it holds
    notes itself (.md files): it is the parent's memory/ folder. None otherwise."""
    workspace = os.path.normpath(workspace)
    if os.path.basename(workspace) != MEMORY_DIR:
        return None
    if any(os.path.lexists(os.path.join(workspace, name)) for name in (CANONICAL_ROOT, USER_ROOT, MEMORY_DIR)):
        return None
    parent = os.path.dirname(workspace)
    root = next((name for name in (CANONICAL_ROOT, USER_ROOT) if os.path.isfile(os.path.join(parent, name))), None)
    if root is not None:
        return (f"{workspace} is the {MEMORY_DIR}/ folder of the workspace {parent}, which holds {root}: "
                f"give -w {shlex.quote(parent)} (the folder that holds {MEMORY_DIR}/)")
    try:
        notes = any(e.name.endswith(".md") and e.is_file() for e in os.scandir(workspace))
    except OSError:
        return None
    if not notes:
        return None
    return (f"{workspace} holds notes but no {CANONICAL_ROOT}: it looks like the {MEMORY_DIR}/ folder of the "
            f"workspace {parent}; give -w {shlex.quote(parent)} (the folder that holds {MEMORY_DIR}/)")
