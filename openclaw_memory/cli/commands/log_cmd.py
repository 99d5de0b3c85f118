"""``log``: every recorded version across the memory files, newest first, as ``git log --stat`` reads."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

from ...memory import open_memory
from ..output import printable, reported, warn

if TYPE_CHECKING:
    from ...log.activity import ActivityLog
    from ...settings import Settings

BAR = 40  # the widest +/- bar, as git's --stat scales it
NAME_WIDTH = 60  # names are padded to the longest up to this: a longer one runs on, the other lines stay short


def run_log(settings: Settings, since: str | None, until: str | None, paths: list[str], origins: list[str],
            limit: int, json_out: bool, agent: str | None, session: str | None) -> int:
    """``agent`` and ``session`` are the settings flags as given on the command line (None when not):
    ``log --agent ops`` is that agent's activity, plain ``log`` every agent's."""
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        result = memory.activity(since=since, until=until, paths=tuple(paths), agent=agent, session=session,
                                 origins=tuple(origins), limit=limit)
    if reported(result, json_out, ()):
        return 0
    print(render(result, limit), end="")
    return 0


def render(result: ActivityLog, limit: int) -> str:
    if not result.entries:
        return "No recorded version matches.\n"
    # (one 4,000-byte name padded every line of the page to 4,000 columns)
    width = min(NAME_WIDTH, max(len(printable(e.path)) for e in result.entries))
    most = max((e.added or 0) + (e.removed or 0) for e in result.entries)
    out = []
    for e in result.entries:
        who = "".join((f"  by {e.agent}" if e.agent else "", f"  session {e.session}" if e.session else ""))
        out.append(f"{e.version[:12]}  {e.time}  {e.origin}{who}\n")
        if e.added is None or e.removed is None:
            stat = "? (a version's content is no longer in the history)"
        else:
            total = e.added + e.removed
            scale = min(1.0, BAR / most) if most else 1.0
            plus, minus = round(e.added * scale), round(e.removed * scale)
            stat = f"{total} {'+' * (plus or (e.added > 0))}{'-' * (minus or (e.removed > 0))}".rstrip()
        out.append(f" {printable(e.path).ljust(width)} | {stat}\n\n")
    shown = len(result.entries)
    tail = f"{shown} version{'s' if shown != 1 else ''} shown, newest first"
    if result.more:
        tail += f"; older ones match too (--limit {max(limit * 2, 100)} shows more, --until narrows)"
    out.append(tail + ".\n")
    return "".join(out)
