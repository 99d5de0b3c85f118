"""Settings, resolved once: flags > environment > config files > defaults.

Config files are OpenClaw's own ``<state-dir>/openclaw.json`` (JSON5, read-only)
and this project's ``<state-dir>/openclaw-memory.toml``. Extra memory paths from
every source add up into one de-duplicated list; scalars follow the precedence.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import ConfigError, UsageError, WorkspaceError
from .files.paths import ExtraPath

DEFAULT_AGENT = "main"
TOML_NAME = "openclaw-memory.toml"
OPENCLAW_JSON_NAME = "openclaw.json"


@dataclass(frozen=True)
class ReadLimits:
    default_lines: int = 120
    max_chars: int = 12_000  # OpenClaw's contextLimits.memoryGetMaxChars default


@dataclass(frozen=True)
class StartupContext:
    """OpenClaw's ``agents.defaults.startupContext``: the daily notes a new session starts with."""

    enabled: bool = True
    apply_on: tuple[str, ...] = ()  # empty: every new session
    daily_memory_days: int = 2
    max_file_bytes: int = 16_384
    max_file_chars: int = 1_200
    max_total_chars: int = 2_800
    user_timezone: str | None = None  # agents.defaults.userTimezone; None: the host's zone


@dataclass(frozen=True)
class PromptLimits:
    file_chars: int = 20_000  # OpenClaw's bootstrapMaxChars
    total_chars: int = 60_000  # OpenClaw's bootstrapTotalMaxChars
    startup: StartupContext = field(default_factory=StartupContext)


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
    # Whose read records the write guard checks: None is the plain CLI's own records for the agent;
    # an MCP session or ``--session ID`` has its own (see history.states).
    session: str | None = None
    # OpenClaw's memorySearch.query.hybrid (agents.defaults, then the agent's own entry on top).
    openclaw_hybrid: dict[str, Any] = field(default_factory=dict)
    # Exports of embedding models, one per machine (user), shared by every state dir: a cache,
    # rebuilt from the packaged weights when missing or damaged.
    model_cache: Path = field(default_factory=lambda: default_model_cache(os.environ))
    # OPENCLAW_MEMORY_EMBEDDING_BACKEND: above toml [index] embedding_backend, as
    # OPENCLAW_MEMORY_QDRANT_URL is above [index] url.
    embedding_backend: str | None = None

    def section(self, name: str) -> dict[str, Any]:
        return self.sections.get(name, {})

    @cached_property  # read on every search; a frozen dataclass keeps it in its __dict__
    def data_dir(self) -> Path:
        """This project's own data for this workspace, inside the state dir."""
        import xxhash

        key = xxhash.xxh3_64_hexdigest(str(self.workspace).encode())[:12]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", self.workspace.name).strip("-") or "root"
        return self.state_dir / "openclaw-memory" / "workspaces" / f"{slug}-{key}"

    def with_agent(self, agent: str) -> Settings:
        return replace(self, agent=agent)

    def with_session(self, session: str | None) -> Settings:
        return replace(self, session=check_session(session))


@dataclass(frozen=True)
class Overrides:
    """What the user gave on the command line; None means not given."""

    workspace: str | None = None
    agent: str | None = None
    state_dir: str | None = None
    extra: tuple[str, ...] = ()
    multimodal: bool | None = None
    qdrant_url: str | None = None
    session: str | None = None


_SESSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$")


def check_session(session: str | None) -> str | None:
    """A session id as given to ``--session``: 1-100 of ``A-Za-z0-9._:-``, starting with a letter or digit."""
    if session is None:
        return None
    if not _SESSION.match(session):
        raise UsageError(
            f"a session id is 1 to 100 letters, digits, '.', '_', ':' or '-' (starting with a letter or digit), not {session!r}"
        )
    return session


def _env(name: str, environ) -> str | None:
    value = environ.get(name)
    return value if value not in (None, "") else None


def default_model_cache(environ) -> Path:
    """``OPENCLAW_MEMORY_MODEL_CACHE``, else ``$XDG_CACHE_HOME/openclaw-memory/models``, else
    ``~/.cache/openclaw-memory/models``."""
    own = _env("OPENCLAW_MEMORY_MODEL_CACHE", environ)
    if own:
        return Path(_expand(own)).absolute()
    xdg = _env("XDG_CACHE_HOME", environ)
    base = Path(_expand(xdg)) if xdg and os.path.isabs(_expand(xdg)) else Path("~/.cache").expanduser()
    return base / "openclaw-memory" / "models"


def _expand(path: str) -> str:
    return os.path.expanduser(path.strip())


