"""``openclaw-memory write``: a guarded, atomic write of one memory file."""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

from ...errors import UsageError
from ...memory import open_memory
from ..output import reported, warn

if TYPE_CHECKING:
    from ...settings import Settings

VERBS = {"append": "appended to", "replace": "wrote"}


def _new_content(replace_file: str | None, stdin: bool) -> bytes | None:
    if stdin:
        return sys.stdin.buffer.read()
    if replace_file is None:
        return None
    try:
        with open(replace_file, "rb") as fh:
            return fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read --replace-file {replace_file}: {exc.strerror or exc}") from None


def _progress_past_one_file(stack):
    """Progress of the index update after the write, shown when it covers more than the file written
    (other files of the agent changed too: no watch or service kept the index up to date)."""
    from ..progress import progress_reporter

    shown: list = []

    def report(p) -> None:
        if not shown:
            if p.files_total <= 1:
                return
            warn(f"the write is done; bringing the agent's index up to date ({p.files_total} changed files; "
                 "Ctrl-C stops this, not the write)")
            shown.append(progress_reporter(stack))
        shown[0](p)

    return report


def run_write(settings: Settings, path: str, append: str | None, replace_file: str | None, stdin: bool,
              expect: str | None, no_index: bool, json_out: bool, idempotency_key: str | None = None) -> int:
    if sum((append is not None, replace_file is not None, stdin)) != 1:
        raise UsageError("give exactly one of --append TEXT, --replace-file FILE or --stdin")
    content = _new_content(replace_file, stdin)
    with contextlib.ExitStack() as stack:
        memory = stack.enter_context(contextlib.closing(open_memory(settings, notice=warn)))
        result = memory.write(path, content=content, append=append, expect=expect, update_index=not no_index,
                              idempotency_key=idempotency_key, progress=_progress_past_one_file(stack))
    if result.replay is not None:
        warn("already written by an earlier write with the same idempotency key; nothing written again")
    if result.index is not None and result.index.failed:
        warn(result.index.reason or "the index was not updated")
    if reported(result, json_out):
        return 0
    verb = "created" if result.created else VERBS[result.action]
    print(f"{verb} {result.path}: version {result.version[:12]} ({result.size} bytes)")
    return 0
