"""The text of a split-root merge, exactly as OpenClaw writes it, and "was this merged already?".

Layout (OpenClaw's ``migrateLegacyRootMemoryFile``): the ``MEMORY.md`` text with trailing
white space removed, a blank line, ``## Imported From Legacy Root memory.md``, a blank
line, the marker comment naming the archive (its absolute path, the home folder shown
as ``~``), the sentence OpenClaw adds, a blank line, the legacy text trimmed, one final
newline. A ``MEMORY.md`` that is not valid UTF-8 keeps its bytes (only trailing ASCII
white space is removed): OpenClaw would rewrite them as U+FFFD.
"""

from __future__ import annotations

import os

from ..files.jstext import decode_lossy, js_trim, js_trim_end
from ..files.paths import CANONICAL_ROOT, LEGACY_ROOT, shorten_home
from ..history.versions import FileMode
from .journal import JournalRecord

HEADING = "## Imported From Legacy Root memory.md"
MARKER_PREFIX = "<!-- openclaw-root-memory-merge source=memory.md archived="
SENTENCE = "This content came from legacy root `memory.md`, which was shadowed by `MEMORY.md`."
# OpenClaw's safe-read limit: a bigger root file is never merged.
MAX_ROOT_BYTES = 8 * 1024 * 1024
TOO_LARGE = "Workspace memory root repair skipped (a file exceeded the safe read limit):"


def marker(archive_shown: str) -> str:
    return f"{MARKER_PREFIX}{archive_shown} -->"


def archive_shown(workspace: str, archive_rel: str) -> str:
    """The archive path as OpenClaw writes it into the marker."""
    return shorten_home(os.path.join(workspace, archive_rel))


def legacy_block(legacy: bytes) -> tuple[bytes, bool]:
    """The legacy text as it is merged (trimmed, valid UTF-8 without NUL, final newline) and whether
    bytes were replaced: a NUL byte merged into MEMORY.md would make the whole file binary to the
    index (its raw bytes stay in the archive)."""
    text, lossy = decode_lossy(legacy)
    if "\x00" in text:
        text, lossy = text.replace("\x00", "\ufffd"), True
    return (js_trim(text) + "\n").encode("utf-8"), lossy


def _canonical_head(canonical: bytes) -> bytes:
    try:
        return js_trim_end(canonical.decode("utf-8")).encode("utf-8")
    except UnicodeDecodeError:
        return canonical.rstrip(b" \t\n\v\f\r")


def merged_bytes(canonical: bytes, block: bytes, shown: str) -> bytes:
    """``MEMORY.md`` after the merge (``block`` from :func:`legacy_block`)."""
    section = f"\n\n{HEADING}\n\n{marker(shown)}\n{SENTENCE}\n\n".encode()
    return _canonical_head(canonical) + section + block


SHARED_RW = 0o066  # read and write for the file's group and for others


def merged_mode(canonical: FileMode, legacy: FileMode) -> int:
    """The permission bits ``MEMORY.md`` gets when ``memory.md``'s text is merged into it: its own,
    less each read and write bit for its group and for others that ``memory.md`` does not give them,
    so the merged text is shown to no one who could not read it before (a private 0600 ``memory.md``
    merged into a 0644 ``MEMORY.md`` makes it 0600; OpenClaw keeps 0644). Its owner's bits and the
    execute and set-id bits stay. When the two files have different groups, ``MEMORY.md``'s group is
    given only what ``memory.md`` gives everyone."""
    others = legacy.mode & 0o006
    group = legacy.mode & 0o060 if legacy.gid == canonical.gid else others << 3
    return canonical.mode & ~(SHARED_RW & ~(group | others))


def already_merged(canonical: bytes, block: bytes) -> str | None:
    """The archive path of an earlier merge of exactly ``block``, or None.

    This is how a rerun that has no journal (or a legacy file restored from an
    archive) still never merges the same text twice.
    """
    prefix = MARKER_PREFIX.encode("utf-8")
    after = f" -->\n{SENTENCE}\n\n".encode()
    start = 0
    while True:
        at = canonical.find(prefix, start)
        if at < 0:
            return None
        end = canonical.find(after, at)
        if end < 0:
            return None
        if canonical[end + len(after):].startswith(block):
            return canonical[at + len(prefix):end].decode("utf-8", "replace")
        start = end


# How a finished root repair is described (the report line, the checkpoint note, the paths it
# changed): by the repair itself and by the recovery that completes an interrupted one alike.

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
    if state.mode == "append" and state.merged_mode is not None and state.canonical_mode is not None:
        text += (f"; MEMORY.md's mode is now {state.merged_mode:04o} (was {state.canonical_mode:04o}): it holds memory.md's "
                 "text, and is no more readable by its group or others than memory.md was")
    if state.lossy and state.mode == "append":
        text += ("; memory.md was not valid UTF-8 text (invalid bytes or NUL): it was merged with U+FFFD in place of "
                 "those bytes and its raw bytes are kept in the archive")
    if how == "copy":
        text += ("; the archive is on another file system: copied, fsynced and hash-verified, and the original was removed "
                 "only as the file that was copied, with those same bytes, held open by no other process")
    return text
