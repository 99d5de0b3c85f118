"""Agent ids normalized as OpenClaw 2026.9.6 normalizes them, asked of OpenClaw itself (``oc_more.mjs``'s
``agentid`` op): an explicit id (``--agent``, a service caller's) as its ``normalizeAgentIdStrict``,
refused where it refuses one; a config key's as its ``normalizeAgentId``, ``main`` where nothing is left.
"""

from __future__ import annotations

import random

from openclaw_memory.errors import UsageError
from openclaw_memory.settings import agent_id, openclaw_agent_id

CASES = [
    "main", "Main", "MAIN", " Main ", "ops!", "Ops Bot", "\N{CRAB}" * 100, "\N{CRAB}ops\N{CRAB}", "!!!", "..", "-", "",
    "a" * 64, "a" * 65, "A" * 70, "-x-", "x" + "-" * 70, "a" * 63 + "-", "a" * 63 + "!b",
    "\N{KELVIN SIGN}", "\N{KELVIN SIGN}-",  # lowercases to ASCII k: the form is tested on the id as typed
    "\N{LATIN CAPITAL LETTER I WITH DOT ABOVE}x", "\x1cMain-", "\ufeffops-", "\u0085ops-", "a\u3000b", "a\udcffb",
    "日本語", "../../x", "a/b", "a\\b", "a\nb", "_x", "x_y-Z",
]
ALPHABET = "aZ09_-!. /\\\t\u00a0\ufeff\x1c\u0085\N{KELVIN SIGN}\N{LATIN CAPITAL LETTER I WITH DOT ABOVE}\u03a3\N{CRAB}\udcff"


def _ours(given: str) -> list:
    try:
        strict = agent_id(given)
    except UsageError:
        strict = None
    return [strict, openclaw_agent_id(given)]


def test_agent_ids_normalize_as_openclaws(oracle, checks):
    rng = random.Random(20261206)
    cases = CASES + ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 80))) for _ in range(2000)]
    (answer,) = oracle.more([{"op": "agentid", "ids": cases}])
    assert "error" not in answer, answer
    for given, theirs in zip(cases, answer["ids"]):
        checks.same(f"agent id {given!r}", _ours(given), theirs)
    checks.done()
