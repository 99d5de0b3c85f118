"""``links``: every link form notes use, resolved by the rules of docs/notes.md (ambiguous names
reported, never guessed; code ignored), kept in the state database and parsed again only when a
file's content changed; doctor's warning; the MCP tools ``memory_links`` and ``memory_files``."""

from __future__ import annotations

import json
import os

import pytest

from conftest import settings_for, write

MEMORY = """# Memory

- Heron: see memory/projects/heron.md and [[heron#Plan]], or [[heron|the heron project]].
- Cited: memory/2026-11-03.md#L2-L3 and memory/2026-11-03.md#L2-L40.
- [[alice]] is two people; [[nobody]] names nothing; [[Heron]] is not heron.md here.
- [the notes](memory/projects/heron.md#the-plan) and [a site](https://example.com/notes.md).
- `[[in-a-code-span]]` and ``see memory/code.md``
```
[[in-a-fence]] memory/fenced.md
```
"""

HERON = """# Heron

## The plan

Back to [[MEMORY]], [the day](../2026-11-03.md#L1), [[people/alice]], [[heron#Nowhere]] and [[#The plan]].
An image ![map](map.md) and [[photo.png]] are not note links; [gone](../gone.md) is.
"""

# (source, line, form, text, status, resolved): every link of the workspace, in `files` order.
EXPECTED = [
    ("MEMORY.md", 3, "mention", "memory/projects/heron.md", "ok", "memory/projects/heron.md"),
    ("MEMORY.md", 3, "wiki", "[[heron#Plan]]", "broken", "memory/projects/heron.md"),  # its heading is "The plan"
    ("MEMORY.md", 3, "wiki", "[[heron|the heron project]]", "ok", "memory/projects/heron.md"),
    ("MEMORY.md", 4, "citation", "memory/2026-11-03.md#L2-L3", "ok", "memory/2026-11-03.md"),
    ("MEMORY.md", 4, "citation", "memory/2026-11-03.md#L2-L40", "broken", "memory/2026-11-03.md"),
    ("MEMORY.md", 5, "wiki", "[[alice]]", "ambiguous", None),
    ("MEMORY.md", 5, "wiki", "[[nobody]]", "broken", None),
    ("MEMORY.md", 5, "wiki", "[[Heron]]", "broken", None),  # ext4 compares names exactly
    ("MEMORY.md", 6, "markdown", "[the notes](memory/projects/heron.md#the-plan)", "ok", "memory/projects/heron.md"),
    ("memory/2026-11-03.md", 1, "wiki", "[[alice]]", "ok", "memory/alice.md"),  # its own folder first
    ("memory/projects/heron.md", 5, "wiki", "[[MEMORY]]", "ok", "MEMORY.md"),
    ("memory/projects/heron.md", 5, "markdown", "[the day](../2026-11-03.md#L1)", "ok", "memory/2026-11-03.md"),
    ("memory/projects/heron.md", 5, "wiki", "[[people/alice]]", "ok", "memory/people/alice.md"),
    ("memory/projects/heron.md", 5, "wiki", "[[heron#Nowhere]]", "broken", "memory/projects/heron.md"),
    ("memory/projects/heron.md", 5, "wiki", "[[#The plan]]", "ok", "memory/projects/heron.md"),
    ("memory/projects/heron.md", 6, "markdown", "[gone](../gone.md)", "broken", None),
]


@pytest.fixture
def notes(workspace):
    write(workspace / "MEMORY.md", MEMORY)
    write(workspace / "memory" / "projects" / "heron.md", HERON)
    # A daily note in memory/ beside memory/alice.md: its [[alice]] is that one, not ambiguous.
    write(workspace / "memory" / "2026-11-03.md", "Met [[alice]].\nline 2\nline 3\n")
    write(workspace / "memory" / "alice.md", "# Alice (the one beside the daily notes)\n")
    write(workspace / "memory" / "people" / "alice.md", "# Alice\n")
    return workspace


def _rows(report: dict, key: str = "outgoing") -> list[tuple]:
    return [(x["source"], x["line"], x["form"], x["text"], x["status"], x.get("resolved")) for x in report[key]]


