"""``index``, ``search``, ``collections`` and ``status``: the semantic index from the command line."""

from __future__ import annotations

import sys
from contextlib import ExitStack, closing
from typing import TYPE_CHECKING

from ... import faults
from ...errors import suggested
from ...memory import open_memory, to_json
from ...settings import command_line
from ..output import coloured, error, no_controls, print_json, printable, reported, warn
from ..progress import progress_reporter, said_then_shown

if TYPE_CHECKING:
    from ...index.results import SyncProgress
    from ...settings import Settings
    from ...types import SearchMode


def run_index(settings: Settings, full: bool, json_out: bool) -> int:
    seen = {"done": 0, "total": 0, "embedded": 0}

    def track(report):
        def both(p: SyncProgress) -> None:
            if p.phase == "embed":
                seen["done"], seen["total"], seen["embedded"] = p.chunks_written, p.chunks_total, p.chunks_done
            if report is not None:
                report(p)
        return both

    try:
        with ExitStack() as stack:
            memory = stack.enter_context(closing(open_memory(settings, notice=warn, shard_idle_s=0)))
            report = None if json_out else progress_reporter(stack)
            summary = memory.index(full=full, progress=track(report))
    except KeyboardInterrupt:  # (later SIGINTs are ignored until the process ends: signals.interrupt_once)
        faults.reach("index:interrupted")  # (a test's second Ctrl-C lands here)
        # One line, and with --json one JSON line on stdout too (docs/cli.md: every command's
        # error is {"error": ...} there; it printed nothing).
        error(_interrupted(settings, full, seen), json_out)
        return 130
    if reported(summary, json_out, summary.notes):
        return 0
    print(
        f"{'Rebuilt the index of' if full else 'Indexed'} agent {settings.agent}: {summary.files_scanned} files scanned, {summary.files_changed} changed, "
        f"{summary.files_removed} removed; {summary.chunks_embedded} chunks embedded, {summary.chunks_reused} reused, "
        f"{summary.chunks_deleted} deleted in {summary.seconds:.2f} s."
    )
    return 0


def _interrupted(settings: Settings, full: bool, seen: dict) -> str:
    if seen["done"]:
        # (the total is what the scan had counted when it stopped: files are read while batches embed)
        return (f"interrupted: {seen['done']} new chunks were embedded and saved (of {seen['total']} counted so far); "
                "the next `openclaw-memory index` resumes from there without embedding them again")
    if not seen["embedded"]:
        return "interrupted: nothing was embedded yet"
    if _live_index(settings) is False:  # a first index: there was no live index beside which to build
        return ("interrupted: the first index was being built and none of it was saved yet; the next "
                "`openclaw-memory index` builds it again")
    again = "`openclaw-memory index --full` rebuilds it" if full else "`openclaw-memory index` builds them"
    return ("interrupted: the changes were being built beside the live index, which is unchanged and still "
            f"searched; the next {again} again")


def _live_index(settings: Settings) -> bool | None:
    """Whether the agent has an index a search answers from (a collection indexed before); None:
    cannot tell."""
    try:
        with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
            return any(c.points is not None for c in memory.collections().collections)
    except Exception:  # noqa: BLE001 - the message then says what it said before
        return None


def run_search(settings: Settings, query: str | None, query_flag: str | None, limit: int | None, min_score: float, mode: SearchMode,
               sync: bool, json_out: bool, collections: list[str], paths: list[str], since: str | None, until: str | None) -> int:
    query = query_flag if query_flag is not None else query  # OpenClaw's rule: --query wins (the parser wants one)
    assert query is not None
    with ExitStack() as stack:
        memory = stack.enter_context(closing(open_memory(settings, notice=warn, shard_idle_s=0)))
        result = memory.search(query, limit=limit, min_score=min_score, mode=mode, sync=sync,
                               collections=tuple(collections), paths=tuple(paths), since=since, until=until,
                               progress=None if json_out else _first_index_progress(stack, settings.agent))
        # Nothing matched because there is nothing: "no file scored 0.03 or more (--min-score)" bid a
        # brand-new user lower a score.
        nothing = not result.results and not json_out and not memory.files().files
    result = result.suggesting(command_line(settings))  # (its JSON's `action` names this command line)
    stale = [f"{len(result.stale_paths)} file(s) changed since the last index and were not searched as they are now: "
             + ", ".join(printable(p) for p in result.stale_paths[:10]) + (" ..." if len(result.stale_paths) > 10 else "")
             + (f" (the state dir is mounted read-only: remount it read-write and run `{command_line(settings)} index`)"
                if result.read_only else
                f" (run `{command_line(settings)} index`)")
             ] if result.stale else []  # being indexed now (updating): normal, nothing to do
    if reported(result, json_out, [*result.notes, *stale]):
        return 0
    if nothing:
        print(f"Nothing to search: no memory files in {printable(str(settings.workspace))} yet (MEMORY.md, USER.md, "
              f"memory/*.md): write one, e.g. `{command_line(settings)} write memory/YYYY-MM-DD.md --append TEXT`.")
    elif not result.results:
        given = [flag for flag, value in (("--collection", collections), ("--path", paths), ("--since", since),
                                          ("--until", until)) if value]
        within = f" of those {', '.join(given)} admit" if given else ""  # (a filter that admits none is not the score's)
        print(f"Nothing matches: no file of the memory passes {', '.join(given)}." if result.filtered_out else
              f"Nothing matches: no file{within} scored {min_score:g} or more (--min-score)." if min_score > 0 else
              "Nothing matches: no file of the memory (within the filters given) answers the query.")
    highlight = coloured(sys.stdout)
    for hit in result.results:
        also = f"  (also in {', '.join(map(printable, hit.also_in))})" if hit.also_in else ""
        dated = f"  {hit.date}" if hit.date else ""  # the passage's date: of two notes that disagree, which is newer
        print(f"{hit.score:.3f}  {printable(hit.citation)}{dated}  [{hit.source}]{also}")
        for line in hit.snippet.splitlines():
            print(f"    {_highlighted(line, result.term_spans(line)) if highlight else no_controls(line)}")
        for passage in hit.passages[1:]:  # more entries of the same file that answer too
            dated = f"  {passage.date}" if passage.date else ""
            print(f"  {passage.score:.3f}  {printable(passage.citation)}{dated}")
            for line in passage.snippet.splitlines():
                print(f"    {_highlighted(line, result.term_spans(line)) if highlight else no_controls(line)}")
        print()
    return 0


