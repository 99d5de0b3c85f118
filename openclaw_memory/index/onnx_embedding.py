"""The ONNX fast path: the same model, exported once, run with onnxruntime + tokenizers.

``import sentence_transformers`` alone costs seconds; onnxruntime loads in a fraction of one. The
default model's export ships with this package (``index/shipped/``, written by
``scripts/build_model.py``, its files checked against ``files.json`` at load): no weights, no export
step, no cache. Any other model's graph is written once, its attention and layer norms fused, its
weights quantised to int8 (:func:`~openclaw_memory.index.onnx_graph.quantize_rowwise`: a scale per
weight channel, and per activation row, so a text's vector does not depend on its batch), and the
result cached once per machine (``settings.model_cache``), in a folder named after the hash of the
model's files, which every state dir shares. The graph is written straight from
``model.safetensors`` (:mod:`~openclaw_memory.index.onnx_graph`, no torch: the light ``search``
install); a model that one cannot describe (tanh GELU, relative positions, a ``.bin`` checkpoint)
is traced with torch instead, when torch is installed. Both give the same fused graph, so an
index embedded through either needs no re-embedding; the shipped export is this same export of
the default model's weights. Inference reproduces the sentence-transformers pipeline: the model's
truncation, mean pooling over the attention mask, L2 normalisation.

Only BERT-family models with plain mean pooling are exported; any other model uses torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import xxhash

from openclaw_memory.errors import MemoryToolError, MissingExtra, UsageError
from openclaw_memory.extras import FEATURES, missing_extra, pip_command
from openclaw_memory.index.models import (
    META_FILE,
    MODEL_FILE,
    canonical_model_name,
    force_offline,
    is_default_model,
    resolve_model,
    shipped_model,
    verify_shipped,
)

# Bump when the export recipe changes: old exports are redone, and an index embedded by an older
# recipe is re-embedded (the recipe is part of the embedding fingerprint). 2: activations quantised
# with a scale per row, not per batch (a text's vector no longer depends on its batch); the word
# table stored as int8.
FORMAT = 2
_TORCH_EXPORT_NEEDS = ("torch", "transformers", "onnx", "onnxruntime")


def can_export(model_path: str | Path) -> bool:
    """Whether this model can be exported here, by either exporter (nothing is imported)."""
    return _exporter(model_path, "auto") is not None


def _exporter(model_path: str | Path, wanted: str) -> str | None:
    """``graph`` (from the weights, no torch) where it fits, else ``torch`` where installed."""
    from openclaw_memory.index import onnx_graph

    if wanted in ("auto", "graph") and importlib.util.find_spec("onnxruntime") and onnx_graph.can_build(model_path):
        return "graph"
    if wanted in ("auto", "torch") and all(importlib.util.find_spec(name) for name in _TORCH_EXPORT_NEEDS):
        return "torch"
    return None


def export_folder(model_name: str, cache_dir: str | Path, model_path: str | None = None) -> Path:
    """The cache folder of this model's export: named after the model and the hash of its files."""
    path = Path(model_path or resolve_model(model_name))
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", canonical_model_name(model_name)).strip("-")[:80]
    return Path(cache_dir) / "onnx" / f"{slug}-{model_hash(path)}"


_IDENTITY_FILES = ("model.safetensors", "pytorch_model.bin", "config.json", "tokenizer.json", "sentence_bert_config.json")
_hashes: dict[tuple, str] = {}


