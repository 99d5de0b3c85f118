"""``log`` over a history of ``--versions`` versions (figures, not a test).

The history is made as the product would hold it under the default retention (``[history]
keep_per_path`` 50): ``--versions / 50`` memory files, each with 50 versions, logged round robin
one second apart (the newest now), each version's bytes in the object store. Origins, agents and
sessions are mixed as an agent's workspace sees them (writes by two agents in sessions, a
person's edits, a few restores and repairs). The rows are written in one transaction, straight
into the tables (the figures are for reading them: tests/test_log.py checks what recording does).

Then, in this process, the median of ``--runs`` calls of each: ``log`` (the default page of 50,
its line counts included), ``log`` with each filter, a page of 1,000, and the baseline, ``history
PATH`` of one file (its 50 versions); the default page again without the time index (dropped for
that measure, then made again); and each command once in a new process (wall, start-up included).

Usage: .venv/bin/python bench/log.py [--versions 100000] [--runs 9]
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import time
import zlib

import xxhash
from _common import ROOT, cli, settings_for

KEEP = 50  # [history] keep_per_path's default


def content(file: int, n: int) -> bytes:
    """Version ``n`` of file ``file``: 30 lines, one of them rewritten and one more each version."""
    lines = [f"- fact {i} of topic {file}: something the agent keeps about it\n" for i in range(30)]
    lines[n % 30] = f"- fact {n % 30} of topic {file}, revised in version {n}\n"
    lines += [f"- note {k}\n" for k in range(n)]
    return ("".join(lines)).encode()


def origin_of(i: int) -> tuple[str, str | None, str | None]:
    """(origin, agent, session) of the i-th version logged."""
    if i % 97 == 0:
        return "doctor-fix", None, None
    if i % 31 == 0:
        return "restore", "main", None
    if i % 5 == 0:
        return "external-edit", None, None
    if i % 3 == 0:
        return "agent-write", "ops", f"ops-{i // 1000}"
    return "agent-write", "main", f"mcp-{i // 5000}"


def build(settings, versions: int) -> tuple[str, float]:
    """Fill the state database; returns the display path of one file and the time it took."""
    from openclaw_memory.database import enc
    from openclaw_memory.history.store import HistoryStore

    started = time.perf_counter()
    files = max(1, versions // KEEP)
    store = HistoryStore.for_settings(settings)
    now = time.time()
    objects, parts, rows = [], [], []
    last: dict[int, str] = {}
    for i in range(versions):
        file, n = i % files, i // files
        data = content(file, n)
        version = xxhash.xxh3_128_hexdigest(data)
        packed = zlib.compress(data, 1)
        objects.append((version, len(data), len(packed), time.time_ns()))
        parts.append((version, 0, packed))
        display = f"memory/topic-{file:05d}.md"
        origin, agent, session = origin_of(i)
        rows.append((enc(str(settings.workspace / display)), enc(display), version, now - (versions - i), len(data), origin,
                     enc(agent) if agent else None, enc(session) if session else None, last.get(file)))
        last[file] = version
    with store.db.transaction() as conn:
        conn.executemany("INSERT OR IGNORE INTO objects VALUES (?, ?, ?, ?)", objects)
        conn.executemany("INSERT OR IGNORE INTO object_parts VALUES (?, ?, ?)", parts)
        conn.executemany("INSERT INTO versions (path, display, version, time, size, origin, agent, session, previous) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    one = 7 % files
    (settings.workspace / "memory").mkdir(parents=True, exist_ok=True)
    (settings.workspace / f"memory/topic-{one:05d}.md").write_bytes(content(one, KEEP - 1))  # as its newest version
    return f"memory/topic-{one:05d}.md", time.perf_counter() - started


def median_ms(call, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--versions", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    base = ROOT / "log"
    shutil.rmtree(base, ignore_errors=True)
    ws, state = base / "ws", base / "state"
    ws.mkdir(parents=True)
    state.mkdir()
    settings = settings_for(ws, state)
    one, built = build(settings, args.versions)

    from openclaw_memory.history.listing import file_history
    from openclaw_memory.history.store import HistoryStore
    from openclaw_memory.log.activity import activity

    today = dt.date.today().isoformat()
    page = activity(settings)
    assert len(page.entries) == 50 and page.more and all(e.added is not None for e in page.entries)
    assert len(file_history(settings, one).versions) == KEEP
    print(f"history: {args.versions:,} versions of {max(1, args.versions // KEEP):,} files, built in {built:.1f} s; "
          f"median of {args.runs} calls, in this process")
    cases = [
        ("log (default page: 50, with line counts)", lambda: activity(settings)),
        ("log --agent ops", lambda: activity(settings, agent="ops")),
        ("log --session ops-42", lambda: activity(settings, session="ops-42")),
        (f"log --path {one}", lambda: activity(settings, paths=(one,))),
        ("log --path 'topic-000*.md'", lambda: activity(settings, paths=("topic-000*.md",))),
        ("log --origin restore", lambda: activity(settings, origins=("restore",))),
        (f"log --since {today}", lambda: activity(settings, since=today)),
        ("log --until (two days ago: nothing matches)", lambda: activity(
            settings, until=(dt.date.today() - dt.timedelta(days=2)).isoformat())),
        ("log --limit 1000", lambda: activity(settings, limit=1000)),
        (f"history {one} (baseline: one file, {KEEP} versions)", lambda: file_history(settings, one)),
    ]
    for name, call in cases:
        print(f"  {name:<55} {median_ms(call, args.runs):8.1f} ms")
    db = HistoryStore.for_settings(settings).db
    with db.transaction() as conn:
        conn.execute("DROP INDEX versions_by_time")
    print(f"  {'log, default page, without the time index':<55} {median_ms(lambda: activity(settings), args.runs):8.1f} ms")
    with db.transaction() as conn:
        conn.execute("CREATE INDEX versions_by_time ON versions (time)")
    print("each in a new process (wall, start-up included)")
    for argv in (["log"], ["log", "--json"], ["history", one]):
        wall, _ = cli(ws, state, *argv)
        print(f"  {' '.join(argv):<55} {wall * 1000:8.1f} ms")
    wall, _ = cli(ws, state, "--version")
    print(f"  {'--version (start-up alone)':<55} {wall * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
