"""Booleans and lists of strings of this product's own MCP tools (``memory_links``' ``broken``,
``memory_write``'s ``replaceUnread``, ``memory_search``'s ``collection`` and ``paths``) read as OpenClaw
2026.9.6 reads a tool call's arguments before any tool runs (``oc_validate.mjs``: its
``validateToolArguments`` against the tool's own ``inputSchema``): ``1``/``0`` are ``true``/``false``,
an array written as its JSON text is that array, an item that is a number or boolean is its text and
a null item ``""``; what it refuses is refused here. A null argument is its default here
(docs/mcp.md), where OpenClaw refuses a null array: a deliberate difference, counted."""

from __future__ import annotations

import json
from pathlib import Path

from openclaw_memory.mcp.server import ToolArgumentError, tool_specs
from openclaw_memory.settings import Overrides, resolve_settings

SCRIPT = Path(__file__).with_name("oc_validate.mjs")
BOOLEANS = [True, False, 1, 0, 1.0, -0.0, 2, 0.5, -1, "true", "false", "1", "0", "True", " true", "", "yes", [], [True], {}]
LISTS = [["MEMORY.md"], [], '["MEMORY.md"]', ' ["a", "b"] ', "[]", "[1, 2]", "[null]", "[true]", "[1.5e-7]", "[[1]]",
         '[{"a": 1}]', "MEMORY.md", "", "  ", '"a"', '{"a": 1}', "[NaN]", "[1e400]", "[" * 50 + "]" * 50, [3],
         [True], [None], [1.5], [1e21], [1e-7], [0.00001], [123456789012345678901234], [[1]], [{}], ["a", 3], 3, True,
         {}, '["' + "x" * 70_000 + '"]']
CASES = ([("memory_links", "broken", v) for v in BOOLEANS] + [("memory_write", "replaceUnread", v) for v in BOOLEANS[:10]]
         + [("memory_search", name, v) for name in ("paths", "collection") for v in LISTS])
DELIBERATE = [("memory_search", "paths", None), ("memory_search", "collection", None)]


def _ours(param, value) -> dict:
    try:
        got = param.take({param.name: value})
    except ToolArgumentError as exc:
        return {"refused": str(exc)}
    return {"args": list(got) if isinstance(got, tuple) else got}


def test_booleans_and_lists_are_read_as_openclaws_validator_reads_them(oracle, tmp_path, checks):
    (tmp_path / "ws").mkdir()
    settings = resolve_settings(Overrides(workspace=str(tmp_path / "ws"), state_dir=str(tmp_path / "state")))
    specs = {spec.name: spec for spec in tool_specs(settings, None)}
    params = {(spec.name, p.name): p for spec in specs.values() for p in spec.params}
    calls = CASES + DELIBERATE
    requests = [{"schema": {**specs[tool].listing()["inputSchema"], "required": []}, "args": {name: value}}
                for tool, name, value in calls]
    theirs = oracle._run(SCRIPT, requests)
    for (tool, name, value), answer in list(zip(calls, theirs))[: len(CASES)]:
        mine = _ours(params[tool, name], value)
        label = f"{tool} {name}: {json.dumps(value)[:80]}"
        if "refused" in answer:
            checks.same(f"{label}: refused ({answer['refused']!r})", "refused" in mine, True)
        else:
            checks.same(label, mine, {"args": answer["args"][name]})
    for (tool, name, value), answer in list(zip(calls, theirs))[len(CASES):]:
        mine = _ours(params[tool, name], value)
        checks.deliberate("null-argument-is-default", "a null argument of this product's own tools is its default",
                          "refused" in answer and "args" in mine, f"{tool} {name}: {mine} / {answer}")
    checks.done()
