"""The memory in this process: each declared operation (:mod:`.operations`) run here, on a pool of
warm indexes (:mod:`openclaw_memory.index.pool`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import LockTimeout, MemoryClosed, MemoryToolError, StateDamaged, workspace_gone
from .operations import Operation, method_of

if TYPE_CHECKING:
    from ..index.pool import IndexPool
    from ..settings import Settings
    from .service_status import ServiceInfo, ServiceStatus


class LocalMemory:
    """:class:`~openclaw_memory.memory.Memory` computed here.

    ``service_info`` is given inside the service, whose own figures ``service()`` then returns;
    ``on_session_end`` hears each session that ended there.
    """

    def __init__(self, settings: Settings, pool: IndexPool | None = None, *,
                 service_info: Callable[[], ServiceInfo] | None = None,
                 on_session_end: Callable[[str], None] | None = None):
        from ..index.pool import IndexPool

        self.settings = settings
        self.pool = pool or IndexPool()
        self.service_info = service_info
        self.on_session_end = on_session_end

    def for_session(self, session: str | None) -> LocalMemory:
        return self.for_agent(self.settings.agent, session)

    def for_agent(self, agent: str, session: str | None) -> LocalMemory:
        return LocalMemory(self.settings.with_agent(agent).with_session(session), self.pool,
                           service_info=self.service_info, on_session_end=self.on_session_end)

    def call(self, op: Operation, args: tuple = (), kwargs: dict[str, Any] | None = None) -> Any:
        """Run a declared operation here. A failure no layer words (a TypeError, a ValueError) met
        where the state database holds a row of the wrong type is that damage, said as such (not a
        failure that says what it is whatever the database holds: SQLite out of space, an import
        that fails); a file or folder missing because the workspace itself went away (a session
        outlives it) is that. An argument not of its declared type is BadValue first (``op.checked``);
        a call on a closed memory is MemoryClosed, before it opens anything again."""
        if self.pool.closed:
            raise MemoryClosed()
        bound = op.checked(args, kwargs or {})
        try:
            return op.run(self, bound)
        except LockTimeout as exc:
            worded = held_by_the_service(self.settings, exc)
            if worded is None:
                raise
            raise worded from None
        except MemoryToolError:
            raise
        except OSError as exc:
            if isinstance(exc, (FileNotFoundError, NotADirectoryError)) and not os.path.isdir(self.settings.workspace):
                raise workspace_gone(self.settings.workspace) from None
            raise
        except Exception as exc:
            from ..database.repair import damage_behind

            unrelated = _not_the_damage(exc, self.settings)
            if unrelated is not None:
                raise unrelated from exc
            if isinstance(exc, (ImportError, MemoryError)):
                raise  # the code or the machine, whatever the database holds
            why = damage_behind(self.settings.data_dir)
            if why is None:
                raise  # not the database's: a fault of the code, shown as one
            raise StateDamaged(f"the state database is damaged: {why}; `openclaw-memory doctor --fix` sets it aside "
                               "and makes a new one with every row that still reads") from exc

    def __getattr__(self, name: str) -> Any:  # the declared operations (only those)
        return method_of(LocalMemory, name).__get__(self)

    def open_state(self) -> None:
        """Open the state database now (created, migrated): a service says it is ready only once no
        first request has that to do."""
        from ..database import Database

        Database(self.settings.data_dir).open()

    def warm(self) -> None:
        if self.pool.closed:
            raise MemoryClosed()
        self.pool.warm(self.settings)

    def close(self) -> None:
        """Let go of the index (another memory of this process on the same settings keeps what it
        shares); a later call is MemoryClosed, a second close() nothing."""
        self.pool.close()

    def __enter__(self) -> LocalMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _not_the_damage(exc: Exception, settings: Settings) -> MemoryToolError | None:
    """A failure no layer worded that says itself what it is, whatever damage the state database
    has: SQLite out of space (a rebuild by ``doctor --fix`` on a full disk was said as the damage
    it was repairing, "run doctor --fix"). None for any other."""
    import sqlite3

    if not isinstance(exc, sqlite3.Error):
        return None
    from ..database.failures import full_error

    return full_error(exc, os.path.join(os.fspath(settings.data_dir), "state.db"))


def service_status(memory: LocalMemory) -> ServiceStatus:
    if memory.service_info is not None:
        from .service_status import ServiceStatus

        return ServiceStatus(memory.service_info())
    from .client import service_status as asked

    return asked(memory.settings)


def end_session(memory: LocalMemory) -> None:
    from ..history.states import forget_session
    from ..history.store import HistoryStore

    settings = memory.settings
    if settings.session:
        forget_session(HistoryStore.for_settings(settings), settings.agent, settings.session)
        if memory.on_session_end is not None:
            memory.on_session_end(settings.session)


def forget_read(memory: LocalMemory, path: str, version: str) -> None:
    from ..files.read import resolve_memory_path
    from ..history.states import READ, ReadRecords
    from ..history.store import HistoryStore

    # By its path as the read result names it: its absolute path stays in the process that read it
    # (a result through the service carries only the path).
    abs_path = resolve_memory_path(path, str(memory.settings.workspace), memory.settings.extra_paths).abs_path
    store = HistoryStore.for_settings(memory.settings)
    records = ReadRecords.for_settings(store, memory.settings)
    with store.lock():
        seen = records.get(abs_path)
        if seen is not None and seen.version == version and seen.how == READ:  # else read again or written since
            records.forget(abs_path)


def held_by_the_service(settings: Settings, exc: LockTimeout, because: str | None = None, *,
                        silent_s: float | None = None, made: bool = False) -> LockTimeout | None:
    """``exc`` (a lock this process waited for) worded as what it is where the holder is the
    workspace's running service: it keeps the index open while it runs, so "try again when it has
    finished" waited for nothing (review). ``because``: why the service would not answer this
    command (it refused this caller); ``silent_s``: it took this command and did not answer within
    that many seconds (a stopped or hung service lets go of nothing: it was told to run it through
    the service and to wait until it lets go); else this process works beside it
    (OPENCLAW_MEMORY_SERVICE=off, a library in-process); ``made``: what met the lock there is only the
    index update after a change this command made (a write, rm, mv, restore), so nothing is to be
    tried again (review). None where another process holds it."""
    from ..service_files import read_info

    pid = (read_info(settings) or {}).get("pid")
    what, held, _ = exc.message.partition(" is held by ")
    if not isinstance(pid, int) or pid == os.getpid() or not held or f"(pid {pid})" not in exc.message:
        return None
    idle = settings.service.shard_idle
    if silent_s is not None:
        return LockTimeout(f"{what} is held by the memory service (pid {pid}), which did not answer within {silent_s:g} s "
                           "and keeps the index open while its process lives: try again once it answers, or end it "
                           f"(`openclaw-memory serve --stop`; `kill -9 {pid}` where it is stopped or hung)")
    if because is not None:
        return LockTimeout(f"{what} is held by the memory service (pid {pid}), which cannot answer this command: "
                           f"{because}; or try again once it lets go of the index ({idle:g} s after it last used it: "
                           "its live sync uses it at each change of the notes)")
    beside = (f"{what} is held by the memory service (pid {pid}), which keeps the index open while it runs; "
              "this command works beside it, in-process")
    if made:
        return LockTimeout(f"{beside}: the change is made, and the next `openclaw-memory index` or search catches up "
                           "(a change made through the service, without OPENCLAW_MEMORY_SERVICE=off, updates it at once)")
    return LockTimeout(f"{beside}: run it through the service (without OPENCLAW_MEMORY_SERVICE=off), stop the service "
                       "with `openclaw-memory serve --stop`, or try again "
                       f"once it lets go of the index ({idle:g} s after it last used it)")
