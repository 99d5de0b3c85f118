"""Memory bounded by the limits, not by what arrives: request bodies, config files, root files.

Real processes only: the service (``serve --http``) over a real socket, its RSS read from
``/proc/PID/status``; the CLI as a child process, its peak RSS from ``wait4``. The ceilings are
correctness bounds (what a command keeps grows with a limit, not with the input), far from both
the limit and the input, never timings.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

import pytest
import xxhash
from test_serve import WAIT, Serve

from conftest import env_for, fault, settings_for, write
from openclaw_memory import ReadResult, open_memory
from openclaw_memory.memory.protocol import MAX_LINE
from openclaw_memory.service_files import read_info, service_dir

MiB = 1 << 20


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a running process, in bytes."""
    with open(f"/proc/{pid}/status") as fh:
        fields = dict(line.split(":", 1) for line in fh)
    return {k: int(fields[k].split()[0]) * 1024 for k in ("VmRSS", "VmHWM")}


# The CLI run by a wrapper that writes its own peak (VmHWM, per address space: fresh at exec) to a
# pipe at exit. ``ru_maxrss`` from wait4 would carry the pytest worker's peak through fork and exec
# (a worker that loaded the model earlier: 452 MiB for a command that used 30).
_MEASURED = (
    "import atexit, os, runpy, sys\n"
    "fd = int(sys.argv.pop(1))\n"
    "def peak():\n"
    "    with open('/proc/self/status') as fh:\n"
    "        os.write(fd, next(l.split()[1] for l in fh if l.startswith('VmHWM:')).encode())\n"
    "atexit.register(peak)\n"
    "sys.argv[0] = 'openclaw-memory'\n"
    "runpy.run_module('openclaw_memory', run_name='__main__')\n"
)


def run_measured(workspace: Path, state_dir: Path, *args: str) -> tuple[int, str, int]:
    """The CLI as a child process: its exit status, stderr and its own peak RSS in bytes."""
    read_end, write_end = os.pipe()
    try:
        child = subprocess.run([sys.executable, "-c", _MEASURED, str(write_end), *args], cwd=workspace,
                               env=env_for(workspace, state_dir), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(write_end,))
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        peak_kib = fh.read()
    err = child.stderr.decode("utf-8", "replace")
    assert peak_kib, f"the child wrote no peak: {err}"
    return child.returncode, err, int(peak_kib) * 1024


