"""Settings, resolved once: flags > environment > config files > defaults.

Config files are OpenClaw's own ``<state-dir>/openclaw.json`` (JSON5, read-only)
and this project's ``<state-dir>/openclaw-memory.toml``. Extra memory paths from
every source add up into one de-duplicated list; scalars follow the precedence.

Every table of the toml is a frozen dataclass held by :class:`Settings` (``settings.index``,
``settings.service``, ...), built and checked here, once: an unknown table or key, or a value of the
wrong type, is a ConfigError naming the file, the table and the key. Nothing downstream reads raw
toml or checks it again.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import ConfigError, StateDirError, UsageError, WorkspaceError, shown
from .files.jstext import js_trim
from .files.paths import MODALITIES, PATH_MAX, ExtraPath
from .fsutil.atomic import NAME_MAX
from .openclaw_dotenv import set_in, where_set, with_dotenv

DEFAULT_AGENT = "main"
TOML_NAME = "openclaw-memory.toml"
OPENCLAW_JSON_NAME = "openclaw.json"
# The names OpenClaw 2026.9.6 still reads from before its rename (its LEGACY_STATE_DIRNAMES and
# LEGACY_CONFIG_FILENAMES): a state dir ~/.clawdbot where there is no ~/.openclaw, a clawdbot.json.
LEGACY_STATE_DIR_NAME = ".clawdbot"
LEGACY_JSON_NAME = "clawdbot.json"
DEFAULT_MAX_RESULTS = 6  # a search's results when neither the caller nor openclaw.json says (OpenClaw's)


# -- openclaw-memory.toml: one frozen dataclass per table -----------------------------------------
#
# A field the toml may set carries its check in its metadata (``_toml(default, check)``); a table
# inside a table is a ``_subtable``. ``_table_values`` reads every table at once when settings are
# resolved: an unknown table or key, or a value of the wrong type, is a ConfigError in one format,
# ``<file>: [table] key must be <what>, not <value>``.

_BAD: Any = object()  # what a check answers for a value it refuses


class _Check:
    """How one key is checked (a plain class: a dataclass costs start-up time on every command)."""

    __slots__ = ("words", "convert")

    def __init__(self, words: str, convert: Callable[[Any], Any]):
        self.words = words  # what the value must be, for the message
        self.convert = convert  # the value as Settings keeps it, or _BAD


def _toml(default: Any, check: _Check) -> Any:
    return field(default=default, metadata={"toml": check})


def _subtable(cls: type) -> Any:
    return field(default_factory=cls, metadata={"table": cls})


def _real(value: Any) -> bool:
    """A finite number (TOML has inf and nan)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# Past it a count or budget is no limit at all: kept as this, which SQLite and the engine can hold.
MAX_WHOLE = 2**53


def _whole(minimum: int) -> _Check:
    return _Check(f"a whole number of at least {minimum}",
                  lambda v: min(v, MAX_WHOLE) if isinstance(v, int) and not isinstance(v, bool) and v >= minimum else _BAD)


def _seconds(minimum: float | None = None) -> _Check:
    """A number of seconds: above 0 (``minimum`` None) or at least ``minimum``."""
    if minimum is None:
        return _Check("a positive number of seconds", lambda v: float(v) if _real(v) and v > 0 else _BAD)
    return _Check(f"a number of seconds of at least {minimum:g}",
                  lambda v: float(v) if _real(v) and v >= minimum else _BAD)


def _nonempty(words: str = "a non-empty string") -> _Check:
    return _Check(words, lambda v: v.strip() if isinstance(v, str) and v.strip() else _BAD)


def _choice(*options: str) -> _Check:
    words = ", ".join(options[:-1]) + " or " + options[-1]
    return _Check(words, lambda v: v.strip() if isinstance(v, str) and v.strip() in options else _BAD)


_FLAG = _Check("true or false", lambda v: v if isinstance(v, bool) else _BAD)
# OpenClaw's id (its VALID_ID_RE, /i, which in JavaScript folds no letter outside ASCII onto one in it):
# agent ids and profile names; a namespace is one too. `re` compiles it when first used.
_OPENCLAW_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
# An empty namespace is the default one (one per workspace).
_NAMESPACE_CHECK = _Check("1-64 letters, digits, '-' or '_'", lambda v: (v or None) if isinstance(v, str) and (
    not v or re.fullmatch(_OPENCLAW_ID, v)) else _BAD)


@dataclass(frozen=True)
class ReadLimits:
    """``[read]``: ``read`` / ``memory_get``."""

    default_lines: int = _toml(120, _whole(1))
    max_chars: int = _toml(12_000, _whole(1))  # OpenClaw's contextLimits.memoryGetMaxChars default


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
    """``[prompt]``: USER.md and MEMORY.md at startup (``startup`` is openclaw.json's, not the toml's)."""

    file_chars: int = _toml(20_000, _whole(1))  # OpenClaw's bootstrapMaxChars
    total_chars: int = _toml(60_000, _whole(1))  # OpenClaw's bootstrapTotalMaxChars
    startup: StartupContext = field(default_factory=StartupContext)


DEFAULT_MODEL = "all-MiniLM-L6-v2"
EMBEDDING_BACKENDS = ("auto", "torch", "onnx", "hash")


@dataclass(frozen=True)
class IndexServerSettings:
    """``[index.server]``: how the index uses a Qdrant server (docs/scaling.md). The API key itself is
    never read from the toml: ``api_key_file`` names a file holding it (read when the server is used)."""

    api_key_file: str | None = _toml(None, _Check("a path (the file holding the API key)", lambda v: v.strip() if (
        isinstance(v, str) and v.strip() and _unpathable(v) is None) else _BAD))
    tenancy: str = _toml("collection", _choice("collection", "shared"))
    namespace: str | None = _toml(None, _NAMESPACE_CHECK)  # None: one per workspace
    shard_number: int | None = _toml(None, _whole(1))
    replication_factor: int | None = _toml(None, _whole(1))
    write_consistency_factor: int | None = _toml(None, _whole(1))
    hnsw_m: int | None = _toml(None, _whole(0))
    hnsw_ef_construct: int | None = _toml(None, _whole(4))
    timeout: float = _toml(10.0, _seconds(0.1))
    retries: int = _toml(4, _whole(0))
    retry_backoff: float = _toml(0.5, _seconds(0.0))


@dataclass(frozen=True)
class IndexSettings:
    """``[index]``: the search index (docs/search.md). ``OPENCLAW_MEMORY_EMBEDDING_BACKEND`` (in
    ``Settings.embedding_backend``) is above ``embedding_backend``, ``--qdrant-url`` and
    ``OPENCLAW_MEMORY_QDRANT_URL`` (``Settings.qdrant_url``) above ``url``."""

    model: str = _toml(DEFAULT_MODEL, _nonempty())
    chunk_tokens: int | None = _toml(None, _whole(16))  # None: the model's window
    overlap_tokens: int | None = _toml(None, _whole(0))  # None: about 15% of the budget
    embedding_backend: str = _toml("auto", _choice(*EMBEDDING_BACKENDS))
    backend: str = _toml("edge", _choice("edge", "qdrant"))
    url: str | None = _toml(None, _nonempty("a Qdrant URL (http(s)://HOST:PORT, or file:///folder)"))
    lock_timeout: float = _toml(5.0, _seconds(0.0))
    embed_batch: int = _toml(256, _whole(1))
    server: IndexServerSettings = _subtable(IndexServerSettings)
    configured: bool = False  # the toml has an [index] table with something in it (doctor's hint)


