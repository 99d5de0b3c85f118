"""``openclaw-memory mcp`` driven by a real MCP client session (same SDK) over stdio.

The server is the real CLI in a subprocess; the client lists the tools and calls each, and
the files are changed from this process in between, as a person in an editor would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import env_for, fault, settings_for, wait_for, wait_for_line, write

TOOLS = {"memory_search", "memory_get", "memory_write", "memory_status", "memory_files", "memory_links"}

def server_params(workspace: Path, state_dir: Path, real_model: bool = False) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "openclaw_memory", "mcp", "-w", str(workspace), "--state-dir", str(state_dir)],
        env=env_for(workspace, state_dir, real_model=real_model),
        cwd=str(workspace),
    )


def run_session(workspace: Path, state_dir: Path, script, real_model: bool = False):
    """Run ``script(session)`` against a fresh server; returns what it returns."""

    async def main():
        async with stdio_client(server_params(workspace, state_dir, real_model)) as (read, write_stream):
            async with ClientSession(read, write_stream) as session:
                await session.initialize()
                return await script(session)

    return asyncio.run(asyncio.wait_for(main(), timeout=120))


def text_of(result) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def payload(result) -> dict:
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


def test_tools_listed_and_each_one_works(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n\nThe user's cat is called Pistachio.\n")
    write(workspace / "memory" / "projects" / "boat.md", "# Boat\n\nSanding the teak deck of the ketch this spring.\n")
    assert cli("index").returncode == 0

    async def script(session):
        out = {}
        tools = (await session.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["search"] = await session.call_tool("memory_search", {"query": "teak deck ketch", "maxResults": 3, "minScore": 0})
        out["get"] = await session.call_tool("memory_get", {"path": "memory/projects/boat.md", "from": 1, "lines": 2})
        await session.call_tool("memory_get", {"path": "memory/projects/boat.md", "from": 3})  # the rest: a replace needs it
        out["write"] = await session.call_tool(
            "memory_write", {"path": "memory/projects/boat.md", "content": "# Boat\n\nThe ketch got a new mainsail.\n"}
        )
        out["written_text"] = (workspace / "memory" / "projects" / "boat.md").read_text()
        out["search_after_write"] = await session.call_tool("memory_search", {"query": "new mainsail", "minScore": 0})
        # A person edits the file in an editor: the agent's next write, based on its old read, is blocked.
        write(workspace / "memory" / "projects" / "boat.md", "# Boat\n\nEdited by hand: sold the ketch.\n")
        out["blocked"] = await session.call_tool("memory_write", {"path": "memory/projects/boat.md", "append": "more"})
        out["status"] = await session.call_tool("memory_status", {})
        return out

    out = run_session(workspace, state_dir, script)

    assert set(out["tools"]) == TOOLS
    for tool in out["tools"].values():
        assert "MEMORY.md" in tool.description and "memory/" in tool.description and "recursively" in tool.description
    assert set(out["tools"]["memory_get"].input_schema["properties"]) == {"path", "from", "lines", "maxChars", "corpus"}
    assert {"query", "maxResults", "minScore", "collection", "paths", "since", "until", "corpus"} == set(
        out["tools"]["memory_search"].input_schema["properties"]
    )

    search = payload(out["search"])
    assert search["results"] and search["results"][0]["path"] == "memory/projects/boat.md"
    # OpenClaw 2026.9.6's keys; fresh: no `stale` key at all (any value there, [] too, is stale to JavaScript).
    assert search["provider"] == "hash" and search["model"] and search["citations"] == "on" and search["mode"] == "hybrid"
    assert not {"stale", "warning", "action", "stalePaths"} & set(search), search
    assert search["results"][0]["citation"].startswith("memory/projects/boat.md#L")

    got = payload(out["get"])
    assert got["path"] == "memory/projects/boat.md" and got["from"] == 1 and got["lines"] == 2
    assert got["text"].startswith("# Boat\n") and got["nextFrom"] == 3
    assert len(got["version"]) == 32

    written = payload(out["write"])
    assert written["action"] == "replace" and written["previousVersion"] == got["version"]
    assert written["index"]["updated"] is True
    assert out["written_text"] == "# Boat\n\nThe ketch got a new mainsail.\n"
    assert any(h["path"] == "memory/projects/boat.md" for h in payload(out["search_after_write"])["results"])

    assert out["blocked"].is_error
    # In the tools' words, not the CLI's.
    assert "changed since" in text_of(out["blocked"]) and "call memory_get again" in text_of(out["blocked"]).lower()
    assert "openclaw-memory read" not in text_of(out["blocked"])
    assert (workspace / "memory" / "projects" / "boat.md").read_text() == "# Boat\n\nEdited by hand: sold the ketch.\n"

    status = payload(out["status"])
    assert status["indexed"] is True and {c["name"] for c in status["collections"]} >= {"memory-root-main", "memory-dir-main"}


def test_errors_are_tool_errors_and_the_server_keeps_serving(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\nNothing indexed yet.\n")
    (workspace / "notes.txt").write_text("not memory\n")

    async def script(session):
        calls = [
            ("memory_get", {"path": "../../etc/passwd"}),
            ("memory_get", {"path": "notes.txt"}),
            ("memory_write", {"path": "MEMORY.md", "content": "x", "append": "y"}),
            ("memory_write", {"path": "MEMORY.md", "content": "overwrite without reading"}),
            ("memory_search", {"query": "  "}),
            ("memory_search", {"maxResults": 3}),
            ("memory_get", {"path": "MEMORY.md#L3-L1"}),  # a citation running backwards
            ("memory_get", {"path": "memory/a\x00b.md"}),
            ("memory_search", {"query": "anything", "maxResults": 10**400}),  # past any float
            ("memory_search", {"query": "anything", "since": "yesterday"}),
            ("memory_search", {"query": "anything", "since": "2027-01-01", "until": "2020-01-01"}),
            ("memory_write", {"path": "MEMORY.md", "append": "x", "expect": "59cc"}),
            ("memory_get", {"path": "MEMORY.md", "from": 1, "lines": 1, "maxChars": 1}),  # the least window there is
        ]
        return [await session.call_tool(name, args) for name, args in calls]

    *errors, last = run_session(workspace, state_dir, script)
    assert all(r.is_error for r in errors), [text_of(r) for r in errors]
    texts = [text_of(r) for r in errors]
    assert "memory" in texts[0].lower()  # the read refusal names what is allowed
    assert "call memory_get first" in texts[3] and "--expect" not in texts[3]
    assert "query is empty" in texts[4], texts[4]
    assert "MEMORY.md#L1-L3" in texts[6]  # the order that works
    assert "NUL character" in texts[7]
    assert texts[8].startswith("`maxResults` must be integer (a whole number, 1 or more), not 1000")
    # In the tools' words: the argument as the schema names it, the next step a tool can take.
    assert texts[9] == "`since` must be a date like 2026-11-03, not 'yesterday'"
    assert texts[10] == "`since` 2027-01-01 is after the until date, 2020-01-01"
    assert texts[11].startswith("`expect` must be a version") and "memory_get" in texts[11] and "history" not in texts[11]
    clamped = payload(last)
    assert (clamped["from"], clamped["lines"], clamped["truncated"], clamped["text"]) == (
        1, 1, True, "#\n\n[More content available. Requested excerpt exceeded the default maxChars budget. "
        "If you need the full raw line, use read on the source file.]")
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\nNothing indexed yet.\n"


def test_tools_say_what_they_do_and_bad_arguments_are_worded(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")

    async def main():
        async with stdio_client(server_params(workspace, state_dir)) as (read, write_stream):
            async with ClientSession(read, write_stream) as session:
                init = await session.initialize()
                listed = {t.name: t for t in (await session.list_tools()).tools}
                bad = [
                    await session.call_tool("memory_search", {"query": "tea", "maxResults": "abc"}),
                    await session.call_tool("memory_search", {"query": "tea", "minScore": 2}),
                    await session.call_tool("memory_search", {}),
                    await session.call_tool("memory_get", {"path": "MEMORY.md", "from": "one"}),
                    await session.call_tool("memory_write", {"path": ["memory/a.md"], "append": "x"}),
                    await session.call_tool("memory_nothing", {}),
                ]
                fraction = await session.call_tool("memory_get", {"path": "MEMORY.md", "from": 2.7, "lines": 1.9})
                return init, listed, bad, fraction

    init, listed, bad, fraction = asyncio.run(asyncio.wait_for(main(), timeout=120))
    caps = init.capabilities
    assert caps.tools is not None and caps.resources is None and caps.prompts is None
    notes = {name: tool.annotations for name, tool in listed.items()}
    assert all(notes[n].read_only_hint is True for n in ("memory_search", "memory_get", "memory_status"))
    write_note = notes["memory_write"]
    assert (write_note.read_only_hint, write_note.destructive_hint, write_note.idempotent_hint) == (False, False, True)
    assert all(note.open_world_hint is False and note.title for note in notes.values())
    window = listed["memory_get"].input_schema["properties"]
    assert [(window[k]["type"], window[k]["minimum"]) for k in ("from", "lines")] == [("integer", 1)] * 2
    assert window["maxChars"]["type"] == "number" and "minimum" not in window["maxChars"]  # 0 reads 1 character, 1.5 one
    assert listed["memory_search"].input_schema["required"] == ["query"]

    texts = [text_of(r) for r in bad]
    assert all(r.is_error for r in bad), texts
    assert texts[0] == '`maxResults` must be integer (a whole number, 1 or more), not "abc"'
    assert texts[1] == "`minScore` must be a number from 0 to 1, not 2"
    assert texts[2].startswith("`query` is required")
    assert texts[3] == '`from` must be integer (a whole number, 1 or more), not "one"'
    assert texts[4] == '`path` must be a string, not ["memory/a.md"]'
    assert "there is no tool 'memory_nothing'" in texts[5] and "memory_search" in texts[5]
    assert not any("pydantic" in t or "validation error" in t for t in texts)
    # Refused as OpenClaw's memory_get refuses it (its schema: type integer), not floored.
    assert fraction.is_error and text_of(fraction) == "`from` must be integer (a whole number, 1 or more), not 2.7"


def _raw_session(workspace, state_dir, lines: list[dict | str]) -> tuple[list[dict], str]:
    """Raw JSON-RPC lines to ``openclaw-memory mcp``: the answers to the requests, and its stderr."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_for(workspace, state_dir), cwd=workspace)
    assert proc.stdin and proc.stdout and proc.stderr
    answers = []
    for line in lines:
        proc.stdin.write((line if isinstance(line, str) else json.dumps(line)).encode() + b"\n")
        proc.stdin.flush()
        if isinstance(line, str) or "id" in line:  # a garbled line is answered too (id null when none is found)
            answers.append(json.loads(proc.stdout.readline()))
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    return answers, proc.stderr.read().decode()


