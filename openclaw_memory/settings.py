"""Settings, resolved once: flags > environment > config files > defaults.

Config files are OpenClaw's own ``<state-dir>/openclaw.json`` (JSON5, read-only)
and this project's ``<state-dir>/openclaw-memory.toml``. Extra memory paths from
every source add up into one de-duplicated list; scalars follow the precedence.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError, WorkspaceError

DEFAULT_AGENT = "main"
TOML_NAME = "openclaw-memory.toml"
OPENCLAW_JSON_NAME = "openclaw.json"


@dataclass(frozen=True)
class ReadLimits:
    default_lines: int = 120
    max_chars: int = 12_000


@dataclass(frozen=True)
class PromptLimits:
    file_chars: int = 12_000
    total_chars: int = 60_000


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about where memory lives."""

    workspace: Path
    agent: str = DEFAULT_AGENT
    state_dir: Path = Path("~/.openclaw").expanduser()
    extra_paths: tuple[str, ...] = ()
    multimodal: bool = False
    read: ReadLimits = field(default_factory=ReadLimits)
    prompt: PromptLimits = field(default_factory=PromptLimits)
    # Sections of openclaw-memory.toml that later parts (index, watchdog, ...) read.
    sections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # A Qdrant server from --qdrant-url or OPENCLAW_MEMORY_QDRANT_URL; above toml [index] url.
    qdrant_url: str | None = None
    # OpenClaw's memorySearch.query.hybrid (agents.defaults, then the agent's own entry on top).
    openclaw_hybrid: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        return self.sections.get(name, {})

    @property
    def data_dir(self) -> Path:
        """This project's own data for this workspace, inside the state dir."""
        import xxhash

        key = xxhash.xxh3_64_hexdigest(str(self.workspace).encode())[:12]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", self.workspace.name).strip("-") or "root"
        return self.state_dir / "openclaw-memory" / "workspaces" / f"{slug}-{key}"

    def with_agent(self, agent: str) -> "Settings":
        return replace(self, agent=agent)


@dataclass(frozen=True)
class Overrides:
    """What the user gave on the command line; None means not given."""

    workspace: str | None = None
    agent: str | None = None
    state_dir: str | None = None
    extra: tuple[str, ...] = ()
    multimodal: bool | None = None
    qdrant_url: str | None = None


def _env(name: str, environ) -> str | None:
    value = environ.get(name)
    return value if value not in (None, "") else None


def _expand(path: str) -> str:
    return os.path.expanduser(path.strip())


