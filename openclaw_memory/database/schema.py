"""The state database's tables, versioned by ``PRAGMA user_version``, with forward migrations.

Paths, names and keys are stored as their bytes (BLOB, see :func:`.connection.enc`): a file name
that is not UTF-8 is kept exactly. Version 5 (:data:`FIRST_RELEASED`) is the schema of 0.1.0, the
first release; versions 1 to 4, and the files kept in the data dir before the database, were
development builds' and no release reads them (:func:`refuse_unreleased` says what to do). A newer
database than this release knows is refused, never written (a newer openclaw-memory may have
changed what a table means).
"""

from __future__ import annotations

import functools
import os
import sqlite3

from ..errors import StateDamaged, UnreleasedLayout

FIRST_RELEASED = 5
SCHEMA = """
    CREATE TABLE objects (            -- each stored version's bytes, zlib-compressed, in parts
        version TEXT PRIMARY KEY,     -- xxh3_128 of the uncompressed bytes
        size INTEGER NOT NULL,        -- uncompressed
        stored INTEGER NOT NULL,      -- compressed bytes, what the [history] max_bytes bounds
        used INTEGER NOT NULL         -- last use, ns: eviction drops the least recently used
    );
    CREATE TABLE object_parts (
        version TEXT NOT NULL,
        seq INTEGER NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (version, seq)
    ) WITHOUT ROWID;
    CREATE TABLE versions (           -- every version of a memory file seen, oldest first per path
        id INTEGER PRIMARY KEY,
        path BLOB NOT NULL,           -- absolute
        display BLOB NOT NULL,        -- as the user names it
        version TEXT NOT NULL,
        time REAL NOT NULL,
        size INTEGER NOT NULL,
        origin TEXT NOT NULL,
        agent BLOB,                   -- who wrote or restored it (NULL: an outside edit, a repair)
        session BLOB,                 -- the agent's session that did (NULL: the plain command line)
        previous TEXT                 -- the path's version logged before this one (NULL: its first)
    );
    CREATE INDEX versions_by_path ON versions (path, id);
    CREATE INDEX versions_by_version ON versions (version);
    CREATE INDEX versions_by_time ON versions (time);  -- `log`: the newest page of the whole workspace
    CREATE TABLE reads (              -- what each agent (and session) last read or wrote
        agent BLOB NOT NULL,
        session BLOB NOT NULL,        -- empty for the plain command line
        path BLOB NOT NULL,
        version TEXT NOT NULL,
        size INTEGER NOT NULL,
        time REAL NOT NULL,
        how TEXT NOT NULL,
        PRIMARY KEY (agent, session, path)
    ) WITHOUT ROWID;
    CREATE TABLE idempotency (        -- a write's key and its first result, for 24 hours
        key BLOB PRIMARY KEY,
        time REAL NOT NULL,
        result TEXT NOT NULL,         -- the WriteResult's JSON shape
        binding TEXT                  -- what the key stands for (JSON)
    ) WITHOUT ROWID;
    CREATE INDEX idempotency_by_time ON idempotency (time);
    CREATE TABLE collections (        -- the index's collection names, stable across extra-path changes
        name TEXT PRIMARY KEY,
        agent BLOB NOT NULL,
        kind TEXT NOT NULL,           -- root | dir | custom
        key BLOB NOT NULL,            -- the folder (or extra path) it stands for
        n INTEGER                     -- a custom collection's number
    );
    CREATE TABLE observations (       -- the one change rule's memory: a file's stat when its bytes had `hash`
        path BLOB PRIMARY KEY,        -- absolute
        mode INTEGER NOT NULL,
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        racy INTEGER NOT NULL,        -- seen within the timestamp granularity: not trusted, hashed again
        hash TEXT NOT NULL            -- xxh3_128 of the bytes
    ) WITHOUT ROWID;
    CREATE TABLE manifests (          -- what the index holds, per collection
        collection TEXT PRIMARY KEY,
        agent BLOB NOT NULL,
        fingerprint TEXT NOT NULL,
        settings_key TEXT NOT NULL,
        model TEXT NOT NULL,
        embed_backend TEXT NOT NULL,
        store_backend TEXT NOT NULL,
        dim INTEGER NOT NULL,
        indexed_at REAL NOT NULL,
        serial INTEGER NOT NULL       -- changes at every save: a search reloads what it caches
    );
    CREATE TABLE manifest_files (
        collection TEXT NOT NULL,
        path BLOB NOT NULL,           -- as the collection names it
        abs_path BLOB NOT NULL,       -- its observation
        hash TEXT NOT NULL,           -- the content indexed
        chunks TEXT NOT NULL,         -- JSON: [[point id, chunk hash], ...]
        PRIMARY KEY (collection, path)
    ) WITHOUT ROWID;
    CREATE TABLE term_stats (         -- a collection's keyword statistics (index.bm25)
        collection TEXT PRIMARY KEY,
        serial INTEGER NOT NULL,
        data TEXT NOT NULL            -- JSON
    );
    CREATE TABLE index_dirty (        -- a shard written past its manifest: the next run reconciles them
        collection TEXT PRIMARY KEY,
        pid INTEGER NOT NULL
    );
    CREATE TABLE snapshots (          -- the watchdog's snapshots, oldest first (by seq): the last is the baseline
        label TEXT PRIMARY KEY,
        seq INTEGER NOT NULL UNIQUE,
        taken_at TEXT NOT NULL,
        count INTEGER NOT NULL,
        body BLOB NOT NULL            -- the columnar table of watchdog.store, with its checksum
    );
    CREATE TABLE checkpoint (         -- what changed while the agent was away, one section per row
        id INTEGER PRIMARY KEY,
        time REAL NOT NULL,
        section TEXT NOT NULL,
        consumed REAL                 -- when `prompt` showed it: kept, never deleted
    );
    CREATE TABLE probes (             -- a shard as a process of ours last closed it: found so, it is not probed again
        collection TEXT PRIMARY KEY,
        key TEXT NOT NULL,            -- xxh3 of the stat of every file of the shard
        count INTEGER NOT NULL        -- its points then
    );
    CREATE TABLE migration (          -- `index migrate` under way: collections copied and verified so far
        key TEXT NOT NULL,            -- "<source> -> <target>": another migration's rows are dropped
        collection TEXT NOT NULL,
        points INTEGER NOT NULL,
        PRIMARY KEY (key, collection)
    ) WITHOUT ROWID;
    CREATE TABLE journal (            -- the doctor's repair in progress: its intent before each step
        id INTEGER PRIMARY KEY CHECK (id = 1),
        record TEXT NOT NULL          -- JSON
    );
    CREATE TABLE snapshot_files (     -- what each watchdog snapshot kept of each memory file
        label TEXT NOT NULL,          -- the snapshot (snapshots.label)
        path BLOB NOT NULL,           -- workspace-relative
        version TEXT NOT NULL,        -- objects.version (shared with the history, never evicted while named)
        size INTEGER NOT NULL,
        PRIMARY KEY (label, path)
    ) WITHOUT ROWID;
    CREATE INDEX snapshot_files_version ON snapshot_files (version);
    CREATE TABLE link_files (         -- a memory file whose links `links` holds (links.table), as last parsed
        path BLOB PRIMARY KEY,        -- absolute
        mode INTEGER NOT NULL,        -- its stat when the bytes parsed were hashed (the change rule's)
        size INTEGER NOT NULL,
        mtime_ns INTEGER NOT NULL,
        ctime_ns INTEGER NOT NULL,
        inode INTEGER NOT NULL,
        racy INTEGER NOT NULL,
        hash TEXT NOT NULL,           -- xxh3_128 of the bytes parsed
        lines INTEGER NOT NULL,
        headings TEXT NOT NULL        -- JSON: its headings' text
    ) WITHOUT ROWID;
    CREATE TABLE links (              -- each link a memory file holds, as written (resolved when asked)
        source BLOB NOT NULL,         -- link_files.path
        seq INTEGER NOT NULL,
        line INTEGER NOT NULL,
        form TEXT NOT NULL,           -- wiki | markdown | citation | mention
        target TEXT NOT NULL,
        fragment TEXT,                -- a heading or a line range
        text TEXT NOT NULL,
        PRIMARY KEY (source, seq)
    ) WITHOUT ROWID;
    CREATE TABLE text_checks (        -- what a reader of a file's bytes found of them as text (observations.TextCheck)
        path BLOB PRIMARY KEY,        -- absolute, as observations.path
        hash TEXT NOT NULL,           -- xxh3_128 of the bytes checked: it holds while observations.hash is this
        bad INTEGER,                  -- offset of the first invalid UTF-8 sequence (NULL: none)
        nul INTEGER                   -- offset of the first NUL byte (NULL: none)
    ) WITHOUT ROWID;
    CREATE TABLE file_ops (           -- a move or removal of a memory file in progress: its intent (history.fileops)
        id INTEGER PRIMARY KEY CHECK (id = 1),
        record TEXT NOT NULL          -- JSON
    );
    CREATE TABLE rollback_ops (       -- a rollback of every memory file in progress: its intent, every step named (rollback.journal)
        id INTEGER PRIMARY KEY CHECK (id = 1),
        record TEXT NOT NULL          -- JSON (the versions its steps name are pinned: history.objects)
    );
"""
# MIGRATIONS[i] moves a database from version FIRST_RELEASED + i to the next (SQL statements): a
# release that changes a table appends its step and never edits one already released.
MIGRATIONS: tuple[str, ...] = (
    # 6: costs that do not grow with the memory. A collection's point count is kept in its manifest
    # row (manifests.points, kept by the save; NULL: not known, summed once), no longer summed over
    # every file's chunk list by each shard check; its keyword statistics keep one row per term
    # (term_df), so a sync that wrote a few chunks updates their terms' rows instead of saving the
    # whole vocabulary, and a search reads the document frequency of its query's terms alone
    # (term_stats.data keeps the chunks and the total length).
    """
    ALTER TABLE manifests ADD COLUMN points INTEGER;
    UPDATE manifests SET points = (SELECT COALESCE(SUM(json_array_length(f.chunks)), 0) FROM manifest_files f
                                   WHERE f.collection = manifests.collection);
    CREATE TABLE term_df (            -- a collection's document frequency per keyword term (index.bm25)
        collection TEXT NOT NULL,
        term TEXT NOT NULL,
        df INTEGER NOT NULL,          -- chunks holding the term, > 0
        PRIMARY KEY (collection, term)
    ) WITHOUT ROWID;
    INSERT INTO term_df SELECT t.collection, j.key, j.value FROM term_stats t, json_each(t.data, '$.df') j
        WHERE json_valid(t.data) AND json_type(t.data, '$.df') = 'object' AND j.value > 0;
    UPDATE term_stats SET data = json_remove(data, '$.df') WHERE json_valid(data)
    """,
    # 7: each version logged keeps the file's permission bits and owner as seen then (history.versions.
    # FileMode), so a note brought back where none is (a removed one restored, a rollback's bring-back)
    # gets them again, not the default mode and the caller's owner. NULL: logged before this step, or
    # without a look at the file (the default mode, as before).
    """
    ALTER TABLE versions ADD COLUMN mode INTEGER;
    ALTER TABLE versions ADD COLUMN uid INTEGER;
    ALTER TABLE versions ADD COLUMN gid INTEGER
    """,
    # 8: the link parser reads a fence inside a block quote as code and [[name\|label]] as a link to
    # name (links.parse). The link table is a cache parsed again only when a note's bytes change, so
    # an unchanged note kept the old parse (a quoted fence's links listed as backlinks, rewritten by
    # `mv --update-links`): emptied, every note is parsed anew at the next look. A later change of
    # what the parser finds appends the same step.
    """
    DELETE FROM links;
    DELETE FROM link_files
    """,
    # 9: a move's entry names the name it came from (versions.moved_from, as ``display`` names one), so a
    # rollback empties that name alone: it emptied every name of the history holding the moved bytes,
    # and a copy of the note under a second name was taken for moved too. NULL: not a move, or a move
    # logged before this step (a rollback then empties every name holding its bytes, as before).
    """
    ALTER TABLE versions ADD COLUMN moved_from BLOB
    """,
    # 10: the link parser reads an indented code block as code and an HTML comment (<!-- ... -->,
    # over lines too) as no text (links.visible): an unchanged note's old parse listed their links
    # as backlinks, and `mv --update-links` rewrote the code example or the comment. As step 8 did.
    """
    DELETE FROM links;
    DELETE FROM link_files
    """,
    # 11: an entry `import` logged keeps the moment it arrived here (versions.arrived) beside its own time,
    # the exporting side's: a rollback to a moment before the import took the archive's versions for what
    # this workspace held then (a note it brought kept, another workspace's version put back over the
    # one here). NULL: logged here when it was made (its time is when it arrived), or before this step.
    """
    ALTER TABLE versions ADD COLUMN arrived REAL
    """,
    # 12: a read record names the lines the read showed (reads.seen_from, seen_to: history.states.Seen),
    # so a replace of a note the session read only a window of is refused (the lines it never saw were
    # dropped without a word). NULL seen_from: the whole file (a write, or a read recorded before this
    # step, as before); NULL seen_to: to the file's end.
    """
    ALTER TABLE reads ADD COLUMN seen_from INTEGER;
    ALTER TABLE reads ADD COLUMN seen_to INTEGER
    """,
    # 13: a sighting's entry keeps the file's mtime and ctime as seen then (versions.FileMode), so a rollback
    # to a moment before the history first saw a note tells what it held then: bytes unchanged since before
    # the moment are put back, where it archived the hand-written note (its first entry came after the
    # moment) and a note the agent changed, removed or moved was lost to the workspace. NULL: logged
    # before this step, or without a look at the file (a rollback then cannot tell: it leaves such a note).
    """
    ALTER TABLE versions ADD COLUMN mtime_ns INTEGER;
    ALTER TABLE versions ADD COLUMN ctime_ns INTEGER
    """,
    # 14: an entry a move brought to its path names that move (versions.arrived_by: an id above every entry
    # logged before it), so the entries of a note removed from a name stay there when the next note to
    # take the name moves on: they went with it, and `restore NAME --last`, which `rm` and `mv --force`
    # print, found no removal. NULL: logged at its path, or moved before this step.
    """
    ALTER TABLE versions ADD COLUMN arrived_by INTEGER
    """,
    # 15: the link parser reads a reference definition ([h]: ../projects/heron.md) as a Markdown link,
    # from the note's folder, and a destination as CommonMark does (balanced parentheses, backslash
    # escapes, entities): an unchanged note's old parse kept the definition a mention, which
    # `mv --update-links` rewrote to a workspace path naming nothing from the note. As step 8 did.
    """
    DELETE FROM links;
    DELETE FROM link_files
    """,
    # 16: a checkpoint section names the agent it is for (checkpoint.agent: the one whose `watchdog heartbeat`
    # or `doctor --fix` wrote it), so the prompt of that agent alone shows and consumes it: the data dir is
    # the workspace's, and another agent sharing the workspace took the news the heartbeat promised to the
    # one that ran it. NULL: written before this step, shown to the next prompt of any agent (as before).
    """
    ALTER TABLE checkpoint ADD COLUMN agent TEXT
    """,
    # 17: the index's identity on a Qdrant server (index.store.server_config.index_identity), made once at
    # random: it is part of the names of this data dir's collections (or tenants) there and recorded on each,
    # so two data dirs whose workspace folders have the same path (two machines, two containers) never
    # read or write each other's points, as they did under a namespace made of that path alone.
    """
    CREATE TABLE server_identity (    -- this data dir's index on a Qdrant server: who it is there
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value TEXT NOT NULL           -- 32 lowercase hex digits
    )
    """,
    # 18: the link parser reads a note whose lines end with a lone CR by its lines (a ~~~ fence or an
    # indented block there is code), and link text as CommonMark does (no link inside a link's text, an
    # escaped bracket is text): an unchanged note's old parse listed such code and text as backlinks,
    # which `mv --update-links` rewrote, and missed an inner link. As step 8 did.
    """
    DELETE FROM links;
    DELETE FROM link_files
    """,
)
SCHEMA_VERSION = FIRST_RELEASED + len(MIGRATIONS)
# What development builds kept in the data dir before the state database.
UNRELEASED_FILES = ("history", "idempotency", "index/collections.json", "index/manifests", "index/probes",
                    "index/migrate-progress.json", "snapshots", "checkpoint.md", "doctor-journal.json")


