"""Index throughput against raw encode of the same texts, measured back to back (figures, not a test).

Copies the first N Markdown files of the benchmark workspace (bench/quality.py builds it) into a
fresh workspace, times raw ``encode`` of exactly the texts the index embeds (cards and items
included), a full index, and raw ``encode`` again; on a shared machine the two raw runs bracket
the index run, so load drift shows.

Usage: .venv/bin/python bench/throughput.py [--files 60]
"""

from __future__ import annotations

import argparse
import shutil
import time

from _common import ROOT, settings_for
from quality import BUILD


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=60)
    args = parser.parse_args()
    from openclaw_memory.files.scan import scan_memory_files
    from openclaw_memory.index.api import MemoryIndex
    from openclaw_memory.index.collections import assign_files, resolve_collections

    src = BUILD / "ws"
    if not src.is_dir():
        raise SystemExit("run bench/quality.py first (it builds the benchmark workspace)")
    base = ROOT / "throughput"
    shutil.rmtree(base, ignore_errors=True)
    ws, state = base / "ws", base / "state"
    files = sorted(p for p in (src / "memory" / "docs").rglob("*.md"))[: args.files]
    for p in files + [src / "MEMORY.md"]:
        dest = ws / p.relative_to(src)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dest)
    state.mkdir(parents=True)
    settings = settings_for(ws, state)
    index = MemoryIndex(settings)
    models = index.models
    collections = resolve_collections(settings, register=True)
    groups = assign_files(collections, scan_memory_files(ws).files)
    texts = []
    for c in collections:
        for f in groups[c.name]:
            text = open(f.abs_path, encoding="utf-8").read()
            texts += [ch.embed_text for ch in models.chunk(text, f.path, items=c.kind == "root")]
    texts = sorted(set(texts), key=len, reverse=True)  # what the index embeds, in the index's order
    models.embedder.encode(texts[:8])  # model loaded before any timing

    def raw() -> float:
        t0 = time.perf_counter()
        for start in range(0, len(texts), 32):
            models.embedder.encode(texts[start : start + 32])
        return len(texts) / (time.perf_counter() - t0)

    before = raw()
    t0 = time.perf_counter()
    summary = index.sync(full=True)
    rate = summary.chunks_embedded / (time.perf_counter() - t0)
    after = raw()
    mean = (before + after) / 2
    print(f"{len(files) + 1} files, {summary.chunks_embedded} chunks (unique texts {len(texts)})")
    print(f"raw encode {before:.1f} / {after:.1f} chunks/s (before / after); full index {rate:.1f} chunks/s "
          f"= {rate / mean:.0%} of raw (target >= 85%)")


if __name__ == "__main__":
    main()
