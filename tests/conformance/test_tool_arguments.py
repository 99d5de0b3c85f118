"""MCP ``memory_get`` / ``memory_search`` arguments next to OpenClaw 2026.9.6's own tools, called as
its agent loop calls them (``oc_tool_args.mjs``): the arguments checked and coerced against the
tool's schema first (``validateToolArguments``: ``type: integer, minimum: 1`` for ``from``,
``lines`` and ``maxResults``; null read as 0, a boolean as 1 or 0, a numeric string as its number),
then the tool's own checks (``readPositiveIntegerParam``: nothing past 2^53 - 1).

What one refuses the other refuses, in the same words where OpenClaw has them (``must be >= 1``,
``must be integer``, ``must be a positive integer``); what one takes the other takes, and for
``memory_get`` reads the same window. ``minScore`` outside 0-1 and the ``wiki``/``sessions``
corpora are deliberate differences (docs/openclaw.md).
"""

from __future__ import annotations

import json
from pathlib import Path

from openclaw_memory.mcp.server import MemoryTools, tool_specs
from openclaw_memory.memory.local import LocalMemory
from openclaw_memory.settings import Overrides, resolve_settings

from .workspaces import build

SCRIPT = Path(__file__).with_name("oc_tool_args.mjs")
A = "memory/a.md"
GET = [{"from": 0}, {"from": 1.9}, {"from": "2"}, {"from": " 2 "}, {"from": "2.0"}, {"from": 2.0}, {"from": "1e0"},
       {"from": "0x2"}, {"from": "abc"}, {"from": ""}, {"from": "  "}, {"from": True}, {"from": False}, {"from": None},
       {"lines": -1}, {"lines": "0"}, {"lines": 0}, {"lines": None}, {"lines": 1.5}, {"from": 2, "lines": 1},
       {"from": 9007199254740991}, {"from": 9007199254740992}, {"from": 1e300}, {"lines": 2**53}, {"from": [2]},
       {"from": {}}, {"extra": 1}, {"line": 2}, {"corpus": "bogus"}, {"corpus": None}, {"corpus": ""},
       {"corpus": "sessions"}, {"corpus": 1}, {"corpus": "memory"}, {"corpus": "all"}]
GET_PATHS = [{"path": None}, {"path": ""}, {"path": "  "}, {"path": " memory/a.md "}, {}]
SEARCH = [{"maxResults": 0}, {"maxResults": 1.5}, {"maxResults": "2"}, {"maxResults": -1}, {"maxResults": None},
          {"maxResults": True}, {"maxResults": False}, {"maxResults": ""}, {"maxResults": 2**53}, {"maxResults": 5000},
          {"minScore": "0.5"}, {"minScore": "abc"}, {"minScore": None}, {"minScore": True}, {"minScore": ""},
          {"minScore": "1e400"}, {"max_results": 2}, {"corpus": "bogus"}, {"corpus": None}, {"extra": 1}]
SEARCH_QUERIES = [{"query": ""}, {"query": "  "}, {"query": None}, {"query": 1}, {}]
# Deliberate (docs/openclaw.md): minScore is a calibrated 0-1 relevance here; the wiki and session
# corpora are OpenClaw's plugins', not held here.
DELIBERATE = [("memory_search", {"query": "hello", "minScore": -1}), ("memory_search", {"query": "hello", "minScore": 2}),
              ("memory_search", {"query": "hello", "corpus": "sessions"}), ("memory_get", {"path": A, "corpus": "wiki"})]
# OpenClaw's refusal, by its words, and what ours says for it.
SAID = {"must be >= 1": "must be >= 1", "must be integer": "must be integer", "must be a positive integer":
        "must be a positive integer", "must be equal to one of the allowed values": "must be one of",
        "must be number": "must be a number", "must not have additional properties": "is not an argument of"}


def _calls() -> list[tuple[str, dict]]:
    return ([("memory_get", {"path": A, **a}) for a in GET] + [("memory_get", a) for a in GET_PATHS]
            + [("memory_search", {"query": "hello", **a}) for a in SEARCH] + [("memory_search", a) for a in SEARCH_QUERIES])


def _ours(specs: dict, tool: str, args: dict) -> dict:
    try:
        answer = json.loads(specs[tool].call(None, args))
    except Exception as exc:  # noqa: BLE001 - a tool error, whatever raised it
        return {"refused": str(exc)}
    if tool == "memory_get":
        return {"answer": {k: answer.get(k) for k in ("text", "from", "lines", "nextFrom", "status")}}
    return {"answer": {"accepted": True}}


def _theirs(answer: dict) -> dict:
    assert "error" not in answer, answer  # the oracle itself failed
    if "refused" in answer:
        return {"refused": answer["message"]}
    got = answer["answer"]
    return {"answer": {k: got.get(k) for k in ("text", "from", "lines", "nextFrom", "status")} if "text" in got else got}


def test_tool_arguments_are_refused_and_taken_as_openclaws_tools_do(oracle, new_ws, tmp_path, checks):
    ws = new_ws()
    build(ws, {A: "l1\nl2\nl3\n", "MEMORY.md": "# Memory\n\nhello world\n"})
    state = tmp_path / "state-openclaw"
    state.mkdir()
    calls = _calls() + DELIBERATE
    theirs = oracle._run(SCRIPT, [{"tool": tool, "args": args, "ws": str(ws), "state": str(state)} for tool, args in calls])
    settings = resolve_settings(Overrides(workspace=str(ws), state_dir=str(tmp_path / "state")))
    memory = LocalMemory(settings)
    try:
        memory.index()
        specs = {spec.name: spec for spec in tool_specs(settings, MemoryTools(memory))}
        ours = [_ours(specs, tool, args) for tool, args in calls]
    finally:
        memory.close()
    for (tool, args), mine, answer in list(zip(calls, ours, theirs))[: len(calls) - len(DELIBERATE)]:
        their = _theirs(answer)
        label = f"{tool} {json.dumps(args)}"
        if "refused" in their and "refused" in mine:
            words = [ours_ for theirs_, ours_ in SAID.items() if theirs_ in their["refused"]]
            checks.same(f"{label}: refused in OpenClaw's words ({their['refused']!r})",
                        all(w in mine["refused"] for w in words), True)
        else:
            checks.same(label, mine, their)
    for (tool, args), mine, answer in list(zip(calls, ours, theirs))[len(calls) - len(DELIBERATE):]:
        checks.deliberate("tool-argument-range" if "minScore" in args else "corpus-memory-only",
                          "minScore is a calibrated 0-1 relevance; only the memory files are held",
                          "refused" in mine and "refused" not in _theirs(answer), f"{tool} {args}: {mine} / {answer}")
    checks.done()