def create(conn: sqlite3.Connection) -> None:
    """The tables of this release in an empty database (no transaction of its own)."""
    for script in (SCHEMA, *MIGRATIONS):
        _run(conn, script)


# Every column of every table a database holds: (table, column) rows.
COLUMNS_SQL = "SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'"


def schema_damage(version: int, columns: list[tuple[str, str]]) -> str | None:
    """What is wrong with a database's schema, given its ``PRAGMA user_version`` and its
    :data:`COLUMNS_SQL` rows, or None. A version no release writes (below 0), a new database's
    0 over tables, a table or column the version's schema has and the file lacks (dropped by
    hand, a bad restore: every command that reads it would fail with "no such table"), or one a
    later version added."""
    if version < 0:
        return f"its schema version is {version}, which no openclaw-memory writes"
    if version == 0:
        return "its schema version is 0 (a database never used) but it holds tables" if columns else None
    if version < FIRST_RELEASED or version > FIRST_RELEASED + len(MIGRATIONS):
        return None  # a development build's, or a newer release's: their own findings say it
    expected, latest = _columns_at(version), _columns_at(FIRST_RELEASED + len(MIGRATIONS))
    found = set(columns)
    tables = {table for table, _ in found}
    missing = sorted({f"table {t}" if t not in tables else f"column {t}.{c}" for t, c in expected if (t, c) not in found})
    if missing:
        return f"{', '.join(missing[:5])}{f' (and {len(missing) - 5} more)' if len(missing) > 5 else ''} missing"
    # What a later step adds, already there: the version was lowered (by hand, a bad restore), and
    # bringing the file forward would fail at that step ("duplicate column name: mode").
    later = sorted(f"{t}.{c}" for t, c in (latest - expected) & found)
    if later:
        return (f"its schema version is {version} but it holds what a later version added "
                f"({', '.join(later[:5])}{' ...' if len(later) > 5 else ''})")
    return None