def test_every_link_form_resolves_by_the_rules(notes, cli):
    # memory/alice.md and memory/people/alice.md: [[alice]] from MEMORY.md is ambiguous.
    out = cli("links", "--json")
    assert out.returncode == 0, out.stderr
    report = out.json()
    assert _rows(report) == EXPECTED
    by_text = {(x["source"], x["text"]): x for x in report["outgoing"]}
    ambiguous = by_text[("MEMORY.md", "[[alice]]")]
    assert ambiguous["candidates"] == ["memory/alice.md", "memory/people/alice.md"] and "2 memory files" in ambiguous["problem"]
    assert by_text[("MEMORY.md", "memory/2026-11-03.md#L2-L40")]["problem"] == "memory/2026-11-03.md has 3 lines, not 40"
    assert by_text[("memory/projects/heron.md", "[[heron#Nowhere]]")]["fragment"] == "Nowhere"
    assert report["files"] == 5

    text = cli("links")
    assert "MEMORY.md:5\t[[alice]]  ambiguous: 2 memory files are named alice.md" in text.stdout
    assert "MEMORY.md:3\t[[heron|the heron project]]  -> memory/projects/heron.md" in text.stdout


def test_a_notes_outgoing_links_and_backlinks(notes, cli):
    report = cli("links", "memory/projects/heron.md", "--json").json()
    assert report["path"] == "memory/projects/heron.md"
    assert _rows(report) == [row for row in EXPECTED if row[0] == "memory/projects/heron.md"]
    assert _rows(report, "backlinks") == [
        row for row in EXPECTED if row[5] == "memory/projects/heron.md"]
    # An ambiguous name counts as a backlink of each file it may mean, marked so.
    alice = cli("links", "memory/people/alice.md", "--json").json()
    assert [(x["source"], x["text"], x["status"]) for x in alice["backlinks"]] == [
        ("MEMORY.md", "[[alice]]", "ambiguous"), ("memory/projects/heron.md", "[[people/alice]]", "ok")]
    assert alice["outgoing"] == []

    text = cli("links", "memory/projects/heron.md")
    assert "backlinks (6):" in text.stdout and "  MEMORY.md:3\tmemory/projects/heron.md  -> memory/projects/heron.md" in text.stdout

    missing = cli("links", "memory/projects/none.md")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no such memory file" in missing.stderr
    outside = cli("links", "../outside.md")
    assert outside.returncode == 2 and "not a memory path" in outside.stderr and "Traceback" not in outside.stderr


def test_broken_lists_the_links_that_name_nothing_or_several(notes, cli):
    report = cli("links", "--broken", "--json").json()
    assert _rows(report) == [row for row in EXPECTED if row[4] != "ok"]
    one = cli("links", "memory/projects/heron.md", "--broken", "--json").json()
    assert [x["text"] for x in one["outgoing"]] == ["[[heron#Nowhere]]", "[gone](../gone.md)"]
    assert [x["text"] for x in one["backlinks"]] == ["[[heron#Plan]]", "[[heron#Nowhere]]"]


