"""Tool arguments as agents write them, through a real ``openclaw-memory mcp`` session."""

from __future__ import annotations

import json

from test_mcp import payload, run_session, text_of

from conftest import write


def test_numbers_and_booleans_written_as_strings_are_read_as_openclaw_reads_them(workspace, state_dir, cli):
    """OpenClaw checks a tool call's arguments against the tool's schema first, and reads a number
    written as a string as that number (its ``validateToolArguments``: ``"3"``, ``" 2 "``, ``"1e2"``
    for an integer, ``"0.5"`` for a number), ``"true"``/``"false"`` as booleans and a number where a
    string is wanted as its text; a string that is no number, or no whole one for an integer, is refused. Here ``maxResults: "1"`` and
    ``from: "3"`` were tool errors (`must be a whole number ..., not "1"`)."""
    write(workspace / "MEMORY.md", "# Memory\n\nline two\nthe roof was fixed\n")
    write(workspace / "memory" / "roof.md", "# Roof\n\nThe roof leaks again; call the roofer.\n")
    assert cli("index").returncode == 0

    async def script(session):
        calls = [("memory_search", {"query": "roof", "maxResults": "1", "minScore": "0"}),
                 ("memory_search", {"query": "roof", "maxResults": " 2 ", "minScore": "1e-9"}),
                 ("memory_get", {"path": "MEMORY.md", "from": "3", "lines": "1.0"}),
                 ("memory_get", {"path": "MEMORY.md", "from": "1", "lines": "1", "maxChars": "1e2"}),
                 ("memory_links", {"broken": "true"}),
                 ("memory_search", {"query": 2026, "minScore": 0}),
                 ("memory_get", {"path": "MEMORY.md", "from": "2.5"}),
                 ("memory_search", {"query": "roof", "maxResults": "0"}),
                 ("memory_search", {"query": "roof", "maxResults": "9" * 400}),
                 ("memory_search", {"query": "roof", "minScore": "half"}),
                 ("memory_get", {"path": "MEMORY.md", "lines": ""}),
                 ("memory_links", {"broken": "yes"})]
        return [await session.call_tool(name, arguments) for name, arguments in calls]

    one, two, line, budget, links, year, *refused = run_session(workspace, state_dir, script)
    assert payload(year)["terms"] == ["2026"]  # a number where a string is wanted: its text, as OpenClaw's String()
    assert len(payload(one)["results"]) == 1
    assert len(payload(two)["results"]) == 2
    assert (payload(line)["from"], payload(line)["lines"]) == (3, 1) and payload(line)["text"].startswith("line two\n")
    assert payload(budget)["text"].startswith("# Memory\n")
    assert payload(links)["outgoing"] == []
    assert all(result.is_error for result in refused), [text_of(r) for r in refused]
    said = [text_of(result) for result in refused]
    assert said[0] == '`from` must be integer (a whole number, 1 or more), not "2.5"'
    assert said[1] == '`maxResults` must be >= 1, not "0"'
    assert said[2].startswith('`maxResults` must be integer (a whole number, 1 or more), not "999') and len(said[2]) < 200
    assert said[3] == '`minScore` must be a number from 0 to 1, not "half"'
    assert said[4] == '`lines` must be integer (a whole number, 1 or more), not ""'
    assert said[5] == '`broken` must be true or false, not "yes"'
    assert not any("Traceback" in json.dumps(s) for s in said)