HELLO = {"jsonrpc": "2.0", "id": 7, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def test_initialize_is_answered_before_the_sdk_loads_and_as_the_sdk_answers(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    answers, stderr = _raw_session(workspace, state_dir, [
        HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}},
    ])
    hello, listed, got = answers
    assert hello["id"] == 7 and hello["result"]["protocolVersion"] == "2025-06-18"
    assert hello["result"]["capabilities"] == {"tools": {"listChanged": False}}
    assert "differed" not in stderr, stderr  # the SDK's own answer, compared and dropped, was the same
    assert len(listed["result"]["tools"]) == len(TOOLS)
    assert json.loads(got["result"]["content"][0]["text"])["text"].startswith("# Memory")
    old, _ = _raw_session(workspace, state_dir, [{**HELLO, "params": {**HELLO["params"], "protocolVersion": "1999-01-01"}}])
    assert old[0]["result"]["protocolVersion"] == "2025-11-25"  # the newest handshake version, as the SDK picks


def test_a_first_line_that_is_not_initialize_goes_to_the_sdk(workspace, state_dir):
    answers, stderr = _raw_session(workspace, state_dir, ["{not json", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, HELLO])
    garbled, early, hello = answers
    assert garbled == {"jsonrpc": "2.0", "id": None, "error": {
        "code": -32700, "message": "the request cannot be read: Invalid JSON: key must be a string at line 1 column 2"}}
    assert early["id"] == 1 and "error" in early  # before initialize: refused by the SDK
    assert hello["result"]["serverInfo"]["name"] == "openclaw-memory" and "Traceback" not in stderr


def test_the_handshake_versions_are_the_sdks():
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    from openclaw_memory.mcp.stdio import HANDSHAKE_VERSIONS

    assert HANDSHAKE_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


def test_every_request_read_is_answered_even_one_the_sdk_cannot_read_and_at_the_end_of_input(workspace, state_dir):
    """A client may write its requests and close its end (a script, a pipe): each one is answered
    before the server exits. JavaScript writes half an emoji as a lone surrogate escape, which the
    SDK cannot read: that request gets an error with its id instead of no answer."""
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    get = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}}
    lines = [json.dumps(HELLO), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             *(json.dumps({**get, "id": n}) for n in (20, 21, 22)),
             '{"jsonrpc": "2.0", "id": 23, "method": "tools/call", "params": {"name": "memory_write", '
             '"arguments": {"path": "MEMORY.md", "append": "half \\ud83d"}}}']
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], input="\n".join(lines).encode() + b"\n",
                          capture_output=True, env=env_for(workspace, state_dir), cwd=workspace, timeout=120)
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.decode().splitlines())}
    assert sorted(answers) == [7, 20, 21, 22, 23], done.stdout
    assert all(answers[n]["result"]["content"][0]["text"] for n in (20, 21, 22))
    assert answers[23]["error"]["code"] == -32600 and "surrogate" in answers[23]["error"]["message"]
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\n- prefers green tea\n"


def test_bytes_that_are_not_utf8_odd_ids_and_endless_numbers_are_refused_never_rewritten(workspace, state_dir):
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n")
    call = b'{"jsonrpc": "2.0", "id": %s, "method": "tools/call", "params": {"name": "memory_write", "arguments": %s}}'
    lines = [json.dumps(HELLO).encode(), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
             call % (b"30", b'{"path": "memory/bin.md", "content": "caf\xe9 \xff bytes"}'),
             call % (b"31", b'{"path": "memory/\xff.md", "content": "x"}'),
             *(call % (odd, b'{"path": "memory/odd.md", "content": "x"}') for odd in (b"null", b"1.5", b"true", b"{}")),
             b'{"jsonrpc": "2.0", "id": 33, "method": "tools/call", "params": {"name": "memory_get", '
             b'"arguments": {"path": "MEMORY.md", "from": ' + b"9" * 5000 + b'}}}',
             b'{"jsonrpc": "2.0", "id": 32, "method": "ping"}']
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], input=b"\n".join(lines) + b"\n",
                          capture_output=True, env=env_for(workspace, state_dir), cwd=workspace, timeout=120)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    by_id = {a["id"]: a for a in answers if a["id"] is not None}
    for n in (30, 31):
        assert by_id[n]["error"]["code"] == -32700 and "not valid UTF-8" in by_id[n]["error"]["message"]
    odd = [a for a in answers if a["id"] is None]
    assert len(odd) == 4 and all("must be a string or an integer" in a["error"]["message"] for a in odd)
    assert by_id[32]["result"] == {}
    assert by_id[33]["error"]["code"] in (-32700, -32600)  # a number past any limit: refused with its id
    assert not (workspace / "memory").exists() or not any((workspace / "memory").iterdir())  # nothing was written


