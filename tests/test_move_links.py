"""``mv --update-links``: the links that named the moved note are rewritten, each form by its rule
(docs/notes.md), each linking file one guarded, versioned write; an ambiguous name is left, and a
file changed after its links were read is never overwritten, only named."""

from __future__ import annotations

import pytest
import xxhash

from conftest import settings_for, write
from openclaw_memory.memory.local import LocalMemory

SOURCE = ("# Heron\n\n## Plan\n\nBack to [[2026-11-30#Plan]] and [this note](2026-11-30.md).\n"
          "The day before: [Nov 3](2026-11-03.md#L1), [[2026-11-03]]; with [[alice]].\n")
MEMORY = """# Memory

- See [[2026-11-30]], [[2026-11-30|the heron]] and ![[2026-11-30#Plan]].
- Cited memory/2026-11-30.md#L3-L4; see memory/2026-11-30.md.
- [the day](memory/2026-11-30.md#plan) and [a title](<memory/2026-11-30.md> "t").
- `[[2026-11-30]]` in a code span stays.
"""
ALICE = "# Alice\n\nWorks on [the heron](../2026-11-30.md#plan).\n"


def version_of(data: str) -> str:
    return xxhash.xxh3_128_hexdigest(data.encode())


def memory_for(workspace, state_dir) -> LocalMemory:
    return LocalMemory(settings_for(workspace, state_dir))


def test_every_link_form_is_rewritten_to_the_new_path(workspace, state_dir):
    write(workspace / "memory" / "2026-11-30.md", SOURCE)
    write(workspace / "memory" / "2026-11-03.md", "# Nov 3\n")
    write(workspace / "memory" / "alice.md", "# Alice\n")
    write(workspace / "memory" / "projects" / "alice.md", "# Alice, the project\n")
    write(workspace / "MEMORY.md", MEMORY)
    write(workspace / "memory" / "people" / "alice.md", ALICE)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/2026-11-30.md")

    moved = memory.move("memory/2026-11-30.md", "memory/projects/heron.md", update_links=True)

    assert moved.links_updated == ("MEMORY.md", "memory/projects/heron.md", "memory/people/alice.md")
    assert moved.links_not_updated == ()
    memory_md = MEMORY.replace(
        "[[2026-11-30]], [[2026-11-30|the heron]] and ![[2026-11-30#Plan]]",
        "[[heron]], [[heron|the heron]] and ![[heron#Plan]]").replace(
        "memory/2026-11-30.md#L3-L4; see memory/2026-11-30.md", "memory/projects/heron.md#L3-L4; see memory/projects/heron.md").replace(
        "[the day](memory/2026-11-30.md#plan) and [a title](<memory/2026-11-30.md> \"t\")",
        "[the day](memory/projects/heron.md#plan) and [a title](<memory/projects/heron.md> \"t\")")
    assert "`[[2026-11-30]]` in a code span stays" in memory_md
    assert (workspace / "MEMORY.md").read_text() == memory_md
    # A relative Markdown link from another folder: the path from that folder, the fragment kept.
    assert (workspace / "memory" / "people" / "alice.md").read_text() == ALICE.replace(
        "../2026-11-30.md#plan", "../projects/heron.md#plan")
    # The moved note's own links to itself, and its relative Markdown link to another note from its new folder.
    assert (workspace / "memory" / "projects" / "heron.md").read_text() == SOURCE.replace(
        "[[2026-11-30#Plan]] and [this note](2026-11-30.md)", "[[heron#Plan]] and [this note](heron.md)").replace(
        "[Nov 3](2026-11-03.md#L1)", "[Nov 3](../2026-11-03.md#L1)").replace(
        "[[alice]]", "[[memory/alice]]")  # beside it in memory/ it was memory/alice.md; projects/ has its own

    # Each rewrite is a version in its file's history, over the version it replaced.
    history = [v.version for v in memory.history("MEMORY.md").versions]
    assert history[:2] == [version_of(memory_md), version_of(MEMORY)]
    assert memory.history("MEMORY.md").versions[0].origin == "agent-write"
    heron = [v.version for v in memory.history("memory/projects/heron.md").versions]
    assert heron[0] != version_of(SOURCE) and version_of(SOURCE) in heron[1:]

    # Every link that named the note names it again; nothing is broken.
    report = memory.links("memory/projects/heron.md")
    assert len(report.backlinks) == 8 and all(link.status == "ok" for link in report.backlinks)
    own = [link for link in report.outgoing if link.resolved == "memory/projects/heron.md"]  # (not backlinks)
    assert len(own) == 2 and all(link.status == "ok" for link in own)