def test_a_globstar_in_paths_also_stands_for_no_folder(workspace, state_dir, cli):
    """``memory/**/*.md`` is how an agent writes "every note under memory/": it found nothing in
    ``memory/notes.md`` (fnmatch's ``**/`` needs a folder), and the answer said plainly that nothing
    in the memory matched; ``**/*.md`` left out ``MEMORY.md``. A ``**/`` now stands for any folders or
    none, each one of a glob either way; ``*`` still crosses ``/`` as documented."""
    write(workspace / "MEMORY.md", "# Memory\n\nThe heron nests by the pier.\n")
    write(workspace / "memory" / "notes.md", "# Notes\n\nA heron was seen at dawn.\n")
    write(workspace / "memory" / "birds" / "herons.md", "# Herons\n\nThe grey heron fishes at the pier.\n")
    write(workspace / "memory" / "birds" / "2026" / "may.md", "# May\n\nTwo herons at the lake.\n")
    assert cli("index").returncode == 0
    globs = {"memory/**/*.md": ["memory/birds/2026/may.md", "memory/birds/herons.md", "memory/notes.md"],
             "**/*.md": ["MEMORY.md", "memory/birds/2026/may.md", "memory/birds/herons.md", "memory/notes.md"],
             "memory/**/birds/**/*.md": ["memory/birds/2026/may.md", "memory/birds/herons.md"],
             "**/**/herons.md": ["memory/birds/herons.md"],
             "memory/*.md": ["memory/birds/2026/may.md", "memory/birds/herons.md", "memory/notes.md"],
             "memory/birds/*/*.md": ["memory/birds/2026/may.md"]}

    async def script(session):
        found = {}
        for glob in globs:
            result = payload(await session.call_tool("memory_search", {"query": "heron", "minScore": 0, "maxResults": 10,
                                                                       "paths": [glob]}))
            found[glob] = sorted(hit["path"] for hit in result["results"])
        many = await session.call_tool("memory_search", {"query": "heron", "paths": ["a/**/b/**/c/**/d/**/e.md"]})
        later = payload(await session.call_tool("memory_search", {"query": "heron", "since": "2030-01-01"}))
        climbs = await session.call_tool("memory_search", {"query": "heron", "paths": ["memory/../**"]})
        return found, many, later, climbs

    found, many, later, climbs = run_session(workspace, state_dir, script)
    assert found == globs
    assert many.is_error and text_of(many).startswith("`paths` must be globs with at most 3 `**/`")
    # A filter that admits nothing is named, not the score alone (a model lowered minScore and got nothing).
    assert later["message"] == "Nothing in this memory matches: no file passes the filters given (since).", later
    assert later["filteredOut"] is True
    assert climbs.is_error and text_of(climbs) == ("`paths` must be globs of memory paths as `files` writes them, where '..' "
                                                   "only leads (../notes/*.md, an extra folder outside the workspace): 'memory/../**'")


def test_paths_pick_a_note_of_an_extra_folder_outside_the_workspace(workspace, state_dir, cli, tmp_path):
    """memory_search's results name such a note `../notes/plan.md`, and `paths: ["../notes/*.md"]` was a
    tool error ("never hold '..'"); its absolute path matched nothing."""
    notes = tmp_path / "notes"
    write(notes / "plan.md", "# Plan\n\nThe heron plan.\n")
    write(workspace / "memory" / "a.md", "# A\n\nA heron here.\n")
    write(state_dir / "openclaw.json", json.dumps({"agents": {"defaults": {"memorySearch": {"extraPaths": [str(notes)]}}}}))
    assert cli("index").returncode == 0

    async def script(session):
        found = []
        for glob in ("../notes/*.md", f"{notes}/plan.md"):
            result = payload(await session.call_tool("memory_search", {"query": "heron", "minScore": 0, "paths": [glob]}))
            found.append(sorted(hit["path"] for hit in result["results"]))
        return found

    assert run_session(workspace, state_dir, script) == [["../notes/plan.md"], ["../notes/plan.md"]]


def test_memory_get_of_a_notes_fragment_that_is_no_line_citation_names_the_note(workspace, state_dir):
    write(workspace / "memory" / "a.md", "# H\nx\ny\n")

    async def script(session):
        return (await session.call_tool("memory_get", {"path": "memory/a.md#H"}),
                await session.call_tool("memory_get", {"path": "memory/a.md#l2-l3"}))

    heading, lower = run_session(workspace, state_dir, script)
    assert heading.is_error and text_of(heading) == (
        "memory/a.md#H: only a line citation (memory/a.md#L10-L24) can be read; read memory/a.md for the whole note")
    assert payload(lower)["text"] == "x\ny"


def test_max_results_past_a_hundred_is_taken_as_the_command_line_takes_it(workspace, state_dir, cli):
    """OpenClaw's memory_search sets maxResults no bound, and `search --limit 150` and openclaw.json's
    maxResults answered 150 results, while the tool refused 150 ("from 1 to 100"): one bound for all."""
    for n in range(120):
        write(workspace / "memory" / f"roof-{n:03}.md", f"# Roof {n}\n\nThe roof leaks again, note {n}.\n")
    assert cli("index").returncode == 0

    async def script(session):
        return [await session.call_tool("memory_search", {"query": "roof leaks", "maxResults": 150, "minScore": 0})]

    (found,) = run_session(workspace, state_dir, script)
    assert not found.is_error, text_of(found)
    assert len(payload(found)["results"]) == 120