def _first_index_progress(stack: ExitStack, agent: str):
    """The progress of the first index a search builds (the agent had none: it embeds every file, which
    took 25 minutes for 440 notes on two busy cores, without a word), said first in one line; nothing
    where there is no memory file."""
    return said_then_shown(stack, lambda p: None if not p.files_total else (
        f"agent {printable(agent)} has no search index yet: building it before this search ({p.files_total} files; "
        "Ctrl-C stops it, and the next search or `index` goes on from what was embedded)"))


def _highlighted(line: str, spans: list[tuple[int, int]]) -> str:
    """The query's words in bold (terminal only)."""
    out, pos = [], 0
    for start, end in spans:
        out += [no_controls(line[pos:start]), "\x1b[1;33m", no_controls(line[start:end]), "\x1b[0m"]
        pos = end
    return "".join(out) + no_controls(line[pos:])


def run_collections(settings: Settings, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        result = memory.collections()
    if json_out:
        print_json(to_json(result))
        return 0
    for r in result.collections:
        points = "not indexed" if r.points is None else f"{r.points} points"
        print(f"{r.name}\t{r.kind}\t{points}\t{printable(r.path)}\t{r.pattern}\t{r.backend}")
    return 0


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def run_status(settings: Settings, json_out: bool) -> int:
    with closing(open_memory(settings, notice=warn, shard_idle_s=0)) as memory:
        status = memory.status()
        service = to_json(memory.service())
    if service.get("note"):
        # A command its note bids run acts on this command's workspace and agent, in the JSON too
        # (`serve --stop` alone stopped ~/.openclaw's service, not the one meant).
        service["note"] = suggested(service["note"], command_line(settings))
    if json_out:
        print_json({**to_json(status), "service": service})
        return 0
    print(f"Agent {printable(status.agent)} in {printable(str(status.workspace))} (model {status.model}, backend {status.backend})")
    for c in status.collections:
        when = f"last indexed {c.last_indexed}" if c.last_indexed else "never indexed"
        line = f"  {c.name}: {c.files} files, {c.chunks} chunks, {len(c.stale)} stale, {when}, {_size(c.disk_bytes)} on disk"
        if c.interrupted:
            line += " (last index run interrupted)"
        if c.settings_changed:
            line += f" (built with {c.model}: re-index to apply the new settings)"
        print(line)
        if c.stale:
            more = f" and {len(c.stale) - 5} more" if len(c.stale) > 5 else ""
            print(f"    stale: {', '.join(printable(p) for p in c.stale[:5])}{more} (`{command_line(settings)} index` updates them)")
    for path in status.not_indexable:
        print(f"  not indexable with a text model: {printable(path)}")
    for left in status.left_out:
        print(f"  not indexed: {left}")
    for name in status.orphaned:
        print(f"  orphaned shard: {name} (`{command_line(settings)} doctor --fix` removes it)")
    if status.running:  # its dirty marks are those of a run going on, not of one interrupted
        print(f"  an index run is going on now (pid {status.pid_words})" if status.indexed else
              f"No index yet: being built right now (pid {status.pid_words}).")
    elif not status.indexed:
        print(f"No index yet: `{command_line(settings)} index` builds it.")
    for changes in status.git:
        for what, paths in (("modified", changes.modified), ("staged", changes.staged),
                            ("untracked", changes.untracked), ("ignored", changes.ignored)):
            if paths:
                print(f"  git {what} in {printable(changes.root)}: {', '.join(printable(p) for p in paths)}")
    for note in status.git_notes:
        warn(note)
    print(_service_line(service, command_line(settings)))
    return 0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _service_line(service: dict, program: str) -> str:
    if not service.get("running"):  # (its note worded for this command already: run_status)
        if service.get("refused"):  # it answered: not for this agent's settings (or another version)
            return f"Service: running, not serving this command: {service['note']}"
        if service.get("note"):  # it runs (its socket is there) but does not answer
            return f"Service: not answering: {service['note']}"
        return f"Service: not running (`{program} serve` keeps the model and index warm)"
    memory = _size(service["memoryBytes"]) if service.get("memoryBytes") is not None else "unknown"
    sync = f"live sync of agent {service['agent']}" if service.get("liveSync") else "no live sync"
    http = f", MCP over HTTP at {service['http']}" if service.get("http") else ""
    return (f"Service: running (pid {service['pid']}, up {_duration(service['uptimeS'])}, "
            f"{service['sessions']} session(s), {memory} resident; {sync}{http})")