def test_a_name_left_ambiguous_gets_the_path_and_an_ambiguous_link_is_left(workspace, state_dir, cli):
    write(workspace / "memory" / "2026-11-30.md", "# Kite\n")
    write(workspace / "memory" / "a" / "kite.md", "# Another kite\n")
    write(workspace / "memory" / "alice.md", "# Alice\n")
    write(workspace / "memory" / "people" / "alice.md", "# Alice, the other\n")
    write(workspace / "MEMORY.md", "- [[2026-11-30|kite]] flies.\n- [[alice]] is two people.\n")
    write(workspace / "memory" / "people" / "bob.md", "# Bob\n\nKnows [[alice]].\n")
    assert cli("read", "memory/2026-11-30.md").returncode == 0
    assert cli("read", "memory/people/alice.md").returncode == 0

    # memory/b/kite.md beside memory/a/kite.md: [[kite]] would be ambiguous, so the link gets the path.
    out = cli("mv", "memory/2026-11-30.md", "memory/b/kite.md", "--update-links", "--json")
    assert out.returncode == 0, out.stderr
    assert out.json()["linksUpdated"] == ["MEMORY.md"] and out.json()["linksNotUpdated"] == []
    assert (workspace / "MEMORY.md").read_text() == "- [[memory/b/kite|kite]] flies.\n- [[alice]] is two people.\n"

    # [[alice]] in MEMORY.md may mean either alice: it is left, and said; bob's (its own folder) is rewritten.
    renamed = cli("mv", "memory/people/alice.md", "memory/people/alicia.md", "--update-links", "--json").json()
    assert renamed["linksUpdated"] == ["memory/people/bob.md"]
    [left] = renamed["linksNotUpdated"]
    assert (left["source"], left["line"], left["text"]) == ("MEMORY.md", 2, "[[alice]]")
    assert left["why"].startswith("may name another file: 2 memory files are named alice.md")
    assert (workspace / "memory" / "people" / "bob.md").read_text() == "# Bob\n\nKnows [[alicia]].\n"
    assert "[[alice]] is two people" in (workspace / "MEMORY.md").read_text()


def test_a_file_edited_after_its_links_were_read_is_not_overwritten(workspace, state_dir, monkeypatch):
    from openclaw_memory.history import moves

    write(workspace / "memory" / "2026-11-30.md", SOURCE)
    write(workspace / "MEMORY.md", MEMORY)
    alice = workspace / "memory" / "people" / "alice.md"
    write(alice, ALICE)
    edited = ALICE + "\nShe also edits [[2026-11-30]] while it moves.\n"
    real_move = moves.move_memory_file

    def move_while_alice_is_edited(*args, **kw):  # after the backlinks were read, before the rewrite
        result = real_move(*args, **kw)
        write(alice, edited)
        return result

    monkeypatch.setattr(moves, "move_memory_file", move_while_alice_is_edited)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/2026-11-30.md")
    moved = memory.move("memory/2026-11-30.md", "memory/projects/heron.md", update_links=True)

    assert alice.read_text() == edited  # the edit is kept, not overwritten
    assert "memory/people/alice.md" not in moved.links_updated and "MEMORY.md" in moved.links_updated
    [left] = moved.links_not_updated
    assert (left.source, left.line, left.text) == ("memory/people/alice.md", 3, "[the heron](../2026-11-30.md#plan)")
    assert "changed after its links were read" in left.why


def test_links_in_the_file_a_forced_move_replaced_are_left_and_named(workspace, state_dir):
    write(workspace / "memory" / "a.md", "# A\n")
    write(workspace / "memory" / "b.md", "# B\n\nOld notes on [[a]].\n")
    write(workspace / "MEMORY.md", "- [[a]]\n")
    memory = memory_for(workspace, state_dir)
    memory.read("memory/a.md")
    memory.read("memory/b.md")
    moved = memory.move("memory/a.md", "memory/b.md", force=True, update_links=True)
    assert moved.links_updated == ("MEMORY.md",) and (workspace / "MEMORY.md").read_text() == "- [[b]]\n"
    [left] = moved.links_not_updated
    assert (left.source, left.line, left.text) == ("memory/b.md", 3, "[[a]]") and "replaced" in left.why
    assert (workspace / "memory" / "b.md").read_text() == "# A\n"  # the moved note, untouched


def test_a_link_a_name_cannot_be_spelled_in_is_left_and_named_never_written_to_name_nothing(workspace, state_dir):
    """A name holding what a link form cannot spell (``>`` in a mention or a citation; ``]`` in a
    wiki name) was written anyway: the link then named nothing (a mention of ``b.md``) and
    was in neither the moved note's backlinks, nor ``linksNotUpdated``, nor ``links --broken``."""
    write(workspace / "memory" / "heron.md", "# Heron\n")
    note = "Up [h](../heron.md), [[heron]], memory/heron.md and memory/heron.md#L1.\n"
    write(workspace / "memory" / "p" / "y.md", note)
    memory = memory_for(workspace, state_dir)

    memory.read("memory/heron.md")
    moved = memory.move("memory/heron.md", "memory/a>b.md", update_links=True)
    # A Markdown destination spells `>` (CommonMark, and marked, read `../a>b.md` as that path).
    assert (workspace / "memory" / "p" / "y.md").read_text() == note.replace("[[heron]]", "[[a>b]]").replace(
        "[h](../heron.md)", "[h](../a>b.md)")
    assert {(left.text, left.why.split(" cannot")[0]) for left in moved.links_not_updated} == {
        ("memory/heron.md", "memory/a>b.md"), ("memory/heron.md#L1", "memory/a>b.md")}
    assert [link.text for link in memory.links("memory/a>b.md").backlinks] == ["[h](../a>b.md)", "[[a>b]]"]
    assert {link.text for link in memory.links(broken=True).outgoing} == {left.text for left in moved.links_not_updated}

    memory.read("memory/a>b.md")
    again = memory.move("memory/a>b.md", "memory/g]h.md", update_links=True)
    assert [(left.text, "cannot be written as a wiki link" in left.why) for left in again.links_not_updated
            if left.text.startswith("[[")] == [("[[a>b]]", True)]
    assert "[[a>b]]" in (workspace / "memory" / "p" / "y.md").read_text()