def model_hash(model_path: Path) -> str:
    """The hash of what shapes the export (the recipe's format, the weights, config, tokenizer).

    Keyed by content, not by place: the same model installed in two environments shares one
    export, and a changed file gets a new one. Remembered per process by the files' stat.
    """
    files = [model_path / name for name in _IDENTITY_FILES if (model_path / name).is_file()]
    key = tuple((str(f), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    if key not in _hashes:
        digest = xxhash.xxh3_128(f"format={FORMAT}".encode())
        for f in files:
            digest.update(f"\x00{f.name}\x00".encode())
            with open(f, "rb") as stream:
                while block := stream.read(1 << 22):
                    digest.update(block)
        _hashes[key] = digest.hexdigest()[:16]
    return _hashes[key]


def is_exported(model_name: str, cache_dir: str | Path) -> bool:
    try:
        folder = export_folder(model_name, cache_dir)
    except UsageError:
        return False
    return (folder / MODEL_FILE).is_file() and (folder / META_FILE).is_file()


def supported(model_path: str | Path) -> bool:
    """BERT-family transformer, mean pooling, no extra (Dense) modules: what this path reproduces."""
    folder = Path(model_path)
    config = _read_json(folder / "config.json")
    if config.get("model_type") != "bert" or not (folder / "tokenizer.json").is_file():
        return False
    modules = _read_json_list(folder / "modules.json")
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling", "Normalize"], ["Transformer", "Pooling"]):
        return False
    pooling_path = next(m.get("path", "") for m in modules if m.get("type", "").endswith("Pooling"))
    pooling = _read_json(folder / pooling_path / "config.json")
    modes = [k for k, v in pooling.items() if k.startswith("pooling_mode") and v]
    return modes == ["pooling_mode_mean_tokens"]


# What the ONNX path imports, in this order (numpy first: onnxruntime's own load imports it).
_IMPORTED_WHOLE = ("numpy", "onnxruntime", "tokenizers")
# The signals a command or the service stops on (signals.stop_signals): held while those load.
_HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _import_whole(names: tuple[str, ...]) -> None:
    """Import ``names`` with the main thread's stop signals held until they are loaded, then handed
    to the handlers they had: a Ctrl-C or SIGTERM (a KeyboardInterrupt, the watch's WatchStopped,
    raised by its handler) during numpy's import inside onnxruntime's was swallowed by the C code
    that loads it, printed as a traceback and said as "import numpy failed": the service and a
    search said the 'search' part was not installed (exit 1) instead of stopping. The stop is a stop,
    said as one once the import is done (a second or so), and no module is left half imported (a
    process's later tries, the next request of a long-lived one, met a numpy that could not load)."""
    if all(name in sys.modules for name in names):
        return
    if threading.current_thread() is not threading.main_thread():
        for name in names:
            importlib.import_module(name)  # (signal handlers run on the main thread only)
        return
    held: list[int] = []

    def hold(signum, _frame):
        held.append(signum)  # (a list append only: it runs between any two bytecodes)

    previous = {}
    for sig in _HELD_SIGNALS:
        handler = signal.getsignal(sig)
        if callable(handler):  # the default action (SIG_DFL) and an ignored signal stay as they are
            previous[sig] = signal.signal(sig, hold)
    try:
        for name in names:
            importlib.import_module(name)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for signum in held:
            handler = previous[signal.Signals(signum)]
            if callable(handler):
                handler(signum, None)  # raises its stop (KeyboardInterrupt, WatchStopped) or notes it


def _onnxruntime():
    """onnxruntime with its telemetry off, set before it loads: 1.32 keeps a device id and a queue of
    reports on the host (its path, OS, CPU, memory, container) under ~/.cache/Microsoft/ and sends them
    to Microsoft's collector from any process that keeps the model loaded (DNS lookups ~9 s after
    the load, in serve, watch, mcp and long index runs). Nothing may leave the machine. Loaded whole,
    a stop signal held meanwhile (:func:`_import_whole`)."""
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"
    _import_whole(_IMPORTED_WHOLE)
    import onnxruntime

    onnxruntime.disable_telemetry_events()
    return onnxruntime


class OnnxEmbedder:
    """Embeds with an exported, quantised model; rows L2-normalised like sentence-transformers."""

    backend = "onnx"

    def __init__(self, model_name: str, folder: Path, model_path: str):
        from tokenizers import Tokenizer

        onnxruntime = _onnxruntime()

        meta = _read_json(folder / META_FILE)
        if meta.get("format") != FORMAT:
            raise ValueError(f"{folder / META_FILE} is not an export of this version")
        self.model_name = canonical_model_name(model_name)
        self.dim = int(meta["dim"])
        self.folder = folder
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(Path(model_path) / "tokenizer.json"))
        # The model's own limit, special tokens included, exactly as sentence-transformers truncates.
        self._tokenizer.enable_truncation(int(meta["max_seq_length"]))
        self._tokenizer.no_padding()

    @classmethod
    def load(cls, model_name: str, model_path: str, cache_dir: Path | None) -> OnnxEmbedder:
        """The shipped export of the default model; for any other, the cached export, exporting
        first when there is none."""
        try:
            _onnxruntime()
        except ImportError as exc:
            raise _no_onnxruntime(exc) from None
        shipped = shipped_export(model_name)
        if shipped is not None:
            verify_shipped(shipped)
            return cls(model_name, shipped, str(shipped))
        if cache_dir is None:
            raise UsageError("The onnx embedding backend needs a cache folder for the exported model.")
        if not supported(model_path):
            raise UsageError(
                f"Model {model_name!r} cannot run on the onnx backend (only BERT models with mean pooling "
                "are exported); use the torch backend."
            )
        folder = export_folder(model_name, cache_dir, model_path)
        if not ((folder / MODEL_FILE).is_file() and (folder / META_FILE).is_file()):
            export_model(model_path, folder)
        try:
            return cls(model_name, folder, model_path)
        except Exception:  # noqa: BLE001 - onnxruntime raises its own classes for a damaged model file
            # The export is a cache of the model: a damaged one (truncated,
            # zeroed, garbled) is thrown away and made again, never trusted.
            _discard(folder)
            export_model(model_path, folder)
            return cls(model_name, folder, model_path)

    def encode(self, texts: list[str], batch_size: int = 32):
        """One L2-normalised float32 row per text."""
        import numpy as np

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # Batches of texts of equal token counts: next to no padding (sorted by characters, 20% of
        # the tokens of corpus batches were padding). Each row's vector is the same in any batch.
        encodings = self._tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda k: -len(encodings[k].ids))
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = max(len(encodings[k].ids) for k in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, k in enumerate(rows):
                ids[r, : len(encodings[k].ids)] = encodings[k].ids
                mask[r, : len(encodings[k].ids)] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
            summed = (hidden * mask[..., None]).sum(axis=1)
            pooled = summed / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
            norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[rows] = pooled / norms
        return out


def _no_onnxruntime(exc: ImportError) -> MemoryToolError:
    """The error for an onnxruntime that cannot be imported, worded as every command's missing part:
    not installed, or installed and failing to load (a missing shared library: its cause is kept)."""
    missing = missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else None
    if missing is not None:
        return missing
    return MissingExtra(f"{FEATURES['search']} needs the optional 'search' part (onnxruntime does not load: {exc}): "
                        f"{pip_command('search')}")


def shipped_export(model_name: str) -> Path | None:
    """The export this package ships for ``model_name`` (the default model only), if the package holds
    it. A shipped folder without its model file is returned as well: :func:`verify_shipped` says it is
    missing and how to restore it (taken for no export, the default model went to the torch backend,
    whose hint is to install torch: gigabytes, for a missing 24 MB file)."""
    return shipped_model() if is_default_model(model_name) else None


def export_model(model_path: str, folder: Path, exporter: str = "auto") -> str:
    """Export, fuse and quantise the model into ``folder`` (atomically: a crash leaves no half file).

    ``exporter`` picks how the fp32 graph is made (``auto``: from the weights where possible);
    returns the one used.
    """
    chosen = _exporter(model_path, exporter)
    if chosen is None:
        raise UsageError(
            "The onnx embedding backend cannot export this model here: it needs onnx, onnxruntime and "
            "safetensors for a BERT model with safetensors weights, or torch and transformers for any "
            f"other; use the torch backend: {pip_command('torch')}."
        )
    import onnx
    from onnxruntime.transformers.optimizer import optimize_model

    from openclaw_memory.index.onnx_graph import quantize_rowwise

    config = _read_json(Path(model_path) / "config.json")
    max_seq = _read_json(Path(model_path) / "sentence_bert_config.json").get("max_seq_length") or min(
        512, int(config.get("max_position_embeddings", 512))
    )
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".export-", dir=folder.parent))
    try:
        if chosen == "graph":
            from openclaw_memory.index.onnx_graph import build_bert_graph

            build_bert_graph(model_path, work / "model.onnx")
        else:
            _trace_with_torch(model_path, work / "model.onnx")
        fused = optimize_model(
            str(work / "model.onnx"),
            model_type="bert",
            num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]),
            opt_level=0,
        )
        onnx.save_model(quantize_rowwise(fused.model), str(work / MODEL_FILE))
        meta = {
            "format": FORMAT,
            "dim": int(config["hidden_size"]),
            "max_seq_length": int(max_seq),
            "source": model_path,
            "exporter": chosen,
        }
        (work / META_FILE).write_text(json.dumps(meta, indent=2))
        final = Path(tempfile.mkdtemp(prefix=".ready-", dir=folder.parent))
        for name in (MODEL_FILE, META_FILE):
            os.replace(work / name, final / name)
        try:
            os.replace(final, folder)
        except OSError:
            shutil.rmtree(final, ignore_errors=True)  # another process finished the same export first
            if not (folder / MODEL_FILE).is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return chosen


