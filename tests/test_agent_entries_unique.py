"""Two ``agents.entries`` keys of one agent id ("OPS" and "ops"): OpenClaw 2026.9.6 refuses the
config (its AgentsSchema); this product refused nothing and read the first of the two for either,
so ``--agent ops`` read OPS's workspace. tests/conformance/test_agents_list.py asks OpenClaw."""

from __future__ import annotations

import json

from conftest import write


def test_two_keys_of_one_agent_id_are_refused_in_openclaws_words(tmp_path, state_dir, cli):
    ops, caps = tmp_path / "w-ops", tmp_path / "w-OPS"
    write(ops / "MEMORY.md", "ops notes\n")
    write(caps / "MEMORY.md", "OPS private\n")
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {
        "main": {"default": True, "workspace": str(ops)}, "OPS": {"workspace": str(caps)}, "ops": {"workspace": str(ops)}}}}))
    said = (f'error: {state_dir / "openclaw.json"}: agents.entries.ops: agents.entries keys "OPS" and "ops" resolve to '
            'the same agent id "ops"; rename one key so each agent has a unique id\n')
    for agent in ("ops", "OPS", "main"):  # the whole config is refused, as OpenClaw refuses it
        result = cli("--agent", agent, "read", "MEMORY.md", env={"OPENCLAW_WORKSPACE": ""})
        assert (result.returncode, result.stdout, result.stderr) == (2, "", said), agent


def test_distinct_ids_and_the_older_list_are_still_read(tmp_path, state_dir, cli):
    ops = tmp_path / "w-ops"
    write(ops / "MEMORY.md", "ops notes\n")
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {
        "main": {"default": True}, "ops": {"workspace": str(ops)}, "ops-2": {"workspace": str(tmp_path)}}}}))
    result = cli("--agent", "OPS", "read", "MEMORY.md", env={"OPENCLAW_WORKSPACE": ""})
    assert (result.returncode, result.stdout) == (0, "ops notes\n"), result.stderr
    # agents.list's second entry of one id is <id>-2's, as doctor --fix moves it: not refused
    write(state_dir / "openclaw.json", json.dumps({"agents": {"list": [{"id": "ops", "workspace": str(ops)}, {"id": "Ops"}]}}))
    result = cli("--agent", "ops", "read", "MEMORY.md", env={"OPENCLAW_WORKSPACE": ""})
    assert (result.returncode, result.stdout) == (0, "ops notes\n"), result.stderr