def test_a_linking_file_too_big_for_the_history_is_left_and_named_never_rewritten(workspace, state_dir):
    """A rewrite replaces the whole file: one bigger than the history keeps ([history] max_bytes / 8)
    was rewritten all the same, and what it held before could not be restored (evicted)."""
    (state_dir / "openclaw-memory.toml").write_text("[history]\nmax_bytes = 80000\n")
    big = "See [[heron]].\n" + "a long log line\n" * 1300  # over 10,000 bytes
    write(workspace / "memory" / "heron.md", "# Heron\n")
    write(workspace / "memory" / "log.md", big)
    write(workspace / "MEMORY.md", "- [[heron]]\n")
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")

    moved = memory.move("memory/heron.md", "memory/kite.md", update_links=True)
    assert (workspace / "memory" / "log.md").read_text() == big
    assert [(left.source, left.text, "too big for the history" in left.why) for left in moved.links_not_updated] == [
        ("memory/log.md", "[[heron]]", True)]
    assert moved.links_updated == ("MEMORY.md",) and (workspace / "MEMORY.md").read_text() == "- [[kite]]\n"


def test_a_rewrite_that_would_open_a_code_span_leaves_its_line_whole(workspace, state_dir):
    """A backtick in the new name is a link alone, but two on one line, or one and a backtick
    already there, make a code span: the rewritten links (and another link of the line) were no
    links at all, and no report named them."""
    write(workspace / "memory" / "heron.md", "# Heron\n")
    write(workspace / "memory" / "other.md", "# Other\n")
    note = ("Two: [h](../heron.md) and [[heron]].\n"
            "One, and a tick already: [[heron]] then [[other]] and a ` tick.\n"
            "Alone: [[heron]] and [[other]].\n")
    write(workspace / "memory" / "p" / "y.md", note)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")

    moved = memory.move("memory/heron.md", "memory/q`r.md", update_links=True)
    assert (workspace / "memory" / "p" / "y.md").read_text() == note.replace(
        "Alone: [[heron]]", "Alone: [[q`r]]")
    assert sorted((left.line, left.text) for left in moved.links_not_updated) == [
        (1, "[[heron]]"), (1, "[h](../heron.md)"), (2, "[[heron]]")]
    assert [link.text for link in memory.links("memory/q`r.md").backlinks] == ["[[q`r]]"]
    assert len(memory.links("memory/other.md").backlinks) == 2


def test_a_link_in_a_fence_inside_a_block_quote_is_code_and_never_rewritten(workspace, state_dir):
    """A fence opened after a block quote's ``>`` was not seen as one: its ``[[heron]]`` was listed
    as a backlink and rewritten, changing the code an agent quoted. A quote's fence ends with the
    quote (the blank line), and a link after it is a link again."""
    write(workspace / "memory" / "heron.md", "# Heron\n")
    note = ("> The agent wrote:\n> ```\n> see [[heron]] and memory/heron.md\n> ```\n\n"
            "> ```\n> unclosed [[heron]]\n\nOutside again: [[heron]].\n"
            "> > ~~~\n> > nested [[heron]]\n> > ~~~\n")
    write(workspace / "memory" / "quoted.md", note)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")
    assert [(link.line, link.text) for link in memory.links("memory/heron.md").backlinks] == [(9, "[[heron]]")]

    moved = memory.move("memory/heron.md", "memory/egret.md", update_links=True)
    assert moved.links_updated == ("memory/quoted.md",) and moved.links_not_updated == ()
    assert (workspace / "memory" / "quoted.md").read_text() == note.replace(
        "Outside again: [[heron]]", "Outside again: [[egret]]")


def test_a_link_in_indented_code_or_an_html_comment_is_never_rewritten(workspace, state_dir):
    """An indented code example and a comment are text, not links: `mv` rewrote them, and where a
    line opened inside a comment (or one opened in a line) the link found first, the comment's,
    was the one rewritten. The links outside them are rewritten."""
    write(workspace / "memory" / "heron.md", "# Heron\n")
    note = ("Example:\n\n    see [[heron]]\n\n"
            "<!-- [[heron]] --> [[heron]]\n"
            "<!--\nold [[heron]]\nstill old [[heron]] --> new [[heron]]\n")
    write(workspace / "memory" / "code.md", note)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")
    assert [(link.line, link.text) for link in memory.links("memory/heron.md").backlinks] == [
        (5, "[[heron]]"), (8, "[[heron]]")]

    moved = memory.move("memory/heron.md", "memory/egret.md", update_links=True)
    assert moved.links_updated == ("memory/code.md",) and moved.links_not_updated == ()
    assert (workspace / "memory" / "code.md").read_text() == note.replace(
        "--> [[heron]]", "--> [[egret]]").replace("new [[heron]]", "new [[egret]]")


