"""One connection to Qdrant: timeouts, retries with exponential backoff, errors a user can act on.

Every call the server store makes is idempotent (upserts and deletes by
deterministic id or by filter, reads, index creation; collection creation treats
"already exists" as done), so a call that failed on the way — refused connection,
reset, timeout, 429, 502/503/504 — is simply sent again, up to ``retries`` more
times, waiting ``retry_backoff · 2^k`` seconds (capped at 8 s, with jitter so that
many clients do not retry in step). What is left after that becomes a
:class:`ServerUnavailable` or :class:`ServerRejected` with a message naming the
server (never the API key) and what to check: never a traceback.
"""

from __future__ import annotations

import os
import random
import time
import warnings
from collections.abc import Callable
from typing import Any

from ... import faults
from ...errors import MemoryToolError, UsageError
from .server_config import API_KEY_ENV, URL_ENV, ServerConfig

_RETRY_STATUS = {429, 502, 503, 504}
_MAX_WAIT = 8.0


class ServerUnavailable(MemoryToolError):
    """The Qdrant server could not be reached, timed out, or kept failing."""

    exit_code = 1


class ServerRejected(UsageError):
    """The Qdrant server refused the request: no key, a wrong key, or a request it does not accept."""


class _SimulatedNetworkFailure(Exception):
    """Raised only by the test fault, in place of a transport error."""


def _transport_reason(exc: BaseException) -> str | None:
    """A short reason when ``exc`` is a network failure worth retrying, else None."""
    import httpx
    from qdrant_client.http.exceptions import ResponseHandlingException

    source = exc.source if isinstance(exc, ResponseHandlingException) else exc
    if isinstance(source, _SimulatedNetworkFailure):
        return "connection lost (simulated network failure)"
    if isinstance(source, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(source, httpx.ConnectError):
        detail = str(source) or "connection failed"
        return "connection refused" if "refused" in detail.lower() else detail
    if isinstance(source, httpx.TransportError):
        return f"connection dropped ({type(source).__name__}{': ' + str(source) if str(source) else ''})"
    return None


def _server_error(exc) -> str:
    try:
        detail = exc.structured().get("status", {}).get("error")
    except Exception:  # noqa: BLE001 - a body that is not Qdrant's JSON: show the status only
        detail = None
    return f"HTTP {exc.status_code}" + (f": {detail}" if detail else "")


class Connection:
    """A ``QdrantClient`` and the retry policy around every call to it."""

    def __init__(self, config: ServerConfig, sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self._sleep = sleep
        self._upserts = 0
        self._down = False
        self._answered = False  # whether the server ever answered this connection
        self.client = self._connect()

    @property
    def local(self) -> bool:
        return self.config.local_path is not None

    def _connect(self):
        from qdrant_client import QdrantClient

        c = self.config
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if c.local_path is not None:
                try:
                    os.makedirs(c.local_path, exist_ok=True)
                    return QdrantClient(path=c.local_path)
                except RuntimeError as exc:  # qdrant-client's own lock on the folder
                    raise MemoryToolError(
                        f"the local Qdrant folder {c.local_path} is open in another process ({exc}); "
                        "local mode allows one process at a time: use a Qdrant server to share an index"
                    ) from None
                except OSError as exc:
                    raise MemoryToolError(f"cannot open the local Qdrant folder {c.local_path}: {exc.strerror or exc}") from None
            # The version check runs in a thread that only warns; `server_health` reports the version instead.
            return QdrantClient(url=c.url, api_key=c.api_key, timeout=c.timeout, check_compatibility=False)

    def close(self) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.client.close()
            except Exception:  # noqa: BLE001 - closing a dead connection must not hide the real error
                pass

    def call(self, what: str, fn: Callable[..., Any], *args, **kwargs) -> Any:
        """Run ``fn(*args, **kwargs)``, retrying network failures; ``what`` names it in messages."""
        from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        c = self.config
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self._maybe_fail(what)
                    value = fn(*args, **kwargs)
                self._answered = True
                return value
            except (ResponseHandlingException, _SimulatedNetworkFailure) as exc:
                reason = _transport_reason(exc)
                if reason is None:  # an answer that is not Qdrant's
                    raise ServerUnavailable(
                        f"{c.display_url} answered {what} with something that is not a Qdrant response "
                        f"({type(getattr(exc, 'source', exc)).__name__}); is this the Qdrant REST port (6333)?"
                    ) from None
                retry_after = None
            except ResourceExhaustedResponse as exc:
                reason, retry_after = f"rate limited (HTTP 429: {exc})", float(exc.retry_after_s)
            except UnexpectedResponse as exc:
                if exc.status_code in (401, 403):
                    raise self._rejected(exc) from None
                if exc.status_code not in _RETRY_STATUS:
                    raise ServerRejected(f"the Qdrant server at {c.display_url} refused {what}: {_server_error(exc)}") from None
                reason, retry_after = _server_error(exc), None
            except (ValueError, RuntimeError, KeyError) as exc:
                if not self.local:
                    raise
                # Local mode reports misuse with plain exceptions; say which call and why.
                raise MemoryToolError(f"qdrant-client local mode ({c.local_path}) refused {what}: {exc}") from None
            # Nothing listens at a URL that refused twice and never answered: a typo or a server not
            # started, which waiting does not mend. One that answered before may be restarting.
            never_there = reason == "connection refused" and not self._answered and attempt >= 1
            if attempt >= c.retries or never_there:
                tries = attempt + 1
                raise ServerUnavailable(
                    f"cannot reach the Qdrant server at {c.display_url} for {what}: {reason} "
                    f"({tries} tr{'y' if tries == 1 else 'ies'} in {time.monotonic() - started:.1f} s, timeout {c.timeout:g} s). "
                    f"Check that the server is running and the URL (--qdrant-url, {URL_ENV}, or [index] url); "
                    f"`[index.server] timeout` and `retries` tune the waiting"
                )
            wait = retry_after if retry_after is not None else min(_MAX_WAIT, c.retry_backoff * (2**attempt))
            if reason == "connection refused" and not self._answered:
                wait = min(wait, 0.5)
            self._sleep(wait * (0.5 + random.random() / 2) if retry_after is None else wait)
            attempt += 1

    def _maybe_fail(self, what: str) -> None:
        """The fault step ``qdrant:upsert:N``: failed, that upsert and every call after it fail as
        if the network had gone down."""
        if not self._down and what.startswith("upsert"):
            self._upserts += 1
            self._down = faults.reach(f"qdrant:upsert:{self._upserts}")
        if self._down:
            raise _SimulatedNetworkFailure()

    def _rejected(self, exc) -> ServerRejected:
        c = self.config
        if c.api_key is None:
            return ServerRejected(
                f"the Qdrant server at {c.display_url} requires an API key (HTTP {exc.status_code}); "
                f"set {API_KEY_ENV} or `[index.server] api_key_file`"
            )
        return ServerRejected(
            f"the Qdrant server at {c.display_url} rejected the API key from {c.api_key_source} (HTTP {exc.status_code}); "
            "check the key, and that it is not a read-only key for a command that writes"
        )