def _read_config(path: Path) -> bytes | None:
    """The bytes of a config file; None when there is none.

    Opened non-blocking and checked to be a regular file first: a FIFO (or a device)
    named like the config must not hang every command. A symlink to a regular file
    is fine here (dotfile managers make those); this is not a memory path.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(f"cannot read {path}: not a regular file (a FIFO, socket, device or folder)")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _load_json5(path: Path) -> dict[str, Any]:
    raw = _read_config(path)
    if raw is None:
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: not UTF-8 ({exc})") from None
    import json5

    try:
        data = json5.loads(text)
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON5: nested too deeply") from None
    except ValueError as exc:
        # json5 words its errors as "<string>:LINE message"; name the real file instead.
        detail = re.sub(r"^<string>:(\d+)\s*", r"line \1: ", str(exc))
        raise ConfigError(f"{path}: not valid JSON5: {detail}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: line 1: the top level must be an object")
    return data


def _load_toml(path: Path) -> dict[str, Any]:
    raw = _read_config(path)
    if raw is None:
        return {}
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    _check_toml_types(data, path)
    return data


# The tables of openclaw-memory.toml; each module that reads one validates its keys.
TOML_TABLES = ("read", "prompt", "index", "history", "watchdog")


def _check_toml_types(data: dict[str, Any], path: Path) -> None:
    """Top-level keys of the wrong type are errors naming the file, the key and the type expected."""
    expected = {"workspace": (str, "a string (a folder path)"), "multimodal": (bool, "true or false")}
    for key, (kind, words) in expected.items():
        if key in data and not isinstance(data[key], kind):
            raise ConfigError(f"{path}: `{key}` must be {words}, not {data[key]!r}")
    if "extra_paths" in data:
        value = data["extra_paths"]
        if not (isinstance(value, list) and all(isinstance(v, (str, dict)) for v in value)):
            raise ConfigError(
                f"{path}: `extra_paths` must be a list of strings (folder or file paths) or {{path, pattern}} tables, not {value!r}"
            )
    for key in TOML_TABLES:
        if key in data and not isinstance(data[key], dict):
            raise ConfigError(f"{path}: `{key}` must be a table ([{key}] with keys under it), not {data[key]!r}")


def _object(value: Any, where: str) -> dict[str, Any]:
    """A JSON object from OpenClaw's config, absent being empty; anything else is an error naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object, not {type(value).__name__} {value!r:.60}")
    return value


def _agent_entry(openclaw: dict[str, Any], agent: str, where: str) -> dict[str, Any]:
    agents = _object(openclaw.get("agents"), f"{where}: agents")
    entries = agents.get("list")
    if entries is None:
        return {}
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: agents.list must be an array of agents, not {entries!r:.60}")
    for entry in entries:
        if isinstance(entry, dict) and entry.get("id") == agent:
            return entry
    return {}


def _extra_list(value: Any, where: str) -> list:
    """Extra paths as OpenClaw accepts them: strings, or ``{path, pattern}`` objects (a glob filter)."""
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list):
        raise ConfigError(f"{where} must be a list of paths or {{path, pattern}} objects")
    out: list = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("pattern", ""), str):
            out.append((item["path"], item.get("pattern") or ""))
        else:
            raise ConfigError(f"{where} must be a list of paths or {{path, pattern}} objects, not {item!r}")
    return out


def _js_int(value: Any, default: int, low: int | None = 1, high: int | None = None) -> int:
    """OpenClaw's ``resolveIntegerOption``: a finite number floored and clamped, anything else the default."""
    import math

    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else default
    number = math.floor(number)
    if low is not None:
        number = max(low, number)
    return number if high is None else min(high, number)


def _js_positive(value: Any, default: int) -> int:
    """OpenClaw's bootstrap limit rule: a finite number above 0, floored; else the default."""
    import math

    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return math.floor(value)
    return default


def _startup_context(defaults: dict[str, Any]) -> StartupContext:
    raw = defaults.get("startupContext")
    raw = raw if isinstance(raw, dict) else {}
    apply_on = raw.get("applyOn")
    tz = defaults.get("userTimezone")
    return StartupContext(
        enabled=raw.get("enabled") is not False,
        apply_on=tuple(a for a in apply_on if isinstance(a, str)) if isinstance(apply_on, list) else (),
        daily_memory_days=_js_int(raw.get("dailyMemoryDays"), 2, 1, 14),
        max_file_bytes=_js_int(raw.get("maxFileBytes"), 16_384, 1, 65_536),
        max_file_chars=_js_int(raw.get("maxFileChars"), 1_200, 1, 10_000),
        max_total_chars=_js_int(raw.get("maxTotalChars"), 2_800, 1, 50_000),
        user_timezone=tz.strip() or None if isinstance(tz, str) else None,
    )


def _multimodal_flag(value: Any, where: str) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, dict) and isinstance(value.get("enabled", False), bool):
        return value.get("enabled", False)
    raise ConfigError(f"{where} must be true, false or {{enabled: true|false}}, not {value!r:.60}")