def _trace_with_torch(model_path: str, out_file: Path) -> None:
    """The fp32 graph traced from the transformers model: for what the graph writer does not cover."""
    force_offline()
    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    # Eager attention exports the pattern onnxruntime's optimiser recognises and fuses.
    model = AutoModel.from_pretrained(model_path, attn_implementation="eager", local_files_only=True).eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = torch.ones((2, 16), dtype=torch.long)
    with torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter warns about its own deprecation and tracing; the result is
        # checked against the torch vectors by the tests and bench/embed.py.
        warnings.simplefilter("ignore")
        torch.onnx.export(
            _Hidden(model),
            (sample, torch.ones_like(sample), torch.zeros_like(sample)),
            str(out_file),
            input_names=names,
            output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "sequence"} for n in [*names, "last_hidden_state"]},
            opset_version=17,
            dynamo=False,
        )


def _discard(folder: Path) -> None:
    """Remove a damaged export; renamed first so no other process loads it half deleted."""
    doomed = folder.with_name(f".discard-{folder.name}-{os.getpid()}-{os.urandom(3).hex()}")
    try:
        os.rename(folder, doomed)
    except FileNotFoundError:
        return
    shutil.rmtree(doomed, ignore_errors=True)


def _load_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _read_json(path: Path) -> dict:
    data = _load_json(path)
    return data if isinstance(data, dict) else {}


def _read_json_list(path: Path) -> list[dict]:
    data = _load_json(path)
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []
