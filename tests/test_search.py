"""Search with the real engine: scores, CJK, isolation, snippets, stale files, JSON shapes.

Scores and CJK ranking are the real model's (slow tier); isolation, snippets, stale files and the
JSON shapes hold for any embedder, so those tests use the hash one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime

import pytest

from conftest import REPO, env_for, settings_for, wait_for, write
from openclaw_memory.errors import IndexMissing
from openclaw_memory.index.api import MemoryIndex
from openclaw_memory.index.config import IndexConfig
from openclaw_memory.index.lender import Models
from openclaw_memory.index.search import DEFAULT_MIN_SCORE
from openclaw_memory.settings import default_model_cache
from openclaw_memory.wire import to_json


@pytest.fixture(scope="module")
def models():
    """The real model, loaded on first use, from the ONNX export cached where ``settings_for`` and
    the CLI look (far cheaper than importing torch)."""
    return Models(IndexConfig(), cache_dir=default_model_cache({}))


def filler(i: int) -> str:
    return f"Line {i}: routine log entry about the weekly meeting, nothing notable happened here.\n"


@pytest.mark.slow
def test_exact_keyword_is_never_dropped_by_min_score(workspace, state_dir, models):
    # "gateway" is in every file (low IDF), so raw BM25 is tiny; a literal match must still pass:
    # the keyword signal is measured against what "every query term" would score.
    for i in range(30):
        write(workspace / "memory" / f"d{i:02}.md", f"# Day {i}\n\nThe gateway restarted at {i}:00 after the update.\n")
    write(workspace / "memory" / "zzz.md", "# Other\n\nThe quarterly gateway token rotation is documented here.\n")
    index = MemoryIndex(settings_for(workspace, state_dir, real_model=True), models=models)
    index.sync()
    for mode in ("text", "hybrid"):
        result = index.search("gateway", limit=50, mode=mode)
        assert len(result.results) == 31, mode
        assert all(DEFAULT_MIN_SCORE <= r.score <= 1.0 for r in result.results)
        phrase = index.search("quarterly gateway token rotation", limit=3, mode=mode)
        assert phrase.results[0].path == "memory/zzz.md"


@pytest.mark.slow
def test_chinese_queries_find_chinese_notes(workspace, state_dir, models):
    write(workspace / "memory" / "tea.md", "# 偏好\n\n我每天早上喜欢喝绿茶，不喝咖啡。\n")
    write(workspace / "memory" / "trip.md", "# 旅行\n\n下个月去东京出差，住在新宿。\n")
    write(workspace / "memory" / "en.md", "# Notes\n\nThe build uses docker compose on the staging host.\n")
    index = MemoryIndex(settings_for(workspace, state_dir, real_model=True), models=models)
    index.sync()
    for mode in ("text", "hybrid"):
        for query in ("喝绿茶", "绿茶", "喝茶"):  # a word, a sub-word, and characters not adjacent in the note
            result = index.search(query, mode=mode)
            assert result.results and result.results[0].path == "memory/tea.md", (mode, query)
        trip = index.search("东京出差", mode=mode)
        assert trip.results[0].path == "memory/trip.md"
        assert "东京" in trip.results[0].snippet


def test_agents_are_isolated(workspace, state_dir, tmp_path):
    write(workspace / "MEMORY.md", "# Shared\n\nEveryone knows the wifi password is on the fridge.\n")
    secret_a = write(tmp_path / "a-notes" / "secret.md", "# A\n\nThe zanzibar project codename belongs to agent a.\n")
    write(tmp_path / "b-notes" / "other.md", "# B\n\nAgent b tracks the marmalade budget.\n")
    a = MemoryIndex(settings_for(workspace, state_dir, agent="a", extra=(str(tmp_path / "a-notes"),)))
    b = MemoryIndex(settings_for(workspace, state_dir, agent="b", extra=(str(tmp_path / "b-notes"),)))
    a.sync()
    b.sync()
    shown = os.path.relpath(secret_a, workspace)  # "../a-notes/secret.md", as OpenClaw indexes it
    top = a.search("zanzibar codename").results[0]
    assert top.path == shown and top.citation.startswith(f"{shown}#L")
    for mode in ("hybrid", "vector", "text"):
        found = b.search("zanzibar project codename", mode=mode, min_score=0.0, limit=20).results
        assert all(r.source.endswith("-b") for r in found)
        assert shown not in {r.path for r in found}
    assert {r.source for r in b.search("marmalade budget", min_score=0.0, limit=20).results} <= {"memory-root-b", "custom-1-b"}


def test_snippet_is_the_matching_passage(workspace, state_dir):
    lines = [filler(i) for i in range(1, 200)]
    lines[150] = "The spare key for the boathouse is under the blue flowerpot.\n"
    write(workspace / "memory" / "long.md", "# Log\n\n" + "".join(lines))
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    hit = index.search("boathouse spare key").results[0]
    assert "blue flowerpot" in hit.snippet and len(hit.snippet) <= 700
    text = (workspace / "memory" / "long.md").read_text().split("\n")
    assert hit.start_line <= 153 <= hit.end_line
    assert text[152].startswith("The spare key")
    assert hit.citation == cite("memory/long.md", hit.start_line, hit.end_line)


def test_a_note_of_front_matter_alone_is_cited_and_shown_by_its_lines(workspace, cli):
    # Its card was its only chunk, with no text: the result showed an empty snippet cited at L1-L1,
    # where reading the citation gave "---".
    fields = "---\ntitle: Passport renewal\ntags: [travel, documents]\nsummary: renew before the March trip\n---"
    write(workspace / "memory" / "passport.md", fields + "\n")
    write(workspace / "memory" / "other.md", "# Other\n\nThe garden gate needs oil.\n")
    assert cli("index").returncode == 0
    for mode in ("text", "hybrid"):
        hit = cli("search", "passport renewal", "--mode", mode, "--json").json()["results"][0]
        assert hit["path"] == "memory/passport.md"
        assert (hit["startLine"], hit["endLine"], hit["snippet"]) == (1, 5, fields), mode
        read = cli("read", hit["citation"], "--json").json()
        assert read["text"] == hit["snippet"]


@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_passage_deep_inside_a_long_code_block_is_exactly_the_lines_it_cites(workspace, cli, line_end):
    # It was the block's fence line and then the window, cited from the fence: the snippet was not
    # what the cited lines hold, and reading the citation gave the block's first lines, not the hit.
    code = [f"step_{i} = run('task {i}')" for i in range(300)]
    code[150] = "flamingo_switch = toggle('pink')"
    write(workspace / "memory" / "script.md", line_end.join(["# Script", "", "```python", *code, "```", ""]))
    assert cli("index").returncode == 0
    lines = (workspace / "memory" / "script.md").read_bytes().decode().split("\n")
    for mode in ("text", "hybrid"):
        hit = cli("search", "flamingo_switch", "--mode", mode, "--json").json()["results"][0]
        assert "flamingo_switch" in hit["snippet"], mode
        for passage in hit["passages"]:
            assert passage["snippet"] == "\n".join(lines[passage["startLine"] - 1 : passage["endLine"]]), mode
        read = cli("read", hit["citation"], "--json").json()["text"]
        assert read.split("\n\n[More content")[0] == hit["snippet"], mode


def test_a_hit_in_an_over_long_line_of_a_code_block_is_that_line_alone_never_the_fence_and_a_piece(workspace, cli):
    # A line over the chunk budget is cut into pieces; inside a code block each piece carried the
    # block's fence, and its snippet was the fence line and the piece, cited as two whole lines.
    blob = " ".join(f"key{i}" for i in range(400))
    write(workspace / "memory" / "dump.md", f"# Dump\n\n```json\n{blob} flamingo_switch {blob}\n```\n")
    assert cli("index").returncode == 0
    lines = (workspace / "memory" / "dump.md").read_text().split("\n")
    for mode in ("text", "hybrid"):
        hit = cli("search", "flamingo_switch", "--mode", mode, "--json").json()["results"][0]
        assert "flamingo_switch" in hit["snippet"], mode
        for passage in hit["passages"]:
            cited = "\n".join(lines[passage["startLine"] - 1 : passage["endLine"]])
            one_line_cut = passage["startLine"] == passage["endLine"] and passage["snippet"] in cited
            assert passage["snippet"] == cited or one_line_cut, (mode, passage)


@pytest.mark.parametrize("line_end", ["\n", "\r\n"], ids=["lf", "crlf"])
def test_a_chat_turn_and_its_reply_are_exactly_the_lines_they_cite(workspace, cli, line_end):
    # A turn's own chunk was its lines right-stripped: in a CRLF file the turn lost its "\r", and a
    # passage of the turn and its reply was not the two lines it cites.
    log = ["# Chat", "", "[09:01] Sam: shall we book the mountain hut in Zermatt for June",
           "[09:02] Lena: yes, and I will bring the rope and the old map", "[09:03] Sam: great, see you at nine", ""]
    write(workspace / "memory" / "chat.md", line_end.join(log))
    assert cli("index").returncode == 0
    lines = (workspace / "memory" / "chat.md").read_bytes().decode().split("\n")
    for mode in ("text", "hybrid"):
        hit = cli("search", "book the mountain hut", "--mode", mode, "--json").json()["results"][0]
        assert "mountain hut" in hit["snippet"], mode
        for passage in hit["passages"]:
            assert passage["snippet"] == "\n".join(lines[passage["startLine"] - 1 : passage["endLine"]]), mode


def test_a_note_changed_since_its_index_keeps_its_day_for_since_and_until(workspace, state_dir, cli):
    # Once another part recorded a sighting of its new bytes (`state`, the watch, a write), the
    # index's record of it held no time: it was dated 1970, left out of --since, listed for --until 1990.
    from openclaw_memory.database import Database
    from openclaw_memory.database.observations import Observations
    from openclaw_memory.fsutil.hashing import hash_file

    write(workspace / "memory" / "plums.md", "# Plums\n\nThe plum tree needs pruning.\n")
    write(workspace / "memory" / "jam.md", "# Jam\n\nPlum jam recipe.\n")
    assert cli("index").returncode == 0
    changed = write(workspace / "memory" / "plums.md", "# Plums\n\nThe plum tree needs pruning in March.\n")
    june = datetime(2024, 6, 1, 12).timestamp()  # local noon: that day in any time zone's reading
    os.utime(changed, (june, june))
    seen = Observations(Database(settings_for(workspace, state_dir).data_dir))
    # `state` records a sighting once it is not racy (its ctime, just set, far enough behind).
    wait_for(lambda: cli("state").returncode == 0 and seen.load()[str(changed)].hash == hash_file(changed))

    def found(*dates: str) -> list[str]:
        result = cli("search", "plum", "--mode", "text", "--min-score", "0", "--json", *dates)
        assert result.returncode == 0, result.stderr
        assert result.json()["stalePaths"] == ["memory/plums.md"] and result.json()["stale"] is True
        return sorted(r["path"] for r in result.json()["results"])

    assert found("--since", "2024-05-01", "--until", "2024-06-30") == ["memory/plums.md"]
    assert found("--until", "1990-01-01") == []


def test_no_index_says_how_to_build_it_where_the_search_does_not_build_it(workspace, state_dir, cli):
    """A keyword search never loads the model, and --no-sync indexes nothing: both say how to build it."""
    write(workspace / "MEMORY.md", "# M\n\nfact\n")
    with pytest.raises(IndexMissing, match="openclaw-memory index"):
        MemoryIndex(settings_for(workspace, state_dir)).search("fact", mode="text")
    for flags in (("--mode", "text"), ("--no-sync",)):
        res = cli("search", "fact", "--json", *flags)
        assert res.returncode == 1
        assert "openclaw-memory index" in res.json()["error"] and "Traceback" not in res.stderr
    assert not (settings_for(workspace, state_dir).data_dir / "index" / "edge").exists()


def test_the_first_search_builds_the_index_as_openclaws_does(workspace, state_dir, cli):
    """OpenClaw's first memory search builds the index it needs; here it failed, bidding an
    `openclaw-memory index` that an agent over MCP cannot run. It says it did so, once."""
    write(workspace / "MEMORY.md", "# M\n\nThe heron nests by the pier.\n")
    write(workspace / "memory" / "boats.md", "# Boats\n\nThe dinghy is blue.\n")
    first = cli("search", "heron")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("0.") and "MEMORY.md#L1-L3" in first.stdout and "boats" not in first.stdout
    assert first.stderr.startswith("warning: agent main has no search index yet: building it before this search "
                                   "(2 files; Ctrl-C stops it"), first.stderr  # then its progress, as index's
    assert "embedded 2/2 chunks of 2 files" in first.stderr
    assert "agent main had no search index yet: this search built it (2 files, 2 chunks)" in first.stderr
    again = cli("search", "dinghy", "--json")
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert [r["path"] for r in again.json()["results"]] == ["memory/boats.md"]


def test_a_search_of_a_workspace_with_no_memory_file_says_there_is_nothing_to_search(workspace, state_dir, cli):
    """A brand-new user's first search printed three lines of building "0 files" and then bid them
    lower --min-score ("no file scored 0.03 or more"), and every later search too."""
    for _ in range(2):
        done = cli("search", "tea")
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert done.stdout.startswith(f"Nothing to search: no memory files in {workspace} yet"), done.stdout
        assert "--min-score" not in done.stdout
    write(workspace / "MEMORY.md", "# Memory\n\nCoffee, not tea.\n")
    assert "Nothing to search" not in cli("search", "zebra").stdout


def test_a_search_whose_filters_admit_nothing_does_not_blame_the_score_alone(workspace, state_dir, cli):
    """`--since 2030-01-01` (or a glob that climbs inside a path, `memory/../**`) said "no file scored 0.03
    or more (--min-score)": a model lowered minScore and still got nothing. The filters are named,
    and a glob with a '..' inside (which no path as `files` writes it holds) is refused."""
    write(workspace / "MEMORY.md", "# Memory\n\nThe cat is called Pistachio.\n")
    assert cli("search", "cat", "--json").json()["results"]
    later = cli("search", "cat", "--since", "2030-01-01", "--path", "MEMORY.md")
    assert later.returncode == 0 and later.stdout.startswith(
        "Nothing matches: no file of the memory passes --path, --since."), later.stdout
    assert cli("search", "cat", "--path", "memory/none/*.md", "--json").json()["filteredOut"] is True
    admitted = cli("search", "zebra", "--path", "MEMORY.md", "--min-score", "0.9")  # a file admitted, none scored
    assert admitted.stdout.startswith("Nothing matches: no file of those --path admit scored 0.9 or more"), admitted.stdout
    assert "filteredOut" not in cli("search", "zebra", "--path", "MEMORY.md", "--min-score", "0.9", "--json").json()
    climbs = cli("search", "cat", "--path", "memory/../**", "--json")
    assert climbs.returncode == 2 and climbs.json()["error"] == (
        "--path must be globs of memory paths as `files` writes them, where '..' only leads "
        "(../notes/*.md, an extra folder outside the workspace): 'memory/../**'")


def test_a_note_of_an_extra_folder_outside_the_workspace_is_picked_by_the_path_files_writes(workspace, state_dir, cli,
                                                                                              tmp_path):
    """`files` writes a note of an extra folder outside the workspace as `../notes/plan.md` (as OpenClaw
    names it), and `--path ../notes/plan.md` was refused ("never hold '..'") while its absolute path
    matched nothing: such a note could not be searched alone. The leading `..` of a path as `files`
    writes it are taken, and an absolute glob is matched against the file's absolute path."""
    notes = tmp_path / "notes"
    write(notes / "plan.md", "# Plan\n\nThe heron plan.\n")
    write(workspace / "memory" / "a.md", "# A\n\nA heron here.\n")
    write(state_dir / "openclaw.json", json.dumps({"agents": {"defaults": {"memorySearch": {"extraPaths": [str(notes)]}}}}))
    assert cli("index").returncode == 0
    assert "../notes/plan.md\textra" in cli("files").stdout

    def found(*globs: str) -> list[str]:
        args = [a for glob in globs for a in ("--path", glob)]
        done = cli("search", "heron", "--mode", "text", "--min-score", "0", *args, "--json")
        assert done.returncode == 0, done.stderr
        return sorted(hit["path"] for hit in done.json()["results"])

    assert found("../notes/plan.md") == found("../**") == found("../notes/*.md") == ["../notes/plan.md"]
    assert found(f"{notes}/*.md") == found(f"{tmp_path}/**/plan.md") == ["../notes/plan.md"]
    assert found(f"{workspace}/memory/*.md") == found("./memory/*.md") == found("././memory/a.md") == ["memory/a.md"]
    assert found("**/*.md") == ["../notes/plan.md", "memory/a.md"]
    for inside in ("../notes/../notes/plan.md", f"{workspace}/../notes/*.md", ".."):
        assert cli("search", "heron", "--path", inside).returncode == 2, inside


