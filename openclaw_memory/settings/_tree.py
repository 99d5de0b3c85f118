"""The settings tree: one frozen dataclass per table of ``openclaw-memory.toml``, held by :class:`Settings`
(``settings.index``, ``settings.service``, ...).

A field the toml may set carries its check in its metadata (``toml(default, check)``); a table
inside a table is a ``subtable``. :func:`._files.table_values` reads every table at once when settings
are resolved: an unknown table or key, or a value of the wrong type, is a ConfigError in one format,
``<file>: [table] key must be <what>, not <value>``."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..files.paths import MODALITIES, ExtraPath
from ..fsutil.atomic import NAME_MAX
from ._ids import DEFAULT_AGENT, OPENCLAW_ID, agent_id, check_session
from ._places import OPENCLAW_JSON_NAME, default_model_cache, default_state_dir, unpathable

TOML_NAME = "openclaw-memory.toml"

# SQLite opens a file whose path has at most 504 bytes (its unix VFS takes 512, with room for the
# "-journal" it adds; measured: a state.db path of 504 bytes opens, 505 does not). The longest path
# below a data dir it opens is a rebuild's new database, ".rebuild-<pid>-<8 hex>/new/state.db" (38
# bytes, a pid of 7 digits): a data dir named now has at most DATA_DIR_MAX bytes. One whose state
# database cannot even be made (its private name, ".state.db.new-<pid>-<8 hex>": 30 bytes) is none.
SQLITE_PATH_MAX = 504
DATA_DIR_MAX = SQLITE_PATH_MAX - 1 - 38
DATA_DIR_USABLE = SQLITE_PATH_MAX - 1 - 30


DEFAULT_MAX_RESULTS = 6  # a search's results when neither the caller nor openclaw.json says (OpenClaw's)


BAD: Any = object()  # what a check answers for a value it refuses


class Check:
    """How one key is checked (a plain class: a dataclass costs start-up time on every command)."""

    __slots__ = ("words", "convert")

    def __init__(self, words: str, convert: Callable[[Any], Any]):
        self.words = words  # what the value must be, for the message
        self.convert = convert  # the value as Settings keeps it, or BAD


def _toml(default: Any, check: Check) -> Any:
    return field(default=default, metadata={"toml": check})


def _subtable(cls: type) -> Any:
    return field(default_factory=cls, metadata={"table": cls})


def is_real(value: Any) -> bool:
    """A finite number (TOML has inf and nan)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# Past it a count or budget is no limit at all: kept as this, which SQLite and the engine can hold.
MAX_WHOLE = 2**53


def _whole(minimum: int) -> Check:
    return Check(f"a whole number of at least {minimum}",
                  lambda v: min(v, MAX_WHOLE) if isinstance(v, int) and not isinstance(v, bool) and v >= minimum else BAD)


def _seconds(minimum: float | None = None) -> Check:
    """A number of seconds: above 0 (``minimum`` None) or at least ``minimum``."""
    if minimum is None:
        return Check("a positive number of seconds", lambda v: float(v) if is_real(v) and v > 0 else BAD)
    return Check(f"a number of seconds of at least {minimum:g}",
                  lambda v: float(v) if is_real(v) and v >= minimum else BAD)


def _nonempty(words: str = "a non-empty string") -> Check:
    return Check(words, lambda v: v.strip() if isinstance(v, str) and v.strip() else BAD)


def _choice(*options: str) -> Check:
    words = ", ".join(options[:-1]) + " or " + options[-1]
    return Check(words, lambda v: v.strip() if isinstance(v, str) and v.strip() in options else BAD)


_FLAG = Check("true or false", lambda v: v if isinstance(v, bool) else BAD)


# An empty namespace is the default one (one per workspace).
_NAMESPACE_CHECK = Check("1-64 letters, digits, '-' or '_'", lambda v: (v or None) if isinstance(v, str) and (
    not v or re.fullmatch(OPENCLAW_ID, v)) else BAD)


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

    api_key_file: str | None = _toml(None, Check("a path (the file holding the API key)", lambda v: v.strip() if (
        isinstance(v, str) and v.strip() and unpathable(v) is None) else BAD))
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
    mmr_lambda: float | None = _toml(None, Check("a number from 0 to 1", lambda v: float(v) if is_real(v) and 0 <= v <= 1 else BAD))
    temporal_decay: bool | None = _toml(None, _FLAG)
    half_life_days: float | None = _toml(None, Check("a positive number of days", lambda v: float(v) if is_real(v) and v > 0 else BAD))


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
    # The workspace as OpenClaw spells it: its path.resolve of the configured value (absolute, '..'
    # folded, symlinks kept), which its prompt's [MISSING] markers name; None: ``workspace``.
    workspace_spelled: str | None = None
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
    # Where a .env file or openclaw.json's env.vars set it (`` in FILE``; empty: the environment), for
    # a message about its value: the shell has no such variable to look at.
    embedding_backend_from: str = ""
    # The environment openclaw.json was resolved with: the process's, what OpenClaw's .env files add and
    # the config's env.vars (resolve_settings); None: this process's (settings made in code). The other
    # agents' workspaces are read with it (settings.agents), as OpenClaw resolves them: read with the
    # process's alone, a ${VAR} of ~/.openclaw/.env left another agent's workspace unknown, and the
    # watchdog took its notes for this agent's.
    openclaw_environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
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
        # And cut to leave the state database a path SQLite opens: with a long state dir, a long
        # workspace name made every write fail ("unable to open database file").
        folder = self.state_dir / "openclaw-memory" / "workspaces"
        named = folder / f"{slug[:NAME_MAX - 1 - len(key)]}-{key}"
        if len(os.fsencode(named)) <= DATA_DIR_MAX or (named / "state.db").is_file():  # (made before the cut: its history)
            return named
        room = DATA_DIR_MAX - len(os.fsencode(folder)) - 2 - len(key)  # (a slash before the name, a '-' in it)
        return folder / f"{slug[:max(1, room)]}-{key}"

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
    """What the user gave on the command line; None means not given. A path may be any os.PathLike (a
    Path); ``extra`` is a sequence of them (a list or tuple: one string is refused, not iterated).
    Checked where settings are resolved: a value of another type is BadValue, named by its field."""

    workspace: str | os.PathLike[str] | None = None
    agent: str | None = None
    state_dir: str | os.PathLike[str] | None = None
    extra: Sequence[str | os.PathLike[str]] = ()
    multimodal: bool | None = None
    qdrant_url: str | None = None
    session: str | None = None