class HttpService:
    """``serve --no-watch --http 127.0.0.1:0`` on a workspace with a MEMORY.md, and one MCP session on it."""

    def __init__(self, workspace: Path, state_dir: Path):
        write(workspace / "MEMORY.md", "# Memory\n\nThe user sails a ketch.\n")
        self.serve = Serve(workspace, state_dir, "--no-watch", "--http", "127.0.0.1:0").wait_ready()
        settings = settings_for(workspace, state_dir)
        self.token = Path(service_dir(settings), "token").read_text().strip()
        url = read_info(settings)["http"]
        self.host, _, port = url.removeprefix("http://").removesuffix("/mcp").rpartition(":")
        self.port = int(port)
        hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
        answer = self.exchange(self.head("POST", length=len(hello)) + hello)
        self.session = next(line.split(":", 1)[1].strip() for line in answer.decode("latin-1").split("\r\n")
                            if line.lower().startswith("mcp-session-id:"))

    def head(self, method: str, *, host: str | None = None, length: int | None = None, session: bool = False,
             extra: str = "") -> bytes:
        """A request's head: ``host`` None names the served address; ``length`` None sends a chunked body."""
        lines = [f"{method} /mcp HTTP/1.1", f"Authorization: Bearer {self.token}",
                 "Accept: application/json, text/event-stream", "Content-Type: application/json", "Connection: close"]
        if host is None:
            lines.append(f"Host: {self.host}:{self.port}")
        elif host != "-":  # "-": no Host header at all
            lines.append(f"Host: {host}")
        lines.append(f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked")
        if session:
            lines.append(f"mcp-session-id: {self.session}")
        return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode("latin-1")

    def connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=WAIT)
        return sock

    def exchange(self, request: bytes) -> bytes:
        """Send a whole request, return the whole answer (the server closes: Connection: close)."""
        with self.connect() as sock:
            sock.sendall(request)
            return _read_all(sock)

    def rss(self) -> dict[str, int]:
        return _status(self.serve.proc.pid)


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes (a reset after its answer ends it too)."""
    got = b""
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except ConnectionResetError:
        pass
    return got


def _status_code(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@pytest.fixture
def http_service(workspace, state_dir):
    started: list[HttpService] = []

    def start() -> HttpService:
        started.append(HttpService(workspace, state_dir))
        return started[-1]

    yield start
    for s in started:
        s.serve.kill()


@pytest.mark.slow  # a GiB through the loopback
def test_a_huge_chunked_body_is_refused_while_it_streams_and_never_held_whole(http_service):
    """An authenticated chunked body (no Content-Length to refuse it by) of 1 GiB: 413 once the
    count passes the limit, before the body ends, and the server holds at most the limit's worth."""
    service = http_service()
    before = service.rss()
    chunk = b"x" * MiB
    sent = 0
    answered_at: list[int] = []  # how much of the body was sent when the answer began to arrive
    answer: list[bytes] = []

    def read(sock: socket.socket) -> None:
        got = b""
        try:
            while data := sock.recv(65536):
                answered_at.append(sent)
                got += data
        except ConnectionResetError:
            pass  # the server closed with body bytes unread, after its answer
        answer.append(got)

    with service.connect() as sock:
        sock.sendall(service.head("POST", session=True))
        reader = threading.Thread(target=read, args=(sock,), daemon=True)
        reader.start()
        try:
            while sent < 1024 * MiB and not answered_at:
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent += len(chunk)
            if not answered_at:
                sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection after its answer: the rest of the body is never read
        reader.join(WAIT)
    after = service.rss()
    grown = after["VmHWM"] - before["VmHWM"]
    assert grown < MAX_LINE + 48 * MiB, f"peak RSS grew {grown / MiB:.0f} MiB for a {sent / MiB:.0f} MiB body"
    assert answered_at and answered_at[0] < 1024 * MiB  # answered before the body ended
    assert answer and _status_code(answer[0]) == 413 and b"limit" in answer[0], answer[:1]
    assert service.serve.stop() == 0
    assert "Traceback" not in "".join(service.serve.stderr)


def test_bodies_that_never_end_are_dropped_with_one_line_each_and_no_traceback(http_service, state_dir):
    """50 clients start a body and go away; 50 start one and wait: those are answered 408 once
    ``[service] http_body_timeout`` passes. The service's log: one line per drop, no traceback."""
    write(state_dir / "openclaw-memory.toml", "[service]\nhttp_body_timeout = 1\n")
    service = http_service()
    partial = service.head("POST", session=True) + b"5\r\nhello\r\n"
    gone = []
    for _ in range(50):
        sock = service.connect()
        sock.sendall(partial)
        gone.append(sock)
    waiting = []
    for _ in range(50):
        sock = service.connect()
        sock.sendall(partial)
        waiting.append(sock)
    for sock in gone:
        sock.close()
    answers = []
    for sock in waiting:
        with sock:
            answers.append(_read_all(sock))
    assert [_status_code(a) for a in answers] == [408] * 50, answers[:1]
    assert all(b"did not end within 1 s" in a for a in answers)
    assert service.serve.stop() == 0
    log = "".join(service.serve.stderr)
    assert "Traceback" not in log and "ClientDisconnect" not in log, log[-2000:]
    assert log.count("refused a request (408)") == 50, log[-2000:]


