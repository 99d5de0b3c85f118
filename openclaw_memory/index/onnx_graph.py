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


# -- int8 with a scale per row ------------------------------------------------------------------
#
# onnxruntime's dynamic quantisation scales activations by the range of the whole input tensor
# (batch × tokens × hidden): a text's vector then depends on the other texts of its batch and on
# their padding. Here each row (one token's hidden vector) is quantised by its own symmetric scale,
# computed in the graph, so every token's arithmetic (integer products, its own scale) is the same
# whatever else is in the batch: a text embedded alone and inside any batch gives identical vectors.


def quantize_rowwise(model, word_table: bool = True):
    """The fused fp32 ``model`` with its weight MatMuls (and attention projections) in int8.

    Weights: int8, symmetric, one scale per output channel. Activations: uint8 around a zero
    point of 128, one symmetric scale per row (``max |x| / 127`` over the last axis), so a row is
    quantised the same in any batch. ``MatMulIntegerToFloat`` applies the weight scales, a ``Mul``
    the row's. A fused ``Attention`` becomes three such projections (query, key, value: one
    quantised input) and ``MultiHeadAttention``. With ``word_table``, the word-embedding table,
    most of the file, is stored as int8 with a scale per row (a ``Cast`` and ``Mul`` that
    onnxruntime folds to the fp32 table once, when it loads the model).
    """
    import numpy as np
    from onnx import NodeProto, TensorProto, helper, numpy_helper

    graph = model.graph
    initializers = {t.name: t for t in graph.initializer}
    nodes: list = []
    added: dict = {}
    dropped: set[str] = set()
    ms_domain = "com.microsoft"

    def const(name: str, value) -> str:
        if name not in added:
            added[name] = numpy_helper.from_array(np.asarray(value), name)
        return name

    def node(op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    quantized: dict[str, tuple[str, str]] = {}

    def quantize_input(x: str) -> tuple[str, str]:
        """(uint8 rows, their scales [..., 1]) of activation ``x``, once per tensor."""
        if x not in quantized:
            high = node("ReduceMax", [x], f"{x}/rowq/max", axes=[-1], keepdims=1)
            low = node("ReduceMin", [x], f"{x}/rowq/min", axes=[-1], keepdims=1)
            amax = node("Max", [high, node("Neg", [low], f"{x}/rowq/-min"), const("rowq/tiny", np.float32(1e-30))], f"{x}/rowq/amax")
            levels = const("rowq/127", np.float32(127.0))
            scale = node("Div", [amax, levels], f"{x}/rowq/scale")
            scaled = node("Mul", [x, node("Div", [levels, amax], f"{x}/rowq/inverse")], f"{x}/rowq/scaled")
            # Already in units of the row's scale: round half to even, + 128, saturate (never reached).
            q = node("QuantizeLinear", [scaled, const("rowq/one", np.float32(1.0)), const("rowq/zero128", np.uint8(128))], f"{x}/rowq/uint8")
            quantized[x] = (q, scale)
        return quantized[x]

    def linear(x: str, weight, out: str) -> str:
        """``x @ weight`` (no bias) with int8 weights and per-row activation scales."""
        q, row_scale = quantize_input(x)
        amax = np.abs(weight).max(axis=0)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        w8 = np.clip(np.round(weight / scale), -127, 127).astype(np.int8)
        product = node(
            "MatMulIntegerToFloat",
            [q, const(f"{out}/w_int8", w8), const("rowq/one", np.float32(1.0)), const(f"{out}/w_scale", scale),
             const("rowq/zero128", np.uint8(128))],
            f"{out}/per_channel", domain=ms_domain,
        )
        return node("Mul", [product, row_scale], out)

    def weight_of(name: str):
        tensor = initializers.get(name)
        return None if tensor is None else numpy_helper.to_array(tensor)

    for n in graph.node:
        if n.op_type == "MatMul" and n.domain == "":
            weight = weight_of(n.input[1])
            if weight is not None and weight.ndim == 2 and weight.dtype == np.float32:
                linear(n.input[0], weight, n.output[0])
                dropped.add(n.input[1])
                continue
        if n.op_type == "Attention" and n.domain == ms_domain:
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            weight, bias = weight_of(n.input[1]), weight_of(n.input[2]) if len(n.input) > 2 else None
            plain = (
                set(attrs) <= {"num_heads", "mask_filter_value", "scale"}
                and len([i for i in n.input[4:] if i]) == 0
                and weight is not None and bias is not None and weight.ndim == 2 and weight.shape[1] % 3 == 0
            )
            if plain:  # else (past state, rotary, unequal sizes) the fp32 Attention stays: still row-exact
                assert weight is not None
                size = weight.shape[1] // 3
                out = n.output[0]
                parts = [linear(n.input[0], weight[:, k * size : (k + 1) * size], f"{out}/{kind}")
                         for k, kind in enumerate(("query", "key", "value"))]
                mask = n.input[3] if len(n.input) > 3 else ""
                nodes.append(helper.make_node("MultiHeadAttention", [*parts, n.input[2], mask], [out],
                                              name=f"{out}/attention", domain=ms_domain, **attrs))
                dropped.add(n.input[1])
                continue
        nodes.append(n)

    if word_table:
        for k, n in enumerate(nodes):
            if n.op_type == "EmbedLayerNormalization" and n.domain == ms_domain:
                table = weight_of(n.input[2])
                if table is None or table.ndim != 2:
                    continue
                amax = np.abs(table).max(axis=1, keepdims=True)
                scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
                t8 = np.clip(np.round(table / scale), -127, 127).astype(np.int8)
                name = n.input[2]
                wide = node("Cast", [const(f"{name}/int8", t8)], f"{name}/float", to=TensorProto.FLOAT)
                fused = NodeProto()
                fused.CopyFrom(n)
                fused.input[2] = node("Mul", [wide, const(f"{name}/row_scale", scale)], f"{name}/dequantized")
                nodes[k] = fused
                dropped.add(name)

    kept = [t for t in graph.initializer if t.name not in dropped]
    new_graph = helper.make_graph(
        _topological(nodes, {i.name for i in graph.input} | {t.name for t in kept} | set(added)),
        graph.name, list(graph.input), list(graph.output), kept + list(added.values()),
    )
    opsets = {o.domain: o.version for o in model.opset_import}
    opsets.setdefault(ms_domain, 1)
    quantized_model = helper.make_model(new_graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets.items()])
    quantized_model.ir_version = model.ir_version
    return quantized_model


def _topological(nodes: list, available: set[str]) -> list:
    """``nodes`` in an order where each input is made before it is used (the ONNX rule)."""
    made = {"", *available}
    ordered: list = []
    pending = list(nodes)
    while pending:
        ready = [n for n in pending if all(i in made for i in n.input)]
        if not ready:
            raise ValueError("the quantised graph has a cycle or an input nothing makes")
        for n in ready:
            made.update(n.output)
        ordered += ready
        ids = {id(n) for n in ready}
        pending = [n for n in pending if id(n) not in ids]
    return ordered
