"""The ``[history]`` table of openclaw-memory.toml: how many versions to keep, and how many bytes."""

from __future__ import annotations

from typing import NamedTuple

from ..errors import ConfigError

DEFAULT_KEEP_PER_PATH = 50
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class HistoryConfig(NamedTuple):
    keep_per_path: int = DEFAULT_KEEP_PER_PATH
    max_bytes: int = DEFAULT_MAX_BYTES


def history_config(settings) -> HistoryConfig:
    """Read ``[history] keep_per_path`` and ``max_bytes``; a wrong type is a ConfigError naming the key."""
    table = settings.section("history")
    values = {}
    for key, default in (("keep_per_path", DEFAULT_KEEP_PER_PATH), ("max_bytes", DEFAULT_MAX_BYTES)):
        value = table.get(key, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(
                f"{settings.state_dir / 'openclaw-memory.toml'} [history]: "
                f"`{key}` must be a whole number of at least 1, not {value!r}"
            )
        values[key] = value
    return HistoryConfig(**values)
