"""A startup file that is there but that the agent does not see, and why.

``prompt`` records one for each file it does not load (OpenClaw's guarded read refuses it, or it is
over a byte limit) and says so in a warning; ``doctor`` names each as a finding of its reason
(``doctor.check_startup``), from the same section, so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# symlink: the path or a folder on it is a link; not-a-file: a folder, FIFO, socket or device;
# hardlinked: more than one hard link; too-large: over OpenClaw's byte limit for that file.
RefusalReason = Literal["symlink", "not-a-file", "hardlinked", "too-large"]


@dataclass(frozen=True)
class StartupRefusal:
    path: str  # relative to the workspace: USER.md, MEMORY.md, memory/YYYY-MM-DD[-slug].md, or memory/ itself
    reason: RefusalReason
    why: str  # in words, for the warning: "it has 2 hard links"
    marker: str | None = None  # what the agent sees in its place (a bootstrap file); None: left out (a daily note)