@pytest.mark.parametrize("end", ["\r", "\r\n"], ids=["cr", "crlf"])
def test_code_in_a_note_whose_lines_end_with_a_lone_cr_is_never_a_link(workspace, state_dir, end):
    """A note whose lines end with a lone CR (an old Mac editor's) was one line to the block
    grammar: the links in its fenced and indented code counted as backlinks and `mv --update-links`
    rewrote them. Its code is code now, as with LF or CRLF; the line numbers stay `read`'s (a line
    ends at LF) and the rewrite keeps every line end byte for byte."""
    write(workspace / "memory" / "t.md", "# T\n")
    lines = ["# Mac note", "", "~~~", "example: [fenced](t.md) [[t]]", "~~~", "", "    [indented](t.md)", "",
             "Real [real](t.md) and [[t]]", "", "[def]: t.md", ""]
    note = end.join(lines)
    (workspace / "memory" / "cr.md").write_bytes(note.encode())
    memory = memory_for(workspace, state_dir)
    memory.read("memory/t.md")
    cr = end == "\r"  # `read` numbers a line ended at LF: a note of lone CRs is one line there
    assert [(link.line, link.text) for link in memory.links("memory/t.md").backlinks] == [
        (1 if cr else 9, "[real](t.md)"), (1 if cr else 9, "[[t]]"), (1 if cr else 11, "[def]: t.md")]
    assert memory.read("memory/cr.md").lines == (1 if cr else 11)

    moved = memory.move("memory/t.md", "memory/u.md", update_links=True)
    assert moved.links_updated == ("memory/cr.md",) and moved.links_not_updated == ()
    assert (workspace / "memory" / "cr.md").read_bytes() == note.replace("Real [real](t.md) and [[t]]", "Real [real](u.md) and [[u]]").replace(
        "[def]: t.md", "[def]: u.md").encode()


def test_a_name_holding_a_comment_marker_is_never_written_into_a_link(workspace, state_dir):
    """``-->`` in a new name closes a comment a paragraph left open (its links text until then):
    written, the name hid the links before it and was itself no link."""
    write(workspace / "memory" / "heron.md", "# Heron\n")
    note = "Draft <!-- about [[heron]]\nsee [[heron]]\n"
    write(workspace / "memory" / "draft.md", note)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")
    assert len(memory.links("memory/heron.md").backlinks) == 2

    moved = memory.move("memory/heron.md", "memory/a-->b.md", update_links=True)
    assert (workspace / "memory" / "draft.md").read_text() == note and moved.links_updated == ()
    assert [(left.line, left.text, "HTML comment" in left.why) for left in moved.links_not_updated] == [
        (1, "[[heron]]", True), (2, "[[heron]]", True)]


def test_a_wiki_link_whose_pipe_a_table_escapes_is_read_and_rewritten_keeping_the_escape(workspace, state_dir):
    """In a table cell a wiki link's label is parted by ``\\|`` (a bare pipe would end the cell): it
    was read as a link to a note named ``heron\\``, listed as broken, and left naming the old name."""
    write(workspace / "memory" / "heron.md", "# Heron\n\n## Plan\n")
    note = "| note | why |\n|---|---|\n| [[heron\\|the heron]] | [[heron#Plan\\|its plan]] |\n"
    write(workspace / "memory" / "table.md", note)
    memory = memory_for(workspace, state_dir)
    memory.read("memory/heron.md")
    backlinks = memory.links("memory/heron.md").backlinks
    assert [(link.target, link.fragment, link.status) for link in backlinks] == [
        ("heron", None, "ok"), ("heron", "Plan", "ok")]

    moved = memory.move("memory/heron.md", "memory/egret.md", update_links=True)
    assert moved.links_updated == ("memory/table.md",) and moved.links_not_updated == ()
    assert (workspace / "memory" / "table.md").read_text() == note.replace("[[heron", "[[egret")


# -- killed between the move and its last rewrite ------------------------------------------------------


def make_linked_notes(workspace, count: int) -> dict[str, str]:
    """``count`` notes, each linking to ``memory/hub.md`` in three forms, and the hub."""
    notes = {f"memory/n{i}.md": f"# Note {i}\n\nSee [[hub]], [the hub](hub.md) and memory/hub.md.\n" for i in range(count)}
    notes["memory/hub.md"] = "# Hub\n\nEverything starts here.\n"
    notes["MEMORY.md"] = "# Memory\n"
    for path, text in notes.items():
        write(workspace / path, text)
    return notes


def killed_move(workspace, state_dir, step: str) -> None:
    import signal
    import subprocess
    import sys

    from conftest import env_for, fault

    proc = subprocess.run([sys.executable, "-m", "openclaw_memory", "mv", "--update-links", "memory/hub.md",
                           "memory/projects/heron.md"], cwd=workspace, capture_output=True, text=True,
                          env=env_for(workspace, state_dir, **fault(f"{step}=kill")), timeout=120)
    assert proc.returncode == -signal.SIGKILL, f"not killed at {step}: {proc.returncode}\n{proc.stderr}"


@pytest.mark.parametrize("step,finisher", [("write:swapped", "doctor"), ("write:swapped", "mv"), ("mv:renamed", "doctor"),
                                           ("mv:journaled", "doctor")])
