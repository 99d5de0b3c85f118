"""What ``doctor`` does with the state database: SQLite's integrity check, and for a damaged file
a new database with everything the damaged one still yields.

The damaged file (with its ``-wal`` and ``-shm``) is set aside under ``<data dir>/damaged/<stamp>/``,
never deleted, and only once the new database is complete: it is made in a scratch folder and
renamed over the damaged one, a durable record (:mod:`.rebuilding`) naming each step, so a kill
at any point leaves either the damaged files in place or a rebuild the next ``doctor --fix`` finishes. What it still holds is read from a scratch copy of the file and its WAL (so the set-aside
files stay as they were; SQLite rebuilds the WAL's index from what the WAL really holds), in turn:

1. the copy as SQLite reads it, its 16-byte header ("SQLite format 3\0") restored when that is
   all that was garbled;
2. when rows could not be read that way, SQLite's own recovery (the ``sqlite3`` shell's ``.recover``,
   which walks the pages), when the shell is installed;
3. in any case, past a page that cannot be read, the rest of a table by rowid ranges.

Every row that reads is copied, table by table, in primary key order, once (a row read two ways
is kept once); what could not be read is counted and said. What can be rebuilt from the files is
rebuilt by using the product: a version log starts again at the next sighting, an agent reads a
file again before writing it, `state` hashes the files again.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import stat
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import xxhash

from .. import faults
from ..errors import MemoryToolError
from ..fsutil.setaside import DAMAGED_DIR, not_a_folder, place_for, set_aside
from .checked import LastCheck, Sighting
from .companions import SQLITE_MAGIC, wal_damage
from .connection import DB_NAME, SQLITE_HEADER, Database, emptied_words, forget_connections, peek, wal_is_empty
from .rebuilding import SCRATCH_PREFIX, Rebuilding, marker_path, read_marker, write_marker
from .rowtypes import fitter, mistyped, mistyped_sql
from .schema import COLUMNS_SQL, SCHEMA_VERSION, create, schema_damage

# Copied in this order; the key is what a damaged page is skipped by.
# The index's tables (manifests, statistics, observations) are not copied: a partly readable
# manifest would hide points from the reconcile. They are rebuilt from the files and the shards
# (the next `index` reads every file again and takes its vectors from the shard, embedding nothing).
_TABLES = {
    "objects": "version", "object_parts": "version, seq", "versions": "id", "reads": "agent, session, path",
    "idempotency": "key", "collections": "name", "snapshots": "seq", "snapshot_files": "label, path", "checkpoint": "id",
    "journal": "id", "file_ops": "id", "rollback_ops": "id",
    # The index's identity on a Qdrant server: lost, a new one named new collections, and the old ones
    # (every note's text) stayed on the server, named by nothing.
    "server_identity": "id",
}
_MISSES = 4096


@dataclass(frozen=True)
class Salvage:
    set_aside: Path | None  # where the damaged file went
    recovered: dict[str, int]  # rows copied per table
    lost: dict[str, str]  # per table, what could not be read
    resumed: bool = False  # an interrupted rebuild's new database, put in place now


def damage(db: Database, last: LastCheck | None = None) -> str | None:
    """Why the database cannot be trusted, or None (also when there is none yet).

    Only reads: what is at the path and its WAL first, without SQLite; then a read-only
    connection (SQLite still keeps its readers' marks in the ``-shm`` index beside the file, as
    any reader does). With ``last`` (doctor's), the pages and the type count are read only where
    its record does not hold for the files as they are now (:mod:`.checked`), and a clean
    result is handed to it to keep."""
    why = db.unusable()
    if why is not None or not db.exists():
        return why
    seen = Sighting.of(db.path) if last is not None else None
    held = last.held(seen) if last is not None else None
    cut = _cut_mid_page(db.path)
    if cut is not None:
        return cut
    if held is None:
        faults.reach("state-db:read-whole")
        try:
            rows = peek(db.path, "PRAGMA quick_check")
        except sqlite3.Error as exc:
            return str(exc)
        problems = [str(r[0]) for r in rows if r[0] != "ok"]
        if problems:
            return "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" if len(problems) > 3 else "")
    try:
        ((version,),) = peek(db.path, "PRAGMA user_version")
        columns = peek(db.path, COLUMNS_SQL)
        why = schema_damage(version, columns)
        if why is not None:
            return why
        count = mistyped_sql((t, c) for t, c in columns)
        counted = xxhash.xxh3_64_hexdigest(count.encode()) if count else ""
        if count and counted != held:
            why = mistyped(peek(db.path, count))
            if why is not None:
                return why
    except sqlite3.Error as exc:
        return str(exc)
    if last is not None:
        last.found_sound(seen, db.path, counted)
    return None


def damage_behind(data_dir: str | os.PathLike[str]) -> str | None:
    """Why the data dir's database cannot be trusted, asked after a reader of it failed in a way no
    layer words (``int('yesterday')``: a row of the wrong type); None when it is sound, or when
    even that cannot be looked at (the failure is then shown as it is)."""
    try:
        return damage(Database(data_dir))
    except (OSError, sqlite3.Error):
        return None


def newer_schema(db: Database) -> str | None:
    """What a database written by a newer release says of itself, or None (also when there is none)."""
    if not db.exists():
        return None
    try:
        ((version,),) = peek(db.path, "PRAGMA user_version")
    except sqlite3.Error:
        return None  # damage() says it
    if version <= SCHEMA_VERSION:
        return None
    return f"schema {version}, this release knows {SCHEMA_VERSION}"


def set_aside_files(db: Database) -> Path | None:
    """Move the database (whatever is at its path) and its ``-wal`` and ``-shm`` under
    ``damaged/<stamp>/``; where the first went, or None when there was nothing."""
    forget_connections()
    moved = set_aside(Path(db.data_dir), db.path)
    for suffix in ("-wal", "-shm"):
        if moved is not None and os.path.lexists(db.path + suffix):
            os.rename(db.path + suffix, str(moved) + suffix)
    return moved


def rebuild(db: Database) -> Salvage:
    """Set the damaged database aside and make a new one from what it still holds, safe against a
    kill at any step (:mod:`.rebuilding`):

    1. ``state.db.rebuild`` is written (fsynced), naming a scratch folder ``.rebuild-<pid>-<hex>``
       in the data dir; from then on no command opens the state database;
    2. the new database is made in the scratch folder from copies of the damaged files (which stay
       at their paths), checkpointed into its file and fsynced; a kill before it is complete leaves
       the damaged files where they were: the next ``doctor --fix`` removes the scratch folder and
       rebuilds again from them;
    3. the record names ``damaged/<stamp>/``, and only then: the damaged file is hard-linked there
       (it stays at its path), its ``-wal`` and ``-shm`` are moved there, the new one is renamed over
       its path (one step: the path always holds one whole database), then the scratch folder and the
       record go. A kill in between is finished by the next ``doctor --fix`` from the record.

    An interrupted rebuild found here is finished (or, where its new database was not complete,
    swept) first, and the scratch folders of killed rebuilds removed. A rebuild that fails before
    its new database is in place (no space or no inode left at any step, ``damaged/`` refused as
    another user's) undoes itself: the scratch folder, the folders it made under ``damaged/`` and
    the record go, the damaged files are where they were (a record left locked every command out
    as an interrupted rebuild), and the failure is said as what it is (:func:`_rebuild_failure`)."""
    import shutil  # here, not at the top: every plain doctor imports this module for damage()

    forget_connections()  # before any copy: closing a descriptor of the file would drop their locks
    data_dir = Path(db.data_dir)
    recorded = read_marker(data_dir) is not None
    resumed = _resume(db)
    _sweep_scratch(data_dir)  # (an earlier release's killed rebuild left its folder without a record)
    if resumed is not None:
        return resumed
    if recorded and damage(db) is None:  # a record left by a rebuild killed before its new database was complete
        return Salvage(None, {}, {}, resumed=True)
    if not os.path.isfile(db.path):  # (a link to a database is read through, below, and set aside as a link)
        return Salvage(set_aside_files(db), {}, {})  # nothing to read: what was there is kept as it was
    source = os.path.realpath(db.path)  # a link's database keeps its WAL beside the file it names
    if os.path.getsize(source) < SQLITE_HEADER and wal_is_empty(source):  # emptied: not a row to read
        said = emptied_words(source)
        return Salvage(set_aside_files(db), {}, {"state.db": f"it was emptied ({said}): the history it held is gone"})
    wal_lost = wal_damage(source, full=True)  # committed frames its index names that no copy can read
    name = f"{SCRATCH_PREFIX}{os.getpid()}-{os.urandom(4).hex()}"
    scratch = data_dir / name
    had_damaged = os.path.lexists(data_dir / DAMAGED_DIR)
    aside: Path | None = None
    try:
        write_marker(data_dir, Rebuilding(os.getpid(), name, None, {}, {}))
        os.mkdir(scratch, 0o700)
        faults.reach("state-db-rebuild:building")
        copy, cut = _scratch_copy(Path(source), scratch)  # first: a copy that fails (a full disk) moves nothing
        schema_note = _schema_made_again(copy, scratch)
        new = _new_database(scratch)
        target = sqlite3.connect(new, isolation_level=None)
        try:
            target.execute("BEGIN IMMEDIATE")
            lost = _copy_all(copy, target)
            if lost and shutil.which("sqlite3"):
                recovered = _recover(copy, scratch)
                if recovered is not None:
                    lost = {t: why for t, why in lost.items() if _copy_all(recovered, target, (t,))}
            if cut:
                lost = {"state.db": cut, **lost}
            if schema_note:
                lost = {"sqlite_schema": schema_note, **lost}
            if wal_lost:
                lost["write-ahead log"] = f"{wal_lost}; what those frames held (the latest writes) is not in the new one"
            broken = _unsound_objects(target)
            if broken:
                lost["objects"] = f"{len(broken)} stored version(s) whose bytes no longer read back"
            listed, dropped = _unlisted_parts(target)
            if listed and "objects" in lost:
                lost["objects"] += f" ({listed} row(s) made again from their parts, which read back)"
            if dropped:
                lost["object_parts"] = f"{dropped} stored version(s) whose row is gone and whose parts no longer read back"
            counts = {table: target.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in _TABLES}  # noqa: S608
            target.execute("COMMIT")
            target.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # all of it in the file: the rename moves only the file
        finally:
            target.close()
        _fsync_file(new)
        faults.reach("state-db-rebuild:built")
        aside = place_for(data_dir, DB_NAME).parent  # (refused: damaged/ is another user's, say)
        record = Rebuilding(os.getpid(), name, os.path.relpath(aside, data_dir), counts, lost)
        write_marker(data_dir, record)
    except BaseException as exc:
        # Nothing was moved: the damaged files are where they were; the scratch folder, the
        # folders made for the damaged files and the record go (a record left would lock every
        # command out of a database that reads as it did before).
        room = _out_of_room(exc, db)
        shutil.rmtree(scratch, ignore_errors=True)
        _remove_empty(aside, data_dir / DAMAGED_DIR if not had_damaged else None)
        _drop_marker(data_dir)
        failed = _rebuild_failure(exc, db, source, room)
        if failed is None:
            raise
        raise failed from exc
    return _finish(db, record, made=data_dir / DAMAGED_DIR if not had_damaged else None)


def _put_back(db: Database, record: Rebuilding, made: Path | None) -> bool:
    """Undo a rebuild whose new database is not in place yet: the damaged file's ``-wal`` and
    ``-shm`` moved back beside it, what was kept of it under ``damaged/<stamp>/`` removed (the file
    itself is still at its path), then the scratch folder and the record. Whether it was all undone
    (else the record stays: the next ``doctor --fix`` finishes the rebuild)."""
    import filecmp
    import shutil

    assert record.scratch is not None and record.aside is not None
    data_dir = Path(db.data_dir)
    aside = data_dir / record.aside
    kept = aside / DB_NAME
    try:
        for suffix in ("-wal", "-shm"):
            if os.path.lexists(f"{kept}{suffix}") and not os.path.lexists(db.path + suffix):
                os.rename(f"{kept}{suffix}", db.path + suffix)
        if os.path.lexists(kept):
            if not os.path.isfile(db.path) or os.path.islink(kept) != os.path.islink(db.path):
                return False
            if not (_same_file(db.path, kept) or (os.path.islink(kept) and os.readlink(kept) == os.readlink(db.path))
                    or filecmp.cmp(db.path, kept, shallow=False)):
                return False
            os.unlink(kept)
        partial = kept.with_name(f".{kept.name}.copy")  # (_keep's copy, cut short)
        if os.path.lexists(partial):
            os.unlink(partial)
    except OSError:
        return False
    _remove_empty(aside, made)
    shutil.rmtree(data_dir / record.scratch, ignore_errors=True)
    _drop_marker(data_dir)
    return True


def _remove_empty(*folders: Path | None) -> None:
    """Remove each folder given that is there and empty (what a failed rebuild made for nothing)."""
    for folder in folders:
        if folder is not None:
            try:
                os.rmdir(folder)
            except OSError:
                pass


def _kib(size: int) -> str:
    return f"{-(-size // 1024)} KiB"


def _out_of_room(exc: BaseException, db: Database) -> str | None:
    """Whether ``exc`` is the data dir's file system out of "space", or of "inodes" (looked at
    before the rebuild's scratch files go, which frees them), or None."""
    from ..errors import is_no_space, no_inode_left
    from .failures import is_full

    if not (is_no_space(exc) or (isinstance(exc, sqlite3.Error) and is_full(exc, db.path))):
        return None
    return "inodes" if no_inode_left(db.data_dir) else "space"


def _rebuild_failure(exc: BaseException, db: Database, source: str, room: str | None) -> MemoryToolError | None:
    """A rebuild that failed on its own writes, worded as what it is (it was said as the damage it
    was repairing: "the state database is damaged ... run doctor --fix"): no space (``room``,
    from :func:`_out_of_room`) left in the data dir (how much the rebuild needs there, how much is
    free), or SQLite refusing the new database. None for any other failure (an OSError, a
    product's error: doctor says them as they are)."""
    import shutil

    from ..errors import DiskFull, disk_full

    where = f"the state dir ({db.data_dir})"
    undone = "the damaged database was left as it was, and nothing of the rebuild is left behind"
    if room == "inodes":
        return DiskFull(f"no inode is left on the file system of {where}: the rebuild could not make its files there, "
                        f"however much space is free; {undone}. Remove some files there and try again.")
    if room == "space":
        sizes = 0
        for path in (source, f"{source}-wal"):
            try:
                sizes += os.path.getsize(path)
            except OSError:
                pass
        try:
            vfs = os.statvfs(db.data_dir)
            free = f"{_kib((vfs.f_bfree if os.geteuid() == 0 else vfs.f_bavail) * vfs.f_frsize)} is free"
        except OSError:
            free = "how much is free could not be read"
        # A copy of the damaged files, the new database and its WAL (it is written there first), what
        # SQLite's recovery makes where the shell is installed, their -shm indexes and a fresh schema.
        need = (4 if shutil.which("sqlite3") else 3) * sizes + (64 << 10)
        cause = exc if isinstance(exc, OSError) else OSError(errno.ENOSPC, "No space left on device")
        return disk_full(cause, where, f"the rebuild needs room there for a copy of the damaged database and its WAL "
                         f"and for the new one, up to about {_kib(need)} ({free}); {undone}")
    if isinstance(exc, sqlite3.Error):
        return MemoryToolError(f"the new database could not be made in {where}: {exc}; {undone}")
    return None


_NEW = "new"  # the new database's folder in the scratch folder (a folder of its own: see _new_database)


def _new_database(scratch: Path) -> Path:
    """A new database of this release's schema in ``scratch/new/state.db``, 0600, in WAL mode as
    :class:`.connection.Database` makes one (its folder holds nothing else, where the schema's
    creation looks for a development build's files)."""
    from .schema import create_or_migrate

    folder = scratch / _NEW
    folder.mkdir(mode=0o700)
    path = folder / DB_NAME
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600))
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        create_or_migrate(conn)
    finally:
        conn.close()
    return path