def test_a_line_past_the_cap_is_refused_unread_and_the_next_line_is_served():
    import io

    import anyio

    from openclaw_memory.mcp.stdio import _Lines, _Wire

    out = io.BytesIO()
    ping = '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
    long = '{"jsonrpc": "2.0", "id": 4, "method": "ping", "params": {"x": "' + "a" * 5000 + '"}}\n'
    lines = _Lines(io.StringIO(long + ping + long[:-1]), _Wire(out, {}), limit=1000)

    async def read() -> list:
        await lines.read()
        return [item for _, _, item in lines.queue]

    read_ = anyio.run(read)
    assert [item.method for item in read_ if not isinstance(item, bytes)] == ["notifications/initialized"]
    refused = [json.loads(item) for item in read_ if isinstance(item, bytes)]
    assert len(refused) == 2  # the one in the middle and the one the input ends with
    assert all(r["error"]["code"] == -32600 and "longer than" in r["error"]["message"] for r in refused)


def test_lines_refused_while_no_answer_is_read_count_toward_the_bound_on_what_is_held(monkeypatch):
    """Bad lines (`x`) from a client that reads no answer: each refusal waited in the queue counted as
    nothing, so reading never stopped and the server held ~270 bytes more for every 2-byte line
    (143 MiB after 660 KB). Each entry counts at least ``ENTRY``: reading stops at the bound."""
    import io

    import anyio

    from openclaw_memory.mcp import stdio

    monkeypatch.setattr(stdio, "MAX_QUEUED", stdio.ENTRY * 50)
    given = io.StringIO("x\n" * 10_000)
    lines = stdio._Lines(given, stdio._Wire(io.BytesIO(), {}))

    async def read() -> None:
        with anyio.move_on_after(2):  # it waits for room that nothing here makes
            await lines.read()

    anyio.run(read)
    assert len(lines.queue) == 50 and given.tell() < len(given.getvalue()), (len(lines.queue), given.tell())


@pytest.mark.slow
def test_a_request_past_256_mib_on_stdio_is_refused_and_the_session_goes_on(workspace, state_dir):
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n")
    huge = b'{"jsonrpc": "2.0", "id": 40, "method": "tools/call", "params": {"name": "memory_write", ' \
           b'"arguments": {"path": "memory/big.md", "content": "' + b"x" * (257 << 20) + b'"}}}'
    lines = [json.dumps(HELLO).encode(), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}', huge,
             b'{"jsonrpc": "2.0", "id": 41, "method": "ping"}']
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], input=b"\n".join(lines) + b"\n",
                          capture_output=True, env=env_for(workspace, state_dir), cwd=workspace, timeout=300)
    answers = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [a["id"] for a in answers] == [7, None, 41], answers
    assert "longer than 256 MiB" in answers[1]["error"]["message"] and answers[2]["result"] == {}
    assert not (workspace / "memory" / "big.md").exists()


def test_a_request_id_reused_in_the_handshake_is_answered_once_per_request(workspace, state_dir):
    """Piped whole, then the end of the input: every request is answered, each once, in every run.

    The early answer to ``initialize`` frees its id for the client, so the same id can stand for
    two requests the SDK has read and not answered. The transport counted the unanswered ids in a
    set: the first answer emptied it, the input ended, and the SDK cancelled the second request
    unanswered (1 run in 10 with ``tools/list``; nearly every run with a tool call after it). Many
    real processes, since the loss depends on which thread is first."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    write(workspace / "MEMORY.md", "# Memory\n")
    hello = json.dumps({**HELLO, "id": 1})
    listing = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    get = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}})
    cases = [[hello, listing], [hello, listing, get]] * 8

    def run(lines: list[str]) -> tuple[int, list[dict], str]:
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], input="\n".join(lines).encode() + b"\n",
                              capture_output=True, env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off"),
                              cwd=workspace, timeout=120)
        return len(lines), [json.loads(line) for line in done.stdout.decode().splitlines()], done.stderr.decode()

    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(run, cases))
    for asked, answers, stderr in runs:
        assert len(answers) == asked, (answers, stderr)
        assert "serverInfo" in answers[0]["result"]
        # Each request one answer. A request whose id is still in flight is refused, saying so (the
        # SDK keeps one request per id: one of the two went unanswered, 1 run in 6 of this test).
        for answer in answers[1:]:
            assert ("tools" in answer["result"] or not answer["result"].get("isError")) if "result" in answer else (
                "belongs to a request not answered yet" in answer["error"]["message"] and answer["id"] == 1), answer
        assert "differed" not in stderr


def _stdio_server(workspace, state_dir):
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="off"), cwd=workspace)

    def send(message: dict) -> None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    send(HELLO)
    assert json.loads(proc.stdout.readline())["id"] == 7
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}})
    assert json.loads(proc.stdout.readline())["id"] == 2
    return proc, send


def test_ctrl_c_stops_a_stdio_server_whose_client_still_holds_its_input_open(workspace, state_dir):
    import signal

    write(workspace / "MEMORY.md", "# Memory\n")
    proc, _send = _stdio_server(workspace, state_dir)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130  # it waited for the client's next line before
    proc.stdin.close()
    said = proc.stderr.read()
    assert b"interrupted" in said
    # Caught, then the input ended: a KeyboardInterrupt raised wherever the event loop was (in anyio's
    # own bookkeeping) left it spinning at full CPU, never exiting (1 in about 40 Ctrl-Cs after a call).
    assert b"stopping (Ctrl-C): answering the calls already read" in said, said


def test_a_client_that_closes_the_servers_output_stops_it_quietly(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n\n- alpha\n")
    proc, send = _stdio_server(workspace, state_dir)
    send({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "memory_search", "arguments": {"query": "alpha"}}})
    proc.stdout.close()
    send({"jsonrpc": "2.0", "id": 8, "method": "ping"})  # answered after the close whatever the search's speed
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0
    stderr = proc.stderr.read().decode()
    assert "Traceback" not in stderr and "closed its end" in stderr


def test_messages_the_sdk_cannot_take_are_refused_in_plain_words_on_stdio(workspace, state_dir):
    write(workspace / "MEMORY.md", "# Memory\n")
    lines = [{"jsonrpc": "2.0", "id": 40}, {"jsonrpc": "1.0", "id": 41, "method": "ping"}, "[]",
             {"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {"name": "memory_get", "arguments": "MEMORY.md"}},
             {"jsonrpc": "2.0", "id": 43, "method": "tools/call", "params": {"arguments": {}}}]
    answers, stderr = _raw_session(workspace, state_dir, [HELLO, *lines])
    said = {a["id"]: a["error"] for a in answers[1:]}
    assert said[40]["code"] == -32600 and 'it has no "method"' in said[40]["message"]
    assert said[41]["code"] == -32600 and '"jsonrpc" member must be "2.0"' in said[41]["message"]
    assert "a batch" in said[None]["message"]
    assert said[42]["code"] == -32602 and '"params.arguments" must be an object' in said[42]["message"]
    assert said[43]["code"] == -32602 and 'must hold "name"' in said[43]["message"]
    assert not any("JSONRPC" in e["message"] for e in said.values()) and "Traceback" not in stderr


def test_parallel_calls_of_one_session_do_not_blame_another_process(workspace, state_dir):
    """Appends sent at once wait for each other's index update inside one server: no news for the client's log."""
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n")
    subprocess.run([sys.executable, "-m", "openclaw_memory", "index"], env=env_for(workspace, state_dir), cwd=workspace,
                   check=True, capture_output=True, timeout=120)  # each write then updates the index
    proc, send = _stdio_server(workspace, state_dir)
    for n in range(12):
        send({"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call",
              "params": {"name": "memory_write", "arguments": {"path": "memory/2026-12-03.md", "append": f"note {n}"}}})
    answers = [json.loads(proc.stdout.readline()) for _ in range(12)]
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0
    assert all("result" in a and not a["result"].get("isError") for a in answers), answers
    assert f"(pid {proc.pid})" not in proc.stderr.read().decode()


def test_a_line_nested_past_the_parsers_depth_is_refused_also_during_the_handshake(workspace, state_dir):
    """The handshake is read before the SDK loads: a first line of 100,000 nested arrays stopped the
    server with a RecursionError traceback (json's own parser), where any later line is refused."""
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n")
    deep = "[" * 100_000 + "]" * 100_000
    for lines in ([deep, json.dumps(HELLO)], [json.dumps(HELLO), deep]):
        done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"],
                              input="\n".join([*lines, '{"jsonrpc": "2.0", "id": 5, "method": "ping"}']).encode() + b"\n",
                              capture_output=True, env=env_for(workspace, state_dir), cwd=workspace, timeout=120)
        stderr = done.stderr.decode()
        assert done.returncode == 0 and "Traceback" not in stderr, stderr
        answers = {a["id"]: a for a in map(json.loads, done.stdout.decode().splitlines())}
        assert answers[None]["error"]["code"] == -32700 and "recursion limit" in answers[None]["error"]["message"]
        assert answers[5]["result"] == {} and "serverInfo" in answers[7]["result"]