def _columns_at(version: int) -> set[tuple[str, str]]:
    """Every (table, column) of a database of this release's schema at ``version``."""
    return {(table, column) for table, columns in declared(version).items() for column, _, _ in columns}


def declared(version: int | None = None) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    """Per table of this release's schema at ``version`` (the latest when None): (column,
    declared type, NOT NULL), as SQLite reads the scripts."""
    steps = len(MIGRATIONS) if version is None else version - FIRST_RELEASED
    return _declared_by((SCHEMA, *MIGRATIONS[:steps]))


@functools.cache  # keyed by the scripts themselves: a test adds a toy next version
def _declared_by(scripts: tuple[str, ...]) -> dict[str, tuple[tuple[str, str, bool], ...]]:
    conn = sqlite3.connect(":memory:")
    try:
        for script in scripts:
            _run(conn, script)
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: tuple((c, kind, bool(notnull)) for _, c, kind, notnull, _, _ in conn.execute(f"PRAGMA table_info({t})"))
                for t in tables}
    finally:
        conn.close()


def _damaged(conn: sqlite3.Connection, why: str | None) -> StateDamaged:
    return StateDamaged(f"the state database ({_data_dir(conn)}/state.db) is damaged ({why}); `openclaw-memory doctor "
                        "--fix` sets it aside and makes a new one with every row it still holds")