def _fsync_file(path: str | os.PathLike[str]) -> None:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _finish(db: Database, record: Rebuilding, resumed: bool = False, made: Path | None = None) -> Salvage:
    """Put the complete new database of ``record`` in place of the damaged one (the damaged files
    kept under its ``damaged/<stamp>/``), then remove the scratch folder and the record. Each step
    is looked at before it is done: a kill anywhere is finished by the next call. A failure before
    the new one is in place (no space for a copy of the damaged file where the file system has no
    hard links) undoes the rebuild (:func:`_put_back`; ``made``: the ``damaged/`` folder, where this
    rebuild made it) and says why."""
    import shutil

    from ..fsutil.atomic import fsync_dir

    assert record.scratch is not None and record.aside is not None
    data_dir = Path(db.data_dir)
    aside = data_dir / record.aside
    kept = aside / DB_NAME
    new = data_dir / record.scratch / _NEW / DB_NAME
    if os.path.isfile(new):  # not in place yet
        try:
            os.makedirs(aside, 0o700, exist_ok=True)
            if os.path.lexists(db.path) and not os.path.lexists(kept):
                _keep(db.path, kept)  # the damaged file stays at its path until the new one replaces it
                fsync_dir(aside)
            faults.reach("state-db-rebuild:kept")
            for suffix in ("-wal", "-shm"):  # its own: beside the new one, SQLite would read them as its
                if os.path.lexists(db.path + suffix):
                    if os.path.lexists(f"{kept}{suffix}"):
                        set_aside(data_dir, db.path + suffix)  # (made since: kept all the same)
                    else:
                        os.rename(db.path + suffix, f"{kept}{suffix}")
            fsync_dir(aside)
            faults.reach("state-db-rebuild:companions")
            os.rename(new, db.path)
        except Exception as exc:
            # Before the swap: the damaged files are put back as they were and the rebuild undone
            # (a disk full where the damaged file is copied aside must not lock every command out
            # until there is room); where that fails too, the record stays for the next --fix.
            room = _out_of_room(exc, db)
            if not _put_back(db, record, made):
                raise
            failed = _rebuild_failure(exc, db, db.path, room)
            if failed is None:
                raise
            raise failed from exc
        fsync_dir(data_dir)
    faults.reach("state-db-rebuild:swapped")
    forget_connections()
    shutil.rmtree(data_dir / record.scratch, ignore_errors=True)
    _drop_marker(data_dir)
    return Salvage(kept if os.path.lexists(kept) else None, record.counts, record.lost, resumed)