def test_an_argument_a_tool_does_not_take_is_refused_naming_the_right_one(workspace, state_dir):
    """An unknown argument was ignored: `from_line` read from line 1, `limit` gave six results, and
    `expected` wrote without the check the agent asked for. Each is refused, naming the tool's own
    spelling where it is another spelling of one (the CLI's, snake_case), and nothing is written."""
    write(workspace / "MEMORY.md", "# Memory\n\nline a\nline b\n")

    async def script(session):
        listed = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        calls = [("memory_get", {"path": "MEMORY.md", "from_line": 3}),
                 ("memory_search", {"query": "line", "limit": 1}),
                 ("memory_write", {"path": "memory/new.md", "content": "x", "expected": "0123abcd"}),
                 ("memory_write", {"path": "memory/new.md", "text": "x"}),
                 ("memory_status", {"verbose": True}),
                 ("memory_get", {"path": "MEMORY.md", "k" * (1 << 20): 1}), ("m" * (1 << 20), {})]
        return listed, [text_of(r) if r.is_error else None for r in [await session.call_tool(n, a) for n, a in calls]]

    listed, said = run_session(workspace, state_dir, script)
    assert all(schema["additionalProperties"] is False for schema in listed.values())
    assert said[0] == ("`from_line` is not an argument of memory_get (did you mean `from`?); its arguments: path, from, lines, "
                       "maxChars, corpus")
    assert said[1].startswith("`limit` is not an argument of memory_search (did you mean `maxResults`?)")
    assert said[2].startswith("`expected` is not an argument of memory_write (did you mean `expect`?)")
    assert said[3] == ("`text` is not an argument of memory_write; its arguments: path, content, append, expect, "
                       "idempotencyKey, replaceUnread")
    assert said[4] == "memory_status takes no arguments, not `verbose`"
    assert said[5].startswith("`kkk") and len(said[5]) < 200  # a 1 MB name is not sent back whole
    assert said[6].startswith("there is no tool 'mmm") and len(said[6]) < 200
    assert not (workspace / "memory" / "new.md").exists()


def test_openclaws_corpus_argument_is_taken_and_answers_from_the_memory_files(workspace, state_dir, cli):
    """OpenClaw's memory_search and memory_get take ``corpus`` (its schema lists memory, wiki, all and,
    for search, sessions), and an agent made for OpenClaw sends it: memory and all answer from the
    memory files, the one corpus here; wiki and sessions, corpora of OpenClaw's plugins, are refused
    saying so; a value OpenClaw's schema does not list is refused as it would be."""
    write(workspace / "MEMORY.md", "# Memory\n\nThe boat is moored at Pier 7.\n")
    assert cli("index").returncode == 0

    async def script(session):
        listed = {t.name: t.input_schema for t in (await session.list_tools()).tools}
        calls = [("memory_search", {"query": "boat pier", "corpus": "memory"}),
                 ("memory_search", {"query": "boat pier", "corpus": "all"}),
                 ("memory_get", {"path": "MEMORY.md", "corpus": "memory"}),
                 ("memory_search", {"query": "boat pier", "corpus": "sessions"}),
                 ("memory_get", {"path": "MEMORY.md", "corpus": "wiki"}),
                 ("memory_get", {"path": "MEMORY.md", "corpus": "sessions"})]
        return listed, [await session.call_tool(n, a) for n, a in calls]

    listed, (memory, every, got, sessions, wiki, bad) = run_session(workspace, state_dir, script)
    assert listed["memory_search"]["properties"]["corpus"]["enum"] == ["memory", "wiki", "all", "sessions"]
    assert listed["memory_get"]["properties"]["corpus"]["enum"] == ["memory", "wiki", "all"]
    for result in (memory, every):
        assert payload(result)["results"][0]["path"] == "MEMORY.md"
    assert "Pier 7" in payload(got)["text"]
    assert sessions.is_error and text_of(sessions).startswith("memory_search with corpus `sessions`: openclaw-memory "
                                                              "holds the memory files only")
    assert wiki.is_error and text_of(wiki).startswith("memory_get with corpus `wiki`")
    assert bad.is_error and text_of(bad) == "`corpus` must be one of memory, wiki, all, not \"sessions\""


def test_a_call_before_initialize_is_refused_saying_so(workspace, state_dir):
    """The SDK refuses it as "Invalid request parameters" with nothing more, the same words as for a
    malformed initialize: each now says what is wrong, and the session goes on once initialized."""
    write(workspace / "MEMORY.md", "# Memory\n")
    get = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}}
    answers, stderr = _raw_session(workspace, state_dir, [
        {**get, "id": 1}, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}},
        HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"}, {**get, "id": 3}])
    early, listing, malformed, hello, got = answers
    for refused in (early, listing):
        assert refused["error"] == {"code": -32602, "message": "the session is not initialized: send initialize first "
                                    "(then the notifications/initialized notification)"}
    assert malformed["id"] == 3 and "not an initialize request's" in malformed["error"]["message"]
    assert "serverInfo" in hello["result"] and got["id"] == 3 and not got["result"].get("isError")
    assert "Traceback" not in stderr


