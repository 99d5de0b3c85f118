"""The write guard cannot be walked around: ``expect`` names a version the session read (never one
learnt from a refusal), a replace needs a read of every line, and idempotency keys are the session's.

Through a real ``openclaw-memory mcp`` over stdio (in process, and through the workspace's service),
and the library where the record itself is the subject.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys

import pytest
import xxhash

from conftest import env_for, fault, settings_for, wait_for_line, write
from openclaw_memory.database import Database, enc, schema
from openclaw_memory.errors import WriteBlocked
from openclaw_memory.memory.local import LocalMemory

HELLO = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
FACTS = "".join(f"- fact {i}\n" for i in range(1, 301))


class Session:
    """One MCP session: a real ``openclaw-memory mcp`` process spoken to line by line."""

    def __init__(self, workspace, state_dir, *args: str, service: bool = False):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openclaw_memory", "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=workspace,
            env=env_for(workspace, state_dir, OPENCLAW_MEMORY_SERVICE="on" if service else "off"))
        self.n = 0
        assert self._ask(HELLO)["id"] == 0
        self.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')

    def _ask(self, message: dict) -> dict:
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def call(self, name: str, **arguments) -> tuple[bool, str]:
        """(whether it was refused, the answer's text)."""
        self.n += 1
        answer = self._ask({"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                            "params": {"name": name, "arguments": arguments}})
        result = answer["result"]
        return bool(result.get("isError")), result["content"][0]["text"]

    def close(self) -> str:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        return self.proc.stderr.read().decode()


def version_of(text: str) -> str:
    return xxhash.xxh3_128_hexdigest(text.encode())


@pytest.fixture(params=[False, True], ids=["in-process", "service"])
def sessions(request, workspace, state_dir):
    from test_serve import Serve

    served = Serve(workspace, state_dir, "--no-watch").wait_ready() if request.param else None
    opened: list[Session] = []

    def session(*args: str) -> Session:
        opened.append(Session(workspace, state_dir, *args, service=request.param))
        return opened[-1]

    yield session
    for s in opened:
        stderr = s.close()
        assert "Traceback" not in stderr and (served is None or "in-process" not in stderr), stderr
    if served is not None:
        served.kill()


def test_expect_learnt_from_a_refusal_is_no_read(workspace, sessions):
    """A blocked write named the file's version now; passing it as ``expect`` overwrote the person's
    edit the session never saw. A session that never read MEMORY.md sent a made-up expect, was told
    the version ("it changed"), passed it, and overwrote the note."""
    write(workspace / "MEMORY.md", "# Memory\n\n- roof fixed in May\n")
    write(workspace / "memory" / "notes.md", "# Notes\n\nThe cat is called Tom.\n")
    agent = sessions()
    refused, text = agent.call("memory_get", path="memory/notes.md")
    assert not refused
    with open(workspace / "memory" / "notes.md", "a") as fh:
        fh.write("- the person's edit\n")
    refused, blocked = agent.call("memory_write", path="memory/notes.md", content="agent overwrite\n")
    assert refused and "changed since this session" in blocked
    now = re.search(r"now ([0-9a-f]{12})", blocked)
    assert now is not None
    refused, text = agent.call("memory_write", path="memory/notes.md", content="agent overwrite\n", expect=now.group(1))
    assert refused and "memory/notes.md is at a version this session (agent 'main') has not read" in text, text
    assert "call memory_get first" in text and "- the person's edit" in (workspace / "memory" / "notes.md").read_text()

    refused, text = agent.call("memory_write", path="MEMORY.md", content="overwrite\n", expect="00000000")
    current = version_of("# Memory\n\n- roof fixed in May\n")
    assert refused and "has not read" in text and "changed" not in text and current[:8] not in text, text
    refused, text = agent.call("memory_write", path="MEMORY.md", content="overwrite\n", expect=current)
    assert refused and "has not read" in text
    assert (workspace / "MEMORY.md").read_text() == "# Memory\n\n- roof fixed in May\n"

    refused, text = agent.call("memory_get", path="memory/notes.md")
    refused, text = agent.call("memory_write", path="memory/notes.md", content="kept the edit\n",
                               expect=json.loads(text)["version"][:8])
    assert not refused, text
    assert (workspace / "memory" / "notes.md").read_text() == "kept the edit\n"


def test_a_replace_after_a_window_read_is_refused_naming_the_lines(workspace, sessions):
    """The default memory_get shows 120 of 300 lines and recorded the whole file's version; writing
    the edited window back with ``content`` dropped the 180 lines the session never saw."""
    write(workspace / "MEMORY.md", FACTS)
    agent = sessions()
    window = json.loads(agent.call("memory_get", path="MEMORY.md")[1])
    assert window["truncated"] and window["nextFrom"] == 121
    # memory_files says which lines it read (read_fresh alone told the agent a write would go through).
    listed = {f["path"]: f for f in json.loads(agent.call("memory_files")[1])["files"]}
    assert (listed["MEMORY.md"]["state"], listed["MEMORY.md"]["seenLines"]) == ("read_fresh", [1, 120])
    edited = window["text"].split("\n\n[More content")[0].replace("- fact 7\n", "- fact 7 (corrected)\n") + "\n"
    refused, text = agent.call("memory_write", path="MEMORY.md", content=edited)
    assert refused and "read lines 1-120 of the 300 lines of MEMORY.md" in text and "(from=121)" in text, text
    assert "replaceUnread" in text and (workspace / "MEMORY.md").read_text() == FACTS
    refused, text = agent.call("memory_write", path="MEMORY.md", content=edited, expect=window["version"])
    assert refused and "read lines 1-120" in text  # expect says which version, not that every line was read
    refused, text = agent.call("memory_write", path="MEMORY.md", append="- fact 301")  # an append drops nothing
    assert not refused, text
    refused, text = agent.call("memory_write", path="MEMORY.md", content=edited)  # still only 1-120 read
    assert refused and "read lines 1-120 of the 301 lines" in text, text

    assert not agent.call("memory_get", path="MEMORY.md", **{"from": 121, "lines": 500})[0]  # the rest: all read
    listed = {f["path"]: f for f in json.loads(agent.call("memory_files")[1])["files"]}
    assert listed["MEMORY.md"]["state"] == "read_fresh" and "seenLines" not in listed["MEMORY.md"]
    refused, text = agent.call("memory_write", path="MEMORY.md", content=edited)
    assert not refused, text
    assert (workspace / "MEMORY.md").read_text() == edited

    write(workspace / "MEMORY.md", FACTS)
    assert not agent.call("memory_get", path="MEMORY.md", **{"from": 200, "lines": 10})[0]
    refused, text = agent.call("memory_write", path="MEMORY.md", content="short\n")
    assert refused and "read lines 200-209 of the 300 lines" in text and "(from=1)" in text, text
    refused, text = agent.call("memory_write", path="MEMORY.md", content="short\n", replaceUnread=True)
    assert not refused, text  # said on purpose: the history keeps what it held
    assert (workspace / "MEMORY.md").read_text() == "short\n"


LATIN1 = "# People\nJosé Müller, café owner, Malmö\n".encode("latin-1")


def test_a_replace_of_a_note_that_is_not_utf8_is_refused(workspace, sessions):
    """memory_get shows a Latin-1 note's accented bytes as U+FFFD (and warns); the agent's natural
    read-modify-write (its text + a new line) was accepted and wrote U+FFFD over every one of them
    in the live file (only the history kept them). It is refused, naming why and what to do; an
    append keeps the bytes, and replaceUnread: true replaces them on purpose."""
    people = workspace / "memory" / "people.md"
    people.parent.mkdir(exist_ok=True)
    people.write_bytes(LATIN1)
    agent = sessions()
    read = json.loads(agent.call("memory_get", path="memory/people.md")[1])
    assert "\ufffd" in read["text"] and any("not valid UTF-8" in w for w in read["warnings"]), read
    refused, text = agent.call("memory_write", path="memory/people.md", content=read["text"] + "- likes oat milk\n")
    assert refused, text
    assert ("memory/people.md holds bytes that are not valid UTF-8 (first invalid byte at offset 12), which reads show "
            "as U+FFFD, so this session (agent 'main') has not read them, and the new content would replace them: "
            "append instead, or pass replaceUnread: true to replace them all the same") in text, text
    assert "--" not in text and people.read_bytes() == LATIN1
    refused, text = agent.call("memory_write", path="memory/people.md", content=read["text"], expect=read["version"])
    assert refused and "not valid UTF-8" in text and people.read_bytes() == LATIN1, text

    refused, text = agent.call("memory_write", path="memory/people.md", append="- likes oat milk")
    assert not refused, text
    assert people.read_bytes() == LATIN1 + b"- likes oat milk\n"  # an append keeps every byte
    refused, text = agent.call("memory_write", path="memory/people.md", content="# People\nJosé Müller\n")
    assert refused and "not valid UTF-8" in text, text  # (the append's record counts as a read: only the bytes refuse)
    refused, text = agent.call("memory_write", path="memory/people.md", content="# People\nJosé Müller\n",
                               replaceUnread=True)
    assert not refused, text
    assert people.read_text() == "# People\nJosé Müller\n"


def test_a_replace_of_a_note_that_is_not_utf8_on_the_command_line(workspace, cli):
    """The same for a person's own edit through the CLI (`read` shows U+FFFD there too), in its own
    flags, with the offset doctor's not-utf8 names."""
    people = workspace / "memory" / "people.md"
    people.parent.mkdir(exist_ok=True)
    people.write_bytes(LATIN1)
    shown = cli("read", "memory/people.md")
    assert shown.returncode == 0 and "\ufffd" in shown.stdout and "not valid UTF-8" in shown.stderr, shown.stderr
    refused = cli("write", "memory/people.md", "--stdin", input=shown.stdout + "- likes oat milk\n")
    assert refused.returncode == 3, refused.stderr
    assert ("blocked: memory/people.md holds bytes that are not valid UTF-8 (first invalid byte at offset 12), which "
            "reads show as U+FFFD, so agent 'main' has not read them, and the new content would replace them: append "
            "instead (--append), or pass --replace-unread to replace them all the same") in refused.stderr, refused.stderr
    assert "replaceUnread" not in refused.stderr and people.read_bytes() == LATIN1
    assert "first invalid byte at offset 12" in cli("doctor").stdout  # the same byte doctor names
    assert cli("write", "memory/people.md", "--append", "- likes oat milk").returncode == 0
    assert people.read_bytes() == LATIN1 + b"- likes oat milk\n"
    written = cli("write", "memory/people.md", "--stdin", "--replace-unread", input="# People\nJosé\n")
    assert written.returncode == 0, written.stderr
    assert people.read_text() == "# People\nJosé\n"


A_NOTE, B_NOTE = "- a one\n- a two\n", "- b one\n- b two\n"
ALWAYS_CHANGING = fault(*(f"read:scanned:{n}=pause" for n in (1, 2, 3)))  # each of the read's passes


def rewritten_at_each_pass(note, paused) -> None:
    """At each pause of a read (``paused()`` gives the hook's line), the note rewritten in place."""
    for n, text in enumerate((B_NOTE, A_NOTE, B_NOTE), 1):
        line, pid = paused()
        assert f"test-hook: paused at read:scanned:{n} " in line, line
        with open(note, "r+") as fh:  # in place: the same file, another mtime
            fh.write(text)
        os.kill(pid, signal.SIGUSR1)


def test_a_read_of_a_note_rewritten_while_it_is_read_says_it_was_not_recorded(workspace, state_dir, monkeypatch):
    """A note rewritten in place during every pass of memory_get (a sync tool, a script) came back
    with no version and no word, and the write that followed was told it never read the note. The
    MCP tools in process, the note rewritten at the read's own fault step (a pause cannot stop a
    tool call: it runs off the main thread, where no signal handler can be set)."""
    from openclaw_memory import faults
    from openclaw_memory.mcp.server import MemoryTools
    from openclaw_memory.memory import OPERATIONS, open_memory

    note = write(workspace / "memory" / "n.md", A_NOTE)
    texts = iter((B_NOTE, A_NOTE, B_NOTE))
    reach = faults.reach

    def rewrite_at_each_pass(step: str) -> bool:
        if step.startswith("read:scanned:"):
            with open(note, "r+") as fh:  # in place: the same file, another mtime
                fh.write(next(texts))
        return reach(step)

    monkeypatch.setattr(faults, "reach", rewrite_at_each_pass)
    tools = MemoryTools(open_memory(settings_for(workspace, state_dir), in_process=True))
    try:
        got = tools.call(None, OPERATIONS["read"], {"path": "memory/n.md"})
        assert "version" not in got and next(texts, None) is None, got  # three passes, none held still
        assert got["warnings"] == ["memory/n.md changed while it was read (rewritten in place by another program), so "
                                   "this read has no version and was not recorded for the write guard: read it again "
                                   "before writing it"], got
        with pytest.raises(WriteBlocked) as blocked:
            tools.call(None, OPERATIONS["write"], {"path": "memory/n.md", "content": got["text"] + "new\n"})
        assert "has not read it; call memory_get first" in blocked.value.worded_for_tools()
    finally:
        tools.close()


def test_a_read_of_a_note_rewritten_while_it_is_read_on_the_command_line(workspace, state_dir, cli):
    """The same with a real `read` process paused at each pass of its read while the note is rewritten."""
    note = write(workspace / "memory" / "n.md", A_NOTE)
    proc = subprocess.Popen([sys.executable, "-m", "openclaw_memory", "read", "memory/n.md"], cwd=workspace,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env_for(workspace, state_dir, **ALWAYS_CHANGING))
    try:
        rewritten_at_each_pass(note, lambda: (wait_for_line(proc.stderr, "test-hook: paused at"), proc.pid))
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and out == A_NOTE, (out, err)  # what its last pass read, before that rewrite
    assert "warning: memory/n.md changed while it was read (rewritten in place by another program), so this read has " \
        "no version and was not recorded for the write guard: read it again before writing it" in err, err
    refused = cli("write", "memory/n.md", "--stdin", input=B_NOTE + "new\n")
    assert refused.returncode == 3 and "has not read it" in refused.stderr, refused.stderr


LONG_LINE = "# Notes\n" + "x" * 20_000 + "\nthe last line\n"  # line 2 alone is past the default budget (12,000)


def test_a_line_past_the_budget_is_read_whole_by_following_the_hints(workspace, sessions):
    """A line longer than maxChars is cut short (truncated, no nextFrom) and could never count as
    read: the refusal said "read the rest (from=2)", and memory_get from=2 cut it again, forever.
    An agent that follows only the answers' own hints (nextFrom, lineChars, the refusal's from= and
    maxChars=) reads every line and may replace the note; each refusal speaks the tool's parameters."""
    write(workspace / "MEMORY.md", LONG_LINE)
    agent = sessions()
    cut = json.loads(agent.call("memory_get", path="MEMORY.md", **{"from": 2})[1])
    assert cut["truncated"] and "nextFrom" not in cut and cut["lines"] == 1 and cut["lineChars"] == 20_000, cut
    assert cut["text"].endswith("use read on the source file.]")  # OpenClaw's own notice, unchanged
    refused, text = agent.call("memory_write", path="MEMORY.md", content="short\n")
    assert refused and "read none of the 3 lines of MEMORY.md" in text, text
    assert "read the rest (from=1), or append, or pass replaceUnread: true" in text and "--" not in text, text

    steps, call = [], {"path": "MEMORY.md"}
    for _ in range(8):
        answer = json.loads(agent.call("memory_get", **call)[1])
        steps.append((call.get("from", 1), call.get("maxChars")))
        if "nextFrom" in answer:
            call = {"path": "MEMORY.md", "from": answer["nextFrom"]}
            continue
        if "lineChars" in answer:
            call = {"path": "MEMORY.md", "from": answer["from"], "maxChars": answer["lineChars"]}
            continue
        refused, text = agent.call("memory_write", path="MEMORY.md", content="short\n")
        if not refused:
            break
        rest = re.search(r"read the rest \(from=(\d+)(?:, maxChars=(\d+))?", text)
        assert rest is not None and "--from" not in text and "--max-chars" not in text, text
        call = {"path": "MEMORY.md", "from": int(rest.group(1))} | ({"maxChars": int(rest.group(2))} if rest.group(2) else {})
    else:
        raise AssertionError(f"the hints went round in a loop: {steps}")
    assert (workspace / "MEMORY.md").read_text() == "short\n"
    assert steps == [(1, None), (2, None), (2, 20_000), (3, None)], steps

    write(workspace / "MEMORY.md", LONG_LINE)  # read 1 only: the refusal names the budget that shows line 2
    assert not agent.call("memory_get", path="MEMORY.md")[0]
    refused, text = agent.call("memory_write", path="MEMORY.md", content="short\n")
    assert refused and "read the rest (from=2, maxChars=20000: line 2 alone is 20000 characters long)" in text, text


def test_the_refusal_measures_the_line_past_the_budget_whole(workspace, state_dir):
    """The refusal's budget is the first unread line's whole length, however long (across blocks, in
    UTF-16 code units), and only when the default budget would cut that line."""
    s = settings_for(workspace, state_dir)
    line = "\U0001f600" * 600_000  # 2.4 MB, 1,200,000 code units
    write(workspace / "MEMORY.md", "a\nb\n" + line + "\n" + "y" * 12_000 + "\n")
    LocalMemory(s).read("MEMORY.md", lines=2)
    with pytest.raises(WriteBlocked) as blocked:
        LocalMemory(s).write("MEMORY.md", content="short\n")
    assert blocked.value.rest == "3:1200000" and "--from 3 --max-chars 1200000: line 3 alone is 1200000" in str(blocked.value)
    assert "(from=3, maxChars=1200000: line 3 alone" in blocked.value.worded_for_tools()
    LocalMemory(s).read("MEMORY.md", from_line=3, max_chars=1_200_000)
    with pytest.raises(WriteBlocked) as blocked:  # 12,000 characters: the default budget shows it
        LocalMemory(s).write("MEMORY.md", content="short\n")
    assert blocked.value.rest == "4" and "(from=4), or append" in blocked.value.worded_for_tools()


def test_a_line_past_the_budget_on_the_command_line(workspace, cli):
    """The same through the CLI, in its own flags: the cut read says which read shows the line whole,
    and the refusal names `read PATH --from N --max-chars N` (it said "read the rest (from=2) with
    openclaw-memory read MEMORY.md --from", a tool's spelling and a flag without its value)."""
    write(workspace / "MEMORY.md", LONG_LINE)
    first = cli("read", "MEMORY.md")
    assert first.returncode == 0 and first.stdout.endswith("[More content available. Use from=2 to continue.]\n"), first.stdout[-200:]
    refused = cli("write", "MEMORY.md", "--stdin", input="short\n")
    assert refused.returncode == 3, refused.stderr
    assert "read the rest (openclaw-memory " in refused.stderr and "read MEMORY.md --from 2 --max-chars 20000: line 2 alone is " \
        "20000 characters long), or append (--append), or pass --replace-unread" in refused.stderr, refused.stderr
    assert "from=" not in refused.stderr and "maxChars" not in refused.stderr, refused.stderr

    cut = cli("read", "MEMORY.md", "--from", "2")
    assert cut.returncode == 0 and "line 2 is 20000 characters long, past --max-chars: " in cut.stderr, cut.stderr
    assert "read MEMORY.md --from 2 --max-chars 20000 shows it whole" in cut.stderr, cut.stderr
    assert json.loads(cli("read", "MEMORY.md", "--from", "2", "--json").stdout)["lineChars"] == 20_000
    assert cli("read", "MEMORY.md", "--from", "2", "--max-chars", "20000").returncode == 0
    refused = cli("write", "MEMORY.md", "--stdin", input="short\n")
    assert refused.returncode == 3 and "read lines 1-2 of the 3 lines" in refused.stderr, refused.stderr
    assert "read MEMORY.md --from 3), or append (--append)" in refused.stderr and "from=" not in refused.stderr, refused.stderr
    assert cli("read", "MEMORY.md", "--from", "3").returncode == 0
    written = cli("write", "MEMORY.md", "--stdin", input="short\n")
    assert written.returncode == 0, written.stderr
    assert (workspace / "MEMORY.md").read_text() == "short\n"


def test_an_idempotency_key_is_the_sessions_own(workspace, sessions):
    """An explicit key was shared by every session and agent: another's reuse was refused, naming the
    first write's path, agent and session id."""
    first, second, ops = sessions(), sessions(), sessions("--agent", "ops")
    refused, text = first.call("memory_write", path="memory/secret-plan.md", content="the launch code is 0000\n",
                               idempotencyKey="turn-1")
    assert not refused, text
    for n, other in enumerate((second, ops)):
        refused, text = other.call("memory_write", path=f"memory/other-{n}.md", content="hello\n", idempotencyKey="turn-1")
        assert not refused and "replayed" not in text, text
        refused, text = other.call("memory_write", path=f"memory/other-{n}.md", content="bye\n", idempotencyKey="turn-1")
        assert refused and f"first used for a replace of memory/other-{n}.md" in text, text
        assert "secret-plan" not in text and "mcp-" not in text
    refused, text = first.call("memory_write", path="memory/secret-plan.md", content="the launch code is 0000\n",
                               idempotencyKey="turn-1")
    assert not refused and json.loads(text)["replayed"] is True


def test_a_memory_get_after_a_write_makes_the_same_append_a_new_entry_and_a_replay_says_so(workspace, sessions):
    """The same line appended again after the session read the note (a person added a line in
    between) was answered with the first write's result, written nowhere; a replay's answer now
    says in words that nothing was written, and how to write the text again."""
    write(workspace / "memory" / "2026-12-06.md", "# Log\n")
    session = sessions()
    note = "memory/2026-12-06.md"
    assert not session.call("memory_get", path=note)[0]
    refused, text = session.call("memory_write", path=note, append="- fed the cat")
    assert not refused and "replayed" not in json.loads(text), text
    refused, text = session.call("memory_write", path=note, append="- fed the cat")  # a retry: answered
    replay = json.loads(text)
    assert not refused and replay["replayed"] is True, text
    assert replay["message"].startswith("Replayed: nothing was appended to memory/2026-12-06.md now.")
    assert "read the file first with memory_get" in replay["message"]
    with open(workspace / note, "a") as fh:
        fh.write("- (human) vet called\n")
    assert not session.call("memory_get", path=note)[0]
    refused, text = session.call("memory_write", path=note, append="- fed the cat")
    assert not refused and "replayed" not in json.loads(text) and "message" not in json.loads(text), text
    assert (workspace / note).read_text() == "# Log\n- fed the cat\n- (human) vet called\n- fed the cat\n"
    refused, text = session.call("memory_write", path=note, append="- again", idempotencyKey="turn-1")
    refused, text = session.call("memory_write", path=note, append="- again", idempotencyKey="turn-1")
    assert not refused and json.loads(text)["message"].endswith("Another write takes its own idempotencyKey."), text


def test_an_append_after_a_window_read_keeps_what_was_read(workspace, state_dir):
    """An append counts as the writer's read of its own line only: the lines it did not read stay
    unread (a window read, then an append, then a replace dropped them); a daily note appended to
    unread has none of its lines read; read --diff keeps what the earlier reads showed."""
    s = settings_for(workspace, state_dir)
    write(workspace / "MEMORY.md", FACTS)
    LocalMemory(s).read("MEMORY.md", from_line=1, lines=10)
    LocalMemory(s).write("MEMORY.md", append="- fact 301")
    with pytest.raises(WriteBlocked, match="read lines 1-10 of the 301 lines"):
        LocalMemory(s).write("MEMORY.md", content="short\n")
    LocalMemory(s).read_diff("MEMORY.md")  # nothing new: the record still says lines 1-10
    with pytest.raises(WriteBlocked, match="read lines 1-10 of the 301 lines"):
        LocalMemory(s).write("MEMORY.md", content="short\n")

    LocalMemory(s.with_session("s-2")).write("memory/2026-01-05.md", content="- a\n- b\n")  # another session's
    LocalMemory(s).write("memory/2026-01-05.md", append="- c")  # unread, allowed: the note only grows
    with pytest.raises(WriteBlocked, match=r"read none of the 3 lines of memory/2026-01-05.md.*--from 1\)"):
        LocalMemory(s).write("memory/2026-01-05.md", content="- c\n")
    LocalMemory(s).read("memory/2026-01-05.md")
    LocalMemory(s).write("memory/2026-01-05.md", content="- c\n")
    assert (workspace / "memory" / "2026-01-05.md").read_text() == "- c\n"

    # Appended unread, grown by another session, appended again: still none of the first lines read
    # (an unread append's "none" was taken for "to the end", and a tail read then made a whole one).
    LocalMemory(s.with_session("s-2")).write("memory/2026-01-06.md", content="- their first line\n")
    LocalMemory(s).write("memory/2026-01-06.md", append="- mine")
    LocalMemory(s.with_session("s-2")).read("memory/2026-01-06.md")
    LocalMemory(s.with_session("s-2")).write("memory/2026-01-06.md", append="- theirs")
    LocalMemory(s).write("memory/2026-01-06.md", append="- mine again")
    LocalMemory(s).read("memory/2026-01-06.md", from_line=3)
    with pytest.raises(WriteBlocked, match="read lines 3-4 of the 4 lines"):
        LocalMemory(s).write("memory/2026-01-06.md", content="- c\n")
    LocalMemory(s.with_session("s-3")).read("memory/2026-01-06.md", from_line=4)
    with pytest.raises(WriteBlocked, match="read line 4 of the 4 lines"):  # not "lines 4-4"
        LocalMemory(s.with_session("s-3")).write("memory/2026-01-06.md", content="- c\n")
    assert (workspace / "memory" / "2026-01-06.md").read_text().startswith("- their first line\n")


def test_a_schema_11_database_keeps_its_read_records_as_whole_reads(tmp_path):
    """Schema 12 from 11: reads.seen_from and seen_to (which lines a read showed); a record made
    before says nothing of its lines, and stays what it was: the whole file read."""
    from openclaw_memory.history.states import ReadRecords

    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        for script in (schema.SCHEMA, *schema.MIGRATIONS[:6]):
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute("INSERT INTO reads VALUES (?, ?, ?, 'v1', 3, 1.5, 'read')", (enc("main"), enc(""), enc("/w/a.md")))
        conn.execute("PRAGMA user_version = 11")

    class Store:
        db = Database(tmp_path)

    seen = ReadRecords(Store(), "main").get("/w/a.md")  # type: ignore[arg-type]
    assert seen is not None and (seen.version, seen.whole, seen.window) == ("v1", True, None)
    assert Database(tmp_path).one("PRAGMA user_version") == (schema.SCHEMA_VERSION,)


def test_state_names_the_lines_a_window_read_showed(workspace, cli):
    write(workspace / "memory" / "big.md", FACTS)
    assert cli("read", "memory/big.md", "--lines", "1").returncode == 0
    (entry,) = cli("state", "--json").json()["files"]
    assert (entry["state"], entry["seenLines"]) == ("read_fresh", [1, 1])
    assert "memory/big.md  (only lines 1-1 read: read the rest to replace it)" in cli("state").stdout
    assert cli("read", "memory/big.md", "--from", "2", "--lines", "400").returncode == 0
    (entry,) = cli("state", "--json").json()["files"]
    assert entry["state"] == "read_fresh" and "seenLines" not in entry
    # A read cut inside its first line showed no whole line: said so (it said lines 1-0).
    write(workspace / "memory" / "big.md", "a first line of thirty chars..\nsecond\n")
    assert cli("read", "memory/big.md", "--max-chars", "5").returncode == 0
    (entry,) = cli("state", "--json").json()["files"]
    assert (entry["state"], entry["seenLines"]) == ("read_fresh", [])
    assert "memory/big.md  (no whole line read: read it to replace it)" in cli("state").stdout


def test_paging_on_across_a_save_says_the_window_is_of_another_version(cli, workspace):
    """Following nextFrom after a person's save: the second page repeated lines and skipped the
    inserted ones, and nothing said so; the agent took the file as read."""
    note = workspace / "memory" / "n.md"
    write(note, "l1\nl2\nl3\nl4\nl5\nl6\n")
    first = cli("read", "memory/n.md", "--lines", "3", "--json").json()
    assert first["nextFrom"] == 4 and "warnings" not in first
    assert "warnings" not in cli("read", "memory/n.md", "--from", "4", "--lines", "1", "--json").json()  # the control
    (workspace / "memory" / "n.tmp").write_text("NEW-A\nNEW-B\nl1\nl2\nl3\nl4\nl5\nl6\n")
    os.replace(workspace / "memory" / "n.tmp", note)  # an editor's atomic save
    second = cli("read", "memory/n.md", "--from", "5", "--json").json()
    assert second["warnings"] == ["memory/n.md changed since this session read lines 1-4 of it: this window is of the "
                                  "new version, and the lines before it may differ from those shown then; read it again "
                                  "from line 1 (from=1)"], second
