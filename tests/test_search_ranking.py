"""Ranking with the real model and engine on one indexed workspace (built once for the module).

The workspace mixes a one-file collection (MEMORY.md), a big memory/ folder, an extra-path
runbook, dated notes, a front-matter document, identical copies, code and identifiers, so each
test asks one question of it: agent-wide keyword statistics, abstention, passages, temporal
decay, citations (read and MCP memory_get), filters, numbers and front matter.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from conftest import skip_without_torch_extra, write
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.config import IndexConfig
from openclaw_memory.index.filters import SearchFilters
from openclaw_memory.index.lender import Models
from openclaw_memory.index.search import CALIBRATION, Ranking, calibrate
from openclaw_memory.settings import Overrides, resolve_settings
from openclaw_memory.wire import to_json

pytestmark = pytest.mark.slow


@pytest.fixture
def real_model() -> bool:
    return True  # ranking quality is the subject

TOPICS = [
    ("backups", "The nightly backups of the laptop finished; the backup disk is half full."),
    ("vpn", "Joined the VPN from the train, the connection dropped twice near Hamburg."),
    ("password", "Changed the password of the shared calendar after the offboarding."),
    ("kafka", "The Kafka consumer lag grew during the load test and recovered later."),
    ("garden", "Planted tulip bulbs along the fence; the soil was still warm."),
    ("cooking", "Tried a new lentil soup recipe with smoked paprika and lemon."),
    ("meeting", "Weekly planning meeting moved to Tuesday because of the holiday."),
    ("travel", "Booked the train to Munich for the conference in the spring."),
]


def _workspace(root: Path) -> tuple[Path, Path, Path]:
    ws, state, extra = root / "ws", root / "state", root / "runbooks"
    write(
        ws / "MEMORY.md",
        "# MEMORY.md\n\n## Preferences\n\n- Prefers window seats on trains.\n- Never book meetings before 10:00.\n\n"
        "## Infrastructure\n\n- The ops-backups job copies the NAS to the offsite bucket every Sunday.\n"
        "- Support hotline for the ISP: 555-0199.\n\n"
        "## Standing notes\n\n- The staging cluster moved to Frankfurt in November.\n",
    )
    for i in range(40):
        topic, line = TOPICS[i % len(TOPICS)]
        write(ws / "memory" / "log" / f"{topic}-{i:02}.md", f"# {topic.title()} log {i}\n\n{line}\nEntry number {i} about {topic}.\n")
    # The same news in other words (the same words would be one result naming the three files).
    write(ws / "memory" / "2026-10-01.md", "# 2026-10-01\n\nInfra says the staging cluster is moving to Frankfurt, in November.\n")
    write(ws / "memory" / "2026-11-20.md", "# 2026-11-20\n\nDone today: staging cluster now runs in Frankfurt (moved in November).\n")
    write(
        ws / "memory" / "2026-11-05.md",
        "# 2026-11-05\n\nClosed ticket 49999 after the fix shipped in v2026.9.6.\n\n"
        "The gateway logged AUTH_DEVICE_TOKEN_MISMATCH until the token was re-paired.\n",
    )
    copy = "# Parking\n\nThe bike lives in the courtyard shed because the basement floods.\n"
    write(ws / "memory" / "copies" / "parking.md", copy)
    write(ws / "memory" / "copies" / "parking-old.md", copy)
    write(
        ws / "memory" / "howto" / "restic-restore.md",
        "# Restore a file\n\n1. Mount the repository.\n2. Copy the file back.\n",
    )
    write(
        ws / "memory" / "docs" / "zeppelin.md",
        '---\ntitle: "Zeppelin hangar guide"\nsummary: "How airship docking slots are assigned"\nread_when:\n'
        "  - You need a docking slot\n---\n\nSlots are handed out by the harbour master each morning.\n\n"
        "## Weather\n\nNo docking when the wind is above 30 knots.\n",
    )
    code = "\n".join(f"    step_{n} = prepare({n})" for n in range(60))
    write(
        ws / "memory" / "howto" / "deploy-script.md",
        f"# Deploy script\n\nRun it from the repo root.\n\n```python\n{code}\n    flamingo_switch = True\n```\n",
    )
    write(extra / "vpn.md", "# VPN runbook\n\nThe VPN password rotates on the first Monday of every quarter.\n")
    state.mkdir(parents=True)
    # The torch reference path: the rankings below were set on its vectors.
    # The extra path is configured in the state dir, so the CLI and the MCP server see it too.
    (state / "openclaw-memory.toml").write_text(
        f'extra_paths = [{json.dumps(str(extra))}]\n[index]\nembedding_backend = "torch"\n', encoding="utf-8"
    )
    return ws, state, extra


def _settings(ws: Path, state: Path):
    return resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    skip_without_torch_extra()  # the rankings below were set on the torch reference backend's vectors
    ws, state, extra = _workspace(tmp_path_factory.mktemp("ranking"))
    settings = _settings(ws, state)
    models = Models(IndexConfig(embedding_backend="torch"))
    index = MemoryIndex(settings, keep_open=True, models=models)
    index.sync()
    yield ws, state, extra, index
    index.close()


def paths(result) -> list[str]:
    return [r.path for r in result.results]


def test_a_term_only_in_memory_md_ranks_it_first_in_every_mode(built):
    *_, index = built
    for mode in ("hybrid", "text"):
        assert paths(index.search("ops-backups", mode=mode))[:1] == ["MEMORY.md"], mode
    assert paths(index.search("when does the offsite copy of the NAS run"))[:1] == ["MEMORY.md"]


def test_an_extra_path_runbook_ranks_first_for_its_own_words(built):
    ws, _state, extra, index = built
    shown = os.path.relpath(extra / "vpn.md", ws)  # an extra file is shown relative to the workspace, as OpenClaw does
    for mode in ("hybrid", "text"):
        assert paths(index.search("VPN password", mode=mode))[:1] == [shown], mode


def test_an_unrelated_question_returns_nothing_by_default(built):
    *_, index = built
    for mode in ("hybrid", "vector", "text"):
        assert index.search("What is the capital of Peru?", mode=mode).results == (), mode
    assert index.search("What is the capital of Peru?", min_score=0.0).results  # only the threshold hid them


def test_scores_are_calibrated_and_monotone():
    for mode in CALIBRATION:
        xs = [i / 50 for i in range(0, 101)]
        ys = [calibrate(mode, x) for x in xs]
        assert all(0.0 <= y <= 1.0 for y in ys)
        assert ys == sorted(ys), mode


def test_no_overlapping_passages_and_identical_files_shown_once(built):
    ws, *_, index = built
    result = index.search("staging cluster Frankfurt", limit=10, min_score=0.0)
    seen: dict[str, list[tuple[int, int]]] = {}
    for r in result.results:
        for a, b in seen.get(r.path, []):
            assert r.end_line < a or r.start_line > b, f"{r.path} overlaps"
        seen.setdefault(r.path, []).append((r.start_line, r.end_line))
    bike = index.search("where is the bike kept", min_score=0.0)
    copies = [r for r in bike.results if "copies/" in r.path]
    assert len(copies) == 1
    assert {copies[0].path, *copies[0].also_in} == {"memory/copies/parking.md", "memory/copies/parking-old.md"}
    assert to_json(copies[0])["alsoIn"]


def test_temporal_decay_prefers_the_newer_note_and_never_decays_memory_md(built):
    ws, state, extra, index = built
    query = "staging cluster moved to Frankfurt"
    plain = {r.path: r.score for r in index.search(query, limit=10, min_score=0.0).results}
    index.ranking = Ranking(decay=True, half_life_days=30)  # as openclaw.json's temporalDecay sets it
    try:
        decayed = index.search(query, limit=10, min_score=0.0).results
    finally:
        index.ranking = Ranking()
    order = [r.path for r in decayed]
    assert order.index("memory/2026-11-20.md") < order.index("memory/2026-10-01.md")
    scores = {r.path: r.score for r in decayed}
    assert scores["MEMORY.md"] == pytest.approx(plain["MEMORY.md"])
    assert scores["memory/2026-10-01.md"] < plain["memory/2026-10-01.md"]


def test_decay_and_mmr_are_read_from_openclaw_settings(tmp_path):
    from openclaw_memory.index.config import search_ranking

    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    write(
        state / "openclaw.json",
        "{agents: {defaults: {memorySearch: {query: {hybrid: {mmr: {enabled: true}, temporalDecay: {enabled: true, halfLifeDays: 14}}}}}}}",
    )
    settings = resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})
    assert search_ranking(settings) == Ranking(mmr=True, mmr_lambda=0.7, decay=True, half_life_days=14.0)
    write(state / "openclaw-memory.toml", "[search]\ntemporal_decay = false\n")
    settings = resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})
    assert search_ranking(settings).decay is False


def test_the_top_level_memory_search_hybrid_is_read_below_the_agents_defaults(tmp_path):
    """The oldest spelling, a top-level memorySearch (OpenClaw's migration moves it to memory.search
    after agents.defaults.memorySearch), was never read: its MMR stayed off."""
    from openclaw_memory.index.config import search_ranking

    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    write(state / "openclaw.json", "{memorySearch: {query: {hybrid: {mmr: {enabled: true, lambda: 0.5}, temporalDecay: {enabled: true}}}},"
                                   " agents: {defaults: {memorySearch: {query: {hybrid: {mmr: {lambda: 0.9}}}}}}}")
    settings = resolve_settings(Overrides(workspace=str(ws), state_dir=str(state)), environ={})
    assert search_ranking(settings) == Ranking(mmr=True, mmr_lambda=0.9, decay=True, half_life_days=30.0)


def test_citation_round_trips_through_read(built, cli_env):
    ws, _state, _extra, index = built
    hit = index.search("VPN password rotation").results[0]
    lines = (ws / hit.path).read_text(encoding="utf-8").split("\n")  # paths are shown relative to the workspace
    assert hit.snippet == "\n".join(lines[hit.start_line - 1 : hit.end_line])
    out = cli_env("read", hit.citation, "--json")
    assert out.returncode == 0, out.stderr
    assert out.json()["text"].rstrip("\n") == hit.snippet
    backwards = cli_env("read", f"{hit.path}#L{hit.end_line + 1}-L{hit.start_line}")
    assert backwards.returncode == 2 and f"{hit.path}#L{hit.start_line}-L{hit.end_line + 1}" in backwards.stderr


def test_a_snippet_deep_inside_a_code_fence_is_exactly_the_lines_it_cites(built):
    ws, *_, index = built
    hit = index.search("flamingo_switch", mode="text").results[0]
    assert hit.path == "memory/howto/deploy-script.md"
    assert "flamingo_switch" in hit.snippet and len(hit.snippet) <= 700
    # Too far below its fence line to show it without a gap (it was shown, cited from the fence).
    lines = (ws / hit.path).read_text(encoding="utf-8").split("\n")
    assert hit.snippet == "\n".join(lines[hit.start_line - 1 : hit.end_line])


def test_filters(built):
    ws, _state, extra, index = built
    only_root = index.search("staging cluster Frankfurt", min_score=0.0, filters=SearchFilters(collections=("memory-root-main",)))
    assert set(paths(only_root)) == {"MEMORY.md"}
    dated = index.search("staging cluster Frankfurt", min_score=0.0, filters=SearchFilters(paths=("memory/2026-*.md",)))
    assert paths(dated) and all(p.startswith("memory/2026-") for p in paths(dated))
    from datetime import date

    recent = index.search("staging cluster Frankfurt", min_score=0.0, filters=SearchFilters(since=date(2026, 11, 1), until=date(2026, 11, 30)))
    assert "memory/2026-11-20.md" in paths(recent) and "memory/2026-10-01.md" not in paths(recent)
    names = index.search("VPN password", min_score=0.0, filters=SearchFilters(paths=("vpn.md",)))
    assert paths(names) == [os.path.relpath(extra / "vpn.md", ws)]


@pytest.mark.parametrize(
    "query,expected",
    [
        ("49999", "memory/2026-11-05.md"),
        ("555-0199", "MEMORY.md"),
        ("AUTH_DEVICE_TOKEN_MISMATCH", "memory/2026-11-05.md"),
        ("v2026.9.6", "memory/2026-11-05.md"),
        ("restic-restore.md", "memory/howto/restic-restore.md"),
    ],
)
def test_numbers_and_identifiers_are_found_by_keywords(built, query, expected):
    *_, index = built
    assert paths(index.search(query, mode="text"))[:1] == [expected]
    assert paths(index.search(query))[:1] == [expected]


def test_front_matter_is_searchable_but_never_a_snippet(built):
    *_, index = built
    for query in ("Zeppelin hangar guide", "airship docking slots"):
        result = index.search(query)
        assert paths(result)[:1] == ["memory/docs/zeppelin.md"], query
        snippet = result.results[0].snippet
        assert "---" not in snippet and "summary:" not in snippet and "read_when" not in snippet


def test_mcp_memory_get_reads_a_citation_and_search_says_nothing_matched(built):
    from test_mcp import payload, run_session

    ws, state, _extra, index = built
    hit = index.search("VPN password rotation").results[0]

    async def script(session):
        got = payload(await session.call_tool("memory_get", {"path": hit.citation}))
        none = payload(await session.call_tool("memory_search", {"query": "What is the capital of Peru?"}))
        only = payload(await session.call_tool("memory_search", {"query": "staging cluster Frankfurt", "minScore": 0, "paths": ["memory/2026-*.md"]}))
        return got, none, only

    index.store.close()  # the server opens the shards itself
    got, none, only = run_session(ws, state, script, real_model=True)
    assert got["text"].rstrip("\n") == hit.snippet and got["from"] == hit.start_line
    assert none["results"] == [] and "Nothing" in none["message"]
    assert only["results"] and all(r["path"].startswith("memory/2026-") for r in only["results"])


@pytest.fixture
def cli_env(built, cli):
    """The CLI on the module's workspace and state dir."""
    ws, state, _extra, _index = built

    def run(*args: str):
        return cli(*args, env={"OPENCLAW_WORKSPACE": str(ws), "OPENCLAW_STATE_DIR": str(state)}, cwd=ws)

    return run


def test_search_json_keys(built):
    *_, index = built
    data = to_json(index.search("VPN password"))
    assert set(data) == {"results", "mode", "provider", "model", "citations", "terms"}
    assert set(data["results"][0]) == {"path", "startLine", "endLine", "score", "vectorScore", "textScore", "snippet", "source", "corpus",
                                       "citation", "passages"}
    json.dumps(data)
    assert dataclasses.is_dataclass(index.search("VPN password").results[0])


def test_mmr_puts_a_different_file_before_a_near_duplicate():
    from openclaw_memory.index.search import _Candidate, _File, _mmr

    def file(path, score, vector):
        return _File(path, [_Candidate(path, {}, "c", v=score, vector=vector)], score=score)

    a, b, c = file("a.md", 0.9, [1.0, 0.0]), file("b.md", 0.85, [1.0, 0.0]), file("c.md", 0.5, [0.0, 1.0])
    assert [f.path for f in _mmr([a, b, c], 0.7, 3)] == ["a.md", "c.md", "b.md"]
    assert [f.path for f in _mmr([a, b, c], 1.0, 3)] == ["a.md", "b.md", "c.md"]  # lambda 1: relevance only
