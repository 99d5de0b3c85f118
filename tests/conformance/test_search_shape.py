"""The MCP ``memory_search`` answer's keys next to OpenClaw 2026.9.6's own ``memory_search`` tool
(memory-core's ``createMemorySearchTool``, run by ``oc_more.mjs``'s ``memorysearch`` op), fresh and stale.

OpenClaw says a stale index with ``stale: true`` beside ``warning`` and ``action`` and has no
``stale`` key when the index is fresh (``resolveMemorySearchStaleness``); an agent taught its tool
reads any value there as stale (``[]`` too: an empty list is truthy in JavaScript). Offline,
OpenClaw searches with provider ``none`` (keywords only), under which it gives no ``model`` and no
``mode``: those two are checked by tests/test_mcp.py. OpenClaw's index is made stale by a sync that
fails (a note path past the system's limit fails its scan); ours by a changed file a search did not
index (``sync=False``, which the tool itself never sends: only the cause differs, not the answer).

Each result's keys are compared too (:data:`RESULT_KEYS`, by their JSON types; ``corpus`` by its
value): OpenClaw's provider ``none`` is its keyword search, which gives ``textScore`` and no
``vectorScore``, as ours does in mode ``text``; in hybrid mode ours gives both, as OpenClaw's
``mergeHybridResults`` does. Its ``provenance`` is a deliberate difference. Scores and snippets
differ by design and are not compared here.
"""

from __future__ import annotations

import os

from openclaw_memory.mcp.server import MemoryTools
from openclaw_memory.memory import OPERATIONS
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.settings import Overrides, resolve_settings

from .workspaces import build

# Every top-level key OpenClaw's memory_search gives for a search of the memory files that answers
# (its `debug` apart: see the deliberate difference below), and what its value is.
KEYS = ("results", "provider", "model", "fallback", "citations", "mode", "stale", "warning", "action")
CITATIONS = ("on", "off", "auto")  # memory.citations' values
# Every key of one of OpenClaw's results that this product gives too (its `MemorySearchResult`
# with the tool's `corpus` and `citation`), and those it leaves out on purpose (docs/openclaw.md):
# `provenance` (its trust classification), and the keys of its inline annotations (`importance`,
# `triggers`, `projectKey`, the deprecated `originClass`), which no note here has.
RESULT_KEYS = ("path", "startLine", "endLine", "score", "vectorScore", "textScore", "snippet", "source", "corpus", "citation")
LEFT_OUT = ("provenance", "importance", "triggers", "projectKey", "originClass")


def shape(answer: dict, *, offline: bool = False) -> dict[str, str]:
    """Each of OpenClaw's keys present: ``stale`` by its value, ``citations`` by being one of the setting's
    values, the others by their JSON type. ``offline``: OpenClaw's provider ``none`` leaves out model and mode."""
    out = {}
    for key in KEYS:
        if key not in answer or (offline and key in ("model", "mode")):
            continue
        value = answer[key]
        out[key] = (repr(value) if key == "stale" else "a setting's value" if key == "citations" and value in CITATIONS
                    else type(value).__name__)
    return out


def result_shape(hit: dict) -> dict[str, str]:
    """Each of OpenClaw's result keys present: ``corpus`` by its value, the others by their JSON type
    (a whole number and a fraction are both a JSON number)."""
    return {key: repr(hit[key]) if key == "corpus" else "number" if type(hit[key]) in (int, float) else type(hit[key]).__name__
            for key in RESULT_KEYS if key in hit}


