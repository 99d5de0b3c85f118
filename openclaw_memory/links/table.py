"""The link table: each memory file's links as parsed, kept in the state database (``link_files``,
``links``) and kept current by the index's change rule.

A file is parsed again only when its content changed: while its mode, size, ns times and inode
are those it had when its bytes were hashed (:meth:`~openclaw_memory.database.observations.FileStat.matches`,
a racy sighting excepted) it is not even read; read again, it is not parsed while its hash is the
one its links were parsed from. What a link *names* is not kept: it depends on the other files,
and is worked out when asked (:mod:`.resolve`).

The table is a cache: a state dir that cannot be written (full, read-only, another process writing
now) only means the parse is done again next time; plain ``doctor`` (read-only) writes nothing.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import xxhash

from ..database import Database, dec, enc, is_read_only
from ..database.observations import FileStat
from ..errors import MemoryToolError
from ..fsutil.fsclock import guard_ns
from ..fsutil.hashing import hash_open_file
from ..fsutil.safeopen import FolderSwapped, NotRegularFile, open_regular_in_roots
from .parse import NoteParser, ParsedLink, ParsedNote

PIECE = 1 << 20  # a note is read in blocks, a line of more than this parsed in pieces: memory stays bounded

if TYPE_CHECKING:
    from ..files.scan import MemoryFile
    from ..settings import Settings


class NoteLinks(NamedTuple):
    """What the table holds of one memory file."""

    stat: FileStat  # the file's stat when the bytes parsed were hashed
    hash: str  # xxh3_128 of those bytes
    lines: int
    headings: tuple[str, ...]
    links: tuple[ParsedLink, ...]


class Refreshed(NamedTuple):
    notes: dict[str, NoteLinks]  # by absolute path: every markdown memory file that could be read
    parsed: int  # files parsed this time (new, or their content changed)
    unreadable: tuple[str, ...]  # display paths of files that could not be read (their links are unknown)


def refresh(settings: Settings, files: Iterable[MemoryFile]) -> Refreshed:
    """The links of every Markdown file of ``files`` (a scan), parsing only what changed, and the
    table brought up to date."""
    db = Database(settings.data_dir)
    known = _load(db)
    roots = (str(settings.workspace), *map(str, settings.extra_paths))
    guard = max(guard_ns(Path(root)) for root in roots)
    notes: dict[str, NoteLinks] = {}
    changed: list[tuple[str, NoteLinks, bool]] = []  # (path, record, links changed)
    unreadable: list[str] = []
    parsed = 0
    for f in files:
        if f.kind != "markdown":
            continue
        before = known.get(f.abs_path)
        if before is not None and before.stat.matches(f):
            notes[f.abs_path] = before
            continue
        read = _read(f.abs_path, roots, guard, before.hash if before is not None else None)
        if read is None:
            unreadable.append(f.path)
            continue
        stat, digest, note = read
        if note is None and before is not None:  # the same bytes: only its stat is new
            record = before._replace(stat=stat)
            changed.append((f.abs_path, record, False))
        elif note is not None:
            parsed += 1
            record = NoteLinks(stat, digest, note.lines, tuple(note.headings), tuple(note.links))
            changed.append((f.abs_path, record, True))
        notes[f.abs_path] = record
    gone = [path for path in known if path not in notes and not os.path.lexists(path)]
    _save(db, changed, gone)
    return Refreshed(notes, parsed, tuple(unreadable))


def refresh_synced(settings: Settings, paths: Iterable[str] | None) -> Refreshed:
    """The table brought up to date for the files a sync applied (``paths``, as `files` shows
    them; None: every memory file), as a running ``watch`` does after each batch, so that ``links``
    after an edit parses nothing new. A file removed meanwhile leaves the table here too."""
    from ..files.scan import scan_paths, scan_workspace

    files = scan_paths(settings, paths) if paths is not None else None
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


def _load(db: Database) -> dict[str, NoteLinks]:
    links: dict[bytes, list[ParsedLink]] = {}
    for source, line, form, target, fragment, text in db.rows(
            "SELECT source, line, form, target, fragment, text FROM links ORDER BY source, seq"):
        links.setdefault(bytes(source), []).append(ParsedLink(line, form, target, fragment, text))
    out = {}
    for path, mode, size, mtime, ctime, inode, racy, digest, lines, headings in db.rows(
            "SELECT path, mode, size, mtime_ns, ctime_ns, inode, racy, hash, lines, headings FROM link_files"):
        out[dec(path)] = NoteLinks(FileStat(size, mtime, ctime, inode, bool(racy), mode), digest, lines,
                                   tuple(json.loads(headings)), tuple(links.get(bytes(path), ())))
    return out


def _save(db: Database, changed: list[tuple[str, NoteLinks, bool]], gone: list[str]) -> None:
    if is_read_only() or not (changed or gone):
        return
    try:
        with db.transaction(wait=False) as conn:
            for path in gone:
                conn.execute("DELETE FROM link_files WHERE path = ?", (enc(path),))
                conn.execute("DELETE FROM links WHERE source = ?", (enc(path),))
            for path, note, links_changed in changed:
                s = note.stat
                conn.execute("INSERT OR REPLACE INTO link_files VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (enc(path), s.mode, s.size, s.mtime_ns, s.ctime_ns, s.inode, int(s.racy), note.hash,
                              note.lines, json.dumps(note.headings, ensure_ascii=False)))
                if links_changed:
                    conn.execute("DELETE FROM links WHERE source = ?", (enc(path),))
                    conn.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?)",
                                     [(enc(path), seq, link.line, link.form, link.target, link.fragment, link.text)
                                      for seq, link in enumerate(note.links)])
    except MemoryToolError:
        pass  # only a cache: the files are parsed again next time
