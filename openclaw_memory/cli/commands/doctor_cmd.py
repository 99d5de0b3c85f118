"""``openclaw-memory doctor``: check the workspace's memory files; ``--fix`` repairs them."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...memory import open_memory
from ..output import print_json, warn

if TYPE_CHECKING:
    from ...settings import Settings


def _ask(finding, description: str) -> bool:
    """One question per repair, on stderr, default yes (as OpenClaw asks)."""
    import typer

    sys.stderr.write(f"\n{finding.severity}: {finding.id}\n{finding.message}\n")
    try:
        return typer.confirm(f"Repair {finding.id}: {description}?", default=True, err=True)
    except typer.Abort:  # stdin closed: take it as a no (typer's vendored click raises typer's own Abort)
        sys.stderr.write("\n")
        return False


def _block(finding) -> str:
    fix = " (fixable with --fix)" if finding.fixable else ""
    return f"{finding.severity}: {finding.id}{fix}\n{finding.message}\n"


def _render(report, fix: bool) -> None:
    out = [f"Workspace: {report.workspace}", ""]
    if fix:
        found = ", ".join(f"{f.id} ({f.severity})" for f in report.findings) or "nothing"
        out += [f"Found: {found}", ""]
        if report.repairs:
            out.append("Repairs:")
            out += [f"- {r.id}: {r.action} {r.status}: {r.detail}" for r in report.repairs]
            out.append("")
    for finding in report.remaining:
        out.append(_block(finding))
    blocking = [f for f in report.remaining if f.blocking]
    if not blocking:
        out.append("No problems remain." if fix else "No problems found.")
    else:
        plural = len(blocking) != 1
        out.append(f"{len(blocking)} problem{'s' if plural else ''} {('remain' if plural else 'remains') if fix else 'found'}.")
        if not fix and any(f.fixable for f in blocking):
            out.append('Run "openclaw-memory doctor --fix" to repair the fixable ones.')
    sys.stdout.write("\n".join(out) + "\n")


def run_doctor_command(settings: Settings, fix: bool, yes: bool, non_interactive: bool, json_out: bool) -> int:
    interactive = fix and not (yes or non_interactive or json_out) and sys.stdin.isatty()
    report = open_memory(settings, notice=warn).doctor(
        fix=fix,
        confirm=_ask if interactive else None,
        on_lock_wait=lambda pid: warn(f"another doctor --fix (pid {pid}) is repairing this workspace; waiting for it"),
    )
    if json_out:
        print_json(report.to_json())
    else:
        _render(report, fix)
    return report.exit_code
