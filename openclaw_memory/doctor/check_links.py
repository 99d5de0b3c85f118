"""Links between memory notes that name nothing, or more than one note: a warning each kind, never
repaired (which note a link meant is the writer's to say; ``openclaw-memory links --broken`` lists
them all).

Only reads, and costs what changed: the notes are those of doctor's own scan, a note whose stat
is the one its links were parsed from (the change rule) is not opened, its links come from the
link table, and only new or changed notes are parsed. Which rows hold comes with the UTF-8
check's sightings (``CheckContext.vouched``): only the others are read from the table. Every
link is resolved again against the files as they are now (a new, removed or renamed file
changes what an unchanged note's link names). What was parsed is handed to the runner (``CheckContext.cache_writes``), which stores it
once the checks are done (see ``runner.keep_caches``): the next doctor parses nothing again."""

from __future__ import annotations

from functools import partial

from ..errors import MemoryToolError
from .model import CheckContext, Finding

SHOWN = 10  # links named in a finding; `links --broken` lists every one


def check_links(ctx: CheckContext) -> list[Finding]:
    from ..links.report import link_state, unresolved
    from ..links.table import keep

    try:
        vouched = ctx.vouched
        state = link_state(ctx.settings, ctx.scan.files, save=False,
                           suspects=vouched.link_suspects if vouched is not None else None)
        found = list(unresolved(state))
    except MemoryToolError as exc:  # a damaged state database is check_state's finding
        return [Finding("links-unchecked", "info", f"The links between memory files were not checked: {exc.message}")]
    ctx.cache_writes.append(partial(keep, ctx.settings, state.table))
    findings = []
    for status, finding_id, what in (("broken", "broken-links", "name no memory file (or a heading or lines it lacks)"),
                                     ("ambiguous", "ambiguous-links", "name more than one memory file (never guessed)")):
        links = [link for link in found if link.status == status]
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