def _keep(path: str, kept: Path) -> None:
    """``kept`` made the damaged file at ``path`` (a hard link; a copy, fsynced, where the file
    system has no hard links; a link at ``path`` is kept as a link)."""
    import shutil

    from ..fsutil.move import NO_LINK

    try:
        os.link(path, kept, follow_symlinks=False)
        return
    except OSError as exc:
        if exc.errno not in NO_LINK and exc.errno != errno.EXDEV:
            raise
    if os.path.islink(path):
        os.symlink(os.readlink(path), kept)
        return
    temp = kept.with_name(f".{kept.name}.copy")
    shutil.copyfile(path, temp)
    _fsync_file(temp)
    os.rename(temp, kept)


def _resume(db: Database) -> Salvage | None:
    """An interrupted rebuild's record: finished where its new database was complete (what it
    said of the damaged one, kept in the record, said again); else its scratch folder and the
    record removed (the damaged files are still at their paths: the caller rebuilds from them).
    None when there was nothing to finish."""
    import shutil

    data_dir = Path(db.data_dir)
    record = read_marker(data_dir)
    if record is None:
        return None
    if record.scratch is not None and record.aside is not None:
        new = data_dir / record.scratch / _NEW / DB_NAME
        kept = data_dir / record.aside / DB_NAME
        if os.path.isfile(new) or not (os.path.lexists(kept) and _same_file(db.path, kept)):
            return _finish(db, record, resumed=True)
    if record.scratch is not None:
        shutil.rmtree(data_dir / record.scratch, ignore_errors=True)
    _drop_marker(data_dir)
    return None


