"""Links between memory notes that name nothing, or more than one note: a warning each kind, never
repaired (which note a link meant is the writer's to say; ``openclaw-memory links --broken`` lists
them all). Only reads: plain doctor parses the changed notes without keeping what it parsed."""

from __future__ import annotations

from ..errors import MemoryToolError
from .model import CheckContext, Finding

SHOWN = 10  # links named in a finding; `links --broken` lists every one


def check_links(ctx: CheckContext) -> list[Finding]:
    from ..links.report import note_links

    try:
        report = note_links(ctx.settings, broken=True)
    except MemoryToolError as exc:  # a damaged state database is check_state's finding
        return [Finding("links-unchecked", "info", f"The links between memory files were not checked: {exc.message}")]
    findings = []
    for status, finding_id, what in (("broken", "broken-links", "name no memory file (or a heading or lines it lacks)"),
                                     ("ambiguous", "ambiguous-links", "name more than one memory file (never guessed)")):
        links = [link for link in report.outgoing if link.status == status]
        if not links:
            continue
        listed = "; ".join(f"{link.source}:{link.line} {link.text} ({link.problem})" for link in links[:SHOWN])
        more = f"; and {len(links) - SHOWN} more" if len(links) > SHOWN else ""
        findings.append(Finding(
            finding_id, "warning",
            f"{len(links)} link(s) between memory notes {what}: {listed}{more}. Fix the links by hand; "
            "`openclaw-memory links --broken` lists them all.",
            False, tuple(dict.fromkeys(link.source for link in links)),
        ))
    return findings


CHECKS = [check_links]
