"""The list of doctor checks, and running them.

A check is a function ``(CheckContext) -> list[Finding]`` that only reads. Each ``check_*``
module exposes ``CHECKS`` (a list, run in order); :data:`CHECKS` joins them in the order the
doctor reports. Nothing here writes: plain ``doctor`` runs only this.
"""

from __future__ import annotations

from ..settings import Settings
from . import check_files, check_index, check_journal, check_openclaw, check_root, check_state, check_watchdog
from .model import Check, CheckContext, Finding

CHECKS: tuple[Check, ...] = (
    *check_journal.CHECKS,
    *check_state.CHECKS,
    *check_root.CHECKS,
    *check_files.CHECKS,
    *check_openclaw.CHECKS,
    *check_watchdog.CHECKS,
    *check_index.CHECKS,
)


def run_checks(settings: Settings, checks: tuple[Check, ...] = CHECKS) -> list[Finding]:
    """Every finding, in check order, from one fresh look at the workspace."""
    ctx = CheckContext(settings)
    findings: list[Finding] = []
    for check in checks:
        findings.extend(check(ctx))
    return findings
