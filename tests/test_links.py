"""``links``: every link form notes use, resolved by the rules of docs/notes.md (ambiguous names
reported, never guessed; code ignored), kept in the state database and parsed again only when a
file's content changed; doctor's warning; the MCP tools ``memory_links`` and ``memory_files``."""

from __future__ import annotations

import json
import os
import sqlite3
import time

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
    # The notes linking here: its own links to itself ([[#The plan]], [[heron#Nowhere]]) are outgoing
    # only (they were listed as backlinks too, "backlinks (6)", where docs/notes.md shows the others').
    assert _rows(report, "backlinks") == [
        row for row in EXPECTED if row[5] == "memory/projects/heron.md" and row[0] != "memory/projects/heron.md"]
    assert len(report["backlinks"]) == 4
    # An ambiguous name counts as a backlink of each file it may mean, marked so.
    alice = cli("links", "memory/people/alice.md", "--json").json()
    assert [(x["source"], x["text"], x["status"]) for x in alice["backlinks"]] == [
        ("MEMORY.md", "[[alice]]", "ambiguous"), ("memory/projects/heron.md", "[[people/alice]]", "ok")]
    assert alice["outgoing"] == []

    text = cli("links", "memory/projects/heron.md")
    assert "backlinks (4):" in text.stdout and "  MEMORY.md:3\tmemory/projects/heron.md  -> memory/projects/heron.md" in text.stdout

    missing = cli("links", "memory/projects/none.md")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no such memory file" in missing.stderr
    assert "memory_links with broken: true" in missing.stderr  # the same words reach an agent, who runs no command
    outside = cli("links", "../outside.md")
    assert outside.returncode == 2 and "not a memory path" in outside.stderr and "Traceback" not in outside.stderr


def test_broken_lists_the_links_that_name_nothing_or_several(notes, cli):
    report = cli("links", "--broken", "--json").json()
    assert _rows(report) == [row for row in EXPECTED if row[4] != "ok"]
    one = cli("links", "memory/projects/heron.md", "--broken", "--json").json()
    assert [x["text"] for x in one["outgoing"]] == ["[[heron#Nowhere]]", "[gone](../gone.md)"]
    assert [x["text"] for x in one["backlinks"]] == ["[[heron#Plan]]"]  # (its own [[heron#Nowhere]]: outgoing)


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
    # Plain doctor creates no state database: with none yet, it keeps no link table either.
    data_dir = settings_for(notes, state_dir).data_dir
    assert not Database(data_dir).exists()

    fixed = cli("doctor", "--fix", "--yes", "--json")
    assert {"broken-links", "ambiguous-links"} <= {f["id"] for f in fixed.json()["remaining"]}
    assert {p: p.read_bytes() for p in notes.rglob("*.md")} == before

    write(notes / "MEMORY.md", "# Memory\n\n- See memory/projects/heron.md.\n")
    write(notes / "memory" / "projects" / "heron.md", "# Heron\n\nBack to [[MEMORY]].\n")
    ids = {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    assert not ids & {"broken-links", "ambiguous-links"}


def _counting(monkeypatch) -> tuple[list[str], list[str]]:
    """(the notes the link table parses, the files it opens), by absolute path, from now on."""
    from openclaw_memory.links import table

    parsed: list[str] = []
    opened: list[str] = []
    real_open = table.open_regular_in_roots

    def counted(roots, path, *args, **kwargs):
        opened.append(path)
        return real_open(roots, path, *args, **kwargs)

    real_parse = table.NoteParser.result
    monkeypatch.setattr(table, "open_regular_in_roots", counted)
    monkeypatch.setattr(table.NoteParser, "result", lambda self: parsed.append(opened[-1]) or real_parse(self))
    return parsed, opened


def _settled(folder) -> None:
    """Past the racy guard of every file below ``folder`` (10 ms on a local file system): a sighting
    taken now is trusted next time, so a file unchanged since is not opened again."""
    from conftest import wait_for

    newest = max(max(p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in folder.rglob("*"))
    wait_for(lambda: time.time_ns() > newest + 50_000_000)


def _workspace_tree(folder) -> dict[str, tuple[bytes, int, int]]:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns, p.stat().st_ctime_ns) for p in folder.rglob("*") if p.is_file()}


