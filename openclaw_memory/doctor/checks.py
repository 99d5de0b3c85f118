"""The list of doctor checks, and running them.

A check is a function ``(CheckContext) -> list[Finding]`` that only reads. Each
module named in :data:`CHECK_MODULES` exposes ``CHECKS`` (a list, run in order);
a later part adds its checks by adding its module here (the index part adds
its index checks this way). Nothing here writes: plain ``doctor`` runs only this.
"""

from __future__ import annotations

import importlib

from ..settings import Settings
from .model import Check, CheckContext, Finding

CHECK_MODULES: tuple[str, ...] = (
    "openclaw_memory.doctor.check_journal",
    "openclaw_memory.doctor.check_state",
    "openclaw_memory.doctor.check_root",
    "openclaw_memory.doctor.check_files",
    "openclaw_memory.doctor.check_openclaw",
    "openclaw_memory.doctor.check_watchdog",
    "openclaw_memory.doctor.check_index",
)


def load_checks(modules: tuple[str, ...] = CHECK_MODULES) -> list[Check]:
    checks: list[Check] = []
    for name in modules:
        checks.extend(importlib.import_module(name).CHECKS)
    return checks


def run_checks(settings: Settings, checks: list[Check] | None = None) -> list[Finding]:
    """Every finding, in check order, from one fresh look at the workspace."""
    ctx = CheckContext(settings)
    findings: list[Finding] = []
    for check in load_checks() if checks is None else checks:
        findings.extend(check(ctx))
    return findings