def create_or_migrate(conn: sqlite3.Connection) -> None:
    """Bring the database to this release's version."""
    latest = FIRST_RELEASED + len(MIGRATIONS)  # read at each call: a test adds a toy next version
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version < 0 or (version == 0 and conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]):
        # Neither is a database this product wrote as it is: migrating it would fail half-way
        # ("table objects already exists") or run the wrong step.
        raise _damaged(conn, schema_damage(version, conn.execute(COLUMNS_SQL).fetchall()))
    if version > latest:
        raise StateDamaged(
            f"the state database was written by a newer openclaw-memory (schema {version}, this release knows "
            f"{latest}); upgrade openclaw-memory, or move the state dir's state.db aside"
        )
    if version == latest:
        return
    refuse_unreleased(_data_dir(conn), version)
    why = schema_damage(version, conn.execute(COLUMNS_SQL).fetchall())  # (a step that cannot apply: said before it fails)
    if why is not None:
        raise _damaged(conn, why)
    conn.execute("BEGIN IMMEDIATE")  # every step in one transaction: one sync to disk, all or nothing
    try:
        # Looked at again inside the transaction: another process may have migrated meanwhile.
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            _run(conn, SCHEMA)
            version = FIRST_RELEASED
        while version < latest:
            _run(conn, MIGRATIONS[version - FIRST_RELEASED])
            version += 1
        conn.execute(f"PRAGMA user_version = {version}")
    except BaseException:
        conn.rollback()
        raise
    conn.execute("COMMIT")