def _link_findings(result) -> list[tuple]:
    assert result.returncode in (0, 1), result.stderr
    return [(f["id"], f["message"], f["paths"]) for f in result.json()["findings"] if f["id"] in ("broken-links", "ambiguous-links")]


def test_plain_doctor_parses_each_note_once_then_only_what_changed(notes, cli, state_dir, monkeypatch):
    """doctor's link check at 15,000 notes was 93% of doctor (bench/scale.py): plain doctor parsed
    every note again each time, as it never kept the link table. Now it keeps it (into the state
    database, never a workspace file): the next doctor opens no unchanged note."""
    from openclaw_memory.database import Database

    Database(settings_for(notes, state_dir).data_dir).open()  # a state database, as any write or read makes
    parsed, opened = _counting(monkeypatch)
    _settled(notes)
    files = sorted(str(p) for p in notes.rglob("*.md"))
    before = _workspace_tree(notes)
    first = _link_findings(cli("doctor", "--json"))
    assert sorted(parsed) == files and first
    del parsed[:], opened[:]

    again = _link_findings(cli("doctor", "--json"))
    assert again == first and parsed == [] and opened == []  # before: every note opened and parsed again
    assert _workspace_tree(notes) == before  # plain doctor never touches a workspace file

    alice = write(notes / "memory" / "people" / "alice.md", "# Alice\n\nWorks on [[heron#Nowhere]].\n")
    _settled(notes)
    edited = _link_findings(cli("doctor", "--json"))
    assert parsed == [str(alice)] and opened == [str(alice)]
    assert "memory/people/alice.md:3 [[heron#Nowhere]]" in edited[0][1]
    del parsed[:], opened[:]
    assert _link_findings(cli("doctor", "--json")) == edited and opened == []


