"""Idempotency keys for writes: a retried ``write`` / ``memory_write`` returns the first result.

An agent that times out and retries must not append twice. Every write carries a key (by
default ``<agent>.<tool>.<hash of session, path, mode and content>``, the checkpoint seed's
``<agent_id>.<tool_name>.<input_hash>``); a second write with the same key within 24 hours
writes nothing and returns the first write's result, marked ``"replayed": true``, as long as
the file still holds what that write made (after a restore or an edit, the same write is made
again) and, for the default key, the session has not read the file nor written it again since (then
the same text is a new entry: :func:`~openclaw_memory.history.writes._went_on_since`). A key belongs to the agent's session that used it (the plain command line is one session
per agent): another session's same key is another key, never blocked by it nor told of its write.
Within the session a key is bound to what it was first used for (path, mode, content): the same key
with anything else is refused, never answered with the first result.

Rows of the state database's ``idempotency`` table, keyed by agent, session and key (a row of an
earlier release, keyed by the key alone, is never matched and expires); an expired or unreadable
entry counts as absent. The check and the write happen under the workspace's write lock (see
:meth:`~openclaw_memory.history.store.HistoryStore.write_lock`), so two concurrent retries write
once; the key is committed before the new content is renamed into place.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time

import xxhash

from .. import wire
from ..database import Database, enc
from ..errors import UsageError, shown
from .guard import Replay, WriteResult

KEEP_S = 24 * 3600
MAX_KEY = 300


def default_key(agent: str, tool: str, path: str, mode: str, data: bytes, session: str | None = None) -> str:
    """``<agent>.<tool>.<xxh3_128 of session, path, mode and content>``; ``path``: the file's display
    path (:func:`~.placing.resolve_writable`), so that every spelling of one file gives one key."""
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
    """The session's first write a key stood for, and how this one differs from it."""
    differs = [name for name in ("path", "mode", "content") if first.get(name) != now.get(name)]
    named = " and ".join(filter(None, [", ".join(differs[:-1]), differs[-1]])) if differs else "nothing"
    return f"{'an append' if first.get('mode') == 'append' else 'a replace'} of {first.get('path')}; this write differs in its {named}"


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY or not key.isprintable():
        raise UsageError(f"an idempotency key is 1 to {MAX_KEY} printable characters, not {shown(key)}")
    return key


class IdempotencyStore:
    """The keys of one agent's session, in the workspace's state database."""

    def __init__(self, data_dir, agent: str, session: str | None, *, keep_s: float = KEEP_S):
        self.db = Database(data_dir)
        self.keep_s = keep_s
        self._scope = f"{agent}\0{session or ''}\0"  # a key has no NUL (check_key: printable)

    def _row(self, key: str) -> bytes:
        return enc(self._scope + key)

    def get(self, key: str) -> tuple[WriteResult, dict | None] | None:
        """The first result for ``key`` and what the key was bound to, when it was written less
        than 24 hours ago."""
        row = self.db.one("SELECT time, result, binding FROM idempotency WHERE key = ?", (self._row(key),))
        if row is None or time.time() - row[0] >= self.keep_s:
            return None
        try:
            recorded = json.loads(row[1])
            first = wire.from_json(recorded, WriteResult)
            bound = json.loads(row[2]) if row[2] else None
        except ValueError:
            return None  # unreadable: the write goes ahead and the entry is written anew
        replayed = dataclasses.replace(first, replay=Replay(key, float(row[0])))
        return replayed, bound if isinstance(bound, dict) else None

    def put(self, key: str, result: WriteResult, when: float | None = None, bound: dict | None = None) -> None:
        # ensure_ascii: a name that is not UTF-8 round-trips as \udcXX
        result_json = json.dumps(wire.to_json(result), ensure_ascii=True)
        with self.db.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO idempotency VALUES (?, ?, ?, ?)",
                         (self._row(key), time.time() if when is None else when, result_json,
                          json.dumps(bound, ensure_ascii=True) if bound is not None else None))

    def prune(self) -> int:
        """Delete the entries older than 24 hours; returns how many."""
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM idempotency WHERE time < ?", (time.time() - self.keep_s,)).rowcount