def test_a_move_killed_before_its_last_link_rewrite_is_finished_links_and_all(cli, workspace, state_dir, step, finisher):
    """Killed after the first linking note's rewrite (``write:swapped``), after the rename
    (``mv:renamed``) or before it (``mv:journaled``): doctor --fix, or the next mv, ends with every
    link naming the note where it is; before, the rewrites were not journaled and the notes not yet
    rewritten kept naming a path that held nothing."""
    notes = make_linked_notes(workspace, 6)
    assert cli("read", "memory/hub.md").returncode == 0
    killed_move(workspace, state_dir, step)
    moved = step != "mv:journaled"

    plain = cli("doctor", "--json")
    found = {f["id"] for f in plain.json()["findings"]}
    assert "interrupted-move" in found, plain.stdout
    if finisher == "doctor":
        fixed = cli("doctor", "--fix", "--json")
        assert fixed.returncode == 0, fixed.stdout + fixed.stderr
        (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-move"]
        assert repair["status"] == ("completed" if moved else "rolled-back"), repair
    else:
        write(workspace / "memory" / "other.md", "# Other\n")
        assert cli("read", "memory/other.md").returncode == 0
        done = cli("mv", "memory/other.md", "memory/other2.md")
        assert done.returncode == 0 and "finished the link rewrites" in done.stderr, done.stderr
    assert cli("doctor").returncode == 0
    assert cli("links", "--broken", "--json").json()["outgoing"] == []
    where = "memory/projects/heron.md" if moved else "memory/hub.md"
    assert (workspace / where).read_text() == notes["memory/hub.md"]
    backlinks = cli("links", where, "--json").json()["backlinks"]
    assert {b["source"] for b in backlinks} == {f"memory/n{i}.md" for i in range(6)}
    assert len(backlinks) == 18
    if moved:
        text = (workspace / "memory" / "n5.md").read_text()
        assert text == "# Note 5\n\nSee [[heron]], [the hub](projects/heron.md) and memory/projects/heron.md.\n"
    else:
        assert all((workspace / p).read_text() == t for p, t in notes.items())


def test_a_note_edited_after_a_killed_move_is_left_as_edited_by_the_finish(cli, workspace, state_dir):
    make_linked_notes(workspace, 3)
    assert cli("read", "memory/hub.md").returncode == 0
    killed_move(workspace, state_dir, "mv:renamed")
    edited = "# Note 2\n\nRewritten by hand: [[hub]] is gone.\n"
    write(workspace / "memory" / "n2.md", edited)
    fixed = cli("doctor", "--fix", "--json").json()
    assert [r["status"] for r in fixed["repairs"] if r["id"] == "interrupted-move"] == ["completed"]
    assert (workspace / "memory" / "n2.md").read_text() == edited
    assert "[[heron]]" in (workspace / "memory" / "n0.md").read_text()
    # Only the hand edit's link names nothing (a warning of its own), never overwritten.
    assert [(f["id"], f["paths"]) for f in fixed["remaining"]] == [("broken-links", ["memory/n2.md"])]


def test_a_damaged_record_of_the_rewrites_is_dropped_in_one_line_never_a_traceback(cli, workspace, state_dir):
    import contextlib
    import json
    import sqlite3

    make_linked_notes(workspace, 3)
    assert cli("read", "memory/hub.md").returncode == 0
    killed_move(workspace, state_dir, "write:swapped")  # moved and recorded; the rewrites under way
    db = next(state_dir.rglob("state.db"))
    with contextlib.closing(sqlite3.connect(db)) as con, con:  # closed after: a connection's `with` only commits
        record = json.loads(con.execute("SELECT record FROM file_ops WHERE id = 1").fetchone()[0])
        assert record["step"] == "links"
        record["links"] = [["memory/n1.md", "not a link", 3], [["not", "hashable"]], 7]
        con.execute("UPDATE file_ops SET record = ? WHERE id = 1", (json.dumps(record),))
    plain = cli("doctor", "--json")
    assert "interrupted-move" in {f["id"] for f in plain.json()["findings"]}, plain.stderr
    fixed = cli("doctor", "--fix", "--json")
    assert "Traceback" not in fixed.stderr, fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "interrupted-move"]
    assert repair["status"] == "rolled-back" and "unreadable link rewrites" in repair["detail"]
    assert "interrupted-move" not in {f["id"] for f in cli("doctor", "--json").json()["findings"]}
    assert (workspace / "memory" / "projects" / "heron.md").exists()


