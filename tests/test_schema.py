"""The state database's versions: a future release's forward migration (a toy next version) runs
once, keeps every row and is refused by the release before it; a data dir of a development build
(a database of an unreleased schema, or the files kept before the database) gets one line saying
what to do, never a traceback (plain `doctor` reports it too), and nothing in it is changed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from conftest import settings_for, write
from openclaw_memory.database import Database, forget_connections, schema
from openclaw_memory.errors import StateDamaged, UnreleasedLayout

TOY_NEXT = "CREATE TABLE toy (id INTEGER PRIMARY KEY, note TEXT NOT NULL); INSERT INTO toy (note) SELECT version FROM objects"


def _version(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("PRAGMA user_version").fetchone()[0]


def test_a_new_database_has_this_releases_schema(tmp_path):
    db = Database(tmp_path)
    assert db.rows("SELECT COUNT(*) FROM versions") == [(0,)]
    assert db.rows("SELECT COUNT(*) FROM snapshot_files") == [(0,)]
    assert _version(db.path) == schema.FIRST_RELEASED + len(schema.MIGRATIONS) == schema.SCHEMA_VERSION


def test_a_future_release_migrates_forward_once_and_keeps_every_row(tmp_path, monkeypatch):
    db = Database(tmp_path)
    with db.transaction() as conn:
        conn.execute("INSERT INTO objects VALUES ('v1', 1, 1, 0)")
    forget_connections()
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, TOY_NEXT))  # the next release's step
    assert Database(tmp_path).rows("SELECT note FROM toy") == [("v1",)]
    assert Database(tmp_path).rows("SELECT version FROM objects") == [("v1",)]
    assert _version(db.path) == schema.SCHEMA_VERSION + 1
    forget_connections()
    assert Database(tmp_path).rows("SELECT COUNT(*) FROM toy") == [(1,)]  # opened again: not run twice

    forget_connections()
    monkeypatch.undo()  # this release again, on the next one's database: refused, never written
    with pytest.raises(StateDamaged, match=f"newer openclaw-memory \\(schema {schema.SCHEMA_VERSION + 1}"):
        Database(tmp_path).rows("SELECT 1")
    assert _version(db.path) == schema.SCHEMA_VERSION + 1


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_a_development_builds_database_is_refused_in_one_line(workspace, state_dir, cli, version):
    data_dir = settings_for(workspace, state_dir).data_dir
    data_dir.mkdir(parents=True)
    with sqlite3.connect(data_dir / "state.db") as conn:
        conn.execute("CREATE TABLE sightings (path BLOB PRIMARY KEY)")
        conn.execute(f"PRAGMA user_version = {version}")
    write(workspace / "MEMORY.md", "# Memory\n- one\n")
    result = cli("state")
    assert result.returncode == UnreleasedLayout.exit_code and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert f"schema {version}" in line and "development build" in line and str(data_dir) in line
    assert "`openclaw-memory index`" in line and "history starts fresh" in line
    assert _version(data_dir / "state.db") == version  # nothing migrated
    _plain_doctor_says_it(cli, line)


def test_a_data_dir_of_files_before_the_database_is_refused_and_kept(workspace, state_dir, cli):
    data_dir = settings_for(workspace, state_dir).data_dir
    log = write(data_dir / "history" / "logs" / "a.json", '{"absPath": "/x", "entries": []}')
    write(data_dir / "checkpoint.md", "# ⚠️ Workspace Changes Detected\n- x\n")
    write(workspace / "MEMORY.md", "# Memory\n- one\n")
    result = cli("history", "MEMORY.md")
    assert result.returncode == UnreleasedLayout.exit_code and "Traceback" not in result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert "it holds history, checkpoint.md" in line and "move that folder aside" in line
    assert log.read_text() == '{"absPath": "/x", "entries": []}'  # nothing moved or deleted
    _plain_doctor_says_it(cli, line)
    assert cli("files").returncode == 0  # what needs no state still works


def _plain_doctor_says_it(cli, line: str) -> None:
    plain = cli("doctor", "--json")
    assert plain.returncode == 1
    (finding,) = [f for f in plain.json()["findings"] if f["id"] == "state-db-unreleased"]
    assert not finding["fixable"] and finding["message"].lower().rstrip(".") in line.lower()


def test_this_release_reads_its_own_data_dir_beside_nothing_else(tmp_path):
    """The check looks only at a new database: one of this release never looks for old files."""
    Database(tmp_path).rows("SELECT 1")
    forget_connections()
    (tmp_path / "snapshots").mkdir()
    assert Database(tmp_path).rows("SELECT COUNT(*) FROM snapshots") == [(0,)]


def test_a_released_database_gets_its_points_counted_and_its_term_rows(tmp_path):
    """Schema 6 from 0.1.0's (5): each manifest's point count kept in its row, each collection's
    keyword statistics one row per term; the totals stay, nothing else changes."""
    path = tmp_path / "state.db"
    with sqlite3.connect(path) as conn:
        for statement in schema.SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("INSERT INTO manifests VALUES ('c', x'6d', 'f', 'k', 'm', 'hash', 'edge', 8, 0, 1)")
        conn.executemany("INSERT INTO manifest_files VALUES ('c', ?, ?, 'h', ?)",
                         [(b"a.md", b"/w/a.md", '[["p1","h1"],["p2","h2"]]'), (b"b.md", b"/w/b.md", '[["p3","h3"]]')])
        conn.execute("""INSERT INTO term_stats VALUES ('c', 1, '{"chunks":3,"length":12,"df":{"zebra":2,"stripe":1}}')""")
        conn.execute(f"PRAGMA user_version = {schema.FIRST_RELEASED}")
    from openclaw_memory.index.bm25 import load_stats
    from openclaw_memory.index.manifest import manifest_chunk_count

    assert manifest_chunk_count(tmp_path, "c") == 3
    assert Database(tmp_path).one("SELECT points FROM manifests") == (3,)  # kept, not summed at each check
    stats = load_stats(tmp_path, "c")
    assert stats is not None and (stats.chunks, stats.length, stats.df) == (3, 12, {"zebra": 2, "stripe": 1})
    assert Database(tmp_path).one("SELECT data FROM term_stats") == ('{"chunks":3,"length":12}',)
    assert _version(path) == schema.SCHEMA_VERSION


def test_a_schema_6_database_keeps_its_history_and_logs_modes_from_then_on(tmp_path):
    """Schema 7 from 6: each version logged keeps the file's mode and owner (versions.mode, uid,
    gid); the rows logged before keep every field, their mode NULL (a restore gives them a new
    file's mode, as before)."""
    from openclaw_memory.history.versions import Entry, FileMode, VersionLog

    path = tmp_path / "state.db"
    _schema_6_with_one_version(path, agent="me")

    log = VersionLog(Database(tmp_path))
    assert log.entries("/w/a.md") == [Entry("v1", 1.5, 3, "remove", "me", None)]
    assert Database(tmp_path).one("SELECT mode, uid, gid FROM versions") == (None, None, None)
    assert log.last_mode("/w/a.md", "a.md") is None
    assert _version(path) == schema.SCHEMA_VERSION
    log.append("/w/a.md", "a.md", Entry("v2", 2.0, 4, "restore", "me"), keep=10, mode=FileMode(0o600, 1000, 1000))
    assert log.last_mode("/w/a.md", "a.md") == FileMode(0o600, 1000, 1000)
    assert [e.version for e in log.entries("/w/a.md")] == ["v1", "v2"]


def test_a_damaged_database_of_an_earlier_schema_is_rebuilt_with_its_history(tmp_path):
    """The rebuild copies the columns the damaged file has: a schema 6 file has no versions.mode,
    and asking for it lost every row of the history."""
    from openclaw_memory.database.repair import rebuild

    path = tmp_path / "state.db"
    _schema_6_with_one_version(path)
    salvage = rebuild(Database(tmp_path))
    assert (salvage.recovered["versions"], salvage.lost) == (1, {})
    assert Database(tmp_path).rows("SELECT version, origin, mode FROM versions") == [("v1", "remove", None)]


def _schema_6_with_one_version(path, agent: str | None = None) -> None:
    """A schema 6 database (0.1.0's and its first migration) holding one version of /w/a.md."""
    with sqlite3.connect(path) as conn:
        for script in (schema.SCHEMA, schema.MIGRATIONS[0]):
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute("INSERT INTO versions (path, display, version, time, size, origin, agent) "
                     "VALUES (?, ?, 'v1', 1.5, 3, 'remove', ?)",
                     (b"/w/a.md", b"a.md", agent.encode() if agent is not None else None))
        conn.execute("PRAGMA user_version = 6")


def test_plain_doctor_checks_the_index_of_a_released_database_it_does_not_migrate(workspace, state_dir, cli):
    """Plain doctor reads a 0.1.0 database (schema 5) as it is: it has no manifests.points, and the
    index's check counts the points from the manifest's files instead (it said the index could not
    be checked: "no such column: points"); the database is left at its schema, every byte kept."""
    write(workspace / "MEMORY.md", "# Memory\n- one\n")
    write(workspace / "memory" / "a.md", "# A\nsee [[MEMORY]]\n")
    assert cli("index").returncode == 0
    data_dir = settings_for(workspace, state_dir).data_dir
    forget_connections()
    with sqlite3.connect(data_dir / "state.db") as conn:  # back to 0.1.0's tables
        conn.execute("ALTER TABLE manifests DROP COLUMN points")
        conn.execute("DROP TABLE term_df")
        for column in ("mode", "uid", "gid", "moved_from", "arrived"):
            conn.execute(f"ALTER TABLE versions DROP COLUMN {column}")
        for column in ("seen_from", "seen_to"):
            conn.execute(f"ALTER TABLE reads DROP COLUMN {column}")
        conn.execute(f"PRAGMA user_version = {schema.FIRST_RELEASED}")
    before = (data_dir / "state.db").read_bytes()

    plain = cli("doctor", "--json")
    assert "Traceback" not in plain.stderr
    assert [f["id"] for f in plain.json()["findings"] if f["id"].startswith("index")] == []
    assert (data_dir / "state.db").read_bytes() == before and _version(data_dir / "state.db") == schema.FIRST_RELEASED

    write(workspace / "memory" / "a.md", "# A\nchanged\n")  # a control: the check does look at the index
    stale = [f for f in cli("doctor", "--json").json()["findings"] if f["id"].startswith("index")]
    assert [(f["id"], f["paths"]) for f in stale] == [("index-stale", ["memory/a.md"])]


@contextmanager
def _links_as_left(workspace, state_dir, note: bytes) -> Iterator[tuple[sqlite3.Connection, bytes]]:
    """The state database opened as a plain SQLite file, to put its link table back as an earlier
    parser left it: a connection, and the ``link_files`` path of the note whose path ends in ``note``."""
    data_dir = settings_for(workspace, state_dir).data_dir
    forget_connections()
    with sqlite3.connect(data_dir / "state.db") as conn:
        (source,) = [p for (p,) in conn.execute("SELECT path FROM link_files") if p.endswith(note)]
        yield conn, source


def test_a_schema_7_database_parses_every_note_anew_for_its_links(workspace, state_dir, cli):
    """Schema 8 from 7: the link table is emptied once (the parser came to read a fence in a block
    quote as code). Kept, an unchanged note's old parse stayed: a link in quoted code was a
    backlink, and `mv --update-links` rewrote the quoted code."""
    write(workspace / "MEMORY.md", "# Memory\n> ```\n> [[heron]]\n> ```\n")
    write(workspace / "memory" / "heron.md", "# Heron\n")
    assert cli("links", "memory/heron.md", "--json").json()["backlinks"] == []
    with _links_as_left(workspace, state_dir, b"/MEMORY.md") as (conn, source):  # the parse an earlier parser left, schema 7
        conn.execute("INSERT INTO links VALUES (?, 0, 3, 'wiki', 'heron', NULL, '[[heron]]')", (source,))
        conn.execute("ALTER TABLE versions DROP COLUMN moved_from")  # (step 9's)
        conn.execute("ALTER TABLE versions DROP COLUMN arrived")  # (step 11's)
        _drop_steps_from_12(conn)
        conn.execute("PRAGMA user_version = 7")
    assert [b["text"] for b in cli("links", "memory/heron.md", "--json").json()["backlinks"]] == []
    assert _version(settings_for(workspace, state_dir).data_dir / "state.db") == schema.SCHEMA_VERSION


def test_a_schema_9_database_parses_every_note_anew_for_its_links(workspace, state_dir, cli):
    """Schema 10 from 9: the link table is emptied once more (the parser came to read an indented
    code block as code and an HTML comment as no text). Kept, an unchanged note's old parse stayed:
    a link in a comment was a backlink, and `mv --update-links` rewrote the comment."""
    write(workspace / "MEMORY.md", "# Memory\n<!-- [[heron]] -->\n")
    write(workspace / "memory" / "heron.md", "# Heron\n")
    assert cli("links", "memory/heron.md", "--json").json()["backlinks"] == []
    with _links_as_left(workspace, state_dir, b"/MEMORY.md") as (conn, source):  # the parse the parser of schema 9 left
        conn.execute("INSERT INTO links VALUES (?, 0, 2, 'wiki', 'heron', NULL, '[[heron]]')", (source,))
        conn.execute("ALTER TABLE versions DROP COLUMN arrived")  # (step 11's)
        _drop_steps_from_12(conn)
        conn.execute("PRAGMA user_version = 9")
    assert [b["text"] for b in cli("links", "memory/heron.md", "--json").json()["backlinks"]] == []
    assert _version(settings_for(workspace, state_dir).data_dir / "state.db") == schema.SCHEMA_VERSION


def test_a_schema_14_database_parses_every_note_anew_for_its_links(workspace, state_dir, cli):
    """Schema 15 from 14: the link table is emptied once more (the parser came to read a reference
    definition as a Markdown link, from the note's folder, and a destination as CommonMark does).
    Kept, an unchanged note's old parse stayed: the definition a mention, rewritten by
    `mv --update-links` to a workspace path that names nothing from the note."""
    write(workspace / "memory" / "people" / "alice.md", "[h]: ../heron.md\n")
    write(workspace / "memory" / "heron.md", "# Heron\n")
    assert [b["form"] for b in cli("links", "memory/heron.md", "--json").json()["backlinks"]] == ["markdown"]
    with _links_as_left(workspace, state_dir, b"/alice.md") as (conn, source):  # the parse the parser of schema 14 left
        conn.execute("UPDATE links SET form = 'mention', text = '../heron.md' WHERE source = ?", (source,))
        _drop_step_16(conn)
        conn.execute("PRAGMA user_version = 14")
    assert [(b["form"], b["text"]) for b in cli("links", "memory/heron.md", "--json").json()["backlinks"]] == [
        ("markdown", "[h]: ../heron.md")]
    assert _version(settings_for(workspace, state_dir).data_dir / "state.db") == schema.SCHEMA_VERSION


def test_a_schema_17_database_parses_every_note_anew_for_its_links(workspace, state_dir, cli):
    """Schema 18 from 17: the link table is emptied once more (the parser came to read a lone-CR
    note by its lines, and link text as CommonMark does). Kept, an unchanged note's old parse stayed:
    the inner link of [see [inner](heron.md) more](other.md) missed (no backlink, none rewritten)."""
    write(workspace / "memory" / "team.md", "The [see [inner](heron.md) more](other.md) page.\n")
    write(workspace / "memory" / "heron.md", "# Heron\n")
    assert [b["text"] for b in cli("links", "memory/heron.md", "--json").json()["backlinks"]] == ["[inner](heron.md)"]
    with _links_as_left(workspace, state_dir, b"/team.md") as (conn, source):  # the parse the parser of schema 17 left
        conn.execute("DELETE FROM links WHERE source = ?", (source,))
        conn.execute("INSERT INTO links VALUES (?, 0, 1, 'markdown', 'other.md', NULL, "
                     "'[see [inner](heron.md) more](other.md)')", (source,))
        conn.execute("PRAGMA user_version = 17")
    assert [b["text"] for b in cli("links", "memory/heron.md", "--json").json()["backlinks"]] == ["[inner](heron.md)"]
    assert _version(settings_for(workspace, state_dir).data_dir / "state.db") == schema.SCHEMA_VERSION


def test_a_schema_8_database_keeps_its_moves_and_names_the_source_of_each_move_from_then_on(tmp_path):
    """Schema 9 from 8: a move's entry names the name it came from (versions.moved_from), so a
    rollback empties that name alone; the moves logged before keep every field, their source NULL."""
    from openclaw_memory.history.versions import Entry, VersionLog

    path = tmp_path / "state.db"
    _schema_6_with_one_version(path, agent="me")
    with sqlite3.connect(path) as conn:
        for script in schema.MIGRATIONS[1:3]:  # 7 and 8
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute("INSERT INTO versions (path, display, version, time, size, origin) VALUES (?, ?, 'v1', 2.5, 3, 'move')",
                     (b"/w/b.md", b"b.md"))
        conn.execute("PRAGMA user_version = 8")

    log = VersionLog(Database(tmp_path))
    assert log.entries("/w/b.md") == [Entry("v1", 2.5, 3, "move", None, None)]
    assert _version(path) == schema.SCHEMA_VERSION
    assert Database(tmp_path).rows("SELECT display, moved_from FROM versions WHERE origin = 'move'") == [(b"b.md", None)]
    log.append("/w/c.md", "c.md", Entry("v1", 3.0, 3, "move", "me"), keep=10, moved_from="b.md")
    assert Database(tmp_path).one("SELECT moved_from FROM versions WHERE display = ?", (b"c.md",)) == (b"b.md",)


def _drop_steps_from_12(conn) -> None:
    """Take back what steps 12 to 14, 16 and 17 added (reads.seen_from, seen_to; versions.mtime_ns, ctime_ns,
    arrived_by; checkpoint.agent; server_identity), for a database put back to an earlier schema."""
    for column in ("seen_from", "seen_to"):
        conn.execute(f"ALTER TABLE reads DROP COLUMN {column}")
    for column in ("mtime_ns", "ctime_ns", "arrived_by"):
        conn.execute(f"ALTER TABLE versions DROP COLUMN {column}")
    _drop_step_16(conn)


def _drop_step_16(conn) -> None:
    """Take back what steps 16 and 17 added (checkpoint.agent; server_identity)."""
    conn.execute("ALTER TABLE checkpoint DROP COLUMN agent")
    conn.execute("DROP TABLE server_identity")


def test_a_schema_12_database_keeps_its_history_and_logs_each_sightings_dates_from_then_on(tmp_path):
    """Schema 13 from 12: a sighting's entry keeps the file's mtime and ctime (versions.mtime_ns, ctime_ns),
    which a rollback to a moment before the history first saw a note reads; the entries logged before
    keep every field, their dates NULL (a rollback cannot tell what such a note held then: it leaves it)."""
    from openclaw_memory.history.versions import Entry, FileMode, VersionLog

    path = _one_version_at(tmp_path, 12)

    log = VersionLog(Database(tmp_path))
    assert log.latest("/w/a.md") is not None
    assert _version(path) == schema.SCHEMA_VERSION
    assert Database(tmp_path).rows("SELECT mtime_ns, ctime_ns FROM versions") == [(None, None)]
    log.append("/w/a.md", "a.md", Entry("v2", 2.0, 4, "external-edit", None), keep=10,
               mode=FileMode(0o600, 1000, 1000, 5, 7))
    assert Database(tmp_path).one("SELECT mode, mtime_ns, ctime_ns FROM versions WHERE version = 'v2'") == (0o600, 5, 7)


def test_a_schema_13_database_keeps_its_history_and_tells_what_a_move_brought_from_then_on(tmp_path):
    """Schema 14 from 13: an entry a move brought names that move (versions.arrived_by), so the entries of
    a note removed from a name stay there when the next note of that name moves on; the entries logged
    before keep every field, arrived_by NULL (moved as before: all of them)."""
    from openclaw_memory.history.versions import Entry, VersionLog

    path = _one_version_at(tmp_path, 13)

    log = VersionLog(Database(tmp_path))
    assert log.latest("/w/a.md") is not None
    assert _version(path) == schema.SCHEMA_VERSION
    assert Database(tmp_path).rows("SELECT arrived_by FROM versions") == [(None,)]
    log.append("/w/a.md", "a.md", Entry("v2", 2.0, 4, "remove", None), keep=10)
    assert log.note_since("/w/a.md") == Database(tmp_path).one("SELECT MAX(id) FROM versions")[0]


def test_a_schema_15_database_keeps_its_pending_checkpoint_for_the_next_prompt_of_any_agent(tmp_path):
    """Schema 16 from 15: a checkpoint section names the agent it is for (checkpoint.agent); a section
    pending from before has none and goes, as before, to the next prompt of any agent."""
    from openclaw_memory.watchdog.checkpoint import append_checkpoint, consume_checkpoint, read_checkpoint

    path = _one_version_at(tmp_path, 15)
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO checkpoint (time, section) VALUES (1.0, '## Old break')")
    append_checkpoint(tmp_path, "## A's break", "a")
    assert _version(path) == schema.SCHEMA_VERSION
    pending = read_checkpoint(tmp_path, "b")
    assert pending is not None and "## Old break" in pending.text and "## A's break" not in pending.text
    assert consume_checkpoint(tmp_path, pending.last, "b") == 1
    assert read_checkpoint(tmp_path, "b") is None
    mine = read_checkpoint(tmp_path, "a")
    assert mine is not None and "## A's break" in mine.text and "## Old break" not in mine.text


def _one_version_at(folder, version: int):
    """A state database of schema ``version`` (from 6, its migrations run) holding one entry."""
    path = folder / "state.db"
    _schema_6_with_one_version(path, agent=None)
    with sqlite3.connect(path) as conn:
        for script in schema.MIGRATIONS[1:version - 5]:  # 7 to ``version``
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {version}")
    return path
