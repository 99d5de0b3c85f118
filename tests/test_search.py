"""Search with the real engine: scores, CJK, isolation, snippets, stale files, JSON shapes.

Scores and CJK ranking are the real model's (slow tier); isolation, snippets, stale files and the
JSON shapes hold for any embedder, so those tests use the hash one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO, env_for, settings_for, write
from openclaw_memory.errors import IndexMissing
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.config import IndexConfig
from openclaw_memory.index.search import DEFAULT_MIN_SCORE
from openclaw_memory.index.sync import Models
from openclaw_memory.settings import default_model_cache


@pytest.fixture(scope="module")
def models():
    """The real model, loaded on first use, from the ONNX export cached where ``settings_for`` and
    the CLI look (far cheaper than importing torch)."""
    return Models(IndexConfig(), cache_dir=default_model_cache({}))


def filler(i: int) -> str:
    return f"Line {i}: routine log entry about the weekly meeting, nothing notable happened here.\n"


@pytest.mark.slow
def test_exact_keyword_is_never_dropped_by_min_score(workspace, state_dir, models):
    # "gateway" is in every file (low IDF), so raw BM25 is tiny; a literal match must still pass:
    # the keyword signal is measured against what "every query term" would score.
    for i in range(30):
        write(workspace / "memory" / f"d{i:02}.md", f"# Day {i}\n\nThe gateway restarted at {i}:00 after the update.\n")
    write(workspace / "memory" / "zzz.md", "# Other\n\nThe quarterly gateway token rotation is documented here.\n")
    index = MemoryIndex(settings_for(workspace, state_dir, real_model=True), models=models)
    index.sync()
    for mode in ("text", "hybrid"):
        result = index.search("gateway", limit=50, mode=mode)
        assert len(result.results) == 31, mode
        assert all(DEFAULT_MIN_SCORE <= r.score <= 1.0 for r in result.results)
        phrase = index.search("quarterly gateway token rotation", limit=3, mode=mode)
        assert phrase.results[0].path == "memory/zzz.md"


@pytest.mark.slow
def test_chinese_queries_find_chinese_notes(workspace, state_dir, models):
    write(workspace / "memory" / "tea.md", "# 偏好\n\n我每天早上喜欢喝绿茶，不喝咖啡。\n")
    write(workspace / "memory" / "trip.md", "# 旅行\n\n下个月去东京出差，住在新宿。\n")
    write(workspace / "memory" / "en.md", "# Notes\n\nThe build uses docker compose on the staging host.\n")
    index = MemoryIndex(settings_for(workspace, state_dir, real_model=True), models=models)
    index.sync()
    for mode in ("text", "hybrid"):
        for query in ("喝绿茶", "绿茶", "喝茶"):  # a word, a sub-word, and characters not adjacent in the note
            result = index.search(query, mode=mode)
            assert result.results and result.results[0].path == "memory/tea.md", (mode, query)
        trip = index.search("东京出差", mode=mode)
        assert trip.results[0].path == "memory/trip.md"
        assert "东京" in trip.results[0].snippet


def test_agents_are_isolated(workspace, state_dir, tmp_path):
    write(workspace / "MEMORY.md", "# Shared\n\nEveryone knows the wifi password is on the fridge.\n")
    secret_a = write(tmp_path / "a-notes" / "secret.md", "# A\n\nThe zanzibar project codename belongs to agent a.\n")
    write(tmp_path / "b-notes" / "other.md", "# B\n\nAgent b tracks the marmalade budget.\n")
    a = MemoryIndex(settings_for(workspace, state_dir, agent="a", extra=(str(tmp_path / "a-notes"),)))
    b = MemoryIndex(settings_for(workspace, state_dir, agent="b", extra=(str(tmp_path / "b-notes"),)))
    a.sync()
    b.sync()
    shown = os.path.relpath(secret_a, workspace)  # "../a-notes/secret.md", as OpenClaw indexes it
    top = a.search("zanzibar codename").results[0]
    assert top.path == shown and top.citation.startswith(f"{shown}#L")
    for mode in ("hybrid", "vector", "text"):
        found = b.search("zanzibar project codename", mode=mode, min_score=0.0, limit=20).results
        assert all(r.source.endswith("-b") for r in found)
        assert shown not in {r.path for r in found}
    assert {r.source for r in b.search("marmalade budget", min_score=0.0, limit=20).results} <= {"memory-root-b", "custom-1-b"}


def test_snippet_is_the_matching_passage(workspace, state_dir):
    lines = [filler(i) for i in range(1, 200)]
    lines[150] = "The spare key for the boathouse is under the blue flowerpot.\n"
    write(workspace / "memory" / "long.md", "# Log\n\n" + "".join(lines))
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    hit = index.search("boathouse spare key").results[0]
    assert "blue flowerpot" in hit.snippet and len(hit.snippet) <= 700
    text = (workspace / "memory" / "long.md").read_text().split("\n")
    assert hit.start_line <= 153 <= hit.end_line
    assert text[152].startswith("The spare key")
    assert hit.citation == f"memory/long.md#L{hit.start_line}-L{hit.end_line}"


def test_no_index_says_how_to_build_it(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# M\n\nfact\n")
    with pytest.raises(IndexMissing, match="openclaw-memory index"):
        MemoryIndex(settings_for(workspace, state_dir)).search("fact", mode="text")
    res = cli("search", "fact", "--json")
    assert res.returncode == 1
    assert "openclaw-memory index" in res.json()["error"] and "Traceback" not in res.stderr
    assert not (settings_for(workspace, state_dir).data_dir / "index" / "edge").exists()


def test_cli_json_shapes_and_stale_handling(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n\n## Preferences\n\nI prefer dark roast coffee and vim.\n")
    write(workspace / "memory" / "2024-05-01.md", "# May 1\n\nMet Priya about the hiking trip to Zermatt.\n")
    summary = cli("index", "--json")
    assert summary.returncode == 0, summary.stderr
    assert set(summary.json()) == {"filesScanned", "filesChanged", "filesRemoved", "chunksEmbedded", "chunksReused", "chunksDeleted", "seconds"}

    res = cli("search", "hiking trip", "--json")
    data = res.json()
    assert set(data) == {"results", "mode", "stale"} and data["mode"] == "hybrid" and data["stale"] == []
    first = data["results"][0]
    assert set(first) == {"path", "startLine", "endLine", "score", "snippet", "source", "citation"}
    assert first["path"] == "memory/2024-05-01.md" and first["source"] == "memory-dir-main"
    assert first["citation"] == f"memory/2024-05-01.md#L{first['startLine']}-L{first['endLine']}"
    keys = [(-r["score"], r["path"]) for r in data["results"]]
    assert keys == sorted(keys)

    # Edit after indexing: text mode reports the stale file and loads no embedder (a fresh process:
    # its sys.modules shows what the search loaded).
    write(workspace / "memory" / "2024-05-01.md", "# May 1\n\nMet Priya about the kayak trip to Lake Bled.\n")
    probe = textwrap.dedent(
        """
        import json, sys
        from openclaw_memory.index.api import MemoryIndex
        from openclaw_memory.settings import resolve_settings
        r = MemoryIndex(resolve_settings()).search("trip", mode="text")
        print(json.dumps([r.to_json()["stale"], *(m in sys.modules for m in (
            "torch", "sentence_transformers", "onnxruntime", "openclaw_memory.index.hash_embedding"))]))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True,
                         env=env_for(workspace, state_dir)).stdout
    assert out.strip() == '[["memory/2024-05-01.md"], false, false, false, false]'

    no_sync = cli("search", "kayak Lake Bled", "--no-sync", "--json").json()
    assert no_sync["stale"] == ["memory/2024-05-01.md"]
    synced = cli("search", "kayak Lake Bled", "--json").json()
    assert synced["stale"] == [] and "Lake Bled" in synced["results"][0]["snippet"]

    cols = cli("collections", "--json").json()
    assert [(c["name"], c["points"], c["backend"]) for c in cols["collections"]] == [
        ("memory-root-main", 1, "edge"),
        ("memory-dir-main", 1, "edge"),
    ]
    assert cols["collections"][1]["pattern"] == "**/*.md"
    status = cli("status", "--json").json()
    dir_status = status["collections"][1]
    assert dir_status["files"] == 1 and dir_status["chunks"] == 1 and dir_status["staleFiles"] == []
    assert dir_status["diskBytes"] > 0 and dir_status["lastIndexed"] and dir_status["backend"] == "edge"

    bad = cli("search", "x", "--mode", "fuzzy", "--json")
    assert bad.returncode == 2 and "--mode" in bad.json()["error"]
