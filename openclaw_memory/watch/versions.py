"""Every version ``watch`` sees goes into the history, so an outside edit can always be restored.

A version that differs from the path's latest history entry is logged as ``external-edit``
(the history's own rule); the agent's own writes are already logged as ``agent-write`` and
are not logged twice.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import LockTimeout
from ..fsutil.safeopen import NotRegularFile
from ..history.store import HistoryStore

if TYPE_CHECKING:
    from ..settings import Settings

BATCH = 256  # sightings recorded in one transaction


def record_versions(settings: Settings, paths: Iterable[str]) -> str | None:
    """Hash each memory file (display paths) as it is now and record new versions.

    Returns a warning when the history was busy for too long (the next sighting records them).
    """
    paths = list(dict.fromkeys(paths))
    if not paths:
        return None
    store = HistoryStore.for_settings(settings)
    workspace = str(settings.workspace)
    try:
        # A transaction per batch, not per sync: every other writer of the state database waits
        # while one is open (a first sync of 30,000 notes held it for minutes).
        for start in range(0, len(paths), BATCH):
            with store.lock(), store.evicting_once():
                for path in paths[start:start + BATCH]:
                    try:
                        store.observe_file(os.path.join(workspace, path), path)
                    except (NotRegularFile, OSError):
                        continue  # gone or not a regular file any more: nothing to keep
    except LockTimeout as exc:
        return f"versions not recorded in the history this time: {exc.message}"
    return None
