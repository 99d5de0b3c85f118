"""Idempotency keys for writes: a retried ``write`` / ``memory_write`` returns the first result.

An agent that times out and retries must not append twice. Every write carries a key (by
default ``<agent>.<tool>.<hash of session, path, mode and content>``, the checkpoint seed's
``<agent_id>.<tool_name>.<input_hash>``); a second write with the same key within 24 hours
writes nothing and returns the first write's result, marked ``"replayed": true``, as long as
the file still holds what that write made (after a restore or an edit, the same write is made
again). A key is bound to what it was first used for (agent, session, path, mode, content): the
same key with anything else is refused, never answered with the first result.

One small JSON file per key under ``<data dir>/idempotency/`` (named by a hash of the key),
replaced atomically; a damaged, foreign or expired file counts as absent. The check and
the write happen under one lock of their own (taken before the history lock, never after
it), so two concurrent retries write once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import xxhash

from .. import wire
from ..errors import UsageError
from ..fsutil.atomic import atomic_write_bytes
from ..fsutil.lock import FileLock
from .guard import Replay, WriteResult

KEEP_S = 24 * 3600
# Test-only: SIGKILL the process at a step of a keyed write (``key-recorded``: the key and the
# result to be are recorded, the new content not yet renamed into place; ``swapped``: renamed).
KILL_ENV = "OPENCLAW_MEMORY_TEST_WRITE_KILL_AT"
LOCK_TIMEOUT_S = 10.0
MAX_KEY = 300


def default_key(agent: str, tool: str, path: str, mode: str, data: bytes, session: str | None = None) -> str:
    """``<agent>.<tool>.<xxh3_128 of session, path, mode and content>``."""
    digest = xxhash.xxh3_128()
    for part in ((session or "").encode("utf-8"), os.path.normpath(path).encode("utf-8", "surrogateescape"),
                 mode.encode("ascii")):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    digest.update(data)
    return f"{agent}.{tool}.{digest.hexdigest()}"


def binding(agent: str, session: str | None, path: str, mode: str, data: bytes) -> dict:
    """What a key stands for: the same key with any other of these is another write."""
    return {"agent": agent, "session": session, "path": os.path.normpath(path), "mode": mode,
            "content": xxhash.xxh3_128_hexdigest(data)}


def describe(first: dict, now: dict) -> str:
    """The first write a key stood for, and how this one differs from it."""
    who = f"agent '{first.get('agent')}'" + (f" (session {first['session']})" if first.get("session") else "")
    differs = [name for name in ("agent", "session", "path", "mode", "content") if first.get(name) != now.get(name)]
    return f"{'an append' if first.get('mode') == 'append' else 'a replace'} of {first.get('path')} by {who}, other in its {', '.join(differs)}"


def reach(step: str) -> None:
    if os.environ.get(KILL_ENV) == step:
        import signal

        os.kill(os.getpid(), signal.SIGKILL)


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY or not key.isprintable():
        raise UsageError(f"an idempotency key is 1 to {MAX_KEY} printable characters, not {key!r}")
    return key


class IdempotencyStore:
    """The keys of one workspace (all agents), in ``<data dir>/idempotency/``."""

    def __init__(self, data_dir, *, keep_s: float = KEEP_S):
        self.root = os.path.join(os.fspath(data_dir), "idempotency")
        self.keep_s = keep_s

    def lock(self) -> FileLock:
        return FileLock(os.path.join(self.root, "lock"), timeout=LOCK_TIMEOUT_S, what="the idempotency keys of this workspace")

    def _file(self, key: str) -> str:
        return os.path.join(self.root, xxhash.xxh3_128_hexdigest(key.encode("utf-8", "surrogateescape")) + ".json")

    def get(self, key: str) -> tuple[WriteResult, dict | None] | None:
        """The first result for ``key`` and what the key was bound to (None in a record of an
        earlier release), when it was written less than 24 hours ago."""
        try:
            with open(self._file(key), encoding="utf-8") as fh:
                data = json.load(fh)
            if data["key"] != key or time.time() - float(data["time"]) >= self.keep_s:
                return None
            recorded = data["result"]
            first = wire.from_json(wire.untag(recorded) if wire.is_tagged(recorded) else recorded, WriteResult)
            bound = data.get("binding")
            replayed = dataclasses.replace(first, replay=Replay(key, float(data["time"])))
            return replayed, bound if isinstance(bound, dict) else None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError):
            return None  # absent or damaged: the write goes ahead and the entry is written anew

    def put(self, key: str, result: WriteResult, when: float | None = None, bound: dict | None = None) -> None:
        payload = {"key": key, "time": time.time() if when is None else when, "result": wire.to_json(result),
                   "binding": bound}
        os.makedirs(self.root, exist_ok=True)
        # ensure_ascii: a name that is not UTF-8 round-trips as \udcXX
        atomic_write_bytes(self._file(key), json.dumps(payload, ensure_ascii=True).encode("ascii"), 0o600)

    def prune(self) -> int:
        """Delete the entries older than 24 hours (by file time: a damaged file goes too); returns how many."""
        cutoff = time.time() - self.keep_s
        removed = 0
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return 0
        for entry in entries:
            if not entry.name.endswith((".json", ".tmp")):
                continue
            try:
                if entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
                    removed += 1
            except OSError:
                continue  # gone meanwhile, or not ours to delete: the next prune tries again
        return removed