def _text(value: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ConfigError(f"{where} must be a string (a folder path), not {value!r:.60}")


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

    json_path = state_dir / OPENCLAW_JSON_NAME
    openclaw = _load_json5(json_path)
    toml_path = state_dir / TOML_NAME
    own = _load_toml(toml_path)

    defaults = _object(_object(openclaw.get("agents"), f"{json_path}: agents").get("defaults"), f"{json_path}: agents.defaults")
    entry = _agent_entry(openclaw, agent, str(json_path))
    defaults_search = _object(defaults.get("memorySearch"), f"{json_path}: agents.defaults.memorySearch")
    entry_search = _object(entry.get("memorySearch"), f"{json_path}: agents.list[{agent}].memorySearch")
    # OpenClaw 2026.9.6 keeps search settings in `memory.search` (top level and per agent).
    top_search = _object(_object(openclaw.get("memory"), f"{json_path}: memory").get("search"), f"{json_path}: memory.search")
    entry_memory_search = _object(_object(entry.get("memory"), f"{json_path}: agents.list[{agent}].memory").get("search"),
                                  f"{json_path}: agents.list[{agent}].memory.search")

    workspace_raw = (
        o.workspace
        or _env("OPENCLAW_WORKSPACE", env)
        or own.get("workspace")
        or _text(entry.get("workspace"), f"{json_path}: agents.list[{agent}].workspace")
        or _text(defaults.get("workspace"), f"{json_path}: agents.defaults.workspace")
        or cwd
        or os.getcwd()
    )
    workspace = resolve_workspace(str(workspace_raw))

    extras: list = []
    extras += _extra_list(top_search.get("extraPaths"), f"{json_path}: memory.search.extraPaths")
    extras += _extra_list(entry_memory_search.get("extraPaths"), f"{json_path}: agents.list[{agent}].memory.search.extraPaths")
    extras += _extra_list(defaults_search.get("extraPaths"), f"{json_path}: agents.defaults.memorySearch.extraPaths")
    extras += _extra_list(entry_search.get("extraPaths"), f"{json_path}: agents.list[{agent}].memorySearch.extraPaths")
    extras += _extra_list(own.get("extra_paths"), f"{toml_path}: extra_paths")
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
        multimodal = _multimodal_flag(entry_search.get("multimodal"), f"{json_path}: agents.list[{agent}].memorySearch.multimodal")
    if multimodal is None:
        multimodal = _multimodal_flag(defaults_search.get("multimodal"), f"{json_path}: agents.defaults.memorySearch.multimodal")

    read_table = own.get("read") or {}
    prompt_table = own.get("prompt") or {}
    # An agent's own contextLimits object replaces the defaults' whole (OpenClaw's rule).
    limits = entry.get("contextLimits") if isinstance(entry.get("contextLimits"), dict) else defaults.get("contextLimits")
    limits = limits if isinstance(limits, dict) else {}
    read = ReadLimits(
        default_lines=_positive_int(read_table, "default_lines", 120, f"{toml_path} [read]"),
        max_chars=_positive_int(read_table, "max_chars", _js_int(limits.get("memoryGetMaxChars"), 12_000), f"{toml_path} [read]"),
    )

    def bootstrap(key: str, default: int) -> int:
        value = entry.get(key) if entry.get(key) is not None else defaults.get(key)
        return _js_positive(value, default)

    prompt = PromptLimits(
        file_chars=_positive_int(prompt_table, "file_chars", bootstrap("bootstrapMaxChars", 20_000), f"{toml_path} [prompt]"),
        total_chars=_positive_int(prompt_table, "total_chars", bootstrap("bootstrapTotalMaxChars", 60_000), f"{toml_path} [prompt]"),
        startup=_startup_context(defaults),
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
        session=check_session(o.session or None),
        openclaw_hybrid=hybrid,
        model_cache=default_model_cache(env),
        embedding_backend=(_env("OPENCLAW_MEMORY_EMBEDDING_BACKEND", env) or "").strip() or None,
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


def normalize_extra_paths(raw: list, workspace: Path) -> list[ExtraPath]:
    """Trim, drop empties, expand ``~``, resolve relative ones against the workspace, de-duplicate.

    An item is a path or a ``(path, pattern)`` pair; the same folder with two patterns is
    two entries (OpenClaw lists each in turn). Symlinks are not resolved here: the
    scanner must still see (and report) a symlinked extra root.
    """
    from .files.jstext import js_trim

    seen: set[tuple[str, str]] = set()
    result: list[ExtraPath] = []
    for item in raw:
        path, pattern = (item, "") if isinstance(item, str) else item
        text = js_trim(path)
        pattern = js_trim(pattern).replace("\\", "/")
        if not text:
            continue
        expanded = os.path.expanduser(text)
        absolute = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(workspace, expanded))
        if (absolute, pattern) not in seen:
            seen.add((absolute, pattern))
            result.append(ExtraPath(absolute, pattern or None))
    return result
