"""The Qdrant server backend: store parity with the embedded engine, tenancy, network faults, migration.

No Qdrant server binary can be installed from the package registries these machines
reach, so the backend runs here on qdrant-client's local mode (``QdrantClient(path=...)``,
selected with a ``file:///folder`` URL): the same client API and request models a
server answers, on a pure-Python engine. Local mode answers text queries only with the
default word tokenizer, so where keyword scores are compared with the embedded engine
the notes use words without inflections (stemming then changes nothing). Network
behaviour (retries, timeouts, refused connections, rejected keys) is tested with real
sockets: a refused port, and a real TCP proxy in front of a tiny HTTP endpoint that
answers the few Qdrant REST calls involved, because no server exists here. Everything
runs against a real server when ``OPENCLAW_MEMORY_TEST_QDRANT_URL`` is set.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import fault, settings_for, write
from openclaw_memory.errors import MemoryToolError
from openclaw_memory.index.store.base import AGENT_FIELD, PATH_FIELD, TERMS_FIELD, TEXT_FIELD, PointData
from openclaw_memory.index.store.edge import EdgeStore
from openclaw_memory.index.store.server import ServerStore
from openclaw_memory.index.store.server_client import ServerRejected, ServerUnavailable
from openclaw_memory.index.store.server_config import ServerConfig, server_config
from openclaw_memory.index.terms import keyword_terms
from openclaw_memory.settings import Overrides, resolve_settings
from openclaw_memory.wire import to_json

SERVER_ENV = "OPENCLAW_MEMORY_TEST_QDRANT_URL"


def local_config(folder: Path, **kw) -> ServerConfig:
    return ServerConfig(url=f"file://{folder}", namespace=kw.pop("namespace", "test"), settings_key="k", **kw)


def unit(v: list[float]) -> list[float]:
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


NOTES = [
    ("memory/a.md", "The gateway token lives in the vault", [1, 0.2, 0, 0]),
    ("memory/a.md", "Docker compose runs on the staging host", [0.1, 1, 0, 0.3]),
    ("memory/b.md", "Green tea every morning and no coffee", [0, 0.1, 1, 0]),
    ("memory/b.md", "早上 喝 绿茶", [0, 0, 0.9, 0.4]),  # CJK words spaced: both tokenizers see the same words
    ("memory/c.md", "The gateway port is eight thousand", [0.8, 0, 0.1, 0.5]),
]


def terms(query: str) -> str:
    """A query's keyword terms, as the search sends them to the store."""
    return " ".join(keyword_terms(query))


def points(collection: str = "memory-dir-main") -> list[PointData]:
    out = []
    for i, (path, text, vec) in enumerate(NOTES):
        payload = {
            AGENT_FIELD: "main",
            "collection": collection,
            PATH_FIELD: path,
            "hash": f"h{i}",
            "startLine": i + 1,
            "endLine": i + 2,
            "heading": "",
            TEXT_FIELD: text,
            TERMS_FIELD: " ".join(keyword_terms(text)),
            "body": text,
        }
        out.append(PointData(str(uuid.uuid5(uuid.NAMESPACE_OID, f"{collection}{i}")), unit(vec), payload))
    return out


def observe(store, name: str) -> dict:
    """Everything the Shard contract answers, in a comparable form."""
    ids = [p.id for p in points(name)]
    with store.open(name) as shard:
        hits = lambda hs: [(h.id, round(h.score, 4), h.payload.get(PATH_FIELD)) for h in hs]  # noqa: E731
        return {
            "count": shard.count(),
            "paths": shard.path_counts(),
            "dense": hits(shard.dense_query(unit([1, 0, 0, 0.2]), 3)),
            "dense_ids": hits(shard.dense_query(unit([1, 0, 0, 0.2]), 5, ids=ids[1:3])),
            "text": hits(shard.text_query(TERMS_FIELD, terms("gateway vault"), 5)),
            "text_ids": hits(shard.text_query(TERMS_FIELD, terms("gateway"), 5, ids=ids[4:])),
            "cjk": hits(shard.text_query(TERMS_FIELD, terms("绿茶"), 5)),
            "vectors": [[round(x, 5) for x in h.vector] for h in shard.text_query(TERMS_FIELD, terms("tea"), 5, with_vector=True)],
            "retrieve": sorted((h.id, tuple(sorted(h.payload))) for h in shard.retrieve(ids + ["00000000-0000-0000-0000-000000000000"], fields=["hash"])),
            "scroll": sorted((h.id, h.payload.get("hash")) for h in shard.scroll(["hash"])),
        }