def test_a_rewrite_that_fails_exits_1_saying_the_move_was_made_and_how_to_find_and_redo_its_links(
        cli, workspace, monkeypatch):
    """Every rewrite failing (the disk full) exited 0, the links named only in linksNotUpdated, and
    the rewrites could not be run again. Now the move is said done, the links left for the failure
    are named (`links --broken` lists them), with the way to run the rewrites again, and `mv` exits
    1 as a full disk does; a link left by a rule (ambiguous) still exits 0."""
    import errno

    from openclaw_memory.errors import disk_full
    from openclaw_memory.links import rewrite

    write(workspace / "memory" / "projects" / "heron.md", "# Heron\n")
    write(workspace / "memory" / "people" / "alice.md", "See [[heron]] and [the heron](../projects/heron.md).\n")
    assert cli("read", "memory/projects/heron.md").returncode == 0

    def full(settings, path, **kw):
        raise disk_full(OSError(errno.ENOSPC, "No space left on device"), f"{workspace}/memory/{path}")

    monkeypatch.setattr(rewrite, "write", full)
    plain = cli("mv", "memory/projects/heron.md", "memory/projects/egret.md", "--update-links")
    assert plain.returncode == 1
    assert "moved memory/projects/heron.md to memory/projects/egret.md, but the rewrite of 2 link(s) in 1 file(s) " \
           "failed" in plain.stderr and "links --broken" in plain.stderr
    assert "mv memory/projects/egret.md memory/projects/heron.md" in plain.stderr
    assert plain.stdout.startswith("moved memory/projects/heron.md to memory/projects/egret.md")
    assert "left memory/people/alice.md:1 [[heron]]: its rewrite failed: " in plain.stdout
    broken = cli("links", "--broken", "--json").json()["outgoing"]
    assert [link["text"] for link in broken] == ["[[heron]]", "[the heron](../projects/heron.md)"]
    # The way back the warning gives: moved back, the note's links name it again.
    assert cli("mv", "memory/projects/egret.md", "memory/projects/heron.md").returncode == 0
    assert cli("links", "--broken", "--json").json()["outgoing"] == []

    moved = cli("mv", "memory/projects/heron.md", "memory/projects/egret.md", "--update-links", "--json")
    assert moved.returncode == 1, moved.stderr
    result = moved.json()
    assert result["path"] == "memory/projects/egret.md" and result["linksUpdated"] == []
    assert [(left["source"], left["text"]) for left in result["linksNotUpdated"]] == [
        ("memory/people/alice.md", "[[heron]]"), ("memory/people/alice.md", "[the heron](../projects/heron.md)")]
    assert all(left["why"].startswith("its rewrite failed: ") and "no space left" in left["why"]
               for left in result["linksNotUpdated"])
    (said,) = result["warnings"]
    assert said.startswith("moved memory/projects/heron.md to memory/projects/egret.md, but the rewrite")

    # With the disk free again: moved back, then moved with --update-links, the links are rewritten.
    monkeypatch.undo()
    assert cli("mv", "memory/projects/egret.md", "memory/projects/heron.md").returncode == 0
    redone = cli("mv", "memory/projects/heron.md", "memory/projects/egret.md", "--update-links", "--json")
    assert redone.returncode == 0 and redone.json()["linksUpdated"] == ["memory/people/alice.md"]
    assert (workspace / "memory" / "people" / "alice.md").read_text() == (
        "See [[egret]] and [the heron](../projects/egret.md).\n")


def test_a_linking_note_that_cannot_be_read_is_named_in_the_moves_warnings(cli, workspace, monkeypatch):
    """A note the user may not read (another user's 0600 note, holding [[heron]]): `links` warned
    "cannot read ...: its links are not listed", `mv --update-links` said nothing of it, its link
    left naming nothing unseen. Now the move warns the same way."""
    from openclaw_memory.fsutil import safeopen
    from openclaw_memory.links import table

    write(workspace / "memory" / "projects" / "heron.md", "# Heron\n")
    write(workspace / "memory" / "p" / "u.md", "[[heron]]\n")
    assert cli("read", "memory/projects/heron.md").returncode == 0
    closed = str(workspace / "memory" / "p" / "u.md")

    def opened(roots, abs_path):
        if abs_path == closed:
            raise PermissionError(13, "Permission denied", abs_path)
        return safeopen.open_regular_in_roots(roots, abs_path)

    monkeypatch.setattr(table, "open_regular_in_roots", opened)
    assert cli("links", "--json").json()["unreadable"] == ["memory/p/u.md"]
    moved = cli("mv", "memory/projects/heron.md", "memory/projects/egret.md", "--update-links", "--json")
    assert moved.returncode == 0, moved.stderr
    assert moved.json()["warnings"] == [
        "cannot read memory/p/u.md: its links are not listed, so none was rewritten (one naming "
        "memory/projects/heron.md names nothing now)"]
    plain = cli("mv", "memory/projects/egret.md", "memory/projects/heron.md", "--update-links")
    assert "cannot read memory/p/u.md: its links are not listed" in plain.stderr


def test_a_reference_definition_is_rewritten_from_its_notes_folder(cli, workspace):
    """`[h]: ../projects/heron.md` resolves as an inline link (from the note's folder, as marked
    renders `[the heron][h]`); it was read as a mention and rewritten to the workspace path
    `memory/projects/egret.md`, which from memory/people/ names nothing when rendered."""
    write(workspace / "memory" / "projects" / "heron.md", "# Heron\n")
    alice = ("See [the heron][h] and [[heron]].\n\n[h]: ../projects/heron.md\n"
             "> [q]: <../projects/heron.md> \"the heron\"\n")
    write(workspace / "memory" / "people" / "alice.md", alice)
    assert cli("read", "memory/projects/heron.md").returncode == 0
    moved = cli("mv", "memory/projects/heron.md", "memory/projects/egret.md", "--update-links", "--json").json()
    assert moved["linksUpdated"] == ["memory/people/alice.md"] and moved["linksNotUpdated"] == []
    assert (workspace / "memory" / "people" / "alice.md").read_text() == (
        "See [the heron][h] and [[egret]].\n\n[h]: ../projects/egret.md\n"
        "> [q]: <../projects/egret.md> \"the heron\"\n")
    report = cli("links", "memory/projects/egret.md", "--json").json()
    assert [(link["form"], link["text"], link["status"]) for link in report["backlinks"]] == [
        ("wiki", "[[egret]]", "ok"), ("markdown", "[h]: ../projects/egret.md", "ok"),
        ("markdown", "[q]: <../projects/egret.md> \"the heron\"", "ok")]


