"""``index``, ``search``, ``collections`` and ``status``: the semantic index from the command line."""


import sys

from ...extras import require
from ...serve.client import IN_PROCESS, service_status, try_service
from ..output import print_json, warn


def _on_wait(what: str, pid: str) -> None:
    warn(f"{what} is in use by another openclaw-memory process (pid {pid}); waiting")


def _index(settings, **kw):
    require("search")  # before any index work, so a core install hears what to install, not "no index"
    from ...index.api import MemoryIndex

    return MemoryIndex(settings, on_wait=_on_wait, **kw)


def _chunk_rate_column():
    """A rich column: chunks embedded per second (blank while files are read)."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class ChunkRate(ProgressColumn):
        def render(self, task):
            if task.fields.get("phase") != "embed" or not task.speed:
                return Text("")
            return Text(f"{task.speed:.1f} chunks/s")

    return ChunkRate()


def _progress_reporter(stack):
    """A callback for sync progress: a rich bar on a TTY, plain lines otherwise."""
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        from ..output import stderr_console

        progress = stack.enter_context(
            Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                _chunk_rate_column(),
                TimeRemainingColumn(),
                console=stderr_console(),
                transient=True,
            )
        )
        task = progress.add_task("reading files", total=None)
        phase = {"embed": False}

        def report(p):
            if p.chunks_total:
                if not phase["embed"]:
                    phase["embed"] = True
                    progress.reset(task, total=p.chunks_total, description=f"embedding ({p.files_total} files)", phase="embed")
                progress.update(task, completed=p.chunks_done)
            else:
                progress.update(task, total=p.files_total, completed=p.files_done, description="reading files")

        return report

    last = {"line": ""}

    def plain(p):
        if p.chunks_total:
            line = f"embedded {p.chunks_done}/{p.chunks_total} chunks"
        else:
            line = f"read {p.files_done}/{p.files_total} files"
        if line != last["line"] and (p.chunks_total or p.files_done == p.files_total):
            last["line"] = line
            sys.stderr.write(line + "\n")

    return plain


def run_index(settings, full: bool, json_out: bool) -> int:
    from contextlib import ExitStack

    summary = try_service(settings, "index", full=full)
    if summary is IN_PROCESS:
        with ExitStack() as stack:
            index = stack.enter_context(_index(settings))
            report = None if json_out else _progress_reporter(stack)
            summary = index.sync(full=full, progress=report)
    for note in summary.notes:
        warn(note)
    if json_out:
        print_json(summary.to_json())
        return 0
    print(
        f"Indexed agent {settings.agent}: {summary.files_scanned} files scanned, {summary.files_changed} changed, "
        f"{summary.files_removed} removed; {summary.chunks_embedded} chunks embedded, {summary.chunks_reused} reused, "
        f"{summary.chunks_deleted} deleted in {summary.seconds:.2f} s."
    )
    return 0


def run_search(settings, query: str, limit: int, min_score: float, mode: str, no_sync: bool, json_out: bool) -> int:
    result = try_service(settings, "search", query=query, limit=limit, min_score=min_score, mode=mode, sync=not no_sync)
    if result is IN_PROCESS:
        with _index(settings) as index:
            result = index.search(query, limit=limit, min_score=min_score, mode=mode, sync=not no_sync)
    for note in result.notes:
        warn(note)
    if result.stale:
        warn(
            f"{len(result.stale)} file(s) changed since the last index and were not searched as they are now: "
            + ", ".join(result.stale[:10])
            + (" ..." if len(result.stale) > 10 else "")
            + " (run `openclaw-memory index`)"
        )
    if json_out:
        print_json(result.to_json())
        return 0
    if not result.results:
        print(f"No results above --min-score {min_score:g}.")
    for hit in result.results:
        print(f"{hit.score:.3f}  {hit.citation}  [{hit.source}]")
        for line in hit.snippet.splitlines():
            print(f"    {line}")
        print()
    return 0


def run_collections(settings, json_out: bool) -> int:
    rows = try_service(settings, "collections")
    if rows is IN_PROCESS:
        with _index(settings) as index:
            rows = index.collections()
    if json_out:
        print_json({"agent": settings.agent, "collections": [r.to_json() for r in rows]})
        return 0
    for r in rows:
        points = "not indexed" if r.points is None else f"{r.points} points"
        print(f"{r.name}\t{r.kind}\t{points}\t{r.path}\t{r.pattern}\t{r.backend}")
    return 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def run_status(settings, json_out: bool) -> int:
    status = try_service(settings, "status")
    if status is IN_PROCESS:
        with _index(settings) as index:
            status = index.status()
    service = service_status(settings)
    if json_out:
        print_json({**status.to_json(), "service": service})
        return 0
    print(f"Agent {status.agent} in {status.workspace} (model {status.model}, backend {status.backend})")
    for c in status.collections:
        when = c.last_indexed or "never indexed"
        line = f"  {c.name}: {c.files} files, {c.chunks} chunks, {len(c.stale)} stale, last indexed {when}, {_size(c.disk_bytes)} on disk"
        if c.interrupted:
            line += " (last index run interrupted)"
        if c.settings_changed:
            line += f" (built with {c.model}: re-index to apply the new settings)"
        print(line)
        for path in c.stale[:10]:
            print(f"    stale: {path}")
    for path in status.not_indexable:
        print(f"  not indexable with a text model: {path}")
    for name in status.orphaned:
        print(f"  orphaned shard: {name} (`openclaw-memory doctor --fix` removes it)")
    if not status.indexed:
        print("No index yet: `openclaw-memory index` builds it.")
    print(_service_line(service))
    return 0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _service_line(service: dict) -> str:
    if not service.get("running"):
        return "Service: not running (`openclaw-memory serve` keeps the model and index warm)"
    memory = _size(service["memoryBytes"]) if service.get("memoryBytes") is not None else "unknown"
    sync = f"live sync of agent {service['agent']}" if service.get("liveSync") else "no live sync"
    http = f", MCP over HTTP at {service['http']}" if service.get("http") else ""
    return (f"Service: running (pid {service['pid']}, up {_duration(service['uptimeS'])}, "
            f"{service['sessions']} session(s), {memory} resident; {sync}{http})")