def exercise(store, name: str = "memory-dir-main") -> list[dict]:
    """The sequence of writes an index run makes, with an observation after each step."""
    seen = []
    with store.open(name, dim=4) as shard:
        shard.upsert(points(name))
        shard.upsert(points(name)[:2])  # the same ids again: a retried or resumed write
    seen.append(observe(store, name))
    with store.open(name, dim=4) as shard:
        shard.delete_path_except("memory/a.md", [points(name)[0].id])
        shard.delete_paths(["memory/c.md"])
    seen.append(observe(store, name))
    with store.open(name, dim=4) as shard:
        shard.delete_ids([points(name)[2].id])
    seen.append(observe(store, name))
    return seen


def test_local_mode_store_answers_like_the_embedded_engine(tmp_path):
    edge = EdgeStore(tmp_path / "edge")
    server = ServerStore(local_config(tmp_path / "qdrant"))
    try:
        assert exercise(server) == exercise(edge)
        assert server.names() == edge.names() == ["memory-dir-main"]
        assert server.exists("memory-dir-main") and not server.exists("memory-root-main")
        with pytest.raises(MemoryToolError, match="does not exist yet"):
            with server.open("memory-root-main"):
                pass
        with pytest.raises(MemoryToolError, match="4-dimension vectors but this index uses 8"):
            with server.open("memory-dir-main", dim=8):
                pass
        server.drop("memory-dir-main")
        assert server.names() == [] and not server.exists("memory-dir-main")
    finally:
        server.close()
        edge.close()


def test_shared_tenancy_keeps_agents_and_workspaces_apart(tmp_path):
    folder = tmp_path / "qdrant"
    one = ServerStore(local_config(folder, namespace="ws-one", tenancy="shared"))
    try:
        exercise(one, "memory-dir-main")
        exercise(one, "memory-dir-ops")
    finally:
        one.close()
    # A second workspace with the same collection names and the very same point ids.
    two = ServerStore(local_config(folder, namespace="ws-two", tenancy="shared"))
    try:
        with two.open("memory-dir-main", dim=4) as shard:
            shard.upsert(points("memory-dir-main"))
        assert two.names() == ["memory-dir-main"]
        assert observe(two, "memory-dir-main")["count"] == len(NOTES)
        physical = two.physical("memory-dir-main")
        assert physical == "openclaw-memory-dir"
        total = two.client.count(physical, exact=True).count
        assert total == 2 + 2 + len(NOTES)  # one collection, three tenants, no id collision
        with two.open("memory-dir-main") as shard:
            ids = {h.id for h in shard.scroll(["hash"])}
        assert ids == {p.id for p in points("memory-dir-main")}  # callers see their own ids
        two.drop("memory-dir-main")
        assert two.names() == [] and two.client.count(physical, exact=True).count == 4
    finally:
        two.close()
    one = ServerStore(local_config(folder, namespace="ws-one", tenancy="shared"))
    try:
        assert one.names() == ["memory-dir-main", "memory-dir-ops"]
        after = observe(one, "memory-dir-ops")
        assert after["count"] == 2 and after["paths"] == {"memory/a.md": 1, "memory/b.md": 1}
    finally:
        one.close()


# -- settings ---------------------------------------------------------------------------


def test_url_precedence_and_api_key_sources(workspace, state_dir, tmp_path):
    write(state_dir / "openclaw-memory.toml", '[index]\nbackend = "qdrant"\nurl = "http://toml:6333"\n[index.server]\ntimeout = 3\n')
    flag = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir), qdrant_url="http://flag:6333"), environ={"OPENCLAW_MEMORY_QDRANT_URL": "http://env:6333"})
    env = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={"OPENCLAW_MEMORY_QDRANT_URL": "http://env:6333"})
    toml = resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={})
    assert server_config(flag, environ={}).url == "http://flag:6333"
    assert server_config(env, environ={}).url == "http://env:6333"
    assert server_config(toml, environ={}).url == "http://toml:6333"
    assert server_config(toml, environ={}).timeout == 3.0
    write(state_dir / "openclaw-memory.toml", '[index]\nurl = "http://toml:6333"\n')
    assert server_config(resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir)), environ={}), environ={}) is None

    key_file = write(tmp_path / "key", "s3cret-file\n")
    write(state_dir / "openclaw-memory.toml", f'[index.server]\napi_key_file = "{key_file}"\n')
    s = settings_for(workspace, state_dir, qdrant_url="https://user:pw@db.example:6333")
    from_file = server_config(s, environ={})
    assert from_file.api_key == "s3cret-file" and from_file.api_key_source == f"file {key_file}"
    from_env = server_config(s, environ={"OPENCLAW_MEMORY_QDRANT_API_KEY": "s3cret-env"})
    assert from_env.api_key == "s3cret-env" and from_env.api_key_source == "environment"
    assert "s3cret" not in repr(from_env) and "pw" not in from_env.display_url
    write(state_dir / "openclaw-memory.toml", '[index.server]\napi_key = "inline"\n')
    with pytest.raises(MemoryToolError, match="OPENCLAW_MEMORY_QDRANT_API_KEY"):
        server_config(settings_for(workspace, state_dir, qdrant_url="http://x:6333"), environ={})
    write(state_dir / "openclaw-memory.toml", "")  # the key in the toml stops settings themselves
    with pytest.raises(MemoryToolError, match="not a Qdrant URL"):
        server_config(settings_for(workspace, state_dir, qdrant_url="ftp://x"), environ={})


