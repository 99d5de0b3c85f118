"""A full index's memory against the memory's size: what a run keeps for its own work is bounded,
not grown with the notes (docs/search.md, "Memory of `index` against corpus size"; the figures
are bench/index_memory.py's)."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from conftest import settings_for, write
from openclaw_memory.index import sync as sync_module
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.bm25 import load_stats
from openclaw_memory.index.collections import resolve_collections
from openclaw_memory.index.config import IndexConfig
from openclaw_memory.index.lender import Models
from openclaw_memory.memory.local import LocalMemory

WORDS = ("backup deploy review release storage migration kernel invoice budget garden recipe travel flight meeting "
         "standup roadmap incident pager database index search cache latency customer contract renewal").split()


def daily_notes(workspace: Path, notes: int, seed: int = 7) -> None:
    """A MEMORY.md and ``notes`` daily notes of 20-40 lines, every line its own words (as the
    daily notes an agent keeps: few lines repeat)."""
    rng = random.Random(seed)

    def lines(n: int) -> str:
        return "".join(f"- {' '.join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))}.\n"
                       for _ in range(n))

    write(workspace / "MEMORY.md", "# Memory\n\n" + lines(30))
    day = dt.date(2026, 12, 1)
    for i in range(notes):
        write(workspace / "memory" / f"{day - dt.timedelta(days=i):%Y-%m-%d}.md",
              f"# Day {i}\n\n## Work\n\n{lines(rng.randint(10, 20))}\n## Home\n\n{lines(rng.randint(10, 20))}")


def test_a_shard_built_from_nothing_is_not_read_back_for_its_keyword_statistics(workspace, state_dir, monkeypatch):
    """A first index and a rebuild (``--full``) count a collection's keyword statistics as its
    chunks are written: the shard is not scrolled for every point's terms afterwards (that mapped
    every payload page of the corpus), and what is saved equals what a scan of the shard counts."""
    write(state_dir / "openclaw-memory.toml", "[index]\nembed_batch = 8\n")  # many batches: built beside, not live
    daily_notes(workspace, 30)
    scanned: list[str] = []
    real_scan = sync_module.scan_stats

    def counted(shard):
        scanned.append(shard.name)
        return real_scan(shard)

    monkeypatch.setattr(sync_module, "scan_stats", counted)
    settings = settings_for(workspace, state_dir)
    memory = LocalMemory(settings)
    try:
        for full in (False, True):
            scanned.clear()
            summary = memory.index(full=full)
            assert summary.files_changed == 31 and summary.chunks_embedded + summary.chunks_reused > 8 * 4
            big = next(c.name for c in resolve_collections(settings) if c.kind != "root")
            assert big not in scanned, (full, scanned)
            with MemoryIndex(settings) as index:
                for c in resolve_collections(settings):
                    with index.store.open(c.name) as shard:
                        assert shard.count() > 0
                        assert load_stats(settings.data_dir, c.name) == real_scan(shard), (full, c.name)
    finally:
        memory.close()


def test_the_token_counts_kept_for_reuse_are_bounded_however_many_lines_are_counted():
    """The chunker's line counts are kept for lines that come again, at most 16,384 of them (a
    few MB): a service's loaded model kept up to 500,000 lines (35 MB at 10,000 daily notes)."""
    counter = Models(IndexConfig(embedding_backend="hash")).counter
    lines = [f"- line {i} of a note about the storage migration review" for i in range(40_000)]
    for start in range(0, len(lines), 1000):  # a file's lines at a time, as the chunker counts them
        part = lines[start:start + 1000]
        assert counter.count_many(part)[:3] == [counter.count(line) for line in part[:3]]
        assert len(counter._cache) <= 16_384
    assert counter.count_many(["## Work", "", "## Work"]) == [counter.count("## Work"), 0, counter.count("## Work")]
