"""A state database cut short where a page of its schema was (``sqlite_schema``, the b-tree on page 1
that says which page holds each table): every table was unreadable, though their own pages were all
there, and ``doctor --fix`` recovered nothing ("the new one holds nothing"; SQLite's ``.recover`` fails
too). The lost schema pages are made again from this release's schema, made the way the product makes
a database (same page size): its tables are on the same pages, its schema on the same pages with the
same bytes, which the file's surviving schema pages are checked against first; a page the cut leaves
only part of (the cut not on a page boundary) counts as gone, as one wholly cut off does."""

from __future__ import annotations

import base64
import os
import random
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from conftest import write


def _data_dir(sd: Path) -> Path:
    (found,) = (sd / "openclaw-memory" / "workspaces").iterdir()
    return found


def _schema_pages(db: Path) -> list[int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [n for (n,) in conn.execute("SELECT pageno FROM dbstat WHERE name = 'sqlite_schema' ORDER BY pageno")]
    finally:
        conn.close()


def _versions(cli_process, path: str) -> list[str]:
    logged = cli_process("history", path, "--json")
    assert logged.returncode == 0, logged.stderr
    return [v["version"] for v in logged.json()["versions"]]


def test_a_cut_that_takes_a_schema_page_keeps_the_rows_on_the_pages_left(workspace, state_dir, cli_process):
    write(workspace / "MEMORY.md", "# M\n- alpha\n")
    for args in (("read", "MEMORY.md"), ("write", "MEMORY.md", "--append", "- beta", "--no-index")):
        done = cli_process(*args)
        assert done.returncode == 0, done.stderr
    before = _versions(cli_process, "MEMORY.md")
    assert len(before) == 2
    db = _data_dir(state_dir) / "state.db"
    assert not Path(f"{db}-wal").exists()
    size, page_size = os.path.getsize(db), 4096
    last_schema_page = max(_schema_pages(db))
    assert last_schema_page > 1
    os.truncate(db, (last_schema_page - 1) * page_size)  # that schema page and every one after it gone
    assert os.path.getsize(db) < size

    fixed = cli_process("doctor", "--fix", "--json")
    assert "Traceback" not in fixed.stderr, fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "done", repair
    assert "the new one holds nothing" not in repair["detail"], repair
    assert f"page(s) {last_schema_page}) were gone" in repair["detail"], repair
    assert "cut short" in repair["detail"], repair
    assert _versions(cli_process, "MEMORY.md") == before  # both versions, their bytes read back
    shown = cli_process("restore", "MEMORY.md", "--version", before[-1], "--dry-run")
    assert "Traceback" not in shown.stderr, shown.stderr
    assert list((_data_dir(state_dir) / "damaged").glob("*/state.db"))  # the cut file kept


def test_a_schema_of_its_own_is_not_made_again(workspace, state_dir, cli_process):
    """A database whose schema changed (a table of its own added) is not given this release's: its
    surviving schema pages differ, and which page holds which table cannot be said."""
    write(workspace / "MEMORY.md", "# M\n- alpha\n")
    assert cli_process("read", "MEMORY.md").returncode == 0
    db = _data_dir(state_dir) / "state.db"
    conn = sqlite3.connect(db)
    for i in range(40):  # schema rows enough for leaves of their own: page 1 names other pages now
        conn.execute(f"CREATE TABLE mine_{i} (a, b, c, {', '.join(f'padding_column_{j}' for j in range(12))})")
    conn.commit()
    conn.close()
    last_schema_page = max(_schema_pages(db))
    os.truncate(db, (last_schema_page - 1) * 4096)

    fixed = cli_process("doctor", "--fix", "--json")
    assert "Traceback" not in fixed.stderr, fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert "were gone and every table with them: made again" not in repair["detail"], repair
    assert list((_data_dir(state_dir) / "damaged").glob("*/state.db"))  # the cut file kept, for whoever can read it


def _query(db: Path, sql: str, *args: object) -> object:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, args).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize(("through", "into"), [("schema", 0), ("schema", 7), ("schema", 2048), ("snapshots", 7),
                                               ("snapshots", 2048)],
                         ids=["on-a-page-boundary", "a-few-bytes-into-the-schema-page", "half-the-schema-page",
                              "a-few-bytes-into-a-root-page", "half-a-root-page"])