# -- network faults ---------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeQdrant:
    """A tiny HTTP endpoint answering the few Qdrant REST calls these tests make (no server exists here).

    It only stands in for the far end of a connection: what is tested is the client side
    (retries, timeouts, messages). ``key`` set: requests without that ``api-key`` get 403/401.
    """

    def __init__(self, key: str | None = None):
        self.key = key
        self.requests = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                fake.requests += 1
                given = self.headers.get("api-key")
                if fake.key is not None and given != fake.key:
                    status = 401 if given is None else 403
                    body = {"status": {"error": "Must provide an API key or an Authorization bearer token"}, "time": 0}
                elif self.path.endswith("/exists"):
                    status, body = 200, {"result": {"exists": True}, "status": "ok", "time": 0}
                elif self.path == "/":
                    status, body = 200, {"title": "qdrant - vector search engine", "version": "1.20.0"}
                else:
                    status, body = 404, {"status": {"error": "Not found"}, "time": 0}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class FaultyProxy:
    """A real TCP proxy: ``drop`` the first N connections (closed at once), ``stall`` holds them silent, else forward."""

    def __init__(self, target_port: int, drop: int = 0, stall: int = 0, delay: float = 0.0):
        self.target_port = target_port
        self.drop, self.stall, self.delay = drop, stall, delay
        self.connections = 0
        self._stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self._held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            n = self.connections
            if n <= self.drop:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                conn.close()  # RST: the connection dies before any answer
            elif n <= self.drop + self.stall:
                self._held.append(conn)  # accepted, never answered
            else:
                threading.Thread(target=self._pipe_pair, args=(conn,), daemon=True).start()

    def _pipe_pair(self, client: socket.socket):
        time.sleep(self.delay)
        upstream = socket.create_connection(("127.0.0.1", self.target_port))
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self._stop.set()
        self.sock.close()
        for c in self._held:
            c.close()


def remote_store(port: int, sleeps: list | None = None, **kw) -> ServerStore:
    from openclaw_memory.index.store.server_client import Connection

    config = ServerConfig(url=f"http://127.0.0.1:{port}", namespace="test", settings_key="k", **kw)
    sleep = (lambda s: (sleeps.append(s), time.sleep(s))) if sleeps is not None else time.sleep
    return ServerStore(config, Connection(config, sleep=sleep))


def test_a_url_that_never_answered_and_refuses_is_reported_after_one_quick_retry():
    """Nothing listens there (a typo, a server not started): waiting out the retries mends nothing."""
    sleeps: list[float] = []
    store = remote_store(free_port(), sleeps, retries=5, retry_backoff=2.0, timeout=1)
    try:
        with pytest.raises(ServerUnavailable) as err:
            store.exists("memory-dir-main")
    finally:
        store.close()
    assert "connection refused" in err.value.message and "2 tries" in err.value.message
    assert len(sleeps) == 1 and sleeps[0] <= 0.5


def test_dropped_connections_are_retried_through_a_proxy():
    fake = FakeQdrant()
    proxy = FaultyProxy(fake.port, drop=2)
    store = remote_store(proxy.port, retries=3, retry_backoff=0.01, timeout=2)
    try:
        assert store.exists("memory-dir-main") is True
    finally:
        store.close()
        proxy.close()
        fake.close()
    assert proxy.connections == 3 and fake.requests == 1


def test_a_slow_answer_within_the_timeout_succeeds_and_a_stalled_one_times_out():
    fake = FakeQdrant()
    slow = FaultyProxy(fake.port, delay=0.5)
    store = remote_store(slow.port, retries=0, timeout=2)
    try:
        assert store.exists("memory-dir-main") is True
    finally:
        store.close()
        slow.close()
    stalled = FaultyProxy(fake.port, stall=10)
    store = remote_store(stalled.port, retries=1, retry_backoff=0.01, timeout=1)
    started = time.monotonic()
    try:
        with pytest.raises(ServerUnavailable, match="no answer in time") as err:
            store.exists("memory-dir-main")
    finally:
        store.close()
        stalled.close()
        fake.close()
    assert time.monotonic() - started >= 2 * 1.0  # two tries, each waited out its timeout
    assert "2 tries" in err.value.message and stalled.connections == 2


