"""Which Qdrant server the index uses, and how: resolved once from flags, environment and toml.

Precedence for the server: ``--qdrant-url`` > ``OPENCLAW_MEMORY_QDRANT_URL`` >
toml ``[index] backend = "qdrant"`` with ``url`` > the embedded engine. A
``file:///folder`` URL selects qdrant-client's local mode (pure Python, one process
at a time, for trying things out and for tests; it is not a server).

The API key comes from ``OPENCLAW_MEMORY_QDRANT_API_KEY`` or from the file named by
``[index.server] api_key_file``; a key written into the toml itself is refused, so
the key never lands in a file that is shared or printed. Scale settings live in
``[index.server]``: ``tenancy`` (``collection``: one Qdrant collection per
agent-scoped collection, the default; ``shared``: one per collection kind, the
agent's collection as a tenant key), ``namespace``, ``shard_number``,
``replication_factor``, ``write_consistency_factor``, ``hnsw_m``,
``hnsw_ef_construct``, ``timeout``, ``retries``, ``retry_backoff``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from ...errors import ConfigError, UsageError

URL_ENV = "OPENCLAW_MEMORY_QDRANT_URL"
API_KEY_ENV = "OPENCLAW_MEMORY_QDRANT_API_KEY"
TENANCIES = ("collection", "shared")
_NAMESPACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
_WHERE = "openclaw-memory.toml [index.server]"


@dataclass(frozen=True)
class ServerConfig:
    """A resolved Qdrant target. ``api_key`` is kept out of ``repr`` so it is never printed by accident."""

    url: str  # http(s)://host:port or file:///folder
    namespace: str
    settings_key: str  # the embedding settings (index.config), recorded on created collections
    api_key: str | None = field(default=None, repr=False)
    api_key_source: str = "none"  # "environment", "file <path>" or "none"
    timeout: float = 10.0
    retries: int = 4
    retry_backoff: float = 0.5
    tenancy: str = "collection"
    shard_number: int | None = None
    replication_factor: int | None = None
    write_consistency_factor: int | None = None
    hnsw_m: int | None = None
    hnsw_ef_construct: int | None = None

    @property
    def local_path(self) -> str | None:
        """The folder of qdrant-client's local mode, or None for a real server."""
        if not self.url.startswith("file:"):
            return None
        return urlsplit(self.url).path

    @property
    def display_url(self) -> str:
        """The URL without any user:password part, safe to print."""
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return urlunsplit((parts.scheme, host, parts.path, "", ""))


def normalize_url(raw: str, where: str) -> str:
    """Validate a server URL (http, https) or a local-mode folder (``file:///abs/folder``)."""
    text = raw.strip()
    parts = urlsplit(text)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise UsageError(f"{where}: a local-mode URL is file:///absolute/folder, not {text!r}")
        return f"file://{os.path.normpath(parts.path)}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"{where}: {text!r} is not a Qdrant URL; give http(s)://HOST:PORT (6333 is Qdrant's REST port) "
            "or file:///folder for qdrant-client's local mode"
        )
    try:
        _ = parts.port  # urllib checks the port only when asked
    except ValueError:
        raise UsageError(f"{where}: {text!r} has an invalid port") from None
    return text.rstrip("/")


def _count(table: dict, key: str, minimum: int) -> int | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{_WHERE}: `{key}` must be a whole number of at least {minimum}, not {value!r}")
    return value


def _seconds(table: dict, key: str, default: float, minimum: float) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
        raise ConfigError(f"{_WHERE}: `{key}` must be a number of seconds of at least {minimum:g}, not {value!r}")
    return float(value)


def _api_key(table: dict, environ) -> tuple[str | None, str]:
    if "api_key" in table:
        raise ConfigError(
            f"{_WHERE}: `api_key` is not read from the toml, so the key never sits in a shared file; "
            f"set {API_KEY_ENV} or name a file holding it with `api_key_file`"
        )
    key = (environ.get(API_KEY_ENV) or "").strip()
    if key:
        return key, "environment"
    path = table.get("api_key_file")
    if path is None:
        return None, "none"
    if not isinstance(path, str) or not path.strip():
        raise ConfigError(f"{_WHERE}: `api_key_file` must be a path, not {path!r}")
    path = os.path.expanduser(path.strip())
    try:
        with open(path, encoding="utf-8") as fh:
            key = fh.read().strip()
    except OSError as exc:
        raise ConfigError(f"{_WHERE}: cannot read api_key_file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{_WHERE}: api_key_file {path} is not text") from None
    if not key:
        raise ConfigError(f"{_WHERE}: api_key_file {path} is empty")
    return key, f"file {path}"


def default_namespace(settings) -> str:
    """One namespace per workspace (its data folder's name), so two workspaces never share a collection."""
    return "ocm-" + settings.data_dir.name[-60:].lstrip("-_")


def server_config(settings, url: str | None = None, environ=None) -> ServerConfig | None:
    """The Qdrant target for ``settings`` (``url`` overrides every source), or None for the embedded engine."""
    from ..config import index_config

    env = os.environ if environ is None else environ
    table = settings.section("index")
    backend = table.get("backend", "edge")
    chosen = url or getattr(settings, "qdrant_url", None)
    where = "--qdrant-url" if url else f"--qdrant-url / {URL_ENV}" if chosen else "openclaw-memory.toml [index] url"
    if not chosen:
        if backend != "qdrant":
            return None
        chosen = table.get("url")
        if not isinstance(chosen, str) or not chosen.strip():
            raise ConfigError(
                'openclaw-memory.toml [index]: backend = "qdrant" needs `url` (for example "http://localhost:6333"), '
                f"or give --qdrant-url / {URL_ENV}"
            )
    chosen = normalize_url(chosen, where)
    server = table.get("server", {})
    if not isinstance(server, dict):
        raise ConfigError(f"{_WHERE} must be a table")
    tenancy = server.get("tenancy", "collection")
    if tenancy not in TENANCIES:
        raise ConfigError(f"{_WHERE}: `tenancy` must be one of {', '.join(TENANCIES)}, not {tenancy!r}")
    namespace = server.get("namespace") or default_namespace(settings)
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
        raise ConfigError(f"{_WHERE}: `namespace` must be 1-64 letters, digits, '-' or '_', not {namespace!r}")
    api_key, source = _api_key(server, env)
    retries = _count(server, "retries", 0)
    return ServerConfig(
        url=chosen,
        namespace=namespace,
        settings_key=index_config(settings).settings_key,
        api_key=api_key,
        api_key_source=source,
        timeout=_seconds(server, "timeout", 10.0, 0.1),
        retries=4 if retries is None else retries,
        retry_backoff=_seconds(server, "retry_backoff", 0.5, 0.0),
        tenancy=tenancy,
        shard_number=_count(server, "shard_number", 1),
        replication_factor=_count(server, "replication_factor", 1),
        write_consistency_factor=_count(server, "write_consistency_factor", 1),
        hnsw_m=_count(server, "hnsw_m", 0),
        hnsw_ef_construct=_count(server, "hnsw_ef_construct", 4),
    )
