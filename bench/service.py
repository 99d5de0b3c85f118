"""The memory service (``openclaw-memory serve``): figures side by side in one run (not a test).

A temporary workspace holds a subset of the OpenClaw docs corpus (``--files``, default 40) as
its ``memory/`` tree, indexed once. Printed, in this order:

Every command runs in a new process (after one untimed run: byte-code caches written, as an
installed package has them, and the page cache warm).

1. start-up baselines: ``python -c pass`` and ``openclaw-memory read MEMORY.md`` (no service);
2. CLI ``search`` (hybrid) without a service, then with ``serve`` running (and ``read`` with it);
   target: p50 <= 80 ms with the service, and no more than 1.5x the cold start of ``read``;
3. MCP ``memory_search`` round trip through the service, from a real client session over stdio
   (the ``mcp`` process forwards to the service) and over streamable HTTP; target p50 <= 30 ms;
4. edit -> searchable with the service running (the service's live sync; this process polls
   a keyword search through the service socket); target p50 <= 300 ms; with the service's own
   figure for each edit's sync (its change line), the rest being the event, the debounce and
   the search that finds it;
5. two MCP sessions and a CLI loop searching, first alone (``--seconds``, quiet), then the same
   while a person edits a file every 0.5 s: errors, each client's latency, and per client the
   share of searches that waited and the longest wait as the client sees them (a search's time
   beyond that client's quiet median: "waited" past its quiet p95, "slow" past the median plus
   100 ms), with the service's own count of waits for the index (a search that arrives during a
   sync's commit waits for it); target: no error, no wait over 100 ms;
6. the service's resident memory with 0, 1, 2 and 4 MCP sessions connected, beside one
   stand-alone ``mcp`` process (no service) that loads its own model.

Usage: .venv/bin/python bench/service.py [--files 40] [--runs 15] [--seconds 15] [--only edit,load]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from _common import REPO, cli, median, pct, settings_for
from watch import subset_workspace

from openclaw_memory.wire import to_json

PY = sys.executable
PHASES = ("startup", "mcp", "edit", "load", "memory")


def env_for(ws: Path, state: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW") and k != "PYTHONDONTWRITEBYTECODE"}
    # Byte-code caches as an installed package has them (pip compiles at install), kept out of the tree.
    env["PYTHONPYCACHEPREFIX"] = str(ws.parent / "pycache")
    env["PYTHONPATH"] = str(REPO)  # the processes run this tree's code, as this one does
    env.update(OPENCLAW_WORKSPACE=str(ws), OPENCLAW_STATE_DIR=str(state), **extra)
    return env


def timed_runs(cmd: list[str], env: dict, cwd: Path, runs: int) -> list[float]:
    """Wall time of ``runs`` new processes, after one untimed run (byte-code and page cache warm)."""
    subprocess.run(cmd, env=env, cwd=cwd, capture_output=True)
    out = []
    for _ in range(runs):
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
        out.append(time.perf_counter() - started)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {proc.stderr}")
    return out


def ms(values: list[float]) -> str:
    return f"p50 {median(values) * 1000:7.1f} ms   p95 {pct(values, 95) * 1000:7.1f} ms   (n={len(values)})"


def service_info(ws: Path, state: Path) -> dict:
    from openclaw_memory.memory.client import ServiceClient

    client = ServiceClient(settings_for(ws, state))
    try:
        return to_json(client.call("service"))
    finally:
        client.close()


def rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class ServeProcess:
    def __init__(self, ws: Path, state: Path, *args: str):
        self.proc = subprocess.Popen([PY, "-m", "openclaw_memory", "serve", "--json", *args], env=env_for(ws, state),
                                     cwd=ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.changes: list[dict] = []  # what the live sync applied, one per file (its sync's "ms")
        threading.Thread(target=self._err, daemon=True).start()
        threading.Thread(target=self._out, daemon=True).start()

    def _err(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def _out(self):
        for line in self.proc.stdout:
            try:
                self.changes.append(json.loads(line))
            except ValueError:
                continue

    def change_for(self, path: str, version_after: int) -> dict | None:
        return next((c for c in self.changes[version_after:] if c.get("path") == path), None)

    def wait_started(self, timeout: float = 600) -> None:
        """Until the started object (after the first sync): its keys include the watch's ``mode``."""
        deadline = time.monotonic() + timeout
        while not any("mode" in c for c in self.changes):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                sys.exit("serve did not start: " + "".join(self.lines))
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def _text(result) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