def test_rejected_and_missing_keys_are_clear_cli_errors(cli):
    fake = FakeQdrant(key="right-key")
    url = f"http://127.0.0.1:{fake.port}"
    try:
        wrong = cli("index", "--qdrant-url", url, "--json", env={"OPENCLAW_MEMORY_QDRANT_API_KEY": "wrong-key"})
        none = cli("status", "--qdrant-url", url)
        store = remote_store(fake.port, retries=3, api_key="wrong-key")
        with pytest.raises(ServerRejected, match="rejected the API key"):
            store.exists("memory-dir-main")
        store.close()
    finally:
        fake.close()
    assert fake.requests == 3  # two CLI calls and one direct: a refused key is never retried
    assert wrong.returncode == 2 and none.returncode == 2
    assert "rejected the API key from environment (HTTP 403)" in wrong.json()["error"]
    assert "requires an API key (HTTP 401)" in none.stderr
    for r in (wrong, none):
        assert "Traceback" not in r.stderr and "wrong-key" not in r.stdout + r.stderr


def test_unreachable_server_is_a_clear_cli_error(cli, state_dir):
    write(state_dir / "openclaw-memory.toml", "[index.server]\nretries = 1\nretry_backoff = 0.01\n")
    r = cli("index", "--qdrant-url", f"http://127.0.0.1:{free_port()}", "--json")
    assert r.returncode == 1, r.stderr
    assert "cannot reach the Qdrant server" in r.json()["error"] and "connection refused" in r.json()["error"]
    assert "Traceback" not in r.stderr
    bad = cli("status", "--qdrant-url", "qdrant.example.com")
    assert bad.returncode == 2 and "not a Qdrant URL" in bad.stderr and "Traceback" not in bad.stderr


def test_server_findings_report_missing_and_mismatched_collections(workspace, state_dir, tmp_path):
    import dataclasses

    from openclaw_memory.index.manifest import Manifest, save_manifest
    from openclaw_memory.index.store.server_health import server_findings, server_report

    url = f"file://{tmp_path / 'qdrant'}"
    s = settings_for(workspace, state_dir, qdrant_url=url)
    assert server_findings(settings_for(workspace, state_dir)) == []  # embedded engine: nothing to say
    for name, dim in (("memory-root-main", 4), ("memory-dir-main", 8)):
        save_manifest(s.data_dir, Manifest(name, "main", fingerprint="fp", settings_key="k", dim=dim))
    store = ServerStore(server_config(s))
    with store.open("memory-dir-main", dim=4) as shard:
        shard.upsert(points())
    store.close()
    found = {f.id: f for f in server_findings(s)}
    assert found["qdrant-collection-missing"].paths == ("memory-root-main",)
    assert found["qdrant-collection-dimension"].paths == ("memory-dir-main",)
    assert all(set(to_json(f)) == {"id", "severity", "message", "fixable", "paths"} for f in found.values())
    report = server_report(s)
    assert report["backend"] == "qdrant-local" and report["reachable"]
    write(state_dir / "openclaw-memory.toml", "[index.server]\nretries = 0\n")
    down = dataclasses.replace(settings_for(workspace, state_dir), qdrant_url=f"http://127.0.0.1:{free_port()}")
    (unreachable,) = server_findings(down)
    assert unreachable.id == "qdrant-unreachable" and unreachable.severity == "error"


# -- indexing and search through the backend -------------------------------------------

# Words without inflected variants: the embedded engine's English stemmer and local
# mode's plain word tokenizer then see the same terms, so BM25 agrees exactly.
WORKSPACE_NOTES = {
    "MEMORY.md": "# Memory\n\nThe user likes green tea and dislikes coffee.\n\n## Work\n\nThe gateway token lives in the vault.\n",
    "memory/infra.md": "# Infra\n\nDocker compose runs on the staging host.\n\nThe gateway port is eight thousand.\n",
    "memory/trip.md": "# Trip\n\nFlight to Tokyo on Friday, hotel in Shinjuku near the station.\n",
    "memory/cook.md": "# Cook\n\nRecipe: rice, miso soup, green onion, tofu.\n",
}
QUERIES = ["gateway token", "green tea", "Tokyo hotel", "miso soup recipe", "staging host"]


