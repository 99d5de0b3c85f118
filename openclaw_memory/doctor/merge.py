"""The text of a split-root merge: layout, marker, and "was this merged already?".

Layout (appended to ``MEMORY.md``): the existing bytes (newline added if
missing), a blank line, ``## Imported From Legacy Root memory.md``, the marker
comment naming the archive, a blank line, the legacy text, a final newline.
The existing ``MEMORY.md`` bytes are kept exactly, even when they are not UTF-8.
"""

from __future__ import annotations

HEADING = "## Imported From Legacy Root memory.md"
MARKER_PREFIX = "<!-- openclaw-root-memory-merge source=memory.md archived="


def marker(archive_rel: str) -> str:
    return f"{MARKER_PREFIX}{archive_rel} -->"


def legacy_block(legacy: bytes) -> tuple[bytes, bool]:
    """The legacy text as it is merged (valid UTF-8, final newline) and whether bytes were replaced."""
    try:
        text = legacy.decode("utf-8")
        lossy = False
    except UnicodeDecodeError:
        text = legacy.decode("utf-8", errors="replace")
        lossy = True
    if not text.endswith("\n"):
        text += "\n"
    return text.encode("utf-8"), lossy


def merged_bytes(canonical: bytes, block: bytes, archive_rel: str) -> bytes:
    """``MEMORY.md`` after the merge."""
    head = canonical
    if head and not head.endswith(b"\n"):
        head += b"\n"
    if head:
        head += b"\n"  # the blank line before the heading; an empty MEMORY.md starts with the heading
    section = f"{HEADING}\n{marker(archive_rel)}\n\n".encode("utf-8")
    return head + section + block


def has_merge_marker(canonical: bytes, archive_rel: str) -> bool:
    """True when ``MEMORY.md`` holds the merge that archives to ``archive_rel``."""
    return marker(archive_rel).encode("utf-8") in canonical


def already_merged(canonical: bytes, block: bytes) -> str | None:
    """The archive path of an earlier merge of exactly ``block``, or None.

    This is how a rerun that has no journal (or a legacy file restored from an
    archive) still never merges the same text twice.
    """
    prefix = MARKER_PREFIX.encode("utf-8")
    start = 0
    while True:
        at = canonical.find(prefix, start)
        if at < 0:
            return None
        end = canonical.find(b" -->\n", at)
        if end < 0:
            return None
        body = canonical[end + len(b" -->\n"):]
        if body.startswith(b"\n" + block):
            return canonical[at + len(prefix):end].decode("utf-8", "replace")
        start = end