async def mcp_stdio_round_trips(ws, state, runs: int) -> list[float]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=PY, args=["-m", "openclaw_memory", "mcp"], env=env_for(ws, state), cwd=str(ws))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            return await _timed_searches(session, runs)


async def mcp_http_round_trips(url: str, token: str, runs: int) -> list[float]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
        async with streamable_http_client(url, http_client=http) as (r, w, *_):
            async with ClientSession(r, w) as session:
                return await _timed_searches(session, runs)


async def _timed_searches(session, runs: int) -> list[float]:
    """Seconds per ``memory_search`` round trip on an initialised session, after one warm-up."""
    await session.initialize()
    await session.call_tool("memory_search", {"query": "warm up"})
    out = []
    for i in range(runs):
        started = time.perf_counter()
        result = await session.call_tool("memory_search", {"query": f"gateway configuration {i}"})
        out.append(time.perf_counter() - started)
        assert not result.is_error, _text(result)
    return out


def edit_to_searchable(ws: Path, state: Path, edits: int, service: ServeProcess) -> tuple[list[float], list[float]]:
    """Seconds from each atomic save to the first search that finds it, and the service's own
    figure for the sync that applied it (seconds; the rest is the event, the debounce, the search)."""
    from openclaw_memory.memory.client import ServiceClient

    client = ServiceClient(settings_for(ws, state)).connect()
    out: list[float] = []
    syncs: list[float] = []
    for i in range(edits):
        seen = len(service.changes)
        phrase = f"zq{uuid.uuid4().hex[:10]}"
        rel = f"memory/bench/svc-edit-{i:02}.md"
        target = ws / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.save")
        tmp.write_text(f"# Edit {i}\n\nThe unique marker of this edit is {phrase}.\n", encoding="utf-8")
        started = time.perf_counter()
        os.replace(tmp, target)  # an editor's atomic save
        while True:
            result = client.call("search", query=phrase, limit=3, min_score=0.0, mode="text", sync=False)
            if any(hit.path == rel for hit in result.results):
                out.append(time.perf_counter() - started)
                break
            if time.perf_counter() - started > 60:
                sys.exit(f"{rel} not searchable after 60 s")
            time.sleep(0.01)
        time.sleep(0.3)  # let the debounce window close before the next edit
        change = service.change_for(rel, seen)
        if change is not None:
            syncs.append(change["ms"] / 1000)
    client.close()
    return out, syncs