def fill(ws: Path) -> None:
    for rel, text in WORKSPACE_NOTES.items():
        write(ws / rel, text)


def search_all(index, modes=("vector", "text", "hybrid")) -> dict:
    return {f"{m}:{q}": to_json(index.search(q, mode=m, limit=5, min_score=0.0)) for q in QUERIES for m in modes}


@pytest.fixture(scope="module")
def models():
    """The hash embedder: what is compared is the two engines, fed the same vectors."""
    from openclaw_memory.index.config import IndexConfig
    from openclaw_memory.index.lender import Models

    return Models(IndexConfig(embedding_backend="hash"))


def test_index_and_search_through_local_mode_match_the_embedded_engine(tmp_path, models):
    from openclaw_memory.index.api import MemoryIndex

    ws = tmp_path / "ws"
    fill(ws)
    results = {}
    for label, url in (("edge", None), ("local", f"file://{tmp_path / 'qdrant'}")):
        (tmp_path / label).mkdir()
        with MemoryIndex(settings_for(ws, tmp_path / label, qdrant_url=url), models=models) as index:
            summary = index.sync()
            assert summary.chunks_embedded > 0
            results[label] = search_all(index)
            assert index.status().backend == ("edge" if url is None else "qdrant-local")
    assert results["local"] == results["edge"]
    assert any(r["results"] for r in results["edge"].values())


def test_network_failure_mid_index_is_completed_by_the_next_run(workspace, state_dir, cli, tmp_path):
    from openclaw_memory.index.collections import resolve_collections
    from openclaw_memory.index.manifest import load_manifest

    for i in range(6):
        write(workspace / "memory" / f"day{i}.md", f"# Day {i}\n\nNote number {i} about the project.\n")
    write(state_dir / "openclaw-memory.toml", "[index]\nembed_batch = 2\n[index.server]\nretries = 1\nretry_backoff = 0.01\n")
    url = f"file://{tmp_path / 'qdrant'}"
    broken = cli("index", "--qdrant-url", url, env=fault("qdrant:upsert:3=fail"))
    assert broken.returncode == 1 and "simulated network failure" in broken.stderr and "Traceback" not in broken.stderr
    done = cli("index", "--qdrant-url", url, "--json")
    assert done.returncode == 0, done.stderr
    s = settings_for(workspace, state_dir, qdrant_url=url)
    store = ServerStore(server_config(s))
    try:
        for c in resolve_collections(s):
            manifest = load_manifest(s.data_dir, c.name)
            expected = {pid for entry in manifest.files.values() for pid, _h in entry.chunks}
            with store.open(c.name) as shard:
                stored = [h.id for h in shard.scroll([PATH_FIELD])]
                assert shard.count() == len(stored)
            assert sorted(stored) == sorted(expected)  # every chunk once: no duplicate, no orphan
    finally:
        store.close()
    again = cli("index", "--qdrant-url", url, "--json").json()
    assert again["chunksEmbedded"] == 0 and again["filesChanged"] == 0


def test_migration_round_trip_keeps_search_results_and_resumes(workspace, state_dir, cli, tmp_path):
    import shutil

    fill(workspace)
    assert cli("index", "--json").returncode == 0
    queries = [("gateway token", "hybrid"), ("green tea", "text"), ("Tokyo hotel", "vector")]

    def results(*extra):
        out = []
        for q, mode in queries:
            r = cli("search", q, "--mode", mode, "--min-score", "0", "--no-sync", "--json", *extra)
            assert r.returncode == 0, r.stderr
            out.append(r.json())
        return out

    before = results()
    url = f"file://{tmp_path / 'qdrant'}"
    partial = cli("migrate", "--to", url, "--json", env=fault("qdrant:upsert:2=fail"))
    assert partial.returncode == 1 and "simulated network failure" in partial.json()["error"]
    assert "Traceback" not in partial.stderr
    resumed = cli("migrate", "--to", url, "--json")
    assert resumed.returncode == 0, resumed.stderr
    report = resumed.json()
    # The collection verified before the failure is only re-counted; the other is copied now.
    assert [c["skippedAsDone"] for c in report["collections"]] == [True, False]
    assert report["verified"] and report["points"] > 0
    assert results("--qdrant-url", url) == before

    # Lose the embedded engine's shards; the copy back brings every point, with its vector.
    (edge_dir,) = (state_dir / "openclaw-memory" / "workspaces").glob("*/index/edge")
    shutil.rmtree(edge_dir)
    restored = cli("migrate", "--to", "embedded", "--from", url, "--json")
    assert restored.returncode == 0, restored.stderr
    assert sum(c["copied"] for c in restored.json()["collections"]) == report["points"]
    assert results() == before
    reindex = cli("index", "--json").json()
    assert reindex["chunksEmbedded"] == 0 and reindex["filesChanged"] == 0