@dataclass(frozen=True)
class SearchSettings:
    """``[search]``: re-ranking, above openclaw.json's ``memorySearch.query.hybrid``; None: not set here."""

    mmr: bool | None = _toml(None, _FLAG)
    mmr_lambda: float | None = _toml(None, _Check("a number from 0 to 1", lambda v: float(v) if _real(v) and 0 <= v <= 1 else _BAD))
    temporal_decay: bool | None = _toml(None, _FLAG)
    half_life_days: float | None = _toml(None, _Check("a positive number of days", lambda v: float(v) if _real(v) and v > 0 else _BAD))


@dataclass(frozen=True)
class HistorySettings:
    """``[history]``: the version history's limits (docs/watch.md)."""

    keep_per_path: int = _toml(50, _whole(1))
    max_bytes: int = _toml(256 * 1024 * 1024, _whole(1))


@dataclass(frozen=True)
class WatchdogSettings:
    """``[watchdog]``: snapshots kept, and the bytes of memory-file content they keep (docs/watchdog.md)."""

    keep: int = _toml(20, _whole(1))
    max_bytes: int = _toml(256 * 1024 * 1024, _whole(1))  # compressed; the oldest snapshots go first


@dataclass(frozen=True)
class ServiceSettings:
    """``[service]``: the memory service (docs/serve.md)."""

    timeout: float = _toml(5.0, _seconds())  # silence before a service counts as hung
    shard_idle: float = _toml(10.0, _seconds())  # before the service closes an unused shard
    http_body_timeout: float = _toml(60.0, _seconds())  # for an MCP-over-HTTP request's body to arrive whole


# The tables of openclaw-memory.toml, each by the Settings field that holds it.
TOML_TABLES: dict[str, type] = {
    "read": ReadLimits,
    "prompt": PromptLimits,
    "index": IndexSettings,
    "search": SearchSettings,
    "history": HistorySettings,
    "watchdog": WatchdogSettings,
    "service": ServiceSettings,
}
TOML_KEYS = ("workspace", "extra_paths", "multimodal")  # the keys above the tables