def test_huge_or_endless_arguments_get_a_short_tool_error_never_a_crash_or_a_stall(workspace, state_dir, cli):
    """A citation's line number of 5,000 digits escaped as Python's ValueError (a JSON-RPC error of
    code 0 and a traceback on stderr); an unknown collection name of 1 MB came back whole in the
    error; a glob of 20,000 '[' took seconds to read (the square of its length: 100,000 took 267 s)."""
    write(workspace / "MEMORY.md", "# Memory\n\n- roof fixed\n")
    assert cli("index").returncode == 0
    call = {"jsonrpc": "2.0", "method": "tools/call"}
    answers, stderr = _raw_session(workspace, state_dir, [HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"}, *(
        {**call, "id": n, "params": {"name": name, "arguments": arguments}} for n, (name, arguments) in enumerate([
            ("memory_get", {"path": "MEMORY.md#L1-L" + "9" * 5000}),
            ("memory_search", {"query": "roof", "collection": ["c" * (1 << 20)]}),
            ("memory_search", {"query": "roof", "paths": ["[" * 20_000]}),
            ("memory_search", {"query": "roof", "paths": ["memory/" + "x" * 4000] * 5}),
            ("memory_search", {"query": "roof", "paths": ["MEMORY.md"]})], start=1))])
    said = {a["id"]: a["result"] for a in answers[1:]}
    assert all(said[n]["isError"] for n in (1, 2, 3, 4)) and not said[5].get("isError"), said
    text = {n: said[n]["content"][0]["text"] for n in said}
    assert "line number of 5,000 digits is past any file" in text[1]
    assert text[2].startswith("no collection 'ccc") and len(text[2]) < 300
    assert text[3].startswith("`paths` must be globs of at most 4096 characters") and len(text[3]) < 300
    assert text[4] == "`paths` must be globs of at most 16,384 characters in all, not 20,035"
    assert "Traceback" not in stderr, stderr


def test_a_workspace_folder_with_the_longest_name_is_served(tmp_path, state_dir):
    """Its data dir is named after it, with a key: a folder name of 243 or more characters made a
    data dir name past 255 bytes, and every tool call failed with "File name too long"."""
    workspace = tmp_path / ("w" * 250)
    write(workspace / "MEMORY.md", "# Memory\n\n- roof\n")

    async def script(session):
        return [await session.call_tool("memory_write", {"path": "memory/2026-12-05.md", "append": "- fixed"}),
                await session.call_tool("memory_get", {"path": "memory/2026-12-05.md"})]

    written, got = run_session(workspace, state_dir, script)
    assert payload(written)["created"] is True and payload(got)["text"] == "- fixed"
    (data_dir,) = (state_dir / "openclaw-memory" / "workspaces").iterdir()
    assert len(data_dir.name) == 255 and data_dir.name.startswith("w" * 242 + "-")


def test_a_request_too_deep_to_parse_is_answered_with_its_id(workspace, state_dir):
    """Arguments nested 5,000 deep are past every parser here (the SDK's 200, json's 1,000): the
    refusal went out with id null, and a client waiting for its request's answer waited forever.
    Its id is found by the message's tokens; a line cut short at the end of the input likewise."""
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n")
    deep = ('{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "memory_get", "arguments": '
            '{"path": "MEMORY.md", "x": ' + "[" * 5000 + "]" * 5000 + '}}, "id": "deep-1"}')
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], capture_output=True, timeout=120,
                          input="\n".join([json.dumps(HELLO), deep, '{"jsonrpc": "2.0", "id": 12, "meth']).encode(),
                          env=env_for(workspace, state_dir), cwd=workspace)
    answers = {a["id"]: a for a in map(json.loads, done.stdout.decode().splitlines())}
    assert sorted(answers, key=str) == [12, 7, "deep-1"], answers
    assert "recursion limit" in answers["deep-1"]["error"]["message"]
    assert answers[12]["error"]["code"] == -32700 and "Traceback" not in done.stderr.decode()


def test_a_byte_order_mark_before_a_line_is_ignored_also_on_the_first_line(workspace, state_dir):
    """A Windows encoder writes a byte order mark before its JSON; RFC 8259 lets a parser ignore it.
    Read as JSON it was a parse error with id null (the id could not be found past it), and the
    client waited for its answer forever; on the first line, the handshake went to the SDK."""
    import subprocess

    write(workspace / "MEMORY.md", "# Memory\n\n- prefers green tea\n")
    bom = "\ufeff".encode()
    get = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}}
    lines = [bom + json.dumps(HELLO).encode(), b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
             bom + json.dumps(get).encode(), bom + b'{"jsonrpc": "2.0", "id": 6, "method": "ping"}']
    done = subprocess.run([sys.executable, "-m", "openclaw_memory", "mcp"], input=b"\n".join(lines) + b"\n",
                          capture_output=True, env=env_for(workspace, state_dir), cwd=workspace, timeout=120)
    answers = {a["id"]: a for a in map(json.loads, done.stdout.decode().splitlines())}
    assert set(answers) == {5, 6, 7}, done.stdout
    assert answers[7]["result"]["serverInfo"]["name"] == "openclaw-memory"
    assert json.loads(answers[5]["result"]["content"][0]["text"])["text"].startswith("# Memory")
    assert answers[6]["result"] == {} and "differed" not in done.stderr.decode()