def test_a_cut_part_way_into_a_page_keeps_the_rows_on_the_whole_pages(workspace, state_dir, cli_process, through, into):
    """A cut that leaves a page half there (a table's root, or the schema page itself) recovered nothing:
    the half page, read as the padding left it, was taken for a page of another schema ("a record of
    no values" in a root, bytes unlike ours in a schema page) and the schema was not made again."""
    write(workspace / "MEMORY.md", "# M\n")
    notes = [f"memory/n{i}.md" for i in range(3)]
    for note in notes:
        write(workspace / note, f"note {note}\n")
        for args in (("read", note), ("write", note, "--append", f"more {note}", "--no-index")):
            done = cli_process(*args)
            assert done.returncode == 0, done.stderr
    before = {note: _versions(cli_process, note) for note in notes}
    assert all(len(v) == 2 for v in before.values()), before
    for args in (("index",), ("watchdog", "snapshot")):  # rows in the roots between the history and the cut
        done = cli_process(*args)
        assert done.returncode == 0, done.stderr
    db = _data_dir(state_dir) / "state.db"
    assert not Path(f"{db}-wal").exists()
    page_size = 4096
    last_schema_page = max(_schema_pages(db))
    if through == "schema":
        cut_page = last_schema_page
    else:  # a root page holding a row (its cell at the page's end), before the last schema page
        cut_page = _query(db, "SELECT rootpage FROM sqlite_master WHERE name = ?", through)
        assert _query(db, f"SELECT COUNT(*) FROM {through}") and cut_page < last_schema_page  # noqa: S608
    history = _query(db, "SELECT max(pageno) FROM dbstat WHERE name IN ('objects', 'object_parts', 'versions')")
    assert history < cut_page  # the history lies on whole pages
    os.truncate(db, (cut_page - 1) * page_size + into)

    fixed = cli_process("doctor", "--fix", "--json")
    assert "Traceback" not in fixed.stderr, fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "done", repair
    assert "the new one holds nothing" not in repair["detail"], repair
    assert "were gone and every table with them: made again" in repair["detail"], repair
    for note in notes:
        assert _versions(cli_process, note) == before[note]
        origins = [v["origin"] for v in cli_process("history", note, "--json").json()["versions"]]
        assert origins[0] == "agent-write", origins  # still the agent's write, not an outside edit
    logged = cli_process("log")
    assert logged.stdout.count("agent-write") == len(notes), logged.stdout


def _rows(db: Path) -> dict[int, tuple]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0]: row for row in conn.execute("SELECT * FROM versions ORDER BY id")}
    finally:
        conn.close()


def _reads(db: Path, version_id: int) -> bool:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return bool(conn.execute("SELECT 1 FROM versions WHERE id = ?", (version_id,)).fetchall())
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