@pytest.mark.skipif(not os.environ.get(SERVER_ENV), reason=f"no Qdrant server: set {SERVER_ENV}=http://HOST:6333 to run against one")
@pytest.mark.parametrize("tenancy", ["collection", "shared"])
def test_against_a_real_server(tmp_path, models, tenancy):
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.index.store.server_health import server_findings

    ws = tmp_path / "ws"
    fill(ws)
    write(ws / "memory" / "inflected.md", "# Drinks\n\nThe user was drinking teas; 我每天早上喜欢喝绿茶。\n")
    namespace = f"test-{uuid.uuid4().hex[:12]}"
    write(tmp_path / "srv" / "openclaw-memory.toml", f'[index.server]\nnamespace = "{namespace}"\ntenancy = "{tenancy}"\n')
    (tmp_path / "edge").mkdir()
    with MemoryIndex(settings_for(ws, tmp_path / "edge"), models=models) as index:
        index.sync()
        expected = search_all(index)
        expected["drinks"] = to_json(index.search("drinks tea", mode="hybrid"))
        expected["cjk"] = to_json(index.search("喝茶", mode="text"))
    s = settings_for(ws, tmp_path / "srv", qdrant_url=os.environ[SERVER_ENV])
    with MemoryIndex(s, models=models) as index:
        try:
            index.sync()
            got = search_all(index)
            got["drinks"] = to_json(index.search("drinks tea", mode="hybrid"))
            got["cjk"] = to_json(index.search("喝茶", mode="text"))
            assert got == expected  # the same engine core: exact parity, stemming and CJK included
            assert server_findings(s) == []
        finally:
            for name in index.store.names():
                index.store.drop(name)


# -- two indexes on one server never meet -----------------------------------------------

def _two_state_dirs(tmp_path: Path, toml: str) -> tuple[Path, Path]:
    dirs = []
    for label in ("st-a", "st-b"):
        folder = tmp_path / label
        folder.mkdir(mode=0o700)
        write(folder / "openclaw-memory.toml", toml)
        dirs.append(folder)
    return dirs[0], dirs[1]


def _paths(result) -> list[str]:
    assert result.returncode == 0, result.stderr
    return sorted({r["path"] for r in result.json()["results"]})


@pytest.mark.parametrize("tenancy", ["collection", "shared"])
def test_two_data_dirs_of_one_workspace_path_never_read_each_others_points(workspace, cli, tmp_path, tenancy):
    """Two machines or containers with the same workspace path (the default namespace was the
    data folder's name, made of that path alone): one state dir each, one server. Each answers
    from its own notes only, before and after the other wrote."""
    url = f"file://{tmp_path / 'qdrant'}"
    st_a, st_b = _two_state_dirs(tmp_path, f'[index]\nbackend = "qdrant"\nurl = "{url}"\n[index.server]\ntenancy = "{tenancy}"\n')
    env_a, env_b = {"OPENCLAW_STATE_DIR": str(st_a)}, {"OPENCLAW_STATE_DIR": str(st_b)}
    assert settings_for(workspace, st_a).data_dir.name == settings_for(workspace, st_b).data_dir.name
    write(workspace / "MEMORY.md", "# Alice\n\nThe bank code is kept in the drawer.\n")
    assert cli("index", "--json", env=env_a).returncode == 0
    write(workspace / "MEMORY.md", "# Bob\n\nBuy groceries on the way home.\n")
    assert cli("index", "--json", env=env_b).returncode == 0
    assert _paths(cli("search", "bank drawer", "--json", "--mode", "text", env=env_b)) == []  # alice's note is not bob's
    assert _paths(cli("search", "groceries", "--json", "--mode", "text", env=env_b)) == ["MEMORY.md"]
    write(workspace / "MEMORY.md", "# Alice\n\nThe bank code is kept in the drawer.\n")
    assert _paths(cli("search", "groceries", "--json", "--mode", "text", "--no-sync", env=env_a)) == []
    assert _paths(cli("search", "bank drawer", "--json", "--mode", "text", "--no-sync", env=env_a)) == ["MEMORY.md"]
    doctor = cli("doctor", "--json", env=env_a)
    assert not [f for f in doctor.json()["findings"] if f["id"].startswith("qdrant-")], doctor.stdout