def test_params_an_mcp_method_does_not_take_are_refused_saying_which(workspace, state_dir):
    """The SDK checks the params of MCP's own methods (a cursor, a progress token, ``_meta``) and
    answered each failure with "Invalid request parameters" and nothing more: each now names the
    member and what it must be, with the request's id, and the session goes on."""
    write(workspace / "MEMORY.md", "# Memory\n")
    get = {"name": "memory_get", "arguments": {"path": "MEMORY.md"}}
    answers, stderr = _raw_session(workspace, state_dir, [
        HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": 5}},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**get, "_meta": {"progressToken": [1]}}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": "x"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": get}])
    said = {a["id"]: a.get("error", {}).get("message") for a in answers[1:]}
    assert said == {1: "the request cannot be read: params.cursor: Input should be a valid string",
                    2: "the request cannot be read: params._meta.progressToken: Input should be a valid string",
                    3: "the request cannot be read: params._meta: Input should be an object", 4: None}, answers
    assert all(a["error"]["code"] == -32602 for a in answers[1:4])
    assert "Traceback" not in stderr


def test_a_workspace_removed_under_a_session_is_never_made_again(workspace, state_dir):
    """A session outlives its workspace's folder (the person moved it away or removed it): the
    next memory_write made a new, empty workspace at the old path for a daily note, where the
    agent's memory is not, and the agent went on as if it were. It is a tool error saying so, and
    nothing is made; once the folder is back, the session writes again."""
    import shutil

    write(workspace / "MEMORY.md", "# Memory\n")
    moved = workspace.with_name("moved")

    async def script(session):
        first = await session.call_tool("memory_write", {"path": "memory/2026-12-05.md", "append": "- one"})
        workspace.rename(moved)
        gone = [await session.call_tool("memory_write", {"path": "memory/2026-12-05.md", "append": "- two"}),
                await session.call_tool("memory_write", {"path": "memory/people/ana.md", "content": "# Ana\n"})]
        made = workspace.exists()
        shutil.copytree(moved, workspace, symlinks=True)
        back = await session.call_tool("memory_write", {"path": "memory/2026-12-05.md", "append": "- three"})
        return first, gone, made, back

    first, gone, made, back = run_session(workspace, state_dir, script)
    assert payload(first)["created"] is True
    assert all(result.is_error for result in gone), [text_of(r) for r in gone]
    assert "was deleted since this session" in text_of(gone[0])  # the note it appended to: the guard says so first
    assert text_of(gone[1]) == (f"the workspace {workspace} is gone (moved or removed since this process started); "
                                "nothing was written: put it back, or start again with its new path")
    assert made is False
    assert payload(back)["action"] == "append"
    assert (workspace / "memory" / "2026-12-05.md").read_text() == "- one\n- three\n"
    assert not (workspace / "memory" / "people").exists()


def test_a_workspace_moved_under_a_session_is_said_so_by_every_tool(workspace, state_dir, cli):
    """The workspace's folder moved away while a session ran: memory_search, memory_files,
    memory_links and memory_status said only `<workspace>: No such file or directory`, the same
    through the service, where memory_write said what happened. Each says the workspace is gone
    and what to do; memory_get answers `not_found`, as OpenClaw's does for a missing workspace."""
    from openclaw_memory.memory.protocol import request_line
    from openclaw_memory.serve.core import PRODUCT_ERROR, ServiceCore

    write(workspace / "MEMORY.md", "# Memory\n\nkiwi\n")
    assert cli("index").returncode == 0
    moved = workspace.with_name("moved")
    gone = (f"the workspace {workspace} is gone (moved or removed since this process started): put it back, "
            "or start again with its new path")

    async def script(session):
        await session.call_tool("memory_files", {})
        workspace.rename(moved)
        try:
            return [await session.call_tool(name, args) for name, args in (
                ("memory_search", {"query": "kiwi"}), ("memory_files", {}), ("memory_links", {}), ("memory_status", {}),
                ("memory_get", {"path": "MEMORY.md"}))]
        finally:
            moved.rename(workspace)

    *said, got = run_session(workspace, state_dir, script)
    assert [(r.is_error, text_of(r)) for r in said] == [(True, gone)] * 4
    assert payload(got)["status"] == "not_found"

    settings = settings_for(workspace, state_dir)
    core = ServiceCore(settings, live_sync=False)
    workspace.rename(moved)
    try:
        answers = [core.answer(core.read_request(request_line(1, method, args, settings)))["error"]
                   for method, args in (("search", {"query": "kiwi"}), ("listing", {}), ("links", {}))]
    finally:
        moved.rename(workspace)
        core.close()
    assert [(a["code"], a["message"]) for a in answers] == [(PRODUCT_ERROR, gone)] * 3


def test_names_that_are_not_utf8_never_stop_the_server(tmp_path, state_dir):
    """A memory file named in another encoding (``bad<0xff>.md``) stopped the server at the next
    memory_files with a traceback (its answer, a name held as a surrogate escape, is no UTF-8 text),
    and a workspace folder so named stopped it at initialize (the tools' descriptions name it). In the
    tools' JSON such a byte is its ``\\udcXX`` escape, which gives the exact name back, as in the
    CLI's; in their words, ``\\xNN``, as every listing shows it."""
    workspace = tmp_path / os.fsdecode(b"caf\xe9")
    write(workspace / "MEMORY.md", "# Memory\n\nSee [[notes]].\n")
    write(workspace / "memory" / "notes.md", "# Notes\n\nkiwi\n")
    (workspace / "memory" / os.fsdecode(b"bad\xff.md")).write_bytes(b"# Bad\n\nkiwi [[notes]]\n")

    async def main():
        async with stdio_client(server_params(workspace, state_dir)) as (read, write_stream):
            async with ClientSession(read, write_stream) as session:
                init = await session.initialize()
                listed = (await session.list_tools()).tools
                calls = [("memory_files", {}), ("memory_links", {"path": "memory/notes.md"}), ("memory_status", {}),
                         ("memory_search", {"query": "kiwi"}), ("memory_get", {"path": "memory/notes.md"})]
                return init, listed, [await session.call_tool(name, arguments) for name, arguments in calls]

    init, listed, (files, links, status, search, got) = asyncio.run(asyncio.wait_for(main(), timeout=120))
    assert "caf\\xe9" in init.instructions and all("caf\\xe9" in tool.description for tool in listed)
    assert "memory/bad\udcff.md" in [f["path"] for f in payload(files)["files"]]
    assert "memory/bad\udcff.md" in [link["source"] for link in payload(links)["backlinks"]]
    assert payload(status)["workspace"] == str(workspace)
    assert not search.is_error, text_of(search)  # the first search builds the index (the bad name: not indexed)
    assert [r["path"] for r in payload(search)["results"]] == ["memory/notes.md"]
    assert payload(got)["text"].startswith("# Notes")


def _peak_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) >> 10


@contextlib.contextmanager
def _raw_server(workspace: Path, state_dir: Path):
    """A real ``openclaw-memory mcp`` spoken to line by line past its handshake: ``(process, call)``,
    ``call(n, tool, arguments)`` giving the answer's JSON."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_for(workspace, state_dir), cwd=workspace)
    assert proc.stdin and proc.stdout

    def call(n, tool: str, arguments: dict) -> dict:
        request = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    try:
        proc.stdin.write(json.dumps(HELLO).encode() + b"\n" + b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        proc.stdin.flush()
        json.loads(proc.stdout.readline())
        yield proc, call
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the server's peak memory from /proc")
def test_a_large_write_over_stdio_is_not_held_once_more_by_the_transport(workspace, state_dir):
    """The transport parsed each line for its own checks and kept that copy, and the line, while the
    SDK parsed it again and ran the call: a 64 MiB write raised the server's peak by 320 MiB (5.0
    times the content), 256 MiB (4.0 times) once both go as soon as they are no longer needed."""
    with _raw_server(workspace, state_dir) as (proc, call):
        small = call(1, "memory_write", {"path": "memory/small.md", "content": "x" * (1 << 20)})
        assert not small["result"]["isError"]  # warm: the SDK, the state
        before = _peak_mib(proc.pid)
        assert not call(2, "memory_write", {"path": "memory/big.md", "content": "x" * (64 << 20)})["result"]["isError"]
        grown = _peak_mib(proc.pid) - before
    assert (workspace / "memory" / "big.md").stat().st_size == 64 << 20
    assert grown < 4.5 * 64, f"the peak grew by {grown} MiB for a 64 MiB write"


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the server's peak memory from /proc")
def test_a_large_read_over_stdio_is_not_parsed_again_by_the_transport(workspace, state_dir):
    """The transport parsed each of the SDK's answers to learn its id: a ``memory_get`` of a whole
    note held the answer once more, parsed (a 200 MB note: the server's peak 2,341 -> 1,969 MiB; this
    32 MiB one grew it by 198 -> 166 MiB, the SDK's own copies). A large answer with a result is now
    known by its head; the answer is the same."""
    line = "- the user sails a ketch and keeps the deck sanded each spring\n"
    write(workspace / "memory" / "big.md", line * ((32 << 20) // len(line)))
    with _raw_server(workspace, state_dir) as (proc, call):
        assert call(1, "memory_get", {"path": "memory/big.md"})["id"] == 1  # warm: the SDK, the state
        before = _peak_mib(proc.pid)
        answer = call("whole", "memory_get", {"path": "memory/big.md", "lines": 10**9, "maxChars": 10**9})
        grown = _peak_mib(proc.pid) - before
    assert answer["id"] == "whole" and not answer["result"]["isError"]
    got = json.loads(answer["result"]["content"][0]["text"])
    assert got["text"] == (workspace / "memory" / "big.md").read_text().removesuffix("\n") and got["lines"] == (32 << 20) // len(line)
    assert grown < 180, f"the peak grew by {grown} MiB for a whole read of a 32 MiB note"


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGHUP"])
def test_sigterm_answers_the_calls_already_read_then_stops(workspace, state_dir, cli, stop):
    """A client stops its stdio server with SIGTERM (after closing its input, or at once), and so
    does a service manager: the server was killed mid-call, the call unanswered (a write cut short
    left its temp file beside the note). SIGTERM now ends the input as a closed one does: a search
    waiting for an index commit (another process paused inside it) is answered, then the server
    exits 0 with one line on stderr; idle, it exits at once. SIGHUP (its terminal closed) the same:
    it killed the server, exit 129, a write's temp file left in the workspace."""
    import signal
    import subprocess

    write(state_dir / "openclaw-memory.toml", "[index]\nlock_timeout = 120\n")
    write(workspace / "MEMORY.md", "# Memory\n\n- the roof leaks\n")
    assert cli("index").returncode == 0
    write(workspace / "MEMORY.md", "# Memory\n\n- the roof leaks\n- the roofer comes on Monday\n")
    index = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "index"], cwd=workspace, text=True,
                             env=fault("index:batch:1=pause", env=env_for(workspace, state_dir)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    server = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env_for(workspace, state_dir), cwd=workspace)
    assert server.stdin and server.stdout and server.stderr
    try:
        wait_for_line(index.stderr, "test-hook: paused at index:batch:1")
        search = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "memory_search", "arguments": {"query": "roof"}}}
        for message in (HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"}, search, {"jsonrpc": "2.0", "id": 6, "method": "ping"}):
            server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 7
        assert json.loads(server.stdout.readline()) == {"jsonrpc": "2.0", "id": 6, "result": {}}  # read after the search: both in
        server.send_signal(signal.Signals[stop])
        index.send_signal(signal.SIGUSR1)  # the commit ends: the search goes on
        answer = json.loads(server.stdout.readline())
        assert server.wait(timeout=60) == 0
    finally:
        for proc in (server, index):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert answer["id"] == 5 and not answer["result"]["isError"], answer
    assert json.loads(answer["result"]["content"][0]["text"])["results"][0]["path"] == "MEMORY.md"
    said = server.stderr.read().decode()
    assert f"stopping ({stop}): answering the calls already read\n" in said and "Traceback" not in said
    idle = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_for(workspace, state_dir), cwd=workspace)
    assert idle.stdin and idle.stdout
    idle.stdin.write(json.dumps(HELLO).encode() + b"\n")
    idle.stdin.flush()
    assert json.loads(idle.stdout.readline())["id"] == 7
    idle.send_signal(signal.Signals[stop])
    assert idle.wait(timeout=60) == 0  # its input still open


