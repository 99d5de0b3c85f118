"""The ``[index]`` table of openclaw-memory.toml, validated once.

Keys: ``model`` (default all-MiniLM-L6-v2), ``chunk_tokens`` and ``overlap_tokens``
(default: the model's window and about 15% of it), ``backend`` (store engine,
default ``edge``), ``embedding_backend`` (``auto``, ``torch`` or ``onnx``),
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
        return json.dumps([self.model, self.chunk_tokens, self.overlap_tokens, self.embedding_backend])


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
    embedding_backend = text("embedding_backend", "auto")
    if embedding_backend not in ("auto", "torch", "onnx"):
        raise ConfigError(f"{where}: `embedding_backend` must be auto, torch or onnx, not {embedding_backend!r}")
    return IndexConfig(
        model=text("model", DEFAULT_MODEL),
        chunk_tokens=count("chunk_tokens", None, 16),
        overlap_tokens=count("overlap_tokens", None, 0),
        backend=text("backend", "edge"),
        embedding_backend=embedding_backend,
        lock_timeout=float(timeout),
        embed_batch=count("embed_batch", 256, 1),
    )
