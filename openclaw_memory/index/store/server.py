"""The index on a Qdrant server or cluster through ``qdrant-client``: the same store as the embedded one.

Same collections, payloads, point ids, dense vectors and BM25 text indexes as
``edge``: the text field gets the Multilingual tokenizer with English stems, the
CJK field the whitespace tokenizer, both with BM25 scoring, so a server computes
the same raw cosine and BM25 scores the embedded engine does and ``search``
needs no branch. BM25 ranking over a text index needs Qdrant 1.20 or later.

Where collections live (``[index.server] tenancy``):

- ``collection`` (default): one Qdrant collection per agent-scoped collection,
  named ``<namespace>__<collection>``; the namespace ends with the index's identity
  (``server_config.index_identity``), which keeps two indexes' ``memory-root-main``
  apart, and the whole identity is recorded on the collection (``ocmOwner``): one
  recorded as another's, or as no one's, is never read, written or dropped.
- ``shared``: one Qdrant collection per collection kind
  (``openclaw-memory-root``, ``-dir``, ``-custom``), each point tagged with
  ``tenant = <namespace>/<collection>`` (a keyword index with ``is_tenant``);
  HNSW graphs are built per tenant (``payload_m``, global ``m = 0``) as Qdrant
  recommends for many tenants, and BM25 statistics are computed over the
  tenant only. Point ids are ``uuid5(tenant, id)`` so equal chunks of two
  tenants never collide; the original id travels in the payload and is what
  callers see. A small registry collection records each tenant and its owner.

Local mode (``file:///folder``) runs the same code on qdrant-client's pure-Python
engine, which answers text queries only over the default word tokenizer: there
the text fields use it (no stemming; CJK still matches through the bigram field),
and BM25 statistics in shared tenancy span the whole collection.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import MemoryToolError
from .base import AGENT_FIELD, BATCH, DENSE, PATH_FIELD, TERMS_FIELD, Hit, PointData, folder_bytes, scroll_all
from .server_client import Connection
from .server_config import ServerConfig

if TYPE_CHECKING:
    from qdrant_client.models import ExtendedPointId

TENANT_FIELD = "tenant"
POINT_FIELD = "pointId"  # shared tenancy: the caller's id of a point
_HIDDEN = (TENANT_FIELD, POINT_FIELD)
_SEP = "__"
SHARED_PREFIX = "openclaw-memory-"
REGISTRY = "openclaw-memory-tenants"
_TENANT_NS = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/openclaw/openclaw-memory/tenant")
# This project's entries in a collection's metadata (flat keys: the server merges metadata key by key).
META_NAME, META_NAMESPACE, META_DIM = "ocmName", "ocmNamespace", "ocmDim"
META_SETTINGS, META_FINGERPRINT = "ocmSettingsKey", "ocmFingerprint"
META_OWNER = "ocmOwner"  # the identity of the index that created the collection (server_config.index_identity)


def collection_kind(name: str) -> str:
    """The kind of an agent-scoped collection name, as ``collections`` spells them."""
    for prefix, kind in (("memory-root-", "root"), ("memory-dir-", "dir"), ("custom-", "custom")):
        if name.startswith(prefix):
            return kind
    return "other"


def text_index_params(local: bool) -> dict:
    """The full-text index per field: the ``terms`` field, tokenised by index.terms already, split
    on whitespace as in the embedded engine (the default word tokenizer in local mode)."""
    from qdrant_client import models as m

    tokenizer = m.TokenizerType.WORD if local else m.TokenizerType.WHITESPACE
    return {TERMS_FIELD: m.TextIndexParams(type=m.TextIndexType.TEXT, tokenizer=tokenizer, lowercase=local, scoring=True)}


class ServerStore:
    """Collections on a Qdrant server (or in qdrant-client local mode); see the module docstring."""

    view = None  # each call has the store alone: the server orders concurrent writers, nothing stays open here
    serving = False

    def __init__(self, config: ServerConfig, connection: Connection | None = None):
        self.config = config
        self.conn = connection or Connection(config)
        self.client = self.conn.client
        self.local = self.conn.local
        self.backend = "qdrant-local" if self.local else "qdrant"
        self.shared = config.tenancy == "shared"
        self._ready: dict[str, int] = {}  # physical collection -> vector size, checked this session
        self._tenants: set[str] = set()  # shared tenancy: names registered, checked this session

    # -- names ----------------------------------------------------------------------------

    def physical(self, name: str) -> str:
        """The Qdrant collection holding ``name``."""
        if self.shared:
            return SHARED_PREFIX + collection_kind(name)
        return f"{self.config.namespace}{_SEP}{name}"

    def tenant(self, name: str) -> str:
        return f"{self.config.namespace}/{name}"

    def _call(self, what: str, fn, *args, **kwargs):
        return self.conn.call(what, fn, *args, **kwargs)

    def _collection_exists(self, physical: str) -> bool:
        return bool(self._call(f"a check of collection {physical}", self.client.collection_exists, physical))

    # -- VectorStore ----------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        if not self.shared:
            return self._collection_exists(self.physical(name))
        return self._registry_entry(name) is not None

    def names(self) -> list[str]:
        if self.shared:
            return sorted(e["name"] for e in self._registry_entries())
        listing = self._call("listing collections", self.client.get_collections)
        prefix = f"{self.config.namespace}{_SEP}"
        return sorted(c.name[len(prefix) :] for c in listing.collections if c.name.startswith(prefix))

    def disk_usage(self, name: str) -> int:
        """Bytes on this machine: a local-mode collection's folder; 0 for a server, whose disks are not ours to see."""
        local_path = self.config.local_path
        if not self.local or local_path is None:
            return 0
        return folder_bytes(Path(local_path, "collection", self.physical(name)))

    def stage(self, name: str, dim: int, *, copy: bool) -> str:
        # The server's collections are shared and tenant-filtered: a rebuild is done in place.
        if not copy:
            self.drop(name)
        return name

    def publish(self, staged: str, name: str) -> None:
        return None

    def discard_stages(self, name: str) -> None:
        return None

    def check(self, name: str, expected: int | None = None, *, record: bool = True) -> str | None:
        # The server keeps its own storage sound (and reports failures through its API): nothing to probe.
        return None

    def drop(self, name: str) -> None:
        physical = self.physical(name)
        self._tenants.discard(name)
        if not self.shared:
            self._ready.pop(physical, None)
            if self.config.owner is not None and self._collection_exists(physical):
                info = self._call(f"reading collection {physical}", self.client.get_collection, physical)
                self._check_owner(f"collection {physical}", (info.config.metadata or {}).get(META_OWNER))
            self._call(f"deleting collection {physical}", self.client.delete_collection, physical)
            return
        from qdrant_client import models as m

        entry = self._registry_entry(name) if self.config.owner is not None else None
        if entry is not None:
            self._check_owner(f"tenant {self.tenant(name)}", entry.get("owner"))
        if self._collection_exists(physical):
            self._call(
                f"deleting tenant {self.tenant(name)}",
                self.client.delete,
                physical,
                points_selector=m.FilterSelector(filter=self.tenant_filter(name)),
                wait=True,
            )
        if self._collection_exists(REGISTRY):
            self._call(
                "updating the tenant registry",
                self.client.delete,
                REGISTRY,
                points_selector=m.PointIdsList(points=[self._registry_id(name)]),
                wait=True,
            )

    @contextmanager
    def held(self):
        """Nothing to hold: a server shard costs no load, and the server orders concurrent writers."""
        yield

    def close(self) -> None:
        self.conn.close()

    @contextmanager
    def open(self, name: str, dim: int | None = None, *, keep: bool = True) -> Iterator[ServerShard]:  # (nothing held here)
        physical = self.physical(name)
        if physical not in self._ready:
            self._ready[physical] = self._prepare_collection(name, physical, dim)
        size = self._ready[physical]
        if dim is not None and size != dim:
            raise MemoryToolError(
                f"Qdrant collection {physical} holds {size}-dimension vectors but this index uses {dim} "
                "(another embedding model wrote it): run `openclaw-memory index --full`, or use another "
                "`[index.server] namespace`"
            )
        if self.shared and name not in self._tenants:
            self._prepare_tenant(name, dim, size)
            self._tenants.add(name)
        yield ServerShard(self, name, physical)

    # -- creation -------------------------------------------------------------------------

    def _missing(self, name: str) -> MemoryToolError:
        return MemoryToolError(f"index collection {name} does not exist yet on {self.config.display_url}: run `openclaw-memory index`")

    def _prepare_collection(self, name: str, physical: str, dim: int | None) -> int:
        """Create ``physical`` when missing, check it and add missing indexes; returns its vector size."""
        if not self._collection_exists(physical):
            if dim is None:
                raise self._missing(name)
            self._create(physical, dim, None if self.shared else name)
        info = self._call(f"reading collection {physical}", self.client.get_collection, physical)
        if not self.shared:
            self._check_owner(f"collection {physical}", (info.config.metadata or {}).get(META_OWNER))
        vectors = info.config.params.vectors
        if not isinstance(vectors, dict) or DENSE not in vectors:
            raise MemoryToolError(
                f"Qdrant collection {physical} on {self.config.display_url} was not made by openclaw-memory "
                f"(no `{DENSE}` vector); remove it or choose another `[index.server] namespace`"
            )
        # A writer stopped between creating the collection and its indexes left them missing: add them.
        # (Local mode lists no payload schema, so there they are declared again: it only records them.)
        if not set((info.payload_schema or {}).keys()) >= set(self._indexes()):
            self._create_indexes(physical)
        if not self.shared and dim is not None and (info.config.metadata or {}).get(META_SETTINGS) != self.config.settings_key:
            # The last writer's settings are what doctor compares the local manifest with.
            self._call(
                f"updating collection {physical}", self.client.update_collection, physical, metadata={META_SETTINGS: self.config.settings_key}
            )
        return int(vectors[DENSE].size)

    def _check_owner(self, what: str, recorded: object) -> None:
        """Refuse ``what`` (a collection, or a tenant) recorded as another index's, or as no one's."""
        owner = self.config.owner
        if owner is None or recorded == owner:
            return
        whose = f"another index ({recorded})" if recorded else "no index (written by hand, or by an earlier openclaw-memory)"
        raise MemoryToolError(
            f"Qdrant {what} on {self.config.display_url} is recorded as {whose}'s, not this one's ({owner}): "
            "this index never reads, writes or deletes it; delete it on the server, or set another `[index.server] namespace`"
        )

    def _prepare_tenant(self, name: str, dim: int | None, size: int) -> None:
        entry = self._registry_entry(name)
        if entry is not None:
            self._check_owner(f"tenant {self.tenant(name)}", entry.get("owner"))
        if entry is None:
            if dim is None:
                raise self._missing(name)
            self._register(name, size)
        elif dim is not None and entry.get("settingsKey") != self.config.settings_key:
            self._register(name, size)

    def _indexes(self) -> dict:
        from qdrant_client import models as m

        schemas = dict(text_index_params(self.local))
        schemas[PATH_FIELD] = m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD)
        schemas[AGENT_FIELD] = m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD)
        if self.shared:
            schemas[TENANT_FIELD] = m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD, is_tenant=True)
        return schemas

    def _create(self, physical: str, dim: int, name: str | None) -> None:
        from qdrant_client import models as m

        c = self.config
        if self.shared:  # per-tenant graphs only, as Qdrant advises for many small tenants
            hnsw = m.HnswConfigDiff(m=0, payload_m=c.hnsw_m or 16, ef_construct=c.hnsw_ef_construct)
        elif c.hnsw_m is not None or c.hnsw_ef_construct is not None:
            hnsw = m.HnswConfigDiff(m=c.hnsw_m, ef_construct=c.hnsw_ef_construct)
        else:
            hnsw = None
        metadata = {META_NAMESPACE: c.namespace, META_DIM: dim}
        if c.owner is not None and name is not None:  # a shared collection is every tenant's: its tenants have owners
            metadata[META_OWNER] = c.owner
        if name is not None:
            metadata.update({META_NAME: name, META_SETTINGS: c.settings_key})
        self._call(
            f"creating collection {physical}",
            _create_once,
            self.client,
            physical,
            vectors_config={DENSE: m.VectorParams(size=dim, distance=m.Distance.COSINE)},
            shard_number=c.shard_number,
            replication_factor=c.replication_factor,
            write_consistency_factor=c.write_consistency_factor,
            hnsw_config=hnsw,
            metadata=metadata,
        )
        self._create_indexes(physical)

    def _create_indexes(self, physical: str) -> None:
        for field, schema in self._indexes().items():
            self._call(
                f"creating the {field} index of {physical}",
                self.client.create_payload_index,
                physical,
                field_name=field,
                field_schema=schema,
                wait=True,
            )

    # -- shared tenancy: the registry -----------------------------------------------------

    def tenant_filter(self, name: str):
        from qdrant_client import models as m

        return m.Filter(must=[m.FieldCondition(key=TENANT_FIELD, match=m.MatchValue(value=self.tenant(name)))])

    def point_uuid(self, name: str, point_id: str) -> str:
        """The Qdrant id of ``point_id`` of ``name``: itself, or in shared tenancy one derived from the tenant."""
        if not self.shared:
            return point_id
        return str(uuid.uuid5(_TENANT_NS, f"{self.tenant(name)}\x00{point_id}"))

    def _registry_id(self, name: str) -> str:
        return str(uuid.uuid5(_TENANT_NS, self.tenant(name)))

    def _registry_entry(self, name: str) -> dict | None:
        if not self._collection_exists(REGISTRY):
            return None
        found = self._call("reading the tenant registry", self.client.retrieve, REGISTRY, ids=[self._registry_id(name)], with_payload=True)
        return dict(found[0].payload or {}) if found else None

    def _registry_entries(self) -> list[dict]:
        from qdrant_client import models as m

        if not self._collection_exists(REGISTRY):
            return []
        flt = m.Filter(must=[m.FieldCondition(key="namespace", match=m.MatchValue(value=self.config.namespace))])
        return [dict(p.payload or {}) for p in scroll_all(lambda offset: self._call(
            "reading the tenant registry", self.client.scroll, REGISTRY, scroll_filter=flt, limit=1024, offset=offset,
            with_payload=True))]

    def _register(self, name: str, dim: int) -> None:
        from qdrant_client import models as m

        if not self._collection_exists(REGISTRY):
            self._call("creating the tenant registry", _create_once, self.client, REGISTRY, vectors_config={})
            self._call(
                "creating the registry index",
                self.client.create_payload_index,
                REGISTRY,
                field_name="namespace",
                field_schema=m.KeywordIndexParams(type=m.KeywordIndexType.KEYWORD),
                wait=True,
            )
        payload = {
            "namespace": self.config.namespace,
            "name": name,
            "tenant": self.tenant(name),
            "collection": self.physical(name),
            "dim": dim,
            "settingsKey": self.config.settings_key,
        }
        if self.config.owner is not None:
            payload["owner"] = self.config.owner
        self._call(
            "updating the tenant registry",
            self.client.upsert,
            REGISTRY,
            points=[m.PointStruct(id=self._registry_id(name), vector={}, payload=payload)],
            wait=True,
        )

    def collection_meta(self, name: str) -> dict | None:
        """What the server holds about ``name``: ``dim``, ``settingsKey`` and ``fingerprint`` when recorded; None when missing."""
        if self.shared:
            entry = self._registry_entry(name)
            return None if entry is None else {k: entry.get(k) for k in ("dim", "settingsKey", "fingerprint", "owner")}
        physical = self.physical(name)
        if not self._collection_exists(physical):
            return None
        info = self._call(f"reading collection {physical}", self.client.get_collection, physical)
        meta = info.config.metadata or {}
        vectors = info.config.params.vectors
        dim = vectors[DENSE].size if isinstance(vectors, dict) and DENSE in vectors else None
        return {"dim": dim, "settingsKey": meta.get(META_SETTINGS), "fingerprint": meta.get(META_FINGERPRINT), "owner": meta.get(META_OWNER)}

    def record_fingerprint(self, name: str, fingerprint: str) -> None:
        """Note on the server which embedding fingerprint the vectors of ``name`` have (a migration knows it)."""
        if self.shared:
            from qdrant_client import models as m

            if self._registry_entry(name) is not None:
                self._call(
                    "updating the tenant registry",
                    self.client.set_payload,
                    REGISTRY,
                    payload={"fingerprint": fingerprint},
                    points=m.PointIdsList(points=[self._registry_id(name)]),
                    wait=True,
                )
            return
        physical = self.physical(name)
        self._call(f"updating collection {physical}", self.client.update_collection, physical, metadata={META_FINGERPRINT: fingerprint})

    def server_version(self) -> str:
        """The server's version (``local`` in local mode)."""
        if self.local:
            return "local"
        return str(self._call("reading the server version", self.client.info).version)


