"""Run doctor: the checks, and with ``fix`` the repairs under the workspace lock.

Plain doctor only reads (no lock, no state dir created, no workspace file touched): its checks
run where the state database cannot be written, and what it writes after them are caches of the
product's own (:func:`keep_caches`): the link table, and the state database's last clean check
(``state-checked.json``). ``fix`` takes
the per-workspace lock (waiting up to 5 s), looks again under the lock, applies
one repair at a time (asking first when ``confirm`` is given) and looks again
after each, since one repair changes what the others see (a resumed merge
removes ``memory.md``). Each finding is repaired at most once per run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import ClassVar

from .. import faults
from ..errors import StateDirError, describe_os_error
from ..settings import Settings
from . import (
    check_asides,
    check_files,
    check_folders,
    check_index,
    check_journal,
    check_leftovers,
    check_links,
    check_locks,
    check_moves,
    check_openclaw,
    check_rollback,
    check_root,
    check_service,
    check_startup,
    check_state,
    check_state_dir,
    check_state_temps,
    check_watchdog,
    check_workspaces,
    recovery,
    repair_index,
    repair_root,
    repair_state,
)
from .journal import doctor_lock, lock_path
from .model import CheckContext, Finding, Repair

# Checks only read (plain doctor runs only these), in report order; repairs keyed by finding id.
CHECKS = (*check_state_dir.CHECKS, *check_journal.CHECKS, *check_moves.CHECKS, *check_rollback.CHECKS, *check_state.CHECKS, *check_locks.CHECKS,
          *check_folders.CHECKS, *check_service.CHECKS, *check_root.CHECKS, *check_startup.CHECKS, *check_files.CHECKS,
          *check_openclaw.CHECKS, *check_watchdog.CHECKS, *check_index.CHECKS,
          *check_links.CHECKS, *check_leftovers.CHECKS, *check_asides.CHECKS, *check_state_temps.CHECKS,
          *check_workspaces.CHECKS)
REPAIRS = {**recovery.REPAIRS, **check_moves.REPAIRS, **check_rollback.REPAIRS, **repair_state.REPAIRS, **check_locks.REPAIRS,
           **check_folders.REPAIRS, **check_service.REPAIRS, **repair_root.REPAIRS, **repair_index.REPAIRS,
           **check_leftovers.REPAIRS, **check_asides.REPAIRS, **check_state_temps.REPAIRS}

CHECK_FAILED = "check-failed"  # a check the file system stopped (_run_check)

# Repaired before the others, whatever the report's order: every other repair reads and writes the
# state database (an interrupted rollback or move finished over a damaged one fails, and each
# finding is tried once a run, so it was left for the next `doctor --fix`).
STATE_DB_FIRST = frozenset({check_state.STATE_DB_NOT_A_FILE, check_state.STATE_DB_COMPANION_NOT_A_FILE,
                            check_state.STATE_DB_DAMAGED})


def run_checks(settings: Settings, *, plain: bool = False) -> list[Finding]:
    """Every finding, in check order, from one fresh look at the workspace (``plain``: where
    nothing can be written), then the caches the checks brought up to date kept."""
    ctx = CheckContext(settings)
    if plain:
        from ..database import read_only

        with read_only():
            found = [finding for check in CHECKS for finding in _run_check(check, ctx)]
    else:
        found = [finding for check in CHECKS for finding in _run_check(check, ctx)]
    keep_caches(ctx, found)
    return found


def _run_check(check: Callable[[CheckContext], list[Finding]], ctx: CheckContext) -> list[Finding]:
    """One check's findings; a failure of the file system it meets is a finding of its own, so that
    doctor still says what every other check found (a file where the index's folder belongs made
    doctor itself fail with "Not a directory" and name nothing), and so is a state database this
    user cannot open, or one whose rows a check cannot read (a value of the wrong type: the state
    database's own finding says so)."""
    name = check.__name__.removeprefix("check_").replace("_", " ")
    try:
        return check(ctx)
    except OSError as exc:
        return [Finding(CHECK_FAILED, "error", f"The {name} check could not finish: {describe_os_error(exc)}.",
                        False, (exc.filename,) if isinstance(exc.filename, str) else ())]
    except StateDirError as exc:  # the state database cannot be opened (another user's file): its own finding says why
        return [Finding(CHECK_FAILED, "error", f"The {name} check could not finish: {exc.message}.", False, ())]
    except Exception:
        from ..database.repair import damage_behind

        why = damage_behind(ctx.settings.data_dir)
        if why is None:
            raise  # not the database's: a fault of the code, shown as one
        return [Finding(CHECK_FAILED, "error", f"The {name} check could not finish: the state database is damaged: {why}.",
                        False, ())]


def keep_caches(ctx: CheckContext, found: list[Finding]) -> None:
    """Store what the checks cached (the links they parsed: the next doctor parses only what
    changes; the state database found sound, in ``state-checked.json``: the next doctor reads it
    whole only once it changed), only into a state database that exists (none is created), is of this release's
    schema (none is migrated) and where the checks found no error (a damaged database, an
    interrupted repair, move or rollback is left exactly as found; a warning stops nothing)."""
    from ..database import Database
    from ..database.connection import peek
    from ..database.schema import FIRST_RELEASED, MIGRATIONS

    if not ctx.cache_writes or any(f.severity == "error" for f in found):
        return
    db = Database(ctx.settings.data_dir)
    try:
        if not db.exists() or db.unusable() is not None:
            return
        if peek(db.path, "PRAGMA user_version")[0][0] != FIRST_RELEASED + len(MIGRATIONS):
            return
    except (OSError, sqlite3.Error):
        return  # what cannot be read now is a finding of the next doctor's, not this one's failure
    for write in ctx.cache_writes:
        write()

Confirm = Callable[[Finding, str], bool]


@dataclass(frozen=True)
class DoctorReport:
    workspace: str
    findings: tuple[Finding, ...]
    repairs: tuple[Repair, ...]
    remaining: tuple[Finding, ...]

    JSON_DERIVED: ClassVar = ("ok",)

    @property
    def ok(self) -> bool:
        """No error or warning is left (notes do not count)."""
        return not any(f.blocking for f in self.remaining)

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def run_doctor(
    settings: Settings,
    *,
    fix: bool = False,
    workspace_suggestions: bool = True,
    confirm: Confirm | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
) -> DoctorReport:
    """Check the workspace; with ``fix``, repair what can be repaired. Raises LockTimeout (exit 2).
    Without ``workspace_suggestions`` (OpenClaw's ``--no-workspace-suggestions``) its suggestion to
    start a memory system, a note and never a repair, is left out."""
    report = _run_doctor(settings, fix, confirm, on_lock_wait)
    if workspace_suggestions:
        return report
    from .check_openclaw import MEMORY_SYSTEM_NOT_FOUND

    return replace(report, findings=tuple(f for f in report.findings if f.id != MEMORY_SYSTEM_NOT_FOUND),
                   remaining=tuple(f for f in report.remaining if f.id != MEMORY_SYSTEM_NOT_FOUND))


def _run_doctor(settings: Settings, fix: bool, confirm: Confirm | None,
                on_lock_wait: Callable[[str], None] | None) -> DoctorReport:
    workspace = str(settings.workspace)
    if not fix:
        found = tuple(run_checks(settings, plain=True))
        return DoctorReport(workspace, found, (), found)

    specs = REPAIRS
    repairs: list[Repair] = []
    tried: set[tuple[str, tuple[str, ...]]] = set()
    # Taking doctor's own lock sets aside whatever is at its path (a folder, a link: fsutil.lock), which
    # doctor then found nowhere ("Found: nothing", the folder moved in silence): found and repaired
    # here first, as any other finding (under the folder's flock, as the lock itself would).
    odd = [f for f in check_locks.check_locks(CheckContext(settings)) if str(lock_path(settings.data_dir)) in f.paths]
    for blocker in odd:
        tried.add((blocker.id, blocker.paths))
        spec = specs[blocker.id]
        if confirm is not None and not confirm(blocker, spec.describe(blocker)):
            declined = Repair(blocker.id, spec.action, "declined", "declined at the prompt; nothing changed (doctor "
                              "--fix cannot take its lock without moving it)", blocker.paths)
            return DoctorReport(workspace, tuple(odd), (declined,), tuple(odd))
        repairs.append(spec.apply(settings, blocker))
    lock = doctor_lock(settings.data_dir, workspace)
    lock.acquire(on_wait=on_lock_wait)
    try:
        faults.reach("locked")
        findings = [*odd, *run_checks(settings)]
        current = findings[len(odd):]
        while True:
            todo = next((f for f in sorted(current, key=lambda f: f.id not in STATE_DB_FIRST)
                         if f.fixable and f.id in specs and (f.id, f.paths) not in tried), None)
            if todo is None:
                break
            tried.add((todo.id, todo.paths))
            spec = specs[todo.id]
            if confirm is not None and not confirm(todo, spec.describe(todo)):
                repairs.append(Repair(todo.id, spec.action, "declined", "declined at the prompt; nothing changed", todo.paths))
                continue
            repairs.append(spec.apply(settings, todo))
            current = run_checks(settings)
        return DoctorReport(workspace, tuple(findings), tuple(repairs), tuple(current))
    finally:
        lock.release()