def test_a_name_given_back_with_its_byte_escapes_is_refused_saying_why(workspace, state_dir):
    """memory_files lists a file whose name is not UTF-8 with ``\\udcXX`` escapes; an agent that gives
    that name back to memory_get was told its request held "half a character, as a split emoji".
    The refusal now says what the escape is and what to do; a lone surrogate of another kind keeps
    its own words."""
    write(workspace / "MEMORY.md", "# Memory\n")
    get = '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "memory_get", "arguments": {"path": "%s"}}}'
    answers, stderr = _raw_session(workspace, state_dir, [HELLO, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                                          get % (1, "memory/bad\\\\udcff.md".replace("\\\\", "\\")),
                                                          get % (2, "memory/half\\\\ud83d.md".replace("\\\\", "\\"))])
    named, half = answers[1:]
    assert named["id"] == 1 and named["error"]["message"] == (
        "the request cannot be read: it holds \\udcff, the escape of a byte of a file name that is not UTF-8: no tool "
        "call can name such a file (JSON carries Unicode text); rename the file to reach it over MCP (the CLI reads "
        "and writes it)")
    assert half["id"] == 2 and "split emoji" in half["error"]["message"]
    assert "Traceback" not in stderr



@pytest.mark.parametrize("service", [False, True])
def test_a_read_the_client_cancelled_lets_it_write_nothing(workspace, state_dir, service):
    """A client that gives up waiting on a memory_get cancels it (notifications/cancelled), and no
    answer goes out; the read was recorded for the write guard all the same, and the session could
    then overwrite a version it never saw. The read is taken back once its thread ends, also when
    the workspace's service made it (its answer carries the path, not the absolute one)."""
    import subprocess

    from test_serve import Serve

    from openclaw_memory.database import Database, enc

    write(workspace / "MEMORY.md", "# Memory\n\nThe user's cat is called Pistachio.\n")
    served = Serve(workspace, state_dir, "--no-watch").wait_ready() if service else None
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=workspace,
                            env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="on" if service else "off"))
    db = Database(settings_for(workspace, state_dir).data_dir)

    def ask(message: dict, answered: bool = True) -> dict | None:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline()) if answered else None

    def call(request_id: int, name: str, arguments: dict, answered: bool = True) -> dict | None:
        return ask({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                    "params": {"name": name, "arguments": arguments}}, answered)

    def recorded() -> list[str]:
        return [row[0] for row in db.rows("SELECT version FROM reads WHERE path = ?", (enc(str(workspace / "MEMORY.md")),))]

    try:
        assert ask(HELLO)["id"] == 7
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"}, answered=False)
        assert not call(2, "memory_get", {"path": "MEMORY.md"})["result"].get("isError")
        first = recorded()
        write(workspace / "MEMORY.md", "# Memory\n\nA person's edit the session never saw.\n")
        with db.transaction():  # the read waits for the state database before it records what it read
            call(3, "memory_get", {"path": "MEMORY.md"}, answered=False)
            assert ask({"jsonrpc": "2.0", "id": 4, "method": "ping"})["id"] == 4  # the read's thread has started
            ask({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}}, answered=False)
            assert ask({"jsonrpc": "2.0", "id": 5, "method": "ping"})["id"] == 5  # the cancel is taken
        wait_for(lambda: recorded() == [])  # recorded (the edit's version) once the database let it, then taken back
        answer = call(6, "memory_write", {"path": "MEMORY.md", "content": "# Memory\n\nWritten blind.\n"})
        assert answer["id"] == 6 and answer["result"]["isError"], answer  # and the cancelled call got no answer
        assert "has not read it" in answer["result"]["content"][0]["text"] and len(first) == 1
        assert "A person's edit" in (workspace / "MEMORY.md").read_text()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        if served is not None:
            served.kill()
    assert b"in-process" not in proc.stderr.read()  # through the service when one ran


def test_memory_write_of_a_read_only_note_is_the_commands_refusal(workspace, state_dir):
    """The one MCP tool that replaces a note's content refuses a read-only one in `write`'s words
    (`restore`, `rollback`, `mv` and `rm` have no tool)."""
    note = workspace / "memory" / "kept.md"
    write(note, "# Kept\n")
    note.chmod(0o444)

    async def script(session):
        payload(await session.call_tool("memory_get", {"path": "memory/kept.md"}))
        return await session.call_tool("memory_write", {"path": "memory/kept.md", "append": "- more"})

    refused = run_session(workspace, state_dir, script)
    assert refused.is_error and text_of(refused) == ("refused: memory/kept.md is read-only (mode 444); nothing was "
                                                     "written (`chmod u+w` it to let writes through)")
    assert note.read_text() == "# Kept\n"


