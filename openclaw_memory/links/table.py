"""The link table: each memory file's links as parsed, kept in the state database (``link_files``,
``links``) and kept current by the index's change rule.

A file is parsed again only when its content changed: while its mode, size, ns times and inode
are those it had when its bytes were hashed (:meth:`~openclaw_memory.database.observations.FileStat.matches`,
a racy sighting excepted) it is not even read; read again, it is not parsed while its hash is the
one its links were parsed from. What a link *names* is not kept: it depends on the other files,
and is worked out when asked (:mod:`.resolve`).

What a file's links cost is what changed: an unchanged file's row is compared by its change key
alone (no stat object, its headings decoded only when a link names one of them), only a changed
file is read, and only the rows of files read or gone are written.

The table is a cache: a state dir that cannot be written (full, read-only, another process writing
now) only means the parse is done again next time. :func:`refresh` works it out and :func:`keep`
stores it, so that a reader that may not write yet (plain ``doctor``, whose checks only read) keeps
it after (``doctor.runner``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple

import xxhash

from ..database import Database, dec, enc, in_batches, is_read_only
from ..database.failures import stat_int
from ..database.observations import FileStat, change_key
from ..errors import MemoryToolError
from ..fsutil.fsclock import guard_ns
from ..fsutil.hashing import hash_open_file
from ..fsutil.safeopen import FolderSwapped, NotRegularFile, open_regular_in_roots
from .parse import NoteParser, ParsedLink, ParsedNote

PIECE = 1 << 20  # a note is read in blocks, a line of more than this parsed in pieces: memory stays bounded

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings


ChangeKey = tuple[int, int, int, int, int]  # database.observations.change_key: size, mtime, ctime, inode, mode


class NoteLinks(NamedTuple):
    """What the table holds of one memory file."""

    key: ChangeKey  # the file's stat when the bytes parsed were hashed (the change rule's fields)
    racy: bool  # that sighting was racy: the file is read again next time
    hash: str  # xxh3_128 of those bytes
    lines: int
    headings_json: str  # its headings' text, as stored (JSON): decoded when a link names a heading
    links: tuple[ParsedLink, ...]

    @property
    def headings(self) -> tuple[str, ...]:
        return tuple(json.loads(self.headings_json))


class Refreshed:
    """The links of the memory files as they are now: an unchanged file's from the table, a changed
    one's as parsed now; what the table lacks (``changed``, ``gone``) for :func:`keep`."""

    def __init__(self, db: Database, links: dict[str, tuple[ParsedLink, ...]], parsed: int,
                 unreadable: tuple[str, ...], changed: tuple[tuple[str, NoteLinks, bool], ...], gone: tuple[str, ...]):
        self._db = db
        self.links = links  # by absolute path: the links of each file that has any
        self.parsed = parsed  # files parsed this time (new, or their content changed)
        self.unreadable = unreadable  # display paths of files that could not be read (their links are unknown)
        self.changed = changed  # what the table lacks: (path, record, links changed)
        self.gone = gone  # files the table holds that are no more

    def text(self, abs_path: str) -> NoteLinks | None:
        """The file's record (its hash, line count and headings; None: not read): a file's read
        now, the others' from the table, all loaded at the first call (a link with a heading or a
        line range, a rewrite), never for a memory whose links name none."""
        return self._records.get(abs_path)

    @cached_property
    def _records(self) -> dict[str, NoteLinks]:
        out = {dec(path): NoteLinks((size, mtime, ctime, inode, mode), bool(racy), digest, lines, headings, ())
               for path, size, mtime, ctime, inode, mode, racy, digest, lines, headings in self._db.rows(
                   "SELECT path, size, mtime_ns, ctime_ns, inode, mode, racy, hash, lines, headings FROM link_files")}
        out.update((path, record) for path, record, parsed in self.changed if parsed)
        return out


