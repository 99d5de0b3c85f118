"""A BERT encoder's ONNX graph written from its safetensors weights: no torch, no transformers.

The graph is the one BERT's own PyTorch code traces to (post-LN encoder, erf GELU, additive
attention mask), written node by node in the classic layout that onnxruntime's transformer
optimiser recognises, so the same fusion (EmbedLayerNormalization, Attention, SkipLayerNorm,
BiasGelu) and int8 quantisation apply as to a torch export. Inputs and output are named as the
torch export names them, so :class:`~openclaw_memory.index.onnx_embedding.OnnxEmbedder` runs
either unchanged.
"""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

from openclaw_memory.errors import UsageError

NEEDS = ("onnx", "safetensors", "numpy")
WEIGHTS = "model.safetensors"
OPSET = 17
IR_VERSION = 8  # the IR of opset 17: every onnxruntime the `search` extra allows loads it
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "last_hidden_state"


def can_build(model_path: str | Path) -> bool:
    """Whether this model's graph can be written here: libraries installed, weights and config fit."""
    if any(importlib.util.find_spec(name) is None for name in NEEDS):
        return False
    folder = Path(model_path)
    if not (folder / WEIGHTS).is_file():
        return False  # a pytorch_model.bin needs torch to unpickle
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(config, dict)
        and config.get("model_type") == "bert"
        and config.get("hidden_act") == "gelu"  # erf GELU; the tanh variants are other graphs
        and config.get("position_embedding_type", "absolute") == "absolute"
        and not config.get("is_decoder", False)
        and int(config.get("hidden_size", 0)) % max(1, int(config.get("num_attention_heads", 0))) == 0
    )


