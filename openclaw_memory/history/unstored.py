"""Why the version store lacks a version a restore asks for, as far as can be known."""

from __future__ import annotations

import os

from ..errors import MemoryToolError
from .store import HistoryStore


def not_stored_why(store: HistoryStore, abs_path: str, version: str) -> str:
    """Why the version store lacks ``version`` of ``abs_path``, as far as can be known.

    A version too large to keep was never stored. A rebuild of the damaged state database (``doctor
    --fix``: the damaged file set aside under ``damaged/<stamp>/``, its unreadable bytes dropped)
    after the version was logged may have taken it; a version a removal, a snapshot or a rollback
    names is never evicted, so then the rebuild did. Eviction is named only where it can have been."""
    try:
        entries = [e for e in store.entries(abs_path) if e.version == version]
        pinned = store.objects.pinned(version)
    except (MemoryToolError, OSError):
        entries, pinned = [], False
    if entries and not store.objects.fits(entries[-1].size):
        return (f"at {entries[-1].size} bytes it is larger than the history keeps of one version (an eighth of [history] "
                "max_bytes), so its bytes were never stored")
    evicted = "evicted from the version store to stay within [history] max_bytes"
    rebuilt = _rebuilt_since(store, min((e.time for e in entries), default=None))
    if rebuilt is None:
        if pinned:  # (a version a removal or a snapshot names is never evicted)
            return ("its bytes are gone from the state database, which never evicts a version that a removal or a "
                    "snapshot names (`openclaw-memory doctor` checks the state database)")
        return evicted
    when, aside = rebuilt
    lost = (f"its bytes were lost with the damaged state database that `openclaw-memory doctor --fix` rebuilt on {when} "
            f"(they no longer read back; the damaged file is kept at {aside})")
    if pinned:
        return lost
    return f"{lost}, or they were {evicted} before that"


def _rebuilt_since(store: HistoryStore, since: float | None) -> tuple[str, str] | None:
    """The first rebuild of the state database since ``since`` (None: the latest of all): when (UTC)
    and where the damaged file was set aside; None when there was none."""
    import datetime as dt

    from ..fsutil.setaside import DAMAGED_DIR

    folder = os.path.join(os.path.dirname(store.db.path), DAMAGED_DIR)
    name = os.path.basename(store.db.path)
    try:
        stamps = os.listdir(folder)
    except OSError:
        return None
    found: list[tuple[float, str]] = []
    for stamp in stamps:
        try:
            at = dt.datetime.strptime(stamp, "%Y-%m-%dT%H-%M-%S.%fZ").replace(tzinfo=dt.UTC)
        except ValueError:
            continue
        aside = os.path.join(folder, stamp, name)
        if os.path.lexists(aside) and (since is None or at.timestamp() >= since):
            found.append((at.timestamp(), aside))
    if not found:
        return None
    at_s, aside = min(found) if since is not None else max(found)
    return dt.datetime.fromtimestamp(at_s, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"), aside
