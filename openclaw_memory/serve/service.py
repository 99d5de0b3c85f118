"""``openclaw-memory serve``: one resident process per (state dir, workspace).

1. Take the service lock (``<data dir>/service/lock``, without waiting): a second ``serve``
   for the workspace names the holder's pid and exits (exit 2). Holding it also means any
   socket left in the folder is stale (its service was killed): it is removed and replaced.
2. Bind the Unix socket (mode 0600, in a 0700 folder) and answer requests, one thread per
   connection, each request through :class:`.core.ServiceCore` (the service's LocalMemory),
   with a heartbeat every half second while it works.
3. With live sync on (the default; ``watch`` is this process), run the watcher in the main
   thread on the service's own warm index; without it, wait for a signal.
4. Optionally, MCP over streamable HTTP on a loopback address (see :mod:`openclaw_memory.mcp.http`).
5. SIGTERM/SIGINT/SIGHUP: stop accepting, let requests in flight finish (a full index is abandoned
   at its next step: the index is crash-safe), close the shards, remove the socket, token,
   info file and lock file. Later signals during the stop say once that it is already stopping
   (fault step ``serve:stopping``); once stopped, the CLI's process ignores them to its end
   (``serve:stopped``).
6. Its socket removed while it runs (checked every second): nothing can reach it, so it says so and
   stops as on a signal, freeing the shards and the lock; a new ``serve`` waits for that and takes
   over (docs/serve.md says why it does not bind the socket again).
"""

from __future__ import annotations

import json
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import faults
from ..errors import LockTimeout, MemoryToolError, UsageError, os_error, shown
from ..fsutil.atomic import atomic_write_bytes
from ..fsutil.lock import FileLock
from ..fsutil.private import check_data_dir
from ..memory.protocol import HEARTBEAT_S, MAX_LINE, REFUSED, LineReader, LineTooLong, answer_line
from ..service_files import (
    INFO,
    SOCKET,
    lock_path,
    read_info,
    remove_service_files,
    service_dir,
    socket_address,
    socket_path,
    unreachable_service,
)
from ..signals import ignored_to_the_end, note_signals, noted_once, stop_signals
from ..wire import key
from .core import Refused, ServiceCore, encoded, error_answer

if TYPE_CHECKING:  # loaded only when the service needs them (--http, live sync)
    from ..mcp.http import HttpEndpoint
    from ..settings import Settings
    from ..watch.watcher import Watcher

DRAIN_S = 10.0  # how long a stop waits for requests in flight
TAKEOVER_S = 30.0  # how long a new serve waits for a service whose socket was removed to stop
SOCKET_GONE = "its socket was removed"  # why a service stopped by itself (ServiceSummary.stopped_by)
# Connections served at once, a thread each (an MCP session or a client keeps one open, mostly
# idle). Past it a new one is told so and closed, and its caller works in-process: without a bound
# enough connections made the thread that accepts them fail to start another and stop accepting.
MAX_CONNECTIONS = 256
SWEEP_EVERY_S = 60.0  # how often the records of vanished MCP sessions are looked for (ServiceCore.sweep_sessions)


@dataclass(frozen=True)
class ServiceStarted:
    workspace: str
    agent: str
    pid: int
    socket: str
    http: str | None
    live_sync: bool


@dataclass(frozen=True)
class ServiceSummary:
    requests: int
    seconds: float = key(digits=3)
    stopped_by: str = key()
    changes: int = key()
    batches: int = key()

    @property
    def unasked(self) -> bool:
        """It stopped by itself (its socket or its workspace went), not as asked."""
        from ..watch.watcher import WORKSPACE_GONE

        return self.stopped_by in (SOCKET_GONE, WORKSPACE_GONE)


def _ignore(*_args) -> None:
    return None


