"""``export`` and ``import``: an agent's memory files and their history as one archive, and back."""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

from ...errors import shell_word
from ...memory import open_memory
from ...settings import command_line
from ..output import printable, reported, warn

if TYPE_CHECKING:
    from ...settings import Settings


def _expanded(path: str) -> str:
    """A leading ``~`` (quoted, so the shell left it) expanded as -w, --state-dir and --extra expand
    theirs: ``export '~/x.tgz'`` made a folder named ``~`` in the current one."""
    import os

    from ...settings._places import tilde

    return tilde(path, os.environ)


def run_export(settings: Settings, archive: str, force: bool, json_out: bool) -> int:
    archive = _expanded(archive)
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        result = memory.export_archive(archive, force=force)
    if reported(result, json_out):  # (a file left out: a name the archive cannot hold)
        return 0
    print(f"exported {len(result.files)} memory files of agent '{printable(result.agent)}' and their history "
          f"({result.versions} versions, {result.objects} of them with their bytes) to {printable(result.archive)} "
          f"({result.size:,} bytes).")
    return 0


def run_import(settings: Settings, archive: str, force: bool, json_out: bool) -> int:
    archive = _expanded(archive)
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        result = memory.import_archive(archive, force=force)
    # Its warnings: an interrupted operation finished first, extra paths paired by order, each history left out and why.
    if reported(result, json_out):
        return 0
    left = f" ({len(result.left)} more left as they are: written since the interrupted import began)" if result.left else ""
    print(f"imported {len(result.files) - len(result.left)} memory files of agent '{printable(result.agent)}' from "
          f"{printable(result.archive)}{left}, and {result.versions} versions of their history.")
    for path in result.replaced:
        print(f"  replaced {printable(path)}: what it held is in the history ({command_line(settings)} history {shell_word(path)})")
    print(f"The search index picks them up at the next `{command_line(settings)} index` or search.")
    return 0