def test_an_unexpected_failure_is_a_tool_error_naming_no_path_and_the_server_keeps_serving(workspace, state_dir,
                                                                                        monkeypatch, capsys):
    """A bug in an operation (an exception no layer words) was a JSON-RPC error carrying its text, the
    server's own source paths, with a traceback on stderr: now a tool error of one generic line; the
    server's stderr (its log) has the exception, on one line. A real MCP session, in this process."""
    from mcp import Client

    from openclaw_memory.mcp.server import MemoryTools, build_server
    from openclaw_memory.memory import open_memory

    write(workspace / "MEMORY.md", "# Memory\n")
    tools = MemoryTools(open_memory(settings_for(workspace, state_dir), in_process=True))
    call = tools.call

    def failing(ctx, op, arguments):
        if op.name == "listing":
            raise RuntimeError("boom in /srv/secret/openclaw_memory/files/listing.py line 12")
        return call(ctx, op, arguments)

    monkeypatch.setattr(tools, "call", failing)

    async def script():
        async with Client(build_server(tools)) as client:
            failed = await client.call_tool("memory_files", {})
            after = await client.call_tool("memory_get", {"path": "MEMORY.md"})
            return failed, after

    try:
        failed, after = asyncio.run(asyncio.wait_for(script(), timeout=60))
    finally:
        tools.close()
    assert failed.is_error
    assert text_of(failed) == ("internal error in memory_files: RuntimeError; the server keeps serving (its log on stderr "
                               "says more)")
    assert payload(after)["text"] == "# Memory"
    err = capsys.readouterr().err
    assert "error: internal error in memory_files (RuntimeError: boom in /srv/secret/openclaw_memory/files/listing.py " \
        "line 12); answered as a tool error, the server keeps serving\n" in err, err
    assert "Traceback" not in err, err


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the server's memory from /proc")
def test_a_client_that_sends_without_reading_never_makes_the_server_hold_every_answer(workspace, state_dir):
    """A client that keeps sending calls and never reads stdout made the server read and run every
    one and hold each answer (1,000 reads of a 1 MB note: RSS 20 -> 2,072 MiB, kept). It stops
    reading while 16 requests wait for their answer, and reads on as the client reads."""
    import subprocess

    write(workspace / "memory" / "big.md", "".join(f"{n:06d} " + "x" * 92 + "\n" for n in range(10_000)))  # 1 MB
    calls = 400
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env_for(workspace, state_dir), cwd=workspace)
    assert proc.stdin and proc.stdout
    try:
        proc.stdin.write(json.dumps(HELLO).encode() + b"\n" + b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 7
        requests = b"".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "memory_get", "arguments": {"path": "memory/big.md", "lines": 10_000, "maxChars": 2_000_000}}}).encode()
            + b"\n" for n in range(1, calls + 1))
        sender = threading.Thread(target=lambda: (proc.stdin.write(requests), proc.stdin.flush()), daemon=True)
        sender.start()
        # Until the server has done what it will without the client reading: its CPU idle for 1 s.
        peak, idle, last = 0, 0, -1
        for _ in range(600):
            peak = max(peak, _status_mib(proc.pid))
            assert peak < 400, f"the server holds {peak} MiB of answers nobody reads"
            ticks = _cpu_ticks(proc.pid)
            idle, last = (idle + 1 if ticks == last else 0), ticks
            if idle >= 10:
                break
            time.sleep(0.1)
        # Then the client reads: every answer comes, each once, whole.
        answered = []
        for _ in range(calls):
            answer = json.loads(proc.stdout.readline())
            assert len(json.loads(answer["result"]["content"][0]["text"])["text"]) == 999_999  # the note, its last line end aside
            answered.append(answer["id"])
        assert sorted(answered) == list(range(1, calls + 1))
        sender.join(timeout=60)
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def _status_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS")) >> 10


def _mcp_process(workspace: Path, state_dir: Path):
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env_for(workspace, state_dir), cwd=workspace)
    assert proc.stdin and proc.stdout
    proc.stdin.write(json.dumps(HELLO).encode() + b"\n" + b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 7
    return proc


def test_a_client_that_writes_every_request_then_reads_every_answer_gets_them_all(workspace, state_dir):
    """A scripted client on one thread writes all its requests, then reads all the answers. 2ab3cfb
    stopped reading while 16 answers waited (stuck in the full stdout pipe): the client then blocked
    writing the rest into the full stdin pipe, never reaching its reads, and both waited forever. The
    server reads on (holding the requests, not running them) while the answers wait to be read."""
    write(workspace / "memory" / "note.md", "".join("y" * 99 + "\n" for _ in range(1000)))  # 100 KB
    requests = [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
        "name": "memory_get", "arguments": {"path": "memory/note.md", "lines": 1000}}} for n in range(1, 601)]
    requests.append({"jsonrpc": "2.0", "id": 601, "method": "tools/call", "params": {
        "name": "memory_write", "arguments": {"path": "memory/w.md", "content": "z" * 300_000}}})
    proc = _mcp_process(workspace, state_dir)
    answered: list[int] = []

    def client() -> None:
        for request in requests:
            proc.stdin.write(json.dumps(request).encode() + b"\n")
        proc.stdin.flush()
        for _ in requests:
            answered.append(json.loads(proc.stdout.readline())["id"])

    try:
        thread = threading.Thread(target=client, daemon=True)
        thread.start()
        thread.join(timeout=120)
        assert not thread.is_alive(), f"the client and the server wait for each other ({len(answered)} answers read)"
        assert sorted(answered) == list(range(1, 602))
        assert (workspace / "memory" / "w.md").stat().st_size == 300_000
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads the server's memory from /proc")
def test_a_client_that_cancels_the_calls_it_cannot_read_never_makes_the_server_hold_their_answers(workspace, state_dir):
    """A client whose reader is stuck cancels each call it times out on (MCP clients do): the
    transport freed the call's slot on the cancel while its answer was still to be written, so the
    server ran call after call and held every answer (300 reads of a 1 MB note: 180 -> 665 MiB).
    An answer to a cancelled call is never written (nor held), and a slot is freed only once its
    call is answered or ends unanswered."""
    write(workspace / "memory" / "big.md", "".join(f"{n:06d} " + "x" * 92 + "\n" for n in range(20_000)))  # 2 MB
    proc = _mcp_process(workspace, state_dir)
    try:
        peak = 0
        for n in range(1, 201):
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
                "name": "memory_get", "arguments": {"path": "memory/big.md", "lines": 20_000, "maxChars": 4_000_000}}}).encode()
                + b"\n")
            proc.stdin.flush()
            time.sleep(0.1)
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
                "requestId": n, "reason": "timed out"}}).encode() + b"\n")
            proc.stdin.flush()
            peak = max(peak, _status_mib(proc.pid))
            assert peak < 400, f"the server holds {peak} MiB of answers to calls cancelled ({n} calls)"
        proc.stdin.close()
        answers = proc.stdout.read().splitlines()
        assert proc.wait(timeout=60) == 0
        assert len(answers) <= 16, f"{len(answers)} answers to calls the client cancelled"  # those run to their end
    finally:
        proc.kill()
        proc.wait()