def hold_service_lock(settings: Settings, on_notice: Callable[[str], None] = _ignore, http: str | None = None) -> FileLock:
    """The service lock. A holder whose socket was removed stops on its own (it checks every second):
    this one waits for it, up to ``TAKEOVER_S``, and takes over. ``http``: the MCP endpoint this one
    was to serve (said where the running one serves none)."""
    what = f"the memory service of {settings.workspace}"
    lock = FileLock(lock_path(settings), timeout=0, what=what, remove=True)
    try:
        lock.acquire()
        return lock
    except LockTimeout:
        holder = unreachable_service(settings)
        if holder is None:
            raise UsageError(_already_running(settings, lock.holder_pid(), http)) from None
    on_notice(f"the memory service (pid {holder}) cannot be reached (its socket {socket_path(settings)} was removed) "
              "and is stopping; waiting for it to finish, then taking over")
    lock = FileLock(lock_path(settings), timeout=TAKEOVER_S, what=what, remove=True)
    try:
        lock.acquire()
    except LockTimeout:
        raise UsageError(
            f"the memory service for {settings.workspace} (pid {holder}) lost its socket but did not stop within "
            f"{TAKEOVER_S:g} s; stop it (`kill {holder}`) and run `openclaw-memory serve` again"
        ) from None
    return lock


def _already_running(settings: Settings, pid: object, http: str | None = None) -> str:
    """Why a second ``serve`` of the workspace exits, true of whoever runs it: the running service
    answers only callers of its own settings, so one of another agent (which may be configured
    otherwise) is not told that it uses it; one asked for MCP over HTTP is told whether it serves it."""
    info = read_info(settings) or {}
    agent = info.get("agent")
    said = f"a memory service for {settings.workspace} is already running (pid {pid})"
    if http is not None:  # (it said "no second one is needed" to one asking for an endpoint it lacks)
        serving = info.get("http")
        if isinstance(serving, str) and serving:
            return (f"{said}, serving MCP over HTTP at {serving}: connect there (its bearer token is in "
                    f"{os.path.join(service_dir(settings), 'token')}); to serve another address, stop it first: "
                    "`openclaw-memory serve --stop`")
        return (f"{said} without MCP over HTTP: to serve it, stop it (`openclaw-memory serve --stop`) and start it "
                f"again with --http {http}")
    if isinstance(agent, str) and agent != settings.agent:
        ours, theirs = shown(agent), shown(settings.agent)
        return (f"{said}, serving agent {ours}; one runs per workspace, answering only the agents of its settings: "
                f"the commands and `openclaw-memory mcp` of agent {theirs} use it where the two agents' settings are the "
                "same (extra paths and search settings in openclaw.json), and work in-process otherwise; to serve agent "
                f"{theirs} in its place, stop it first: `openclaw-memory serve --stop`")
    return (f"{said}; the CLI and `openclaw-memory mcp` use it where their settings are its own (others work "
            "in-process; to change its settings, stop it first: `openclaw-memory serve --stop`): no second one is needed")


