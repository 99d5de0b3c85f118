"""The ``[index]`` table of openclaw-memory.toml as the index uses it (``Settings.index``, checked
when settings are resolved).

Keys: ``model`` (default all-MiniLM-L6-v2), ``chunk_tokens`` and ``overlap_tokens``
(default: the model's window and about 15% of it), ``backend`` (store engine,
default ``edge``), ``embedding_backend`` (``auto``, ``torch``, ``onnx`` or the model-free ``hash``),
``lock_timeout`` (seconds a process waits for a collection another one holds,
default 5), ``embed_batch`` (chunks embedded and written per step, default 256).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..settings import DEFAULT_MODEL, EMBEDDING_BACKENDS

if TYPE_CHECKING:
    from ..settings import Settings
    from .search import Ranking


@dataclass(frozen=True)
class IndexConfig:
    model: str = DEFAULT_MODEL
    chunk_tokens: int | None = None
    overlap_tokens: int | None = None
    backend: str = "edge"
    embedding_backend: str = "auto"
    lock_timeout: float = 5.0
    embed_batch: int = 256

    @property
    def settings_key(self) -> str:
        """What the user set that shapes the vectors; equal keys mean the stored fingerprint still holds."""
        from .chunking import CHUNKER_VERSION

        # The chunker's version is its last part: new chunking rules chunk every file of an index
        # built by older ones again (its vectors hold: see vectors_hold).
        return json.dumps([*self._vector_settings(), CHUNKER_VERSION])

    def _vector_settings(self) -> list:
        return [self.model, self.chunk_tokens, self.overlap_tokens, self.embedding_backend]

    def vectors_hold(self, stored_key: str) -> bool:
        """Whether an index built under ``stored_key`` has the vectors these settings would give:
        its key equal, or differing only in the chunker's version (new rules, same vector per text)."""
        if stored_key == self.settings_key:
            return True
        try:
            stored = json.loads(stored_key)
        except ValueError:
            return False
        return isinstance(stored, list) and stored[:-1] == self._vector_settings()

    def settings_parts(self) -> dict[str, object]:
        """These settings by the names of a fingerprint's parts (:func:`settings_parts`)."""
        return settings_parts(self.settings_key)


def settings_parts(key: str) -> dict[str, object]:
    """What a settings key (:attr:`IndexConfig.settings_key`, a manifest's) holds, by the names of a
    fingerprint's parts, as the user set them (None: left to the model's default), for
    :func:`.embedding.what_changed`; empty where the key does not read. A key of a release before the
    chunker's version was recorded has no ``chunker``."""
    try:
        stored = json.loads(key)
    except ValueError:
        return {}
    if not isinstance(stored, list):
        return {}
    return dict(zip(("model", "budget", "overlap", "backend", "chunker"), stored, strict=False))


def index_config(settings: Settings) -> IndexConfig:
    """``[index]`` as the index uses it (checked when settings were resolved), with
    ``OPENCLAW_MEMORY_EMBEDDING_BACKEND`` above its ``embedding_backend``."""
    table = settings.index
    embedding_backend = settings.embedding_backend or table.embedding_backend
    if embedding_backend not in EMBEDDING_BACKENDS:
        told = f" (set{settings.embedding_backend_from})" if settings.embedding_backend_from else ""  # (.env, env.vars)
        raise ConfigError(f"OPENCLAW_MEMORY_EMBEDDING_BACKEND{told} must be auto, torch, onnx or hash, not {embedding_backend!r}")
    return IndexConfig(
        model=table.model,
        chunk_tokens=table.chunk_tokens,
        overlap_tokens=table.overlap_tokens,
        backend=table.backend,
        embedding_backend=embedding_backend,
        lock_timeout=table.lock_timeout,
        embed_batch=table.embed_batch,
    )


def search_ranking(settings: Settings) -> Ranking:
    """MMR and temporal decay: OpenClaw's ``memorySearch.query.hybrid`` (``mmr``, ``temporalDecay``),
    overridden by openclaw-memory.toml ``[search]`` (``mmr``, ``mmr_lambda``, ``temporal_decay``,
    ``half_life_days``). Both are off unless enabled, as in OpenClaw."""
    from .search import Ranking

    hybrid = settings.openclaw_hybrid
    mmr: dict[str, Any] = hybrid["mmr"] if isinstance(hybrid.get("mmr"), dict) else {}
    decay: dict[str, Any] = hybrid["temporalDecay"] if isinstance(hybrid.get("temporalDecay"), dict) else {}
    own = settings.search  # the toml's, checked when settings were resolved; None: not set there
    # What is left to check came from openclaw.json (OpenClaw's file, read as it is).
    where = "openclaw.json memorySearch.query.hybrid"

    def flag(mine: bool | None, theirs: Any, name: str) -> bool:
        if mine is not None:
            return mine
        if not isinstance(theirs, bool):
            raise ConfigError(f"{where}: {name} must be true or false, not {theirs!r}")
        return theirs

    def number(mine: float | None, theirs: Any, name: str, words: str, ok: Callable[[float], bool]) -> float:
        if mine is not None:
            return mine
        if isinstance(theirs, bool) or not isinstance(theirs, (int, float)) or not ok(theirs):
            raise ConfigError(f"{where}: {name} must be {words}, not {theirs!r}")
        return float(theirs)

    return Ranking(
        flag(own.mmr, mmr.get("enabled", False), "mmr.enabled"),
        number(own.mmr_lambda, mmr.get("lambda", 0.7), "mmr.lambda", "a number from 0 to 1", lambda v: 0 <= v <= 1),
        flag(own.temporal_decay, decay.get("enabled", False), "temporalDecay.enabled"),
        number(own.half_life_days, decay.get("halfLifeDays", 30), "temporalDecay.halfLifeDays", "a positive number of days",
               lambda v: v > 0),
    )