def test_only_files_whose_content_changed_are_parsed_again(notes, cli, state_dir, monkeypatch):
    from openclaw_memory.database import Database
    from openclaw_memory.links import table

    parsed: list[str] = []  # the first heading of each note parsed

    class Counting(table.NoteParser):
        def result(self):
            note = super().result()
            parsed.append(note.headings[0] if note.headings else "")
            return note

    monkeypatch.setattr(table, "NoteParser", Counting)

    first = cli("links", "--json").json()
    assert first["parsed"] == 5 and len(parsed) == 5
    again = cli("links", "--json").json()
    assert again["parsed"] == 0 and len(parsed) == 5 and again["outgoing"] == first["outgoing"]

    # Touched, same bytes: read and hashed again (its stat changed), not parsed.
    heron = notes / "memory" / "projects" / "heron.md"
    st = heron.stat()
    os.utime(heron, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    assert cli("links", "--json").json()["parsed"] == 0 and len(parsed) == 5

    # One file's content changes: that file alone is parsed, and its new link is there.
    write(notes / "memory" / "people" / "alice.md", "# Alice\n\nWorks on [[heron]].\n")
    changed = cli("links", "--json").json()
    assert changed["parsed"] == 1 and parsed[-1] == "Alice"
    assert ("memory/people/alice.md", 3, "wiki", "[[heron]]", "ok", "memory/projects/heron.md") in _rows(changed)

    # A file removed: its links go, from the report and from the table.
    (notes / "memory" / "2026-11-03.md").unlink()
    gone = cli("links", "--json").json()
    assert gone["parsed"] == 0 and not any(x["source"] == "memory/2026-11-03.md" for x in gone["outgoing"])
    data_dir = settings_for(notes, state_dir).data_dir
    stored = {row[0].decode() for row in Database(data_dir).rows("SELECT DISTINCT source FROM links")}
    assert str(notes / "memory" / "2026-11-03.md") not in stored and str(heron) in stored


def test_a_running_watch_keeps_the_link_table_current(notes, cli, state_dir, monkeypatch):
    from test_watch import Watch

    from conftest import wait_for
    from openclaw_memory.database import Database
    from openclaw_memory.links import table

    parsed: list[str] = []  # the first heading of each note this process parses

    class Counting(table.NoteParser):
        def result(self):
            note = super().result()
            parsed.append(note.headings[0] if note.headings else "")
            return note

    monkeypatch.setattr(table, "NoteParser", Counting)
    watch = Watch(notes, state_dir)
    try:
        watch.wait_started()  # its first sync parsed every note
        assert cli("links", "--json").json()["parsed"] == 0 and parsed == []

        # An edit under watch: the watch parses it, `links` parses nothing and lists the new link.
        write(notes / "memory" / "people" / "alice.md", "# Alice\n\nWorks on [[heron]].\n")
        wait_for(lambda: watch.change_for("memory/people/alice.md", "updated"), 120)
        changed = cli("links", "--json").json()
        assert changed["parsed"] == 0 and parsed == []
        assert ("memory/people/alice.md", 3, "wiki", "[[heron]]", "ok", "memory/projects/heron.md") in _rows(changed)

        # A file removed under watch leaves the table with it.
        gone = notes / "memory" / "2026-11-03.md"
        gone.unlink()
        wait_for(lambda: watch.change_for("memory/2026-11-03.md", "removed"), 120)
        stored = Database(settings_for(notes, state_dir).data_dir).rows("SELECT DISTINCT source FROM links")
        assert str(gone) not in {row[0].decode() for row in stored}
    finally:
        assert watch.stop() == 0, "".join(watch.stderr)


def test_doctor_warns_of_broken_and_ambiguous_links_and_repairs_nothing(notes, cli, state_dir):
    from openclaw_memory.database import Database

    before = {p: p.read_bytes() for p in notes.rglob("*.md")}
    out = cli("doctor", "--json")
    assert out.returncode == 1
    found = {f["id"]: f for f in out.json()["findings"]}
    assert found["broken-links"]["severity"] == "warning" and found["broken-links"]["fixable"] is False
    assert "MEMORY.md:5 [[nobody]] (no memory file is named nobody)" in found["broken-links"]["message"]
    assert found["broken-links"]["paths"] == ["MEMORY.md", "memory/projects/heron.md"]
    assert found["ambiguous-links"]["severity"] == "warning" and "[[alice]]" in found["ambiguous-links"]["message"]
    # Plain doctor writes nothing: not even the link table.
    data_dir = settings_for(notes, state_dir).data_dir
    assert not Database(data_dir).exists() or Database(data_dir).rows("SELECT COUNT(*) FROM link_files") == [(0,)]

    fixed = cli("doctor", "--fix", "--yes", "--json")
    assert {"broken-links", "ambiguous-links"} <= {f["id"] for f in fixed.json()["remaining"]}
    assert {p: p.read_bytes() for p in notes.rglob("*.md")} == before

    write(notes / "MEMORY.md", "# Memory\n\n- See memory/projects/heron.md.\n")
    write(notes / "memory" / "projects" / "heron.md", "# Heron\n\nBack to [[MEMORY]].\n")
    ids = {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    assert not ids & {"broken-links", "ambiguous-links"}


def test_the_mcp_tools_list_files_with_their_state_and_links(notes, state_dir, cli):
    from test_mcp import payload, run_session

    files_json = cli("files", "--json").json()
    links_json = cli("links", "memory/projects/heron.md", "--json").json()

    async def script(session):
        out = {"tools": {t.name: t for t in (await session.list_tools()).tools}}
        out["before"] = payload(await session.call_tool("memory_files", {}))
        payload(await session.call_tool("memory_get", {"path": "memory/projects/heron.md"}))
        payload(await session.call_tool("memory_get", {"path": "MEMORY.md"}))
        write(notes / "MEMORY.md", MEMORY + "\n- edited by hand\n")
        payload(await session.call_tool("memory_get", {"path": "memory/alice.md"}))
        payload(await session.call_tool("memory_write", {"path": "memory/alice.md", "append": "more"}))
        out["after"] = payload(await session.call_tool("memory_files", {}))
        out["links"] = payload(await session.call_tool("memory_links", {"path": "memory/projects/heron.md"}))
        out["broken"] = payload(await session.call_tool("memory_links", {"broken": True}))
        out["refused"] = await session.call_tool("memory_links", {"path": "../x.md"})
        return out

    out = run_session(notes, state_dir, script)
    for name in ("memory_files", "memory_links"):
        tool = out["tools"][name]
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
        assert "MEMORY.md" in tool.description
    assert set(out["tools"]["memory_links"].input_schema["properties"]) == {"path", "broken"}

    # The shape of `files --json`, each file with its modified time and this session's state.
    listed = out["before"]["files"]
    assert [{k: f[k] for k in ("path", "absPath", "source", "kind", "size")} for f in listed] == files_json["files"]
    assert all(f["modified"].endswith("Z") for f in listed)
    assert {f["state"] for f in listed} == {"discovered_unread"}
    after = {f["path"]: f["state"] for f in out["after"]["files"]}
    assert after == {"MEMORY.md": "read_stale", "memory/2026-11-03.md": "discovered_unread",
                     "memory/alice.md": "written_unread", "memory/people/alice.md": "discovered_unread",
                     "memory/projects/heron.md": "read_fresh"}

    # The shape of `links --json`.
    assert {k: v for k, v in out["links"].items() if k != "parsed"} == {
        k: v for k, v in links_json.items() if k != "parsed"}
    assert json.dumps(out["broken"]["outgoing"]) == json.dumps(cli("links", "--broken", "--json").json()["outgoing"])
    assert out["refused"].is_error and "not a memory path" in out["refused"].content[0].text


def test_names_compare_as_the_file_system_compares_them(notes):
    """ext4 compares names exactly (asked, not assumed); on a file system that folds case (not
    mountable here: this kernel has no CONFIG_UNICODE for tmpfs casefold), [[Heron]] names heron.md."""
    from openclaw_memory.links.parse import parse_note
    from openclaw_memory.links.resolve import LinkTarget, Resolver, Text, folds_case

    heron = notes / "memory" / "projects" / "heron.md"
    assert folds_case({str(heron): heron.stat().st_ino}) is False
    targets = [LinkTarget(str(heron), "memory/projects/heron.md", heron.stat().st_ino, Text(("Heron",), 6))]
    link = parse_note("[[Heron#HERON]] and [x](projects/HERON.md)").links
    source = str(notes / "memory" / "a.md")
    exact = Resolver(str(notes), targets, folds_case=False)
    assert [exact.resolve(one, source).status for one in link] == ["broken", "broken"]
    folding = Resolver(str(notes), targets, folds_case=True)
    assert [folding.resolve(one, source).target for one in link] == [targets[0], targets[0]]


def test_a_line_of_megabytes_is_parsed_in_one_pass(notes, cli):
    """A note may hold one huge line (doctor's tests write one of 20 MB): each pattern is linear in
    the line (a URL pattern scanned the rest of the line from every letter: the doctor suite's
    megabyte line timed out)."""
    write(notes / "memory" / "huge.md", "z" * 2_000_000 + " [[heron]] memory/projects/heron.md " + "`a " * 300_000 + "\n")
    rows = [row for row in _rows(cli("links", "--json").json()) if row[0] == "memory/huge.md"]
    assert rows == [("memory/huge.md", 1, "wiki", "[[heron]]", "ok", "memory/projects/heron.md"),
                    ("memory/huge.md", 1, "mention", "memory/projects/heron.md", "ok", "memory/projects/heron.md")]