class Service:
    """Run until SIGTERM/SIGINT (or ``stop()``); see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        *,
        live_sync: bool = True,
        polling: bool = False,
        http: str | None = None,
        on_change: Callable = _ignore,
        on_notice: Callable[[str], None] = _ignore,
        on_start: Callable[[ServiceStarted], None] = _ignore,
        on_watch_start: Callable = _ignore,
    ):
        self.settings = settings
        self.live_sync = live_sync
        self.polling = polling
        self.http_address = http
        self.on_change = on_change
        self.on_notice = on_notice
        self.on_start = on_start
        self.on_watch_start = on_watch_start
        self.core = ServiceCore(settings, live_sync=live_sync)
        self._stop = threading.Event()
        self._sweep_said: set[str] = set()  # what a session sweep said went wrong (said once each)
        self._stopped_by = "stop"
        self._listener: socket.socket | None = None
        self._inflight = 0
        self._inflight_lock = threading.Condition()
        self._connections = 0  # served now (MAX_CONNECTIONS); under _inflight_lock
        self._http: HttpEndpoint | None = None
        self._watcher: Watcher | None = None
        self._socket_id: tuple[int, int] | None = None  # (st_dev, st_ino) of the socket it bound

    def stop(self) -> None:
        self._stop.set()
        self.core.stopping.set()
        if self._watcher is not None:
            self._watcher.stop()

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> ServiceSummary:
        started = time.monotonic()
        folder = service_dir(self.settings)
        check_data_dir(self.settings.state_dir, self.settings.data_dir)
        lock = hold_service_lock(self.settings, self.on_notice, self.http_address)
        changes = batches = 0
        # Caught from before "serving" is said: a SIGINT/SIGTERM/SIGHUP sent on seeing it stops the service
        # cleanly (it was a KeyboardInterrupt, exit 130, until the wait or the watch took them).
        signalled: list[str] = []
        stopping = stop_signals()
        restore_signals = note_signals(signalled, *stopping)
        try:
            os.chmod(folder, 0o700)
            remove_service_files(self.settings)  # left by a killed service: ours now
            listener = self._listener = self._bind()
            threading.Thread(target=self._janitor, name="service-janitor", daemon=True).start()
            if self.http_address is not None:
                from ..mcp.http import HttpEndpoint

                core = self.core
                http = self._http = HttpEndpoint(core.memory, self.settings, self.http_address,
                                                 lambda session: core.memory.for_session(session).end_session(),
                                                 on_call=core.called).start()
                self.core.http = http.url
            self.core.memory.open_state()
            self._sweep_sessions()  # at the start, before the socket answers (HTTP may already); then the janitor's rounds
            self._write_info()
            # Answered from here on (a client that connected earlier waits in the backlog): a caller
            # that gets an answer finds the state database open and the info file written.
            threading.Thread(target=self._accept_loop, args=(listener,), name="service-accept", daemon=True).start()
            self.on_start(ServiceStarted(str(self.settings.workspace), self.settings.agent, os.getpid(),
                                         os.path.join(folder, SOCKET), self.core.http, self.live_sync))
            if self.live_sync:
                changes, batches = self._watch(signalled)
            else:
                self._wait_for_signal(signalled)
        finally:
            # Still caught while it stops (up to DRAIN_S for requests in flight): a second Ctrl-C or
            # SIGTERM met the handlers put back, and killed it (130, 143) with its files left behind.
            noted_once(b"already stopping: letting the requests in flight finish, then closing the index\n", *stopping)
            faults.reach("serve:stopping")
            try:
                self._shutdown(lock)
                lock.release()
            finally:
                restore_signals()
                ignored_to_the_end(*stopping)
        faults.reach("serve:stopped")
        return ServiceSummary(self.core.requests, time.monotonic() - started, self._stopped_by, changes, batches)

    def _bind(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # born 0600: no moment where another user could connect
        try:
            with socket_address(self.settings) as address:
                sock.bind(address)
        finally:
            os.umask(old)
        os.chmod(os.path.join(service_dir(self.settings), SOCKET), 0o600)
        st = os.stat(socket_path(self.settings))
        self._socket_id = (st.st_dev, st.st_ino)
        sock.listen(64)
        sock.settimeout(0.25)  # the accept loop checks for a stop this often
        return sock

    def _write_info(self) -> None:
        info = {"pid": os.getpid(), "started": self.core.started, "agent": self.settings.agent,
                "workspace": str(self.settings.workspace), "liveSync": self.live_sync, "http": self.core.http}
        folder = service_dir(self.settings)
        try:
            atomic_write_bytes(os.path.join(folder, INFO), json.dumps(info).encode("utf-8"), 0o600)
        except OSError as exc:  # (a full disk said "the disk is full" naming no place: the state dir's, not the workspace's)
            raise os_error(exc, f"the memory service's folder {folder}", "the service did not start",
                           folder=folder) from None

    def _watch(self, signalled: list[str]) -> tuple[int, int]:
        from ..watch.watcher import Watcher

        slot = self.core.pool.slot(self.settings)
        watcher = self._watcher = Watcher(
            self.settings, on_change=self.on_change, on_notice=self.on_notice, on_start=self.on_watch_start,
            polling=self.polling, index=slot.index, index_session=self.core.pool.using, noted=signalled,
        )
        if self._stop.is_set():  # stopped (its socket removed) before the watcher was there to hear it
            watcher.stop()
        summary = watcher.run()
        if self._stopped_by != SOCKET_GONE:
            self._stopped_by = signalled[0] if signalled else summary.stopped_by
        self.core.stopping.set()
        return summary.changes, summary.batches

    def _wait_for_signal(self, signalled: list[str]) -> None:
        threading.Thread(target=self._warm_quietly, name="model-warm-up", daemon=True).start()
        while not signalled and not self._stop.wait(0.25):
            pass
        if signalled:
            self._stopped_by = signalled[0]
            self.stop()

    def _warm_quietly(self) -> None:
        try:
            self.core.warm()
        except (MemoryToolError, OSError) as exc:
            self.on_notice(f"model not loaded ahead: {getattr(exc, 'message', exc)}")

    def _shutdown(self, lock: FileLock) -> None:
        self._stop.set()
        self.core.stopping.set()
        if self._listener is not None:
            self._listener.close()
        # A clean stop removes its files first, so that callers stop connecting. One whose socket was
        # removed keeps its info file until its shards are closed: till then the CLI and a new serve see
        # a service that cannot be reached and is stopping (a new serve waits for it), not one starting.
        lost = self._stopped_by == SOCKET_GONE
        if not lost:
            self._remove_files(lock)
        # Its socket gone, callers work in-process and wait (the index's lock timeout, 5 s) for the
        # shards it holds: kept open until the drain ended (up to DRAIN_S), a search failed "held by
        # another openclaw-memory process" of a stopping service. Let go of as soon as no request uses them.
        self.core.let_go()
        if self._http is not None:
            self._http.stop()
        deadline = time.monotonic() + DRAIN_S
        with self._inflight_lock:
            while self._inflight and time.monotonic() < deadline:
                self._inflight_lock.wait(0.1)
        self.core.close()
        from ..database.handles import close_all

        close_all()  # each connection looks at the WAL and its index first: a damaged log is never checkpointed
        if lost:
            self._remove_files(lock)

    def _remove_files(self, lock: FileLock) -> None:
        if lock.held_at_path():  # else the folder was removed under it: what is there now is not its own
            remove_service_files(self.settings)

    def _socket_is_there(self) -> bool:
        try:
            st = os.stat(socket_path(self.settings))
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self._socket_id

    def _janitor(self) -> None:
        # Its first sweep a round after the one the start made (before the socket answered): a sweep
        # racing the first commands had the database to itself at no better moment.
        swept = time.monotonic()
        while not self._stop.wait(1.0) and self._look_after():
            if time.monotonic() - swept >= SWEEP_EVERY_S:
                swept = time.monotonic()
                self._sweep_sessions()

    def _sweep_sessions(self) -> None:
        try:
            self.core.sweep_sessions()
        except LockTimeout:
            pass  # the state database busy: the next round tries again
        except (MemoryToolError, OSError) as exc:
            # Said once per message: its files damaged under the service (what they held is copied
            # aside, and this is the one place that learns it: passed over, the loss went unsaid),
            # a full disk, a database of a newer release.
            said = exc.message if isinstance(exc, MemoryToolError) else f"the session sweep failed: {exc}"
            if said not in self._sweep_said:
                self._sweep_said.add(said)
                self.on_notice(said)

    def _look_after(self) -> bool:
        """One round of the janitor; False once the service is stopping."""
        if not self._socket_is_there():
            if self._stop.is_set():
                return False  # a stop in progress removed it (it sets the event first): not someone else
            # Removed by someone (a cleaner, a person): nothing can reach this service, and it holds
            # the shards and the service lock the CLI and a new serve need. Stopping frees them.
            self.on_notice(f"{SOCKET_GONE} ({socket_path(self.settings)}): nothing can reach this service; "
                           "stopping (a new `openclaw-memory serve` starts a fresh one)")
            self._stopped_by = SOCKET_GONE
            self.stop()
            return False
        try:
            self.core.pool.close_idle_shards()
        except MemoryToolError as exc:
            self.on_notice(f"could not close idle shards: {exc.message}")
        return True

    # -- connections -------------------------------------------------------------------------

    def _accept_loop(self, listener: socket.socket) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by the shutdown
            with self._inflight_lock:
                full = self._connections >= MAX_CONNECTIONS
                self._connections += 0 if full else 1
            if full:
                _refuse(conn, f"it serves {MAX_CONNECTIONS} connections already")
                continue
            try:
                threading.Thread(target=self._serve_connection, args=(conn,), name="service-conn", daemon=True).start()
            except RuntimeError:  # the system gives no more threads
                self._connection_done()
                _refuse(conn, "it cannot start another thread")

    def _connection_done(self) -> None:
        with self._inflight_lock:
            self._connections -= 1

    def _serve_connection(self, conn: socket.socket) -> None:
        conn.settimeout(None)
        sessions: dict[str, object] = {}  # sessions seen on this connection: ended when it closes
        send_lock = threading.Lock()
        lines = LineReader(conn)
        try:
            while not self._stop.is_set():
                try:
                    line = lines.next()
                except LineTooLong:
                    with send_lock:
                        conn.sendall(answer_line(error_answer(None, REFUSED, (
                            f"a request of more than {MAX_LINE >> 20} MiB; write a file that large in-process "
                            "(OPENCLAW_MEMORY_SERVICE=off)"))))
                    return
                if line is None:
                    return
                if line.strip():
                    if _hung_up(conn):
                        # The caller gave up (no answer within its timeout: this service was stopped,
                        # Ctrl-Z, or stuck) and did it in-process; run now, a write it read back was
                        # made again over a person's later edit, an append twice.
                        self.on_notice("a caller gave up waiting for this service and worked in-process: "
                                       "its request, read only now, was not run")
                        return
                    self._answer(conn, send_lock, line, sessions)
        except OSError:
            return
        finally:
            for session in sessions:
                self.core.connected(session, -1)
            conn.close()
            self._connection_done()

    def _answer(self, conn: socket.socket, send_lock: threading.Lock, line: bytes, sessions: dict) -> None:
        with self._inflight_lock:
            self._inflight += 1
        done = threading.Event()

        def heartbeat():
            while not done.wait(HEARTBEAT_S):
                with send_lock:
                    if done.is_set():
                        return
                    try:
                        conn.sendall(b"\n")
                    except OSError:
                        return

        beat = threading.Thread(target=heartbeat, name="service-heartbeat", daemon=True)
        beat.start()
        try:
            data = encoded(self._compute(line, sessions))
        finally:
            done.set()
            with self._inflight_lock:
                self._inflight -= 1
                self._inflight_lock.notify_all()
        with send_lock:
            try:
                conn.sendall(data)
            except OSError:
                pass  # the caller gave up (timeout) and works in-process; nothing to undo

    def _compute(self, line: bytes, sessions: dict) -> dict:
        try:
            request = self.core.read_request(line)
        except Refused as exc:
            return error_answer(exc.request_id, exc.code, str(exc))
        session = request.settings.session
        if session and session not in sessions:
            sessions[session] = request.settings
            self.core.connected(session, +1)
        return self.core.answer(request)


def _refuse(conn: socket.socket, why: str) -> None:
    """Tell a connection the service will not serve it (its caller then works in-process), and close it."""
    try:
        conn.settimeout(1.0)
        conn.sendall(answer_line(error_answer(None, REFUSED, why)))
    except OSError:
        pass  # gone already: nothing to tell
    finally:
        conn.close()


def _hung_up(conn: socket.socket) -> bool:
    """Whether the caller closed ``conn`` (what it sent may still be unread): a caller waits for each
    answer with it open, so a request read after that is one it gave up on. Closed, not half-closed:
    one that has only stopped sending (`shutdown(SHUT_WR)`, as socat and `nc -N` do) still waits
    for its answer (POLLRDHUP alone)."""
    poller = select.poll()
    poller.register(conn, select.POLLIN)
    return any(events & select.POLLHUP for _fd, events in poller.poll(0))