def test_memory_get_and_memory_search_refuse_and_take_what_openclaws_tools_do(workspace, state_dir, cli):
    """OpenClaw checks ``from``, ``lines`` and ``maxResults`` against its schemas (``type: integer,
    minimum: 1``) before its tool runs, reading null as 0 and a boolean as 1 or 0, and its tool then
    refuses one past 2^53 - 1 (``readPositiveIntegerParam``). Here ``from: 0``, ``from: 1.9``,
    ``from: null``, ``lines: -1`` and ``lines: "0"`` read from line 1 or one line (clamped and floored
    as its file reader is, under the tool's check), ``from: 2**53`` read nothing, ``corpus: null`` and
    ``maxResults: null`` were the defaults, ``from: true`` and ``maxResults: 1500`` were refused."""
    write(workspace / "memory" / "a.md", "l1\nl2\nl3\n")
    for n in range(3):
        write(workspace / "memory" / f"roof-{n}.md", f"# Roof {n}\n\nThe roof leaks again, note {n}.\n")
    assert cli("index").returncode == 0
    refused = [("memory_get", {"path": "memory/a.md", "from": 0}, "`from` must be >= 1, not 0"),
               ("memory_get", {"path": "memory/a.md", "from": 1.9}, "`from` must be integer (a whole number, 1 or more), not 1.9"),
               ("memory_get", {"path": "memory/a.md", "lines": -1}, "`lines` must be >= 1, not -1"),
               ("memory_get", {"path": "memory/a.md", "lines": "0"}, '`lines` must be >= 1, not "0"'),
               ("memory_get", {"path": "memory/a.md", "from": None}, "`from` must be >= 1, not null"),
               ("memory_get", {"path": "memory/a.md", "lines": False}, "`lines` must be >= 1, not false"),
               ("memory_get", {"path": "memory/a.md", "from": 2**53},
                "`from` must be a positive integer (at most 9007199254740991), not 9007199254740992"),
               ("memory_get", {"path": "memory/a.md", "from": 1e300},
                "`from` must be a positive integer (at most 9007199254740991), not 1e+300"),
               ("memory_get", {"path": "memory/a.md", "maxChars": True},
                "`maxChars` must be a number, not true"),
               ("memory_get", {"path": "memory/a.md", "maxChars": "many"},
                '`maxChars` must be a number, not "many"'),
               ("memory_get", {"path": "memory/a.md", "corpus": None}, "`corpus` must be one of memory, wiki, all, not null"),
               ("memory_search", {"query": "roof", "maxResults": None}, "`maxResults` must be >= 1, not null"),
               ("memory_search", {"query": "roof", "maxResults": 0.5},
                "`maxResults` must be integer (a whole number, 1 or more), not 0.5"),
               ("memory_search", {"query": "roof", "corpus": None},
                "`corpus` must be one of memory, wiki, all, sessions, not null")]
    taken = [("memory_get", {"path": "memory/a.md", "from": True, "lines": "2.0"}),
             ("memory_get", {"path": "memory/a.md", "from": 2.0, "lines": 9007199254740991}),
             ("memory_search", {"query": "roof leaks", "maxResults": 1500, "minScore": None}),
             ("memory_search", {"query": "roof leaks", "maxResults": True, "minScore": False})]

    async def script(session):
        return [await session.call_tool(name, arguments) for name, arguments, *_ in refused + taken]

    answers = run_session(workspace, state_dir, script)
    said = [(text_of(a) if a.is_error else None) for a in answers[:len(refused)]]
    assert said == [why for *_, why in refused]
    first, second, many, one = (payload(a) for a in answers[len(refused):])
    assert (first["from"], first["lines"], first["text"]) == (1, 2, "l1\nl2\n\n[More content available. Use from=3 to continue.]")
    assert (second["from"], second["lines"], second["text"]) == (2, 2, "l2\nl3")
    assert len(many["results"]) == 3 and len(one["results"]) == 1