@pytest.mark.parametrize("indexed", [False, True], ids=["no-index", "indexed"])
def test_doctors_link_findings_from_the_table_are_a_fresh_parses_as_files_come_and_go(notes, cli, state_dir, tmp_path,
                                                                                        monkeypatch, indexed):
    """At each step the link findings of a doctor that reads unchanged notes from the link table are
    those of a doctor that parses every note (a state dir of its own, empty), and only the notes
    new or changed since are parsed: what a link names is worked out again from the files as they are.
    ``indexed``: an index run before each doctor, so that the sightings hold and doctor reads the
    link rows of the notes whose link row is not of their sighting's bytes alone (doctor.vouched)."""
    from openclaw_memory.database import Database

    Database(settings_for(notes, state_dir).data_dir).open()
    if indexed:
        _settled(notes)
        assert cli("index").returncode == 0
    cli("doctor")  # the table filled
    parsed, _ = _counting(monkeypatch)
    fresh = iter(range(100))

    def step(expect_parsed: list, *wanted: str, unwanted: tuple[str, ...] = ()) -> None:
        _settled(notes)
        if indexed:
            assert cli("index").returncode == 0
        del parsed[:]
        warm = _link_findings(cli("doctor", "--json"))
        assert sorted(parsed) == sorted(map(str, expect_parsed))
        cold = _link_findings(cli("doctor", "--json", env={"OPENCLAW_STATE_DIR": str(tmp_path / f"fresh{next(fresh)}")}))
        assert warm == cold
        text = "\n".join(message for _, message, _ in warm)
        for piece in wanted:
            assert piece in text, (piece, text)
        for piece in unwanted:
            assert piece not in text, (piece, text)

    step([], "MEMORY.md:5 [[nobody]] (no memory file is named nobody)", "MEMORY.md:5 [[alice]] (2 memory files")
    # A new file fixes a broken link of a note left as it was.
    nobody = write(notes / "memory" / "nobody.md", "# Nobody\n")
    step([nobody], unwanted=("[[nobody]]",))
    # A new file makes a link ambiguous: [[heron|...]] from MEMORY.md now names two heron.md.
    other = write(notes / "memory" / "archive" / "heron.md", "# Heron, archived\n")
    step([other], "MEMORY.md:3 [[heron|the heron project]] (2 memory files are named heron.md")
    # A file removed: [[alice]] names the one left, the citation of the removed note names nothing.
    (notes / "memory" / "alice.md").unlink()
    (notes / "memory" / "2026-11-03.md").unlink()
    step([], "MEMORY.md:4 memory/2026-11-03.md#L2-L3 (no memory file at memory/2026-11-03.md)",
         unwanted=("[[alice]]",))
    kept = {bytes(path).decode() for (path,) in Database(settings_for(notes, state_dir).data_dir).rows(
        "SELECT path FROM link_files")}
    assert kept == {str(p) for p in notes.rglob("*.md")}  # the rows of the removed notes went with them
    # A target's heading changes: the links to it are checked against its headings now.
    heron = notes / "memory" / "projects" / "heron.md"
    write(heron, HERON.replace("## The plan", "## The route"))
    step([heron], "MEMORY.md:6 [the notes](memory/projects/heron.md#the-plan) (memory/projects/heron.md has no heading")
    # A rename by hand: the new name is a new file (parsed), the old one's links are gone with it.
    egret = heron.with_name("egret.md")
    heron.rename(egret)
    step([egret], "memory/projects/egret.md:5 [[heron#Nowhere]]", unwanted=("memory/projects/heron.md:",))
    # An edit behind the product's back keeping size and mtime: its ctime changed (the change rule).
    memory = notes / "MEMORY.md"
    st = memory.stat()
    memory.write_bytes(memory.read_bytes().replace(b"[[nobody]]", b"[[nobodz]]"))
    os.utime(memory, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (memory.stat().st_size, memory.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    step([memory], "MEMORY.md:5 [[nobodz]] (no memory file is named nobodz)")


def test_plain_doctor_keeps_no_link_table_where_it_found_an_error_or_the_schema_is_older(notes, cli, state_dir, monkeypatch):
    """Its one write is the cache, and only where nothing is wrong: a state database of another
    schema is not migrated, and one where doctor found an error is left byte for byte."""
    from test_schema import TOY_NEXT

    from openclaw_memory.database import Database, forget_connections, schema

    data_dir = settings_for(notes, state_dir).data_dir
    db = Database(data_dir)
    db.open()
    _settled(notes)

    def files() -> dict[str, bytes]:  # what SQLite's readers leave (the -shm index, an empty -wal) aside
        return {p.name: p.read_bytes() for p in data_dir.iterdir()
                if p.is_file() and not p.name.endswith("-shm") and p.stat().st_size}

    # An interrupted move (an error finding): nothing written.
    with db.transaction() as conn:
        conn.execute("INSERT INTO file_ops (id, record) VALUES (1, '{}')")
    forget_connections()
    kept = files()
    result = cli("doctor", "--json")
    assert "interrupted-move" in {f["id"] for f in result.json()["findings"]}
    assert files() == kept and db.rows("SELECT COUNT(*) FROM link_files") == [(0,)]
    with db.transaction() as conn:
        conn.execute("DELETE FROM file_ops")
    forget_connections()

    # A release after this one (a toy next schema) running plain doctor on this database: it is not
    # migrated (that is for a command that writes), so no link table is kept in it either.
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, TOY_NEXT))
    kept = files()
    assert {f["severity"] for f in cli("doctor", "--json").json()["findings"]} == {"warning"}  # the links' alone
    assert files() == kept
    with sqlite3.connect(db.path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == schema.SCHEMA_VERSION
        assert conn.execute("SELECT COUNT(*) FROM link_files").fetchone()[0] == 0
    monkeypatch.undo()

    # No error, this release's schema: the cache is kept.
    assert {f["severity"] for f in cli("doctor", "--json").json()["findings"]} == {"warning"}
    assert db.rows("SELECT COUNT(*) FROM link_files") == [(len(list(notes.rglob("*.md"))),)]


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


def test_a_link_beyond_the_memory_roots_never_says_whether_a_file_is_there(workspace, cli, tmp_path):
    """An agent could write a note linking anywhere and ask memory_links: a path outside the
    workspace and the extra paths said "is not a memory file" where a file was, "no memory file at"
    where none was. Now both say the second; inside the roots a file that is not memory is still named."""
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# not this workspace's\n")
    extra = tmp_path / "extra"
    write(extra / "idea.md", "# Idea\n")
    (extra / "link.md").symlink_to(outside / "secret.md")
    write(workspace / "notes.txt", "not memory\n")
    write(workspace / "memory" / "probe.md",
          f"[a]({outside}/secret.md) [b]({outside}/none.md) [c](../../outside/secret.md) [d](../../outside/none.md)\n"
          f"[e](../notes.md) [f](../../extra/link.md)\n")
    os.link(workspace / "notes.txt", workspace / "notes.md")  # a file at the root OpenClaw does not read
    report = cli("links", "memory/probe.md", "--extra", str(extra), "--json").json()
    problems = {link["text"]: link["problem"] for link in report["outgoing"]}
    assert problems[f"[a]({outside}/secret.md)"] == f"no memory file at {outside}/secret.md"
    assert problems[f"[b]({outside}/none.md)"] == f"no memory file at {outside}/none.md"
    assert problems["[c](../../outside/secret.md)"] == "no memory file at ../../outside/secret.md"
    assert problems["[d](../../outside/none.md)"] == "no memory file at ../../outside/none.md"
    # The control, inside the roots: a file that is there but not memory says so.
    assert problems["[e](../notes.md)"] == "../notes.md is not a memory file"
    assert problems["[f](../../extra/link.md)"] == "../../extra/link.md is not a memory file"


def test_a_link_through_a_symlinked_folder_never_says_whether_a_file_is_there(workspace, state_dir, cli, tmp_path):
    """``memory/ext`` a symlink to a folder outside: the text of ``ext/secret.md`` is inside the
    workspace, and its lookup by name followed the link, so a file there said "is not a memory
    file", none "no memory file at". Looked up from the root's descriptor, never through a symlink,
    both say the second, in `links` and in memory_links alike."""
    from test_mcp import payload, run_session

    outside = tmp_path / "outside"
    write(outside / "secret.md", "s\n")
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    (workspace / "memory" / "ext").symlink_to(outside)
    write(workspace / "memory" / "a.md", "[c](ext/secret.md)\n[d](ext/nosecret.md)\n[e](../memory/ext/secret.md)\n")
    problems = {link["text"]: link["problem"] for link in cli("links", "memory/a.md", "--json").json()["outgoing"]}
    assert problems == {"[c](ext/secret.md)": "no memory file at ext/secret.md",
                        "[d](ext/nosecret.md)": "no memory file at ext/nosecret.md",
                        "[e](../memory/ext/secret.md)": "no memory file at ../memory/ext/secret.md"}

    async def script(session):
        return payload(await session.call_tool("memory_links", {"path": "memory/a.md"}))

    tool = run_session(workspace, state_dir, script)
    assert {link["text"]: link["problem"] for link in tool["outgoing"]} == problems


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


def test_a_link_naming_a_note_in_another_unicode_form_names_nothing_and_says_which_note_looks_alike(workspace, cli):
    """``[[Café]]`` typed with é as one code point, the note's name holding e and a combining accent (as
    macOS writes names): broken, "no memory file is named Café", the two names looking the same."""
    import unicodedata

    write(workspace / "MEMORY.md", "# Memory\n\nSee [[Café]] and [[Cafe]].\n")
    write(workspace / "memory" / (unicodedata.normalize("NFD", "Café") + ".md"), "# Café\n")
    problems = {link["text"]: link["problem"] for link in cli("links", "MEMORY.md", "--json").json()["outgoing"]}
    named = unicodedata.normalize("NFD", "memory/Café.md")
    assert problems["[[Café]]"] == (f"no memory file is named Café ({named} is named alike, its name's letters written "
                                    "with other Unicode code points: rename the file or retype the link so they match)")
    assert problems["[[Cafe]]"] == "no memory file is named Cafe"


def test_a_link_from_the_wrong_folder_names_the_file_of_that_name_not_a_unicode_form(workspace, cli):
    """``[the notes](notes.md)`` in memory/sub/ names memory/sub/notes.md: the file is memory/notes.md,
    the same letters; the problem said its name's letters were written with other code points."""
    write(workspace / "memory" / "notes.md", "# notes\n")
    write(workspace / "memory" / "sub" / "x.md", "see [the notes](notes.md)\n")
    (link,) = cli("links", "memory/sub/x.md", "--json").json()["outgoing"]
    assert link["problem"] == "no memory file at notes.md (memory/notes.md has that name, in another folder than the link names)"
    write(workspace / "memory" / "sub" / "y.md", "see [the notes](memory/notes.md)\n")  # a workspace path
    (link,) = cli("links", "memory/sub/y.md", "--json").json()["outgoing"]
    assert link["problem"] == ("no memory file at memory/notes.md (memory/notes.md is there from the workspace, but a "
                               "Markdown link is read from its note's folder)")


def test_a_line_of_megabytes_is_parsed_in_one_pass(notes, cli):
    """A note may hold one huge line (doctor's tests write one of 20 MB): each pattern is linear in
    the line (a URL pattern scanned the rest of the line from every letter: the doctor suite's
    megabyte line timed out)."""
    write(notes / "memory" / "huge.md", "z" * 2_000_000 + " [[heron]] memory/projects/heron.md " + "`a " * 300_000 + "\n"
          + "> " * 400_000 + "[[heron]]\n"  # block quotes a line deep: their markers are counted in one pass too
          # comments and code spans, each holding the next's opening; a comment its paragraph never closes
          + "\n" + "<!---->`" * 300_000 + " [[heron]]\n" + "x <!-- " * 300_000 + "[[heron]]\n")
    rows = [row for row in _rows(cli("links", "--json").json()) if row[0] == "memory/huge.md"]
    assert rows == [("memory/huge.md", 1, "wiki", "[[heron]]", "ok", "memory/projects/heron.md"),
                    ("memory/huge.md", 1, "mention", "memory/projects/heron.md", "ok", "memory/projects/heron.md"),
                    ("memory/huge.md", 2, "wiki", "[[heron]]", "ok", "memory/projects/heron.md"),
                    ("memory/huge.md", 4, "wiki", "[[heron]]", "ok", "memory/projects/heron.md"),
                    ("memory/huge.md", 5, "wiki", "[[heron]]", "ok", "memory/projects/heron.md")]


def _backlinks(cli, path: str) -> list[tuple[int, str]]:
    report = cli("links", path, "--json")
    assert report.returncode == 0, report.stderr
    return [(x["line"], x["text"]) for x in report.json()["backlinks"]]


def test_a_link_in_an_indented_code_block_is_code_and_an_indented_line_of_a_paragraph_or_list_item_is_text(workspace, cli):
    """An indented code block (4 columns in, a tab to the next 4; after a blank line or a heading,
    never in a paragraph) is code, as a fence is: its links were backlinks, and `mv --update-links`
    rewrote the code example. A list item's paragraphs are indented to its content, not code."""
    write(workspace / "memory" / "heron.md", "# Heron\n")
    write(workspace / "memory" / "code.md", (
        "# Indented\n"
        "    [[heron]] code under a heading\n"
        "\n"
        "A paragraph, then a line indented:\n"
        "    [[heron]] continues it\n"                        # 5: text
        "\n"
        "    memory/heron.md after a blank line\n"
        "\tand [[heron]] a tab in\n"
        "\n"
        "- an item\n"
        "\n"
        "    [[heron]] the item's second paragraph\n"         # 12: text (the item's content is 2 in)
        "\n"
        "      [[heron]] code in the item\n"                  # 6 in: 4 past its content
        "\n"
        "10. an item whose content is 4 in\n"
        "\n"
        "    [[heron]] its second paragraph\n"                # 18: text
        "\n"
        ">     [[heron]] code in a block quote\n"
        "\n"
        "Back: [[heron]]\n"))                                 # 22: text
    assert _backlinks(cli, "memory/heron.md") == [(5, "[[heron]]"), (12, "[[heron]]"), (18, "[[heron]]"), (22, "[[heron]]")]


def test_a_link_in_an_html_comment_is_no_link_and_a_comment_a_paragraph_never_closes_is_text(workspace, cli):
    """``<!-- ... -->`` hides what it holds, over lines too: its links were backlinks (and rewritten
    by `mv`), its headings the note's. One opening a line runs to its ``-->`` past blank lines (or
    to its block quote's end); one opened inside a paragraph that ends first was text, and so are
    its links. A code span holding ``<!--`` opens no comment."""
    write(workspace / "memory" / "heron.md", "# Heron\n<!--\n## Old plan\n-->\n## Plan\n")
    write(workspace / "memory" / "comments.md", (
        "# Comments\n"
        "Before [[heron]] <!-- [[heron]] hidden --> after memory/heron.md\n"   # 2: two links
        "<!--\n"
        "[[heron]] in a comment\n"
        "\n"
        "memory/heron.md still in it, past a blank line\n"
        "-->\n"
        "A paragraph <!-- opens [[heron#Plan]]\n"
        "still [[heron]] inside --> out [[heron#Old plan]]\n"              # 9: the one after -->
        "\n"
        "Never closed <!-- in its paragraph: [[heron]]\n"                   # 11: text
        "and [[heron]] too\n"                                               # 12: text
        "\n"
        "`<!--` is code, so [[heron]] is a link\n"                          # 14
        "<!-->[[heron]] after an empty comment\n"                           # 15
        "> <!-- quoted [[heron]]\n"
        "\n"
        "After the quote: [[heron]]\n"))                                    # 18
    assert _backlinks(cli, "memory/heron.md") == [
        (2, "[[heron]]"), (2, "memory/heron.md"), (9, "[[heron#Old plan]]"), (11, "[[heron]]"), (12, "[[heron]]"),
        (14, "[[heron]]"), (15, "[[heron]]"), (18, "[[heron]]")]
    # A heading inside a comment is none of the note's: a link to it names no heading.
    broken = cli("links", "memory/comments.md", "--broken", "--json").json()["outgoing"]
    assert [(x["line"], x["problem"]) for x in broken] == [(9, "memory/heron.md has no heading 'Old plan'")]


def test_markdown_destinations_read_as_commonmark_reads_them_and_a_reference_definition_is_a_markdown_link(workspace, cli):
    """`[plan](plan(v1).md)` (balanced parentheses), `[notes](my\\_notes.md)` (a backslash escape) and
    `[amp](a&amp;b.md)` (an entity) were no links, or links to `my\\_notes.md`: marked renders them
    as links to plan(v1).md, my_notes.md and a&b.md. A reference definition `[h]: ../x.md` was read
    as a mention (from the workspace first); it is a Markdown link, from the note's folder, as
    marked resolves it, where it can stand: a paragraph's first lines, not inside one."""
    for name in ("plan(v1).md", "my_notes.md", "a&b.md", "heron.md", "b c.md"):
        write(workspace / "memory" / "projects" / name, "# x\n")
    write(workspace / "memory" / "projects" / "c.md", (
        "[plan](plan(v1).md) [notes](my\\_notes.md) [amp](a&amp;b.md) [pct](my%5Fnotes.md)\n"
        "[nested](a(b(c)d)e.md) [open](a(b.md) [esc](<b c\\.md>) [t](<b c.md> \"title\")\n"
        "\n"
        "[h]: heron.md\n"
        "> [q]: <b c.md> 'a title'\n"
        "- [i]: ../projects/heron.md#x\n"
        "\n"
        "A paragraph's text\n"
        "[p]: ../heron.md\n"                     # not a definition: the paragraph's text (a mention, from the workspace)
        "\n"
        "[^1]: memory/projects/heron.md\n"       # a footnote: text, its mention a mention
        "[j]: heron.md trailing text\n"))
    rows = [(link["line"], link["form"], link["target"], link["status"])
            for link in cli("links", "memory/projects/c.md", "--json").json()["outgoing"]]
    assert rows == [
        (1, "markdown", "plan(v1).md", "ok"), (1, "markdown", "my_notes.md", "ok"), (1, "markdown", "a&b.md", "ok"),
        (1, "markdown", "my_notes.md", "ok"),
        (2, "markdown", "a(b(c)d)e.md", "broken"), (2, "markdown", "b c.md", "ok"), (2, "markdown", "b c.md", "ok"),
        (4, "markdown", "heron.md", "ok"), (5, "markdown", "b c.md", "ok"), (6, "markdown", "../projects/heron.md", "ok"),
        (9, "mention", "../heron.md", "broken"),
        (11, "mention", "memory/projects/heron.md", "ok")]
    texts = [link["text"] for link in cli("links", "memory/projects/heron.md", "--json").json()["backlinks"]]
    assert texts == ["[h]: heron.md", "[i]: ../projects/heron.md#x", "memory/projects/heron.md"]


def test_a_fifo_folder_or_path_through_a_file_is_refused_as_read_refuses_it(workspace, state_dir, cli):
    """``links memory/fifo.md`` (and memory_links) said "no such memory file" where ``read`` (and
    memory_get) say "refused: memory/fifo.md: not a regular file": the agent was told the file it
    can see in `files`' skipped list does not exist. Now the same words as read's."""
    from openclaw_memory.mcp.server import MemoryTools, tool_error_text, tool_specs
    from openclaw_memory.memory import open_memory

    write(workspace / "MEMORY.md", "# Memory\n\nSee [[fifo]].\n")
    write(workspace / "memory" / "note", "a file, not a folder\n")
    os.mkfifo(workspace / "memory" / "fifo.md")
    (workspace / "memory" / "folder.md").mkdir()
    paths = ("memory/fifo.md", "memory/folder.md", "memory/note/x.md", "memory/none.md")
    read = [cli("read", path).stderr for path in paths]
    links = [cli("links", path) for path in paths]
    assert all(done.returncode == 2 for done in links)
    assert [done.stderr for done in links[:3]] == read[:3] == [
        "error: refused: memory/fifo.md: a FIFO (named pipe), not a regular file\n",
        "error: refused: memory/folder.md: a folder, not a regular file\n",
        "error: refused: memory/note/x.md goes through note, which is not a folder\n"]
    assert "memory/none.md: no such memory file" in links[3].stderr  # missing: as it was
    memory = open_memory(settings_for(workspace, state_dir), in_process=True)
    try:
        specs = {spec.name: spec for spec in tool_specs(memory.settings, MemoryTools(memory))}
        said = []
        for path in paths[:2]:
            with pytest.raises(Exception) as raised:
                specs["memory_links"].call(None, {"path": path})
            said.append(tool_error_text(raised.value))
    finally:
        memory.close()
    assert said == ["refused: memory/fifo.md: a FIFO (named pipe), not a regular file",
                    "refused: memory/folder.md: a folder, not a regular file"]


def test_link_text_is_read_as_commonmark_reads_it_no_link_in_a_link_and_an_escaped_bracket_is_text(workspace, cli):
    """`[see [inner](t.md) more](other.md)`: a link holds no link, so CommonMark (and marked) link
    `inner` to t.md and leave the outer brackets text; the parser read other.md alone. `\\[label](t.md)`
    is text there (an escaped bracket); the parser counted it, and `mv --update-links` rewrote it.
    An image's description may hold a link (`[![badge](b.svg)](t.md)` links t.md), an escaped `!`
    leaves a link (`\\![alt](t.md)`), and escaped brackets are text inside a link's label."""
    for name in ("t.md", "other.md"):
        write(workspace / "memory" / name, "# x\n")
    note = ("The [see [inner](t.md) more](other.md) page.\n"
            "\\[escaped](t.md) and \\\\[after an escaped backslash](t.md)\n"
            "[![badge](b.svg)](t.md) \\![alt](t.md) [a \\] b \\[ c](t.md) [a [b] c](t.md) [open\\](t.md)\n")
    write(workspace / "memory" / "n.md", note)
    assert [(link["line"], link["text"], link["target"])
            for link in cli("links", "memory/n.md", "--json").json()["outgoing"]] == [
        (1, "[inner](t.md)", "t.md"), (2, "[after an escaped backslash](t.md)", "t.md"),
        (3, "[![badge](b.svg)](t.md)", "t.md"), (3, "[alt](t.md)", "t.md"), (3, "[a \\] b \\[ c](t.md)", "t.md"),
        (3, "[a [b] c](t.md)", "t.md")]
    assert cli("read", "memory/t.md").returncode == 0
    moved = cli("mv", "memory/t.md", "memory/u.md", "--update-links", "--json")
    assert moved.returncode == 0, moved.stderr
    assert (workspace / "memory" / "n.md").read_text() == (
        "The [see [inner](u.md) more](other.md) page.\n"
        "\\[escaped](t.md) and \\\\[after an escaped backslash](u.md)\n"
        "[![badge](b.svg)](u.md) \\![alt](u.md) [a \\] b \\[ c](u.md) [a [b] c](u.md) [open\\](t.md)\n")
