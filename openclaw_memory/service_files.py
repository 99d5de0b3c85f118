"""Where a workspace's service keeps its files, all under ``<data dir>/service/`` (mode 0700).

- ``lock``: held (flock, with the pid inside) for as long as the service runs; one per
  (state dir, workspace), so a second ``serve`` names the holder and exits;
- ``sock``: the Unix domain socket (mode 0600) the CLI and ``mcp`` talk to;
- ``info.json``: pid, start time, HTTP address (for ``status`` and messages);
- ``token``: the bearer token of the MCP HTTP endpoint (mode 0600), only while it listens.

A clean stop removes all four. Socket paths are limited to 107 bytes, and a state dir can be
deeper than that, so the socket is always reached through ``/proc/self/fd/<folder fd>/sock``:
descriptor-relative, whatever the length of the folder's path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .fsutil.safeopen import read_small_json

if TYPE_CHECKING:
    from .settings import Settings

SOCKET = "sock"
LOCK = "lock"
START_LOCK = "start.lock"  # held by whoever starts a service in the background (memory.launch), one at a time
INFO = "info.json"
TOKEN = "token"
# A pid, a time, an agent id and a workspace path: PATH_MAX bytes, six characters each at most once JSON-escaped.
_INFO_MAX = 64 << 10


OFF_ENV = "OPENCLAW_MEMORY_SERVICE"


def service_disabled() -> bool:
    """``OPENCLAW_MEMORY_SERVICE=off`` (or 0, no, false): always in-process, silently; a word that
    is neither on nor off is refused."""
    from .settings import switch_env

    return switch_env(OFF_ENV, os.environ) is False


def service_may_run(settings: Settings) -> bool:
    """Whether a service could answer: not switched off, and its socket exists (one stat)."""
    return not service_disabled() and os.path.lexists(socket_path(settings))


def service_dir(settings: Settings) -> str:
    return os.path.join(str(settings.data_dir), "service")


def lock_path(settings: Settings) -> str:
    return os.path.join(service_dir(settings), LOCK)


def start_lock_path(settings: Settings) -> str:
    return os.path.join(service_dir(settings), START_LOCK)


def socket_path(settings: Settings) -> str:
    return os.path.join(service_dir(settings), SOCKET)


def token_path(settings: Settings) -> str:
    return os.path.join(service_dir(settings), TOKEN)


@contextmanager
def socket_address(settings: Settings) -> Iterator[str]:
    """An address for ``bind``/``connect`` that reaches the socket through a folder descriptor.

    Raises FileNotFoundError when the service folder does not exist (no service ever ran).
    """
    fd = os.open(service_dir(settings), os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        yield f"/proc/self/fd/{fd}/{SOCKET}"
    finally:
        os.close(fd)


def unreachable_service(settings: Settings) -> str | None:
    """The pid of a service that runs but that nothing can reach: it holds the lock and wrote its
    info file, and its socket is gone (someone removed it). None when none runs, when one is
    starting (it writes its info file after binding), or when its socket is there."""
    folder = service_dir(settings)
    if os.path.lexists(os.path.join(folder, SOCKET)) or not os.path.lexists(os.path.join(folder, INFO)):
        return None
    from .fsutil.lock import lock_holder

    return lock_holder(os.path.join(folder, LOCK))


def remove_service_files(settings: Settings) -> None:
    """The info file, token and socket (a clean stop's, or what a killed service left). The info
    file goes first: an info file without its socket never means a clean stop. A folder or link in
    one's place is kept under the data dir's ``damaged/``, never deleted (unlinking one failed
    every ``serve`` after it)."""
    import stat

    for name in (INFO, TOKEN, SOCKET):
        path = os.path.join(service_dir(settings), name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(st.st_mode) or stat.S_ISSOCK(st.st_mode):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        else:
            from .fsutil.setaside import set_aside

            set_aside(settings.data_dir, path)


def write_token(settings: Settings, token: str) -> None:
    """The MCP HTTP endpoint's bearer token, readable by this user only."""
    from .fsutil.atomic import atomic_write_bytes

    atomic_write_bytes(token_path(settings), token.encode("ascii") + b"\n", 0o600)


def remove_token(settings: Settings) -> None:
    try:
        os.unlink(token_path(settings))
    except FileNotFoundError:
        pass


def read_info(settings: Settings) -> dict | None:
    """What the service wrote about itself, or None (no service, or a damaged file)."""
    return read_small_json(os.path.join(service_dir(settings), INFO), _INFO_MAX)
