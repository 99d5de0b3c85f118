"""Two ``agents.entries`` keys of one agent id ("OPS" and "ops"): OpenClaw 2026.9.6 refuses the
config (its AgentsSchema); this product refused nothing and read the first of the two for either,
so ``--agent ops`` read OPS's workspace. tests/conformance/test_agents_list.py asks OpenClaw."""

from __future__ import annotations

import json

import pytest

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


# (the keys beside main, the key OpenClaw 2026.9.6 names): its AgentsSchema takes an agents.entries key of
# /^[a-z0-9_][a-z0-9_-]{0,63}$/i only (ASCII), and refuses the config, `agents.entries.<key>: Invalid key in record`
# (asked of its validateConfigObjectRaw through tests/conformance/oc_more.mjs's agent op, which
# tests/conformance/test_agent_entries_unique.py::test_agents_entries_keys compares each run). A bad key is named
# before two keys of one id are: OpenClaw's check of those does not run then.
BAD_KEYS = [
    (["!!!"], "!!!"),
    (["ＯＰＳ"], "ＯＰＳ"),
    (["a b"], "a b"),
    (["-ops"], "-ops"),
    (["a.b"], "a.b"),
    (["x" * 65], "x" * 65),
    ([" ops"], " ops"),
    (["ops", "OPS", "!!!"], "!!!"),
]


@pytest.mark.parametrize(("keys", "named"), BAD_KEYS, ids=[k[-1][:8] for k, _n in BAD_KEYS])
def test_a_key_openclaw_refuses_is_refused_in_its_words(tmp_path, state_dir, cli, keys, named):
    """"!!!" and "ＯＰＳ" normalize to main's and ops's id: they were refused as two keys of agent id "main"
    (OpenClaw says nothing of that: the key is invalid); "a b", "-ops", "a.b" and a 65-character key were
    read, as agent a-b, ops, a-b and a 64-character cut, where OpenClaw starts on no such config."""
    write(tmp_path / "w" / "MEMORY.md", "notes\n")
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {
        "main": {"default": True, "workspace": str(tmp_path / "w")}, **{key: {} for key in keys}}}}))
    result = cli("read", "MEMORY.md", env={"OPENCLAW_WORKSPACE": ""})
    said = f'error: {state_dir / "openclaw.json"}: agents.entries.{named}: Invalid key in record\n'
    assert (result.returncode, result.stdout, result.stderr) == (2, "", said)


def test_keys_openclaw_takes_are_read_and_a_key_that_is_no_line_is_shown_as_one(tmp_path, state_dir, cli):
    write(tmp_path / "w" / "MEMORY.md", "notes\n")
    for key in ("_ops", "x" * 64, "Ops-2_"):
        write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {"main": {"default": True},
                                                                              key: {"workspace": str(tmp_path / "w")}}}}))
        result = cli("--agent", key, "read", "MEMORY.md", env={"OPENCLAW_WORKSPACE": ""})
        assert (result.returncode, result.stdout) == (0, "notes\n"), (key, result.stderr)
    write(state_dir / "openclaw.json", json.dumps({"agents": {"entries": {"main": {}, "ops\n": {}}}}))
    result = cli("read", "MEMORY.md", env={"OPENCLAW_WORKSPACE": ""})
    assert result.stderr == f"error: {state_dir / 'openclaw.json'}: agents.entries.'ops\\n': Invalid key in record\n"
