"""``openclaw-memory watch``: keep the agent's index in step with its memory files, live."""

import sys

from ...extras import require
from ..output import warn


def _emit_json(data: dict) -> None:
    import json

    # One object per line, flushed: a program reads the stream as it comes.
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def run_watch(settings, json_out: bool, poll: bool) -> int:
    require("watch")
    from ...watch.watcher import Watcher

    def on_change(change) -> None:
        if json_out:
            _emit_json(change.to_json())
        else:
            sys.stdout.write(change.line() + "\n")
            sys.stdout.flush()

    def on_notice(message: str) -> None:
        warn(message)
        sys.stderr.flush()

    def on_start(info) -> None:
        sys.stderr.write(
            f"watching {len(info.folders)} folder(s) of {info.workspace} for agent {info.agent} "
            f"({info.mode}, {info.files} files indexed); Ctrl-C stops\n"
        )
        sys.stderr.flush()

    summary = Watcher(settings, on_change=on_change, on_notice=on_notice, on_start=on_start, polling=poll).run()
    if json_out:
        return 0
    sys.stderr.write(f"stopped ({summary.stopped_by}): {summary.changes} change(s) applied in {summary.batches} sync(s)\n")
    return 0
