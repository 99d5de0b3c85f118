"""``openclaw-memory doctor``: check the workspace's memory files; ``--fix`` repairs them."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...errors import suggested
from ...memory import open_memory, to_json
from ...settings import command_line
from ..output import for_message, print_json, printable, say, warn

if TYPE_CHECKING:
    from ...settings import Settings


def _ask(finding, description: str, program: str) -> bool:
    """One question per repair, on stderr, default yes (as OpenClaw asks); a closed stdin is a no."""
    say(for_message(suggested(f"\n{finding.severity}: {finding.id}\n{_message(finding)}\n", program)))
    while True:
        say(for_message(f"Repair {finding.id}: {description}? [Y/n]: "))
        answer = sys.stdin.readline()
        if not answer:  # end of input
            say("\n")
            return False
        answer = answer.strip().lower()
        if answer in ("", "y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
        say("Error: invalid input\n")


def _message(finding, tried: bool = False) -> str:
    """A finding's message, the paths it names shown as every listing shows them, one line each (a
    name's terminal escapes reached the terminal raw, a newline split it; ``--json`` keeps them exact)."""
    message = finding.without_fix_hint() if tried else finding.message
    for path in sorted(set(finding.paths), key=len, reverse=True):
        message = message.replace(path, printable(path))
    return message


def _block(finding, tried: bool = False) -> str:
    """A finding; one whose repair ``--fix`` just tried and could not make loses its hint to run it."""
    fix = " (fixable with --fix)" if finding.fixable and not tried else ""
    return f"{finding.severity}: {finding.id}{fix}\n{_message(finding, tried)}\n{_paths(finding)}"


def _paths(finding, most: int = 10) -> str:
    """The files a finding is about, when its message does not name them all ("2 memory file(s)
    changed since the last index" said which files only in --json)."""
    if all(p in finding.message for p in finding.paths):
        return ""
    lines = [printable(p) for p in finding.paths[:most]]
    if len(finding.paths) > most:
        lines.append(f"... and {len(finding.paths) - most} more (--json lists them all)")
    return "".join(f"  {line}\n" for line in lines)


def _render(report, fix: bool, program: str) -> None:
    """The report; a command a finding or a repair names is run as ``program`` (settings.command_line)."""
    out = [f"Workspace: {printable(str(report.workspace))}", ""]
    if fix:
        found = ", ".join(f"{f.id} ({f.severity})" for f in report.findings) or "nothing"
        out += [f"Found: {found}", ""]
        if report.repairs:
            out.append("Repairs:")
            out += [f"- {r.id}: {r.action} {r.status}: {r.detail}" for r in report.repairs]
            out.append("")
    failed = {r.id for r in report.repairs if r.status == "failed"}
    for finding in report.remaining:
        out.append(_block(finding, tried=finding.id in failed))
    blocking = [f for f in report.remaining if f.blocking]
    if not blocking:
        out.append("No problems remain." if fix else "No problems found.")
    else:
        plural = len(blocking) != 1
        out.append(f"{len(blocking)} problem{'s' if plural else ''} {('remain' if plural else 'remains') if fix else 'found'}.")
        if not fix and any(f.fixable for f in blocking):
            out.append('Run "openclaw-memory doctor --fix" to repair the fixable ones.')
    sys.stdout.write(for_message(suggested("\n".join(out), program)) + "\n")


def run_doctor_command(settings: Settings, fix: bool, yes: bool, non_interactive: bool, workspace_suggestions: bool,
                       json_out: bool) -> int:
    interactive = fix and not (yes or non_interactive or json_out) and sys.stdin.isatty()
    report = open_memory(settings, notice=warn, shard_idle_s=0).doctor(
        fix=fix, workspace_suggestions=workspace_suggestions,
        confirm=(lambda finding, description: _ask(finding, description, command_line(settings))) if interactive else None,
        on_lock_wait=lambda pid: warn(f"another doctor --fix (pid {pid}) is repairing this workspace; waiting for it"),
    )
    if json_out:  # a command a finding or a repair names, with the settings flags given, as the text has it
        program = command_line(settings)
        shown = to_json(report)
        for entry in (*shown.get("findings", ()), *shown.get("remaining", ()), *shown.get("repairs", ())):
            for field in ("message", "fixHint", "detail"):
                if isinstance(entry.get(field), str):
                    entry[field] = suggested(entry[field], program)
        print_json(shown)
    else:
        _render(report, fix, command_line(settings))
    return report.exit_code