def _create_once(client, name: str, **kwargs) -> None:
    """Create a collection; one that already exists (a retry after a lost answer, a concurrent writer) is fine."""
    from qdrant_client.http.exceptions import UnexpectedResponse

    try:
        client.create_collection(name, **kwargs)
    except UnexpectedResponse as exc:
        if exc.status_code == 409 or (exc.status_code == 400 and b"already exists" in (exc.content or b"")):
            return
        raise
    except ValueError as exc:  # local mode
        if "already exists" not in str(exc):
            raise


class ServerShard:
    """One collection (or one tenant of a shared collection); see ``base.Shard`` for the contract."""

    def __init__(self, store: ServerStore, name: str, physical: str):
        self.store = store
        self.name = name
        self.physical = physical
        self.client = store.client

    def _call(self, what: str, fn, *args, **kwargs):
        return self.store.conn.call(f"{what} in {self.physical}", fn, *args, **kwargs)

    def _filter(self, *must, must_not=None):
        from qdrant_client import models as m

        conditions = list(must)
        if self.store.shared:
            conditions += self.store.tenant_filter(self.name).must
        if not conditions and not must_not:
            return None
        return m.Filter(must=conditions or None, must_not=must_not)

    def _ids_condition(self, ids: Iterable[str]):
        from qdrant_client import models as m

        return m.HasIdCondition(has_id=[self.store.point_uuid(self.name, i) for i in ids])

    def _hit(self, point, with_vector: bool = False) -> Hit:
        payload = dict(point.payload or {})
        pid = payload.get(POINT_FIELD, str(point.id)) if self.store.shared else str(point.id)
        for key in _HIDDEN:
            payload.pop(key, None)
        vector = None
        if with_vector and point.vector is not None:
            vector = point.vector[DENSE] if isinstance(point.vector, dict) else point.vector
        return Hit(str(pid), float(getattr(point, "score", 0.0) or 0.0), payload, vector)

    def _payload_selector(self, fields: Sequence[str] | None):
        from qdrant_client import models as m

        if fields is None:
            return True
        wanted = list(fields) + ([POINT_FIELD] if self.store.shared else [])
        return m.PayloadSelectorInclude(include=wanted)

    def upsert(self, points: Sequence[PointData]) -> None:
        from qdrant_client import models as m

        shared = self.store.shared
        for start in range(0, len(points), BATCH):
            batch = []
            for p in points[start : start + BATCH]:
                payload = dict(p.payload)
                if shared:
                    payload[TENANT_FIELD] = self.store.tenant(self.name)
                    payload[POINT_FIELD] = p.id
                batch.append(
                    m.PointStruct(id=self.store.point_uuid(self.name, p.id), vector={DENSE: [float(x) for x in p.vector]}, payload=payload)
                )
            self._call("upsert", self.client.upsert, self.physical, points=batch, wait=True)

    def delete_ids(self, ids: Iterable[str]) -> None:
        from qdrant_client import models as m

        ids = list(ids)
        for start in range(0, len(ids), BATCH):
            # The client's id lists are invariant in their item type, so ours (all str) is declared as theirs.
            chunk: list[ExtendedPointId] = [self.store.point_uuid(self.name, i) for i in ids[start : start + BATCH]]
            self._call("delete", self.client.delete, self.physical, points_selector=m.PointIdsList(points=chunk), wait=True)

    def delete_paths(self, paths: Iterable[str]) -> None:
        from qdrant_client import models as m

        paths = list(paths)
        for start in range(0, len(paths), BATCH):
            cond = m.FieldCondition(key=PATH_FIELD, match=m.MatchAny(any=paths[start : start + BATCH]))
            self._call("delete", self.client.delete, self.physical, points_selector=m.FilterSelector(filter=self._filter(cond)), wait=True)

    def delete_path_except(self, path: str, keep_ids: Iterable[str]) -> None:
        from qdrant_client import models as m

        keep = list(keep_ids)
        cond = m.FieldCondition(key=PATH_FIELD, match=m.MatchValue(value=path))
        flt = self._filter(cond, must_not=[self._ids_condition(keep)] if keep else None)
        self._call("delete", self.client.delete, self.physical, points_selector=m.FilterSelector(filter=flt), wait=True)

    def optimize(self) -> None:
        """Nothing to do: the server's optimizer builds its HNSW graph on its own schedule."""

    def count(self) -> int:
        return int(self._call("count", self.client.count, self.physical, count_filter=self._filter(), exact=True).count)

    def path_counts(self) -> dict[str, int]:
        total = self.count()
        if not total:
            return {}
        facet = self._call("facet", self.client.facet, self.physical, key=PATH_FIELD, facet_filter=self._filter(), limit=total, exact=True)
        return {str(h.value): int(h.count) for h in facet.hits}

    def dense_query(self, vector, limit: int, ids: Sequence[str] | None = None, fields: Sequence[str] | None = None) -> list[Hit]:
        if ids is not None and not ids:
            return []
        result = self._call(
            "query",
            self.client.query_points,
            self.physical,
            query=[float(x) for x in vector],
            using=DENSE,
            query_filter=self._filter(*([self._ids_condition(ids)] if ids is not None else [])),
            limit=limit,
            with_payload=self._payload_selector(fields),
        )
        return [self._hit(p) for p in result.points]

    def text_query(
        self,
        field: str,
        text: str,
        limit: int,
        ids: Sequence[str] | None = None,
        with_vector: bool = False,
        fields: Sequence[str] | None = None,
    ) -> list[Hit]:
        from qdrant_client import models as m

        if (ids is not None and not ids) or not text.strip():
            return []
        params = None
        if self.store.shared and not self.store.local:
            # BM25 statistics over this tenant only, as if it had its own collection.
            params = m.SearchParams(idf=m.IdfCorpusParams(corpus=self.store.tenant_filter(self.name)))
        result = self._call(
            "text query",
            self.client.query_points,
            self.physical,
            query=m.TextQuery(text=text),
            using=field,
            query_filter=self._filter(*([self._ids_condition(ids)] if ids is not None else [])),
            search_params=params,
            limit=limit,
            with_payload=self._payload_selector(fields),
            with_vectors=[DENSE] if with_vector else False,
        )
        return [self._hit(p, with_vector) for p in result.points]

    def retrieve(self, ids: Sequence[str], with_vector: bool = False, fields: Sequence[str] | None = None) -> list[Hit]:
        if not ids:
            return []
        hits = []
        ids = list(ids)
        for start in range(0, len(ids), BATCH):
            chunk = ids[start : start + BATCH]
            physical_ids = {self.store.point_uuid(self.name, i): i for i in chunk}
            points = self._call(
                "retrieve",
                self.client.retrieve,
                self.physical,
                ids=list(physical_ids),
                with_payload=self._payload_selector(fields),
                with_vectors=[DENSE] if with_vector else False,
            )
            for p in points:
                hit = self._hit(p, with_vector)
                hits.append(Hit(physical_ids.get(str(p.id), hit.id), hit.score, hit.payload, hit.vector))
        return hits

    def scroll(self, fields: Sequence[str]) -> Iterator[Hit]:
        selector, flt = self._payload_selector(fields), self._filter()
        pages = scroll_all(lambda offset: self._call("scroll", self.client.scroll, self.physical, scroll_filter=flt,
                                                     limit=1024, offset=offset, with_payload=selector))
        return (self._hit(p) for p in pages)