def test_first_searches_at_once_all_answer_while_one_builds_the_index(workspace, state_dir):
    """Searches at once on a never-indexed workspace (an agent's sessions starting together): one
    built it and the others were tool errors ("being built right now"), even from inside the process
    building it. They wait for it, as OpenClaw's concurrent searches wait for its rebuild."""
    import threading

    from openclaw_memory.memory.local import LocalMemory

    for i in range(60):
        write(workspace / "memory" / f"n{i}.md", "".join(f"note {i} line {k}\n" for k in range(30)))
    settings = settings_for(workspace, state_dir)
    start = threading.Barrier(4)
    answers: dict[int, object] = {}

    def search(k: int) -> None:
        memory = LocalMemory(settings)
        start.wait()
        try:
            answers[k] = [hit.path for hit in memory.search("note 7 line 3", limit=1).results]
        except Exception as exc:  # (the test says which failed, and how)
            answers[k] = exc
        finally:
            memory.close()

    threads = [threading.Thread(target=search, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == dict.fromkeys(range(4), ["memory/n7.md"]), answers


def test_cli_json_shapes_and_stale_handling(workspace, state_dir, cli):
    write(workspace / "MEMORY.md", "# Memory\n\n## Preferences\n\nI prefer dark roast coffee and vim.\n")
    write(workspace / "memory" / "2024-05-01.md", "# May 1\n\nMet Priya about the hiking trip to Zermatt.\n")
    summary = cli("index", "--json")
    assert summary.returncode == 0, summary.stderr
    assert set(summary.json()) == {"filesScanned", "filesChanged", "filesRemoved", "chunksEmbedded", "chunksReused", "chunksDeleted", "seconds"}

    res = cli("search", "hiking trip", "--json")
    data = res.json()
    # OpenClaw's memory_search keys; fresh: no `stale`, `warning`, `action` (nor `stalePaths`).
    assert set(data) == {"results", "mode", "provider", "model", "citations", "terms"} and data["mode"] == "hybrid"
    assert data["citations"] == "on" and data["provider"] == "hash" and data["model"]
    assert data["terms"] == ["hiking", "trip"]
    first = data["results"][0]
    assert set(first) == {"path", "startLine", "endLine", "score", "snippet", "source", "vectorScore", "textScore", "corpus",
                          "citation", "passages", "date"}
    assert set(first["passages"][0]) == {"startLine", "endLine", "score", "snippet", "citation", "date"}
    assert first["date"] == first["passages"][0]["date"] == "2024-05-01"  # the daily note's date
    assert first["passages"][0]["citation"] == first["citation"]
    assert first["path"] == "memory/2024-05-01.md" and first["source"] == "memory-dir-main"
    assert first["citation"] == cite("memory/2024-05-01.md", first["startLine"], first["endLine"])
    keys = [(-r["score"], r["path"]) for r in data["results"]]
    assert keys == sorted(keys)

    # Edit after indexing: text mode reports the stale file and loads no embedder (a fresh process:
    # its sys.modules shows what the search loaded).
    write(workspace / "memory" / "2024-05-01.md", "# May 1\n\nMet Priya about the kayak trip to Lake Bled.\n")
    probe = textwrap.dedent(
        """
        import json, sys
        from openclaw_memory.index.api import MemoryIndex
        from openclaw_memory.settings import resolve_settings
        r = MemoryIndex(resolve_settings()).search("trip", mode="text")
        print(json.dumps([list(r.stale_paths), *(m in sys.modules for m in (
            "torch", "sentence_transformers", "onnxruntime", "openclaw_memory.index.hash_embedding"))]))
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True,
                         env=env_for(workspace, state_dir)).stdout
    assert out.strip() == '[["memory/2024-05-01.md"], false, false, false, false]'

    no_sync = cli("search", "kayak Lake Bled", "--no-sync", "--json").json()
    assert no_sync["stalePaths"] == ["memory/2024-05-01.md"] and no_sync["stale"] is True
    assert no_sync["warning"] == ("Memory index is stale: 1 file(s) changed since the last index and were not searched as "
                                  "they are now: memory/2024-05-01.md. Search results may be incomplete.")
    assert no_sync["action"].startswith("Run: `openclaw-memory ") and no_sync["action"].endswith(" index`")
    synced = cli("search", "kayak Lake Bled", "--json").json()
    assert not {"stale", "stalePaths", "warning", "action"} & set(synced) and "Lake Bled" in synced["results"][0]["snippet"]

    cols = cli("collections", "--json").json()
    assert [(c["name"], c["points"], c["backend"]) for c in cols["collections"]] == [
        ("memory-root-main", 1, "edge"),
        ("memory-dir-main", 1, "edge"),
    ]
    assert cols["collections"][1]["pattern"] == "**/*.md"
    status = cli("status", "--json").json()
    dir_status = status["collections"][1]
    assert dir_status["files"] == 1 and dir_status["chunks"] == 1 and dir_status["staleFiles"] == []
    assert dir_status["diskBytes"] > 0 and dir_status["lastIndexed"] and dir_status["backend"] == "edge"

    bad = cli("search", "x", "--mode", "fuzzy", "--json")
    assert bad.returncode == 2 and "--mode" in bad.json()["error"]


# -- passages (snippets.build_passages): pure, then through a real index -----------------------------

def _passages(body: str, query: str, v: float = 0.5, first_line: int = 1, **kw):
    from openclaw_memory.index.snippets import ChunkText, build_passages
    from openclaw_memory.index.terms import keyword_terms, query_terms, term_patterns

    chunks = kw.pop("chunks", None) or [ChunkText(body, first_line, v)]
    terms = dict.fromkeys(keyword_terms(query), 1.0)
    return build_passages(chunks, terms, lambda: term_patterns(query_terms(query)), lambda v, k: 0.5 * v + 0.5 * k, **kw)


def test_each_result_gives_the_two_signals_its_score_fuses_in_openclaws_keys(workspace, state_dir, cli):
    """OpenClaw's results give ``vectorScore`` and ``textScore`` (its hybrid fusion's inputs) and
    ``corpus``; ours gave neither: here the file's best cosine and best keyword signal, which the
    score is the calibrated fusion of, each only in a mode that has it, through the CLI and the MCP
    tool (tests/conformance/test_search_shape.py compares the keys with OpenClaw's own)."""
    from openclaw_memory.index.search import calibrate, fuse_file
    from openclaw_memory.mcp.server import MemoryTools
    from openclaw_memory.memory import OPERATIONS
    from openclaw_memory.memory.local import LocalMemory

    write(workspace / "memory" / "2024-05-01.md", "Met Priya about the hiking trip to Zermatt.\n")  # one chunk
    write(workspace / "memory" / "2024-05-02.md", "Bought new hiking boots.\n")
    assert cli("index").returncode == 0
    for mode, keys in (("hybrid", {"vectorScore", "textScore"}), ("text", {"textScore"}), ("vector", {"vectorScore"})):
        results = cli("search", "hiking trip Zermatt", "--json", "--mode", mode, "--min-score", "0").json()["results"]
        assert results and all(r["corpus"] == "memory" for r in results), results
        for r in results:
            assert {"vectorScore", "textScore"} & set(r) == keys, (mode, r)
            assert all(isinstance(r[k], float) and 0 <= r[k] <= 1 for k in keys), (mode, r)
        best = results[0]
        v, k = best.get("vectorScore", 0.0), best.get("textScore", 0.0)
        assert best["path"] == "memory/2024-05-01.md" and (k > 0.5 if mode != "vector" else k == 0.0), best
        assert abs(calibrate(mode, fuse_file(mode, v, k)) - best["score"]) < 1e-3, (mode, best)  # one chunk: its file's raw

    memory = LocalMemory(settings_for(workspace, state_dir))
    try:
        answer = MemoryTools(memory).call(None, OPERATIONS["search"], {"query": "hiking trip Zermatt", "min_score": 0.0})
    finally:
        memory.close()
    hit = answer["results"][0]
    assert hit["corpus"] == "memory" and 0.5 < hit["textScore"] <= 1 and 0 < hit["vectorScore"] <= 1, hit
    assert list(hit).index("score") < list(hit).index("vectorScore") < list(hit).index("textScore") < list(hit).index("corpus")


def test_a_passage_is_the_matching_entry_widened_to_its_whole_item_and_a_little_context():
    body = "\n".join([
        "# Notes", "",
        "- Renewed the passport at the Bürgeramt.",
        "- The boathouse key is kept under the blue flowerpot,",
        "  next to the rain barrel behind the shed.",
        "- Paid the water bill.",
        *[f"- Unrelated entry number {i} about the weekly groceries and the laundry rota." for i in range(30)],
    ])
    best = _passages(body, "where is the boathouse key")[0]
    assert (best.start_line, best.end_line) != (4, 4)  # the item's continuation line comes with it
    assert best.start_line <= 4 and best.end_line >= 5 and best.end_line - best.start_line <= 6
    assert "rain barrel" in best.text and "number 29" not in best.text
    lines = body.split("\n")
    assert best.text == "\n".join(lines[best.start_line - 1 : best.end_line])  # the citation reads it back


def test_a_table_row_comes_with_its_header_and_a_chat_turn_is_its_own_entry():
    table = "\n".join(["# Dumplings", "", "| Ingredient | Amount |", "|---|---|", "| chives | 500 g |", "| eggs | 5 |",
                       "| tofu | 200 g |", "", *[f"Filler paragraph {i} about the dinner guests and the music." for i in range(12)]])
    row = _passages(table, "how many grams of chives")[0]
    assert row.start_line <= 3 and row.end_line >= 5 and "| chives | 500 g |" in row.text  # the header row too
    log = "\n".join(["# 2025-01-14", ""] + [f"[09:{i:02d}] {'Sam' if i % 2 else 'Lena'}: ok, see you later then" for i in range(40)])
    lines = log.split("\n")
    lines[30] = "[09:28] Sam: My sister Carla is getting married in Porto on 14 June."
    turn = _passages("\n".join(lines), "where is Carla getting married")[0]
    assert turn.start_line <= 31 <= turn.end_line and turn.end_line - turn.start_line <= 8  # not the whole session


def test_several_matching_entries_of_a_file_give_several_passages_each_with_its_lines():
    body = "\n".join([
        "# Car", "",
        "- The car insurance renews on 1 March with HUK.",
        *[f"- Filler note {i} about the garden and the neighbours' dog." for i in range(12)],
        "- Car insurance claim for the dented door was paid in January.",
        *[f"- More filler {i} about cooking pasta on Sundays." for i in range(12)],
    ])
    found = _passages(body, "car insurance")
    assert 2 <= len(found) <= 3
    spans = [(p.start_line, p.end_line) for p in found]
    assert any(a <= 3 <= b for a, b in spans) and any(a <= 16 <= b for a, b in spans)
    assert all(b1 < a2 or b2 < a1 for i, (a1, b1) in enumerate(spans) for a2, b2 in spans[i + 1 :])  # no overlap
    assert found[0].value >= found[1].value
    assert len(_passages(body, "car insurance", max_passages=1)) == 1


def test_a_heading_that_matches_only_by_its_date_is_never_the_passage():
    body = "\n".join(["# 2026-11-03", "", "Met the storage vendor about the quote.", "",
                      *[f"- Item {i}: walked the dog, then the shopping." for i in range(25)]])
    for query in ("2026-11-03", "what happened on 2026-11-03 with the vendor"):
        best = _passages(body, query)[0]
        assert best.start_line != 1 or best.end_line > 1, query
        assert best.text.strip() != "# 2026-11-03"
    assert "storage vendor" in _passages(body, "what happened on 2026-11-03 with the vendor")[0].text
    # A heading that names the query is shown with the text under it.
    titled = _passages("## Wide-area discovery over Tailscale\n\nRun a DNS server on the gateway host.\n", "wide-area discovery")[0]
    assert titled.start_line == 1 and titled.end_line == 3


def test_an_item_chunk_points_at_its_own_line_inside_its_section():
    from openclaw_memory.index.snippets import ChunkText

    section = "## Rules\n\n- Never book Ryanair.\n- Window seat on trains.\n- Quiet hours after 22:30."
    chunks = [ChunkText(section, 10, 0.40), ChunkText("- Quiet hours after 22:30.", 14, 0.62)]  # the item's own cosine
    best = _passages("", "no terms in common here", chunks=chunks)[0]
    assert best.start_line <= 14 <= best.end_line


def test_a_passage_takes_the_short_line_that_answers_after_a_long_one_that_asks():
    """A short item holding none of the query's words, but with its own cosine (a chunk of its
    own), right after the long entry the query's words point at: the passage does not stop one
    line short of it, though the entry and its other neighbour fill the context budget."""
    from openclaw_memory.index.snippets import ChunkText

    asked = ("- Asked Dana which coffee she drinks these days: she had been on the oat flat white since spring, "
             "but says the corner cafe changed its beans and the flat white tastes burnt there now, so she switched.")
    lines = ["## Coffee", "",
             "- Dana meets her sister at the corner cafe on Fridays, after the market, usually with her partner, "
             "her neighbour and the dog, and then walks home along the canal.",
             asked, "- Cortado.", *[f"- Filler {i}: the weekly groceries and the laundry rota." for i in range(20)]]
    section = "\n".join(lines)
    reply = lines.index("- Cortado.") + 1
    chunks = [ChunkText(section, 1, 0.30), ChunkText("- Cortado.", reply, 0.62)]  # the item's own cosine
    best = _passages("", "what coffee does Dana drink now", chunks=chunks)[0]
    assert best.start_line <= reply - 1 and reply <= best.end_line, best  # the question and its answer
    assert best.end_line - best.start_line <= 3
    # Without cosines (text mode) its own chunk is no evidence: the budget decides, as before.
    chunks = [ChunkText(section, 1, 0.0), ChunkText("- Cortado.", reply, 0.0)]
    plain = _passages("", "what coffee does Dana drink now", chunks=chunks)[0]
    assert (plain.start_line, plain.end_line) == (reply - 2, reply - 1)


def test_search_results_carry_their_passages(workspace, state_dir):
    notes = [f"- Note {i}: the weekly meeting notes, nothing notable, the usual agenda items." for i in range(40)]
    notes[5] = "- The boathouse key is under the blue flowerpot."
    notes[30] = "- A second boathouse key hangs in the garage, on the hook by the door."
    write(workspace / "memory" / "keys.md", "# Keys\n\n" + "\n".join(notes) + "\n")
    index = MemoryIndex(settings_for(workspace, state_dir))
    index.sync()
    hit = index.search("boathouse key", mode="text").results[0]
    assert hit.path == "memory/keys.md" and len(hit.passages) >= 2
    first = hit.passages[0]
    assert (first.start_line, first.end_line, first.snippet) == (hit.start_line, hit.end_line, hit.snippet)
    text = (workspace / "memory" / "keys.md").read_text().split("\n")
    for p in hit.passages:
        assert p.snippet == "\n".join(text[p.start_line - 1 : p.end_line]) and 0 < p.score <= 1
    cited = [p for p in hit.passages if "boathouse" in p.snippet]
    assert len(cited) >= 2
    data = to_json(hit)
    assert [p["citation"] for p in data["passages"]] == [cite("memory/keys.md", p.start_line, p.end_line) for p in hit.passages]
    assert data["passages"][0]["citation"] == data["citation"]


def test_entries_are_items_paragraphs_rows_turns_code_and_headings():
    from openclaw_memory.index.blocks import CODE, HEADING, ITEM, PARAGRAPH, ROW, TURN, entries

    lines = [
        "# Day", "",
        "A paragraph that wraps", "over two lines.", "",
        "- an item", "  continued here", "  - a nested item", "- another item", "",
        "| a | b |", "|---|---|", "| 1 | 2 |", "",
        "[09:14] Sam: hi", "[09:15] Lena: hello there", "Lena: and a third turn", "",
        "```sh", "echo 1", "```",
    ]
    got = [(e.first + 1, e.last + 1, e.kind) for e in entries(lines)]
    assert got == [
        (1, 1, HEADING), (3, 4, PARAGRAPH), (6, 7, ITEM), (8, 8, ITEM), (9, 9, ITEM),
        (11, 11, ROW), (12, 12, ROW), (13, 13, ROW), (15, 15, TURN), (16, 16, TURN), (17, 17, TURN), (19, 21, CODE),
    ]
    assert [e.depth for e in entries(lines) if e.kind == ITEM] == [0, 2, 0]
    # A chunk cut inside a code block starts with code up to the closing fence.
    assert [(e.first, e.last, e.kind) for e in entries(["x = 1", "```", "", "After."], in_fence=True)] == [(0, 1, CODE), (3, 3, PARAGRAPH)]


def test_chat_turns_are_found_in_the_ways_logs_write_them():
    from openclaw_memory.index.blocks import PARAGRAPH, TURN, entries

    for first, second in [
        ("**Sam:** hi", "**Lena:** hello there"),  # the colon inside the emphasis (many exports)
        ("**Sam**: hi", "**Lena**: hello there"),
        ("*Sam:* hi", "*Lena:* hello there"),
        ("> Sam: hi", "> Lena: hello there"),  # a quoted log
        ("Sam (09:14): hi", "Lena (09:15): hello there"),
        ("[D1:3] Sam: hi", "[D1:4] Lena: hello there"),
        ("12/05/2023, 13:56 - Sam: hi", "12/05/2023, 13:57 - Lena: hello there"),  # a phone's chat export
        ("1:56 pm - Sam: hi", "1:57 pm - Lena: hello there"),
    ]:
        assert [e.kind for e in entries([first, second])] == [TURN, TURN], first
    # Prose with a colon in it, or emphasis without one, stays a paragraph.
    assert [e.kind for e in entries(["**Bold words** and more", "a second line: with a colon later"])] == [PARAGRAPH]
    # A blank line after each turn (each its own paragraph in Markdown): still turns, a wrapped one whole.
    spaced = ["**Sam:** hi", "", "**Lena:** hello there,", "wrapped", "", "**Sam:** ok?", "", "**Lena:** bye", "",
              "Plain words.", "", "Note: lone"]
    assert [(e.first, e.last, e.kind) for e in entries(spaced)] == [
        (0, 0, TURN), (2, 3, TURN), (5, 5, TURN), (7, 7, TURN), (9, 9, PARAGRAPH), (11, 11, PARAGRAPH)]
    # Labelled paragraphs in a row are not a conversation: too many names, or too few paragraphs.
    labels = ["Cause: a", "", "Fix: b", "", "Resolution: c", "", "Status: d"]
    assert {e.kind for e in entries(labels)} == {PARAGRAPH}
    assert {e.kind for e in entries(spaced[:6])} == {PARAGRAPH}
    # The speaker is the name, whatever stamp comes before it (so a log's two people count as two).
    from openclaw_memory.index.blocks import _speaker

    for line in ["**Sam:** hi", "[09:14] Sam: hi", "12/05/2023, 13:56 - Sam: hi", "1:56 PM - Sam: hi", "> *Sam* (9:14): hi"]:
        assert _speaker(line) == "sam", line


# -- dates matched as dates, the newest note on a subject first (issue 21) ----------------------------


def test_dates_give_date_terms_written_any_way():
    from openclaw_memory.index.terms import date_terms, keyword_terms

    def dates(text: str) -> list[str]:
        return list(date_terms(text))

    iso = dates("Ostrom starts 2026-12-01.")
    assert iso == ["date:m12", "date:12-01", "date:2026-12", "date:2026-12-01"]
    assert date_terms("2026-12-01") == dict.fromkeys(iso, 0.25)  # one date weighs one unit, its terms share it
    assert dates("since 1 December 2026") == iso
    assert dates("since December 1st, 2026") == iso
    assert dates("2026年12月1日开始") == iso
    assert dates("on 3 Nov") == ["date:m11", "date:11-03"]
    assert dates("What happens in December?") == ["date:m12"]  # a month alone: the month
    assert dates("I may go; march on") == []  # words that are also months need a day or a year
    assert dates("May 2026") == ["date:m05", "date:2026-05"]
    assert dates("v2026.9.6, 555-0199, 2026-13-01, 09:30, backup-2026-11-03") == []
    assert not any(t.startswith("date:") for t in keyword_terms("2026-12-01 in December"))  # BM25 keeps words


def test_a_month_in_the_query_finds_the_line_with_an_iso_date_and_never_the_dated_heading():
    from openclaw_memory.index.snippets import ChunkText, build_passages
    from openclaw_memory.index.terms import TermFinder, date_terms, keyword_terms, query_terms, term_patterns

    long = ", and then some more of the same talk about it" * 4
    body = (f"# 2026-12-01\n\n- Met the team about the roadmap{long}.\n- Ostrom tariff from 2026-12-01 on.\n"
            f"- Lunch at the canteen with the team{long}.\n- Roadmap review moved{long}.")
    query = "What starts in December?"
    weights = dict.fromkeys(keyword_terms(query), 1.0) | date_terms(query)
    assert TermFinder(weights).by_line(body) == {0: frozenset({"date:m12"}), 3: frozenset({"date:m12"})}
    passages = build_passages([ChunkText(body, 1, 0.5)], weights, lambda: term_patterns(query_terms(query)),
                              lambda v, k: 0.5 * v + 0.5 * k)
    assert passages[0].start_line <= 4 <= passages[0].end_line  # the entry of that date (line 4) ...
    assert passages[0].start_line > 1  # ... not the heading


class _Plan:
    """What ``_prefer_newer`` reads of a query plan: the query's terms and their weights."""

    limit = 6
    mode = "hybrid"

    def __init__(self, weights: dict[str, float]):
        self.weights = weights

    def passage_terms(self):
        return self.weights, None


def _file(path: str, raw: float, terms: str):
    from openclaw_memory.index.search import _Candidate, _File, calibrate

    chunk = _Candidate(path, {"path": path, "terms": terms}, "memory-dir-main")
    return _File(path, [chunk], raw, calibrate("hybrid", raw))


def test_the_newer_note_on_the_same_subject_goes_first_and_an_unrelated_one_does_not():
    from openclaw_memory.index.search import RECENCY_MARGIN, _prefer_newer

    plan = _Plan({"heron": 5.0, "databas": 6.0, "storag": 4.0, "choos": 3.0})
    old = _file("memory/2026-09-08.md", 0.67, "heron storag databas timescal")
    topic = _file("memory/projects/heron.md", 0.6, "heron storag databas")
    new = _file("memory/2026-11-03.md", 0.67 - RECENCY_MARGIN + 0.01, "heron databas clickhous storag")
    other = _file("memory/2026-11-20.md", 0.6, "choos lunch")  # newer, but about something else
    far = _file("memory/2026-11-25.md", 0.67 - RECENCY_MARGIN - 0.05, "heron storag databas")  # newer, much worse
    memory = _file("MEMORY.md", 0.69, "heron databas storag")
    files = [memory, old, topic, other, new, far]
    order = [f.path for f in _prefer_newer(plan, files)]
    assert order == ["MEMORY.md", "memory/2026-11-03.md", "memory/2026-09-08.md", "memory/projects/heron.md",
                     "memory/2026-11-20.md", "memory/2026-11-25.md"]
    # it takes the older note's score, so scores stay in order; MEMORY.md and undated files keep theirs
    assert new.score == old.score and memory.score == _file("MEMORY.md", 0.69, "").score
    assert [f.path for f in _prefer_newer(_Plan({}), files)] == [f.path for f in files]  # no terms: as it was


def test_a_chinese_chunk_is_as_long_for_bm25_as_its_characters_not_its_bigrams():
    from openclaw_memory.index.bm25 import count_stats, doc_length
    from openclaw_memory.index.terms import keyword_terms

    def length(text: str) -> int:
        terms = keyword_terms(text)
        return doc_length(" ".join(terms), terms)

    assert len(keyword_terms("我们周六去公园散步")) > 9 and length("我们周六去公园散步") == 9  # nine characters
    english = "we walked in the park on saturday"
    assert length(english) == len(keyword_terms(english))  # no CJK: every term counts
    assert length("Heron 数据库 Postgres") == len(keyword_terms("Heron 数据库 Postgres")) - 2  # "数据", "据库" out
    # The statistics' average length counts the same way as each chunk's.
    assert count_stats([" ".join(keyword_terms("我们周六去公园散步"))]).length == 9


def test_a_named_older_note_is_passed_by_the_newer_note_that_corrects_it():
    from openclaw_memory.index.search import DEFAULT_MIN_SCORE, RECENCY_MARGIN, RECENCY_NAMED_MARGIN, _prefer_newer

    plan = _Plan({"kiln": 6.0, "glaze": 5.0, "pick": 3.0, "studio": 2.0})
    old = _file("memory/2026-04-02.md", 0.6, "studio pick kiln glaze stoneware")
    # Below RECENCY_MARGIN and sharing only "kiln" with the question: the subject rule alone would leave it.
    gap = (RECENCY_MARGIN + RECENCY_NAMED_MARGIN) / 2
    correction = _file("memory/2026-05-19.md", 0.6 - gap, "2026-04-02 2026 04 02 decision supersed kiln electr")
    unrelated = _file("memory/2026-05-20.md", 0.6 - gap, "kiln electr firing log")  # newer, same words, names nothing
    assert [f.path for f in _prefer_newer(plan, [old, unrelated])] == [old.path, unrelated.path]
    assert [f.path for f in _prefer_newer(plan, [old, correction])] == [correction.path, old.path]
    assert correction.score == old.score  # scores stay in order
    # Too far below, or under the default cut (a search with a lower min_score): it stays.
    far = _file("memory/2026-05-19.md", 0.6 - RECENCY_NAMED_MARGIN - 0.05, "2026-04-02 kiln")
    assert [f.path for f in _prefer_newer(plan, [old, far])] == [old.path, far.path]
    low_old = _file("memory/2026-04-02.md", 0.2, "kiln glaze")
    weak = _file("memory/2026-05-19.md", 0.12, "2026-04-02 kiln")
    assert weak.score < DEFAULT_MIN_SCORE
    assert [f.path for f in _prefer_newer(plan, [low_old, weak])] == [low_old.path, weak.path]
    # Naming a newer note's date is no correction of it: an older note never passes a newer one.
    later = _file("memory/2026-06-01.md", 0.6, "kiln glaze")
    early = _file("memory/2026-03-01.md", 0.6 - gap, "2026-06-01 kiln")
    assert [f.path for f in _prefer_newer(plan, [later, early])] == [later.path, early.path]


def _chinese_notes():
    from openclaw_memory.index.bm25 import Bm25, count_stats
    from openclaw_memory.index.terms import keyword_terms

    notes = {
        "memory/2026-03-07.md": "周六在老街的面包店买了一个草莓蛋糕，六十块。",  # the answer
        "memory/2026-03-01.md": "周末和朋友去爬山，山上风很大，晚上吃了火锅。",
        "memory/2026-02-20.md": "今天开会讨论了新项目的预算和时间表。",
    }
    filler = [f"Note {i} about the garden, the bike and the weekly planning meeting." for i in range(20)]
    terms = {p: " ".join(keyword_terms(t)) for p, t in notes.items()}
    return terms, Bm25([count_stats([*terms.values(), *(" ".join(keyword_terms(t)) for t in filler)])])


def test_cjk_grams_no_chunk_holds_leave_the_query_and_latin_words_stay():
    from openclaw_memory.index.search import QueryPlan
    from openclaw_memory.index.terms import keyword_terms

    _terms, bm25 = _chinese_notes()
    query = "上周在哪家面包店买的蛋糕？多少钱？ zeppelin"
    plan = QueryPlan(query, "text", None, 6, bm25)
    dropped = [t for t in keyword_terms(query) if t not in plan.terms]
    assert "蛋糕" in plan.terms and "面包" in plan.terms  # grams the notes hold
    assert {"哪家", "多少", "少钱", "钱"} <= set(dropped)  # grams no note holds (across words, or absent)
    assert all(bm25.df(t) == 0 for t in dropped)
    assert "zeppelin" in plan.terms  # a Latin word no chunk holds is the subject asked about: it stays


def test_a_chinese_note_that_answers_in_its_own_words_outranks_chinese_notes_the_model_puts_closer():
    """The English-only model puts any Chinese note near a Chinese question (cosines as it gives
    them: 0.5-0.55 for notes about something else, 0.33 for the answer); the answer holds the
    question's words. Grams of the question that no note holds no longer dilute its keyword share."""
    from openclaw_memory.index.search import QueryPlan, _Candidate, score_files

    terms, bm25 = _chinese_notes()
    plan = QueryPlan("上周在哪家面包店买的蛋糕？多少钱？", "hybrid", [0.0], 6, bm25)
    cosines = {"memory/2026-03-07.md": 0.33, "memory/2026-03-01.md": 0.55, "memory/2026-02-20.md": 0.5}
    candidates = []
    for path, held in terms.items():
        c = _Candidate(path, {"path": path, "terms": held}, "memory-dir-main", v=cosines[path])
        c.k = plan.keyword_share(held)
        candidates.append(c)
    ranked = sorted(score_files(plan, candidates), key=lambda f: -f.raw)
    assert ranked[0].path == "memory/2026-03-07.md"


def test_the_cut_decides_whether_a_question_is_answered_and_the_others_need_half_of_it():
    from openclaw_memory.index.bm25 import Bm25, TermStats
    from openclaw_memory.index.search import QueryPlan, _Candidate, calibrate, rank
    from openclaw_memory.index.store.base import BODY_FIELD, PATH_FIELD, TERMS_FIELD

    plan = QueryPlan("concert", "text", None, 6, Bm25([TermStats(100, 1000, {"concert": 3})]))

    def note(name: str, k: float) -> _Candidate:
        body = f"The {name} concert was loud."
        payload = {PATH_FIELD: f"memory/{name}.md", "startLine": 1, "endLine": 1, "kind": "section",
                   TERMS_FIELD: f"{name} concert loud", BODY_FIELD: body}
        return _Candidate(name, payload, "s", k=k)

    # In text mode the score is the calibrated keyword signal: 0.1 -> 0.03, 0.06 -> 0.018, 0.04 -> 0.012.
    assert calibrate("text", 0.06) >= 0.015 > calibrate("text", 0.04)
    found = [h.path for h in rank(plan, [note("arlo", 0.1), note("bonobo", 0.06), note("noise", 0.04)], 0.03)]
    assert found == ["memory/arlo.md", "memory/bonobo.md"]  # answered: the second kept, the third under half
    assert rank(plan, [note("bonobo", 0.06), note("noise", 0.04)], 0.03) == []  # nothing reaches the cut
    assert [h.path for h in rank(plan, [note("bonobo", 0.06), note("noise", 0.04)], 0.0)] == ["memory/bonobo.md", "memory/noise.md"]


def test_a_collection_whose_shard_is_gone_is_stale_and_a_synced_search_rebuilds_it(workspace, state_dir, cli):
    """Its manifest still lists every file, its shard is gone (deleted, a restore without it): a
    text search answered from the other collections alone and called nothing stale, and a hybrid
    one, finding nothing stale, never synced, so the collection's notes were not found, unsaid."""
    import shutil

    write(workspace / "MEMORY.md", "# Memory\n\n- I like green tea.\n")
    write(workspace / "memory" / "trip.md", "# Trip\n\nMet Priya about the hiking trip to Zermatt.\n")
    assert cli("index").returncode == 0
    shutil.rmtree(settings_for(workspace, state_dir).data_dir / "index" / "edge" / "memory-dir-main")

    text = cli("search", "hiking Zermatt", "--mode", "text", "--json")
    assert text.returncode == 0 and text.json()["stalePaths"] == ["memory/trip.md"]
    hybrid = cli("search", "hiking Zermatt", "--json").json()
    assert "stalePaths" not in hybrid and "stale" not in hybrid and [r["path"] for r in hybrid["results"]][:1] == ["memory/trip.md"]


def test_a_search_where_the_shards_folder_is_a_file_names_doctor_as_index_does(workspace, state_dir, cli):
    """It said there was no index yet and bade `openclaw-memory index`, which then failed with
    "Not a directory", naming doctor."""
    import shutil

    write(workspace / "MEMORY.md", "# Memory\n\n- I like green tea.\n")
    assert cli("index").returncode == 0
    edge = settings_for(workspace, state_dir).data_dir / "index" / "edge"
    shutil.rmtree(edge)
    edge.write_text("x")
    said = {cli(*args).stderr.strip() for args in (("search", "green tea"), ("search", "tea", "--mode", "text"), ("index",))}
    assert len(said) == 1 and "Not a directory" in said.pop()


def cite(path: str, start: int, end: int) -> str:
    """A citation as OpenClaw 2026.9.6's formatCitation writes it: #L3 for one line, #L3-L9 for more."""
    return f"{path}#L{start}" if start == end else f"{path}#L{start}-L{end}"


def test_every_search_names_the_notes_the_index_leaves_out_within_its_filters(workspace, cli, monkeypatch):
    """A note the one sync left out (over the size limit, here lowered) was named by that search
    alone: every later one answered "Nothing matches" with no word of it (hybrid, --mode text,
    --no-sync, --json's notes). Each search names those its collections and filters take, in the
    words of the syncing search."""
    from openclaw_memory.index import collections

    monkeypatch.setattr(collections, "MAX_INDEXED_BYTES", 400)
    write(workspace / "MEMORY.md", "# Memory\n\nHerons, not ospreys.\n")
    write(workspace / "memory" / "big.md", "# Big\n\nThe osprey nests on the pylon.\n")
    assert cli("index").returncode == 0
    write(workspace / "memory" / "big.md", "# Big\n\nThe osprey nests on the pylon.\n" + "filler words here\n" * 30)
    said = "not indexed: memory/big.md (0.0 MiB, over the 0 MiB an indexed file may have: split it)"
    first = cli("search", "osprey", "--json")
    assert said in first.json()["notes"] and f"warning: {said}" in first.stderr, first.stderr
    for args in ((), ("--mode", "text"), ("--no-sync",), ("--mode", "vector"), ("--path", "memory/*.md"),
                 ("--collection", "memory-dir-main"), ("--since", "2000-01-01")):
        again = cli("search", "osprey", *args)
        assert again.returncode == 0 and again.stderr.count(said) == 1, (args, again.stderr)
        assert cli("search", "osprey", "--json", *args).json()["notes"] == [said], args
    for args in (("--path", "MEMORY.md"), ("--path", "memory/people/*.md"), ("--collection", "memory-root-main"),
                 ("--since", "2999-01-01")):
        other = cli("search", "osprey", "--json", *args)
        assert "notes" not in other.json() and said not in other.stderr, (args, other.stderr)
    write(workspace / "memory" / "big.md", "# Big\n\nThe osprey nests on the pylon.\n")  # split: indexed again
    assert cli("search", "osprey", "--json").json()["results"][0]["path"] == "memory/big.md"
    assert "notes" not in cli("search", "osprey", "--json").json()


def test_a_search_names_five_left_out_notes_and_counts_the_rest(workspace, cli, monkeypatch):
    """Every search names the notes the index leaves out: a shared folder of 300 a colleague keeps
    private was 28 KB on every answer to the model (review). Five, then how many more, and `status`."""
    from openclaw_memory.index import collections

    monkeypatch.setattr(collections, "MAX_INDEXED_BYTES", 400)
    write(workspace / "MEMORY.md", "# Memory\n\nHerons, not ospreys.\n")
    for i in range(8):
        write(workspace / "memory" / f"big{i}.md", "# Big\n\nThe osprey.\n" + "filler words here\n" * 30)
    assert cli("index").returncode == 0
    (said,) = cli("search", "osprey", "--json").json()["notes"]
    assert said.count("memory/big") == 5 and said.endswith("; and 3 more (`openclaw-memory status` lists them)"), said
    assert len(cli("status", "--json").json()["leftOut"]) == 8


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (uid 65534)")
def test_every_search_names_a_folder_it_cannot_read_and_status_lists_it(base):
    """An unreadable folder was named by the syncing search and no later one; `status --json`'s
    `leftOut` named only files."""
    import dataclasses

    import openclaw_memory
    from conftest import NOBODY, as_nobody, env_for, run_in_process

    shipped = os.path.join(os.path.dirname(openclaw_memory.__file__), "index", "shipped")
    if not as_nobody(lambda: os.access(shipped, os.R_OK | os.X_OK)):
        pytest.skip("uid 65534 cannot read this checkout's shipped model (a clone in a 0700 folder), which an index reads")
    ws, sd = base / "ws", base / "state"
    write(ws / "memory" / "a.md", "# A\n\nThe heron.\n")
    write(ws / "memory" / "locked" / "l.md", "# L\n\nThe osprey.\n")
    sd.mkdir()
    for path in (ws, ws / "memory", ws / "memory" / "a.md", sd):
        os.chown(path, NOBODY, NOBODY)
    os.chmod(ws / "memory" / "locked", 0o700)  # root's
    (ws / "memory" / "lost+found").mkdir(mode=0o700)  # a file system's own (root's): no one's notes, not named

    def run(*args: str) -> dict:
        return as_nobody(lambda: dataclasses.asdict(run_in_process(args, env=env_for(ws, sd), cwd=ws)))

    # The modules a search loads, loaded first as root: uid 65534 may not read this interpreter's own
    # folder (a root's pyenv), and a module it first needs in the forked child is not found.
    warm = base / "warm"
    write(warm / "ws" / "MEMORY.md", "# Warm\n")
    assert run_in_process(["search", "warm"], env=env_for(warm / "ws", warm / "state"), cwd=warm / "ws").returncode == 0
    indexed = run("index")
    assert indexed["returncode"] == 0, indexed
    said = "cannot read memory/locked: unreadable: Permission denied: the notes in it are not indexed"
    for args in ((), ("--mode", "text"), ("--no-sync",), ("--path", "memory/locked/*.md")):
        done = run("search", "osprey", "--json", *args)
        assert json.loads(done["stdout"])["notes"] == [said] and f"warning: {said}" in done["stderr"], (args, done)
    assert "notes" not in json.loads(run("search", "osprey", "--json", "--path", "memory/a.md")["stdout"])
    assert json.loads(run("status", "--json")["stdout"])["leftOut"] == [
        {"path": "memory/locked", "folder": True,
         "reason": "a folder this user cannot read: Permission denied; the notes in it are not indexed"}]


def test_a_hit_on_a_note_edited_in_place_since_the_last_check_is_cited_as_it_is_now(workspace, state_dir, monkeypatch):
    """A long-lived process (an MCP server, a library caller) checks its last scan's files in
    rotation (1,024 a search): an edit in place that the turn had not reached was cited with the
    lines the note had before, with no stale mark (review: 3,000 notes, two searches wrong). A hit's
    file, lstat'ed anyway, is compared with the scan: edited, the search syncs it and runs again."""
    from test_scan import _later

    for name in "abcde":
        write(workspace / "memory" / f"{name}.md", f"# Note {name}\n\n- a fact of note {name}\n")
    write(workspace / "memory" / "e.md", "# Note e\n\n- the zephyr code is 4471\n")
    _later(monkeypatch)
    with MemoryIndex(settings_for(workspace, state_dir), keep_open=True) as index:
        index._scans.files_per_check = 1  # the turn reaches memory/a.md next, not memory/e.md
        (before,) = [h for h in index.search("zephyr code", min_score=0).results if h.path == "memory/e.md"]
        assert (before.start_line, before.end_line) == (1, 3)
        note = workspace / "memory" / "e.md"
        with open(note, "r+", encoding="utf-8") as fh:  # in place: same inode, the folder's mtime as it was
            fh.write("# Moved\n\nnew first paragraph\n\n# Note e\n\n- the zephyr code is 4471\n")
        after = index.search("zephyr code", min_score=0)
        with open(note, "r+", encoding="utf-8") as fh:  # again, searched with no sync: said to be stale
            fh.write("# Moved again\n\n")
        unsynced = index.search("zephyr code", min_score=0, sync=False)
        assert unsynced.stale_paths == ("memory/e.md",), unsynced
    (hit,) = [h for h in after.results if h.path == "memory/e.md"]
    lines = note.read_text().splitlines()[hit.start_line - 1:hit.end_line]
    assert "- the zephyr code is 4471" in lines, (hit.start_line, hit.end_line, lines)
    assert not after.stale_paths
