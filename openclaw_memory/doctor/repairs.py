"""The list of doctor repairs, keyed by the id of the finding each one fixes.

Each module named in :data:`REPAIR_MODULES` exposes ``REPAIRS``
(``{finding id: RepairSpec}``); a later part adds repairs by adding its module.
"""

from __future__ import annotations

import importlib

from .model import RepairSpec

REPAIR_MODULES: tuple[str, ...] = (
    "openclaw_memory.doctor.recovery",
    "openclaw_memory.doctor.repair_state",
    "openclaw_memory.doctor.repair_root",
    "openclaw_memory.doctor.repair_index",
)


def load_repairs(modules: tuple[str, ...] = REPAIR_MODULES) -> dict[str, RepairSpec]:
    repairs: dict[str, RepairSpec] = {}
    for name in modules:
        repairs.update(importlib.import_module(name).REPAIRS)
    return repairs