def test_a_rebuild_of_the_damaged_state_database_keeps_the_index_identity(workspace, state_dir, cli, tmp_path):
    """doctor --fix's rebuild left the identity out: the next index made a new one, built new
    collections, and left the old ones (every note's text) on the server, named by nothing."""
    import sqlite3

    from openclaw_memory.database.connection import forget_connections

    url = f"file://{tmp_path / 'qdrant'}"
    write(state_dir / "openclaw-memory.toml", f'[index]\nbackend = "qdrant"\nurl = "{url}"\n')
    write(workspace / "MEMORY.md", "# Memory\n\nThe boat is at pier four.\n")
    for i in range(40):
        write(workspace / "memory" / f"n{i}.md", f"note {i}\n")
    assert cli("index").returncode == 0 and cli("watchdog", "snapshot").returncode == 0
    db = settings_for(workspace, state_dir).data_dir / "state.db"
    forget_connections()
    conn = sqlite3.connect(db)
    (identity,) = conn.execute("SELECT value FROM server_identity").fetchone()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    collections = sorted(os.listdir(tmp_path / "qdrant" / "collection"))
    with open(db, "r+b") as fh:
        fh.seek(4096 * 20)
        fh.write(b"\xff" * 4096)
    fixed = cli("doctor", "--fix", "--json")
    assert "1 server_identity; every row was recovered" in fixed.stdout, fixed.stdout
    assert cli("index").returncode == 0
    forget_connections()
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM server_identity").fetchone() == (identity,)
    conn.close()
    assert sorted(os.listdir(tmp_path / "qdrant" / "collection")) == collections
    assert _paths(cli("search", "boat pier", "--json", "--mode", "text")) == ["MEMORY.md"]


def test_one_configured_namespace_for_two_workspaces_keeps_them_apart(cli, tmp_path, state_dir):
    """scaling.md's `namespace = "team-memory"` in a state dir's toml applies to every workspace of it:
    two workspaces whose agents are both `main` each answer from their own notes."""
    url = f"file://{tmp_path / 'qdrant'}"
    write(state_dir / "openclaw-memory.toml", f'[index]\nbackend = "qdrant"\nurl = "{url}"\n[index.server]\nnamespace = "team-memory"\n')
    ws, ws3 = tmp_path / "ws", tmp_path / "ws3"
    write(ws / "MEMORY.md", "# Charlie\n\nThe alarm code is in the safe.\n")
    write(ws3 / "MEMORY.md", "# Dana\n\nWater the orchids on Sunday.\n")
    assert cli("index", "-w", str(ws)).returncode == 0
    assert cli("index", "-w", str(ws3)).returncode == 0
    assert _paths(cli("search", "orchids", "--json", "--mode", "text", "-w", str(ws))) == []
    assert _paths(cli("search", "alarm safe", "--json", "--mode", "text", "-w", str(ws))) == ["MEMORY.md"]
    assert _paths(cli("search", "alarm safe", "--json", "--mode", "text", "-w", str(ws3))) == []


@pytest.mark.parametrize("tenancy", ["collection", "shared"])
def test_a_collection_recorded_as_another_index_is_refused_and_reported(workspace, state_dir, cli, tmp_path, tenancy):
    """A collection (or tenant) at this index's name that another index created (or someone by hand)
    is never read, written or dropped: one line says so, and doctor reports it."""
    from openclaw_memory.index.store.server_health import server_findings

    url = f"file://{tmp_path / 'qdrant'}"
    write(state_dir / "openclaw-memory.toml", f'[index]\nbackend = "qdrant"\nurl = "{url}"\n[index.server]\ntenancy = "{tenancy}"\n')
    write(workspace / "MEMORY.md", "# Mine\n\nThe boat is moored at pier four.\n")
    s = settings_for(workspace, state_dir)
    mine = server_config(s)
    assert mine is not None and mine.owner is not None and mine.namespace.endswith("-" + mine.owner[:12])
    assert server_config(s) == mine  # made once, kept
    other = ServerStore(dataclasses.replace(mine, owner=uuid.uuid4().hex))
    with other.open("memory-root-main", dim=4) as shard:
        shard.upsert(points("memory-root-main"))
    other.close()
    for args in (("search", "boat"), ("index",), ("index", "--full")):
        r = cli(*args)
        assert r.returncode == 1 and "is recorded as another index" in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
        assert [line for line in r.stderr.splitlines() if "recorded as" in line or "Traceback" in line] == [r.stderr.splitlines()[-1]]
    (finding,) = [f for f in server_findings(s) if f.id.startswith("qdrant-")]
    assert finding.id == "qdrant-collection-foreign" and finding.paths == ("memory-root-main",)
    with ServerStore(dataclasses.replace(mine, owner=None)).open("memory-root-main") as shard:
        assert shard.count() == len(NOTES)  # the other's points are all there: nothing was dropped