def _load_json5(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    import json5

    try:
        data = json5.loads(text)
    except ValueError as exc:
        # json5 words its errors as "<string>:LINE message"; name the real file instead.
        detail = re.sub(r"^<string>:(\d+)\s*", r"line \1: ", str(exc))
        raise ConfigError(f"{path}: not valid JSON5: {detail}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: line 1: the top level must be an object")
    return data


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    import tomllib

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _agent_entry(openclaw: dict[str, Any], agent: str) -> dict[str, Any]:
    agents = openclaw.get("agents") or {}
    for entry in agents.get("list") or []:
        if isinstance(entry, dict) and entry.get("id") == agent:
            return entry
    return {}


def _str_list(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise ConfigError(f"{where} must be a list of paths")


def _multimodal_flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, dict) and isinstance(value.get("enabled"), bool):
        return value["enabled"]
    return None


def _positive_int(table: dict[str, Any], key: str, default: int, where: str) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{where}: `{key}` must be a whole number of at least 1, not {value!r}")
    return value


def resolve_settings(overrides: Overrides | None = None, environ=None, cwd: str | None = None) -> Settings:
    """Resolve settings from flags, the environment, config files and defaults."""
    o = overrides or Overrides()
    env = os.environ if environ is None else environ

    state_dir = Path(_expand(o.state_dir or _env("OPENCLAW_STATE_DIR", env) or "~/.openclaw")).absolute()
    agent = (o.agent or DEFAULT_AGENT).strip() or DEFAULT_AGENT

    openclaw = _load_json5(state_dir / OPENCLAW_JSON_NAME)
    toml_path = state_dir / TOML_NAME
    own = _load_toml(toml_path)

    defaults = (openclaw.get("agents") or {}).get("defaults") or {}
    entry = _agent_entry(openclaw, agent)
    defaults_search = defaults.get("memorySearch") or {}
    entry_search = entry.get("memorySearch") or {}

    workspace_raw = (
        o.workspace
        or _env("OPENCLAW_WORKSPACE", env)
        or own.get("workspace")
        or entry.get("workspace")
        or defaults.get("workspace")
        or cwd
        or os.getcwd()
    )
    workspace = resolve_workspace(str(workspace_raw))

    extras: list[str] = []
    extras += _str_list(defaults_search.get("extraPaths"), f"{state_dir / OPENCLAW_JSON_NAME}: agents.defaults.memorySearch.extraPaths")
    extras += _str_list(entry_search.get("extraPaths"), f"{state_dir / OPENCLAW_JSON_NAME}: agents.list[{agent}].memorySearch.extraPaths")
    extras += _str_list(own.get("extra_paths"), f"{toml_path}: extra_paths")
    env_extra = _env("OPENCLAW_MEMORY_EXTRA_PATHS", env)
    if env_extra:
        extras += env_extra.split(os.pathsep)
    extras += list(o.extra)

    multimodal = o.multimodal
    if multimodal is None and _env("OPENCLAW_MEMORY_MULTIMODAL", env):
        multimodal = env["OPENCLAW_MEMORY_MULTIMODAL"].lower() in ("1", "true", "yes", "on")
    if multimodal is None and isinstance(own.get("multimodal"), bool):
        multimodal = own["multimodal"]
    if multimodal is None:
        multimodal = _multimodal_flag(entry_search.get("multimodal"))
    if multimodal is None:
        multimodal = _multimodal_flag(defaults_search.get("multimodal"))

    read_table = own.get("read") or {}
    prompt_table = own.get("prompt") or {}
    read = ReadLimits(
        default_lines=_positive_int(read_table, "default_lines", 120, f"{toml_path} [read]"),
        max_chars=_positive_int(read_table, "max_chars", 12_000, f"{toml_path} [read]"),
    )
    prompt = PromptLimits(
        file_chars=_positive_int(prompt_table, "file_chars", 12_000, f"{toml_path} [prompt]"),
        total_chars=_positive_int(prompt_table, "total_chars", 60_000, f"{toml_path} [prompt]"),
    )
    sections = {k: v for k, v in own.items() if isinstance(v, dict)}
    hybrid: dict[str, Any] = {}
    for source in (defaults_search, entry_search):
        table = ((source.get("query") or {}) if isinstance(source.get("query"), dict) else {}).get("hybrid")
        if isinstance(table, dict):
            for key, value in table.items():
                hybrid[key] = {**hybrid[key], **value} if isinstance(value, dict) and isinstance(hybrid.get(key), dict) else value
    return Settings(
        workspace=workspace,
        agent=agent,
        state_dir=state_dir,
        extra_paths=tuple(normalize_extra_paths(extras, workspace)),
        multimodal=bool(multimodal),
        read=read,
        prompt=prompt,
        sections=sections,
        qdrant_url=(o.qdrant_url or _env("OPENCLAW_MEMORY_QDRANT_URL", env) or "").strip() or None,
        openclaw_hybrid=hybrid,
    )


def resolve_workspace(raw: str) -> Path:
    path = Path(_expand(raw))
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        raise WorkspaceError(f"workspace not found: {path}") from None
    except OSError as exc:
        raise WorkspaceError(f"cannot open workspace {path}: {exc.strerror}") from None
    if not real.is_dir():
        raise WorkspaceError(f"workspace is not a folder: {path} (give the folder that holds MEMORY.md)")
    if not os.access(real, os.R_OK | os.X_OK):
        raise WorkspaceError(f"workspace is not readable: {real} (permission denied)")
    return real


def normalize_extra_paths(raw: list[str], workspace: Path) -> list[str]:
    """Trim, drop empties, expand ``~``, resolve relative ones against the workspace, de-duplicate.

    Symlinks are not resolved here: the scanner must still see (and report) a symlinked extra root.
    """
    seen: set[str] = set()
    result: list[str] = []
    for item in raw:
        text = item.strip()
        if not text:
            continue
        expanded = os.path.expanduser(text)
        absolute = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(workspace, expanded))
        if absolute not in seen:
            seen.add(absolute)
            result.append(absolute)
    return result
