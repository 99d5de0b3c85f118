"""Search quality on the agent-memory benchmark of ../shared/eval (figures, not a test).

Builds the benchmark workspace of ``../shared/eval/README.md`` under ``build/quality/`` (the
personal workspace, with the OpenClaw docs corpus at ``memory/docs/``), indexes it with default
settings, then runs every query with the search's own defaults (result count and ``min_score``)
and prints, per kind: recall@5 and MRR over the first five distinct files; abstention on the
negative queries, and on the off-topic questions of ``bench/offtopic.json`` (asked of the same
workspace: general questions that nothing in it answers, written without seeing it), the
number of answerable queries that returned nothing (false abstentions), and the answers the
score cut keeps (answerable queries whose answering file is among the first five without the
cut, and still a result with it);
warm latency p50/p95; and the time the full index took. The same for ``bench/queries.json``
(documentation questions only) and for each mode (text, vector, hybrid).

For the multi-hop kind (the answer split over two files) and the chat log's multi-session
questions (``chat-multi``: one instance in each of three sessions; kept out of the overall
figures), also the share of queries with every answering file among the first five ("all in 5").

Line level, for the sets whose queries know the lines that answer them (the development set, with
``bench/answer_lines.json``; the chat log): line recall@5 (an answering line inside a passage
cited by one of the first five results; ``found``: the same over the queries with an answering
file among the first five; ``best``: inside the result's first passage) and the lines cited per
result (all of its passages, each line once). The chat log (``bench/chat_log.py``) is a
workspace of its own under ``build/quality/chat/``: a generated conversation, one line per turn;
the same conversation again with the turns written ``**Name:** text`` (``chat-bold/``), and so
with a blank line after each turn (``chat-spaced/``).

Usage: .venv/bin/python bench/quality.py [--reuse] [--modes hybrid,vector,text] [--raw-encode N]
                                         [--dump FILE] [--queries FILE] [--no-chat]

``--reuse`` keeps the index of an earlier run (incremental sync: nothing to do when the code's
chunking did not change); ``--raw-encode N`` also times the bare model on N of the indexed texts,
to compare with the index throughput.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

from _common import REPO, median, pct, settings_for
from chat_log import STYLES as CHAT_STYLES
from chat_log import generate as generate_chat

SHARED = Path(os.environ.get("OPENCLAW_MEMORY_SHARED", REPO.parent / "shared"))
EVAL = SHARED / "eval"
CORPUS = SHARED / "corpus" / "openclaw-docs"
BUILD = Path(os.environ.get("OPENCLAW_MEMORY_QUALITY_DIR", REPO / "build" / "quality"))
ABSTAIN_KINDS = ("negative", "off-topic")  # nothing answers them: the figure is the share with no result
# Every target is an answer (one instance per session): the figure is "all in 5"; kept out of the
# overall figures, which are those of the single-answer questions (issue 41's targets).
MULTI_KINDS = ("chat-multi",)
KIND_ORDER = ["personal-fact", "personal-temporal", "docs-paraphrase", "docs-identifier", "cjk", "cross-lingual", "multi-hop"]


def build_workspace(reuse: bool) -> tuple[Path, Path]:
    ws, state = BUILD / "ws", BUILD / "state"
    if reuse and ws.is_dir() and state.is_dir():
        return ws, state
    shutil.rmtree(BUILD, ignore_errors=True)
    (ws / "memory" / "docs").mkdir(parents=True)
    shutil.copytree(EVAL / "workspace", ws, dirs_exist_ok=True)
    shutil.copytree(CORPUS, ws / "memory" / "docs", dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    state.mkdir(parents=True)
    return ws, state


def load_sets(extra: list[str]) -> dict[str, list[dict]]:
    sets = {"dev": json.loads((EVAL / "queries-dev.json").read_text(encoding="utf-8"))}
    offtopic = json.loads((REPO / "bench" / "offtopic.json").read_text(encoding="utf-8"))["queries"]
    sets["dev"] += [{**item, "targets": [], "kind": "off-topic"} for item in offtopic]
    answers = json.loads((REPO / "bench" / "answer_lines.json").read_text(encoding="utf-8"))["queries"]
    for item in sets["dev"]:
        if item["id"] in answers:
            item["lines"] = answers[item["id"]]
    docs = json.loads((REPO / "bench" / "queries.json").read_text(encoding="utf-8"))["queries"]
    sets["bench/queries.json"] = [
        {"id": f"b-{i}", "q": d["q"], "targets": [f"memory/docs/{f}" for f in d["files"]], "kind": "docs"}
        for i, d in enumerate(docs)
    ]
    for path in extra:
        sets[Path(path).name] = json.loads(Path(path).read_text(encoding="utf-8"))
    return sets


def first_files(paths: list[str], n: int = 5) -> list[str]:
    seen: list[str] = []
    for p in paths:
        if p not in seen:
            seen.append(p)
        if len(seen) == n:
            break
    return seen


def build_chat(reuse: bool, style: str = "time") -> tuple[Path, Path, list[dict]]:
    """The chat-log workspace in one turn style (generated again each run: unchanged files are not
    rewritten)."""
    folder = BUILD / ("chat" if style == "time" else f"chat-{style}")
    ws, state = folder / "ws", folder / "state"
    if not reuse:
        shutil.rmtree(folder, ignore_errors=True)
    state.mkdir(parents=True, exist_ok=True)
    return ws, state, generate_chat(ws, style)


def passages_of(hit) -> list[tuple[int, int]]:
    """The line ranges a result cites: its passages (the first is the best), or its one citation."""
    many = getattr(hit, "passages", None)
    if many:
        return [(p.start_line, p.end_line) for p in many]
    return [(hit.start_line, hit.end_line)]


def line_hit(spans: list[tuple[int, int]], answers: list[list[int]]) -> bool:
    return any(a <= e and s <= b for s, e in spans for a, b in answers)


def evaluate(index, queries: list[dict], mode: str) -> tuple[dict, list[dict], list[float]]:
    """Per-kind figures, per-query rows and warm latencies (ms) for one mode, defaults only.

    Per query: (file rank, results, line hit in any passage, line hit in the best passage, lines
    cited per result among the first five files) -- the line figures None when its lines are unknown.
    """
    per_kind: dict[str, list] = defaultdict(list)
    rows, times = [], []
    index.search(queries[0]["q"], mode=mode, sync=False)  # warm: model loaded, shards open
    for item in queries:
        t0 = time.perf_counter()
        res = index.search(item["q"], mode=mode, sync=False)
        times.append((time.perf_counter() - t0) * 1000)
        files = first_files([r.path for r in res.results])
        rank = next((i for i, f in enumerate(files, 1) if f in set(item["targets"])), None)
        top = [r for r in res.results if r.path in files]
        answers = item.get("lines")
        any_hit = best_hit = None
        if answers is not None:
            any_hit = any(line_hit(passages_of(r), answers.get(r.path, [])) for r in top)
            best_hit = any(line_hit(passages_of(r)[:1], answers.get(r.path, [])) for r in top)
        cited = [len({n for s, e in passages_of(r) for n in range(s, e + 1)}) for r in top]
        every = all(t in files for t in item["targets"]) if item["targets"] else None
        kept = None  # the answering file of the first five without the score cut: still a result with it?
        if item["targets"]:
            uncut = first_files([r.path for r in index.search(item["q"], mode=mode, sync=False, min_score=0.0).results])
            answer = next((f for f in uncut if f in set(item["targets"])), None)
            kept = None if answer is None else answer in {r.path for r in res.results}
        per_kind[item["kind"]].append((rank, len(res.results), any_hit, best_hit, cited, every, kept))
        rows.append({"id": item["id"], "kind": item["kind"], "q": item["q"], "targets": item["targets"], "rank": rank,
                     "lineHit": any_hit, "bestLineHit": best_hit, "answerLines": answers,
                     "results": [{"path": r.path, "score": round(r.score, 4), "lines": [r.start_line, r.end_line],
                                  "passages": passages_of(r)} for r in res.results]})
    return per_kind, rows, times


def summarize(per_kind: dict) -> dict:
    out = {}
    answerable = []
    for kind, items in per_kind.items():
        if kind in ABSTAIN_KINDS:
            out[kind] = {"n": len(items), "abstention": sum(1 for _r, n, *_ in items if n == 0) / len(items)}
            continue
        if kind not in MULTI_KINDS:
            answerable += items
        out[kind] = _figures(items)
    if answerable:
        out["overall"] = _figures(answerable)
        out["overall"]["falseAbstentions"] = sum(1 for _r, n, *_ in answerable if n == 0)
    return out


def _figures(items) -> dict:
    out = {
        "n": len(items),
        "recall5": sum(1 for r, *_ in items if r is not None) / len(items),
        "mrr": sum(1 / r for r, *_ in items if r is not None) / len(items),
    }
    known = [(a, b) for _r, _n, a, b, *_ in items if a is not None]
    found = [a for r, _n, a, *_ in items if a is not None and r is not None]  # an answering file in the first five
    cited = [c for *_, lines, _e, _k in items for c in lines]
    out["allFiles5"] = sum(1 for *_, e, _k in items if e) / len(items)  # every target in the first five files
    out["answers"] = sum(1 for *_, k in items if k is not None)  # found in the first five without the cut ...
    out["answersKept"] = sum(1 for *_, k in items if k)  # ... and kept by it
    if known:
        out["lineRecall5"] = sum(1 for a, _b in known if a) / len(known)
        out["bestLineRecall5"] = sum(1 for _a, b in known if b) / len(known)
        out["lineRecallFound"] = sum(found) / len(found) if found else 0.0
        out["found"] = len(found)
    out["linesPerResult"] = sum(cited) / len(cited) if cited else 0.0
    return out


def print_table(title: str, by_mode: dict) -> None:
    print(f"\n{title}")
    modes = list(by_mode)
    print(f"  {'kind':20s} {'n':>3s}  " + "  ".join(f"{m + ' R@5/MRR':>20s}" for m in modes))
    kinds = [k for k in KIND_ORDER + sorted(by_mode[modes[0]]) if isinstance(by_mode[modes[0]].get(k), dict) and k not in ("overall", *ABSTAIN_KINDS)]
    for kind in dict.fromkeys(kinds + ["overall"]):
        if kind not in by_mode[modes[0]]:
            continue
        cells = [f"{by_mode[m][kind]['recall5']:>9.3f} / {by_mode[m][kind]['mrr']:.3f}" for m in modes]
        print(f"  {kind:20s} {by_mode[modes[0]][kind]['n']:>3d}  " + "  ".join(f"{c:>20s}" for c in cells))
    for kind in ABSTAIN_KINDS:
        if kind in by_mode[modes[0]]:
            cells = [f"{by_mode[m][kind]['abstention']:>20.2f}" for m in modes]
            print(f"  {'abstain ' + kind:20s} {by_mode[modes[0]][kind]['n']:>3d}  " + "  ".join(cells))
    cells = [f"{by_mode[m]['overall'].get('falseAbstentions', 0):>20d}" for m in modes]
    print(f"  {'false abstentions':20s} {'':>3s}  " + "  ".join(cells))
    cells = [f"{by_mode[m]['overall']['answersKept']:>15d} / {by_mode[m]['overall']['answers']:<2d}" for m in modes]
    print(f"  {'answers kept by cut':20s} {'':>3s}  " + "  ".join(cells))
    for kind in ("multi-hop", *MULTI_KINDS):  # their targets are the parts of the answer: all wanted
        if kind in by_mode[modes[0]]:
            cells = [f"{by_mode[m][kind]['allFiles5']:>20.3f}" for m in modes]
            print(f"  {kind + ': all in 5':20s} {by_mode[modes[0]][kind]['n']:>3d}  " + "  ".join(cells))
    cells = [f"{by_mode[m]['p50']:>8.1f} / {by_mode[m]['p95']:.1f} ms" for m in modes]
    print(f"  {'warm p50 / p95':20s} {'':>3s}  " + "  ".join(f"{c:>20s}" for c in cells))
    if "lineRecall5" not in by_mode[modes[0]]["overall"]:
        return
    print(f"  {'line level':20s} {'':>3s}  " + "  ".join(f"{m + ' L@5/found/best/lines':>30s}" for m in modes))
    for kind in dict.fromkeys(kinds + ["overall"]):
        if "lineRecall5" not in by_mode[modes[0]].get(kind, {}):
            continue
        cells = [f"{by_mode[m][kind]['lineRecall5']:.3f} / {by_mode[m][kind]['lineRecallFound']:.3f} / "
                 f"{by_mode[m][kind]['bestLineRecall5']:.3f} / {by_mode[m][kind]['linesPerResult']:4.1f}" for m in modes]
        print(f"  {kind:20s} {by_mode[modes[0]][kind]['n']:>3d}  " + "  ".join(f"{c:>30s}" for c in cells))


def raw_encode(index, n: int) -> float:
    """Chunks per second of the bare model on ``n`` of the indexed texts (same batching as index)."""
    from openclaw_memory.index.collections import resolve_collections
    from openclaw_memory.index.store.base import TEXT_FIELD

    texts: list[str] = []
    for c in resolve_collections(index.settings):
        if index.store.exists(c.name):
            with index.store.open(c.name) as shard:
                texts += [str(h.payload.get(TEXT_FIELD, "")) for h in shard.scroll([TEXT_FIELD])]
    texts = texts[:: max(1, len(texts) // n)][:n]
    embedder = index.models.embedder
    t0 = time.perf_counter()
    for start in range(0, len(texts), 32):
        embedder.encode(texts[start : start + 32])
    return len(texts) / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reuse", action="store_true", help="keep the index of an earlier run")
    parser.add_argument("--modes", default="hybrid,vector,text")
    parser.add_argument("--raw-encode", type=int, default=0, metavar="N", help="also time raw encode on N indexed texts")
    parser.add_argument("--dump", help="write per-query results (JSON) here")
    parser.add_argument("--queries", action="append", default=[], help="another query file in the same format")
    parser.add_argument("--no-chat", action="store_true", help="skip the chat-log workload")
    args = parser.parse_args()
    if not (EVAL / "queries-dev.json").is_file() or not CORPUS.is_dir():
        sys.exit(f"benchmark not found under {SHARED} (set OPENCLAW_MEMORY_SHARED)")

    from openclaw_memory.index.api import MemoryIndex

    ws, state = build_workspace(args.reuse)
    settings = settings_for(ws, state)
    index = MemoryIndex(settings, keep_open=True)
    timing_file = BUILD / "index-time.json"
    t0 = time.perf_counter()
    summary = index.sync()
    elapsed = time.perf_counter() - t0
    if summary.chunks_embedded:
        timing_file.write_text(json.dumps({"seconds": elapsed, "chunks": summary.chunks_embedded, "files": summary.files_scanned}))
    timing = json.loads(timing_file.read_text()) if timing_file.is_file() else None
    defaults = inspect.signature(index.search).parameters
    print(f"workspace {ws}: {summary.files_scanned} files; defaults limit={defaults['limit'].default} "
          f"min_score={defaults['min_score'].default}; embedding backend {index.models.embedder.backend}")
    if timing:
        print(f"full index: {timing['seconds']:.1f} s for {timing['chunks']} chunks ({timing['chunks'] / timing['seconds']:.1f} chunks/s)"
              + ("" if summary.chunks_embedded else " (from the run that built it)"))
    if args.raw_encode:
        rate = raw_encode(index, args.raw_encode)
        line = f"raw encode: {rate:.1f} chunks/s"
        if timing:
            line += f"; index throughput {timing['chunks'] / timing['seconds'] / rate:.0%} of raw"
        print(line)

    dump = {}
    for name, queries in load_sets(args.queries).items():
        by_mode = {}
        for mode in args.modes.split(","):
            per_kind, rows, times = evaluate(index, queries, mode)
            by_mode[mode] = summarize(per_kind) | {"p50": median(times), "p95": pct(times, 95)}
            dump[f"{name}:{mode}"] = rows
        print_table(f"{name} ({len(queries)} queries)", by_mode)
    index.close()
    for style in () if args.no_chat else CHAT_STYLES:
        ws, state, queries = build_chat(args.reuse, style)
        index = MemoryIndex(settings_for(ws, state), keep_open=True)
        t0 = time.perf_counter()
        summary = index.sync()
        print(f"\nchat log, {style} style, {ws}: {summary.files_scanned} files, {summary.chunks_embedded} chunks embedded "
              f"in {time.perf_counter() - t0:.1f} s")
        by_mode = {}
        for mode in args.modes.split(","):
            per_kind, rows, times = evaluate(index, queries, mode)
            by_mode[mode] = summarize(per_kind) | {"p50": median(times), "p95": pct(times, 95)}
            dump[f"chat-{style}:{mode}"] = rows
        print_table(f"chat log, {style} style ({len(queries)} queries)", by_mode)
        index.close()
    if args.dump:
        Path(args.dump).write_text(json.dumps(dump, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
