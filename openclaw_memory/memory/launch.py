"""Start the workspace's service in the background when none runs (``mcp --serve``)."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..errors import MemoryToolError, cut, disk_full, no_inode_left
from ..service_files import read_info, remove_service_files, service_dir, start_lock_path
from .client import ServiceClient, ServiceUnavailable

if TYPE_CHECKING:
    from ..settings import Settings

START_WAIT_S = 60.0


STOP_WAIT_S = 30.0


def stop_service(settings: Settings) -> int | None:
    """Stop the workspace's service: SIGTERM to the holder of its lock, then wait until the lock is
    free (the service has answered what it was working on and removed its files). Returns its pid,
    or None when none runs. Raises MemoryToolError when it does not stop in time."""
    import signal

    from ..errors import LockTimeout
    from ..fsutil.lock import FileLock
    from ..fsutil.private import check_data_dir
    from ..service_files import lock_path

    check_data_dir(settings.state_dir, settings.data_dir)
    lock = FileLock(lock_path(settings), timeout=0, what="the memory service", remove=True)
    try:
        lock.acquire()
    except LockTimeout:
        pass
    else:
        try:  # nobody held it: no service runs; what a killed one left goes
            remove_service_files(settings)
        finally:
            lock.release()
        return None
    holder = lock.holder_pid()
    if not holder.isdigit():
        raise MemoryToolError(f"a memory service runs but its lock names no pid ({holder!r}); stop it by hand")
    pid = int(holder)
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None  # it ended meanwhile
    waiting = FileLock(lock_path(settings), timeout=STOP_WAIT_S, what=f"the memory service (pid {pid})", remove=True)
    try:
        waiting.acquire()
    except LockTimeout:
        raise MemoryToolError(f"the memory service (pid {pid}) did not stop within {STOP_WAIT_S:g} s; "
                              f"`kill -9 {pid}` ends it (the index is crash-safe)") from None
    waiting.release()
    deadline = time.monotonic() + STOP_WAIT_S  # its files are gone; the process itself ends just after
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.02)
    return pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child of this process that ended but was not reaped yet is done too
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def _answers(settings: Settings) -> bool:
    """Whether a service runs for the workspace: it answers, even to refuse this caller (another
    agent configured otherwise, other settings, another version). A second one cannot start beside
    it (it would exit, `already running`): the caller works in-process, saying why at its first call."""
    client = ServiceClient(settings, timeout=2.0)
    try:
        client.call("service")
        return True
    except ServiceUnavailable as exc:
        return exc.refused
    finally:
        client.close()


def service_command(settings: Settings) -> list[str]:
    """``openclaw-memory serve`` with exactly these settings (the service reads the same config
    files and environment: an extra path with a glob can only come from those, and is not given
    again as a plain ``--extra``, which would make it a second, unfiltered entry). ``-P``: ``-m``
    puts the current folder first on the module path, and a ``json.py`` in the folder an MCP client
    started from ran inside the long-lived service."""
    cmd = [sys.executable, "-P", "-m", "openclaw_memory", "serve", "-w", str(settings.workspace),
           "--state-dir", str(settings.state_dir), "--agent", settings.agent]
    for extra in settings.extra_paths:
        if not extra.pattern:
            cmd += ["--extra", str(extra)]
    cmd.append("--multimodal" if settings.multimodal else "--no-multimodal")
    if settings.qdrant_url:
        cmd += ["--qdrant-url", settings.qdrant_url]
    return cmd


def service_environment(settings: Settings, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The caller's environment for the service it starts, with the paths the service would read
    against its own folder (``/``, :data:`SERVICE_CWD`) given as the caller resolved them: a relative
    ``OPENCLAW_CONFIG_PATH``, ``OPENCLAW_HOME`` or model cache named another file there, and the
    service then refused the caller it was started for (other settings)."""
    from ..settings import openclaw_home

    env = dict(environ)
    env["OPENCLAW_CONFIG_PATH"] = str(settings.config_file)
    env["OPENCLAW_MEMORY_MODEL_CACHE"] = str(settings.model_cache)
    if (env.get("OPENCLAW_HOME") or "").strip() not in ("", "undefined", "null"):
        env["OPENCLAW_HOME"] = openclaw_home(env)
    if env.get("OPENCLAW_INCLUDE_ROOTS"):  # (a relative root: openclaw.json's $include refused in the service)
        env["OPENCLAW_INCLUDE_ROOTS"] = _absolute_list(env["OPENCLAW_INCLUDE_ROOTS"], keep="~")
    # The package from where the caller imported it: `python -m openclaw_memory` in a source checkout
    # found it in the current folder, which -P leaves out (every call then failed, "No module named
    # openclaw_memory"), and a relative PYTHONPATH names another folder from /.
    python_path = _absolute_list(env.get("PYTHONPATH", ""))
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the package's folder's
    if os.path.realpath(os.getcwd()) == os.path.realpath(here):
        python_path = os.pathsep.join(filter(None, (here, python_path)))
    if python_path:
        env["PYTHONPATH"] = python_path
    return env


