"""``mv`` and ``rm``: move or remove a memory file, guarded like a write, kept in the history."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

from ...errors import shell_word
from ...memory import open_memory
from ...settings import command_line
from ..output import given_path, printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def run_move(settings: Settings, source: str, destination: str, force: bool, expect: str | None, update_index: bool,
             update_links: bool, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, source):
        result = memory.move(source, destination, force=force, expect=expect, update_index=update_index,
                             update_links=update_links)
    _index_warning(result.index)
    # The move was made; a link rewrite that failed (the disk full) is a problem to act on: exit 1.
    status = 1 if any(left.failed for left in result.links_not_updated) else 0
    if reported(result, json_out):
        return status
    how = " (copied across file systems, verified, then the source removed)" if result.how == "copy" else ""
    print(f"moved {printable(result.source)} to {printable(result.path)}{how}; its history moved with it "
          f"({_run(settings, 'history', result.path)}).")
    if result.replaced:
        print(f"The file that was at {printable(result.path)} (version {result.replaced[:12]}) is archived: "
              f"{_run(settings, 'restore', result.path)} --last")
    for path in result.links_updated:
        print(f"rewrote the links in {printable(path)} ({_run(settings, 'history', path)})")
    for left in result.links_not_updated:
        print(f"left {printable(left.source)}:{left.line} {printable(left.text)}: {printable(left.why)}")
    return status


def run_remove(settings: Settings, path: str, force: bool, expect: str | None, update_index: bool, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory, given_path(settings.workspace, path):
        result = memory.remove(path, force=force, expect=expect, update_index=update_index)
    _index_warning(result.index)
    if reported(result, json_out):
        return 0
    print(f"removed {printable(result.path)} (version {result.version[:12]}, {result.size} bytes); it is kept in the "
          f"history: {_run(settings, 'restore', result.path)} --last")
    return 0


def _run(settings: Settings, command: str, path: str) -> str:
    """The command line that runs ``command`` on ``path`` as printed: on this workspace and agent (the
    settings flags given), the name quoted for a shell."""
    return f"{command_line(settings)} {command} {shell_word(path)}"


def _index_warning(update) -> None:
    if update is not None and update.failed:
        warn(update.reason or "the index was not updated")
