"""The one place a backend is chosen: the rest of the package sees only :class:`VectorStore`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import VectorStore, WaitCallback

if TYPE_CHECKING:
    from ...settings import Settings


def open_store(settings: Settings, on_wait: WaitCallback | None = None, keep_open: bool = False) -> VectorStore:
    """The store named by ``[index] backend`` (default ``edge``, the embedded engine)."""
    from ...errors import ConfigError
    from ..config import index_config
    from .server_config import server_config

    config = index_config(settings)
    server = server_config(settings)  # --qdrant-url > OPENCLAW_MEMORY_QDRANT_URL > [index] backend = "qdrant"
    if server is not None:
        from .server import ServerStore

        return ServerStore(server)
    if config.backend == "edge":
        from .edge import EdgeStore

        return EdgeStore(settings.data_dir / "index", lock_timeout=config.lock_timeout, on_wait=on_wait, keep_open=keep_open)
    raise ConfigError(f"[index] backend = {config.backend!r} is not available; use \"edge\" (the embedded Qdrant Edge engine) or \"qdrant\" with `url`")