@dataclass(frozen=True)
class Settings:
    """Everything a command needs to know about where memory lives."""

    workspace: Path
    agent: str = DEFAULT_AGENT
    state_dir: Path = field(default_factory=lambda: default_state_dir(os.environ))
    # The openclaw.json read (openclaw_config_path); None: <state dir>/openclaw.json (settings made in code).
    openclaw_json: Path | None = None
    extra_paths: tuple[ExtraPath, ...] = ()
    multimodal: bool = False
    # Which media files of the extra paths are memory when multimodal is on: openclaw.json's
    # memory.search.multimodal.modalities (OpenClaw's normalizeMemoryMultimodalModalities), else both.
    modalities: tuple[str, ...] = MODALITIES
    # memory.search.query.maxResults: how many results a search gives when none is asked for.
    max_results: int = DEFAULT_MAX_RESULTS
    # The tables of openclaw-memory.toml, resolved and validated (TOML_TABLES).
    read: ReadLimits = field(default_factory=ReadLimits)
    prompt: PromptLimits = field(default_factory=PromptLimits)
    index: IndexSettings = field(default_factory=IndexSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    history: HistorySettings = field(default_factory=HistorySettings)
    watchdog: WatchdogSettings = field(default_factory=WatchdogSettings)
    service: ServiceSettings = field(default_factory=ServiceSettings)
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
    # The settings flags the command line gave (``-w``, ``--agent``, ...), each with its value in force:
    # what a command a message suggests repeats (command_line).
    command_flags: tuple[str, ...] = ()

    @property
    def media(self) -> tuple[str, ...]:
        """The media kinds that are memory files (``image``, ``audio``): none unless multimodal is on."""
        return self.modalities if self.multimodal else ()

    @property
    def config_file(self) -> Path:
        """OpenClaw's openclaw.json these settings read (whether or not there is one)."""
        return self.openclaw_json or self.state_dir / OPENCLAW_JSON_NAME

    def tables(self) -> dict[str, Any]:
        """The tables of openclaw-memory.toml as resolved (defaults filled in), by name."""
        return {name: getattr(self, name) for name in TOML_TABLES}

    @cached_property  # read on every search; a frozen dataclass keeps it in its __dict__
    def data_dir(self) -> Path:
        """This project's own data for this workspace, inside the state dir."""
        import xxhash

        key = xxhash.xxh3_64_hexdigest(os.fsencode(self.workspace))[:12]
        slug = re.sub(r"[^A-Za-z0-9]+", "-", self.workspace.name).strip("-") or "root"
        # Cut to fit a file name (255 bytes) with its key: a workspace folder named with 243 or more
        # of these characters made every command fail ("File name too long"); shorter names are kept.
        return self.state_dir / "openclaw-memory" / "workspaces" / f"{slug[:NAME_MAX - 1 - len(key)]}-{key}"

    def notes_folder_hint(self) -> str | None:
        """What to say when the workspace looks like its own ``memory/`` folder (``-w ws/memory``)."""
        from .files.root import notes_folder_hint

        return notes_folder_hint(str(self.workspace))

    def with_agent(self, agent: str) -> Settings:
        return replace(self, agent=agent_id(agent))

    def with_session(self, session: str | None) -> Settings:
        return replace(self, session=check_session(session))

    def as_recorded(self, agent: str, session: str) -> Settings:
        """These settings as the agent and session an interrupted operation's record names (it is
        finished as they began it); as they are where the record names no agent."""
        return self.with_agent(agent).with_session(session or None) if agent else self


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


def check_agent(agent: str) -> str:
    """An agent id as a record names it (an archive's manifest): up to 100 printable characters, no
    '/' or '\\' (printed by ``log`` and ``history`` as it is)."""
    if not (0 < len(agent) <= 100 and agent.isprintable() and not {"/", "\\"} & set(agent) and agent not in (".", "..")):
        raise UsageError(f"an agent id is 1 to 100 printable characters without '/' or '\\', not {shown(agent)}")
    return agent


def agent_id(given: str) -> str:
    """The agent an id given to this product names (``--agent``, a service or MCP caller's, a log
    filter), as OpenClaw 2026.9.6 takes an explicit one (its ``normalizeAgentIdStrict``): ``Main``
    is ``main`` and ``ops!`` is ``ops``, one agent however typed. An id with nothing left is refused,
    as OpenClaw refuses it, rather than taken as ``main`` (its lenient form, for config keys)."""
    normalized = _strict_agent_id(given)
    if normalized is None:
        raise UsageError("an agent id needs a letter, a digit, '_' or '-' (OpenClaw makes each run of other "
                         f"characters one '-' and refuses an id with none left), not {shown(given)}")
    return normalized


def check_session(session: str | None) -> str | None:
    """A session id as given to ``--session``: 1-100 of ``A-Za-z0-9._:-``, starting with a letter or digit."""
    if session is None:
        return None
    if not _SESSION.match(session):
        raise UsageError(
            f"a session id is 1 to 100 letters, digits, '.', '_', ':' or '-' (starting with a letter or digit), "
            f"not {shown(session)}"
        )
    return session


def _env(name: str, environ) -> str | None:
    value = environ.get(name)
    return value if value not in (None, "") else None


def _openclaw_env(name: str, environ) -> str | None:
    """A path or name variable as OpenClaw reads its own (``env.X?.trim()``): only white space is unset,
    never the current folder (``OPENCLAW_WORKSPACE_DIR=" "`` named it)."""
    value = (environ.get(name) or "").strip()
    return value or None


def default_model_cache(environ, state_dir: Path | None = None) -> Path:
    """``OPENCLAW_MEMORY_MODEL_CACHE``, else ``$XDG_CACHE_HOME/openclaw-memory/models``, else
    ``~/.cache/openclaw-memory/models``; with no home folder at all, ``<state dir>/openclaw-memory/models``."""
    own = _env("OPENCLAW_MEMORY_MODEL_CACHE", environ)
    if own:
        return Path(_expand(own)).absolute()
    xdg = _env("XDG_CACHE_HOME", environ)
    if xdg and os.path.isabs(_expand(xdg)):
        return Path(_expand(xdg)) / "openclaw-memory" / "models"
    try:
        return Path(_system_home()) / ".cache" / "openclaw-memory" / "models"
    except StateDirError:
        if state_dir is None:
            raise
        return state_dir / "openclaw-memory" / "models"


def _expand(path: str, env: Mapping[str, str] | None = None) -> str:
    """``path`` trimmed, a leading ``~`` expanded (:func:`_tilde`)."""
    return _tilde(path.strip(), env)


def _tilde(path: str, env: Mapping[str, str] | None = None) -> str:
    """``path`` with a leading ``~`` (alone, or before ``/``) expanded: with ``env``, to OpenClaw's
    home (:func:`openclaw_home`), else the system's. ``~user`` is a name like any other (a folder
    of that name, relative), as OpenClaw 2026.9.6 reads every path (``expandHomePrefix``), not
    that user's home."""
    if path == "~" or path.startswith("~/"):
        return (_system_home() if env is None else openclaw_home(env)) + path[1:]
    return path


def _system_home() -> str:
    """This user's home folder; refused (StateDirError) when there is none to tell: ``~`` would be a
    folder named ``~`` in the current folder."""
    home = os.path.expanduser("~")
    if home == "~":  # no HOME, and the password database has no entry for this user (a container's --user)
        raise StateDirError(f"cannot tell the home folder (HOME is not set, and user id {os.getuid()} has no entry in the "
                            "password database), where OpenClaw's state dir ~/.openclaw is: give --state-dir or "
                            "OPENCLAW_STATE_DIR, or set HOME")
    return home


def openclaw_home(env: Mapping[str, str]) -> str:
    """The home OpenClaw resolves every path of its own against (``~/.openclaw``, ``~`` in
    openclaw.json): ``$OPENCLAW_HOME`` (a service account's, say; a ``~`` in it is the system's home),
    else the system's."""
    own = (env.get("OPENCLAW_HOME") or "").strip()
    if not own or own in ("undefined", "null"):  # OpenClaw's normalizeHomeDirValue
        return _system_home()
    return os.path.normpath(os.path.abspath(_tilde(own)))


def default_state_dir(env: Mapping[str, str]) -> Path:
    """OpenClaw's state dir when none is given (its resolveStateDirFromHome): ``~/.openclaw``, in
    OpenClaw's home (:func:`openclaw_home`); where there is none but there is a ``~/.clawdbot``, that one."""
    home = Path(openclaw_home(env))
    current, legacy = home / ".openclaw", home / LEGACY_STATE_DIR_NAME
    return legacy if not current.exists() and legacy.exists() else current


def openclaw_config_path(state_dir: Path, state_dir_given: bool, env: Mapping[str, str]) -> Path:
    """The openclaw.json OpenClaw 2026.9.6 reads (its resolveConfigPath): ``OPENCLAW_CONFIG_PATH``; else in
    the state dir, ``openclaw.json`` or else an existing ``clawdbot.json``; with no state dir given, the first
    of those in ``~/.openclaw`` and then ``~/.clawdbot`` that exists; else ``<state dir>/openclaw.json``."""
    named = _openclaw_env("OPENCLAW_CONFIG_PATH", env)
    if named:
        return Path(os.path.abspath(_expand(named, env)))
    if state_dir_given:
        folders: tuple[Path, ...] = (state_dir,)
    else:
        home = Path(openclaw_home(env))
        folders = (home / ".openclaw", home / LEGACY_STATE_DIR_NAME)
    for folder in folders:
        for name in (OPENCLAW_JSON_NAME, LEGACY_JSON_NAME):
            if (folder / name).exists():
                return folder / name
    return state_dir / OPENCLAW_JSON_NAME


# Real config files are a few KB; every command reads both, whole, before anything else.
MAX_CONFIG_BYTES = 16 << 20


def _read_config(path: Path) -> bytes | None:
    """The bytes of a config file; None when there is none.

    Opened non-blocking and checked to be a regular file first: a FIFO (or a device)
    named like the config must not hang every command. A symlink to a regular file
    is fine here (dotfile managers make those); this is not a memory path. A file over
    ``MAX_CONFIG_BYTES`` is refused having read no more than that.
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
            data = fh.read(MAX_CONFIG_BYTES + 1)  # never more, whatever the file's size says
        if len(data) > MAX_CONFIG_BYTES:
            size = max(os.fstat(fd).st_size, len(data))
            shown = f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.1f} MiB"
            raise ConfigError(f"cannot read {path}: it is {shown}; the limit is {MAX_CONFIG_BYTES >> 20} MiB "
                              "(a config file is a few KB: is it the right file?)")
        return data
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _load_json5(path: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """OpenClaw's openclaw.json at ``path`` ({} when there is none), its ``$include`` files in place and
    its ``${NAME}`` references replaced from ``env`` (default: this process's), as OpenClaw reads it."""
    from .openclaw_json import expand

    data = _json5_file(path)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: line 1: the top level must be an object")
    try:
        env = os.environ if env is None else env
        return expand(data, path, env, _included, lambda root: _tilde(root, env))
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON5: nested too deeply") from None


def _included(path: Path) -> Any:
    """A file an ``$include`` names, read and parsed as openclaw.json is; it must be there."""
    data = _json5_file(path)
    if data is None:
        raise ConfigError(f"cannot read {path} (an $include of openclaw.json): no such file")
    return data


def _json5_file(path: Path) -> Any:
    """The JSON5 value of the file at ``path``; None when there is no such file."""
    raw = _read_config(path)
    if raw is None:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"cannot read {path}: not UTF-8 ({exc})") from None
    try:  # most files are plain JSON, which the C parser reads a thousand times faster than json5
        return json.loads(text)
    except (ValueError, RecursionError):
        return _parse_json5(text, path)


def _parse_json5(text: str, path: Path) -> Any:
    import json5

    try:
        return json5.loads(text)
    except RecursionError:
        raise ConfigError(f"{path}: not valid JSON5: nested too deeply") from None
    except ValueError as exc:
        if _blank_json5(text):  # json5 says "Empty strings are not legal JSON5" or "Unexpected end of input"
            raise ConfigError(f"{path}: the file is empty, which is not valid JSON5 (OpenClaw refuses it too): "
                              "an empty configuration is {}") from None
        # json5 words its errors as "<string>:LINE message"; name the real file instead.
        detail = re.sub(r"^<string>:(\d+)\s*", r"line \1: ", str(exc))
        raise ConfigError(f"{path}: not valid JSON5: {detail}") from None


def _blank_json5(text: str) -> bool:
    """Whether ``text`` holds no JSON5 value at all, only white space, a BOM and comments: then an
    object after it is the whole document (a text with a token of its own in it cannot take one)."""
    import json5

    try:
        return json5.loads(text + "\n{}") == {}
    except (ValueError, RecursionError):
        return False


def _load_toml(path: Path) -> dict[str, Any]:
    raw = _read_config(path)
    if raw is None:
        return {}
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8").removeprefix("\ufeff"))  # the BOM a Windows editor writes
    except RecursionError:
        raise ConfigError(f"{path}: not valid TOML: nested too deeply") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return data


def _unknown(key: str, value: Any, known: list[str], tables: set[str], inside: str | None) -> str:
    """``unknown key 'x'`` / ``unknown table [x]``, with the closest valid name (or the valid names)."""
    import difflib

    def name(k: str) -> str:
        full = f"{inside}.{k}" if inside else k
        return f"[{full}]" if k in tables else f"'{k}'"

    full = f"{inside}.{key}" if inside else key
    what = f"unknown table [{full}]" if isinstance(value, dict) else f"{f'[{inside}] ' if inside else ''}unknown key '{key}'"
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f"{what} (did you mean {name(close[0])}?)"
    return f"{what} (known: {', '.join(name(k) for k in known)})"


# Keys refused with a reason of their own rather than as unknown.
_REFUSED = {
    ("index.server", "api_key"): (
        "is not read from the toml, so the key never sits in a shared file; "
        "set OPENCLAW_MEMORY_QDRANT_API_KEY or name a file holding it with api_key_file"
    ),
}


def _table_values(cls: type, raw: dict[str, Any], name: str, path: Path) -> dict[str, Any]:
    """The keys of ``[name]`` as ``cls`` keeps them; an unknown key or a wrong value is a ConfigError."""
    known = {f.name: f for f in fields(cls) if "toml" in f.metadata or "table" in f.metadata}
    tables = {k for k, f in known.items() if "table" in f.metadata}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        f = known.get(key)
        if f is None:
            if (name, key) in _REFUSED:
                raise ConfigError(f"{path}: [{name}] {key} {_REFUSED[name, key]}")
            raise ConfigError(f"{path}: {_unknown(key, value, list(known), tables, name)}")
        if "table" in f.metadata:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: [{name}] {key} must be a table ([{name}.{key}] with keys under it), not {shown(value)}")
            sub = f.metadata["table"]
            values[key] = sub(**_table_values(sub, value, f"{name}.{key}", path))
            continue
        check: _Check = f.metadata["toml"]
        kept = check.convert(value)
        if kept is _BAD:
            raise ConfigError(f"{path}: [{name}] {key} must be {check.words}, not {shown(value)}")
        values[key] = kept
    return values


def _toml_tables(data: dict[str, Any], path: Path) -> dict[str, dict[str, Any]]:
    """Check every key of openclaw-memory.toml; the values of each table as its dataclass keeps them
    (only the keys the file sets: defaults that come from openclaw.json are filled in by the caller)."""
    words = {
        "workspace": "a string (a folder path)",
        "multimodal": "true or false",
        "extra_paths": "a list of strings (folder or file paths) or {path, pattern} tables",
    }
    for key, value in data.items():
        if key in TOML_TABLES:
            if not isinstance(value, dict):
                raise ConfigError(f"{path}: {key} must be a table ([{key}] with keys under it), not {shown(value)}")
        elif key in words:
            good = (
                isinstance(value, str) if key == "workspace"
                else isinstance(value, bool) if key == "multimodal"
                else isinstance(value, list) and all(isinstance(v, (str, dict)) for v in value)
            )
            if not good:
                raise ConfigError(f"{path}: {key} must be {words[key]}, not {shown(value)}")
        else:
            raise ConfigError(f"{path}: {_unknown(key, value, [*TOML_KEYS, *TOML_TABLES], set(TOML_TABLES), None)}")
    for item in data.get("extra_paths") or ():
        unknown = sorted(set(item) - {"path", "pattern"}) if isinstance(item, dict) else []
        if unknown:
            raise ConfigError(f"{path}: extra_paths: unknown key '{unknown[0]}' in {shown(item)} (an entry is {{path, pattern}})")
    tables = {name: _table_values(cls, data.get(name, {}), name, path) for name, cls in TOML_TABLES.items()}
    budget, overlap = tables["index"].get("chunk_tokens"), tables["index"].get("overlap_tokens")
    if budget is not None and overlap is not None and overlap > budget // 2:
        raise ConfigError(f"{path}: [index] overlap_tokens must be at most half of chunk_tokens ({budget // 2}), not {overlap}")
    return tables


def _object(value: Any, where: str) -> dict[str, Any]:
    """A JSON object from OpenClaw's config, absent being empty; anything else is an error naming it."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be an object, not {type(value).__name__} {value!r:.60}")
    return value


def openclaw_agent_id(agent: str) -> str:
    """The agent id as OpenClaw 2026.9.6 normalizes it (its ``normalizeAgentId``) wherever it matches
    an id of openclaw.json or names a folder after one: ``main`` when nothing is left."""
    return _strict_agent_id(agent) or DEFAULT_AGENT


def _strict_agent_id(agent: str) -> str | None:
    """OpenClaw's ``normalizeAgentIdStrict``: trimmed as JavaScript trims; an id of its form as it is
    (ASCII only: ``/i`` in JavaScript folds no other letter onto one of it), lowercased; else lowercased,
    each run of characters other than ``a-z0-9_-`` one ``-``, no ``-`` at either end, cut to 64
    characters (a trailing ``-`` the cut leaves is kept, as there); None when nothing is left."""
    trimmed = js_trim(agent)
    lowered = trimmed.lower()
    if re.fullmatch(_OPENCLAW_ID, trimmed):
        return lowered
    return re.sub(r"[^a-z0-9_-]+", "-", lowered).strip("-")[:64] or None


def _roster(openclaw: dict[str, Any], where: str) -> tuple[bool, list[tuple[str, str, dict[str, Any]]]]:
    """OpenClaw's agents, as (normalized id, where the entry is, entry), in order, and whether a roster
    is configured at all. OpenClaw 2026.9.6 keeps them in ``agents.entries``, an object keyed by id
    (its ``doctor --fix`` moves the older ``agents.list`` array there), and reads ``agents.list``
    only where there is no ``agents.entries``, as that fix moves it (``projectLegacyAgentRosterEntries``):
    an entry without an id is agent ``agent``'s, a second entry of one id is ``<id>-2``'s, and so on."""
    agents = _object(openclaw.get("agents"), f"{where}: agents")
    keyed, listed = agents.get("entries"), agents.get("list")
    if keyed is not None:
        if not isinstance(keyed, dict):
            raise ConfigError(f"{where}: agents.entries must be an object keyed by agent id, not {keyed!r:.60}")
        return True, [(openclaw_agent_id(key), f"agents.entries.{key}", entry) for key, entry in keyed.items()
                      if isinstance(entry, dict)]
    if listed is None:
        return False, []
    if not isinstance(listed, list):
        raise ConfigError(f"{where}: agents.list must be an array of agents, not {listed!r:.60}")
    roster: list[tuple[str, str, dict[str, Any]]] = []
    ids: set[str] = set()
    for index, entry in enumerate(listed):
        if not isinstance(entry, dict):
            continue  # the fix removes it
        given = entry.get("id")
        trimmed = js_trim(given) if isinstance(given, str) else ""  # JavaScript's trim, as OpenClaw's
        wanted = openclaw_agent_id(trimmed or "agent")
        agent, suffix = wanted, 2
        while agent in ids:
            agent, suffix = f"{wanted}-{suffix}", suffix + 1
        ids.add(agent)
        roster.append((agent, f"agents.list[{trimmed if trimmed and agent == wanted else index}]", entry))
    return True, roster


def _agent_entry(openclaw: dict[str, Any], agent: str, where: str) -> tuple[dict[str, Any], str]:
    """The agent's entry in openclaw.json (the first whose id is the agent's, as OpenClaw matches
    ids), and where it is, for messages (``{}`` when it has none)."""
    wanted = openclaw_agent_id(agent)
    for key, at, entry in _roster(openclaw, where)[1]:
        if key == wanted:
            return entry, at
    return {}, f"agents.entries.{wanted}"


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
            out.append(_path_text(item, where))
        elif isinstance(item, dict) and isinstance(item.get("path"), str) and isinstance(item.get("pattern", ""), str):
            out.append((_path_text(item["path"], where), _path_text(item.get("pattern") or "", where)))
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


def timezone_problem(name: str | None) -> str | None:
    """What is wrong with openclaw.json's ``agents.defaults.userTimezone``, or None. A zone this
    system does not know is not refused: OpenClaw takes the host's zone then, and so does the
    prompt (``prompt.startup``); but it is said, with the closest known name."""
    if not name:
        return None
    import datetime as dt
    import difflib
    from zoneinfo import available_timezones

    from .timezones import host_zone, resolve_zone

    if resolve_zone(name) is not None:  # as OpenClaw (JavaScript's Intl) takes it
        return None
    close = difflib.get_close_matches(name, sorted(available_timezones()), n=1)
    meant = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"openclaw.json's agents.defaults.userTimezone {shown(name)} is not a time zone this system knows{meant}: "
            f"today's date comes from the host's zone ({dt.datetime.now(host_zone()).tzname()}), as in OpenClaw")


_SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def switch_env(name: str, environ) -> bool | None:
    """An on/off environment variable (unset or empty: None). A word that is neither is refused: a
    setting given and then silently taken as off (OPENCLAW_MEMORY_MULTIMODAL=enabled) was lost, and
    OPENCLAW_MEMORY_SERVICE=of used the service."""
    value = _env(name, environ)
    if value is None:
        return None
    switch = _SWITCH_WORDS.get(value.strip().lower())
    if switch is None:
        raise ConfigError(f"{name} must be 1, true, yes or on (or 0, false, no, off), not {shown(value)}")
    return switch


Sources = tuple[tuple[dict[str, Any], str], ...]  # one level's search settings, by spelling, the current first


def shared_sources(openclaw: dict[str, Any], where: str) -> Sources:
    """The search settings every agent shares, by spelling, the current first: OpenClaw 2026.9.6 reads
    only the top-level `memory.search`, and its startup migration (as `doctor --fix`) fills a key of it
    from the older spellings only where it is missing (agents.defaults.memorySearch, then the top-level
    memorySearch). ``where`` starts each place's name (``"<openclaw.json>: "``)."""
    defaults = _object(_object(openclaw.get("agents"), f"{where}agents").get("defaults"), f"{where}agents.defaults")
    top = _object(_object(openclaw.get("memory"), f"{where}memory").get("search"), f"{where}memory.search")
    return ((top, f"{where}memory.search"),
            (_object(defaults.get("memorySearch"), f"{where}agents.defaults.memorySearch"), f"{where}agents.defaults.memorySearch"),
            (_object(openclaw.get("memorySearch"), f"{where}memorySearch"), f"{where}memorySearch"))


