"""Run a parsed command line: resolve the settings, call the command's handler."""

from __future__ import annotations

from .parse import Parsed


def run_parsed(parsed: Parsed) -> int:
    """Resolve the settings and call the command's handler."""
    from ..settings import Overrides, resolve_settings

    if parsed.command is None:
        raise ValueError(f"a {parsed.action!r} command line names no command to run")
    given = parsed.settings
    settings = resolve_settings(
        Overrides(
            workspace=given.get("workspace") or None,
            agent=given.get("agent") or None,
            state_dir=given.get("state_dir") or None,
            extra=tuple(given.get("extra") or ()),
            multimodal=given.get("multimodal"),
            qdrant_url=given.get("qdrant_url") or None,
            session=given.get("session") or None,
        )
    )
    result = parsed.command.handler(settings, **parsed.values)
    return result if isinstance(result, int) else 0