@pytest.mark.parametrize(("old", "written", "new", "rewritten"), [
    ("plan(v1).md", "[plan](plan(v1).md#x)", "plan(v2).md", "[plan](plan(v2).md#x)"),
    ("my_notes.md", "[notes](my\\_notes.md)", "my notes.md", "[notes](<my notes.md>)"),
    ("a&b.md", "[amp](a&amp;b.md)", "a&amp;c #1 50%25.md", "[amp](<a%26amp;c %231 50%2525.md>)"),
    ("b.md", "[b](<b.md> 'title')", "c>d.md", "[b](<c\\>d.md> 'title')"),
], ids=["parentheses", "escape", "entity-percent-hash", "angle-bracket"])
def test_a_markdown_destination_is_read_and_written_as_commonmark_reads_it(cli, workspace, old, written, new, rewritten):
    """A destination with balanced parentheses, a backslash escape or an entity was misread (no
    link, or another path); a new path with a space, `#`, `%XX`, `&amp;` or `>` is written so that
    it reads back as itself (percent-encoded or escaped, in <...> where needed)."""
    write(workspace / "memory" / "p" / old, "# x\n")
    write(workspace / "memory" / "p" / "c.md", f"See {written}.\n")
    assert cli("read", f"memory/p/{old}").returncode == 0
    moved = cli("mv", f"memory/p/{old}", f"memory/p/{new}", "--update-links", "--json")
    assert moved.returncode == 0, moved.stderr
    assert moved.json()["linksUpdated"] == ["memory/p/c.md"], moved.stdout
    assert (workspace / "memory" / "p" / "c.md").read_text() == f"See {rewritten}.\n"
    (link,) = cli("links", "memory/p/c.md", "--json").json()["outgoing"]
    assert (link["resolved"], link["status"]) == (f"memory/p/{new}", "ok")


def test_a_link_that_finds_another_note_after_mv_is_said(cli, workspace):
    """Without --update-links a link naming the old path was said to name nothing (`links --broken`
    lists it), but one whose name finds another note then ([[alice]] beside people/alice.md finds
    projects/alice.md; the moved note's own [b](b.md) finds the b.md of its new folder) switched
    notes with no word, and `links --broken` listed nothing. Each is said now, in text and in
    --json's warnings; a link that names nothing after is left to `links --broken`."""
    write(workspace / "memory" / "people" / "alice.md", "# Alice Smith (person)\n")
    write(workspace / "memory" / "projects" / "alice.md", "# Project Alice\n")
    write(workspace / "memory" / "people" / "team.md", "# Team\nAsk [[alice]] about it.\n")
    write(workspace / "memory" / "a.md", "[b](b.md) [[b]] [[team]]\n")
    write(workspace / "memory" / "b.md", "b\n")
    write(workspace / "memory" / "sub" / "b.md", "sub b\n")
    for name in ("memory/people/alice.md", "memory/a.md", "memory/projects/alice.md"):
        assert cli("read", name).returncode == 0

    moved = cli("mv", "memory/people/alice.md", "memory/people/alice-smith.md", "--json")
    assert moved.returncode == 0, moved.stderr
    assert moved.json()["warnings"] == [
        "memory/people/team.md:2 [[alice]] named memory/people/alice.md, moved to memory/people/alice-smith.md; "
        "it names memory/projects/alice.md now"]
    back = cli("mv", "memory/people/alice-smith.md", "memory/people/alice.md")  # its new path takes the link back
    assert back.returncode == 0, back.stderr
    assert ("warning: memory/people/team.md:2 [[alice]] named memory/projects/alice.md before the move of "
            "memory/people/alice-smith.md to memory/people/alice.md; it names memory/people/alice.md now") in back.stderr

    own = cli("mv", "memory/a.md", "memory/sub/a.md", "--json")
    assert own.returncode == 0, own.stderr
    assert own.json()["warnings"] == [
        "memory/sub/a.md:1 [b](b.md) named memory/b.md before the move of memory/a.md to memory/sub/a.md; "
        "it names memory/sub/b.md now",
        "memory/sub/a.md:1 [[b]] named memory/b.md before the move of memory/a.md to memory/sub/a.md; "
        "it names memory/sub/b.md now"]
    # With --update-links the moved note's own links are rewritten: nothing to say of them.
    rewritten = cli("mv", "memory/sub/a.md", "memory/a.md", "--update-links", "--json")
    assert rewritten.returncode == 0, rewritten.stderr
    assert "warnings" not in rewritten.json()
    # A link naming nothing after is not said: `links --broken` lists it.
    for name in ("memory/projects/alice.md", "memory/people/alice.md"):
        gone = cli("mv", name, name.replace("alice", "carol"), "--json")
        assert gone.returncode == 0, gone.stderr
    assert "warnings" not in gone.json()
    assert [link["text"] for link in cli("links", "--broken", "--json").json()["outgoing"]] == ["[[alice]]"]


