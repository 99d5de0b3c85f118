"""Search benchmark on the OpenClaw docs corpus (figures, not a test).

1. Cold ``openclaw-memory search`` in a new process (hybrid, model load included).
   Target <= 1.5 s.
2. Warm query latency (model loaded, shards kept open), p50/p95 over 100 queries,
   on the corpus and on a synthetic 100,000-chunk collection. Target p50 <= 20 ms hybrid.
3. Quality on bench/queries.json: recall@5 and MRR (over distinct files) for text,
   vector and hybrid with every result kept (bench/quality.py measures the defaults).

Usage: .venv/bin/python bench/search.py [--embedding-backend auto|torch|onnx] [--skip-synthetic] [--reuse]
"""

from __future__ import annotations

import argparse
import json
import random
import time
import uuid
from pathlib import Path

from _common import cli, fresh_workspace, median, pct, settings_for

QUERIES = json.loads((Path(__file__).parent / "queries.json").read_text(encoding="utf-8"))["queries"]


def build(backend: str, reuse: bool):
    from _common import ROOT

    from openclaw_memory.index.api import MemoryIndex

    ws, state = ROOT / f"search-{backend}" / "ws", ROOT / f"search-{backend}" / "state"
    if not (reuse and (state / "openclaw-memory.toml").is_file()):
        ws, state = fresh_workspace(f"search-{backend}")
        (state / "openclaw-memory.toml").write_text(f'[index]\nembedding_backend = "{backend}"\n', encoding="utf-8")
    settings = settings_for(ws, state)
    index = MemoryIndex(settings, keep_open=True)
    t0 = time.perf_counter()
    s = index.sync()
    print(f"[{backend}] indexed {s.files_scanned} files, {s.chunks_embedded} chunks in {time.perf_counter() - t0:.1f} s "
          f"(embedding backend {index.models.embedder.backend})")
    return ws, state, index


def latency(index, queries: list[str], mode: str) -> tuple[float, float]:
    times = []
    for q in queries:
        t0 = time.perf_counter()
        index.search(q, mode=mode, sync=False)
        times.append((time.perf_counter() - t0) * 1000)
    return median(times), pct(times, 95)


def quality(index) -> None:
    """Recall@5 and MRR per mode, with every result kept (min_score 0); bench/quality.py runs the defaults."""
    modes = {"text": [], "vector": [], "hybrid": []}
    for item in QUERIES:
        relevant = {f"memory/{f}" for f in item["files"]}
        for mode in modes:
            res = index.search(item["q"], limit=20, min_score=0.0, mode=mode, sync=False)
            modes[mode].append(_rank([r.path for r in res.results], relevant))
    print(f"quality over {len(QUERIES)} queries (distinct files; recall@5 = a relevant file in the top 5):")
    for mode, ranks in modes.items():
        print(f"  search --mode {mode:7s} recall@5 {_recall(ranks):.3f}  MRR {_mrr(ranks):.3f}")


def _rank(paths: list[str], relevant: set[str]) -> int | None:
    seen = []
    for p in paths:
        if p not in seen:
            seen.append(p)
    for i, p in enumerate(seen, start=1):
        if p in relevant:
            return i
    return None


def _recall(ranks) -> float:
    return sum(1 for r in ranks if r is not None and r <= 5) / len(ranks)


def _mrr(ranks) -> float:
    return sum(1 / r for r in ranks if r is not None) / len(ranks)


def synthetic(index_model, n: int = 100_000) -> None:
    """A collection of ``n`` random chunks (random unit vectors, words drawn from the corpus)."""
    import numpy as np
    from _common import ROOT

    from openclaw_memory.database import Database
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.index.bm25 import count_stats, save_stats
    from openclaw_memory.index.config import IndexConfig
    from openclaw_memory.index.manifest import Manifest, write_manifest
    from openclaw_memory.index.store.base import TERMS_FIELD, PointData
    from openclaw_memory.index.terms import keyword_terms

    base = ROOT / "synthetic"
    import shutil

    shutil.rmtree(base, ignore_errors=True)
    ws, state = base / "ws", base / "state"
    ws.mkdir(parents=True)
    state.mkdir()
    settings = settings_for(ws, state)
    index = MemoryIndex(settings, keep_open=True, models=index_model)
    name = "memory-dir-main"
    from openclaw_memory.index.collections import resolve_collections

    resolve_collections(settings, register=True)
    words = [w for q in QUERIES for w in q["q"].split()] + [f"w{i}" for i in range(5000)]
    rng = np.random.default_rng(7)
    dim = index.models.embedder.dim
    t0 = time.perf_counter()
    with index.store.open(name, dim=dim) as shard:
        for start in range(0, n, 5000):
            vecs = rng.standard_normal((5000, dim)).astype("float32")
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            points = []
            for i in range(5000):
                text = " ".join(random.choices(words, k=120))
                points.append(PointData(str(uuid.uuid4()), vecs[i], {
                    "agent": "main", "collection": name, "path": f"memory/s{(start + i) // 10}.md", "hash": str(start + i),
                    "startLine": 1, "endLine": 10, "heading": "", "kind": "section", "text": text,
                    TERMS_FIELD: " ".join(keyword_terms(text)), "body": text}))
            shard.upsert(points)
        t1 = time.perf_counter()
        shard.optimize()  # what `index` does after writing: builds the HNSW graph
        print(f"synthetic: HNSW build (optimize) {time.perf_counter() - t1:.1f} s")
        stats = count_stats(h.payload.get(TERMS_FIELD, "") for h in shard.scroll([TERMS_FIELD]))
    m = Manifest(name, "main", fingerprint="synthetic", settings_key=IndexConfig().settings_key, model="synthetic",
                 store_backend="edge", dim=dim)
    with Database(settings.data_dir).transaction() as conn:
        write_manifest(conn, m, None)
        save_stats(conn, name, stats)
    print(f"synthetic {n} chunks written in {time.perf_counter() - t0:.1f} s")
    qs = [q["q"] for q in QUERIES]
    qs = (qs * 3)[:100]
    for mode in ("hybrid", "vector", "text"):
        index.search(qs[0], mode=mode, sync=False)
        p50, p95 = latency(index, qs, mode)
        print(f"warm {mode:6s} on {n} chunks: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms")
    index.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedding-backend", default="auto")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="keep the index of an earlier run (incremental sync)")
    args = parser.parse_args()
    ws, state, index = build(args.embedding_backend, args.reuse)

    quality(index)
    qs = [q["q"] for q in QUERIES]
    qs = (qs * 3)[:100]
    for mode in ("hybrid", "vector", "text"):
        p50, p95 = latency(index, qs, mode)
        print(f"warm {mode:6s} on the corpus: p50 {p50:6.1f} ms  p95 {p95:6.1f} ms")
    models = index.models
    index.close()

    walls = {}
    for mode in ("hybrid", "text"):
        walls[mode] = [cli(ws, state, "search", "how do I back up my workspace", "--mode", mode, "--json")[0] for _ in range(3)]
        print(f"cold `openclaw-memory search --mode {mode}` (new process): median {median(walls[mode]):.2f} s, "
              f"min {min(walls[mode]):.2f} s" + ("   (target <= 1.5 s)" if mode == "hybrid" else ""))
    if not args.skip_synthetic:
        synthetic(models)


if __name__ == "__main__":
    main()