@pytest.mark.parametrize("into_cells", [False, True], ids=["on-the-page-boundary", "part-way-into-its-rows"])
def test_a_cut_into_the_last_history_page_keeps_its_whole_pages_rows_and_invents_none(
        workspace, state_dir, tmp_path, cli, cli_process, into_cells):
    """A cut part way into the last leaf of ``versions`` (the reviewer's: half way into it) gave a
    history row made of the zeros where the rest of the page was (a version hash ending in NULs, a time of 1970, size 0, the origin and agent NULs), shown by
    ``history`` and left there by doctor: SQLite read the missing part as zeros, and the row copy took
    what the cell pointers left led to for rows. The page is gone now, as a page cut off whole is.
    And the last row before the page that does not read was lost with it, on a cut on the boundary too:
    its lookup (``rowid BETWEEN n AND n``) stepped on into the bad page."""
    from openclaw_memory.database import forget_connections

    rng = random.Random("half a page")
    write(workspace / "MEMORY.md", "# M\n")
    notes = [f"memory/daily{i}.md" for i in range(6)]
    for i in range(60):
        done = cli("write", notes[i % 6], "--append", f"entry {i} {base64.b64encode(rng.randbytes(300)).decode()}",
                   "--no-index")
        assert done.returncode == 0, done.stderr
    forget_connections()  # everything in the file
    db = _data_dir(state_dir) / "state.db"
    assert not Path(f"{db}-wal").exists()
    page_size, size = 4096, os.path.getsize(db)
    before = _rows(db)
    last_leaf = _query(db, "SELECT max(pageno) FROM dbstat WHERE name = 'versions' AND pagetype = 'leaf'")
    assert _query(db, "SELECT max(pageno) FROM dbstat WHERE name = 'versions'") == last_leaf
    assert 1 < _query(db, "SELECT ncell FROM dbstat WHERE pageno = ?", last_leaf) < 60  # rows on whole pages too
    whole = tmp_path / "whole.db"  # the rows on the pages before the last leaf: each looked up alone
    shutil.copyfile(db, whole)
    os.truncate(whole, (last_leaf - 1) * page_size)
    os.truncate(whole, size)
    kept = [i for i in before if _reads(whole, i)]
    assert 0 < len(kept) < len(before) and kept == list(range(1, len(kept) + 1))
    with open(db, "rb") as fh:  # where its rows start (they fill the page from its end): 40 bytes into the first,
        fh.seek((last_leaf - 1) * page_size + 5)  # past its record's header (the types of its values), into its path
        into = int.from_bytes(fh.read(2), "big") + 40 if into_cells else 0
    os.truncate(db, (last_leaf - 1) * page_size + into)

    fixed = cli_process("doctor", "--fix", "--json")
    assert "Traceback" not in fixed.stderr, fixed.stderr
    (repair,) = [r for r in fixed.json()["repairs"] if r["id"] == "state-db-damaged"]
    assert repair["status"] == "done", repair
    assert _rows(db) == {i: before[i] for i in kept}  # those rows as they were, and no other

    for note in notes:
        logged = cli_process("history", note, "--json")
        assert logged.returncode == 0, logged.stderr
        assert "\\u0000" not in logged.stdout and "1970-01-01" not in logged.stdout, logged.stdout
    after = _rows(db)  # the rows kept, then the files' current versions sighted anew (their rows were lost)
    assert {i: r for i, r in after.items() if i <= kept[-1]} == {i: before[i] for i in kept}
    for row in (r for i, r in after.items() if i > kept[-1]):
        assert re.fullmatch("[0-9a-f]{32}", row[3]) and row[4] > 0 and row[5] > 0, row
    plain = cli_process("doctor")
    assert "No problems found." in plain.stdout, plain.stdout + plain.stderr


@pytest.mark.parametrize("short", [1, 20, 60])
def test_a_file_cut_a_few_bytes_short_is_found_damaged(workspace, state_dir, cli_process, short):
    """A state.db cut 1 to ~120 bytes short passed SQLite's quick_check: doctor said "No problems
    found" while a history row read back altered (a time, an agent `ma\\x00\\x00`, a hash of NULs dated
    1970). A file no whole number of its pages is damaged; --fix then keeps the whole pages' rows."""
    write(workspace / "MEMORY.md", "# Memory\n")
    for i in range(12):  # each its own process: the database's pages are in the file, not the WAL
        assert cli_process("write", f"memory/n{i}.md", "--append", f"note {i} with some text to make rows", "--no-index").returncode == 0
    db = _data_dir(state_dir) / "state.db"
    os.truncate(db, db.stat().st_size - short)
    found = cli_process("doctor", "--json")
    assert [f["id"] for f in found.json()["findings"]] == ["state-db-damaged"], found.stdout
    assert "no whole number of its 4096-byte pages" in found.stdout
    assert cli_process("doctor", "--fix").returncode == 0
    assert cli_process("doctor", "--json").json()["findings"] == []
    for i in range(12):
        logged = cli_process("history", f"memory/n{i}.md", "--json")
        assert "\\u0000" not in logged.stdout and "1970-" not in logged.stdout, logged.stdout