def refuse_unreleased(data_dir: str, version: int) -> None:
    """Raise :class:`UnreleasedLayout` when the data dir holds a development build's state: a
    database of a version before the first release, or, with none yet, the files kept before it."""
    if 0 < version < FIRST_RELEASED:
        what = f"its state database has schema {version}"
    else:
        found = [name for name in UNRELEASED_FILES if version == 0 and os.path.lexists(os.path.join(data_dir, name))]
        if not found:
            return
        what = f"it holds {', '.join(found)}"
    raise UnreleasedLayout(
        f"the data dir {data_dir} was written by a development build of openclaw-memory ({what}), which no "
        "release reads: move that folder aside (nothing in it is deleted), then run `openclaw-memory index` to "
        "build the index anew; the history starts fresh"
    )


def _data_dir(conn: sqlite3.Connection) -> str:
    # As bytes: SQLite gives the file's name as it was opened, and a state dir whose path is not
    # UTF-8 (a home folder /home/jos\xe9) failed to decode, every write refused (review).
    saved = conn.text_factory
    conn.text_factory = bytes
    try:
        rows = conn.execute("PRAGMA database_list").fetchall()
    finally:
        conn.text_factory = saved
    return os.path.dirname(os.fsdecode(next(row[2] for row in rows if row[1] == b"main")))


def _run(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)