def own_sources(entry: dict[str, Any], entry_at: str, where: str) -> Sources:
    """An agent's own search settings (its entry at ``entry_at``), the current spelling first (its
    `memorySearch` fills what its `memory.search` lacks)."""
    memory = _object(entry.get("memory"), f"{where}{entry_at}.memory")
    return ((_object(memory.get("search"), f"{where}{entry_at}.memory.search"), f"{where}{entry_at}.memory.search"),
            (_object(entry.get("memorySearch"), f"{where}{entry_at}.memorySearch"), f"{where}{entry_at}.memorySearch"))


def every_agents_sources(openclaw: dict[str, Any], where: str) -> Sources:
    """Every place of openclaw.json a memory search setting is read from, for any agent: the shared
    levels, then each configured agent's own (as :func:`_roster` lists them)."""
    places = list(shared_sources(openclaw, where))
    for _key, at, entry in _roster(openclaw, where.removesuffix(": "))[1]:
        try:
            places += own_sources(entry, at, where)
        except ConfigError:  # another agent's entry no setting of this one reads: its own run refuses it
            continue
    return tuple(places)


def _search_key(sources: Sources, *keys: str) -> tuple[Any, str]:
    """The value at ``keys`` (``"multimodal", "enabled"``) of the first of ``sources`` that sets it, and
    where it is: OpenClaw's migration of an older spelling (its mergeMissing) fills a key only where the
    current spelling lacks it. A bare ``multimodal: true`` or ``false`` is kept by that migration (the
    level's older spellings are not read) and holds no key (``true.enabled`` is undefined to OpenClaw
    2026.9.6: the other level, or the default, decides); it was read as ``{enabled: true}``, media
    files OpenClaw does not list listed as memory."""
    for source, at in sources:
        value: Any = source
        for depth, key in enumerate(keys):
            value = value.get(key)
            if key == "multimodal" and isinstance(value, bool):
                return None, f"{at}.{'.'.join(keys)}"
            if value is None:
                break
            if depth < len(keys) - 1 and not isinstance(value, dict):  # (the migration would keep it in the way)
                what = "{enabled: true|false, modalities: [...]}" if key == "multimodal" else "an object"
                raise ConfigError(f"{at}.{'.'.join(keys[:depth + 1])} must be {what}, not {value!r:.60}")
        else:
            return value, f"{at}.{'.'.join(keys)}"
    return None, f"{sources[0][1]}.{'.'.join(keys)}"


