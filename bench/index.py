"""Index benchmark on the OpenClaw docs corpus (figures, not a test).

1. Full index: chunks/s of ``MemoryIndex.sync`` (scan, read, chunk, hash, embed,
   write) side by side with raw ``embedder.encode`` of the very same chunk texts,
   same model object, same run. Target: index >= 85% of raw.
2. No-op re-index in a fresh process (CLI wall time and the sync's own time).
   Target: <= 0.5 s.
3. One changed file, fresh process, model load included. Target: <= 2 s.

Usage: .venv/bin/python bench/index.py [--embedding-backend auto|torch|onnx]
"""

from __future__ import annotations

import argparse
import json
import time

from _common import cli, fresh_workspace, median, settings_for


def main() -> None:
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.index.config import index_config
    from openclaw_memory.index.lender import Models

    parser = argparse.ArgumentParser()
    parser.add_argument("--embedding-backend", default="auto")
    args = parser.parse_args()
    ws, state = fresh_workspace(f"index-{args.embedding_backend}")
    (state / "openclaw-memory.toml").write_text(f'[index]\nembedding_backend = "{args.embedding_backend}"\n', encoding="utf-8")
    settings = settings_for(ws, state)
    models = Models(index_config(settings), cache_dir=settings.model_cache)
    t0 = time.perf_counter()
    embedder = models.embedder
    load_s = time.perf_counter() - t0
    print(f"model load (first use: includes the one-time ONNX export): {load_s:.2f} s (backend {embedder.backend}, dim {embedder.dim})")
    embedder.encode(["warm up the model"])

    index = MemoryIndex(settings, models=models)
    t0 = time.perf_counter()
    summary = index.sync()
    index_s = time.perf_counter() - t0
    texts = []
    for c in index.collections():
        if c.points:
            with index.store.open(c.name) as shard:
                texts += [h.payload["text"] for h in shard.scroll(["text", "hash"])]
    unique = list(dict.fromkeys(texts))
    t0 = time.perf_counter()
    embedder.encode(unique)
    raw_s = time.perf_counter() - t0
    index.close()
    index_rate = summary.chunks_embedded / index_s
    raw_rate = len(unique) / raw_s
    print(f"files {summary.files_scanned}, chunks embedded {summary.chunks_embedded} (unique texts {len(unique)})")
    print(f"full index : {index_s:7.2f} s  {index_rate:6.1f} chunks/s")
    print(f"raw encode : {raw_s:7.2f} s  {raw_rate:6.1f} chunks/s")
    print(f"index / raw: {index_rate / raw_rate:6.1%}   (target >= 85%)")

    walls, inner = [], []
    for _ in range(5):
        wall, proc = cli(ws, state, "index", "--json")
        data = json.loads(proc.stdout)
        assert data["chunksEmbedded"] == 0 and data["filesChanged"] == 0, data
        walls.append(wall)
        inner.append(data["seconds"])
    print(f"no-op re-index, fresh process: wall median {median(walls):.3f} s (min {min(walls):.3f}), "
          f"sync itself median {median(inner):.3f} s   (target <= 0.5 s)")

    changed = ws / "memory" / "concepts" / "compaction.md"
    walls = []
    for i in range(3):
        changed.write_text(changed.read_text(encoding="utf-8") + f"\n\nBenchmark edit {i}: a new paragraph.\n", encoding="utf-8")
        wall, proc = cli(ws, state, "index", "--json")
        data = json.loads(proc.stdout)
        assert data["filesChanged"] == 1, data
        walls.append(wall)
        last = data
    print(f"one changed file, fresh process incl. model load: wall median {median(walls):.2f} s "
          f"(embedded {last['chunksEmbedded']}, sync itself {last['seconds']:.2f} s)   (target <= 2 s)")


if __name__ == "__main__":
    main()
