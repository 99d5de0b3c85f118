"""Short exclusive sessions on the embedded engine: one open and one close per shard per batch.

A Qdrant Edge shard can be open in one process at a time, and opening or closing one costs
about 0.1 s each. A long-lived process (``watch``, the MCP server) keeps its index with
``keep_open=True`` and closes the shards after each batch or call: a sync that touches a
shard three times opens it once, and between batches no shard lock is held, so other
processes' ``search``, ``status`` and ``index`` run as usual.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def short_session(index) -> Iterator[None]:
    """Release every shard ``index`` opened during the block when it ends (also on an exception)."""
    try:
        yield
    finally:
        # A server backend holds no shard locks; its connection stays up for the next call.
        if index.store.backend == "edge":
            index.store.close()