def test_max_chars_takes_any_number_floored_and_below_1_reads_1(workspace, state_dir):
    """``maxChars`` is this product's own (OpenClaw's memory_get has none, its schema refuses it): as
    before OpenClaw's rule came to from/lines/maxResults, any finite number is taken, floored, and
    below 1 read as 1 (one character and the notice); 0 and 1.5 were refused (`must be >= 1`)."""
    write(workspace / "memory" / "a.md", "l1\nl2\nl3\n")
    cut = ("l\n\n[More content available. Requested excerpt exceeded the default maxChars budget. "
           "If you need the full raw line, use read on the source file.]")
    first = "l1\n\n[More content available. Use from=2 to continue.]"
    calls = [({"maxChars": 0}, cut), ({"maxChars": 1.5}, cut), ({"maxChars": -3}, cut), ({"maxChars": "0.5"}, cut),
             ({"maxChars": 2.9}, first), ({"maxChars": "3.5"}, first),
             ({"maxChars": None}, "l1\nl2\nl3"), ({"maxChars": 1e300}, "l1\nl2\nl3")]

    async def script(session):
        return [await session.call_tool("memory_get", {"path": "memory/a.md"} | args) for args, _ in calls]

    answers = run_session(workspace, state_dir, script)
    assert [text_of(a) if a.is_error else payload(a)["text"] for a in answers] == [text for _, text in calls]


def test_the_schemas_say_what_openclaws_do(workspace, state_dir):
    """``from``, ``lines`` and ``maxResults`` are integers of at least 1, as in OpenClaw's
    memory-tool-contract; ``maxResults`` sets no maximum there (a larger one gives at most 1000)."""
    from openclaw_memory.mcp.server import tool_specs
    from openclaw_memory.settings import Overrides, resolve_settings

    specs = {spec.name: spec.listing()["inputSchema"]["properties"]
             for spec in tool_specs(resolve_settings(Overrides(workspace=str(workspace), state_dir=str(state_dir))), None)}
    for tool, name in (("memory_get", "from"), ("memory_get", "lines"), ("memory_search", "maxResults")):
        assert (specs[tool][name]["type"], specs[tool][name]["minimum"]) == ("integer", 1), (tool, name)
    # maxChars, this product's own, takes 0 (read as 1) and a fraction (floored): no minimum, and says so.
    assert specs["memory_get"]["maxChars"]["type"] == "number" and "minimum" not in specs["memory_get"]["maxChars"]
    assert "a fraction is floored, below 1 reads 1" in specs["memory_get"]["maxChars"]["description"]
    assert "maximum" not in specs["memory_search"]["maxResults"]
    assert (specs["memory_search"]["minScore"]["minimum"], specs["memory_search"]["minScore"]["maximum"]) == (0, 1)


def test_memory_search_names_a_note_the_index_leaves_out_each_time(workspace, state_dir, cli):
    """After the sync that left a note out, each memory_search answered with no word of it."""
    write(workspace / "memory" / "plain.md", "# Plain\n\nThe heron nests by the weir.\n")
    write(workspace / "memory" / "a\\b.md", "# Slashed\n\nThe heron was ringed in May.\n")
    assert cli("index").returncode == 0
    said = "not indexed: memory/a\\b.md (its name has a backslash, which no memory path may hold: rename it)"

    async def script(session):
        return [payload(await session.call_tool("memory_search", {"query": "heron", **args}))
                for args in ({}, {}, {"paths": ["memory/plain.md"]})]

    first, again, other = run_session(workspace, state_dir, script)
    assert first["notes"] == again["notes"] == [said], (first, again)
    assert "notes" not in other


