"""The tokenizer and the embedding model of an index, each loaded on first use and lent to whoever
indexes or searches with it (:class:`Models`): the service's pool shares one among its agents."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .config import IndexConfig


class Models:
    """The tokenizer and the embedding model, each loaded on first use only."""

    def __init__(self, config: IndexConfig, cache_dir=None):
        self.config = config
        self.cache_dir = cache_dir  # where the ONNX export of the model is cached (settings.model_cache)
        self._counter = None
        self._embedder = None
        self._pinned: str | None = None
        self._lend: Callable[[Any], Any] | None = None
        self._loading = threading.Lock()  # threads that share the models load each one once

    def lend(self, wrap: Callable[[Any], Any]) -> None:
        """Hand the embedding model out as ``wrap(model)`` from now on (loaded or not yet): a pool
        that shares it between threads watches its calls."""
        with self._loading:
            self._lend = wrap
            if self._embedder is not None:
                self._embedder = wrap(self._embedder)

    def pin_backend(self, backend: str) -> None:
        """Embed with the backend an existing index was built with (``auto`` may resolve otherwise now)."""
        if backend and self._embedder is None and self.config.embedding_backend == "auto":
            self._pinned = backend

    @property
    def counter(self):
        if self._counter is None:
            from .tokens import load_token_counter

            with self._loading:
                if self._counter is None:
                    self._counter = load_token_counter(self.config.model)
        return self._counter

    @property
    def embedder(self):
        if self._embedder is None:
            from .embedding import load_embedder

            with self._loading:
                if self._embedder is None:
                    backend = self._pinned or self.config.embedding_backend
                    model = load_embedder(self.config.model, backend=backend, cache_dir=self.cache_dir)
                    self._embedder = self._lend(model) if self._lend is not None else model
        return self._embedder

    @property
    def loaded(self) -> bool:
        return self._embedder is not None

    @property
    def lent(self) -> bool:
        return self._lend is not None

    @property
    def budget(self) -> tuple[int, int]:
        """The effective (chunk budget, overlap) in the model's tokens."""
        from .chunking import resolve_budget

        return resolve_budget(self.counter, self.config.chunk_tokens, self.config.overlap_tokens)

    def chunk(self, text: str, path: str | None = None, items: bool = False):
        """The file's section chunks, its list items with ``items``, and its card (``path`` names
        the file: a title of last resort)."""
        from .chunking import chunk_document

        return chunk_document(
            text, self.counter, budget_tokens=self.config.chunk_tokens, overlap_tokens=self.config.overlap_tokens,
            path=path, items=items,
        )

    def fingerprint(self) -> str:
        from .embedding import embedding_fingerprint

        e = self.embedder
        budget, overlap = self.budget
        return embedding_fingerprint(e.model_name, e.dim, budget, overlap, e.backend)
