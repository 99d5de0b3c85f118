"""Settings, resolved once: flags > environment > config files > defaults.

Config files are OpenClaw's own ``<state-dir>/openclaw.json`` (JSON5, read-only)
and this project's ``<state-dir>/openclaw-memory.toml``. Extra memory paths from
every source add up into one de-duplicated list; scalars follow the precedence.

Every table of the toml is a frozen dataclass held by :class:`Settings` (``settings.index``,
``settings.service``, ...), built and checked here, once: an unknown table or key, or a value of the
wrong type, is a ConfigError naming the file, the table and the key. Nothing downstream reads raw
toml or checks it again.

The modules, by job: ``_tree`` (the dataclasses and their checks), ``_ids`` (agent and session ids),
``_places`` (OpenClaw's home, state dir, openclaw.json, the model cache), ``_files`` (the config
files read and parsed), ``_openclaw`` (what openclaw.json says for an agent), ``_resolve`` (the
precedence, the workspace, the command line that repeats the settings).
"""

from ._files import load_json5
from ._ids import agent_id, check_agent, check_session, openclaw_agent_id
from ._openclaw import every_agents_sources, switch_env, timezone_problem
from ._places import default_model_cache, openclaw_home
from ._resolve import command_line, normalize_extra_paths, printable_url, resolve_settings
from ._tree import (
    DEFAULT_MODEL,
    EMBEDDING_BACKENDS,
    TOML_KEYS,
    TOML_TABLES,
    HistorySettings,
    IndexServerSettings,
    Overrides,
    Settings,
    StartupContext,
)

__all__ = [
    "DEFAULT_MODEL",
    "EMBEDDING_BACKENDS",
    "TOML_KEYS",
    "TOML_TABLES",
    "HistorySettings",
    "IndexServerSettings",
    "Overrides",
    "Settings",
    "StartupContext",
    "agent_id",
    "check_agent",
    "check_session",
    "command_line",
    "default_model_cache",
    "every_agents_sources",
    "load_json5",
    "normalize_extra_paths",
    "printable_url",
    "openclaw_agent_id",
    "openclaw_home",
    "resolve_settings",
    "switch_env",
    "timezone_problem",
]