def _last_line(log_path: str) -> str:
    """``: <the log's last line>`` (what the service said as it exited: a config refused), or nothing:
    the model and the host saw only "see service.log"."""
    try:
        with open(log_path, "rb") as fh:
            fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4096))
            lines = [line for line in fh.read().decode("utf-8", "replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {cut(lines[-1].strip(), 300)}" if lines else ""


def _no_room(folder: str) -> bool:
    """Whether the file system of ``folder`` has no block (or no inode) left for this user."""
    try:
        vfs = os.statvfs(folder)
    except OSError:
        return False
    if vfs.f_flag & os.ST_RDONLY:
        return False
    return (vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail) == 0 or no_inode_left(folder)


def _absolute_list(value: str, keep: str = "") -> str:
    """An ``os.pathsep`` list with its relative entries made absolute against this folder (an entry
    starting with ``keep`` is the service's to expand, as the caller would: ``~``)."""
    entries = value.split(os.pathsep)
    return os.pathsep.join(e if not e.strip() or (keep and e.strip().startswith(keep)) else os.path.abspath(e.strip())
                           for e in entries)


# The service's current folder: none of the caller's (it outlives the caller, and a folder it holds
# open cannot be unmounted); nothing is looked up in it (-P, and every path it is given is absolute).
SERVICE_CWD = "/"


def ensure_service(settings: Settings, notice: Callable[[str], None] = lambda _m: None) -> None:
    """Make sure a service answers for ``settings``: start one (detached) when none runs."""
    if _answers(settings):
        return
    from ..fsutil.lock import FileLock
    from ..fsutil.private import make_dirs

    make_dirs(service_dir(settings))
    # One starter at a time: MCP clients started together (a host opening several sessions) each
    # started a service, all but one of which wrote "error: ... already running" to the log and exited.
    with FileLock(start_lock_path(settings), timeout=START_WAIT_S + 5, what="the start of the memory service",
                  remove=True):
        if not _answers(settings):  # (the one before us started it meanwhile)
            _start(settings, notice)


def _start(settings: Settings, notice: Callable[[str], None]) -> None:
    from ..fsutil.private import user_umask

    log_path = os.path.join(str(settings.data_dir), "service.log")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with open(os.open(log_path, flags, 0o600), "ab") as log:
        # The service starts with the user's umask, as from a shell: it keeps it for what it makes in
        # the workspace, and makes its own files private itself (fsutil.private).
        umask = user_umask()
        proc = subprocess.Popen(service_command(settings), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd=SERVICE_CWD, env=service_environment(settings), start_new_session=True,
                                close_fds=True, umask=-1 if umask is None else umask)
    deadline = time.monotonic() + START_WAIT_S
    while time.monotonic() < deadline:
        if _answers(settings):
            if (read_info(settings) or {}).get("pid") != proc.pid:
                return  # another caller's service won the race to start: it answers, this one exits
            notice(f"started the memory service (pid {proc.pid}); it keeps running after this session ends, for the "
                   "CLI and every MCP session (`openclaw-memory status` shows it; `openclaw-memory serve --stop` stops it); "
                   f"its log is {log_path}")
            return
        if proc.poll() is not None:
            if _answers(settings):  # another one won the race to start
                return
            said = _last_line(log_path)
            if not said and _no_room(str(settings.data_dir)):
                # Its disk full, the service could not write why in its log either: the model was told
                # only "did not start (exit 1); see service.log", and the log was empty.
                raise disk_full(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), f"the state dir {settings.data_dir}",
                                f"the memory service did not start (exit {proc.returncode}) and could not write why "
                                f"in its log {log_path}", folder=settings.data_dir)
            raise MemoryToolError(f"the memory service did not start (exit {proc.returncode}{said}); see {log_path}")
        time.sleep(0.1)
    raise MemoryToolError(f"the memory service did not answer within {START_WAIT_S:g} s; see {log_path}")
