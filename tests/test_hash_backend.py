"""The model-free ``hash`` embedding backend, how it is chosen, and the per-machine model cache's key."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import settings_for, write
from openclaw_memory.errors import ConfigError
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.config import index_config
from openclaw_memory.index.embedding import load_embedder
from openclaw_memory.index.models import resolve_model
from openclaw_memory.index.onnx_embedding import export_folder, model_hash
from openclaw_memory.settings import Overrides, resolve_settings


def test_same_text_same_unit_vector_and_shared_words_bring_texts_closer():
    embedder = load_embedder("all-MiniLM-L6-v2", backend="hash")
    texts = ["The user prefers green tea.", "the USER prefers green tea", "Kubernetes cluster upgrade on Friday.", ""]
    a, again, other, empty = embedder.encode(texts)
    assert embedder.encode(texts[:1]).tobytes() == embedder.encode(texts[:1]).tobytes()
    assert np.allclose(np.linalg.norm(embedder.encode(texts), axis=1), 1.0, atol=1e-6)
    assert float(a @ again) == pytest.approx(1.0)  # case and punctuation are not words
    assert float(a @ other) < 0.3 < float(a @ embedder.encode(["green tea every morning"])[0])
    assert embedder.dim == 384 and embedder.backend == "hash" and np.count_nonzero(empty) == 1


def test_exact_words_are_found_first(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea in the morning\n")
    write(workspace / "memory" / "ops.md", "# Ops\n\nThe staging cluster in Frankfurt was upgraded.\n")
    write(workspace / "memory" / "trip.md", "# Trip\n\nBooked the hiking trip to Zermatt for July.\n")
    with MemoryIndex(settings_for(workspace, state_dir)) as index:
        summary = index.sync()
        assert summary.chunks_embedded >= 3 and index.models.embedder.backend == "hash"
        for query, path in (("staging cluster Frankfurt", "memory/ops.md"), ("hiking trip Zermatt", "memory/trip.md")):
            assert index.search(query, mode="vector").results[0].path == path


def test_environment_names_the_backend_above_the_toml(state_dir, workspace):
    write(state_dir / "openclaw-memory.toml", '[index]\nembedding_backend = "torch"\n')
    plain = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={})
    assert index_config(plain).embedding_backend == "torch"
    assert index_config(settings_for(workspace, state_dir)).embedding_backend == "hash"
    wrong = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)),
                             environ={"OPENCLAW_MEMORY_EMBEDDING_BACKEND": "fast"})
    with pytest.raises(ConfigError, match="OPENCLAW_MEMORY_EMBEDDING_BACKEND must be auto, torch, onnx or hash, not 'fast'"):
        index_config(wrong)


def test_model_cache_is_per_machine_and_set_by_the_environment(workspace, tmp_path):
    one = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(tmp_path / "a")), environ={"HOME": "/nowhere"})
    two = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(tmp_path / "b")), environ={"XDG_CACHE_HOME": "/c"})
    own = resolve_settings(Overrides(workspace=str(workspace)), environ={"OPENCLAW_MEMORY_MODEL_CACHE": str(tmp_path / "m")})
    assert one.model_cache == Path("~/.cache/openclaw-memory/models").expanduser()  # not in either state dir
    assert two.model_cache == Path("/c/openclaw-memory/models") and own.model_cache == tmp_path / "m"


def test_the_export_is_named_by_the_model_files_content_not_their_place(tmp_path):
    source = Path(resolve_model("all-MiniLM-L6-v2"))
    copy = tmp_path / "copy"
    shutil.copytree(source, copy, symlinks=False)
    assert model_hash(copy) == model_hash(source)
    assert export_folder("all-MiniLM-L6-v2", tmp_path, str(copy)) == export_folder("all-MiniLM-L6-v2", tmp_path, str(source))
    config = copy / "config.json"
    config.write_text(config.read_text() + " ")
    assert model_hash(copy) != model_hash(source)  # a changed file: a new export