def test_a_link_that_finds_another_note_after_rm_is_said(cli, workspace):
    """rm of people/alice.md switched [[alice]] to projects/alice.md with no word, as mv did."""
    write(workspace / "memory" / "people" / "alice.md", "# Alice Smith (person)\n")
    write(workspace / "memory" / "projects" / "alice.md", "# Project Alice\n")
    write(workspace / "memory" / "people" / "team.md", "# Team\nAsk [[alice]] about it.\n")
    assert cli("read", "memory/people/alice.md").returncode == 0
    removed = cli("rm", "memory/people/alice.md", "--json")
    assert removed.returncode == 0, removed.stderr
    assert removed.json()["warnings"] == [
        "memory/people/team.md:2 [[alice]] named memory/people/alice.md, removed; it names memory/projects/alice.md now"]
    assert cli("read", "memory/projects/alice.md").returncode == 0
    gone = cli("rm", "memory/projects/alice.md")  # then it names nothing: `links --broken` says so, not rm
    assert gone.returncode == 0 and "warning" not in gone.stderr, gone.stderr


def test_a_moves_link_warnings_resolve_only_the_links_that_may_name_it_and_build_no_problem_text(
        workspace, state_dir, monkeypatch):
    """mv and rm took seconds, the write lock held: each link naming nothing ([[inbox]] in 2,000 of
    10,000 notes, a note moved to memory/inbox.md) had its problem worded, a walk of every memory
    file's name (its look-alike), only for the warnings to look at its status. The warnings resolve
    each link that may name the old or the new path twice (as it reads now and as it read before),
    no other link (another note's [[#heading]] names that note), word no problem, and are worked
    out once the write lock is let go, so other writers do not wait on them."""
    from openclaw_memory.history import store as store_module
    from openclaw_memory.links import pending
    from openclaw_memory.links.resolve import Resolver

    for k in range(30):
        write(workspace / "memory" / "p" / f"n{k}.md",
              f"# N{k}\n\n[[n{(k + 1) % 30}]] [[#N{k}]] [n](n{(k + 2) % 30}.md) memory/p/n{k}.md#L1\nsee [[inbox]]\n")
    write(workspace / "memory" / "a.md", "# A\n")
    memory = memory_for(workspace, state_dir)
    memory.read("memory/a.md")
    resolved, worded, locked = [], [], []

    def counted(self, link, source):
        resolved.append(link.text)
        return resolve(self, link, source)

    def alike(self, target):
        worded.append(target)
        return ""

    def shifted(settings, *args, **kwargs):
        lock = store_module.HistoryStore.for_settings(settings).write_lock_path
        locked.append(lock in store_module._held.__dict__.get("paths", set()))
        return shifted_links(settings, *args, **kwargs)

    resolve, shifted_links = Resolver.resolve, pending.shifted_links
    monkeypatch.setattr(Resolver, "resolve", counted)
    monkeypatch.setattr(Resolver, "_alike", alike)
    monkeypatch.setattr(pending, "shifted_links", shifted)

    moved = memory.move("memory/a.md", "memory/inbox.md")  # the 30 [[inbox]] named nothing: no warning
    assert moved.warnings == ()
    assert resolved == ["[[inbox]]"] * 60 and worded == [] and locked == [False]
    resolved.clear()
    removed = memory.remove("memory/inbox.md")  # they name nothing again: `links --broken`'s to say
    assert removed.warnings == ()
    assert resolved == ["[[inbox]]"] * 60 and worded == [] and locked == [False, False]
    # The words are there when asked: `links --broken` lists each with its problem.
    monkeypatch.undo()
    broken = memory.links(broken=True).outgoing
    assert [(link.text, link.problem) for link in broken] == [("[[inbox]]", "no memory file is named inbox")] * 30


def test_a_link_that_the_rewrite_made_is_not_said_to_name_another_note(cli, workspace):
    """mv --update-links rewrote [[alice]] to [[memory/people/notes/todo]] (the moved note's path:
    memory/archive/memory/people/notes/todo.md made [[todo]] ambiguous), then warned that this link
    named memory/archive/memory/people/notes/todo.md before the move and names the moved note now:
    the link's new text was resolved against the memory before the move, where the link did not
    exist. A link the rewrite made is read as it was written before (it named the moved note); one
    of the same text written by hand, which did name the other note, is still said."""
    write(workspace / "memory" / "people" / "alice.md", "# Alice\n")
    write(workspace / "memory" / "archive" / "memory" / "people" / "notes" / "todo.md", "# Old todo\n")
    write(workspace / "memory" / "people" / "bob.md",
          "ask about [[alice]]\nsee [[memory/people/notes/todo]]\n[[alice]] or [[memory/people/notes/todo]]\n")
    assert cli("read", "memory/people/alice.md").returncode == 0

    moved = cli("mv", "--update-links", "memory/people/alice.md", "memory/people/notes/todo.md", "--json")
    assert moved.returncode == 0, moved.stderr
    assert (workspace / "memory" / "people" / "bob.md").read_text() == (
        "ask about [[memory/people/notes/todo]]\nsee [[memory/people/notes/todo]]\n"
        "[[memory/people/notes/todo]] or [[memory/people/notes/todo]]\n")
    before = "named memory/archive/memory/people/notes/todo.md before the move of memory/people/alice.md to " \
             "memory/people/notes/todo.md; it names memory/people/notes/todo.md now"
    assert moved.json()["warnings"] == [f"memory/people/bob.md:2 [[memory/people/notes/todo]] {before}",
                                        f"memory/people/bob.md:3 [[memory/people/notes/todo]] {before}"]
