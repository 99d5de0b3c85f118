"""The ``[index]`` table of openclaw-memory.toml, validated once.

Keys: ``model`` (default all-MiniLM-L6-v2), ``chunk_tokens`` and ``overlap_tokens``
(default: the model's window and about 15% of it), ``backend`` (store engine,
default ``edge``), ``embedding_backend`` (``auto``, ``torch``, ``onnx`` or the model-free ``hash``),
``lock_timeout`` (seconds a process waits for a collection another one holds,
default 5), ``embed_batch`` (chunks embedded and written per step, default 256).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import ConfigError

DEFAULT_MODEL = "all-MiniLM-L6-v2"


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

        # The chunker's version is part of it: new chunking rules re-embed an index built by older ones.
        return json.dumps([self.model, self.chunk_tokens, self.overlap_tokens, self.embedding_backend, CHUNKER_VERSION])


def index_config(settings) -> IndexConfig:
    table = settings.section("index")
    where = "openclaw-memory.toml [index]"

    def text(key: str, default: str) -> str:
        value = table.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: `{key}` must be a non-empty string, not {value!r}")
        return value.strip()

    def count(key: str, default, minimum: int):
        value = table.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{where}: `{key}` must be a whole number of at least {minimum}, not {value!r}")
        return value

    timeout = table.get("lock_timeout", 5)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0:
        raise ConfigError(f"{where}: `lock_timeout` must be a number of seconds, not {timeout!r}")
    embedding_backend = settings.embedding_backend or text("embedding_backend", "auto")
    if embedding_backend not in ("auto", "torch", "onnx", "hash"):
        source = "OPENCLAW_MEMORY_EMBEDDING_BACKEND" if settings.embedding_backend else f"{where}: `embedding_backend`"
        raise ConfigError(f"{source} must be auto, torch, onnx or hash, not {embedding_backend!r}")
    return IndexConfig(
        model=text("model", DEFAULT_MODEL),
        chunk_tokens=count("chunk_tokens", None, 16),
        overlap_tokens=count("overlap_tokens", None, 0),
        backend=text("backend", "edge"),
        embedding_backend=embedding_backend,
        lock_timeout=float(timeout),
        embed_batch=count("embed_batch", 256, 1),
    )


def search_ranking(settings):
    """MMR and temporal decay: OpenClaw's ``memorySearch.query.hybrid`` (``mmr``, ``temporalDecay``),
    overridden by openclaw-memory.toml ``[search]`` (``mmr``, ``mmr_lambda``, ``temporal_decay``,
    ``half_life_days``). Both are off unless enabled, as in OpenClaw."""
    from .search import Ranking

    hybrid = settings.openclaw_hybrid
    mmr = hybrid.get("mmr") if isinstance(hybrid.get("mmr"), dict) else {}
    decay = hybrid.get("temporalDecay") if isinstance(hybrid.get("temporalDecay"), dict) else {}
    own = settings.section("search")
    values = {
        "mmr": own.get("mmr", mmr.get("enabled", False)),
        "mmr_lambda": own.get("mmr_lambda", mmr.get("lambda", 0.7)),
        "decay": own.get("temporal_decay", decay.get("enabled", False)),
        "half_life_days": own.get("half_life_days", decay.get("halfLifeDays", 30)),
    }
    for key in ("mmr", "decay"):
        if not isinstance(values[key], bool):
            raise ConfigError(f"search settings: `{key}` must be true or false, not {values[key]!r}")
    lam, half = values["mmr_lambda"], values["half_life_days"]
    if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not 0 <= lam <= 1:
        raise ConfigError(f"search settings: the MMR lambda must be a number from 0 to 1, not {lam!r}")
    if isinstance(half, bool) or not isinstance(half, (int, float)) or half <= 0:
        raise ConfigError(f"search settings: the temporal-decay half-life must be a positive number of days, not {half!r}")
    return Ranking(values["mmr"], float(lam), values["decay"], float(half))
