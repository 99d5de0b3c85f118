"""Checks of the search index: missing, stale, built with other settings, orphaned shards,
and (with a Qdrant server) the server itself. Only reads: no model is loaded, nothing written.
"""

from __future__ import annotations

from ..errors import IndexDamaged, MemoryToolError
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


def check_server(ctx: CheckContext) -> list[Finding]:
    from ..index.store.server_config import server_config

    if server_config(ctx.settings) is None:
        return []
    from ..index.store.server_health import server_findings

    return server_findings(ctx.settings)


CHECKS = [check_index, check_server]
