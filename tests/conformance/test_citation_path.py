"""``read`` / MCP ``memory_get`` take a search citation as the path (``memory/a.md#L2-L3`` reads those
lines): a deliberate difference, OpenClaw's ``memory_get`` refuses it (``MEMORY_PATH_NOT_ALLOWED``)."""

from __future__ import annotations

from conftest import env_for, run_in_process

from .workspaces import build, read_request

REASON = "an agent opens exactly the passage a search result names, by the citation the result gives"


def test_a_citation_reads_its_lines(oracle, new_ws, tmp_path, checks):
    ws = new_ws()
    build(ws, {"memory/a.md": "one\ntwo\nthree\nfour\n", "MEMORY.md": "m1\nm2\n"})
    cases = [("memory/a.md#L2-L3", "two\nthree"), ("MEMORY.md#L2", "m2"), ("memory/a.md#l3-l4", "three\nfour")]
    answers = oracle.batch([read_request(ws, path, []) for path, _lines in cases])
    for (path, lines), answer in zip(cases, answers):
        got = run_in_process(("read", path, "--json"), env=env_for(ws, tmp_path / "state"), cwd=ws)
        ours = got.json() if got.returncode == 0 else {}
        checks.deliberate("citation-path-read", REASON,
                          answer.get("code") == "MEMORY_PATH_NOT_ALLOWED" and ours.get("text", "").startswith(lines),
                          f"{path}: ours {ours} OpenClaw {answer}")
    checks.done()