def test_an_empty_missing_or_foreign_host_is_refused_before_anything_answers(http_service):
    """Only the served loopback names are answered (docs/mcp.md), also where the endpoint answers
    by itself (a body refused in plain words, a session's DELETE), not only where the SDK checks."""
    service = http_service()
    batch = b'[{"jsonrpc": "2.0", "id": 4, "method": "ping"}]'

    def post(host: str | None, extra: str = "") -> int:
        return _status_code(service.exchange(service.head("POST", host=host, length=len(batch), session=True, extra=extra) + batch))

    assert post(None) == 200  # the control: the served name, answered (with a plain refusal of the batch)
    assert post("localhost:1234") == 200
    for host in ("", "evil.example", f"evil.example:{service.port}", "127.0.0.1.evil.example", "[::1"):
        assert post(host) == 421, host
    assert _status_code(service.exchange(service.head("POST", host="-", length=len(batch), session=True) + batch)) in (400, 421)
    assert post(None, "Origin: http://evil.example\r\n") == 403
    assert post(None, "Origin: null\r\n") == 403
    assert post(None, f"Origin: http://{service.host}:9\r\n") == 200
    assert _status_code(service.exchange(service.head("DELETE", host="", length=0, session=True))) == 421
    assert _status_code(service.exchange(service.head("DELETE", length=0, session=True))) == 200  # the session was still there
    assert service.serve.stop() == 0


@pytest.mark.parametrize("name", ["openclaw.json", "openclaw-memory.toml"])
def test_a_config_file_of_gigabytes_is_refused_by_its_size_unread(workspace, state_dir, name):
    """A 2 GiB config file (sparse: no disk used) was read whole by every command, then decoded and
    parsed (4.2 GB RSS) before "not valid JSON5/TOML"; now one line names the size and the limit."""
    write(workspace / "MEMORY.md", "# Memory\n")
    config = state_dir / name
    config.touch()
    os.truncate(config, 2 << 30)
    code, err, peak = run_measured(workspace, state_dir, "files")
    assert code == 2
    assert err.strip() == (f"error: cannot read {config}: it is 2.0 GiB; the limit is 16 MiB "
                           "(a config file is a few KB: is it the right file?)"), err
    assert peak < 128 * MiB, f"peak RSS {peak / MiB:.0f} MiB for a 2 GiB {name}"
    os.truncate(config, 16 << 20)  # at the limit: read, and then judged by what it holds
    code, err, _ = run_measured(workspace, state_dir, "files")
    assert code == 2 and "not valid" in err and "limit" not in err, err


LINE = "- The user sails a ketch named Étoile 🌊 and keeps the teak deck sanded each spring.\n"