def _same_file(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    try:
        return os.path.samestat(os.lstat(a), os.lstat(b))
    except OSError:
        return False


def _sweep_scratch(data_dir: Path) -> None:
    """Remove the scratch folders no rebuild's record names (killed rebuilds'): only under the
    write lock, which every rebuild holds."""
    import shutil

    record = read_marker(data_dir)
    for name in os.listdir(data_dir):
        if name.startswith(SCRATCH_PREFIX) and (record is None or name != record.scratch) and not not_a_folder(data_dir / name):
            shutil.rmtree(data_dir / name, ignore_errors=True)


def _drop_marker(data_dir: Path) -> None:
    from ..fsutil.atomic import fsync_dir

    path = marker_path(data_dir)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            set_aside(data_dir, path)  # not a record this product wrote: kept under damaged/, never deleted
            return
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(data_dir)


def _scratch_copy(path: Path, scratch: Path) -> tuple[Path, str]:
    """The damaged file and its WAL copied into ``scratch`` (not its index: SQLite rebuilds it from
    what the WAL holds), its header restored when it was garbled (the 16-byte magic, or the fields
    SQLite checks: :func:`_header_restored`), a last page it holds only part of made zeros
    (:func:`_blank_cut_page`), its length when it was cut short (:func:`_pad_cut_file`); the copy,
    and what was cut or ""."""
    import shutil

    copy = scratch / "state.db"
    shutil.copyfile(path, copy)
    if os.path.exists(f"{path}-wal"):
        shutil.copyfile(f"{path}-wal", f"{copy}-wal")
    with open(copy, "r+b") as fh:
        head = fh.read(_HEADER)
        if len(head) == _HEADER and _header_unsound(head):
            fh.seek(0)
            fh.write(_header_restored(head, _wal_page_size(f"{copy}-wal")))
        elif head[:len(SQLITE_MAGIC)] != SQLITE_MAGIC and len(head) >= len(SQLITE_MAGIC):
            fh.seek(0)
            fh.write(SQLITE_MAGIC)
        _blank_cut_page(fh)
    return copy, _pad_cut_file(copy)


def _blank_cut_page(fh: BinaryIO) -> None:
    """The copy's last page made all zeros (page 1's file header kept) where the file ends part way
    into it, so that it reads as a page wholly cut off does once padded: gone. SQLite reads the
    missing part of a page as zeros, and the part left holds the page's header and cell pointers,
    some leading into the zeros: the row copy took a row of NULs and zeros (a version hash ending in
    NULs, a time of 1970) for history, and the schema's remaking a half schema page for another
    schema. Blanking the page in the copy, before anything reads it, is one rule for every reader
    (the rows can't be dropped after SQLite reads them: it does not say which page a row was on);
    the rows whose cells lay wholly in the part left go with it, as nothing on the page tells them
    from the ones the zeros make."""
    fh.seek(0)
    head = fh.read(_HEADER)
    length = os.fstat(fh.fileno()).st_size
    if len(head) < _HEADER or not _page_size_sound(head):
        return  # no page size to tell a page by: SQLite does not open it either
    page_size = _page_size(head)
    start = max(length - length % page_size, _HEADER)
    if length % page_size and start < length:
        fh.seek(start)
        fh.write(bytes(length - start))


_HEADER = 100  # SQLite's file header (https://sqlite.org/fileformat2.html#the_database_header)


def _page_size_sound(head: bytes) -> bool:
    size = int.from_bytes(head[16:18], "big")
    return size == 1 or (512 <= size <= 32768 and size & (size - 1) == 0)


def _header_unsound(head: bytes) -> bool:
    """Whether a field SQLite checks before it reads a page is not one it takes: then no row opens,
    whatever the pages and the WAL hold (the magic alone put back, a header written over from byte
    16 on left the rebuild with nothing: review)."""
    return (not _page_size_sound(head) or head[18] not in (1, 2) or head[19] not in (1, 2)
            or head[21:24] != b"\x40\x20\x20" or int.from_bytes(head[44:48], "big") not in range(1, 5)
            or int.from_bytes(head[56:60], "big") not in range(1, 4))


def _wal_page_size(wal: str) -> int | None:
    """The page size a WAL's header gives (big-endian, bytes 8-11), where it is one."""
    try:
        with open(wal, "rb") as fh:
            size = int.from_bytes(fh.read(12)[8:12], "big")
    except OSError:
        return None
    return size if 512 <= size <= 65536 and size & (size - 1) == 0 else None


def _header_restored(head: bytes, wal_page_size: int | None) -> bytes:
    """A header SQLite opens the file with: each field it checks that is not sound given the value
    this product's databases have (its page size from the WAL's header where the file's is gone,
    else 4096, SQLite's default; WAL mode where a WAL is there to read), the page count and the
    free-page list zeroed (SQLite then counts the pages from the file's length; a free page is only
    left unused), what it does not check (the change counter, the schema cookie, the user version)
    kept as it was."""
    out = bytearray(head)
    out[0:16] = SQLITE_MAGIC
    if not _page_size_sound(head):
        size = wal_page_size or 4096
        out[16:18] = (1 if size == 65536 else size).to_bytes(2, "big")
    mode = 2 if wal_page_size is not None else 1
    out[18], out[19] = (head[18], head[19]) if head[18] in (1, 2) and head[19] in (1, 2) else (mode, mode)
    out[20] = 0  # no bytes reserved at the end of a page (none here sets any)
    out[21:24] = b"\x40\x20\x20"
    out[28:40] = bytes(12)  # the page count, the first free-list page and the free-page count
    if int.from_bytes(head[44:48], "big") not in range(1, 5):
        out[44:48] = (4).to_bytes(4, "big")
    out[52:56] = bytes(4)  # no auto-vacuum (this product sets none)
    if int.from_bytes(head[56:60], "big") not in range(1, 4):
        out[56:60] = (1).to_bytes(4, "big")  # UTF-8
    out[64:68] = bytes(4)
    out[72:92] = bytes(20)
    return bytes(out)


_PAD_LIMIT = 64 << 20  # the most zeros added to a cut file beyond its own length (see _pad_cut_file)


def declared_length(path: str | os.PathLike[str]) -> int | None:
    """The length the database file's header declares (its page count × its page size), or None
    where the header does not say it reliably (:func:`_declared`)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEADER)
    except OSError:
        return None
    return _declared(head)


def _declared(head: bytes) -> int | None:
    """:func:`declared_length` of a file's first bytes: None where they are no whole header, its
    page size is not a power of two from 512 to 65536, or its in-header page count is one SQLite
    itself would not trust (zero, or its "version valid for" number not the file's change counter)."""
    if len(head) < _HEADER:
        return None
    page_size = _page_size(head)
    pages = int.from_bytes(head[28:32], "big")
    if page_size < 512 or page_size & (page_size - 1) or pages == 0 or head[24:28] != head[92:96]:
        return None
    return pages * page_size


def _page_size(head: bytes) -> int:
    """The page size a header gives (its 1 is 65536)."""
    size = int.from_bytes(head[16:18], "big")
    return 65536 if size == 1 else size


def _cut_mid_page(path: str | os.PathLike[str]) -> str | None:
    """Why a database file whose length is no whole number of its pages cannot be trusted, or None.
    SQLite writes its file a whole page at a time, so such a file was cut (a copy or a write cut
    short), and SQLite reads the missing part of its last page as zeros: a cut of 60 bytes passed
    `quick_check` while a history row read back as NULs dated 1970 (a repair blanks that page)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEADER)
            size = os.fstat(fh.fileno()).st_size
    except OSError:
        return None
    if _declared(head) is None or size % _page_size(head) == 0:
        return None
    page_size = _page_size(head)
    return (f"the file is {size} bytes, no whole number of its {page_size}-byte pages: it was cut part way into "
            f"page {size // page_size + 1}, whose rows read as zeros")


def _pad_cut_file(copy: Path) -> str:
    """A scratch copy shorter than its header declares extended with zeros to that length, so SQLite
    reads every page that is still there (a file cut short does not open: "database disk image is
    malformed", and every row was lost with the last pages). The missing pages read as empty; only
    the rows they held are lost. Bounded: never more zeros than the file's own length or 64 MiB,
    whichever is more, nor more than the free space (a header that claims an absurd size is left
    as it is, and the copy read as SQLite can). What was cut, said for the repair's report, or ""."""
    declared = declared_length(copy)
    size = copy.stat().st_size
    if declared is None or declared <= size:
        return ""
    missing = declared - size
    try:
        vfs = os.statvfs(copy.parent)
        free = vfs.f_bavail * vfs.f_frsize
    except OSError:
        free = 0
    if missing > max(size, _PAD_LIMIT) or missing > free:
        return f"the file is {missing} bytes shorter than its header declares ({declared}), too many to read it as a cut file"
    os.truncate(copy, declared)  # (a hole where the file system has them: no space used)
    return (f"the file was cut short: its last {missing} bytes (of {declared}) are gone, and the rows on those pages "
            "with them")


def _schema_made_again(copy: Path, scratch: Path) -> str:
    """Where the copy's schema (``sqlite_schema``, the b-tree rooted on page 1 that says which page
    holds each table) does not read because some of its pages are gone (zeros: cut off the end and
    padded, or zeroed), those pages are written again from a new database of this release's schema
    made the way the product makes one (same page size): a database made so puts each table on the
    same pages, and its schema on the same pages with the same bytes. Done only when every schema
    page the copy still holds (page 1 past its 100-byte file header included) is byte for byte the
    new one's, and each table's root page in the copy is a page of its kind or gone: a database
    whose schema changed since (one made by an earlier release and migrated) is left as it is.
    A page the file's own bytes do not hold whole counts as gone, as one wholly cut off does: the
    copy has it as zeros (:func:`_blank_cut_page`).
    Without it every table was lost with one page of the schema, the rows on intact pages with them.
    What was done, for the repair's report, or ""."""
    if _schema_reads(copy):
        return ""
    try:
        with open(copy, "rb") as start:
            head = start.read(100)
        page_size = _page_size(head)
        if len(head) < 100 or page_size < 512 or page_size & (page_size - 1) or head[20] != 0:
            return ""
        fresh = _fresh_database(scratch / "fresh", page_size)
        with open(fresh, "rb") as new:
            made = new.read()
        pages = _btree_pages(made, page_size, 1)
        roots = _roots(fresh)
        with open(copy, "r+b") as fh:

            def page(number: int) -> bytes:
                fh.seek((number - 1) * page_size)
                return fh.read(page_size)
            gone = []
            for number in pages:
                theirs, ours = page(number), made[(number - 1) * page_size:number * page_size]
                skip = 100 if number == 1 else 0
                if not any(theirs[skip:]):
                    gone.append(number)
                elif theirs[skip:] != ours[skip:]:
                    return ""  # a schema of its own: nothing here can say which page is which
            if not gone or 1 in gone:
                return ""
            for kind, root, columns in roots:
                if not _fits(page, root, kind, columns):
                    return ""  # that page holds something else: this file's tables are not where ours are
            for number in gone:
                fh.seek((number - 1) * page_size)
                fh.write(made[(number - 1) * page_size:number * page_size])
    except (OSError, sqlite3.Error, IndexError, ValueError):
        return ""
    if not _schema_reads(copy):
        return ""
    listed = ", ".join(str(n) for n in gone)
    return (f"{len(gone)} page(s) of the file's schema (page(s) {listed}) were gone and every table with them: made "
            "again from this release's schema, whose pages the file's surviving ones match, so the rows on the "
            "pages that are left were read")


def _schema_reads(path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        conn.execute("SELECT name, rootpage FROM sqlite_master").fetchall()
        return True
    except sqlite3.Error:
        return False
    finally:
        conn.close()


def _fresh_database(folder: Path, page_size: int) -> Path:
    """A new database of this release's schema made as :class:`.connection.Database` makes one (its
    first page in WAL mode, then every table in one transaction), checkpointed into its file."""
    from .schema import create_or_migrate

    folder.mkdir()
    path = folder / "state.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA page_size = {int(page_size)}")
        conn.execute("PRAGMA journal_mode=WAL")
        create_or_migrate(conn)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path


def _roots(path: Path) -> list[tuple[str, int, int]]:
    """(kind, root page, values in each record) of each b-tree of the database at ``path``: "rowid"
    for a table with rowids, "key" for an index or a table without rowids."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found = []
        for kind, name, sql, root in conn.execute("SELECT type, name, sql, rootpage FROM sqlite_master WHERE rootpage > 0"):
            pragma = "table_info" if kind == "table" else "index_xinfo"
            columns = len(conn.execute(f"PRAGMA {pragma}({name!r})").fetchall())
            rowid = kind == "table" and "WITHOUT ROWID" not in (sql or "").upper()
            found.append(("rowid" if rowid else "key", int(root), columns))
        return found
    finally:
        conn.close()


def _fits(page, root: int, kind: str, columns: int) -> bool:
    """Whether the b-tree at ``root`` of the copy (``page(n)``: its page n) is one of ``kind`` whose
    first record (down its leftmost pages) holds ``columns`` values, or is gone (a page of zeros, or
    an empty leaf: nothing to tell by)."""
    number = root
    for _ in range(32):
        body = page(number)
        at = 100 if number == 1 else 0
        if not any(body[at:]):
            return True  # gone with the cut: its rows are lost either way
        flag = body[at]
        if flag not in ((0x05, 0x0D) if kind == "rowid" else (0x02, 0x0A)):
            return False
        cells = int.from_bytes(body[at + 3:at + 5], "big")
        if flag in (0x05, 0x02):  # interior: down its leftmost child
            first = int.from_bytes(body[at + 12:at + 14], "big") if cells else None
            number = int.from_bytes(body[first:first + 4] if first else body[at + 8:at + 12], "big")
            continue
        if not cells:
            return True
        cell = int.from_bytes(body[at + 8:at + 10], "big")
        _, cell = _varint(body, cell)  # the payload's size
        if flag == 0x0D:
            _, cell = _varint(body, cell)  # the rowid
        header, at = _varint(body, cell)  # the record's header: its size, then a serial type per value
        end, count = cell + header, 0
        while at < end:
            _, at = _varint(body, at)
            count += 1
        return count == columns
    return False


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """SQLite's varint at ``at``: its value and where the next one starts."""
    value = 0
    for i in range(9):
        byte = data[at + i]
        if i == 8:
            return (value << 8) | byte, at + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, at + i + 1
    return value, at + 9



def _btree_pages(data: bytes, page_size: int, root: int) -> list[int]:
    """The pages of the table b-tree rooted at ``root`` in the database ``data`` (its interior pages'
    children, walked)."""
    found, todo = [], [root]
    while todo:
        number = todo.pop()
        found.append(number)
        start = (number - 1) * page_size
        at = start + (100 if number == 1 else 0)
        if data[at] != 0x05:  # a leaf (0x0D)
            continue
        cells = int.from_bytes(data[at + 3:at + 5], "big")
        todo.append(int.from_bytes(data[at + 8:at + 12], "big"))
        for i in range(cells):
            offset = int.from_bytes(data[at + 12 + 2 * i:at + 14 + 2 * i], "big")
            todo.append(int.from_bytes(data[start + offset:start + offset + 4], "big"))
    return sorted(found)


def _copy_all(source_path: Path, target: sqlite3.Connection, tables: tuple[str, ...] = tuple(_TABLES)) -> dict[str, str]:
    """Copy every row of ``tables`` that reads from the database at ``source_path``; per table, what
    could not be read."""
    try:
        source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return dict.fromkeys(tables, f"the file does not open as a database ({exc})")
    lost: dict[str, str] = {}
    try:
        try:
            source.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            return dict.fromkeys(tables, f"the file does not open as a database ({exc})")
        for table in tables:
            why = _copy(source, target, table, _TABLES[table])
            if why:
                lost[table] = why
    finally:
        source.close()
    return lost


def _recover(copy: Path, scratch: Path) -> Path | None:
    """What SQLite's own recovery (``sqlite3 FILE .recover``: every page walked) finds in ``copy``,
    as a new database in ``scratch``; None when the shell fails."""
    import subprocess

    try:
        dump = subprocess.run(["sqlite3", str(copy), ".recover"], capture_output=True, timeout=600, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if dump.returncode != 0 or not dump.stdout:
        return None
    recovered = scratch / "recovered.db"
    conn = sqlite3.connect(recovered)
    try:
        conn.executescript(dump.stdout.decode("utf-8", "surrogateescape"))
    except sqlite3.Error:
        conn.rollback()
    finally:
        conn.close()
    return recovered


def _unlisted_parts(conn: sqlite3.Connection) -> tuple[int, int]:
    """Parts of a version whose ``objects`` row was lost (its page, or the whole table): listed
    again when they inflate to their hash (the row is only their size and the time of last use,
    which becomes now), else dropped. Left as they were, the next store of the same bytes failed
    on their primary key ("UNIQUE constraint failed"). How many were listed, and dropped."""
    import time

    listed = dropped = 0
    orphans = conn.execute("SELECT DISTINCT version FROM object_parts WHERE version NOT IN (SELECT version FROM objects)")
    for (version,) in orphans.fetchall():
        parts = [row[0] for row in conn.execute("SELECT data FROM object_parts WHERE version = ? ORDER BY seq", (version,))]
        try:
            data = zlib.decompress(b"".join(parts))
        except zlib.error:
            data = None
        if data is not None and xxhash.xxh3_128_hexdigest(data) == version:
            conn.execute("INSERT INTO objects (version, size, stored, used) VALUES (?, ?, ?, ?)",
                         (version, len(data), sum(len(p) for p in parts), time.time_ns()))
            listed += 1
        else:
            dropped += 1
            conn.execute("DELETE FROM object_parts WHERE version = ?", (version,))
    return listed, dropped


def _unsound_objects(conn: sqlite3.Connection) -> list[str]:
    """Objects whose parts do not inflate to their hash (a part lost with a bad page): removed."""
    broken = []
    for (version,) in conn.execute("SELECT version FROM objects").fetchall():
        parts = [row[0] for row in conn.execute("SELECT data FROM object_parts WHERE version = ? ORDER BY seq", (version,))]
        try:
            sound = xxhash.xxh3_128_hexdigest(zlib.decompress(b"".join(parts))) == version
        except zlib.error:
            sound = False
        if not sound:
            broken.append(version)
            conn.execute("DELETE FROM objects WHERE version = ?", (version,))
            conn.execute("DELETE FROM object_parts WHERE version = ?", (version,))
    return broken


def _copy(source: sqlite3.Connection, target: sqlite3.Connection, table: str, key: str) -> str:
    """Copy the rows of ``table`` that read (a row already there is kept); past a page that cannot
    be read, the rest by rowid ranges where the table has rowids. What could not be read, or ""."""
    if _predates(source, table):
        return ""  # the file's schema is from before the table: nothing of it to copy
    unfit = _unfit(source, table)
    if unfit:
        return unfit
    columns = _columns(table, source)
    rows = _Rows(target, table, columns)
    try:
        for row in source.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {key}"):  # noqa: S608 - our names
            rows.put(row)
        return rows.said()
    except sqlite3.Error as exc:
        failure = exc
    if _has_rowid(table):
        return "; ".join(filter(None, (_copy_by_rowid(source, table, columns, rows, failure), rows.said())))
    if table in _KEYED:
        return "; ".join(filter(None, (_copy_by_key(source, table, columns, rows, failure), rows.said())))
    return "; ".join(filter(None, (f"some rows could not be read ({failure})", rows.said())))


# A table without rowids whose first key column other tables name: past a page that cannot be read,
# its rows are looked up by each value those tables hold (a lookup walks down the tree to its own
# pages, never along the damaged ones). The stored versions' parts: by the versions that name them.
_KEYED = {"object_parts": ("version", ("SELECT version FROM objects", "SELECT version FROM versions",
                                       "SELECT version FROM reads"))}


def _copy_by_key(source: sqlite3.Connection, table: str, columns: list[str], rows: _Rows,
                 failure: sqlite3.Error) -> str:
    """The rows of a table without rowids looked up by each value of its first key column that the
    other tables name (as many as read: a named table that fails part way gives those it read);
    the rows of a value whose pages fail are lost, counted by value."""
    column, naming = _KEYED[table]
    values: set = set()
    for sql in naming:
        try:
            for (value,) in source.execute(sql):
                values.add(value)
        except sqlite3.Error:
            continue
    select = f"SELECT {', '.join(columns)} FROM {table} WHERE {column} = ?"  # noqa: S608 - our names
    failed = 0
    for value in sorted(values, key=repr):
        try:
            found = source.execute(select, (value,)).fetchall()
        except sqlite3.Error:
            failed += 1
            continue
        for row in found:
            rows.put(row)
    said = f"the rows of {failed} {column}(s) could not be read ({failure})" if failed else ""
    return said or f"rows no other table names may be lost ({failure})"


class _Rows:
    """The rows copied into one table of the new database, each made to fit its columns' declared
    types first (:func:`.rowtypes.fitter`: an insert OR IGNORE would skip a NULL where a value is
    required without a word), and what could not be kept of them."""

    def __init__(self, target: sqlite3.Connection, table: str, columns: list[str]):
        self.target = target
        self.insert = f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})"  # noqa: S608
        self.fit = fitter(table, columns)
        self.left_out = self.emptied = 0

    def put(self, row: tuple) -> None:
        fitted = self.fit(row)
        if fitted is None:
            self.left_out += 1
            return
        self.emptied += fitted is not row
        self.target.execute(self.insert, fitted)

    def said(self) -> str:
        parts = [f"{self.left_out} row(s) with a NULL or a value of the wrong type where one is required were left out"]
        parts = parts if self.left_out else []
        if self.emptied:
            parts.append(f"{self.emptied} row(s) kept with a value of the wrong type made NULL")
        return "; ".join(parts)


def _copy_by_rowid(source: sqlite3.Connection, table: str, columns: list[str], rows: _Rows,
                   failure: sqlite3.Error) -> str:
    """The rows of a rowid table read one range at a time: a range that fails is halved down to
    single rows, and a row that fails is skipped (at most ``_MISSES`` failed reads in all: a
    table whose every page fails gives up instead of trying each rowid)."""
    select = f"SELECT {', '.join(columns)} FROM {table} WHERE rowid BETWEEN ? AND ? ORDER BY rowid"  # noqa: S608
    # One row by equality: SQLite reads a one-row range as a scan that steps on past the row to
    # find where it ends, into the next page, and the last row before a page that does not read
    # was lost with that page.
    one = f"SELECT {', '.join(columns)} FROM {table} WHERE rowid = ?"  # noqa: S608
    try:
        top = source.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0  # noqa: S608
    except sqlite3.Error:
        top = 1 << 40  # the last page does not read: the ranges find where the rows end
    skipped = misses = 0
    ranges = [(1, top)]
    while ranges and misses < _MISSES:
        low, high = ranges.pop()
        try:
            found = (source.execute(one, (low,)) if low == high else source.execute(select, (low, high))).fetchall()
        except sqlite3.Error:
            misses += 1
            if low == high:
                skipped += 1
            else:
                middle = (low + high) // 2
                ranges += [(middle + 1, high), (low, middle)]
            continue
        for row in found:
            rows.put(row)
    if ranges:
        return f"rows past a damaged part could not be read ({failure})"
    return f"up to {skipped} row(s) could not be read ({failure})" if skipped else ""


def _has_rowid(table: str) -> bool:
    conn = _schema()
    try:
        conn.execute(f"SELECT rowid FROM {table} LIMIT 0")  # noqa: S608
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _schema() -> sqlite3.Connection:
    """An empty database of this release's schema, in memory."""
    conn = sqlite3.connect(":memory:")
    create(conn)
    return conn


def _unfit(source: sqlite3.Connection, table: str) -> str:
    """Why no row of ``table`` can be copied from ``source`` as it is, or "": the table is gone
    from the file, or a column the new table requires (NOT NULL, no default) is, which an insert
    OR IGNORE would skip every row for without a word."""
    try:
        theirs = {row[1] for row in source.execute(f"PRAGMA table_info({table})")}
    except sqlite3.Error:
        return ""  # its schema does not read: the rows are tried one way or another
    if not theirs:
        return "the table is missing from the damaged file"
    conn = _schema()
    try:
        lacking = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")
                   if row[3] and row[4] is None and row[1] not in theirs]
    finally:
        conn.close()
    if not lacking:
        return ""
    try:
        rows = source.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]  # noqa: S608 - our names
    except sqlite3.Error:
        rows = "its"
    if rows == 0:
        return ""
    return f"its column(s) {', '.join(lacking)} are missing from the damaged file: {rows} row(s) could not be copied"


def _predates(source: sqlite3.Connection, table: str) -> bool:
    """Whether the damaged file's schema version is one from before ``table`` was added (a later
    step's table: nothing of it is lost)."""
    from .schema import FIRST_RELEASED, declared

    try:
        version = source.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.Error:
        return False
    return FIRST_RELEASED <= version < SCHEMA_VERSION and table not in declared(version)


def _columns(table: str, source: sqlite3.Connection) -> list[str]:
    """The table's columns as this release creates them (a damaged file's own schema may be unreadable),
    less those a file of an earlier schema lacks where its schema reads (a column a later step added:
    asking a schema 6 file for ``versions.mode`` lost every row of its history); those are NULL."""
    conn = _schema()
    try:
        ours = [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]
    finally:
        conn.close()
    try:
        theirs = {row[1] for row in source.execute(f"PRAGMA table_info({table})")}
    except sqlite3.Error:
        return ours
    return [c for c in ours if c in theirs] if theirs else ours