def build_bert_graph(model_path: str | Path, out_file: str | Path) -> None:
    """Write the fp32 encoder graph of the BERT model in ``model_path`` to ``out_file``."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper, save_model
    from safetensors.numpy import load_file

    folder = Path(model_path)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    head_dim = hidden // heads
    weights = _Weights(load_file(str(folder / WEIGHTS)), folder / WEIGHTS)

    nodes: list = []
    initializers: list = []

    def const(name: str, value) -> str:
        initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def weight(key: str, transpose: bool = False) -> str:
        value = weights.get(key).astype(np.float32)
        return const(key, np.ascontiguousarray(value.T) if transpose else value)

    def linear(x: str, prefix: str) -> str:
        # torch stores a Linear as [out, in]; the graph multiplies by its transpose, as a trace does.
        product = node("MatMul", [x, weight(f"{prefix}.weight", transpose=True)], f"{prefix}/MatMul")
        return node("Add", [product, weight(f"{prefix}.bias")], f"{prefix}/Add")

    def layer_norm(x: str, prefix: str, name: str | None = None) -> str:
        inputs = [x, weight(f"{prefix}.weight"), weight(f"{prefix}.bias")]
        return node("LayerNormalization", inputs, name or f"{prefix}/LayerNorm", axis=-1, epsilon=eps)

    # Embeddings: word + token type, then + position ids sliced to the sequence length.
    emb = "embeddings"
    word = node("Gather", [weight(f"{emb}.word_embeddings.weight"), "input_ids"], f"{emb}/word")
    kind = node("Gather", [weight(f"{emb}.token_type_embeddings.weight"), "token_type_ids"], f"{emb}/type")
    summed = node("Add", [word, kind], f"{emb}/word+type")
    shape = node("Shape", ["input_ids"], f"{emb}/shape")
    length = node("Gather", [shape, const("one", np.array(1, dtype=np.int64))], f"{emb}/length", axis=0)
    end = node("Unsqueeze", [length, const("axes0", np.array([0], dtype=np.int64))], f"{emb}/end")
    max_positions = int(config.get("max_position_embeddings", 512))
    positions = const(f"{emb}.position_ids", np.arange(max_positions, dtype=np.int64)[None, :])
    position_ids = node(
        "Slice",
        [positions, const("start0", np.array([0], dtype=np.int64)), end,
         const("axes1", np.array([1], dtype=np.int64)), const("step1", np.array([1], dtype=np.int64))],
        f"{emb}/position_ids_used",
    )
    position = node("Gather", [weight(f"{emb}.position_embeddings.weight"), position_ids], f"{emb}/position")
    x = layer_norm(node("Add", [summed, position], f"{emb}/sum"), f"{emb}.LayerNorm")

    # Additive mask shared by every layer: 0 where attended, the float32 minimum where padded.
    mask = node("Unsqueeze", ["attention_mask", const("axes_1", np.array([1], dtype=np.int64))], "mask/unsqueeze1")
    mask = node("Unsqueeze", [mask, const("axes_2", np.array([2], dtype=np.int64))], "mask/unsqueeze2")
    mask = node("Cast", [mask], "mask/float", to=TensorProto.FLOAT)
    one = const("float_one", np.array(1.0, dtype=np.float32))
    mask = node("Sub", [one, mask], "mask/inverted")
    mask = node("Mul", [mask, const("mask_min", np.array(np.finfo(np.float32).min, dtype=np.float32))], "mask/bias")

    split_heads = const("split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("sqrt_head_dim", np.array(math.sqrt(head_dim), dtype=np.float32))
    sqrt2 = const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    half = const("half", np.array(0.5, dtype=np.float32))

    for n in range(layers):
        p = f"encoder.layer.{n}"

        def heads_of(kind: str, perm: list[int], x: str = x, p: str = p) -> str:
            projected = linear(x, f"{p}.attention.self.{kind}")
            split = node("Reshape", [projected, split_heads], f"{p}/{kind}/split")
            return node("Transpose", [split], f"{p}/{kind}/heads", perm=perm)

        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])  # already transposed for Q·Kᵀ
        v = heads_of("value", [0, 2, 1, 3])
        scores = node("Div", [node("MatMul", [q, k], f"{p}/qk"), scale], f"{p}/scaled")
        probs = node("Softmax", [node("Add", [scores, mask], f"{p}/masked")], f"{p}/probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"{p}/context")], f"{p}/context/merge", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merge_heads], f"{p}/context/flat")
        attended = linear(context, f"{p}.attention.output.dense")
        x = layer_norm(node("Add", [attended, x], f"{p}/attention/residual"), f"{p}.attention.output.LayerNorm")

        inner = linear(x, f"{p}.intermediate.dense")
        erf = node("Erf", [node("Div", [inner, sqrt2], f"{p}/gelu/div")], f"{p}/gelu/erf")
        gelu = node("Mul", [inner, node("Add", [erf, one], f"{p}/gelu/add")], f"{p}/gelu/mul")
        gelu = node("Mul", [gelu, half], f"{p}/gelu")
        out = linear(gelu, f"{p}.output.dense")
        last = n == layers - 1
        x = layer_norm(node("Add", [out, x], f"{p}/output/residual"), f"{p}.output.LayerNorm", OUTPUT if last else None)

    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "bert_encoder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUTS],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, [*dims, hidden])],
        initializers,
    )
    # No producer name: onnxruntime's optimiser warns about any but the one it expects (pytorch).
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    save_model(model, str(out_file))


class _Weights:
    """Tensors by BertModel name, whichever spelling the checkpoint uses (``bert.`` prefix, gamma/beta)."""

    def __init__(self, tensors: dict, source: Path):
        self._tensors = tensors
        self._source = source

    def get(self, key: str):
        candidates = [key, f"bert.{key}"]
        if key.endswith("LayerNorm.weight"):
            candidates += [c.replace("LayerNorm.weight", "LayerNorm.gamma") for c in candidates]
        if key.endswith("LayerNorm.bias"):
            candidates += [c.replace("LayerNorm.bias", "LayerNorm.beta") for c in candidates]
        for name in candidates:
            if name in self._tensors:
                return self._tensors[name]
        raise UsageError(
            f"{self._source} has no tensor {key!r}: it is not a BERT encoder's weights; "
            "use the torch embedding backend for this model."
        )