def _multimodal(own: Sources, shared: Sources) -> tuple[bool | None, tuple[str, ...]]:
    """``multimodal.enabled`` and the media kinds of ``multimodal.modalities``, each the agent's own
    before the shared one (OpenClaw's ``overrides?.multimodal?.x ?? defaults?.multimodal?.x``):
    ``["image"]``, ``["audio"]``, ``["all"]`` (or none given: both)."""
    def first(key: str) -> tuple[Any, str]:
        value, at = _search_key(own, "multimodal", key)
        return (value, at) if value is not None else _search_key(shared, "multimodal", key)

    enabled, at = first("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise ConfigError(f"{at} must be true or false, not {enabled!r:.60}")
    kinds, at = first("modalities")
    if kinds is None:
        return enabled, MODALITIES
    if not isinstance(kinds, list) or not all(k in ("image", "audio", "all") for k in kinds):
        raise ConfigError(f"{at} must be a list of \"image\", \"audio\" or \"all\", not {kinds!r:.60}")
    return enabled, MODALITIES if "all" in kinds else tuple(k for k in MODALITIES if k in kinds)


def _max_results(own: Sources, shared: Sources) -> int:
    """``query.maxResults``, the agent's own before the shared one, else OpenClaw's default. An
    older flat ``maxResults`` counts where ``query.maxResults`` is missing, as OpenClaw migrates it."""
    for level in (own, shared):
        value, at = _search_key(level, "query", "maxResults")
        if value is None:
            value, at = _search_key(level, "maxResults")
        if value is None:
            continue
        # OpenClaw's schema: a positive whole number (2.0 is one); it refuses the config otherwise.
        if not _real(value) or value < 1 or value != int(value):
            raise ConfigError(f"{at} must be a whole number of at least 1, not {value!r:.60}")
        return min(int(value), MAX_WHOLE)
    return DEFAULT_MAX_RESULTS


def _text(value: Any, where: str) -> str | None:
    """A configured workspace; None where it is not set, as OpenClaw trims it (a blank one named
    the current folder)."""
    if value is None or isinstance(value, str):
        return None if value is None or not js_trim(value) else _path_text(value, where)
    raise ConfigError(f"{where} must be a string (a folder path), not {value!r:.60}")


def _unpathable(value: str) -> str | None:
    """Why no file system can hold the path ``value``, or None."""
    if "\x00" in value:
        return "holds a NUL character"
    try:
        value.encode("utf-8", "surrogateescape")  # a name that is not UTF-8 comes as surrogate escapes: fine
    except UnicodeEncodeError:
        return "holds a lone UTF-16 surrogate (half a character)"
    return None


def _path_text(value: str, where: str) -> str:
    why = _unpathable(value)
    if why is not None:
        raise ConfigError(f"{where}: the path {shown(value)} {why}, which no path can hold")
    return value


def command_line(settings: Settings, *, in_force: bool = False) -> str:
    """``openclaw-memory`` and the settings flags its command line was given, quoted for a shell: a
    command a hint names (read it first, build the index) acts on the same workspace, agent and
    session as the command that printed it (without them, on $OPENCLAW_WORKSPACE's or main's).

    ``in_force``: the workspace, state dir and agent in force however they were chosen (the MCP
    server's: its settings may come from the environment its host gave it, which the model's shell
    does not have), with the flags given besides."""
    import shlex

    flags = settings.command_flags
    if in_force:
        rest: list[str] = []
        i = 0
        while i < len(flags):  # the given ones besides, in their order (each takes a value but --[no-]multimodal)
            width = 1 if flags[i] in ("--multimodal", "--no-multimodal") else 2
            if flags[i] not in ("-w", "--state-dir", "--agent"):
                rest += flags[i:i + width]
            i += width
        if settings.qdrant_url and "--qdrant-url" not in rest:
            rest += ["--qdrant-url", settings.qdrant_url]
        flags = ("-w", str(settings.workspace), "--state-dir", str(settings.state_dir), "--agent", settings.agent, *rest)
    return " ".join(["openclaw-memory", *map(shlex.quote, flags)])


def _command_flags(given: Overrides, settings: Settings) -> tuple[str, ...]:
    """The flags of ``given`` with their values in force (a workspace as resolved, an agent id as
    normalized): the same memory from any folder."""
    flags: list[str] = []
    for name, flag, value in (("workspace", "-w", str(settings.workspace)), ("state_dir", "--state-dir", str(settings.state_dir)),
                              ("agent", "--agent", settings.agent), ("qdrant_url", "--qdrant-url", settings.qdrant_url),
                              ("session", "--session", settings.session)):
        if getattr(given, name) is not None and value is not None:
            flags += [flag, value]
    for extra in given.extra:  # (as given: a relative one is relative to the workspace, not the current folder)
        flags += ["--extra", extra]
    if given.multimodal is not None:
        flags.append("--multimodal" if given.multimodal else "--no-multimodal")
    return tuple(flags)


def resolve_settings(overrides: Overrides | None = None, environ=None) -> Settings:
    """Resolve settings from flags, the environment, config files and defaults."""
    o = overrides or Overrides()
    env = os.environ if environ is None else environ
    # A folder or agent given empty (`-w "$WS"` with WS unset) is refused: taken as not given, a
    # script's write went to $OPENCLAW_WORKSPACE or OpenClaw's default workspace, another agent's
    # memory, or was made as main.
    for value, what, instead in ((o.workspace, "workspace given with -w/--workspace", "$OPENCLAW_WORKSPACE or OpenClaw's default"),
                                 (o.state_dir, "state dir given with --state-dir", "$OPENCLAW_STATE_DIR or ~/.openclaw"),
                                 (o.agent, "agent given with --agent", "main"),
                                 (o.session, "session given with --session", "the command line's own read records"),
                                 (o.qdrant_url, "Qdrant server given with --qdrant-url", "the embedded engine")):
        if value is not None and not value.strip():
            raise UsageError(f"the {what} is empty; give one (an empty value does not mean {instead})")
    if any(not extra.strip() for extra in o.extra):  # (`--extra "$NOTES"`, NOTES unset: dropped without a word)
        raise UsageError("the extra path given with --extra is empty; give one (an empty value adds no path)")

    given = o.state_dir or _openclaw_env("OPENCLAW_STATE_DIR", env)
    _fits("state dir", given, StateDirError)
    # OpenClaw's environment is this one plus its own .env files (the state dir's may name another).
    try:
        home: str | None = openclaw_home(env)
    except StateDirError:  # none to tell: a state dir given is still read; one that is not fails below
        home = None
    if given or home is not None:
        env = with_dotenv(env, _expand(given, env) if given else str(default_state_dir(env)),
                          bool(o.state_dir) or "OPENCLAW_STATE_DIR" in env, home)
        given = o.state_dir or _openclaw_env("OPENCLAW_STATE_DIR", env)
    # Real, so that `..`, a symlinked ~/.openclaw and the plain path name one service (its settings key).
    state_dir = Path(os.path.realpath(_expand(given, env) if given else default_state_dir(env)))
    _fits("state dir", str(state_dir), StateDirError)
    agent = agent_id(o.agent or DEFAULT_AGENT)

    if os.path.lexists(state_dir) and not state_dir.is_dir():
        # (named where a .env file set it: the user's shell has no such variable to look at)
        told = f" ({where_set('OPENCLAW_STATE_DIR', env)})" if not o.state_dir and set_in("OPENCLAW_STATE_DIR", env) else ""
        raise StateDirError(f"the state dir {state_dir}{told} is not a folder (give --state-dir or OPENCLAW_STATE_DIR a folder)")
    json_path = openclaw_config_path(state_dir, bool(given), env)
    openclaw = _load_json5(json_path, env)
    toml_path = state_dir / TOML_NAME
    toml = _load_toml(toml_path)
    tables = _toml_tables(toml, toml_path)  # every key checked here, once

    defaults = _object(_object(openclaw.get("agents"), f"{json_path}: agents").get("defaults"), f"{json_path}: agents.defaults")
    entry, entry_at = _agent_entry(openclaw, agent, str(json_path))
    shared_search = shared_sources(openclaw, f"{json_path}: ")
    own_search = own_sources(entry, entry_at, f"{json_path}: ")

    # The first source that names a workspace, and where it came from (said when it is wrong).
    # Never the current folder: with nothing configured it is OpenClaw's default, as OpenClaw
    # resolves it (a `write` from any folder went to that folder; `--state-dir` elsewhere made the
    # current folder the workspace without a word).
    shared = _text(defaults.get("workspace"), f"{json_path}: agents.defaults.workspace")
    workspace_raw, workspace_source = next((value, where) for value, where in itertools.chain((
        (o.workspace, "given with --workspace"),
        (_openclaw_env("OPENCLAW_WORKSPACE", env), where_set("OPENCLAW_WORKSPACE", env)),
        (_text(toml.get("workspace"), f"{toml_path}: workspace"), f"from {toml_path}: workspace"),
        (_text(entry.get("workspace"), f"{json_path}: {entry_at}.workspace"),
         f"from {json_path}: {entry_at}.workspace"),
    ), _openclaw_workspace(openclaw, agent, shared, state_dir, json_path, env, bool(given))
    ) if value)  # (the last only when needed)

    extras: list = []
    for level in (shared_search, own_search):  # the shared ones, then the agent's (an agent's list adds to them, as in OpenClaw)
        value, at = _search_key(level, "extraPaths")
        extras += _extra_list(value, at)
    extras += _extra_list(toml.get("extra_paths"), f"{toml_path}: extra_paths")
    env_extra = _env("OPENCLAW_MEMORY_EXTRA_PATHS", env)
    if env_extra:
        extras += env_extra.split(os.pathsep)
    extras += list(o.extra)
    workspace = resolve_workspace(str(workspace_raw), workspace_source, env)  # after the checks of the files' paths: those name their key

    multimodal = o.multimodal
    if multimodal is None:
        multimodal = switch_env("OPENCLAW_MEMORY_MULTIMODAL", env)
    if multimodal is None and isinstance(toml.get("multimodal"), bool):
        multimodal = toml["multimodal"]
    enabled, modalities = _multimodal(own_search, shared_search)
    if multimodal is None:
        multimodal = enabled
    max_results = _max_results(own_search, shared_search)

    read_table, prompt_table = tables["read"], tables["prompt"]
    # An agent's own contextLimits object replaces the defaults' whole (OpenClaw's rule).
    limits = entry.get("contextLimits") if isinstance(entry.get("contextLimits"), dict) else defaults.get("contextLimits")
    limits = limits if isinstance(limits, dict) else {}
    read = ReadLimits(
        default_lines=read_table.get("default_lines", ReadLimits.default_lines),
        max_chars=read_table.get("max_chars", _js_int(limits.get("memoryGetMaxChars"), ReadLimits.max_chars)),
    )

    def bootstrap(key: str, default: int) -> int:
        value = entry.get(key) if entry.get(key) is not None else defaults.get(key)
        return _js_positive(value, default)

    prompt = PromptLimits(
        file_chars=prompt_table.get("file_chars", bootstrap("bootstrapMaxChars", PromptLimits.file_chars)),
        total_chars=prompt_table.get("total_chars", bootstrap("bootstrapTotalMaxChars", PromptLimits.total_chars)),
        startup=_startup_context(defaults),
    )
    hybrid: dict[str, Any] = {}
    (_top, _), (defaults_search, _), (legacy_search, _) = shared_search
    _current, (entry_search, _) = own_search
    for source in (legacy_search, defaults_search, entry_search):  # the older spellings, as read before
        table = ((source.get("query") or {}) if isinstance(source.get("query"), dict) else {}).get("hybrid")
        if isinstance(table, dict):
            for key, value in table.items():
                hybrid[key] = {**hybrid[key], **value} if isinstance(value, dict) and isinstance(hybrid.get(key), dict) else value
    resolved = Settings(
        workspace=workspace,
        agent=agent,
        state_dir=state_dir,
        openclaw_json=json_path,
        extra_paths=tuple(normalize_extra_paths(extras, workspace)),
        multimodal=bool(multimodal and modalities),  # no media kind left: off, as OpenClaw has it
        modalities=modalities,
        max_results=max_results,
        read=read,
        prompt=prompt,
        index=IndexSettings(**tables["index"], configured=bool(toml.get("index"))),
        search=SearchSettings(**tables["search"]),
        history=HistorySettings(**tables["history"]),
        watchdog=WatchdogSettings(**tables["watchdog"]),
        service=ServiceSettings(**tables["service"]),
        qdrant_url=(o.qdrant_url or _env("OPENCLAW_MEMORY_QDRANT_URL", env) or "").strip() or None,
        session=check_session(o.session or None),
        openclaw_hybrid=hybrid,
        model_cache=default_model_cache(env, state_dir),
        embedding_backend=(_env("OPENCLAW_MEMORY_EMBEDDING_BACKEND", env) or "").strip() or None,
    )
    return replace(resolved, command_flags=_command_flags(o, resolved))


def _openclaw_workspace(openclaw: dict[str, Any], agent: str, shared: str | None, state_dir: Path, json_path: Path,
                        env, state_dir_given: bool) -> Iterator[tuple[str | None, str]]:
    """The workspace OpenClaw gives an agent that has none of its own (its resolveAgentWorkspaceDir),
    with where it came from: ``agents.defaults.workspace`` (``shared``) is the workspace of the agent
    that owns it and holds a folder named after each other agent; with none configured, the owner's
    is ``OPENCLAW_WORKSPACE_DIR``, else ``<state dir>/workspace`` (``~/.openclaw-<profile>/workspace``
    with ``OPENCLAW_PROFILE`` and no state dir given), another's ``<state dir>/workspace-<agent>``."""
    agent = openclaw_agent_id(agent)  # as OpenClaw names the agent's folders
    owner = agent == _workspace_owner(openclaw, str(json_path))
    if shared:
        where = f"from {json_path}: agents.defaults.workspace"
        yield (shared, where) if owner else (os.path.join(_expand(shared, env), agent), f"{where}, agent {agent}'s folder in it")
        return
    if owner:
        yield _openclaw_env("OPENCLAW_WORKSPACE_DIR", env), where_set("OPENCLAW_WORKSPACE_DIR", env)
        profile = _openclaw_env("OPENCLAW_PROFILE", env) or ""
        if profile and profile.lower() != "default" and not state_dir_given:
            in_file = set_in("OPENCLAW_PROFILE", env)
            if not re.fullmatch(_OPENCLAW_ID, profile):
                raise ConfigError(f"OPENCLAW_PROFILE {shown(profile)}{in_file} is not a profile name (letters, digits, "
                                  "'_' and '-', at most 64, as OpenClaw's --profile takes them)")
            yield (os.path.join(openclaw_home(env), f".openclaw-{profile}", "workspace"),
                   f"OpenClaw's default for OPENCLAW_PROFILE={profile}{in_file}, as no workspace is configured for agent "
                   f"{agent} in {json_path}")
    unset = f"OpenClaw's default, as no workspace is configured for agent {agent} in {json_path}"
    try:
        usual = openclaw_config_path(default_state_dir(env), False, env)  # the one OpenClaw reads, clawdbot.json included
        moved = not json_path.exists() and usual != json_path and usual.is_file()  # `--state-dir` moved the config with it
    except (OSError, StateDirError):  # (a home folder this user may not enter, or none at all)
        moved = False
    if moved:
        unset += f", which does not exist ({usual} is read with OPENCLAW_CONFIG_PATH={usual})"
    # The owner's is in ~/.openclaw whatever state dir a ~/.clawdbot gave (OpenClaw's resolveDefaultAgentWorkspaceDir).
    home_state = state_dir if state_dir_given else Path(openclaw_home(env)) / ".openclaw"
    yield str(home_state / "workspace" if owner else state_dir / f"workspace-{agent}"), unset


def _workspace_owner(openclaw: dict[str, Any], where: str) -> str | None:
    """The agent ``agents.defaults.workspace`` belongs to, as OpenClaw decides (its
    ``tryResolveDefaultAgentId``): the one agent marked ``default`` (none when two are, or when
    ``agents.ownership`` is ``explicit``), else the only one configured, else ``main`` when no agents
    are configured."""
    configured, roster = _roster(openclaw, where)
    agents = openclaw.get("agents") or {}
    explicit = agents.get("ownership") == "explicit"
    listed = not isinstance(agents.get("entries"), dict)  # the roster is the older agents.list (see _roster)
    if not configured or (not roster and listed and not explicit):
        return DEFAULT_AGENT  # an empty agents.list: the fix makes it entries.main
    marked = [key for key, _at, entry in roster if entry.get("default") is True]
    if len(marked) == 1 and not explicit:
        return marked[0]
    if (len(roster) > 1 and listed and "ownership" not in agents
            and all(entry.get("default", False) is False for _key, _at, entry in roster)):
        return roster[0][0]  # the older agents.list, no marker: the fix pins the shared workspace on its first entry
    return roster[0][0] if len(roster) == 1 else None


def _fits(what: str, path: str | None, error: type[UsageError]) -> None:
    """Refuse a path no system call takes (`-w "$NOTE"` holding a note by mistake): in one short line,
    not echoed whole (100,000 characters came back), nor an OSError worded at exit 1."""
    size = _bytes(path) if path else 0
    if size >= PATH_MAX:
        raise error(f"the {what} path is longer than the system allows ({size:,} bytes; at most {PATH_MAX - 1:,}): "
                    f"{shown(path, 60)}")
    longest = max((_bytes(part) for part in (path or "").split(os.sep)), default=0)
    if longest > NAME_MAX:  # (one folder name of 4,085 bytes was an OSError of exit 1, the path echoed whole)
        raise error(f"the {what} path holds a name longer than the system allows ({longest:,} bytes; at most "
                    f"{NAME_MAX}): {shown(path, 60)}")


def _bytes(name: str) -> int:
    """How many bytes the system gets for ``name``: a byte of a name that is not UTF-8 (from argv,
    surrogate-escaped) is one byte, not the three of its escape's UTF-8; a lone surrogate no file
    name can hold (JSON's ``\\ud800``) counts as UTF-8 would write it."""
    try:
        return len(os.fsencode(name))
    except UnicodeEncodeError:
        return len(name.encode("utf-8", "surrogatepass"))


def resolve_workspace(raw: str, source: str | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The workspace's real path (a ``~`` in ``raw``: OpenClaw's home, from ``env``); refused
    (WorkspaceError, naming ``source``: where the path was given or configured) when it is missing,
    not a folder or not readable."""
    _fits("workspace", raw, WorkspaceError)
    path = Path(_expand(raw, env))
    given = f" ({source})" if source else ""
    try:
        # os.path.realpath, not Path.resolve: on a symlink loop Python 3.11's resolve raises
        # RuntimeError (a traceback), realpath the OSError worded below (ELOOP).
        real = Path(os.path.realpath(path, strict=True))
    except FileNotFoundError:
        raise WorkspaceError(f"workspace not found: {path}{given}{_settings_hint(source)}") from None
    except OSError as exc:
        raise WorkspaceError(f"cannot open workspace {path}: {exc.strerror}{given}") from None
    if not real.is_dir():
        raise WorkspaceError(f"workspace is not a folder: {path}{given} (give the folder that holds MEMORY.md)")
    if not os.access(real, os.R_OK | os.X_OK):
        raise WorkspaceError(f"workspace is not readable: {real}{given} (permission denied)")
    return real


def _settings_hint(source: str | None) -> str:
    if source is None or not source.startswith("OpenClaw's default"):
        return ""
    here = "; `-w .` for the current folder" if os.path.isfile("MEMORY.md") or os.path.isdir("memory") else ""
    return f"; give one with -w/--workspace, OPENCLAW_WORKSPACE or agents.defaults.workspace in openclaw.json{here}"


def normalize_extra_paths(raw: list, workspace: Path) -> list[ExtraPath]:
    """Trim, drop empties, expand ``~`` (the system's home, as OpenClaw does for these), resolve relative ones against the workspace, de-duplicate.

    An item is a path or a ``(path, pattern)`` pair; the same folder with two patterns is
    two entries (OpenClaw lists each in turn). Symlinks are not resolved here: the
    scanner must still see (and report) a symlinked extra root.
    """
    seen: set[tuple[str, str]] = set()
    result: list[ExtraPath] = []
    for item in raw:
        path, pattern = (item, "") if isinstance(item, str) else item
        text = js_trim(path)
        pattern = js_trim(pattern).replace("\\", "/")
        if not text:
            continue
        expanded = _tilde(text)  # OpenClaw's expandHomePath: the system's home, never OPENCLAW_HOME
        absolute = os.path.normpath(expanded if os.path.isabs(expanded) else os.path.join(workspace, expanded))
        if (absolute, pattern) not in seen:
            seen.add((absolute, pattern))
            result.append(ExtraPath(absolute, pattern or None))
    return result
