"""``openclaw-memory links``: a note's links and backlinks, every link, or the broken ones."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING, Any

from ...memory import open_memory
from ..output import for_message, given_path, printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def run_links(settings: Settings, path: str | None, broken: bool, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, path or ""):
        report = memory.links(path, broken=broken)
    if reported(report, json_out):
        return 0
    what = "broken or ambiguous links" if broken else "links"
    if report.path is None:
        if not report.outgoing:
            print(f"No {what} in the {report.files} memory files of {printable(report.workspace)}.")
        for link in report.outgoing:
            print(f"{printable(link.source)}:{link.line}\t{_link(link)}")
        return 0
    print(f"{what} in {printable(report.path)} ({len(report.outgoing)}):")
    for link in report.outgoing:
        print(f"  {link.line}\t{_link(link)}")
    print(f"backlinks{' (broken or ambiguous)' if broken else ''} ({len(report.backlinks)}):")
    for link in report.backlinks:
        print(f"  {printable(link.source)}:{link.line}\t{_link(link)}")
    return 0


def _link(link: Any) -> str:
    text = for_message(link.text)  # its bidi controls too: they reordered the target shown after it
    if link.status == "ok":
        return f"{text}  -> {printable(link.resolved)}"
    return f"{text}  {link.status}: {for_message(link.problem)}"
