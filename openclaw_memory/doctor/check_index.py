"""Checks of the search index: missing, stale, built with other settings, orphaned shards,
the packaged model's files, and (with a Qdrant server) the server itself. Only reads: no model is
loaded, nothing written.
"""

from __future__ import annotations

import importlib.util

from ..errors import IndexDamaged, MemoryToolError, UsageError
from ..extras import missing_extra
from .model import CheckContext, Finding


def check_index(ctx: CheckContext) -> list[Finding]:
    from ..index.status import index_findings

    try:
        return index_findings(ctx.settings, ctx.scan)
    except IndexDamaged:
        return []  # reported, with its repair, as index-damaged (check_state)
    except MemoryToolError as exc:  # a busy or unreachable index must not hide the other checks
        return [Finding("index-unavailable", "warning", f"The search index cannot be checked: {exc.message}")]
    except ModuleNotFoundError as exc:  # a core install checks the files; the index needs the search extra
        missing = missing_extra(exc)
        if missing is None:
            raise
        return [Finding("index-unchecked", "info", f"The search index was not checked: {missing.message}")]


def check_model(ctx: CheckContext) -> list[Finding]:
    """The shipped export of the default model, where the index embeds with it: a missing or cut-short
    file (an interrupted copy, a packager's pruning) fails every index run and search with the
    embedder loaded, while the files and index checks above look fine (review)."""
    from ..index.config import index_config

    config = index_config(ctx.settings)
    if config.embedding_backend not in ("auto", "onnx") or (
            config.embedding_backend == "auto" and importlib.util.find_spec("onnxruntime") is None):
        return []  # another embedder (auto without onnxruntime: torch), or none is installed: index-unchecked
    from ..index.models import is_default_model, shipped_model, verify_shipped  # (not the backend: 4 ms of imports)

    folder = shipped_model() if is_default_model(config.model) else None
    if folder is None:
        return []  # another model: exported into the per-machine cache, made again when missing
    try:
        verify_shipped(folder, hashed=False)
    except UsageError as exc:
        return [Finding("model-damaged", "error",
                        f"The embedding model this package ships cannot be loaded, so `openclaw-memory index` and "
                        f"search fail: {exc.message}")]
    return []


def check_server(ctx: CheckContext) -> list[Finding]:
    from ..index.store.server_config import server_config

    if server_config(ctx.settings) is None:
        return []
    from ..index.store.server_health import server_findings

    return server_findings(ctx.settings)


CHECKS = [check_index, check_model, check_server]