def refresh(settings: Settings, files: Iterable[MemoryFile], *, save: bool = True,
            suspects: Collection[str] | None = None) -> Refreshed:
    """The links of every Markdown file of ``files`` (a scan), parsing only what changed, and (with
    ``save``) the table brought up to date; without, :func:`keep` does it later.

    ``suspects``: the files (absolute paths) whose row may not hold, from a caller that knows every
    other file's row holds (doctor, by its sightings: :mod:`~openclaw_memory.doctor.vouched`): only
    the suspects' rows are read and compared. Without it, every row is: an unchanged file costs a
    comparison of its change key with its row's (no record built, its links taken as stored); a
    changed one is read (and parsed only when its hash is not its row's)."""
    db = Database(settings.data_dir)
    markdown = [f for f in files if f.kind == "markdown"]
    stored = _stored_links(db)
    links: dict[str, tuple[ParsedLink, ...]] = {}
    held: int | None = None  # files whose row holds, not read
    if suspects is not None and len(suspects) * 2 <= len(markdown):  # a few rows by key, else every row in one read
        asked = [f for f in markdown if f.abs_path in suspects]
        held = len(markdown) - len(asked)
        if stored:
            links.update((f.abs_path, found) for f in markdown if (found := stored.get(f.abs_path)) and f.abs_path not in suspects)
    else:
        asked = markdown
    # Each row as SQLite gives it: (path, then the change key and the racy flag FileStat.matches compares).
    known = _rows(db, None if held is None else [f.abs_path for f in asked])
    stale: list[MemoryFile] = []
    for f in asked:
        row = known.get(f.abs_path)
        if row is not None and row[1:] == (f.size, f.mtime_ns, f.ctime_ns, f.inode, f.mode, 0):
            found = stored.get(f.abs_path)
            if found:
                links[f.abs_path] = found
        else:
            stale.append(f)
    changed, unreadable = _reread(settings, db, stale, stored, links)
    refreshed = Refreshed(db, links, sum(1 for *_, parsed in changed if parsed), unreadable, changed,
                          _gone(db, markdown, known, held))
    if save:
        keep(settings, refreshed)
    return refreshed


def _rows(db: Database, paths: Sequence[str] | None) -> dict[str, tuple]:
    """The rows of ``paths`` (None: every row), by absolute path."""
    columns = "SELECT path, size, mtime_ns, ctime_ns, inode, mode, racy FROM link_files"
    if paths is None:
        return {dec(row[0]): row for row in db.rows(columns)}
    return {dec(row[0]): row for part, marks in in_batches(paths)
            for row in db.rows(f"{columns} WHERE path IN ({marks})", tuple(map(enc, part)))}


def _gone(db: Database, markdown: list[MemoryFile], known: dict[str, tuple], held: int | None) -> tuple[str, ...]:
    """The rows of files that are no more. ``known``: the rows read, every row, or (``held``) the
    rows of the files not among the ``held`` that each have one; then a table of no more rows than
    that holds none of a file gone (a count, not a read of every path)."""
    if held is not None:
        counted = db.rows("SELECT COUNT(*) FROM link_files")  # no row at all: no database yet (plain doctor)
        if not counted or counted[0][0] <= held + len(known):
            return ()
        known = {dec(path): () for (path,) in db.rows("SELECT path FROM link_files")}
    return tuple(path for path in known.keys() - {f.abs_path for f in markdown} if not os.path.lexists(path))


def _reread(settings: Settings, db: Database, stale: list[MemoryFile], stored: dict[str, tuple[ParsedLink, ...]],
            links: dict[str, tuple[ParsedLink, ...]]) -> tuple[tuple[tuple[str, NoteLinks, bool], ...], tuple[str, ...]]:
    """Read the files whose row does not vouch for them (new, changed, racy): the records to store
    (parsed: whether their links are new) and the display paths of those that could not be read."""
    if not stale:
        return (), ()
    roots = (str(settings.workspace), *map(str, settings.extra_paths))
    guard = guard_ns(*roots)
    hashes = _hashes(db, [f.abs_path for f in stale])
    changed: list[tuple[str, NoteLinks, bool]] = []
    unreadable: list[str] = []
    for f in stale:
        read = _read(f.abs_path, roots, guard, hashes.get(f.abs_path))
        if read is None:
            unreadable.append(f.path)
            continue
        stat, digest, note = read
        if note is None:  # the same bytes as its row's: only its stat is new
            kept = stored.get(f.abs_path, ())
            # Its line count and headings stay its row's (:func:`_save` writes the stat alone).
            changed.append((f.abs_path, NoteLinks(change_key(stat), stat.racy, digest, 0, "[]", kept), False))
            if kept:
                links[f.abs_path] = kept
            continue
        changed.append((f.abs_path, NoteLinks(change_key(stat), stat.racy, digest, note.lines,
                                              json.dumps(note.headings, ensure_ascii=False), tuple(note.links)), True))
        if note.links:
            links[f.abs_path] = tuple(note.links)
    return tuple(changed), tuple(unreadable)


def keep(settings: Settings, refreshed: Refreshed) -> None:
    """Store what ``refreshed`` found that the table lacks (nothing where it lacks nothing: an
    unchanged memory writes nothing)."""
    _save(Database(settings.data_dir), refreshed.changed, refreshed.gone)


