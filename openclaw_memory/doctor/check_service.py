"""What a memory service that no longer runs left in ``service/``: its socket, info file and token.

A service that was killed (or a machine that stopped) never removed them, and every command
then tries the socket, says the service is not running and works in-process, each time. They
only tell clients where a running service listens, so ``--fix`` removes them, holding the
service's lock while it does: a service starting meanwhile takes that lock before it binds its
socket, so nothing of a running service is ever removed.
"""

from __future__ import annotations

import os

from ..errors import LockTimeout
from ..fsutil.lock import FileLock, lock_holder
from ..service_files import INFO, SOCKET, TOKEN, lock_path, remove_service_files, service_dir
from ..settings import Settings
from .model import CheckContext, Finding, Repair, RepairSpec

ID = "service-left-over"


def left_over(settings: Settings) -> list[str]:
    """The service files present while no service holds the lock."""
    found = left_over_paths(settings)
    if not found or lock_holder(lock_path(settings)) is not None:
        return []
    return found


def left_over_paths(settings: Settings) -> list[str]:
    folder = service_dir(settings)
    return [path for path in (os.path.join(folder, n) for n in (SOCKET, INFO, TOKEN)) if os.path.lexists(path)]


def check_service(ctx: CheckContext) -> list[Finding]:
    found = left_over(ctx.settings)
    if not found:
        return []
    listing = "\n".join(f"- {path}" for path in found)
    return [Finding(
        ID,
        "warning",
        f"A memory service that no longer runs (killed, or the machine stopped) left its files:\n{listing}\n"
        "Every command tries its socket, says the service is not running and works in-process. "
        "`openclaw-memory doctor --fix` removes them (they only say where a running service listens); "
        "so does the next `openclaw-memory serve`.",
        True,
        tuple(found),
    )]


def _remove(settings: Settings, finding: Finding) -> Repair:
    lock = FileLock(lock_path(settings), timeout=0, what="the memory service", remove=True)
    try:
        lock.acquire()
    except LockTimeout:
        return Repair(finding.id, "remove", "done", "a memory service runs again and uses them; nothing to do", finding.paths)
    try:
        remove_service_files(settings)  # a folder or link in a file's place is kept, not deleted
    except OSError as exc:
        return Repair(finding.id, "remove", "failed", f"{exc.strerror or exc} ({exc.filename or ''})", finding.paths)
    finally:
        lock.release()
    return Repair(finding.id, "remove", "done", "removed the left-over socket, info file and token (a folder or link "
                  "in their place is kept under damaged/)", finding.paths)


CHECKS = [check_service]
REPAIRS = {ID: RepairSpec("remove", lambda f: "Remove the files a memory service that no longer runs left", _remove)}
