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

Each data dir's index has an identity on the server (:func:`index_identity`): 32 hex digits made
once at random and kept in the state database, or given with ``OPENCLAW_MEMORY_QDRANT_INDEX_ID``
to share one index between machines deliberately. Its first 12 digits end the namespace, so the
names of its collections (or tenants) are its own even where two data dirs have the same name
(the same workspace path on two machines) or the same configured namespace; the whole identity is
recorded on each collection it creates, and a collection recorded as another's is refused.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ...errors import ConfigError, UsageError

if TYPE_CHECKING:
    from ...settings import IndexServerSettings, Settings

URL_ENV = "OPENCLAW_MEMORY_QDRANT_URL"
API_KEY_ENV = "OPENCLAW_MEMORY_QDRANT_API_KEY"
INDEX_ID_ENV = "OPENCLAW_MEMORY_QDRANT_INDEX_ID"
_INDEX_ID = re.compile(r"[0-9a-f]{32}")
_WHERE = "openclaw-memory.toml [index.server]"


@dataclass(frozen=True)
class ServerConfig:
    """A resolved Qdrant target. ``api_key`` is kept out of ``repr`` so it is never printed by accident."""

    url: str  # http(s)://host:port or file:///folder
    namespace: str  # what names this index's collections (or tenants): server_config ends it with the owner's 12 first digits
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
    # The index's identity (index_identity), recorded on the collections it creates and checked on
    # those it opens. None only in a config made by hand (tests, the benchmark): nothing recorded or checked.
    owner: str | None = None

    @property
    def local_path(self) -> str | None:
        """The folder of qdrant-client's local mode, or None for a real server."""
        if not self.url.startswith("file:"):
            return None
        return urlsplit(self.url).path

    @property
    def display_url(self) -> str:
        """The URL without any user:password part, safe to print."""
        from ...settings import printable_url

        return printable_url(self.url)


def normalize_url(raw: str, where: str) -> str:
    """Validate a server URL (http, https) or a local-mode folder (``file:///abs/folder``)."""
    text = raw.strip()
    from ...settings import printable_url

    shown = repr(printable_url(text))  # never its user:password or api_key: an MCP tool error shows the model
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # an unclosed [IPv6 bracket, say
        raise UsageError(f"{where}: {shown} is not a Qdrant URL ({exc})") from None
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise UsageError(f"{where}: a local-mode URL is file:///absolute/folder, not {shown}")
        return f"file://{os.path.normpath(parts.path)}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"{where}: {shown} is not a Qdrant URL; give http(s)://HOST:PORT (6333 is Qdrant's REST port) "
            "or file:///folder for qdrant-client's local mode"
        )
    try:
        _ = parts.port  # urllib checks the port only when asked
    except ValueError:
        raise UsageError(f"{where}: {shown} has an invalid port") from None
    return text.rstrip("/")


def _api_key(table: IndexServerSettings, environ: Mapping[str, str]) -> tuple[str | None, str]:
    """The key from the environment, else from ``api_key_file`` (a key in the toml itself was refused
    when settings were resolved)."""
    key = (environ.get(API_KEY_ENV) or "").strip()
    if key:
        return key, "environment"
    if table.api_key_file is None:
        return None, "none"
    path = os.path.expanduser(table.api_key_file)
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


def default_namespace(settings: Settings) -> str:
    """The namespace's readable part by default: the workspace's data folder's name. It is made of the
    workspace's path alone (two machines with the same path have the same), so the index's identity
    ends every namespace (see :func:`server_config`)."""
    return "ocm-" + settings.data_dir.name[-60:].lstrip("-_")


def shared_on_purpose(environ: Mapping[str, str] | None = None) -> bool:
    """Whether this index is one several data dirs (machines) share on purpose (``OPENCLAW_MEMORY_QDRANT_INDEX_ID``
    set): a collection this data dir has no record of is then another's, never an orphan of its own."""
    return bool(((os.environ if environ is None else environ).get(INDEX_ID_ENV) or "").strip())


def index_identity(settings: Settings, environ: Mapping[str, str] | None = None) -> str:
    """This data dir's index on a Qdrant server: ``OPENCLAW_MEMORY_QDRANT_INDEX_ID`` where set (one index
    shared by machines on purpose), else 32 hex digits made once at random and kept in the state
    database. Where the database may not be written (plain ``doctor``) and holds none yet, a new
    random one that is not kept: such an index has nothing on any server."""
    from ...database.connection import Database, is_read_only

    env = os.environ if environ is None else environ
    given = (env.get(INDEX_ID_ENV) or "").strip().lower()
    if given:
        if not _INDEX_ID.fullmatch(given.replace("-", "")):
            raise UsageError(f"{INDEX_ID_ENV} must be an index's identity, 32 hexadecimal digits (server_identity in its "
                             f"state.db, or ocmOwner in its collections' metadata on the server), not {given[:40]!r}")
        return given.replace("-", "")
    db = Database(settings.data_dir)
    row = db.one("SELECT value FROM server_identity WHERE id = 1")
    if row is not None:
        return str(row[0])
    if is_read_only():
        return uuid.uuid4().hex
    with db.transaction() as conn:  # BEGIN IMMEDIATE: two first runs at once keep one identity
        row = conn.execute("SELECT value FROM server_identity WHERE id = 1").fetchone()
        if row is not None:
            return str(row[0])
        made = uuid.uuid4().hex
        conn.execute("INSERT INTO server_identity VALUES (1, ?)", (made,))
        return made


def server_config(settings: Settings, url: str | None = None, environ: Mapping[str, str] | None = None) -> ServerConfig | None:
    """The Qdrant target for ``settings`` (``url`` overrides every source), or None for the embedded engine."""
    from ..config import index_config

    env = os.environ if environ is None else environ
    table = settings.index  # [index] and [index.server], checked when settings were resolved
    chosen = url or settings.qdrant_url
    where = "--qdrant-url" if url else f"--qdrant-url / {URL_ENV}" if chosen else "openclaw-memory.toml [index] url"
    if not chosen:
        if table.backend != "qdrant":
            return None
        chosen = table.url
        if chosen is None:
            raise ConfigError(
                'openclaw-memory.toml: [index] backend = "qdrant" needs url (for example "http://localhost:6333"), '
                f"or give --qdrant-url / {URL_ENV}"
            )
    chosen = normalize_url(chosen, where)
    server = table.server
    api_key, source = _api_key(server, env)
    owner = index_identity(settings, env)
    return ServerConfig(
        url=chosen,
        namespace=f"{server.namespace or default_namespace(settings)}-{owner[:12]}",
        owner=owner,
        settings_key=index_config(settings).settings_key,
        api_key=api_key,
        api_key_source=source,
        timeout=server.timeout,
        retries=server.retries,
        retry_backoff=server.retry_backoff,
        tenancy=server.tenancy,
        shard_number=server.shard_number,
        replication_factor=server.replication_factor,
        write_consistency_factor=server.write_consistency_factor,
        hnsw_m=server.hnsw_m,
        hnsw_ef_construct=server.hnsw_ef_construct,
    )