def write_text(path: Path, size: int) -> int:
    """``size`` bytes (about) of real UTF-8 text, lines of notes with accents and astral characters."""
    block = (LINE * ((1 << 20) // len(LINE.encode()))).encode()
    written = 0
    with open(path, "wb") as fh:
        while written < size:
            fh.write(block)
            written += len(block)
    return written


def _peak_on_memory_md(folder: Path, size: int, *args: str, twin: bool) -> tuple[int, str]:
    """Peak RSS (bytes) and stderr of ``args`` in a new workspace whose MEMORY.md holds ``size``
    bytes of text (and a legacy memory.md with the same bytes, when ``twin``)."""
    workspace, state_dir = folder / "ws", folder / "state"
    workspace.mkdir(parents=True)
    state_dir.mkdir()
    write_text(workspace / "MEMORY.md", size)
    if twin:
        shutil.copyfile(workspace / "MEMORY.md", workspace / "memory.md")
    code, err, peak = run_measured(workspace, state_dir, *args)
    assert code in (0, 1) and "Traceback" not in err, err
    if twin:  # the twin was archived, MEMORY.md kept
        assert not (workspace / "memory.md").exists() and (workspace / "MEMORY.md").stat().st_size >= size
    return peak, err


COMMANDS = [pytest.param(("prompt",), False, id="prompt"), pytest.param(("doctor",), False, id="doctor"),
            pytest.param(("doctor", "--fix"), True, id="doctor-fix-twins")]


def _check_streamed(tmp_path: Path, size: int, args: tuple[str, ...], twin: bool, ceiling: int) -> None:
    small, _ = _peak_on_memory_md(tmp_path / "small", 1 << 10, *args, twin=twin)
    large, err = _peak_on_memory_md(tmp_path / "large", size, *args, twin=twin)
    if args == ("prompt",):
        assert "MEMORY.md is not loaded: it is" in err, err
    grown = large - small
    assert grown < ceiling, f"{' '.join(args)}: peak RSS {small / MiB:.0f} -> {large / MiB:.0f} MiB for a {size / MiB:.0f} MiB MEMORY.md"


@pytest.mark.parametrize(("args", "twin"), COMMANDS)
def test_prompt_and_doctor_read_a_large_memory_md_in_blocks(tmp_path, args, twin):
    """``prompt`` reads no more than OpenClaw's loader (2 MiB); doctor's checks (UTF-8, the prompt
    caps) and ``doctor --fix`` archiving an identical memory.md stream it. Before, each held the
    file several times over (a 96 MiB file: about 10x in RSS)."""
    _check_streamed(tmp_path, 96 * MiB, args, twin, 24 * MiB)


@pytest.mark.slow  # 500 MB of text written and read three times
@pytest.mark.parametrize(("args", "twin"), COMMANDS)
def test_prompt_and_doctor_on_a_500_mb_memory_md_stay_small(tmp_path, args, twin):
    _check_streamed(tmp_path, 500 * 1000 * 1000, args, twin, 64 * MiB)


def _recover_interrupted_merge(folder: Path, grown_by: int) -> int:
    """A merge killed once MEMORY.md holds it (memory.md not yet archived), then ``grown_by`` bytes
    of text appended to MEMORY.md: the peak RSS of the ``doctor --fix`` that completes it."""
    workspace, state_dir = folder / "ws", folder / "state"
    write(workspace / "MEMORY.md", "# Durable memory\n- canonical fact\n")
    write(workspace / "memory.md", "# legacy notes\n- legacy fact\n")
    state_dir.mkdir()
    killed = subprocess.run([sys.executable, "-m", "openclaw_memory", "doctor", "--fix"], cwd=workspace,
                            env=fault("merge:canonical-written=kill", env=env_for(workspace, state_dir)),
                            capture_output=True, timeout=WAIT)
    assert killed.returncode == -9, killed.stderr
    merged = (workspace / "MEMORY.md").read_bytes()
    assert b"legacy fact" in merged
    if grown_by:
        write_text(folder / "more", grown_by)
        with open(workspace / "MEMORY.md", "ab") as fh, open(folder / "more", "rb") as more:
            shutil.copyfileobj(more, fh)
    code, err, peak = run_measured(workspace, state_dir, "doctor", "--fix")
    assert code in (0, 1) and "Traceback" not in err, err
    assert not (workspace / "memory.md").exists()  # completed: archived, not merged a second time
    assert (workspace / "MEMORY.md").read_bytes().startswith(merged)
    assert (workspace / "MEMORY.md").read_bytes().count(b"legacy fact") == 1
    return peak


def test_completing_an_interrupted_merge_searches_a_large_memory_md_in_blocks(tmp_path):
    """The recovery asks whether MEMORY.md already holds the merge (its marker): it read the file whole."""
    small = _recover_interrupted_merge(tmp_path / "small", 0)
    large = _recover_interrupted_merge(tmp_path / "large", 96 * MiB)
    assert large - small < 24 * MiB, f"peak RSS {small / MiB:.0f} -> {large / MiB:.0f} MiB"


def test_a_startup_file_over_openclaws_2_mib_is_not_loaded_as_in_openclaw(workspace, state_dir, cli):
    """OpenClaw's loader reads at most 2 MiB of USER.md or MEMORY.md and injects
    ``[UNREADABLE: File exceeds 2097152 bytes]`` instead of a bigger one: the prompt showed its head
    and tail as if it were loaded; doctor now says the agent sees nothing of it."""
    size = write_text(workspace / "MEMORY.md", 3 * MiB)
    write(workspace / "USER.md", "x" * (2 * MiB))  # exactly the limit: read and cut as usual
    section = cli("prompt", "--json").json()
    assert "## MEMORY.md\n\n[UNREADABLE: File exceeds 2097152 bytes]\n" in section["text"]
    assert "Étoile" not in section["text"].split("## MEMORY.md", 1)[1]
    assert [w for w in section["warnings"] if w.startswith(f"MEMORY.md is not loaded: it is {size:,} bytes")]
    assert [t["path"] for t in section["truncated"]] == ["USER.md"]
    findings = {f["id"]: f for f in cli("doctor", "--json").json()["findings"]}
    assert findings["prompt-file-too-large"]["paths"] == ["MEMORY.md"]
    assert "[UNREADABLE: File exceeds 2097152 bytes]" in findings["prompt-file-too-large"]["message"]
    assert findings["prompt-file-cap"]["paths"] == ["USER.md"]


def test_a_connection_whose_request_head_does_not_arrive_is_closed(http_service, state_dir):
    """uvicorn waits for a request's head without end: a connection that sends nothing, half a
    header, or half the head of a second request on a kept connection was held for good, each one a
    file descriptor of the service. Each is closed once ``[service] http_body_timeout`` passes."""
    write(state_dir / "openclaw-memory.toml", "[service]\nhttp_body_timeout = 1\n")
    service = http_service()
    silent = service.connect()
    half = service.connect()
    half.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthor")
    kept = service.connect()
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    kept.sendall(service.head("POST", length=len(ping), session=True).replace(b"Connection: close", b"Connection: keep-alive") + ping)
    answered = b""
    while not answered.endswith(b"\r\n0\r\n\r\n"):  # the whole answer: an event stream, chunked
        answered += kept.recv(65536)
    kept.sendall(b"POST /mcp HTTP/1.1\r\nHo")
    for sock in (silent, half, kept):
        with sock:
            assert _read_all(sock) == b""  # closed by the server (a socket still open times out after WAIT)
    assert _status_code(service.exchange(service.head("POST", length=len(ping), session=True) + ping)) == 200
    assert service.serve.stop() == 0
    assert "Traceback" not in "".join(service.serve.stderr)


# Another user's program that opens connections to the service and sends nothing: it says how many
# of them it opened, then, once told (a line on stdin), how many the server has closed since.
_HOG = (
    "import select, socket, sys\n"
    "held = [socket.create_connection((sys.argv[1], int(sys.argv[2]))) for _ in range(int(sys.argv[3]))]\n"
    "print(len(held), flush=True)\n"
    "sys.stdin.readline()\n"
    "closed = [s for s in held if select.select([s], [], [], 0)[0] and s.recv(1, socket.MSG_PEEK) == b'']\n"
    "print(len(closed), flush=True)\n"
)


def test_connections_without_the_token_never_take_the_owners_places(http_service, base):
    """Another local user (nobody, where the tests run as root) without the token opens 300
    connections and sends nothing: they held all 256 places for 60 s each, and the owner's own
    client, with the token, got an empty reply. Now those wait in a bound of their own, the oldest
    closed for each new one, said in one line; the owner's request is answered."""
    from openclaw_memory.mcp.http import MAX_UNAUTHENTICATED

    service = http_service()
    hog = base / "hog.py"
    hog.write_text(_HOG)
    as_nobody = ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"] if os.geteuid() == 0 else []
    proc = subprocess.Popen([*as_nobody, sys.executable, str(hog), service.host, str(service.port), "300"], cwd=base,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "300"
        ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
        answer = service.exchange(service.head("POST", length=len(ping), session=True) + ping)
        assert _status_code(answer) == 200 and b'"result"' in answer, answer[:300]
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert int(proc.stdout.readline()) >= 300 - MAX_UNAUTHENTICATED  # the oldest, closed by the server
    finally:
        proc.kill()
        proc.wait()
    assert service.serve.stop() == 0
    log = "".join(service.serve.stderr)
    assert log.count(f"{MAX_UNAUTHENTICATED} connections have sent no request with the token") == 1, log[-2000:]
    assert "connections are open" not in log and "Traceback" not in log


# Another user's flood: once told (a line on stdin) it opens connections to the service and sends
# nothing, until the server has closed at least as many as asked; it says how many it saw closed.
_FLOOD = (
    "import select, socket, sys\n"
    "host, port, count, enough = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])\n"
    "sys.stdin.readline()\n"
    "held = [socket.create_connection((host, port)) for _ in range(count)]\n"
    "closed = set()\n"
    "while len(closed) < enough:\n"
    "    ready = select.select([s for s in held if s not in closed], [], [], 60)[0]\n"
    "    if not ready:\n"
    "        break\n"
    "    for s in ready:\n"
    "        try:\n"
    "            if s.recv(1) == b'':\n"
    "                closed.add(s)\n"
    "        except ConnectionResetError:\n"
    "            closed.add(s)\n"
    "print(len(closed), flush=True)\n"
    "sys.stdin.readline()\n"
)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs another uid (65534) to flood: the tests run as root for it")
def test_another_users_flood_of_new_connections_never_closes_the_owners(http_service, base):
    """The owner's 30 clients have connected and not yet sent their request head when another
    local user (nobody) opens 300 connections: each newcomer past the 64 waiting closed the oldest
    waiting, the owner's first, and the owner's initialize, with the token, met a reset. Now the
    kernel names each peer's user and another user's newcomers close only another user's: all 30
    of the owner's requests are answered."""
    from openclaw_memory.mcp.http import MAX_UNAUTHENTICATED

    service = http_service()
    flood = base / "flood.py"
    flood.write_text(_FLOOD)
    count = 300
    proc = subprocess.Popen(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", sys.executable,
                             str(flood), service.host, str(service.port), str(count), str(count - MAX_UNAUTHENTICATED)],
                            cwd=base, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    hello = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    owners = [service.connect() for _ in range(30)]  # accepted before the flood's (the kernel's queue is in order)
    answers: list[bytes | str] = []
    try:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert int(proc.stdout.readline()) >= count - MAX_UNAUTHENTICATED  # the server has made room
        for sock in owners:
            try:
                sock.sendall(service.head("POST", length=len(hello)) + hello)
                answers.append(_read_all(sock))
            except OSError as e:
                answers.append(type(e).__name__)
    finally:
        for sock in owners:
            sock.close()
        proc.kill()
        proc.wait()
    failed = [a if isinstance(a, str) else a[:80] for a in answers if isinstance(a, str) or not a.startswith(b"HTTP/1.1 200")]
    assert not failed, f"{len(failed)} of the owner's 30 requests failed: {failed[:3]}"
    assert service.serve.stop() == 0
    log = "".join(service.serve.stderr)
    assert log.count(f"{MAX_UNAUTHENTICATED} connections have sent no request with the token") == 1, log[-2000:]
    assert "Traceback" not in log


def test_the_kernel_names_the_user_at_the_other_end_of_a_loopback_connection(monkeypatch):
    """peer_uid: this process's uid for a connection it made itself, by sock_diag and by
    /proc/net/tcp{,6} alike (the one used where netlink is refused); None once the peer closed."""
    from openclaw_memory.mcp import http

    class Transport:
        def __init__(self, sock: socket.socket):
            self.extra = {"socket": sock, "peername": sock.getpeername(), "sockname": sock.getsockname()}

        def get_extra_info(self, name: str):
            return self.extra.get(name)

    if not sys.platform.startswith("linux"):
        pytest.skip("the kernel is asked on Linux only")
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        with socket.socket(family) as listener:
            listener.bind((host, 0))
            listener.listen()
            client = socket.create_connection(listener.getsockname()[:2])
            accepted, _ = listener.accept()
            with accepted:
                transport = Transport(accepted)
                for refused in (False, True):
                    monkeypatch.setattr(http, "_diag_refused", [refused])
                    assert http.peer_uid(transport) == os.geteuid(), (host, refused)
                client.close()  # orphaned: the kernel keeps it a while as uid 0, with no inode
                for refused in (False, True):
                    monkeypatch.setattr(http, "_diag_refused", [refused])
                    assert http.peer_uid(transport) is None, (host, refused)


def test_connections_with_the_token_past_the_bound_are_refused_and_said_once(http_service):
    """A client with the token opening connections without end gets at most MAX_HTTP_CONNECTIONS
    of the service's file descriptors: one past them is answered 503 and closed, said in one line;
    the service answers again once they close."""
    from openclaw_memory.mcp.http import MAX_HTTP_CONNECTIONS

    service = http_service()
    ping = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode()
    kept = service.head("POST", length=len(ping), session=True).replace(b"Connection: close", b"Connection: keep-alive") + ping
    held = []
    for _ in range(MAX_HTTP_CONNECTIONS):
        sock = service.connect()
        held.append(sock)
        sock.sendall(kept)
        answered = b""
        while not answered.endswith(b"\r\n0\r\n\r\n"):  # the whole answer: an event stream, chunked
            answered += sock.recv(65536)
    for _ in range(3):
        answer = service.exchange(service.head("POST", length=len(ping), session=True) + ping)
        assert _status_code(answer) == 503 and b"too many" in answer, answer[:300]
    for sock in held:
        sock.close()
    answer = b""
    while not answer or _status_code(answer) == 503:  # the service sees the held ones close as it gets to them
        answer = service.exchange(service.head("POST", length=len(ping), session=True) + ping)
    assert _status_code(answer) == 200
    assert service.serve.stop() == 0
    log = "".join(service.serve.stderr)
    assert log.count(f"{MAX_HTTP_CONNECTIONS} connections are open") == 1, log[-2000:]
    assert "Traceback" not in log


def _read_peak(memory, path: str, **window) -> tuple[ReadResult, int]:
    """``memory.read`` and the peak of Python's heap while it ran."""
    tracemalloc.start()
    try:
        result = memory.read(path, **window)
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


EVERYTHING = {"lines": 10**9, "max_chars": 10**9}


def test_a_read_of_a_large_note_holds_its_bytes_and_its_text_once(workspace, state_dir):
    """A whole read held each line as a string, the list of them, their join, and the text again
    with its notice (32 MiB of text: a 346 MiB peak of Python's heap; a 200 MB note: 1.3 GB RSS).
    The file now streams past once, the window's bytes kept and decoded once into its text: the
    bytes, the text, and the decoder's first buffer (a byte a character, before an accent or an
    emoji widens it). A paged read keeps its window alone."""
    note = workspace / "memory" / "big.md"
    note.parent.mkdir()
    size = write_text(note, 32 * MiB)
    memory = open_memory(settings_for(workspace, state_dir))
    whole, peak = _read_peak(memory, "memory/big.md", **EVERYTHING)
    text = sys.getsizeof(whole.text)
    assert peak < 2 * size + text + 24 * MiB, f"a whole read of {size / MiB:.0f} MiB (text {text / MiB:.0f} MiB) peaked at {peak / MiB:.0f} MiB"
    data = note.read_bytes()
    assert (whole.text, whole.lines, whole.truncated, whole.version) == (
        data.decode().removesuffix("\n"), data.count(b"\n"), False, xxhash.xxh3_128_hexdigest(data))
    del whole, data
    paged, peak = _read_peak(memory, "memory/big.md", from_line=300_000, lines=50)
    assert (paged.lines, paged.next_from, paged.text.count(LINE.strip())) == (50, 300_050, 50)
    assert peak < 4 * MiB, f"a window of 50 lines peaked at {peak / MiB:.1f} MiB"


@pytest.mark.parametrize("json_out", [(), ("--json",)], ids=["text", "json"])
def test_the_cli_prints_a_whole_large_note_without_copies_of_it(tmp_path, json_out):
    """``read`` of a whole note wrote the text with its final newline added (``--json``: the
    document, then with its newline), encoded whole, after the read's own copies: 1.3 GB RSS for a
    200 MB note; now the read's bytes and text, the text written (escaped) a piece at a time."""
    peaks = {}
    for name, size in (("small", 1 << 10), ("large", 32 * MiB)):
        workspace, state_dir = tmp_path / name / "ws", tmp_path / name / "state"
        (workspace / "memory").mkdir(parents=True)
        state_dir.mkdir()
        write_text(workspace / "memory" / "big.md", size)
        code, err, peaks[name] = run_measured(workspace, state_dir, "read", "memory/big.md", "--lines", "1000000000",
                                              "--max-chars", "1000000000", *json_out)
        assert code == 0 and not err, err
    grown = peaks["large"] - peaks["small"]
    # The text of this note is 4 bytes a character (an emoji in each line): 4 times its UTF-8.
    assert grown < 7 * 32 * MiB, f"peak RSS {peaks['small'] / MiB:.0f} -> {peaks['large'] / MiB:.0f} MiB"
