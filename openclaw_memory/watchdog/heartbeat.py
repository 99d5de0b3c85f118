"""``watchdog heartbeat``: verify, then snapshot; on a break, leave a checkpoint.

Verify and snapshot come from one pass over the tree, so nothing that changes
between them can be absorbed into the new baseline unreported. The new baseline and the
checkpoint section are saved in one transaction, only over the baseline the pass compared
with (another heartbeat that saved meanwhile makes the pass run again against its baseline):
no change is reported twice or absorbed unreported. A break appends a section to the pending checkpoint (see
:mod:`openclaw_memory.watchdog.checkpoint`), which the next ``prompt`` shows once.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import UsageError, bytes_shown
from ..settings import Settings
from ..wire import key
from .checkpoint import append_checkpoint
from .compare import compare_workspace, rules_of
from .content import keep_contents
from .ignore import IgnoreRules, workspace_patterns
from .snapshot import SnapshotInfo, new_table, save_table, timestamp_label
from .store import SnapshotStore, Table
from .verify import VerifyResult, result_from

OK = "HEARTBEAT_OK"
BREAK = "BREAK"


@dataclass(frozen=True)
class HeartbeatResult:
    status: str  # HEARTBEAT_OK or BREAK
    verify: VerifyResult | None  # None when this heartbeat took the first snapshot
    snapshot: str  # the new baseline's label
    checkpoint: Path | None
    warnings: tuple[str, ...] = key(omit=lambda h: not h.warnings, default=())

    @property
    def ok(self) -> bool:
        return self.status == OK


def _result(status: str, verify: VerifyResult | None, info: SnapshotInfo, checkpoint: Path | None) -> HeartbeatResult:
    own = verify.warnings if verify is not None else ()
    return HeartbeatResult(status, verify, info.label, checkpoint, tuple(dict.fromkeys(own + info.warnings)))


def _md(path: str) -> str:
    # One line per path, and no backtick that could close the code span.
    return bytes_shown(path).encode("unicode_escape").decode("ascii").replace("`", "\\x60")


def checkpoint_section(result: VerifyResult, snapshot_label: str, taken_at: str) -> str:
    """The Markdown section a break adds to the checkpoint."""
    lines = [
        f"## {taken_at}: {result.break_count} change(s) since snapshot `{result.baseline}`",
        "",
        "Files were changed or deleted outside the agent's session; re-read them before relying on what you remember.",
        "",
    ]
    for c in result.changed:
        note = "" if c.new_hash else " (now unreadable, a folder, or still changing)"
        lines.append(f"- changed: `{_md(c.path)}`{note}")
    lines += [f"- deleted: `{_md(p)}`" for p in result.deleted]
    shown = result.new[:20]
    lines += [f"- new: `{_md(p)}`" for p in shown]
    if len(result.new) > len(shown):
        lines.append(f"- … and {len(result.new) - len(shown)} more new file(s)")
    lines += ["", f"New baseline: snapshot `{snapshot_label}`."]
    return "\n".join(lines)


def heartbeat(settings: Settings) -> HeartbeatResult:
    """Verify against the baseline, take a timestamped snapshot, write a checkpoint on a break.

    With no baseline yet, the first snapshot is taken and the result is clean.
    """
    ws = settings.workspace
    store = SnapshotStore(settings.data_dir)
    patterns, refused = _patterns(ws, store)
    rules = rules_of(settings, patterns)
    while True:
        base = store.baseline()
        table = new_table(settings, timestamp_label("heartbeat-"), patterns)
        # The walks run outside any transaction; the state database is written only at the end.
        delta = compare_workspace(ws, rules, base, table, table.guard_ns)
        if refused:
            delta.warnings.append(refused)
        result = None
        if base is not None:
            result = result_from(base, delta)
            if base.ignore != patterns:
                result = _judge_by_baseline_rules(settings, base, result, rules)
        files, not_kept = keep_contents(settings, table)  # read outside the transaction, as the walk
        delta.warnings += not_kept
        # The new baseline and the checkpoint of what it absorbed in one transaction, and only over
        # the baseline this pass compared with: a heartbeat that saved meanwhile made this pass's
        # delta stale, and it is taken again against that one (no change reported twice).
        with store.saving():
            if store.latest_label() != (base.label if base is not None else None):
                continue
            info = save_table(settings, store, table, delta, files)
            if result is None:
                return _result(OK, None, info, None)
            if result.break_count == 0:
                return _result(OK, result, info, None)
            path = append_checkpoint(settings.data_dir, checkpoint_section(result, info.label, info.taken_at), settings.agent)
            return _result(BREAK, result, info, path)


def _patterns(workspace: Path, store: SnapshotStore) -> tuple[list[str], str | None]:
    """The rules for the new baseline, and why the ignore file was refused (None: it was not).

    An ignore file that cannot be used (a symlink to ``/dev/zero``, a FIFO, a line git rejects),
    which anyone who can write in the workspace can leave, must not silence the heartbeat: with a
    baseline, its rules stay in force and the change is reported (the ignore file is itself an
    entry). With none, there are no rules to keep, and it is refused as by ``snapshot``."""
    try:
        return workspace_patterns(workspace), None
    except UsageError as exc:
        base = store.baseline()
        if base is None:
            raise
        return list(base.ignore), f"{exc.message}; the baseline's ignore rules stay in force until it is fixed"


def _judge_by_baseline_rules(settings: Settings, base: Table, recorded: VerifyResult, new_rules: IgnoreRules) -> VerifyResult:
    """The ignore rules changed since the baseline (the ignore file, or the defaults since the baseline's
    release): report what the baseline's rules see.

    The recording pass (new rules) already ran; its changes to paths both rule sets
    track, and its deletions of paths the new rules do not ignore, are merged in so a
    change made between the two passes is still reported.
    """
    old_rules = rules_of(settings, base.ignore)
    judged = result_from(base, compare_workspace(settings.workspace, old_rules, base, None, base.guard_ns))
    changed = {c.path: c for c in judged.changed}
    for c in recorded.changed:
        changed.setdefault(c.path, c)
    deleted = set(judged.deleted) | {p for p in recorded.deleted if not new_rules.ignores_path(p)}
    deleted -= changed.keys()
    return replace(
        judged,
        changed=tuple(sorted(changed.values(), key=lambda c: c.path)),
        deleted=tuple(sorted(deleted)),
        warnings=judged.warnings + ("the ignore rules changed since the baseline (its ignore file, or the defaults of an earlier "
                                     "release); the delta uses the baseline's rules",),
    )