async def concurrent(ws: Path, state: Path, seconds: float, edit: bool = True) -> dict:
    """Two MCP sessions and a CLI loop searching for ``seconds``, while a person edits (``edit``)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=PY, args=["-m", "openclaw_memory", "mcp"], env=env_for(ws, state), cwd=str(ws))
    stop = threading.Event()
    report: dict = {"cli": [], "cli_errors": 0, "cli_notes": 0, "edits": 0, "mcp": {}}

    def person():
        if not edit:
            return
        target = ws / "memory" / "bench" / "person.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        i = 0
        while not stop.is_set():
            tmp = target.with_name(".person.md.save")
            tmp.write_text(f"# Person\n\nEdit number {i}: marker zp{uuid.uuid4().hex[:8]}.\n", encoding="utf-8")
            os.replace(tmp, target)
            i += 1
            stop.wait(0.5)
        report["edits"] = i

    def cli_loop():
        while not stop.is_set():
            started = time.perf_counter()
            proc = subprocess.run([PY, "-m", "openclaw_memory", "search", "person edit marker", "--json"],
                                  env=env_for(ws, state), cwd=ws, capture_output=True, text=True)
            report["cli"].append(time.perf_counter() - started)
            if proc.returncode != 0 or any(line.startswith("error") for line in proc.stderr.splitlines()):
                report["cli_errors"] += 1
                report.setdefault("cli_error", proc.stderr.strip()[:300])
            elif proc.stderr:  # a warning: answered from the last complete index while a sync writes the next
                report["cli_notes"] += 1
                report.setdefault("cli_note", proc.stderr.strip().splitlines()[0][:200])

    async def session_loop(name: str):
        async with stdio_client(params) as (r, w):
            async with ClientSession(r, w) as session:
                await session.initialize()
                await session.call_tool("memory_search", {"query": "warm up"})
                times, errors = [], 0
                deadline = time.perf_counter() + seconds
                i = 0
                while time.perf_counter() < deadline:
                    if i % 5 == 4:
                        await session.call_tool("memory_get", {"path": "memory/bench/person.md"})
                    started = time.perf_counter()
                    result = await session.call_tool("memory_search", {"query": f"person edit {i}"})
                    times.append(time.perf_counter() - started)
                    errors += bool(result.is_error)
                    i += 1
                report["mcp"][name] = {"times": times, "errors": errors}

    target = ws / "memory" / "bench" / "person.md"  # there from the start: memory_get finds it in both phases
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# Person\n\nNot edited yet.\n", encoding="utf-8")
    threads = [threading.Thread(target=person, daemon=True), threading.Thread(target=cli_loop, daemon=True)]
    for t in threads:
        t.start()
    await asyncio.gather(session_loop("session-1"), session_loop("session-2"))
    stop.set()
    for t in threads:
        t.join(60)
    return report


def clients(report: dict) -> dict[str, list[float]]:
    return {**{f"MCP {name}": data["times"] for name, data in report["mcp"].items()}, "CLI search loop": report["cli"]}


def waited(times: list[float], quiet: list[float]) -> str:
    """How a client's searches under the editing load compare with the same client's quiet ones."""
    base, high = median(quiet), pct(quiet, 95)
    over = [t - base for t in times]
    share = sum(t > high for t in times) / len(times)
    slow = sum(x > 0.1 for x in over) / len(times)
    return f"waited {share:4.0%}, over +100 ms {slow:4.0%}, longest wait {max(0.0, max(over)) * 1000:6.1f} ms"


def lock_waits(before: dict, after: dict) -> str:
    return (f"{after['count'] - before['count']} waits for the index, {after['slow'] - before['slow']} over 100 ms, "
            f"longest so far {after['maxMs']:.1f} ms (before: {before['maxMs']:.1f} ms)")


async def memory_by_sessions(ws: Path, state: Path, service_pid: int, counts=(0, 1, 2, 4)) -> list[tuple[int, int]]:
    from contextlib import AsyncExitStack

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=PY, args=["-m", "openclaw_memory", "mcp"], env=env_for(ws, state), cwd=str(ws))
    out = []
    async with AsyncExitStack() as stack:
        sessions = []
        for n in counts:
            while len(sessions) < n:
                r, w = await stack.enter_async_context(stdio_client(params))
                session = await stack.enter_async_context(ClientSession(r, w))
                await session.initialize()
                sessions.append(session)
            for session in sessions:
                await session.call_tool("memory_search", {"query": "memory per session"})
            out.append((n, rss(service_pid)))
    return out


async def standalone_mcp_rss(ws: Path, state: Path) -> int:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = env_for(ws, state, OPENCLAW_MEMORY_SERVICE="off")
    params = StdioServerParameters(command=PY, args=["-m", "openclaw_memory", "mcp"], env=env, cwd=str(ws))
    async with stdio_client(params) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            await session.call_tool("memory_search", {"query": "memory per session"})
            status = json.loads(_text(await session.call_tool("memory_status", {})))
            assert status["service"] == {"running": False}
            # The server process is the client's child running openclaw_memory mcp.
            out = subprocess.run(["pgrep", "-f", "-n", "openclaw_memory mcp"], capture_output=True, text=True).stdout.split()
            return rss(int(out[-1])) if out else 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each concurrent phase (quiet, then editing)")
    parser.add_argument("--only", default=",".join(PHASES),
                        help=f"the phases to run, comma-separated, of: {', '.join(PHASES)} (default: all)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if only - set(PHASES):
        parser.error(f"unknown phases: {', '.join(sorted(only - set(PHASES)))}")

    ws, state = subset_workspace("service", args.files)
    env = env_for(ws, state)
    print(f"workspace: {args.files} files of the OpenClaw docs corpus in {ws}; {os.cpu_count()} CPU(s), "
          f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
    seconds, _ = cli(ws, state, "index")
    print(f"index built in {seconds:.1f} s", flush=True)
    query = ["-m", "openclaw_memory", "search", "how do I configure the gateway"]

    if "startup" in only:
        rows = []
        rows.append(("python -c pass", timed_runs([PY, "-c", "pass"], env, ws, args.runs)))
        rows.append(("read MEMORY.md, no service", timed_runs([PY, "-m", "openclaw_memory", "read", "MEMORY.md"], env, ws, args.runs)))
        rows.append(("search (hybrid), no service", timed_runs([PY, *query], env, ws, max(5, args.runs // 2))))

    service = ServeProcess(ws, state, "--http", "127.0.0.1:0")
    service.wait_started()
    timed_runs([PY, *query], env, ws, 2)  # the first search after start opens the shards
    if "startup" in only:
        rows.append(("search (hybrid), service running", timed_runs([PY, *query], env, ws, args.runs)))
        rows.append(("read MEMORY.md, service running", timed_runs([PY, "-m", "openclaw_memory", "read", "MEMORY.md"], env, ws, args.runs)))
        print("\nCLI start to exit (wall time per command, new process each):")
        for name, values in rows:
            print(f"  {name:<36} {ms(values)}")
        read_p50 = median(rows[1][1])
        with_p50 = median(rows[3][1])
        print(f"  search with the service / cold read: {with_p50 / read_p50:.2f}x (target <= 1.5x); "
              f"without the service: {median(rows[2][1]) / read_p50:.2f}x")

    if "mcp" in only:
        from openclaw_memory.service_files import read_info, token_path

        settings = settings_for(ws, state)
        info = read_info(settings)
        token = Path(token_path(settings)).read_text().strip()
        stdio = asyncio.run(mcp_stdio_round_trips(ws, state, args.runs * 2))
        http = asyncio.run(mcp_http_round_trips(info["http"], token, args.runs * 2))
        print("\nMCP memory_search round trip through the service (client side, hybrid):")
        print(f"  stdio (mcp process -> service)       {ms(stdio)}")
        print(f"  streamable HTTP (in the service)     {ms(http)}")

    if "edit" in only:
        edits, syncs = edit_to_searchable(ws, state, max(8, args.runs), service)
        print("\nEdit -> searchable with the service running (atomic save, then keyword search through the socket):")
        print(f"  {'':<36} {ms(edits)}")
        if syncs:
            rest = median(edits) - median(syncs)
            print(f"  of which the sync (service's figure) {ms(syncs)}; the rest (event, debounce, search) "
                  f"~{rest * 1000:.0f} ms at p50")

    if "load" in only:
        phases = []
        for edit in (False, True):
            before = service_info(ws, state)["lockWaits"]
            report = asyncio.run(concurrent(ws, state, args.seconds, edit=edit))
            phases.append((report, before, service_info(ws, state)["lockWaits"]))
        (quiet, q_before, q_after), (report, before, after) = phases
        print(f"\nTwo MCP sessions + a CLI loop searching for {args.seconds:g} s, alone, then while a person edits "
              f"every 0.5 s ({report['edits']} edits):")
        quiet_times = clients(quiet)
        for name, times in clients(report).items():
            errors = report["cli_errors"] if name.startswith("CLI") else report["mcp"][name[4:]]["errors"]
            print(f"  {name:<36} {ms(times)}   max {max(times) * 1000:6.1f} ms   errors {errors}")
            print(f"  {'':<36} alone p50 {median(quiet_times[name]) * 1000:7.1f} ms; {waited(times, quiet_times[name])}")
        for key in ("cli_error", "cli_note"):
            if report.get(key):
                count = report["cli_errors"] if key == "cli_error" else report["cli_notes"]
                print(f"  CLI searches with {'an error' if key == 'cli_error' else 'a warning'}: {count}, "
                      f"the first: {report[key]}")
        print(f"  the service, alone:   {lock_waits(q_before, q_after)}")
        print(f"  the service, editing: {lock_waits(before, after)}")

    if "memory" in only:
        by_sessions = asyncio.run(memory_by_sessions(ws, state, service.proc.pid))
        print("\nService resident memory by connected MCP sessions (after each searched once):")
        for n, value in by_sessions:
            print(f"  {n} session(s)                         {value / 2**20:7.1f} MiB")
    service.stop()
    if "memory" in only:
        alone = asyncio.run(standalone_mcp_rss(ws, state))
        print(f"  one stand-alone mcp (no service)     {alone / 2**20:7.1f} MiB each (N sessions without a service: N times this)")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
