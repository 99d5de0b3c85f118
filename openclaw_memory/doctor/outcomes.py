"""How a finished root repair is described: the report line, the checkpoint note, the paths it changed.

Shared by the repair itself and by the recovery that completes an interrupted one, so both
say the same thing.
"""

from __future__ import annotations

from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT
from .journal import JournalRecord
from .merge import HEADING

MIGRATE_NOTE = "renamed the legacy root memory.md to MEMORY.md (the canonical name)"


def merge_note(state: JournalRecord) -> str:
    """The line the checkpoint gets for a finished merge."""
    rel = state.archive
    if state.mode == "append":
        return f"merged memory.md into MEMORY.md; archive at {rel}"
    return f"archived memory.md ({_mode_words(state)}) at {rel}; MEMORY.md unchanged"


def merge_changed_paths(state: JournalRecord, archive: str) -> list[str]:
    """Workspace-relative paths a merge changes (for the watchdog baseline); ``archive`` is
    ``state.archive``, which the caller has checked."""
    paths = [CANONICAL_ROOT] if state.mode == "append" else []
    return paths + [LEGACY_ROOT, archive]


def _mode_words(state: JournalRecord) -> str:
    return {
        "identical": "same bytes as MEMORY.md",
        "empty": "it was empty",
        "already-merged": f"MEMORY.md already holds its text from an earlier merge, archive {state.earlier}",
    }.get(state.mode or "", state.mode or "")


def merge_detail(state: JournalRecord, how: str) -> str:
    rel = state.archive
    if state.mode == "append":
        text = f"merged memory.md ({state.legacy_size} bytes) into MEMORY.md under \"{HEADING}\"; archived the original at {rel}"
    else:
        text = f"archived memory.md at {rel} without merging ({_mode_words(state)}); MEMORY.md unchanged"
    if state.lossy and state.mode == "append":
        text += "; memory.md was not valid UTF-8: it was merged with U+FFFD in place of the invalid bytes and its raw bytes are kept in the archive"
    if how == "copy":
        text += "; the archive is on another file system: copied, fsynced and hash-verified before the original was removed"
    return text
