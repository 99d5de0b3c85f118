"""The ``[history]`` table of openclaw-memory.toml: how many versions to keep, and how many bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..settings import HistorySettings

if TYPE_CHECKING:
    from ..settings import Settings

DEFAULT_KEEP_PER_PATH: int = HistorySettings.keep_per_path
DEFAULT_MAX_BYTES: int = HistorySettings.max_bytes


class HistoryConfig(NamedTuple):
    keep_per_path: int = DEFAULT_KEEP_PER_PATH
    max_bytes: int = DEFAULT_MAX_BYTES


def history_config(settings: Settings) -> HistoryConfig:
    """``[history] keep_per_path`` and ``max_bytes``, checked when settings were resolved."""
    return HistoryConfig(settings.history.keep_per_path, settings.history.max_bytes)
