"""The list of doctor repairs, keyed by the id of the finding each one fixes.

Each repair module exposes ``REPAIRS`` (``{finding id: RepairSpec}``); :data:`REPAIRS` joins them.
"""

from __future__ import annotations

from . import recovery, repair_index, repair_root, repair_state
from .model import RepairSpec

REPAIRS: dict[str, RepairSpec] = {**recovery.REPAIRS, **repair_state.REPAIRS, **repair_root.REPAIRS, **repair_index.REPAIRS}
