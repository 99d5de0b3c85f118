"""A state database cut short where a page of its schema was (``sqlite_schema``, the b-tree on page 1
that says which page holds each table): every table was unreadable, though their own pages were all
there, and ``doctor --fix`` recovered nothing ("the new one holds nothing"; SQLite's ``.recover`` fails
too). The lost schema pages are made again from this release's schema, made the way the product makes
a database (same page size): its tables are on the same pages, its schema on the same pages with the
same bytes, which the file's surviving schema pages are checked against first."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

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
