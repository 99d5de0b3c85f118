"""Store costs side by side: the embedded engine (Qdrant Edge) against qdrant-client's local mode.

Local mode runs the server backend's code on a pure-Python engine; it is *not* a Qdrant
server (a server runs the same Rust core as Qdrant Edge, plus the network). The figures
show what the backend's own overhead and local mode cost, on the same points: real text
from the corpus (for BM25), random unit vectors of 384 dimensions (no model needed).
With ``OPENCLAW_MEMORY_TEST_QDRANT_URL`` set, a real server is measured as well.

    .venv/bin/python bench/server_backend.py [points]
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _common import CORPUS, median, pct

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from openclaw_memory.index.store.base import AGENT_FIELD, PATH_FIELD, TERMS_FIELD, TEXT_FIELD, PointData  # noqa: E402
from openclaw_memory.index.store.edge import EdgeStore  # noqa: E402
from openclaw_memory.index.store.server import ServerStore  # noqa: E402
from openclaw_memory.index.store.server_config import ServerConfig  # noqa: E402
from openclaw_memory.index.terms import keyword_terms  # noqa: E402

DIM = 384
QUERIES = ["gateway token", "install plugins", "telegram bot", "restart the daemon", "memory search", "cron jobs", "sandbox", "oauth login"]


def unit(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def corpus_points(n: int) -> list[PointData]:
    rng = random.Random(7)
    texts = []
    for f in sorted(CORPUS.rglob("*.md")):
        paragraphs = [p.strip() for p in f.read_text(encoding="utf-8", errors="replace").split("\n\n") if p.strip()]
        texts.extend((str(f.relative_to(CORPUS)), p[:1500]) for p in paragraphs)
        if len(texts) >= n:
            break
    return [
        PointData(
            str(uuid.uuid5(uuid.NAMESPACE_OID, f"bench{i}")),
            unit(rng),
            {AGENT_FIELD: "main", PATH_FIELD: path, TEXT_FIELD: text, TERMS_FIELD: " ".join(keyword_terms(text)), "body": text, "hash": str(i)},
        )
        for i, (path, text) in enumerate(texts[:n])
    ]


def measure(label: str, store, pts: list[PointData]) -> dict:
    rng = random.Random(3)
    name = "memory-dir-bench"
    started = time.perf_counter()
    with store.open(name, dim=DIM) as shard:
        shard.upsert(pts)
    upsert = time.perf_counter() - started
    dense, text = [], []
    with store.open(name) as shard:
        for i in range(40):
            vec = unit(rng)
            t = time.perf_counter()
            shard.dense_query(vec, 24)
            dense.append(time.perf_counter() - t)
            t = time.perf_counter()
            shard.text_query(TEXT_FIELD, QUERIES[i % len(QUERIES)], 24)
            text.append(time.perf_counter() - t)
    store.drop(name)
    store.close()
    return {
        "label": label,
        "upsert_pts_s": len(pts) / upsert,
        "dense_p50_ms": median(dense) * 1000,
        "dense_p95_ms": pct(dense, 95) * 1000,
        "text_p50_ms": median(text) * 1000,
        "text_p95_ms": pct(text, 95) * 1000,
    }


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    pts = corpus_points(n)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            measure("Qdrant Edge (embedded)", EdgeStore(Path(tmp) / "edge"), pts),
            measure("qdrant-client local mode", ServerStore(ServerConfig(url=f"file://{tmp}/local", namespace="bench", settings_key="")), pts),
        ]
        url = os.environ.get("OPENCLAW_MEMORY_TEST_QDRANT_URL")
        if url:
            rows.append(measure(f"Qdrant server {url}", ServerStore(ServerConfig(url=url, namespace=f"bench-{uuid.uuid4().hex[:8]}", settings_key="")), pts))
    print(f"{len(pts)} points, {DIM} dims, 40 queries each, limit 24")
    print(f"{'store':34} {'upsert pts/s':>12} {'dense p50':>10} {'dense p95':>10} {'text p50':>10} {'text p95':>10}")
    for r in rows:
        print(
            f"{r['label']:34} {r['upsert_pts_s']:12.0f} {r['dense_p50_ms']:8.1f}ms {r['dense_p95_ms']:8.1f}ms "
            f"{r['text_p50_ms']:8.1f}ms {r['text_p95_ms']:8.1f}ms"
        )


if __name__ == "__main__":
    main()
