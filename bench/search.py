"""Search benchmark on the OpenClaw docs corpus (figures, not a test).

1. Cold ``openclaw-memory search`` in a new process (hybrid, model load included).
   Target <= 1.5 s.
2. Warm query latency (model loaded, shards kept open), p50/p95 over 100 queries,
   on the corpus and on a synthetic 100,000-chunk collection. Target p50 <= 20 ms hybrid.
3. Quality on bench/queries.json: recall@5 and MRR (over distinct files) for text,
   vector and hybrid, plus the fusion alternatives scored on the same candidates.

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
    from openclaw_memory.index.api import MemoryIndex

    from _common import ROOT

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


def blends():
    from openclaw_memory.index.search import hybrid_score

    def rrf(k):
        def f(cands):
            by_v = sorted(cands, key=lambda c: -c["v"])
            by_t = sorted(cands, key=lambda c: -c["t"])
            score = {id(c): 0.0 for c in cands}
            for rank, c in enumerate(by_v):
                score[id(c)] += 1 / (k + rank + 1)
            for rank, c in enumerate(by_t):
                if c["t"] > 0:
                    score[id(c)] += 1 / (k + rank + 1)
            return [score[id(c)] for c in cands]
        return f

    per = lambda g: (lambda cands: [g(c["v"], c["t"]) for c in cands])  # noqa: E731
    return {
        "text (t)": per(lambda v, t: t),
        "vector (v)": per(lambda v, t: v),
        "hybrid: max+0.3min, knee at 0.7 (shipped)": per(hybrid_score),
        "max(v,t)+0.3min clipped at 1": per(lambda v, t: min(1.0, max(v, t) + 0.3 * min(v, t))),
        "max(v,t)": per(max),
        "1-(1-v)(1-t)": per(lambda v, t: 1 - (1 - v) * (1 - t)),
        "0.7v+0.3t (OpenClaw)": per(lambda v, t: 0.7 * v + 0.3 * t),
        "0.5v+0.5t": per(lambda v, t: 0.5 * v + 0.5 * t),
        "v+t (sum)": per(lambda v, t: v + t),
        "RRF k=60": rrf(60),
        "RRF k=10": rrf(10),
    }


def quality(index) -> None:
    from openclaw_memory.index.collections import resolve_collections
    from openclaw_memory.index.search import QueryPlan
    from openclaw_memory.index.store.base import TEXT_FIELD
    from openclaw_memory.index.terms import contains_all
    from openclaw_memory.index.search import text_score

    names = [c.name for c in resolve_collections(index.settings) if index.store.exists(c.name)]
    rows = {name: [] for name in blends()}
    modes = {"text": [], "vector": [], "hybrid": []}
    for item in QUERIES:
        relevant = {f"memory/{f}" for f in item["files"]}
        vec = index.models.embedder.encode([item["q"]])[0]
        plan = QueryPlan(item["q"], "hybrid", vec, 20)
        cands = []
        for name in names:
            with index.store.open(name) as shard:
                cands += plan.candidates(shard, name)
        table = [
            {"path": c.payload["path"], "v": c.v or 0.0,
             "t": text_score(c.bm25, contains_all(str(c.payload.get(TEXT_FIELD, "")).lower(), plan.patterns))}
            for c in cands
        ]
        for name, f in blends().items():
            scores = f(table)
            ordered = sorted(zip(scores, [c["path"] for c in table]), key=lambda sp: (-sp[0], sp[1]))
            rows[name].append(_rank([p for s, p in ordered if s > 0], relevant))
        for mode in modes:
            res = index.search(item["q"], limit=20, min_score=0.0, mode=mode, sync=False)
            modes[mode].append(_rank([r.path for r in res.results], relevant))
    print(f"quality over {len(QUERIES)} queries (distinct files; recall@5 = a relevant file in the top 5):")
    for mode, ranks in modes.items():
        print(f"  search --mode {mode:7s} recall@5 {_recall(ranks):.3f}  MRR {_mrr(ranks):.3f}")
    print("  fusion alternatives on the same candidates:")
    for name, ranks in rows.items():
        print(f"    {name:42s} recall@5 {_recall(ranks):.3f}  MRR {_mrr(ranks):.3f}")


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

    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.index.config import IndexConfig
    from openclaw_memory.index.manifest import Manifest, save_manifest
    from openclaw_memory.index.store.base import PointData
    from openclaw_memory.index.terms import cjk_grams

    from _common import ROOT

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
                    "startLine": 1, "endLine": 10, "heading": "", "text": text, "cjk": cjk_grams(text), "body": text}))
            shard.upsert(points)
        t1 = time.perf_counter()
        shard.optimize()  # what `index` does after writing: builds the HNSW graph
        print(f"synthetic: HNSW build (optimize) {time.perf_counter() - t1:.1f} s")
    m = Manifest(name, "main", fingerprint="synthetic", settings_key=IndexConfig().settings_key, model="synthetic",
                 store_backend="edge", dim=dim)
    save_manifest(settings.data_dir, m)
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