def _long_path(folder) -> None:
    """A note whose path is past the system's 4,095 bytes, made one folder at a time."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        for i in range(18):
            name = f"{i:02d}" + "d" * 240
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        os.close(os.open("note.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def test_memory_search_keys_fresh_and_stale(oracle, new_ws, tmp_path, checks, monkeypatch):
    monkeypatch.setenv("OPENCLAW_MEMORY_EMBEDDING_BACKEND", "hash")
    notes = {"MEMORY.md": "# Memory\n\n- the roof was fixed in May\n", "memory/2026-01-02.md": "# Jan 2\n\nroof leak again\n"}
    fresh_ws, stale_ws = new_ws(), new_ws()
    for ws in (fresh_ws, stale_ws):
        build(ws, notes)
    states = {ws: tmp_path / f"oc-state-{i}" for i, ws in enumerate((fresh_ws, stale_ws))}
    for state in states.values():
        state.mkdir()
    ask = [{"op": "memorysearch", "ws": str(ws), "state": str(states[ws]), "query": "roof"}
           for ws in (fresh_ws, fresh_ws, stale_ws)]  # the first builds its index; the second is a plain search
    _, theirs_fresh, built = oracle.more(ask)
    assert built.get("results"), built  # indexed: its next failed sync makes it stale, not unavailable
    _long_path(stale_ws / "memory")
    (theirs_stale,) = oracle.more([ask[2]])

    ours = {}
    for name, ws in (("fresh", fresh_ws), ("stale", stale_ws)):
        settings = resolve_settings(Overrides(workspace=str(ws), state_dir=str(tmp_path / f"state-{name}")))
        memory = LocalMemory(settings)
        try:
            memory.index()
            if name == "stale":
                (ws / "MEMORY.md").write_text(notes["MEMORY.md"] + "- the gutter too\n", encoding="utf-8")
            tools = MemoryTools(memory)
            ours[name] = tools.call(None, OPERATIONS["search"], {"query": "roof", "min_score": 0.0, "sync": name == "fresh"})
            # OpenClaw's provider "none" searches by keywords alone: ours in mode text
            ours[f"{name} text"] = tools.call(None, OPERATIONS["search"], {"query": "roof", "min_score": 0.0, "mode": "text",
                                                                          "sync": name == "fresh"})
        finally:
            memory.close()

    for name, theirs in (("fresh", theirs_fresh), ("stale", theirs_stale)):
        assert theirs.get("results"), (name, theirs)  # an answer, not OpenClaw's unavailable result
        checks.same(f"memory_search {name}: OpenClaw's keys", shape(ours[name], offline=True), shape(theirs, offline=True))
        checks.deliberate("search-no-debug", "OpenClaw's debug (its timings and internal counters) is not given",
                          "debug" in theirs and "debug" not in ours[name], f"ours: {sorted(ours[name])}")
    for name, theirs in (("fresh", theirs_fresh), ("stale", theirs_stale)):
        keyword, hybrid = ours[f"{name} text"]["results"], ours[name]["results"]
        assert keyword and hybrid, (name, ours)
        for hit in theirs["results"]:
            checks.same(f"memory_search {name}: OpenClaw's result keys are those compared or left out on purpose",
                        sorted(set(hit) - set(RESULT_KEYS) - set(LEFT_OUT)), [])
            checks.same(f"memory_search {name}, keywords only: a result's keys", result_shape(keyword[0]), result_shape(hit))
            checks.deliberate("search-no-provenance", "OpenClaw's provenance is its trust classification of the file's "
                              "writer; this product records no such class", "provenance" in hit and "provenance" not in keyword[0],
                              f"ours: {sorted(keyword[0])}")
        expected = result_shape(theirs["results"][0]) | {"vectorScore": "number"}  # mergeHybridResults gives both scores
        for hit in hybrid:
            checks.same(f"memory_search {name}, hybrid: a result's keys", result_shape(hit), expected)
            checks.same(f"memory_search {name}, hybrid: the scores fused are in [0, 1]",
                        [0 <= hit[k] <= 1 for k in ("vectorScore", "textScore")], [True, True])
    checks.same("memory_search stale: stale is the boolean true", ours["stale"].get("stale"), True)
    checks.same("memory_search fresh: model and mode given", [type(ours["fresh"].get(k)).__name__ for k in ("model", "mode")],
                ["str", "str"])
    checks.done()