def _sharing_on_purpose(workspace, cli, tmp_path, *extra: str) -> tuple[dict, dict]:
    """Machine A (one state dir) indexed the workspace (and ``extra`` paths) into a `team` namespace; B
    (another state dir) shares that index on purpose (OPENCLAW_MEMORY_QDRANT_INDEX_ID). Their envs."""
    from openclaw_memory.database.connection import Database

    url = f"file://{tmp_path / 'qdrant'}"
    st_a, st_b = _two_state_dirs(tmp_path, f'[index]\nbackend = "qdrant"\nurl = "{url}"\n[index.server]\nnamespace = "team"\n')
    write(workspace / "MEMORY.md", "# Shared\n\nThe release train leaves on Thursday.\n")
    env_a = {"OPENCLAW_STATE_DIR": str(st_a)}
    assert cli("index", *[f"--extra={e}" for e in extra], env=env_a).returncode == 0
    (identity,) = Database(settings_for(workspace, st_a).data_dir).one("SELECT value FROM server_identity")
    return env_a, {"OPENCLAW_STATE_DIR": str(st_b), "OPENCLAW_MEMORY_QDRANT_INDEX_ID": identity}


def test_one_index_shared_by_two_machines_on_purpose(workspace, cli, tmp_path):
    """The same namespace and the same identity (OPENCLAW_MEMORY_QDRANT_INDEX_ID) on two machines: one
    writes, the other searches its collections."""
    _, env_b = _sharing_on_purpose(workspace, cli, tmp_path)
    assert cli("index", env=env_b).returncode == 0
    assert _paths(cli("search", "release train", "--json", "--mode", "text", "--no-sync", env=env_b)) == ["MEMORY.md"]
    bad = cli("search", "release", env={**env_b, "OPENCLAW_MEMORY_QDRANT_INDEX_ID": "not-an-id"})
    assert bad.returncode == 2 and "32 hexadecimal digits" in bad.stderr


def test_a_machine_sharing_an_index_is_told_to_index_once_not_that_its_index_was_interrupted(workspace, cli, tmp_path):
    # B's first `search --no-sync` said "the first index ... was interrupted": B never ran one.
    _, env_b = _sharing_on_purpose(workspace, cli, tmp_path)
    first = cli("search", "release train", "--mode", "text", "--no-sync", env=env_b)
    assert first.returncode == 1 and "interrupted" not in first.stderr, first.stderr
    assert "OPENCLAW_MEMORY_QDRANT_INDEX_ID shares was built by another state dir" in first.stderr
    assert "run `openclaw-memory index` once here (it embeds nothing the server holds already)" in first.stderr
    done = cli("index", "--json", env=env_b)
    assert (done.json()["chunksEmbedded"], done.json()["chunksReused"]) == (0, 1)
    assert _paths(cli("search", "release train", "--json", "--mode", "text", "--no-sync", env=env_b)) == ["MEMORY.md"]


def test_doctor_fix_on_a_machine_sharing_an_index_never_removes_the_others_collections(workspace, cli, tmp_path):
    """B's doctor --fix took every collection its state dir had no record of for an orphan: before B's
    first index, all of them (A's next search found no index), after it, those of an extra path A alone has."""
    notes = tmp_path / "notes"
    write(notes / "n.md", "# Notes\n\nThe ferry timetable changes in May.\n")
    env_a, env_b = _sharing_on_purpose(workspace, cli, tmp_path, str(notes))
    for _ in range(2):  # before B's first index, and after it
        fixed = cli("doctor", "--fix", "--json", env=env_b)
        assert "removed" not in fixed.stdout, fixed.stdout
        assert _paths(cli("search", "release train", "--json", "--mode", "text", "--no-sync", env=env_a)) == ["MEMORY.md"]
        assert _paths(cli("search", "ferry timetable", "--json", "--mode", "text", "--no-sync", "--extra", str(notes),
                          env=env_a)) == [os.path.relpath(notes / "n.md", workspace)]
        assert cli("index", env=env_b).returncode == 0
    # B indexed the extra path too, then stopped using it: A still searches it.
    assert cli("index", "--extra", str(notes), env=env_b).returncode == 0
    fixed = cli("doctor", "--fix", "--json", env=env_b)
    assert "removed" not in fixed.stdout, fixed.stdout
    assert _paths(cli("search", "ferry timetable", "--json", "--mode", "text", "--no-sync", "--extra", str(notes),
                      env=env_a)) == [os.path.relpath(notes / "n.md", workspace)]