def refresh_synced(settings: Settings, paths: Iterable[str] | None) -> Refreshed:
    """The table brought up to date for the files a sync applied (``paths``, as `files` shows
    them; None: every memory file), as a running ``watch`` does after each batch, so that ``links``
    after an edit parses nothing new. A file removed meanwhile leaves the table here too."""
    from ..files.scan import scan_paths, scan_workspace

    files: Sequence[MemoryFile] | None = scan_paths(settings, paths) if paths is not None else None
    if files is None:  # a path only the whole scan places (an extra path, the dream diary), or every file
        files = scan_workspace(settings, multimodal=False).files
    return refresh(settings, files)


def _read(abs_path: str, roots: Sequence[str], guard: int, known: str | None
          ) -> tuple[FileStat, str, ParsedNote | None] | None:
    """The file's stat and content hash, and its links unless its hash is ``known`` (None: it could
    not be read). Opened from its root's descriptor, one folder at a time (no symlink followed,
    never a FIFO); hashed first, so a file touched but unchanged is never parsed; parsed from the
    same descriptor, hashed again as it is read, so the hash kept is that of the bytes parsed."""
    started_ns = time.time_ns()
    try:
        fd, st = open_regular_in_roots(roots, abs_path)
    except (FileNotFoundError, NotADirectoryError, NotRegularFile, FolderSwapped, PermissionError):
        return None
    try:
        stat = FileStat.of(st, started_ns, guard)
        digest = hash_open_file(fd)
        if digest == known:
            return stat, digest, None
        os.lseek(fd, 0, os.SEEK_SET)
        hasher = xxhash.xxh3_128()
        parser = NoteParser()
        for line, continued in _lines(fd, hasher):
            parser.feed(line, continued=continued)
        return stat, hasher.hexdigest(), parser.result()
    except OSError:
        return None
    finally:
        os.close(fd)


def _lines(fd: int, hasher: xxhash.xxh3_128) -> Iterator[tuple[str, bool]]:
    """The file's lines (decoded, a bad byte as U+FFFD), each longer than PIECE in pieces: (text,
    whether it continues the line before)."""
    pending = b""
    continued = False
    while True:
        block = os.read(fd, PIECE)
        if not block:
            break
        hasher.update(block)
        pending += block
        *whole, pending = pending.split(b"\n")
        for line in whole:
            yield line.decode("utf-8", errors="replace"), continued
            continued = False
        if len(pending) > PIECE:
            yield pending.decode("utf-8", errors="replace"), continued
            pending, continued = b"", True
    yield pending.decode("utf-8", errors="replace"), continued


def _stored_links(db: Database) -> dict[str, tuple[ParsedLink, ...]]:
    """Every file's links as stored, by absolute path (files without links absent)."""
    links: dict[bytes, list[ParsedLink]] = {}
    for source, line, form, target, fragment, text in db.rows(
            "SELECT source, line, form, target, fragment, text FROM links ORDER BY source, seq"):
        links.setdefault(source, []).append(ParsedLink(line, form, target, fragment, text))
    return {dec(source): tuple(found) for source, found in links.items()}


def _hashes(db: Database, paths: Sequence[str]) -> dict[str, str]:
    """The stored hash of each of ``paths`` that has a row: by key, a few hundred paths a query."""
    return {dec(path): digest for part, marks in in_batches(paths)
            for path, digest in db.rows(f"SELECT path, hash FROM link_files WHERE path IN ({marks})", tuple(map(enc, part)))}


def _save(db: Database, changed: Sequence[tuple[str, NoteLinks, bool]], gone: Sequence[str]) -> None:
    if is_read_only() or not (changed or gone):
        return
    try:
        with db.transaction(wait=False) as conn:
            for path in gone:
                conn.execute("DELETE FROM link_files WHERE path = ?", (enc(path),))
                conn.execute("DELETE FROM links WHERE source = ?", (enc(path),))
            for path, note, links_changed in changed:
                size, mtime_ns, ctime_ns, inode, mode = note.key
                mtime_ns, ctime_ns, inode = stat_int(mtime_ns), stat_int(ctime_ns), stat_int(inode)  # as SQLite keeps them
                if not links_changed:  # the bytes its row was parsed from: only the stat is new
                    conn.execute("UPDATE link_files SET mode = ?, size = ?, mtime_ns = ?, ctime_ns = ?, inode = ?, "
                                 "racy = ? WHERE path = ?", (mode, size, mtime_ns, ctime_ns, inode, int(note.racy), enc(path)))
                    continue
                conn.execute("INSERT OR REPLACE INTO link_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (enc(path), mode, size, mtime_ns, ctime_ns, inode, int(note.racy), note.hash,
                              note.lines, note.headings_json))
                conn.execute("DELETE FROM links WHERE source = ?", (enc(path),))
                conn.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 [(enc(path), seq, link.line, link.form, link.target, link.fragment, link.text)
                                  for seq, link in enumerate(note.links)])
    except MemoryToolError:
        pass  # only a cache: the files are parsed again next time