def test_booleans_and_lists_of_strings_are_read_as_openclaw_reads_them(workspace, state_dir, cli):
    """OpenClaw's ``validateToolArguments`` reads ``1`` and ``0`` where a boolean is wanted as true and
    false (no other number, no other string than ``"true"``/``"false"``), an array written as its JSON
    text as that array, and a number or boolean item of a list of strings as its text (a null item ""):
    here ``broken: 1``, ``paths: "[\\"MEMORY.md\\"]"`` and ``paths: [3]`` were tool errors (`must be
    true or false, not 1`, `must be a list of strings`) where an agent's same call to OpenClaw's loop runs."""
    write(workspace / "MEMORY.md", "# Memory\n\nThe roof [[memory/roof]] and [gone](memory/gone.md).\n")
    write(workspace / "memory" / "roof.md", "# Roof\n\nThe roof leaks again.\n")
    assert cli("index").returncode == 0

    async def script(session):
        calls = [("memory_links", {"broken": 1}), ("memory_links", {"broken": 0}), ("memory_links", {"broken": 1.0}),
                 ("memory_search", {"query": "roof", "minScore": 0, "paths": '["MEMORY.md"]'}),
                 ("memory_search", {"query": "roof", "minScore": 0, "collection": ' ["memory-root-main"] '}),
                 ("memory_search", {"query": "roof", "minScore": 0, "paths": ["memory/roof.md", 3]}),
                 ("memory_links", {"broken": 2}), ("memory_links", {"broken": "1"}), ("memory_links", {"broken": [True]}),
                 ("memory_search", {"query": "roof", "paths": "MEMORY.md"}),
                 ("memory_search", {"query": "roof", "paths": '{"a": 1}'}),
                 ("memory_search", {"query": "roof", "paths": [["MEMORY.md"]]}),
                 ("memory_search", {"query": "roof", "collection": "[NaN]"})]
        return [await session.call_tool(name, arguments) for name, arguments in calls]

    broken, every, broken_too, by_path, by_collection, by_number, *refused = run_session(workspace, state_dir, script)
    assert [link["target"] for link in payload(broken)["outgoing"]] == ["memory/gone.md"]
    assert payload(broken_too)["outgoing"] == payload(broken)["outgoing"]
    assert [link["target"] for link in payload(every)["outgoing"]] == ["memory/roof", "memory/gone.md"]
    assert {r["path"] for r in payload(by_path)["results"]} == {"MEMORY.md"}
    assert {r["path"] for r in payload(by_collection)["results"]} == {"MEMORY.md"}
    assert {r["path"] for r in payload(by_number)["results"]} == {"memory/roof.md"}  # 3: the glob "3", no file
    said = [text_of(result) for result in refused]
    assert all(result.is_error for result in refused), said
    assert said == ["`broken` must be true or false, not 2", '`broken` must be true or false, not "1"',
                    "`broken` must be true or false, not [true]", '`paths` must be a list of strings, not "MEMORY.md"',
                    '`paths` must be a list of strings, not "{\\"a\\": 1}"', '`paths` must be a list of strings, not [["MEMORY.md"]]',
                    '`collection` must be a list of strings, not "[NaN]"']


def test_the_values_openclaws_validator_gives_booleans_and_lists_of_strings():
    """The values themselves (tests/conformance/test_tool_argument_kinds.py asks OpenClaw for each)."""
    from openclaw_memory.mcp.server import ToolArgumentError, ToolParam

    flag = ToolParam("broken", "broken", "boolean", "", default=False)
    globs = ToolParam("paths", "paths", "strings", "")
    for given, expected in ((1, True), (0, False), (1.0, True), (-0.0, False), ("true", True), ("false", False)):
        assert flag.take({"broken": given}) is expected, given
    for given, items in (('["MEMORY.md"]', ("MEMORY.md",)), (" [] ", ()), ("[1, true, null]", ("1", "true", "")),
                         ([3, 1.5, 1e21, 1e-7, 0.00001, 2**70, 9007199254740993], ("3", "1.5", "1e+21", "1e-7", "0.00001",
                                                                                    "1.1805916207174113e+21", "9007199254740992")),
                         ([1e400], ("Infinity",))):
        assert globs.take({"paths": given}) == items, given
    for value in (2, 0.5, -1, "1", "True", " true", "", [], {}):
        try:
            flag.take({"broken": value})
        except ToolArgumentError as exc:
            assert str(exc).startswith("`broken` must be true or false, not "), exc
        else:
            raise AssertionError(f"broken {value!r} was taken")
    for value in ("MEMORY.md", "", '"a"', '{"a": 1}', "[[1]]", "[NaN]", '["' + "x" * 70_000 + '"]', [[1]], [{}], 3, True, {}):
        try:
            globs.take({"paths": value})
        except ToolArgumentError as exc:
            assert str(exc).startswith("`paths` must be a list of strings, not "), exc
        else:
            raise AssertionError(f"paths {value!r} was taken")
