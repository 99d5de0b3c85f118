"""Names and rules that say what counts as memory."""

from __future__ import annotations

import os
import re

CANONICAL_ROOT = "MEMORY.md"
LEGACY_ROOT = "memory.md"
DREAMS = "DREAMS.md"
LEGACY_DREAMS = "dreams.md"
MEMORY_DIR = "memory"
REPAIR_DIR = ".openclaw-repair"
REPAIR_ROOT_MEMORY = f"{REPAIR_DIR}/root-memory"

IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".webp", ".gif", ".heic", ".heif"})
AUDIO_EXTENSIONS = frozenset({".mp3", ".wav", ".ogg", ".opus", ".m4a", ".aac", ".flac"})
MAX_MEDIA_BYTES = 10_000_000

DAILY_NOTE = re.compile(r"^memory/(\d{4})-(\d{2})-(\d{2})\.md$")


def file_kind(name: str, multimodal: bool) -> str | None:
    """``markdown``, ``image``, ``audio`` or None. ``.md`` is case-sensitive; media extensions are not."""
    if name.endswith(".md"):
        return "markdown"
    if not multimodal:
        return None
    ext = os.path.splitext(name)[1].lower()
    if ext in IMAGE_EXTENSIONS:
        return "image"
    if ext in AUDIO_EXTENSIONS:
        return "audio"
    return None


def is_memory_path(rel: str) -> bool:
    """OpenClaw's ``isMemoryPath``: the root file, the dream diary, or anything under ``memory/``."""
    rel = rel.replace(os.sep, "/")
    if rel in (CANONICAL_ROOT, DREAMS, LEGACY_DREAMS):
        return True
    return rel.startswith(MEMORY_DIR + "/") and len(rel) > len(MEMORY_DIR) + 1


def is_daily_note(rel: str) -> bool:
    import datetime

    match = DAILY_NOTE.match(rel)
    if not match:
        return False
    try:
        datetime.date(*(int(g) for g in match.groups()))
    except ValueError:
        return False
    return True


def display_path(abs_path: str, workspace: str) -> str:
    """Workspace-relative with ``/`` inside the workspace, absolute outside it."""
    prefix = workspace.rstrip(os.sep) + os.sep
    if abs_path.startswith(prefix) and f"{os.sep}{os.pardir}" not in abs_path:
        rel = abs_path[len(prefix):]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel
    try:
        rel = os.path.relpath(abs_path, workspace)
    except ValueError:
        return abs_path
    if rel == os.curdir or rel.startswith(os.pardir + os.sep) or rel == os.pardir:
        return abs_path
    return rel.replace(os.sep, "/")
